"""ckam-bench-check, ckam-bench-reference and ckam-bench-figures keep the run path's promises
(issue 25): they lose nothing a user owns, certify nothing false, and refuse bad input in one
line naming the key (exit 2, nothing created, no traceback, no hang)."""

import errno
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_module

from ckam_bench.checks import reference
from ckam_bench.checks.reference import ChainFileError
from ckam_bench.report import cli as figures_cli
from ckam_bench.targets.gaussians import gauss2d_corr
from ckam_bench.commands.validate import ConfigError
from tests.test_report import make_run
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "0", "CKAM_BENCH_JIT": "0"}


def command(module, *args, cwd, timeout=300, env=None):
    return clirun.run([sys.executable, "-c", f"from {module} import main; main()", *args],
                      cwd=cwd, capture_output=True, text=True, timeout=timeout,
                      env={**ENV, **(env or {})})


def one_line(proc):
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def snapshot(path: Path) -> dict:
    return {str(p.relative_to(path)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(path.rglob("*"))}


# ---------------------------------------------------------------------------- ckam-bench-check
@pytest.mark.parametrize("content, bad", [
    ({".hydra/notes.txt": "x"}, "sampler.step_size=-1"),
    ({"stationarity.log": "my log"}, "sampler.step_size=-1"),
    ({".hydra/notes.txt": "x"}, "check.alpha=2"),
], ids=["hydra-notes", "log-only", "alpha"])
def test_check_never_deletes_a_folder_it_did_not_create(tmp_path, content, bad):
    folder = tmp_path / "D"
    for rel, text in content.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    before = snapshot(folder)
    proc = command("ckam_bench.checks.stationarity", "sampler=rw", "target=bimodal",
                   f"hydra.run.dir={folder}", bad, cwd=tmp_path)
    assert proc.returncode == 2
    assert bad.split("=")[0] in one_line(proc)
    assert snapshot(folder) == before


def test_check_refuses_a_folder_of_foreign_files_before_running(tmp_path):
    folder = tmp_path / "D"
    folder.mkdir()
    (folder / "verdict.md").write_text("mine")
    proc = command("ckam_bench.checks.stationarity", "sampler=rw", "target=gauss2d_corr",
                   "check.n_chains=10", "check.times=[5]", "check.n_reference=100",
                   f"hydra.run.dir={folder}", cwd=tmp_path)
    assert proc.returncode == 2 and "refused" in one_line(proc)
    assert snapshot(folder) == {"verdict.md": b"mine"}


CHECK_BAD = [
    ("check.n_chains=inf", "check.n_chains"), ("check.n_reference=inf", "check.n_reference"),
    ("seed=inf", "seed"), ("check.times=[1,inf]", "check.times"),
    ("check.times=[1e15]", "check.times"), ("check.times=[1000000000000]", "check.times"),
    ("check.n_chains=abc", "check.n_chains"), ("check.n_chains=10.5", "check.n_chains"),
    ("check.alpha=2", "check.alpha"), ("check.alpha=abc", "check.alpha"),
    ("check.times=[5,3]", "check.times"), ("check.times=abc", "check.times"),
    ("block_seconds=1e-300", "block_seconds"), ("sampler.step_size=-1", "sampler.step_size"),
]


@pytest.mark.parametrize("override, key", CHECK_BAD, ids=[o for o, _ in CHECK_BAD])
def test_check_bad_values_name_their_key(override, key):
    from ckam_bench.commands.cli import _build
    from ckam_bench.commands.validate import check_config

    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("check", overrides=["sampler=rw", "target=gauss2d_corr", override])
    with pytest.raises(ConfigError) as err:
        check_config(cfg)
        _build(cfg, "sampler")
    assert str(err.value).startswith(key), str(err.value)


SLOW = pytest.mark.slow  # more cases of the issue, one command each


@pytest.mark.parametrize("override", [
    "check.times=[1e15]", "seed=inf", "foo=1",
    pytest.param("check.n_chains=inf", marks=SLOW), pytest.param("check.n_reference=inf", marks=SLOW),
    pytest.param("check.times=[1,inf]", marks=SLOW), pytest.param("check.n_chains=abc", marks=SLOW),
])
def test_check_cli_bad_value_one_line_exit_2_nothing_created(tmp_path, override):
    proc = command("ckam_bench.checks.stationarity", "sampler=rw", "target=gauss2d_corr", override,
                   f"hydra.run.dir={tmp_path / 'new' / 'run'}", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    assert override.split("=")[0] in one_line(proc)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- ckam-bench-reference
GAUSS = ["target=gauss2d_corr", "sampler=gam", "burn_in=0", "iterations=200", "max_draws=100",
         "stored_draws=10"]


def fake_certificate(target):
    return {"reference_id": target.reference_id(), "certified": True, "criteria": {},
            "diagnostics": {}}


def test_reference_never_replaces_a_stored_reference(tmp_path):
    out = tmp_path / "O2"
    path = reference.store_reference(out, fake_certificate(gauss2d_corr()),
                                     {"mean": np.zeros(2)})
    before = snapshot(out)
    proc = command("ckam_bench.checks.reference", *GAUSS, f"out={out}", cwd=tmp_path)
    assert proc.returncode == 2 and "already exists" in one_line(proc) and path.name in proc.stderr
    assert snapshot(out) == before


@pytest.fixture(scope="module")
def chain_sweep(tmp_path_factory):
    """A reference split over a sweep (-m chain=0,1,2,3) started where the user keeps a
    multirun.yaml of their own."""
    cwd = tmp_path_factory.mktemp("sweep")
    (cwd / "multirun.yaml").write_text("the user's own\n")
    proc = command("ckam_bench.checks.reference", "-m", *GAUSS, "out=O", "chain=0,1,2,3", cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cwd


def test_reference_sweep_leaves_the_current_folder_alone(chain_sweep):
    assert (chain_sweep / "multirun.yaml").read_text() == "the user's own\n"
    parts = chain_sweep / "O" / "parts" / gauss2d_corr().reference_id()
    assert sorted(p.name for p in parts.iterdir()) == [f"chain{c}.npz" for c in range(4)]


@pytest.mark.parametrize("damage, reason", [
    (lambda parts: shutil.copy(parts / "chain0.npz", parts / "chain1.npz"), "chain 0 (expected 1)"),
    (lambda parts: (parts / "chain1.npz").write_bytes((parts / "chain1.npz").read_bytes()[:700]),
     "damaged"),
], ids=["copied", "truncated"])
def test_combine_refuses_a_chain_copied_over_another(chain_sweep, tmp_path, damage, reason):
    work = tmp_path / "w"
    shutil.copytree(chain_sweep / "O", work / "O")
    damage(work / "O" / "parts" / gauss2d_corr().reference_id())
    before = snapshot(work)
    proc = command("ckam_bench.checks.reference", *GAUSS, "out=O", "combine=true", "ess_min=100",
                   cwd=work)
    line = one_line(proc)
    assert proc.returncode == 2 and "chain1.npz" in line and reason in line
    assert snapshot(work) == before
    good = command("ckam_bench.checks.reference", *GAUSS, "out=O", "combine=true", "ess_min=100",
                   cwd=chain_sweep)  # the intact set combines (and is not certified: tiny)
    assert good.returncode in (0, reference.EXIT_UNCERTIFIED), good.stderr


@pytest.fixture(scope="module")
def chain_runs():
    target = gauss2d_corr()
    opts = dict(burn_in=500, iterations=3000, max_draws=1000, seed=0, start_spread=1.0)
    from tests.test_reference import gam

    runs = reference.run_chains(target, lambda: gam(2, 500), range(4), **opts)
    ids = [reference.chain_identity(target, "gam", {"s": 1}, c, **opts) for c in range(4)]
    return target, opts, runs, ids


def write_set(folder, runs, ids):
    folder.mkdir(exist_ok=True)
    files = []
    for c, (run, ident) in enumerate(zip(runs, ids)):
        reference.save_chain(folder / f"chain{c}.npz", run, ident)
        files.append(folder / f"chain{c}.npz")
    return files


def damage_truncated(path):
    path.write_bytes(path.read_bytes()[:500])


def damage_empty(path):
    path.write_bytes(b"")


def damage_text(path):
    path.write_text("not a chain\n")


def damage_old_format(path):  # a chain file without identity and checksum
    with np.load(path) as f:
        arrays = {k: f[k] for k in reference.CHAIN_ARRAYS}
    np.savez(path, **arrays)


def damage_sums(path):  # running sums altered, checksum left as it was
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["sums"] = arrays["sums"] * 1.01
    np.savez(path, **arrays)


def damage_shapes(path):  # consistent checksum, impossible content
    with np.load(path) as f:
        run = reference.ChainRun(held=f["held"][:, :1], sums=f["sums"], count=int(f["count"]),
                                 acceptance=0.5, n_nonfinite=0, start=f["start"], seconds=1.0)
        ident = json.loads(str(f["identity"]))
    reference.save_chain(path, run, ident)


@pytest.mark.parametrize("damage, reason", [
    (damage_truncated, "damaged"), (damage_empty, "damaged"), (damage_text, "damaged"),
    (damage_old_format, "damaged"), (damage_sums, "checksum mismatch"),
    (damage_shapes, "inconsistent"),
])
def test_combine_refuses_damaged_chain_files(chain_runs, tmp_path, damage, reason):
    target, opts, runs, ids = chain_runs
    files = write_set(tmp_path, runs, ids)
    damage(files[2])
    with pytest.raises(ChainFileError) as err:
        reference.combine_chains(files, ids)
    assert str(err.value).startswith(str(files[2])) and reason in str(err.value)


def test_combine_refuses_incomplete_mismatched_and_duplicated_sets(chain_runs, tmp_path):
    target, opts, runs, ids = chain_runs
    files = write_set(tmp_path, runs, ids)
    assert len(reference.combine_chains(files, ids)) == 4
    files[3].unlink()
    with pytest.raises(ChainFileError, match="incomplete set.*chain3.npz"):
        reference.combine_chains(files, ids)
    for key, value in (("seed", 1), ("sampler", "am"), ("code", {"ckam-bench": "0.0"}),
                       ("reference_id", "other-0123456789")):
        write_set(tmp_path, runs, ids)
        other = dict(ids[1], **{key: value})
        reference.save_chain(files[1], runs[1], other)
        with pytest.raises(ChainFileError, match=f"chain1.npz: a chain of another job: {key}"):
            reference.combine_chains(files, ids)
    write_set(tmp_path, runs, ids)
    reference.save_chain(files[2], runs[0], ids[2])  # chain 0's draws, identity forged
    with pytest.raises(ChainFileError, match="chain2.npz: duplicates .*chain0.npz"):
        reference.combine_chains(files, ids)


def test_looser_thresholds_give_a_provisional_certificate_never_certified(chain_runs, tmp_path):
    target, opts, runs, ids = chain_runs
    ok, _, cert, arrays = reference.certify_runs(target, runs, rhat_max=1.5, ess_min=100, **opts)
    assert ok and cert["provisional"] and not cert["certified"]
    path = reference.store_reference(tmp_path, cert, arrays)
    assert path.name.endswith(".provisional.npz")
    with pytest.raises(ValueError, match="not certified.*provisional"):
        reference.read_reference(path)
    forged = dict(cert, certified=True)  # a certificate claiming more than its thresholds
    path = reference.store_reference(tmp_path / "forged", forged, arrays)
    with pytest.raises(ValueError, match="not certified"):
        reference.read_reference(path)


REFERENCE_BAD = [
    ("chains=inf", "chains"), ("iterations=inf", "iterations"), ("burn_in=inf", "burn_in"),
    ("seed=-1", "seed"), ("seed=abc", "seed"), ("rhat_max=abc", "rhat_max"),
    ("chain=abc", "chain"), ("iterations=1e30", "iterations"), ("burn_in=1e25", "burn_in"),
    ("burn_in=10000000000000000000000000", "burn_in"), ("chains=4.7", "chains"),
    ("rhat_max=1e9", "rhat_max"), ("ess_min=0", "ess_min"), ("rhat_max=1.0", "rhat_max"),
    ("max_draws=inf", "max_draws"), ("stored_draws=0", "stored_draws"),
    ("start_spread=nan", "start_spread"), ("chain=7", "chain"), ("combine=maybe", "combine"),
    ("out=[1]", "out"), ("sampler.step_size=-1", "sampler.step_size"),
]


@pytest.mark.parametrize("override, key", REFERENCE_BAD, ids=[o for o, _ in REFERENCE_BAD])
def test_reference_bad_values_name_their_key(override, key):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("reference", overrides=["target=gauss2d_corr", override])
    with pytest.raises(ConfigError) as err:
        reference.validate_config(cfg)
    assert str(err.value).startswith(key), str(err.value)


@pytest.mark.parametrize("override", [
    "burn_in=1e25", "foo=1", "out=afile",
    *(pytest.param(o, marks=SLOW) for o in (
        "chains=inf", "iterations=inf", "burn_in=inf", "seed=-1", "seed=abc", "rhat_max=abc",
        "chain=abc", "iterations=1e30", "chains=4.7", "rhat_max=1e9", "ess_min=0")),
])
def test_reference_cli_bad_value_one_line_exit_2_nothing_created(tmp_path, override):
    (tmp_path / "afile").write_text("x")
    proc = command("ckam_bench.checks.reference", "target=gauss2d_corr", override, cwd=tmp_path,
                   timeout=120, env={reference.CACHE_ENV: str(tmp_path / "cache")})
    assert proc.returncode == 2
    assert override.split("=")[0] in one_line(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


# ---------------------------------------------------------------------------- ckam-bench-figures
@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two real runs (rw on bimodal, am on gmm2d), with their markers and hashes."""
    root = tmp_path_factory.mktemp("runs")
    for sampler, target in (("rw", "bimodal"), ("am", "gmm2d")):
        proc = clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", f"sampler={sampler}",
                               f"target={target}", "budget.seconds=0.2", "progress=false",
                               f"hydra.run.dir={root / f'{sampler}_{target}'}"], cwd=root,
                          env=ENV, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    return root


def figures(results, out):
    return figures_cli.main([str(results), "--out", str(out), "--figures", "none",
                             "--generic", "none", "--formats", "png"])


@pytest.mark.parametrize("names", [["report.md"], ["report.html"], ["ranking_bimodal.md"],
                                   ["results_bimodal.tex"]])
def test_figures_never_overwrites_a_users_files(two_runs, tmp_path, names, capsys):
    out = tmp_path / "OUT"
    out.mkdir()
    for name in names:
        (out / name).write_text("the user's own")
    assert figures(two_runs, out) == 2
    assert "refused" in capsys.readouterr().err
    assert snapshot(out) == {name: b"the user's own" for name in names}


def test_figures_replaces_only_its_own_unchanged_files(two_runs, tmp_path, capsys):
    out = tmp_path / "OUT"
    assert figures(two_runs, out) == 0
    assert figures(two_runs, out) == 0  # its own report: rewritten
    (out / "report.md").write_text("edited")
    before = snapshot(out)
    assert figures(two_runs, out) == 2
    assert "report.md was not written" in capsys.readouterr().err
    assert snapshot(out) == before


def test_figures_full_disk_leaves_the_previous_report_intact(two_runs, tmp_path, monkeypatch,
                                                             capsys):
    out = tmp_path / "OUT"
    assert figures(two_runs, out) == 0
    before = snapshot(out)
    real = figures_cli.html.write_html

    def full_disk(out_dir, *args, **kw):
        page = real(out_dir, *args, **kw)
        page.write_text(page.read_text()[:100])  # a truncated page, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(figures_cli.html, "write_html", full_disk)
    assert figures(two_runs, out) == 1
    err = capsys.readouterr().err
    assert "No space left" in err and "Traceback" not in err
    assert snapshot(out) == before


def test_figures_lists_bad_runs_as_not_used_and_reports_the_rest(two_runs, tmp_path, capsys):
    results = tmp_path / "runs"
    shutil.copytree(two_runs, results)
    copied = tmp_path / "runs" / "rw_bimodal"  # gmm2d/am's trace placed in a bimodal/rw folder
    shutil.copy(results / "am_gmm2d" / "trace.parquet", copied / "trace.parquet")
    for name, change in (("seed_abc", {"seed": "abc"}), ("seed_null", {"seed": None}),
                         ("seed_nan", {"seed": float("nan")}), ("slash", {"target": "a/b"})):
        path = make_run(results, seed=3, tag=name)
        status = json.loads((path / "status.json").read_text())
        (path / "status.json").write_text(json.dumps({**status, **change}))
    listed = make_run(results, seed=4, tag="list")
    (listed / ".hydra" / "config.yaml").write_text("- a\n- b\n")
    good = make_run(results, seed=5, tag="good")
    out = tmp_path / "OUT"
    assert figures(results, out) == 0
    text = (out / "report.md").read_text()
    reasons = {"rw_bimodal": "its files belong to different runs: trace.parquet",
               "seed_abc": "seed 'abc'", "seed_null": "seed None", "seed_nan": "seed nan",
               "slash": "target 'a/b'", "list": ".hydra/config.yaml unreadable"}
    skipped = text.split("## Skipped runs")[1]
    for tag, reason in reasons.items():
        line = next(row for row in skipped.splitlines()
                    if row.startswith("- `") and row.split("`")[1].endswith(tag))
        assert reason in line, line
    assert "2 used" in text and good.name not in skipped


# ---------------------------------------------------------------------------- sweep folders
@pytest.mark.parametrize("module, args", [
    ("ckam_bench.commands.cli", ["sampler=rw", "target=bimodal", "budget.seconds=0.1", "progress=false"]),
    ("ckam_bench.checks.stationarity", ["sampler=rw", "target=bimodal", "check.n_chains=10",
                                 "check.times=[10]"]),
    ("ckam_bench.checks.reference", [*GAUSS, "out=O", "chain=0,1"]),
], ids=["ckam-bench", "check", "reference"])
def test_a_sweep_never_replaces_a_users_multirun_yaml(tmp_path, module, args):
    """Hydra writes multirun.yaml into every sweep folder: a user's own is refused untouched."""
    sweep = tmp_path / "S"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("the user's own\n")
    proc = command(module, "-m", *args, f"hydra.sweep.dir={sweep}", cwd=tmp_path,
                   env={reference.CACHE_ENV: str(tmp_path / "cache")})
    assert proc.returncode == 2
    assert "multirun.yaml was not written by a ckam-bench sweep" in one_line(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["S"]
    assert snapshot(sweep) == {"multirun.yaml": b"the user's own\n"}


def test_a_sweep_whose_every_job_is_refused_leaves_nothing(tmp_path):
    proc = command("ckam_bench.commands.cli", "-m", "sampler=rw", "target=bimodal", "sampler.step_size=-1",
                   "progress=false", f"hydra.sweep.dir={tmp_path / 'new' / 'S'}", cwd=tmp_path)
    assert proc.returncode == 2 and "sampler.step_size" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_runs_again_in_its_own_folder(tmp_path):
    args = ["-m", "sampler=rw", "target=bimodal", "budget.seconds=0.1", "progress=false",
            f"hydra.sweep.dir={tmp_path / 'S'}"]
    first = command("ckam_bench.commands.cli", *args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = command("ckam_bench.commands.cli", *args, "seed=0,1", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "already complete" in again.stderr
    assert (tmp_path / "S" / "1_rw_bimodal_s1" / "trace.parquet").is_file()


@pytest.mark.parametrize("script", ["bench_throughput.py", "bench_peers.py"])
def test_benchmark_scripts_replace_only_their_own_json(tmp_path, script):
    """--json: a user's file of that name is refused before any benchmark runs."""
    (tmp_path / "out.json").write_text("the user's own\n")
    proc = clirun.run([sys.executable, str(ROOT / "scripts" / script), "--json", "out.json"],
                      cwd=tmp_path, capture_output=True, text=True, timeout=300, env=ENV)
    assert proc.returncode == 2
    assert "out.json exists and was not written by" in one_line(proc)
    assert (tmp_path / "out.json").read_text() == "the user's own\n"


def test_own_json_is_replaced_atomically(tmp_path):
    from ckam_bench.engine import outputs

    path = tmp_path / "bench.json"
    outputs.write_own_json(path, {"rows": [1]}, "scripts/x.py")
    outputs.write_own_json(path, {"rows": [2]}, "scripts/x.py")  # its own: replaced
    assert json.loads(path.read_text()) == {"written_by": "scripts/x.py", "rows": [2]}
    with pytest.raises(figures_cli.FolderRefused):
        outputs.write_own_json(path, {"rows": [3]}, "scripts/y.py")
    assert [p.name for p in tmp_path.iterdir()] == ["bench.json"]


def test_an_out_under_a_file_is_refused_before_any_work(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    proc = command("ckam_bench.checks.reference", *GAUSS, "out=afile/x", cwd=tmp_path,
                   env={reference.CACHE_ENV: str(tmp_path / "cache")})
    assert proc.returncode == 2 and "afile is a file" in one_line(proc)
    assert "chain 0" not in proc.stderr  # refused before sampling
    proc = command("ckam_bench.checks.stationarity", "sampler=rw", "target=bimodal",
                   "hydra.run.dir=afile/x", cwd=tmp_path)
    line = one_line(proc)
    assert proc.returncode == 1 and line.startswith("ckam-bench") and line.count("ckam-bench") == 1
    assert figures_cli.main([str(tmp_path), "--out", str(tmp_path / "afile" / "x")]) == 2
    assert "afile is a file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
