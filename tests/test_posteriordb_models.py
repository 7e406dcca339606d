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
from tests import test_posteriordb_stan_numpy as stan_numpy  # noqa: E402
from tests import clirun

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


def _prove(name: str, n_draws: int | None) -> dict[str, float]:
    """Every check that the model is posteriordb's Stan program: the reference draws map onto
    its free variables and its ``SUITE`` dim; the score and Stein identities over the first
    ``n_draws`` draws (None: all); gradients against central finite differences at three draws;
    the log density minus the independent numpy one constant over a few draws. Returns the
    largest |z| of each identity and the spread of the density difference."""
    model, u, batch = _case(name)
    values = models.reference_values(name)
    _, draws = load_reference(SUITE[name].reference)
    assert draws.shape[:2] == (10, 1000)
    assert sorted(values) == sorted(rv.name for rv in model.free_RVs)
    for rv in model.free_RVs:
        assert values[rv.name].shape == (10_000, *rv.shape.eval()), rv.name
    assert u.shape == (10_000, SUITE[name].dim)

    logp, grad = batch(u[:n_draws])
    assert np.isfinite(logp).all() and np.isfinite(grad).all()
    out = {}
    for what, (z, crit) in _identities(u[:n_draws], grad).items():
        assert z < crit, f"{name}: {what} identity fails, max |z| = {z:.2f} >= {crit:.2f}"
        out[what] = z

    for row in u[[0, 500, 999]]:
        d = len(row)
        steps = np.diag(1e-6 * np.maximum(1.0, np.abs(row)))
        logp, _ = batch(np.vstack([row + steps, row - steps]))
        fd = (logp[:d] - logp[d:]) / (2 * np.diag(steps))
        np.testing.assert_allclose(batch(row[None])[1][0], fd, rtol=1e-4, atol=1e-4, err_msg=name)

    out["independent density"] = stan_numpy.compare(name, values, u, lambda rows: batch(rows)[0])
    assert out["independent density"] < stan_numpy.TOLERANCE, (name, out)
    return out


FAST = ["eight_schools-eight_schools_centered", "arma-arma11", "kidiq_with_mom_work-kidscore_interaction_z"]
"""the models the default run proves (on the first 1000 draws); ``-m slow`` proves every one."""


@pytest.mark.parametrize("name", FAST)
def test_equal_to_the_stan_program(name):
    _prove(name, FAST_DRAWS)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_equal_to_the_stan_program_on_all_reference_draws(name):
    _prove(name, None)


REFERENCE_SETS = """
arK-arK arma-arma11 bball_drive_event_0-hmm_drive_0 bball_drive_event_1-hmm_drive_1 diamonds-diamonds
earnings-earn_height earnings-log10earn_height earnings-logearn_height earnings-logearn_height_male
earnings-logearn_interaction earnings-logearn_interaction_z earnings-logearn_logheight_male
eight_schools-eight_schools_noncentered garch-garch11 gp_pois_regr-gp_pois_regr gp_pois_regr-gp_regr
hmm_example-hmm_example hudson_lynx_hare-lotka_volterra kidiq-kidscore_interaction kidiq-kidscore_momhs
kidiq-kidscore_momhsiq kidiq-kidscore_momiq kidiq_with_mom_work-kidscore_interaction_c
kidiq_with_mom_work-kidscore_interaction_c2 kidiq_with_mom_work-kidscore_interaction_z
kidiq_with_mom_work-kidscore_mom_work kilpisjarvi_mod-kilpisjarvi low_dim_gauss_mix-low_dim_gauss_mix
mcycle_gp-accel_gp mesquite-logmesquite mesquite-logmesquite_logva mesquite-logmesquite_logvas
mesquite-logmesquite_logvash mesquite-logmesquite_logvolume mesquite-mesquite nes1972-nes nes1976-nes
nes1980-nes nes1984-nes nes1988-nes nes1992-nes nes1996-nes nes2000-nes
one_comp_mm_elim_abs-one_comp_mm_elim_abs sblrc-blr sblri-blr
""".split()
"""posteriordb's reference posteriors at the pinned commit (``posterior_database/reference_posteriors/
draws/draws/*.json.zip`` of 28f8d3d): the 46 sets of reference draws."""


def test_every_reference_set_is_shipped_or_said_why_not():
    """Nothing drops out silently: each of posteriordb's 46 reference sets is the reference of a
    suite posterior, or NOT_SHIPPED says why not (and docs/posteriordb.md repeats it)."""
    from pathlib import Path

    from ckam_bench.posteriordb import NOT_SHIPPED

    assert len(REFERENCE_SETS) == 46
    shipped = {p.reference for p in SUITE.values()}
    assert shipped.isdisjoint(NOT_SHIPPED)
    assert shipped | set(NOT_SHIPPED) == set(REFERENCE_SETS)
    assert all(why.strip() for why in NOT_SHIPPED.values())
    docs = (Path(__file__).resolve().parents[1] / "docs" / "posteriordb.md").read_text()
    assert all(name in docs for name in NOT_SHIPPED)


def test_suite_entries_match_their_files():
    """Every suite posterior: a character of CHARACTERS, its dim the number of reference columns
    (less one per simplex), its data and reference files shipped, its model function in models
    (no model is built)."""
    from ckam_bench.posteriordb import CHARACTERS, DATA_DIR, REFERENCE_DIR

    for name, posterior in SUITE.items():
        assert posterior.character in CHARACTERS, name
        assert (DATA_DIR / f"{posterior.data}.npz").is_file(), name
        with np.load(REFERENCE_DIR / f"{posterior.reference}.npz") as archive:
            assert archive["draws"].dtype == np.float32
            names = [str(n) for n in archive["names"]]
            assert len(names) == archive["draws"].shape[-1]
        # a K-simplex has K columns and K - 1 coordinates (the HMMs' theta1, theta2)
        simplexes = {"theta1", "theta2"} if posterior.character == "HMM" else set()
        assert len(names) - len(simplexes) == posterior.dim, name
        assert callable(getattr(models, posterior.function)), name
        assert posterior.note


def test_the_suite_experiment_sweeps_the_whole_suite():
    """conf/experiment/posteriordb.yaml sweeps target.model over every suite model, in the suite's
    order (SUITE's, then the high-dimensional ones with a reference)."""
    from pathlib import Path

    import yaml

    from ckam_bench.commands.config import posteriordb_models

    conf = yaml.safe_load((Path(__file__).resolve().parents[1] / "conf" / "experiment" / "posteriordb.yaml").read_text())
    assert conf["posteriordb"]["subset"] == "all"
    assert conf["hydra"]["sweeper"]["params"]["target.model"] == "${posteriordb_models:${posteriordb.subset}}"
    from ckam_bench.posteriordb.subset import suite

    assert posteriordb_models("all").split(",") == [p.model for p in suite()]


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


def test_stick_breaking_and_the_forward_tree_against_numpy():
    """Stan's simplex transform for K = 3 (the models use K = 2): backward inverts forward,
    backward(y) is Stan's stick-breaking written out, log_jac_det is log |det| of the Jacobian of
    y -> x[:K-1] by finite differences; the tree forward algorithm equals Stan's loop for an odd
    and an even number of steps."""
    from scipy.special import expit, logsumexp

    from ckam_bench.posteriordb.hmm import hmm_log_likelihood, stick_breaking

    y = pt.dvector("y")
    backward = pytensor.function([y], stick_breaking.backward(y), mode="FAST_COMPILE")
    forward = pytensor.function([y], stick_breaking.forward(y), mode="FAST_COMPILE")
    log_jac = pytensor.function([y], stick_breaking.log_jac_det(y), mode="FAST_COMPILE")
    y0 = np.array([0.3, -1.2])
    z = expit(y0 - np.log([2.0, 1.0]))
    stan = np.array([z[0], (1 - z[0]) * z[1], (1 - z[0]) * (1 - z[1])])
    np.testing.assert_allclose(backward(y0), stan, rtol=1e-12)
    np.testing.assert_allclose(forward(stan), y0, rtol=1e-12)
    jac = np.column_stack([(backward(y0 + h)[:2] - backward(y0 - h)[:2]) / 2e-6 for h in 1e-6 * np.eye(2)])
    assert log_jac(y0) == pytest.approx(np.log(abs(np.linalg.det(jac))), abs=1e-8)

    rng = np.random.default_rng(3)
    L, E = pt.dmatrix("L"), pt.dmatrix("E")
    for n in (7, 8):
        log_theta, log_emission = np.log(rng.dirichlet(np.ones(3), size=3)), rng.normal(size=(n, 3))
        gamma = log_emission[0]
        for t in range(1, n):
            gamma = logsumexp(gamma[:, None] + log_theta, axis=0) + log_emission[t]
        tree = pytensor.function([L, E], hmm_log_likelihood(L, E, n), mode="FAST_COMPILE")
        assert tree(log_theta, log_emission) == pytest.approx(logsumexp(gamma), rel=1e-12)


def test_ode_sensitivities_are_the_derivatives_of_the_solution():
    """The ODE solver's forward sensitivities against central finite differences of its own
    solution, and the solution against scipy's adaptive solvers at rtol 1e-13, at one reference
    draw of each ODE model (no PyMC model is built)."""
    from scipy.integrate import solve_ivp

    from ckam_bench.posteriordb import ode, reference_columns

    d = load_data("hudson_lynx_hare")
    ref = reference_columns("hudson_lynx_hare-lotka_volterra")
    grid, keep = ode.time_grid(d["ts"], 0.0, ode.LOTKA_VOLTERRA_STEP)
    p = np.concatenate([ref["theta"][123], ref["z_init"][123]])

    def lotka_volterra(params):
        return ode._lotka_volterra_solve(params, np.zeros(1), grid, keep, *ode.TABLEAU)

    a, b, c, e = p[:4]
    tight = solve_ivp(lambda t, y: [(a - b * y[1]) * y[0], (-c + e * y[0]) * y[1]], (0, 20), p[4:],
                      method="DOP853", rtol=1e-13, atol=1e-12, t_eval=d["ts"].astype(float)).y.T

    d = load_data("one_comp_mm_elim_abs")
    ref = reference_columns("one_comp_mm_elim_abs-one_comp_mm_elim_abs")
    pk_grid, pk_keep = ode.time_grid(d["times"], 0.0, **ode.ONE_COMP_GRID)
    q = np.array([ref["k_a"][int(np.argmin(ref["K_m"]))], ref["K_m"].min(), ref["V_m"][int(np.argmin(ref["K_m"]))]])

    def one_comp(params):
        return ode._one_comp_solve(params, np.array([30.0, 2.0]), pk_grid, pk_keep, *ode.TABLEAU)

    ka, km, vm = q
    pk_tight = solve_ivp(lambda t, y: [np.exp(-ka * t) * 15 * ka - vm / 2 * y[0] / (km + y[0])], (0, 10), [0.0],
                         method="Radau", rtol=1e-13, atol=1e-16, t_eval=d["times"]).y.T
    for solve, x, exact in ((lotka_volterra, p, tight), (one_comp, q, pk_tight)):
        z, S = solve(x)
        np.testing.assert_allclose(np.log(z), np.log(exact), rtol=0, atol=1e-9)
        for j in range(len(x)):
            h = 1e-6 * x[j]
            fd = (solve(x + h * np.eye(len(x))[j])[0] - solve(x - h * np.eye(len(x))[j])[0]) / (2 * h)
            np.testing.assert_allclose(S[:, :, j], fd, rtol=1e-6, atol=1e-6 * np.abs(z).max())


@pytest.mark.slow
def test_ode_models_run_natively_in_the_harness():
    """The harness's numba-compiled density calls the ODE solver compiled (no object-mode
    fallback) and agrees with PyTensor's C backend."""
    from ckam_bench.targets.pymc import PyMCModel

    for name in ("hudson_lynx_hare-lotka_volterra", "one_comp_mm_elim_abs-one_comp_mm_elim_abs"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            target = PyMCModel(SUITE[name].model)
            _, u, batch = _case(name)
            value, grad = target.log_density_and_grad(u[0])
        assert not [w for w in caught if "object mode" in str(w.message)], name
        c_value, c_grad = batch(u[:1])
        assert value == pytest.approx(c_value[0], abs=1e-10)
        np.testing.assert_allclose(grad, c_grad[0], rtol=1e-10, atol=1e-10)


def _tilt_eight_schools_prior(model):
    """tau ~ half-Cauchy(0, 1) instead of (0, 5)."""
    tau = model["tau"]
    return pm.logp(pm.HalfCauchy.dist(1.0), tau) - pm.logp(pm.HalfCauchy.dist(5.0), tau)


def _tilt_garch_uniform(model):
    """beta1 ~ uniform(0, 1 - alpha1) (the normalised density) instead of Stan's flat beta1."""
    return -pt.log1p(-model["alpha1"])


def _tilt_arma_prior(model):
    """phi ~ normal(0, 0.2) instead of normal(0, 2) (a wrong prior scale)."""
    phi = model["phi"]
    return pm.logp(pm.Normal.dist(0.0, 0.2), phi) - pm.logp(pm.Normal.dist(0.0, 2.0), phi)


def _tilt_missing_jacobian(model):
    """sigma flat on the log scale (a prior 1/sigma) instead of Stan's flat sigma on (0, inf): the
    log-Jacobian of sigma's transform left out."""
    return -pt.log(model["sigma"])


def _tilt_mom_work_levels(model):
    """the indicators of mom_work levels 1, 3, 4 instead of Stan's 2, 3, 4 (``work2[i] =
    mom_work[i] == 2`` misread): the wrong likelihood minus the right one."""
    d = load_data("kidiq_with_mom_work")
    beta, sigma = model["beta"], model["sigma"]

    def loglik(levels):
        X = np.column_stack([np.ones(len(d["kid_score"]))] + [d["mom_work"] == k for k in levels]).astype(float)
        return pm.logp(pm.Normal.dist(pt.dot(X, beta), sigma), d["kid_score"].astype(float)).sum()

    return loglik((1, 3, 4)) - loglik((2, 3, 4))


def _tilt_transposed_transitions(model):
    """the forward algorithm with theta[k, j] for Stan's theta[j, k] (the transition matrix
    read by columns): the wrong likelihood minus the right one."""
    from ckam_bench.posteriordb.hmm import hmm_log_likelihood

    d = load_data("hmm_example")
    log_theta = pt.log(pt.stack([model["theta1"], model["theta2"]]))
    emission = pm.logp(pm.Normal.dist(model["mu"], 1.0), d["y"][:, None])
    return (hmm_log_likelihood(log_theta.T, emission, int(d["N"]))
            - hmm_log_likelihood(log_theta, emission, int(d["N"])))


@pytest.mark.parametrize("name, tilt, n_draws", [
    ("eight_schools-eight_schools_centered", _tilt_eight_schools_prior, FAST_DRAWS),
    ("garch-garch11", _tilt_garch_uniform, FAST_DRAWS),
    pytest.param("arma-arma11", _tilt_arma_prior, None, marks=pytest.mark.slow),
    pytest.param("mesquite-logmesquite", _tilt_missing_jacobian, None, marks=pytest.mark.slow),
    pytest.param("kidiq_with_mom_work-kidscore_mom_work", _tilt_mom_work_levels, None, marks=pytest.mark.slow),
    pytest.param("hmm_example-hmm_example", _tilt_transposed_transitions, None, marks=pytest.mark.slow),
])
def test_identities_detect_a_wrong_model(name, tilt, n_draws):
    """A translation slip (another prior scale, PyMC's normalised uniform for Stan's flat
    bounded parameter, a log-Jacobian left out, a misread indicator, a transposed transition
    matrix) makes the identity checks
    fail by more than twice their critical value on the reference draws (the first 1000 in the
    default run, all 10 000 with the slow tests, as in the equality tests), and the independent
    density differ by more than a constant."""
    model = getattr(models, SUITE[name].function)()
    with model:
        pm.Potential("slip", tilt(model))
    u = models.unconstrained_reference(name, model)[1]
    batch = _logp_dlogp(model)
    checks = _identities(u[:n_draws], batch(u[:n_draws])[1])
    assert any(z > 2 * crit for z, crit in checks.values()), checks
    spread = stan_numpy.compare(name, models.reference_values(name), u, lambda rows: batch(rows)[0])
    assert spread > 1e3 * stan_numpy.TOLERANCE


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
    posteriordb's reference, and the suite report has a table per posterior plus the suite's.
    No warm-up and trees of at most 63 gradients: one CPU-second collects draws on every
    posterior on any machine (NUTS's 500 warm-up iterations did not fit in it on 8 of them)."""
    import json
    import os
    import sys

    from ckam_bench.report.aggregate import load_results
    from ckam_bench.report.posteriordb_suite import tables

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = clirun.run([sys.executable, "-m", "ckam_bench.cli", "-m", "experiment=posteriordb",
                           "sampler=nuts", "sampler.burn_in=0", "sampler.max_depth=6", "seed=0",
                               "budget.seconds=1", "progress=false",
                           f"hydra.sweep.dir={tmp_path}"],
                      cwd=tmp_path, env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    statuses = [json.loads(p.read_text()) for p in tmp_path.glob("*/status.json")]
    from ckam_bench.posteriordb.subset import suite

    assert len(statuses) == len(suite())
    assert all(s["metrics_info"]["moments"]["truth"] == "reference" for s in statuses)
    out = tables(load_results(tmp_path))
    assert len(out) == len(suite()) + 1 and all(len(t.rows) == 1 for t in out)


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


@pytest.mark.parametrize("name", ["eight_schools-eight_schools_centered", "low_dim_gauss_mix-low_dim_gauss_mix",
                                  pytest.param("hmm_example-hmm_example", marks=pytest.mark.slow),
                                  pytest.param("garch-garch11", marks=pytest.mark.slow),
                                  pytest.param("gp_pois_regr-gp_pois_regr", marks=pytest.mark.slow)])
def test_the_batched_transform_is_the_draw_by_draw_one_bit_for_bit(name):
    """The reference draws go to the unconstrained scale through one vectorised pytensor graph;
    the same map applied draw by draw gives the same bits (log, logit-interval, ordered,
    simplex transforms)."""
    model = getattr(models, SUITE[name].function)()
    _, batched = models.unconstrained_reference(name, model)
    values = models.reference_values(name)
    forward = models._forward_transform(model)
    rows = [np.concatenate([np.ravel(u) for u in forward(*[values[rv.name][i] for rv in model.free_RVs])])
            for i in range(0, len(batched), 97)]
    np.testing.assert_array_equal(batched[::97], np.array(rows))
