"""The suite's PyMC models equal posteriordb's Stan programs (ckam_bench/posteriordb).

Over posteriordb's reference draws mapped to the model's unconstrained coordinates u (Stan's),
with log p(u) the model's log density including the log-Jacobians:

- the score has mean zero, E[d_j log p(u)] = 0, and
- the Stein identity E[u_i d_j log p(u)] = -delta_ij holds (Stein's identity for f(u) = u_i),

each entry within Monte Carlo error (a z-test with Bonferroni over the entries; the draws are
thinned by posteriordb to be nearly independent, the standard error still allows for lag-1
autocorrelation). Both identities hold for the posterior the draws come from and fail for a
density that differs from it by a non-constant factor, which the mutation test demonstrates.
posteriordb's reference draws carry no lp__, so log-density differences between draws cannot
be compared with Stan's. Gradients are checked against central finite differences.

The default run uses the first 1000 draws (one chain; a few seconds per model under PyTensor's
C backend); the slow test uses all 10 000.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from scipy.stats import norm

pm = pytest.importorskip("pymc")
import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from pymc.pytensorf import join_nonshared_inputs  # noqa: E402

from ckam_bench.posteriordb import SUITE, load_data, load_reference  # noqa: E402
from ckam_bench.posteriordb import models  # noqa: E402

NAMES = sorted(SUITE)
FAST_DRAWS = 1000
ALPHA = 1e-3  # family-wise error rate of each identity check


def _logp_dlogp(model):
    """(logp, dlogp) of the model at each row of an array of unconstrained vectors (a loop over
    one compiled point function: compiling a vectorised graph costs more than it saves)."""
    (logp, dlogp), x = join_nonshared_inputs(model.initial_point(),
                                             [model.logp(jacobian=True), model.dlogp(jacobian=True)],
                                             model.value_vars)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyTensor's "could not link to BLAS"
        point = pytensor.function([x], [logp, dlogp])

    def rows(u):
        values = [point(row) for row in u]
        return np.array([v[0] for v in values]), np.array([v[1] for v in values])

    return rows


@functools.lru_cache(maxsize=None)
def _case(name):
    model = getattr(models, SUITE[name].function)()
    _, u = models.unconstrained_reference(name, model)
    return model, u, _logp_dlogp(model)


def _z_max(samples: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """Largest |z| of the sample means of ``samples`` (n, m) against ``target`` (m,), with
    standard errors inflated for lag-1 autocorrelation, and its Bonferroni critical value."""
    n = len(samples)
    centred = samples - samples.mean(axis=0)
    var = centred.var(axis=0, ddof=1)
    rho = np.clip((centred[1:] * centred[:-1]).mean(axis=0) / var, 0.0, 0.5)
    se = np.sqrt(var / n * (1 + rho) / (1 - rho))
    z = np.abs(samples.mean(axis=0) - target) / se
    return float(z.max()), float(norm.isf(ALPHA / (2 * samples.shape[1])))


def _identities(u: np.ndarray, grad: np.ndarray) -> dict[str, tuple[float, float]]:
    d = u.shape[1]
    stein = (u[:, :, None] * grad[:, None, :]).reshape(len(u), d * d)
    return {"mean score": _z_max(grad, np.zeros(d)),
            "Stein": _z_max(stein, -np.eye(d).ravel())}


def _check(name: str, n_draws: int | None):
    model, u, batch = _case(name)
    u = u[:n_draws]
    logp, grad = batch(u)
    assert np.isfinite(logp).all() and np.isfinite(grad).all()
    for what, (z, crit) in _identities(u, grad).items():
        assert z < crit, f"{name}: {what} identity fails, max |z| = {z:.2f} >= {crit:.2f}"


@pytest.mark.parametrize("name", NAMES)
def test_reference_maps_onto_the_free_variables(name):
    model = getattr(models, SUITE[name].function)()
    values = models.reference_values(name)
    _, draws = load_reference(SUITE[name].reference)
    assert draws.shape[:2] == (10, 1000)
    assert sorted(values) == sorted(rv.name for rv in model.free_RVs)
    point = model.initial_point()
    for rv in model.free_RVs:
        value = model.rvs_to_values[rv]
        assert values[rv.name].shape == (10_000, *point[value.name].shape), rv.name


@pytest.mark.parametrize("name", NAMES)
def test_score_and_stein_identities_on_reference_draws(name):
    _check(name, FAST_DRAWS)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_score_and_stein_identities_on_all_reference_draws(name):
    _check(name, None)


@pytest.mark.parametrize("name", NAMES)
def test_gradient_matches_finite_differences(name):
    _, u, batch = _case(name)
    for row in u[[0, 500, 999]]:
        d = len(row)
        steps = np.diag(1e-6 * np.maximum(1.0, np.abs(row)))
        logp, _ = batch(np.vstack([row + steps, row - steps]))
        fd = (logp[:d] - logp[d:]) / (2 * np.diag(steps))
        np.testing.assert_allclose(batch(row[None])[1][0], fd, rtol=1e-4, atol=1e-4, err_msg=name)


def test_garch_variance_recursion_is_stans_loop():
    """The doubling solution of the GARCH variance recursion against Stan's loop, written out."""
    d = load_data("garch")
    y = d["y"]
    loglik = models.garch11().compile_logp(jacobian=False)  # pm.Uniform's -log(1 - alpha1) and
    rng = np.random.default_rng(1)                           # the potential cancel: likelihood only
    for _ in range(3):
        mu, alpha0, alpha1 = 5 + 0.1 * rng.normal(), rng.uniform(0.5, 2.0), rng.uniform(0.0, 0.6)
        beta1 = rng.uniform(0.0, 1.0 - alpha1)
        sigma = np.empty(len(y))
        sigma[0] = d["sigma1"]
        for t in range(1, len(y)):
            sigma[t] = np.sqrt(alpha0 + alpha1 * (y[t - 1] - mu) ** 2 + beta1 * sigma[t - 1] ** 2)
        point = {"mu": mu, "alpha0_log__": np.log(alpha0),
                 "alpha1_interval__": np.log(alpha1 / (1 - alpha1)),
                 "beta1_interval__": np.log(beta1 / (1 - alpha1 - beta1))}
        assert loglik(point) == pytest.approx(norm.logpdf(y, mu, sigma).sum(), rel=1e-12)


def _tilt_eight_schools_prior(model):
    """tau ~ half-Cauchy(0, 1) instead of (0, 5)."""
    tau = model["tau"]
    return pm.logp(pm.HalfCauchy.dist(1.0), tau) - pm.logp(pm.HalfCauchy.dist(5.0), tau)


def _tilt_garch_uniform(model):
    """beta1 ~ uniform(0, 1 - alpha1) (the normalised density) instead of Stan's flat beta1."""
    return -pt.log1p(-model["alpha1"])


@pytest.mark.parametrize("name, tilt", [
    ("eight_schools-eight_schools_centered", _tilt_eight_schools_prior),
    ("garch-garch11", _tilt_garch_uniform),
])
def test_identities_detect_a_wrong_model(name, tilt):
    """A translation slip (another prior scale, PyMC's normalised uniform for Stan's flat
    bounded parameter) makes the identity checks fail on the same draws."""
    model = getattr(models, SUITE[name].function)()
    with model:
        pm.Potential("slip", tilt(model))
    u = models.unconstrained_reference(name, model)[1][:FAST_DRAWS]
    checks = _identities(u, _logp_dlogp(model)(u)[1])
    assert any(z > 2 * crit for z, crit in checks.values()), checks


def test_harness_reference_is_readable_and_certified(tmp_path):
    """posteriordb's draws stored in ckam_bench.reference's format read back with the moments
    of the unconstrained draws and posteriordb's R-hat < 1.01 on every coordinate."""
    from types import SimpleNamespace

    from ckam_bench.reference import read_reference, store_reference

    name = "eight_schools-eight_schools_noncentered"
    _, u = models.unconstrained_reference(name)
    target = SimpleNamespace(dim=u.shape[1], reference_id=lambda: "pymc_models_test-0123456789",
                             describe=lambda: {"name": "pymc_models_test"})
    certificate, arrays = models.harness_reference(name, target)
    reference = read_reference(store_reference(tmp_path, certificate, arrays), dim=u.shape[1])
    np.testing.assert_allclose(reference.mean, u.mean(axis=0))
    np.testing.assert_allclose(reference.variance, u.var(axis=0))
    assert reference.samples.shape == (10_000, 10) and certificate["diagnostics"]["rhat_max"] < 1.01


@pytest.mark.parametrize("flags, reason", [([], "out of budget"), (["stuck"], "stuck"),
                                           (["nonfinite_proposals"], "diverging")])
def test_suite_report_marks_runs_that_never_get_there(tmp_path, flags, reason):
    import pandas as pd

    from ckam_bench.report.aggregate import StoredRun
    from ckam_bench.report.posteriordb_suite import run_evaluations

    trace = pd.DataFrame({"checkpoint": [0, 1, 2], "bias2": [0.5, 0.005, 0.002],
                          "n_grad": [100.0, 200.0, 300.0], "n_density": [100.0, 200.0, 300.0]})
    run = StoredRun(tmp_path, {"flags": flags}, None, {}, trace)
    assert run_evaluations(run) == (200.0, "")
    run = StoredRun(tmp_path, {"flags": flags}, None, {}, trace.assign(bias2=[0.5, 0.005, 0.02]))
    assert run_evaluations(run) == (np.inf, reason)
    density_only = trace.assign(n_grad=0.0, n_density=[10.0, 20.0, 30.0])
    assert run_evaluations(StoredRun(tmp_path, {"flags": flags}, None, {}, density_only)) == (20.0, "")


@pytest.mark.slow
def test_suite_sweep_end_to_end(tmp_path):
    """``ckam-bench -m experiment=posteriordb sampler=nuts`` runs every suite model against
    posteriordb's reference, and the suite report has a table per posterior plus the suite's."""
    import json
    import os
    import subprocess
    import sys

    from ckam_bench.report.aggregate import load_results
    from ckam_bench.report.posteriordb_suite import tables

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "ckam_bench.cli", "-m", "experiment=posteriordb",
                           "sampler=nuts", "seed=0", "budget.seconds=1", "progress=false",
                           f"hydra.sweep.dir={tmp_path}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    statuses = [json.loads(p.read_text()) for p in tmp_path.glob("*/status.json")]
    assert len(statuses) == len(SUITE)
    assert all(s["metrics_info"]["moments"]["truth"] == "reference" for s in statuses)
    out = tables(load_results(tmp_path))
    assert len(out) == len(SUITE) + 1 and all(len(t.rows) == 1 for t in out)


def test_build_converts_posteriordb_files_atomically(tmp_path, monkeypatch):
    """The maintainer's rebuild (python -m ckam_bench.posteriordb.build PATH): data and draws
    converted losslessly (draws to float32), each file replaced by a rename."""
    import json
    import types
    import zipfile

    import numpy as np

    from ckam_bench.posteriordb import build

    base = tmp_path / "pdb" / "posterior_database"
    (base / "data" / "data").mkdir(parents=True)
    (base / "reference_posteriors" / "draws" / "draws").mkdir(parents=True)
    for path, doc in ((base / "data" / "data" / "d.json.zip", {"N": 2, "y": [0.5, 1.5]}),
                      (base / "reference_posteriors" / "draws" / "draws" / "r.json.zip",
                       [{"mu": [0.0, 1.0, 2.0]}, {"mu": [3.0, 4.0, 5.0]}])):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(path.name[:-4], json.dumps(doc))
    out = tmp_path / "out"
    out.mkdir()
    (out / "d.npz").write_text("old")
    monkeypatch.setattr(build, "DATA_DIR", out)
    monkeypatch.setattr(build, "REFERENCE_DIR", out)
    monkeypatch.setattr(build, "SUITE", {"p": types.SimpleNamespace(data="d", reference="r")})
    build.build(tmp_path / "pdb")
    assert sorted(p.name for p in out.iterdir()) == ["d.npz", "r.npz"]  # no temporaries left
    with np.load(out / "d.npz") as f:
        assert f["N"].dtype == np.int64 and f["y"].tolist() == [0.5, 1.5]
    with np.load(out / "r.npz") as f:
        assert f["names"].tolist() == ["mu"] and f["draws"].dtype == np.float32
        assert f["draws"].shape == (2, 3, 1) and f["draws"][1, :, 0].tolist() == [3.0, 4.0, 5.0]
