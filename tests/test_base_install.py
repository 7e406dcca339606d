"""The README's base install (``pip install -e ".[test]"``: no PyMC, no peer samplers) works, and
the references of the posteriordb suite reach the pymc target without the targets importing the
suite (issue 43 §1b and §5).

The test suite runs with every extra installed, so the base install is simulated here: a
subprocess whose ``sys.modules`` holds None for the extras' modules (an import of them fails,
``importlib.util.find_spec`` finds nothing), as in ``tests/test_pymc_target.py``. CI also runs
every command in a real base install (``.ci/smoke_base_install.sh``).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("pymc", "pytensor", "jax", "jaxlib", "numpyro", "blackjax", "nutpie", "walnutpie")
WITHOUT_EXTRAS = "; ".join(f"sys.modules[{m!r}] = None" for m in EXTRAS)


def base_install(*args, cwd, command="from ckam_bench.commands.entry import main; main()"):
    """``ckam-bench ARGS`` as on the base install: the extras' modules cannot be imported."""
    code = f"import sys; {WITHOUT_EXTRAS}; sys.argv = ['ckam-bench', *sys.argv[1:]]; {command}"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "0"})


def test_list_works_and_names_the_missing_extras(tmp_path):
    """``ckam-bench list`` (every group and the posteriordb suite) exits 0 without a traceback;
    every posteriordb row, the pymc target and experiment=posteriordb say ``needs
    ckam-bench[pymc]``, the peer samplers ``needs ckam-bench[peers]``, and no row is an error."""
    from ckam_bench.posteriordb import registered

    proc = base_install("list", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr and proc.stderr == ""
    assert "error:" not in proc.stdout
    sections = [line.split(" (")[0] for line in proc.stdout.splitlines() if line and line[0] != " "]
    assert sections == ["sampler", "target", "kernel", "schedule", "experiment", "budget",
                        "checkpoint", "metrics", "posteriordb"]  # nothing wrongly "without a reference"
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("  ")}
    for name, posterior in registered().items():  # the harness's references cannot be looked up
        assert rows[name].endswith("; needs ckam-bench[pymc]]"), rows[name]
        assert f"target=pymc target.model={posterior.model}" in rows[name]
    assert "posteriordb's reference draws" in rows["mesquite-mesquite"]  # found without PyMC
    assert "looked up by the target's reference id once ckam-bench[pymc] is installed" \
        in rows["radon_mod-radon_county"]
    for name in ("pymc", "posteriordb"):  # the target, the experiment
        assert rows[name].endswith("needs ckam-bench[pymc]]"), rows[name]
    for name in ("nutpie", "nutpie_lowrank", "nutpie_flow", "numpyro_nuts", "blackjax_nuts", "blackjax_gist", "walnutpie"):
        assert rows[name].endswith("[needs ckam-bench[peers]]"), rows[name]
    assert "ckam-bench[" not in rows["nuts"] + rows["bimodal"] + rows["paper_bimodal"]
    assert list(tmp_path.iterdir()) == []


def test_list_posteriordb_subset_without_pymc(tmp_path):
    """A subset chooses among every registered posterior; a term matching none is still one line."""
    proc = base_install("list", "posteriordb", "posteriordb.subset=[dim:100..]", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("  ")]
    assert rows and all(line.endswith("; needs ckam-bench[pymc]]") for line in rows)
    assert any(line.split()[0] == "radon_mod-radon_county" for line in rows)
    bad = base_install("list", "posteriordb", "posteriordb.subset=[nosuch]", cwd=tmp_path)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


@pytest.mark.parametrize("multirun", [["-m"], []])
def test_the_suite_without_pymc_is_one_line_exit_2_and_nothing_created(tmp_path, multirun):
    """``experiment=posteriordb``: its sweep's resolver would fail inside Hydra; it is refused
    before (a peer sampler or a PyMC model without its extra: tests/samplers/test_peers.py,
    tests/test_pymc_target.py)."""
    proc = base_install(*multirun, "experiment=posteriordb", "sampler=rw", "budget.seconds=1",
                        f"hydra.sweep.dir={tmp_path / 'sweep'}", f"hydra.run.dir={tmp_path / 'run'}",
                        cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0] == ('ckam-bench: invalid configuration: experiment=posteriordb runs PyMC models '
                        '(target=pymc), and PyMC is not installed: pip install "ckam-bench[pymc]"')
    assert list(tmp_path.iterdir()) == []


def test_ci_smokes_the_readmes_base_install():
    """CI's smoke test installs exactly the README's first command, and .ci/run calls it."""
    import re

    readme = (ROOT / "README.md").read_text()
    first = re.search(r'pip install -e "(\.\[[^"]*\])" && ckam-bench\n', readme)
    assert first, "the README's first command changed: keep .ci/smoke_base_install.sh in step"
    smoke = (ROOT / ".ci" / "smoke_base_install.sh").read_text()
    assert f'pip install --quiet -e "{first[1]}"' in smoke
    assert "\nbash .ci/smoke_base_install.sh\n" in (ROOT / ".ci" / "run").read_text()


def test_reference_status_and_selection_without_pymc(monkeypatch):
    """Without PyMC, posteriordb's draws are found from the files, a harness reference is
    neither found nor missing but needs ckam-bench[pymc] to be looked up, every registered
    posterior can be chosen, and the suite refuses to run in one line."""
    import ckam_bench.posteriordb as posteriordb
    from ckam_bench.posteriordb import HARNESS, registered
    from ckam_bench.posteriordb.highdim import HIGHDIM
    from ckam_bench.posteriordb.subset import SubsetError, model_specs, reference_status, select

    monkeypatch.setattr(posteriordb, "pymc_installed", lambda: False)
    status = reference_status("mesquite-mesquite")
    assert status.found and not status.needs
    for name in HIGHDIM:
        status = reference_status(name)
        assert (status.source, status.found, status.needs) == (HARNESS, False, "pymc")
        assert "ckam-bench[pymc]" in status.reason  # what the report says of such a posterior
    assert [p.name for p in select("all")] == list(registered())
    assert [p.name for p in select("dim:100..")] == [p.name for p in registered().values() if p.dim >= 100]
    with pytest.raises(SubsetError, match=r'PyMC is not installed: pip install "ckam-bench\[pymc\]"'):
        model_specs("all")


def test_pymc_installed_is_asked_without_importing_pymc(tmp_path):
    code = ("import sys; from ckam_bench.posteriordb import pymc_installed; "
            "print(pymc_installed(), sys.modules.get('pymc') is not None)")
    assert base_install(cwd=tmp_path, command=code).stdout.split() == ["False", "False"]
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.split() == ["True", "False"], proc.stderr


# ---------------------------------------------------------------------------- §5: no circle
def test_reference_providers_in_order_once_each(monkeypatch):
    from ckam_bench import reference_providers as providers

    monkeypatch.setattr(providers, "_PROVIDERS", [])
    seen = []

    def declines(target):
        seen.append("declines")

    def knows_a(target):
        return f"reference of {target}" if target == "a" else None

    providers.register_reference_provider(declines)
    providers.register_reference_provider(knows_a)
    providers.register_reference_provider(declines)  # again: nothing changes
    assert providers.provided_reference("a") == "reference of a"
    assert providers.provided_reference("b") is None
    assert seen == ["declines", "declines"]
    with pytest.raises(TypeError, match="must be callable"):
        providers.register_reference_provider("posteriordb")


def test_the_suite_registers_its_reference_provider():
    from ckam_bench.posteriordb import reference_for
    from ckam_bench.reference_providers import _PROVIDERS

    assert reference_for in _PROVIDERS


def test_a_suite_model_finds_posteriordb_draws_with_only_the_target_imported(tmp_path):
    """A fresh process that imports only the pymc target and the reference lookup, as a run of
    ``target=pymc target.model=ckam_bench.posteriordb.models:kilpisjarvi`` does: building the
    model imports the suite, which registers its provider, and the target's reference is
    posteriordb's draws; ckam_bench.targets never imports ckam_bench.posteriordb."""
    code = """
import sys
from ckam_bench.reference_lookup import load_reference
from ckam_bench.targets.pymc import PyMCModel
assert "ckam_bench.posteriordb" not in sys.modules, "imported before the model"
target = PyMCModel("ckam_bench.posteriordb.models:kilpisjarvi")
reference = load_reference(target)
print(reference.certificate["certified_by"], reference.path.name, reference.samples.shape)
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT), "CKAM_BENCH_JIT": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["posteriordb", "kilpisjarvi_mod-kilpisjarvi.npz", "(10000,", "3)"]
