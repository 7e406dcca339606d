"""The project's own --help, --version and list."""

import os
import subprocess
import sys
from pathlib import Path

import ckam_bench
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]


def run(*args, cwd):
    return clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", *args], cwd=cwd,
                      capture_output=True, text=True, timeout=300,
                      env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_help_and_version(tmp_path):
    help_ = run("--help", cwd=tmp_path)
    assert help_.returncode == 0
    for text in ("ckam-bench list", "ckam-bench-figures", "ckam-bench-check", "budget.clock",
                 "checkpoint.on", "experiment=", "ckam-bench-sbc", "ckam-bench-reference",
                 "list posteriordb"):
        assert text in help_.stdout
    assert "preset/" not in help_.stdout and "Hydra" not in help_.stdout.splitlines()[0]
    # how to resume, as it is true: a run's folder again, not the same command (issue 29 §6)
    assert "a run's folder again resumes it" in help_.stdout
    assert "the command that resumes it" in " ".join(help_.stdout.split())
    assert "resume by running the same command again" not in help_.stdout
    version = run("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == f"ckam-bench {ckam_bench.__version__}"
    assert list(tmp_path.iterdir()) == []


def test_list_shows_every_option_with_capabilities(tmp_path):
    proc = run("list", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    sections = {line.split(" (")[0]: line for line in out.splitlines() if line and line[0] != " "}
    groups = {"sampler", "target", "kernel", "schedule", "experiment", "budget", "checkpoint",
              "metrics"}
    # the registered posteriordb posteriors without a reference have a section of their own
    assert set(sections) - {"posteriordb without a reference, not run by default"} == groups | {"posteriordb"}
    conf = ROOT / "conf"
    for group in groups:
        for yaml in (conf / group).glob("*.yaml"):
            assert f"  {yaml.stem} " in out, (group, yaml.stem)
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert "d=2, gradient, exact draws" in lines["bimodal"]
    assert "gradient-free" in lines["rw"] and "kernel" in lines["ckam"]
    assert "needs a gradient" in lines["mala"] and "specific targets only" in lines["horseshoe_gibbs"]
    # target=pymc has no model until target.model=... is given: its row says how, no error
    assert "target.model=PACKAGE.MODULE:FUNCTION" in lines["pymc"]
    assert "error:" not in out
    # the posteriordb suite: every posterior with its dimension, character and command
    from ckam_bench.posteriordb import SUITE

    for name, posterior in SUITE.items():
        assert f"d={posterior.dim}, {posterior.character}" in lines[name], name
        assert f"target.model={posterior.model}" in lines[name]
    assert list(tmp_path.iterdir()) == []


def test_list_names_papers_by_their_authors(tmp_path):
    out = run("list", "target", "experiment", "sampler", cwd=tmp_path).stdout
    for label in ("Seed 00", "seed 00", "SPEC ", "KAMH paper", "cKAM paper",
                  "Divergence-minimisation paper"):
        assert label not in out, label
    assert "Sejdinovic et al. (2014)" in out and "Titsias & Dellaportas (2019)" in out


def test_list_one_group_and_an_unknown_group(tmp_path):
    proc = run("list", "kernel", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("kernel (")
    assert "sampler (" not in proc.stdout
    bad = run("list", "samplr", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [bad.stderr.strip()]
    assert "did you mean 'sampler'" in bad.stderr


def test_list_shows_targets_on_a_command_line_search_path(tmp_path):
    conf = tmp_path / "conf" / "target"
    conf.mkdir(parents=True)
    (conf / "my_ring.yaml").write_text(
        "# A ring of my own.\n_target_: ckam_bench.targets.gaussians.Gaussian\n"
        "mean: [0.0, 0.0]\ncov: [[1.0, 0.0], [0.0, 1.0]]\ndim: 2\n")
    proc = run("list", "target", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("  my_ring "))
    assert "A ring of my own" in line


def test_help_and_version_do_not_import_the_harness(tmp_path):
    code = ("import sys; sys.argv = ['ckam-bench', '{flag}']\n"
            "from ckam_bench import entry; entry.main()\n"
            "heavy = [m for m in ('numba', 'pandas', 'matplotlib', 'hydra', 'ckam_bench.commands.cli', "
            "'arviz_stats', 'scipy') if m in sys.modules]\n"
            "assert not heavy, heavy")
    for flag in ("--help", "--version"):
        # what a new interpreter imports: a new interpreter (never tests/clirun.py's forks)
        proc = subprocess.run([sys.executable, "-c", code.format(flag=flag)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0, proc.stderr


def test_list_reads_group_configs_as_hydra_composes_them():
    """``ckam-bench list`` puts each sampler and kernel config into one composed primary config
    (discovery.group_node) instead of composing ~30 configs: every shipped one, including the
    inheriting ones (``- pt``, ``- ckam``) and those placing schedules (``/schedule@KEY``),
    equals Hydra's own composition."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from ckam_bench.commands import discovery

    GlobalHydra.instance().clear()
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        _, repo = loader._parse_overrides_and_create_caching_repo("config", [])
        for group in ("sampler", "kernel"):
            names = loader.get_group_options(group, config_name="config")
            assert len(names) >= 3
            for name in names:
                extra = ["sampler=kam"] if group == "kernel" else []
                hydra = compose("config", overrides=[*extra, f"{group}={name}"])[group]
                ours = discovery.group_node(repo, group, name)
                assert OmegaConf.to_container(ours) == OmegaConf.to_container(hydra), (group, name)
    GlobalHydra.instance().clear()


def test_list_falls_back_to_hydra_for_other_defaults(tmp_path):
    """A search-path sampler whose defaults list has a form group_node leaves to Hydra (no
    ``_self_``) is composed by Hydra and listed like the others."""
    conf = tmp_path / "conf" / "sampler"
    conf.mkdir(parents=True)
    (conf / "my_rw.yaml").write_text("# My random walk.\ndefaults:\n  - rw\nstep_size: 0.5\n")
    proc = run("list", "sampler", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("  my_rw "))
    assert "My random walk" in line and "[gradient-free, adaptation: none]" in line


def test_every_other_hydra_command_has_its_own_help_and_version(tmp_path):
    """ckam-bench-check, -reference and -sbc: what they do, their own keys with defaults,
    exit codes and page; --version; nothing written (ckam-bench-sbc's was a parse error)."""
    for module, prog, keys in (("ckam_bench.checks.stationarity", "ckam-bench-check", ("n_chains:", "alpha:")),
                               ("ckam_bench.checks.reference", "ckam-bench-reference", ("rhat_max:", "combine:")),
                               ("ckam_bench.checks.sbc", "ckam-bench-sbc", ("simulations:", "bins:"))):
        for flag in ("--help", "-h"):
            proc = clirun.run([sys.executable, "-c", f"from {module} import main; main()", flag],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert proc.returncode == 0 and proc.stderr == "", proc.stderr
            assert proc.stdout.startswith(f"{prog} — ") and "Exit codes:" in proc.stdout
            assert all(k in proc.stdout for k in keys) and "hydra:" not in proc.stdout
        proc = clirun.run([sys.executable, "-c", f"from {module} import main; main()", "--version"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0 and ckam_bench.__version__ in proc.stdout
    assert list(tmp_path.iterdir()) == []
