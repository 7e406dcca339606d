"""Reference ids are computed from bytes (data files, settings), never from floating-point
results: the same on every CPU, whatever BLAS or SIMD kernel it selects (issue 29 §1)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ckam_bench.checks.reference import SHIPPED, check_probes, density_probes, load_reference

SHIPPED_IDS = sorted(p.stem for p in Path(SHIPPED).glob("*.npz"))


def _target(name: str):
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    conf = Path(__file__).resolve().parents[1] / "conf"
    overrides = [f"target={name}"]
    if name.startswith("pymc_models_"):  # a posteriordb model of the suite's high-dimensional set
        overrides = ["target=pymc", f"target.model=ckam_bench.posteriordb.models:{name.removeprefix('pymc_models_')}"]
    with initialize_config_dir(config_dir=str(conf), version_base=None):
        return instantiate(compose(config_name="config", overrides=overrides).target)


def _name(reference_id: str) -> str:
    return reference_id.rsplit("-", 1)[0]


def test_the_shipped_set_is_listed():
    """Nothing drops out silently: these are the shipped references (update when one is added)."""
    assert [_name(r) for r in SHIPPED_IDS] == [
        "gp_glass", "horseshoe", "logistic_australian", "logistic_german", "logistic_heart",
        "logistic_pima", "logistic_ripley", "pymc_models_glmm1", "pymc_models_prophet",
        "pymc_models_radon_all_county_intercept", "pymc_models_radon_county", "pymc_models_radon_county_intercept",
        "pymc_models_radon_variable_intercept_slope_noncentered"]


@pytest.mark.parametrize("reference_id", SHIPPED_IDS)
def test_every_shipped_reference_is_found_and_matches_its_density(reference_id):
    target = _target(_name(reference_id))
    assert target.reference_id() == reference_id
    reference = load_reference(target)
    assert reference is not None and reference.reference_id == reference_id
    cert = json.loads((Path(SHIPPED) / f"{reference_id}.json").read_text())
    assert cert["reference_id"] == reference_id and cert["target"] == target.describe()
    if not target.noisy:  # the certificate keeps log π at two points, checked at load
        assert len(cert["log_density_probes"]) == 2


def _one_ulp(a):
    return np.nextafter(a, np.inf)


def test_gp_glass_id_survives_a_one_ulp_change_of_the_whitening(monkeypatch):
    """The whitened features come from a Cholesky factor and a triangular solve, whose last bits
    depend on the CPU's BLAS kernel: the id must not see them."""
    from ckam_bench.targets import gp_classification

    before = _target("gp_glass").reference_id()
    real = gp_classification.solve_triangular
    monkeypatch.setattr(gp_classification, "solve_triangular", lambda *a, **k: _one_ulp(real(*a, **k)))
    target = _target("gp_glass")
    assert target.reference_id() == before


@pytest.mark.parametrize("dataset", ["australian", "pima"])
def test_logistic_id_survives_a_one_ulp_change_of_the_standardised_design(monkeypatch, dataset):
    from ckam_bench.targets import logistic

    before = _target(f"logistic_{dataset}").reference_id()
    real = logistic.standardise
    monkeypatch.setattr(logistic, "standardise", lambda f: _one_ulp(real(f)))
    logistic._KEEP.clear()
    target = _target(f"logistic_{dataset}")
    assert target.reference_id() == before
    logistic._KEEP.clear()


def test_a_changed_data_file_changes_the_id(tmp_path):
    from ckam_bench.targets.gp_classification import gp_glass
    from ckam_bench.data import data_file

    lines = data_file("glass.data").read_text().splitlines()
    (tmp_path / "g.data").write_text("\n".join(lines[:-1]) + "\n")
    assert gp_glass(data_file=str(tmp_path / "g.data")).reference_id() != _target("gp_glass").reference_id()


def test_a_reference_made_for_another_density_is_refused():
    """Same id (data and settings by their bytes) but another log π at the probe points: the
    reference is refused with a message, not used; last-bit differences pass."""
    target = _target("logistic_pima")
    cert = density_probes(target)
    check_probes(target, {"log_density_probes": [_one_ulp(v) for v in cert["log_density_probes"]]}, "x")
    with pytest.raises(ValueError, match="another density"):
        check_probes(target, {"log_density_probes": [v + 1e-3 for v in cert["log_density_probes"]]}, "x")


def _kernel_names() -> list[str]:
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return ["Prescott", "Haswell"]  # SSE3 (every x86-64) and AVX2
    if machine in ("aarch64", "arm64"):
        return ["ARMV8"]
    return []


@pytest.mark.parametrize("kernel", _kernel_names())
def test_ids_are_equal_under_another_blas_kernel(kernel):
    """In a subprocess whose OpenBLAS is forced to another kernel, every shipped reference is
    found under the same id."""
    code = ("import json\nfrom tests.test_reference_ids import _target, SHIPPED_IDS, _name\n"
            "print(json.dumps([_target(_name(r)).reference_id() for r in SHIPPED_IDS]))\n")
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel}
    env.pop("OPENBLAS_L2_SIZE", None)
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == SHIPPED_IDS


def test_pymc_id_is_computed_from_bytes(monkeypatch):
    """A PyMC target's id: its model source's bytes and its data's bytes; log π at some points
    (the old fingerprint) no longer enters it."""
    pytest.importorskip("pymc")
    from ckam_bench.targets.pymc import PyMCModel

    target = PyMCModel("ckam_bench.posteriordb.models:arK")
    before = target.reference_id()
    described = target.describe()
    assert "logp_sha256" not in described and len(described["source_sha256"]) == 16
    real = target._log_density
    monkeypatch.setattr(target, "_log_density", lambda x: _one_ulp(real(x)))
    assert target.reference_id() == before
