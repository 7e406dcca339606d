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
from pytensor.graph.replace import vectorize_graph  # noqa: E402

from ckam_bench.posteriordb import SUITE, load_reference  # noqa: E402
from ckam_bench.posteriordb import models  # noqa: E402

NAMES = sorted(SUITE)
FAST_DRAWS = 1000
ALPHA = 1e-3  # family-wise error rate of each identity check


def _logp_dlogp(model):
    """Batched (logp, dlogp) of the model on rows of unconstrained vectors."""
    (logp, dlogp), x = join_nonshared_inputs(model.initial_point(),
                                             [model.logp(jacobian=True), model.dlogp(jacobian=True)],
                                             model.value_vars)
    rows = pt.matrix("rows")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyTensor's "could not link to BLAS"
        point = pytensor.function([x], [logp, dlogp])
        batch = pytensor.function([rows], vectorize_graph([logp, dlogp], replace={x: rows}))
    return point, batch


@functools.lru_cache(maxsize=None)
def _case(name):
    model = getattr(models, SUITE[name].function)()
    _, u = models.unconstrained_reference(name, model)
    point, batch = _logp_dlogp(model)
    return model, u, point, batch


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
    model, u, _, batch = _case(name)
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
    _, u, point, _ = _case(name)
    h = 1e-6
    for row in u[[0, 500, 999]]:
        _, grad = point(row)
        fd = np.empty_like(grad)
        for j in range(len(row)):
            step = np.zeros_like(row)
            step[j] = h * max(1.0, abs(row[j]))
            fd[j] = (point(row + step)[0] - point(row - step)[0]) / (2 * step[j])
        np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-4, err_msg=name)


def _tilt_eight_schools_prior(model):
    """tau ~ half-Cauchy(0, 1) instead of (0, 5)."""
    tau = model["tau"]
    return pm.logp(pm.HalfCauchy.dist(1.0), tau) - pm.logp(pm.HalfCauchy.dist(5.0), tau)


def _tilt_garch_uniform(model):
    """beta1 ~ uniform(0, 1 - alpha1) (the normalised density) instead of Stan's flat beta1."""
    return -pt.log1p(-model["alpha1"])


def _tilt_gp_variance(model):
    """Nothing but the prior of sigma changed from normal(0, 1) to normal(0, 2)."""
    sigma = model["sigma"]
    return pm.logp(pm.HalfNormal.dist(2.0), sigma) - pm.logp(pm.HalfNormal.dist(1.0), sigma)


@pytest.mark.parametrize("name, tilt", [
    ("eight_schools-eight_schools_centered", _tilt_eight_schools_prior),
    ("garch-garch11", _tilt_garch_uniform),
    ("gp_pois_regr-gp_regr", _tilt_gp_variance),
])
def test_identities_detect_a_wrong_model(name, tilt):
    """A translation slip (another prior scale, PyMC's normalised uniform for Stan's flat
    bounded parameter) makes the identity checks fail on the same draws."""
    model = getattr(models, SUITE[name].function)()
    with model:
        pm.Potential("slip", tilt(model))
    _, u = models.unconstrained_reference(name, model)
    _, batch = _logp_dlogp(model)
    u = u[:FAST_DRAWS]
    checks = _identities(u, batch(u)[1])
    assert any(z > 2 * crit for z, crit in checks.values()), checks
