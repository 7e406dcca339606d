"""posteriordb posteriors whose posteriordb reference was added after v1.0, and mcycle_gp-accel_gp,
whose v1.0 reference draws the mirror lacks (ckam_bench/posteriordb/later.py, models in rates.py,
glms.py, trials.py and mcycle.py): each model equals its Stan program, its shipped reference is
certified and found by the target, and it agrees with posteriordb's published summaries and with
the exact posterior (the rate models).

Equality with the Stan program, as in tests/test_posteriordb_highdim.py: over the draws of the
shipped reference (the harness's own; posteriordb's reference draws came after v1.0 as zip files,
which the search tool's ``read_file`` cannot read, so they are not in reach) the score has mean
zero and Stein's identity holds (z-tests with Bonferroni at family-wise 1e-3); gradients agree with
central finite differences; an independent numpy log density written from the Stan program (Stan's
target plus the log-Jacobian of its logit transform) differs from the model's by a constant to
1e-8. accel_gp's is also checked at random points around posteriordb's published means, without
any draws (:func:`test_accel_gp_equals_the_stan_program_at_random_points`).

posteriordb's summaries (:data:`ckam_bench.posteriordb.later.POSTERIORDB_SUMMARIES`): per
coordinate z = (our mean - theirs) / sqrt(our MCSE² + their MCSE²), for the mean and for the mean
of x², their MCSE as published; ours (certificate ``"constrained"``) over every draw of the 10
certified chains, MCSE from arviz-stats' ESS. The docs table (docs/posteriordb.md, between
:data:`BEGIN` and :data:`END`) is :func:`summary_table` of the shipped files.

The references were made by this module run as a script (a maintainer's command)::

    nice -n 5 python -m tests.test_posteriordb_later build <posteriordb name> [draws]

nutpie (diagonal mass matrix, its default adaptation, target accept 0.8), 10 chains of ``draws``
after 1000 tuning draws, one at a time, starts as ``ckam-bench-reference`` draws them, certified
by ``ckam-bench-reference``'s :func:`~ckam_bench.checks.reference.certify_runs` and stored by its
:func:`~ckam_bench.checks.reference.store_reference` (the route 1 of tests/test_posteriordb_highdim.py).
:data:`SETTINGS` names the builds made otherwise (accel_gp: target accept 0.99, 3000 tuning draws,
and route 2, the harness's nuts_fisher, in the certificate).
"""

from __future__ import annotations

import functools
import json
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit
from scipy.stats import norm

from ckam_bench.posteriordb.later import EXACT_BETA, LATER, POSTERIORDB_SUMMARIES, spec

pytest.importorskip("pymc")

from tests.test_posteriordb_highdim import _case, _z_max, ship  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NAMES = list(LATER)
DEFAULT_TIER = ("Rate_2_data-Rate_2_model", "wells_data-wells_dist", "dogs-dogs_hierarchical",
                "M0_data-M0_model", "mcycle_gp-accel_gp")
"""The proofs' default-tier cases (a rate, a GLM, a Potential, a mixture, a GP); the slow tier runs all."""
ACCEL_GP = "mcycle_gp-accel_gp"
PROOF_NAMES = [n if n in DEFAULT_TIER else pytest.param(n, marks=pytest.mark.slow) for n in NAMES]
ALPHA = 1e-3
TOLERANCE = 1e-8
BEGIN = "<!-- later references: begin (tests/test_posteriordb_later.py summary_table) -->"
END = "<!-- later references: end -->"


def _data(name):
    from ckam_bench.posteriordb import load_data

    return load_data(name)


def _binom(k, n, p):
    return stats.binom.logpmf(int(k), int(n), p)


def _logit_jac(x):
    """Stan's log-Jacobian of x = inv_logit(y) for ``<lower=0, upper=1>``."""
    return np.log(x) + np.log1p(-x)


def stan_rate_1(v):
    d = _data("Rate_1_data")
    return stats.beta.logpdf(v["theta"], 1, 1) + _binom(d["k"], d["n"], v["theta"]) + _logit_jac(v["theta"])


def stan_common_rate(data_name, v):
    d = _data(data_name)
    t = v["theta"]
    return stats.beta.logpdf(t, 1, 1) + _binom(d["k1"], d["n1"], t) + _binom(d["k2"], d["n2"], t) + _logit_jac(t)


def stan_rate_2(v):
    d = _data("Rate_2_data")
    t1, t2 = v["theta1"], v["theta2"]
    return (stats.beta.logpdf(t1, 1, 1) + stats.beta.logpdf(t2, 1, 1) + _binom(d["k1"], d["n1"], t1)
            + _binom(d["k2"], d["n2"], t2) + _logit_jac(t1) + _logit_jac(t2))


def stan_rate_4(v):
    d = _data("Rate_4_data")
    t, tp = v["theta"], v["thetaprior"]
    return (stats.beta.logpdf(t, 1, 1) + stats.beta.logpdf(tp, 1, 1) + _binom(d["k"], d["n"], t)
            + _logit_jac(t) + _logit_jac(tp))


def _bernoulli_logit(y, eta):
    return float(np.sum(y * eta - np.logaddexp(0, eta)))


def _wells():
    d = _data("wells_data")
    return d["switched"].astype(float), d["dist"].astype(float), d["arsenic"].astype(float)


def stan_wells_dist(v):
    y, dist, _ = _wells()
    return _bernoulli_logit(y, v["beta"][0] + v["beta"][1] * dist)  # flat priors: target is the likelihood


def stan_wells_dist100(v):
    y, dist, _ = _wells()
    x = (dist / 100.0).reshape(-1, 1)
    return _bernoulli_logit(y, v["alpha"] + x @ v["beta"])


def stan_wells_dist100ars(v):
    y, dist, arsenic = _wells()
    x = np.column_stack([dist / 100.0, arsenic])
    return _bernoulli_logit(y, v["alpha"] + x @ v["beta"])


def stan_wells_interaction_c(v):
    y, dist, arsenic = _wells()
    c_dist100 = (dist - np.mean(dist)) / 100.0
    c_arsenic = arsenic - np.mean(arsenic)
    x = np.column_stack([c_dist100, c_arsenic, c_dist100 * c_arsenic])
    return _bernoulli_logit(y, v["alpha"] + x @ v["beta"])


def stan_nes_logit(v):
    d = _data("nes_logit_data")
    x = d["income"].astype(float).reshape(-1, 1)
    return _bernoulli_logit(d["vote"].astype(float), v["alpha"] + x @ v["beta"])


def stan_radon_pooled(data_name, v):
    d = _data(data_name)
    target = norm.logpdf(v["sigma_y"], 0, 1) + norm.logpdf(v["alpha"], 0, 10) + norm.logpdf(v["beta"], 0, 10)
    mu = v["alpha"] + v["beta"] * d["floor_measure"].astype(float)
    for n in range(int(d["N"])):
        target += norm.logpdf(d["log_radon"][n], mu[n], v["sigma_y"])
    return target + np.log(v["sigma_y"])  # <lower=0>: x = exp(y)


def stan_sesame_one_pred_a(v):
    d = _data("sesame_data")
    mu = v["beta"][0] + v["beta"][1] * d["encouraged"].astype(float)
    return norm.logpdf(d["watched"].astype(float), mu, v["sigma"]).sum() + np.log(v["sigma"])


def _dogs_counts():
    d = _data("dogs")
    y = d["y"].astype(float)
    n_dogs, n_trials = y.shape
    n_avoid, n_shock = np.zeros_like(y), np.zeros_like(y)
    for j in range(n_dogs):  # Stan's loops
        for t in range(1, n_trials):
            n_avoid[j, t] = n_avoid[j, t - 1] + 1 - y[j, t - 1]
            n_shock[j, t] = n_shock[j, t - 1] + y[j, t - 1]
    return y, n_avoid, n_shock


def stan_dogs(v):
    y, n_avoid, n_shock = _dogs_counts()
    b = v["beta"]
    return norm.logpdf(b, 0, 100).sum() + _bernoulli_logit(y, b[0] + b[1] * n_avoid + b[2] * n_shock)


def stan_dogs_hierarchical(v):
    y, prev_avoid, prev_shock = _dogs_counts()
    p = v["a"] ** prev_shock * v["b"] ** prev_avoid
    return float(np.sum(stats.bernoulli.logpmf(y, p))) + _logit_jac(v["a"]) + _logit_jac(v["b"])


def stan_m0(v):
    d = _data("M0_data")
    n_trials = int(d["T"])
    target = 0.0
    for row in d["y"]:
        s = int(row.sum())
        if s > 0:
            target += np.log(v["omega"]) + stats.binom.logpmf(s, n_trials, v["p"])
        else:
            target += np.logaddexp(np.log(v["omega"]) + stats.binom.logpmf(0, n_trials, v["p"]), np.log1p(-v["omega"]))
    return target + _logit_jac(v["omega"]) + _logit_jac(v["p"])


def _spd_cov_exp_quad(slambda, sdgp, lscale):
    """Stan's ``spd_cov_exp_quad(x, sdgp, lscale)`` for one length scale (``Dls == 1``), its loop."""
    n_basis, dim = slambda.shape
    assert len(lscale) == 1
    constant = sdgp**2 * (np.sqrt(2 * np.pi) * lscale[0]) ** dim
    neg_half_lscale2 = -0.5 * lscale[0] ** 2
    out = np.empty(n_basis)
    for m in range(n_basis):
        out[m] = constant * np.exp(neg_half_lscale2 * np.dot(slambda[m], slambda[m]))
    return out


def _gpa(X, sdgp, lscale, zgp, slambda):
    """Stan's ``gpa``: ``X * (sqrt(spd_cov_exp_quad(slambda, sdgp, lscale)) .* zgp)``."""
    return X @ (np.sqrt(_spd_cov_exp_quad(slambda, sdgp, lscale)) * zgp)


def stan_accel_gp(v):
    """accel_gp.stan's model block, its statements in order ("priors including all constants"), plus
    the log-Jacobians of the four ``<lower=0>`` parameters (x = exp(y))."""
    d = _data("mcycle_gp")
    n = int(d["N"])
    mu = v["Intercept"] + np.zeros(n) + _gpa(d["Xgp_1"], v["sdgp_1"], np.array([v["lscale_1"]]), v["zgp_1"],
                                             d["slambda_1"])
    sigma = v["Intercept_sigma"] + np.zeros(n) + _gpa(d["Xgp_sigma_1"], v["sdgp_sigma_1"],
                                                      np.array([v["lscale_sigma_1"]]), v["zgp_sigma_1"],
                                                      d["slambda_sigma_1"])
    for i in range(n):
        sigma[i] = np.exp(sigma[i])
    t = stats.t
    target = t.logpdf(v["Intercept"], 3, -13, 36)
    target += t.logpdf(v["sdgp_1"], 3, 0, 36) - 1 * t.logsf(0, 3, 0, 36)
    target += norm.logpdf(v["zgp_1"], 0, 1).sum()
    target += stats.invgamma.logpdf(v["lscale_1"], 1.124909, scale=0.0177)
    target += t.logpdf(v["Intercept_sigma"], 3, 0, 10)
    target += t.logpdf(v["sdgp_sigma_1"], 3, 0, 36) - 1 * t.logsf(0, 3, 0, 36)
    target += norm.logpdf(v["zgp_sigma_1"], 0, 1).sum()
    target += stats.invgamma.logpdf(v["lscale_sigma_1"], 1.124909, scale=0.0177)
    if not int(d["prior_only"]):
        target += norm.logpdf(d["Y"], mu, sigma).sum()
    return target + sum(np.log(v[k]) for k in ("sdgp_1", "lscale_1", "sdgp_sigma_1", "lscale_sigma_1"))


STAN_NUMPY = {
    "Rate_1_data-Rate_1_model": stan_rate_1,
    "Rate_3_data-Rate_3_model": functools.partial(stan_common_rate, "Rate_3_data"),
    "Rate_5_data-Rate_5_model": functools.partial(stan_common_rate, "Rate_5_data"),
    "Rate_2_data-Rate_2_model": stan_rate_2,
    "Rate_4_data-Rate_4_model": stan_rate_4,
    "wells_data-wells_dist": stan_wells_dist,
    "wells_data-wells_dist100_model": stan_wells_dist100,
    "wells_data-wells_dist100ars_model": stan_wells_dist100ars,
    "wells_data-wells_interaction_c_model": stan_wells_interaction_c,
    "nes_logit_data-nes_logit_model": stan_nes_logit,
    "radon_mn-radon_pooled": functools.partial(stan_radon_pooled, "radon_mn"),
    "radon_all-radon_pooled": functools.partial(stan_radon_pooled, "radon_all"),
    "sesame_data-sesame_one_pred_a": stan_sesame_one_pred_a,
    "dogs-dogs": stan_dogs,
    "dogs-dogs_hierarchical": stan_dogs_hierarchical,
    "M0_data-M0_model": stan_m0,
    "mcycle_gp-accel_gp": stan_accel_gp,
}


_TRANSFORMS = {"_logodds__": expit, "_log__": np.exp}
"""Stan's inverse transforms in numpy, by PyMC's value-variable suffix: inv_logit for
``<lower=0, upper=1>``, exp for ``<lower=0>``; a variable without a suffix is unconstrained."""


def _layout(model) -> list[tuple[str, object, tuple[int, ...]]]:
    """(Stan name, inverse transform, shape) of each value variable, in the model's order; only
    the value variables' names and sizes are read from the model."""
    out = []
    for var in model.value_vars:
        shape = tuple(model.initial_point()[var.name].shape)
        suffix = next((k for k in _TRANSFORMS if var.name.endswith(k)), "")
        out.append((var.name.removesuffix(suffix), _TRANSFORMS.get(suffix, lambda x: x), shape))
    return out


def constrained_names(model) -> list[str]:
    """Stan's names of the parameters' coordinates (``beta[1]`` for a vector's first), in the
    order of the model's unconstrained coordinates."""
    return [name if not shape else f"{name}[{i + 1}]" for name, _, shape in _layout(model)
            for i in range(int(np.prod(shape)) if shape else 1)]


def constrained(model, u: np.ndarray) -> dict:
    """Stan's parameters of an unconstrained row ``u`` (by Stan's transforms in numpy)."""
    out, at = {}, 0
    for name, inverse, shape in _layout(model):
        size = int(np.prod(shape)) if shape else 1
        x = u[at:at + size].reshape(shape) if shape else u[at]
        out[name], at = inverse(np.asarray(x, float)), at + size
    assert at == len(u)
    return out


def constrained_columns(model, u: np.ndarray) -> np.ndarray:
    """Stan's parameters of unconstrained draws ``u`` (..., d), column by column as
    :func:`constrained_names`."""
    columns, at = [], 0
    for _, inverse, shape in _layout(model):
        size = int(np.prod(shape)) if shape else 1
        columns.append(inverse(np.asarray(u[..., at:at + size], float)))
        at += size
    return np.concatenate(columns, axis=-1)




@pytest.mark.parametrize("name", PROOF_NAMES)
def test_equal_to_the_stan_program(name):
    """Mean score and Stein's identity over every stored draw of the shipped reference, finite
    differences at three draws, the independent numpy density at five."""
    target, reference, model, batch = _case(name)
    assert target.dim == LATER[name].dim == len(reference.mean) == len(constrained_names(model))
    u, chain = reference.samples, reference.chain
    logp, grad = batch(u)
    assert np.isfinite(logp).all() and np.isfinite(grad).all()
    assert np.ptp(np.array([target._log_density(row) for row in u[:3]]) - logp[:3]) < 1e-8
    d = u.shape[1]
    z, crit = _z_max(grad, np.zeros(d), chain)
    assert z < crit, (name, "mean score", z, crit)
    z, _ = _z_max((u[:, :, None] * grad[:, None, :]).reshape(len(u), -1), -np.eye(d).ravel(), chain)
    assert z < norm.isf(ALPHA / (2 * d * d)), (name, "Stein", z)
    for row in u[[0, len(u) // 2, -1]]:
        steps = np.diag(1e-6 * np.maximum(1.0, np.abs(row)))
        fd_logp, _ = batch(np.vstack([row + steps, row - steps]))
        fd = (fd_logp[:d] - fd_logp[d:]) / (2 * np.diag(steps))
        np.testing.assert_allclose(batch(row[None])[1][0], fd, rtol=1e-4, atol=1e-4, err_msg=name)
    picks = np.linspace(0, len(u) - 1, 5).round().astype(int)
    diff = logp[picks] - np.array([STAN_NUMPY[name](constrained(model, u[i])) for i in picks])
    assert np.ptp(diff) < TOLERANCE, (name, diff)


@pytest.mark.parametrize("name", PROOF_NAMES)
def test_a_wrong_model_fails(name):
    """The numpy density with a wrong prior on the first coordinate (an extra normal(0, 0.1)
    factor on it, unconstrained) is no constant away from the model's: the density check has
    teeth."""
    _, reference, model, batch = _case(name)
    u = reference.samples[:5]
    wrong = [STAN_NUMPY[name](constrained(model, row)) + norm.logpdf(row[0], 0, 0.1) for row in u]
    assert np.ptp(batch(u)[0] - np.array(wrong)) > 1e-3


def _around_posteriordb(name, model, n, seed):
    """``n`` unconstrained points around posteriordb's published posterior: each coordinate its
    published mean plus half its published sd times N(0, 1), on the unconstrained scale (for a
    ``<lower=0>`` parameter log of the mean plus half its coefficient of variation)."""
    s = POSTERIORDB_SUMMARIES[name]
    mean, sd = np.array(s["mean"]), np.sqrt(np.array(s["mean_sq"]) - np.array(s["mean"]) ** 2)
    positive = np.array([var.name.endswith("_log__") for var in model.value_vars
                         for _ in range(max(1, int(np.size(model.initial_point()[var.name]))))])
    assert s["names"] == constrained_names(model) and len(positive) == len(mean)
    centre, scale = np.where(positive, np.log(np.abs(mean)), mean), np.where(positive, sd / np.abs(mean), sd)
    return centre + 0.5 * scale * np.random.default_rng(seed).standard_normal((n, len(mean)))


@pytest.mark.slow  # ~6 s of a core; test_equal_to_the_stan_program checks accel_gp at the reference draws
def test_accel_gp_equals_the_stan_program_at_random_points():
    """Without any draws: at points drawn around posteriordb's published posterior (each
    coordinate its published mean plus half its published sd, N(0, 1), on the unconstrained
    scale: log of the mean for the four positive ones), the model's log density (PyMC's graph,
    the log-Jacobians included) minus the numpy transcription of accel_gp.stan is constant to
    1e-8, and the gradient matches central finite differences; a GP scale in the wrong place
    (the sd GP's sdgp read as the mean GP's) is not constant."""
    from tests.test_posteriordb_models import _logp_dlogp

    model = LATER[ACCEL_GP].build()
    u = _around_posteriordb(ACCEL_GP, model, 5, seed=11)
    logp, grad = _logp_dlogp(model)(u)
    assert np.isfinite(logp).all() and np.all(logp > -1e6), logp  # not where rounding swamps 1e-8
    ours = np.array([STAN_NUMPY[ACCEL_GP](constrained(model, row)) for row in u])
    assert np.ptp(logp - ours) < TOLERANCE, logp - ours
    wrong = []
    for row in u:
        v = constrained(model, row)
        wrong.append(STAN_NUMPY[ACCEL_GP]({**v, "sdgp_sigma_1": v["sdgp_1"]}))
    assert np.ptp(logp - np.array(wrong)) > 1e-3
    row, d = u[0], u.shape[1]
    steps = np.diag(1e-6 * np.maximum(1.0, np.abs(row)))
    fd_logp, _ = _logp_dlogp(model)(np.vstack([row + steps, row - steps]))
    np.testing.assert_allclose(grad[0], (fd_logp[:d] - fd_logp[d:]) / (2 * np.diag(steps)), rtol=1e-4, atol=1e-4)


def test_a_twin_is_the_same_posterior():
    """The twin's log density at u is the model's at T(u) plus log |det dT/du|, to 1e-8, at points
    around posteriordb's published posterior; the twin's blocks of coordinates are the model's; the map is exactly
    a shear of the intercepts."""
    from tests.test_posteriordb_models import _logp_dlogp

    for name in TWINS:
        twin, to_target, log_jacobian = _twin_maps(name)
        model, twin_model = LATER[name].build(), twin()
        sizes = [[np.size(m.initial_point()[v.name]) for v in m.value_vars] for m in (model, twin_model)]
        assert sizes[0] == sizes[1] and sum(sizes[0]) == LATER[name].dim
        u = _around_posteriordb(name, model, 4, seed=7)
        logp, _ = _logp_dlogp(model)(to_target(u))
        np.testing.assert_allclose(_logp_dlogp(twin_model)(u)[0], logp + log_jacobian(u), rtol=0, atol=1e-8)
        moved = np.flatnonzero(np.any(to_target(u) != u, axis=0))
        assert moved.tolist() == [0, 43]  # Intercept and Intercept_sigma only


def test_every_posterior_has_a_model_data_summaries_and_a_numpy_density():
    """Each is a posterior with a reference posteriordb added after v1.0 (database.json's
    ``later``), or a v1.0 reference whose draws the mirror lacks (NOT_SHIPPED: accel_gp)."""
    from ckam_bench.posteriordb import NOT_SHIPPED, POSTERIORDB_COMMIT, database, registered

    assert sorted(LATER) == sorted(STAN_NUMPY) == sorted(POSTERIORDB_SUMMARIES)
    assert set(EXACT_BETA) <= set(LATER) and all(n.startswith("Rate_") for n in EXACT_BETA)
    later = {e.name: e for e in database.entries() if e.later}
    missing = {e.name: e for e in database.entries() if e.reference == e.name and e.draws == "missing"}
    assert sorted(set(LATER) - set(later)) == sorted(missing) == sorted(NOT_SHIPPED) == [ACCEL_GP]
    assert set(POSTERIORDB_SUMMARIES[ACCEL_GP]["files"].values()) == {POSTERIORDB_COMMIT}
    for name, p in LATER.items():
        assert registered()[name] is p and (name in later or name in missing)
        assert p.dim == len(POSTERIORDB_SUMMARIES[name]["names"]) == len(POSTERIORDB_SUMMARIES[name]["mean"])
        assert all(re.fullmatch("[0-9a-f]{40}", c) for c in POSTERIORDB_SUMMARIES[name]["files"].values())
        assert database.status_of({**later, **missing}[name]).status == database.SUITE_HARNESS


@pytest.mark.parametrize("name", NAMES)
def test_reference_is_shipped_certified_and_found(name):
    from ckam_bench.reference_lookup import SHIPPED, find_reference, is_certified
    from ckam_bench.targets.pymc import PyMCModel

    target, ref, _, _ = _case(name)
    path = find_reference(PyMCModel(spec(name)))
    assert path is not None and path.parent == SHIPPED
    c = ref.certificate
    assert is_certified(c) and c["chains"] >= 10
    diag = c["diagnostics"]
    assert diag["rhat_max"] < 1.01 and diag["ess_bulk_min"] >= 1e4 and diag["ess_tail_min"] >= 1e4
    assert c["cost"]["divergences_after_tuning"] == 0 and c["cost"]["cpu_seconds"] > 0
    assert ref.samples.shape == (len(np.unique(ref.chain)) * 100, LATER[name].dim)
    assert json.loads(path.with_suffix(".json").read_text())["reference_id"] == target.reference_id()
    how = SETTINGS.get(name, {})
    assert c["settings"]["sampler"]["target_accept"] == how.get("target_accept", 0.8)
    assert ("second_route" in c) == ("route2" in how)
    if "second_route" in c:  # route 2 (nuts_fisher) agrees per coordinate, Bonferroni over 2d
        s, crit = c["second_route"], norm.isf(ALPHA / (2 * 2 * LATER[name].dim))
        assert s["sampler"] == "nuts_fisher" and s["seed"] != c["seeds"]["seed"], name
        assert s["max_abs_z_mean"] < crit and s["max_abs_z_sd"] < crit, (name, s["max_abs_z_mean"], s["max_abs_z_sd"])
        z = (ref.mean - np.array(s["mean"])) / np.sqrt(ref.mcse_mean**2 + np.array(s["mcse_mean"]) ** 2)
        assert np.max(np.abs(z)) == pytest.approx(s["max_abs_z_mean"], rel=1e-6)
    # the constrained summary agrees with the stored draws (1000 of them: a loose z bound)
    s, model = c["constrained"], _case(name)[2]
    assert s["names"] == constrained_names(model)
    x = constrained_columns(model, ref.samples)
    z, crit = _z_max(x, np.array(s["mean"]), ref.chain)
    assert z < crit, (name, z)


def compare(name) -> dict:
    """z-scores of our reference's constrained mean and mean of x² against posteriordb's and
    against the exact Beta posterior (the rate models only), per coordinate, from the shipped
    files."""
    _, ref, _, _ = _case(name)
    ours, theirs = ref.certificate["constrained"], POSTERIORDB_SUMMARIES[name]
    assert ours["names"] == theirs["names"]
    out = {}
    for key, mcse in (("mean", "mcse_mean"), ("mean_sq", "mcse_mean_sq")):
        a, b = np.array(ours[key]), np.array(theirs[key])
        out[key] = (a - b) / np.hypot(ours[mcse], theirs[mcse])
        if name not in EXACT_BETA:
            continue
        ab = np.array([EXACT_BETA[name][n] for n in ours["names"]], float)
        exact = ab[:, 0] / ab.sum(1)
        if key == "mean_sq":
            exact = exact * (ab[:, 0] + 1) / (ab.sum(1) + 1)
        out["exact_" + key] = (a - exact) / np.array(ours[mcse])
        out["pdb_exact_" + key] = (b - exact) / np.array(theirs[mcse])
    return out


def summary_table() -> str:
    lines = [BEGIN, "| posterior | d | our chains × draws | CPU s | max \\|z\\| mean / mean² vs posteriordb "
             "| ours vs exact | posteriordb's vs exact | file |", "|---|---|---|---|---|---|---|---|"]
    for name in NAMES:
        _, ref, _, _ = _case(name)
        c, z = ref.certificate, compare(name)
        m = lambda k: float(np.max(np.abs(z[k])))  # noqa: E731
        pair = lambda k: f"{m(k + 'mean'):.2f} / {m(k + 'mean_sq'):.2f}" if k + "mean" in z else "—"  # noqa: E731
        lines.append(f"| {name} | {LATER[name].dim} | {c['chains']} × {c['iterations']} | "
                     f"{c['cost']['cpu_seconds']:.1f} | {pair('')} | {pair('exact_')} | {pair('pdb_exact_')} | "
                     f"`{ref.path.name}` |")
    return "\n".join([*lines, END])


def test_the_docs_table_is_recomputed_from_the_shipped_files():
    """Every z below the Bonferroni bound at family-wise 1e-3 over the 2d comparisons of each
    posterior, and docs/posteriordb.md holds exactly :func:`summary_table`."""
    for name in NAMES:
        crit = norm.isf(ALPHA / (2 * 2 * LATER[name].dim))
        assert all(np.max(np.abs(z)) < crit for z in compare(name).values()), (name, compare(name))
    text = (ROOT / "docs" / "posteriordb.md").read_text()
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:stop] == summary_table(), "docs/posteriordb.md: python -m tests.test_posteriordb_later table"


# ---------------------------------------------------------------------------- the build (a script)
def machine() -> str:
    """The machine as the build found it: cores, load average, niceness."""
    import os

    return (f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start, nice "
            f"{os.nice(0)}; CPU time of this process only")


_TW = "ckam_bench.posteriordb.mcycle_twin:"
TWINS: dict[str, tuple[str, str, str]] = {
    ACCEL_GP: (f"{_TW}accel_gp_twin", f"{_TW}accel_gp_to_target", f"{_TW}accel_gp_log_jacobian"),
}
"""posteriors whose route 1 samples a twin (the same posterior in other coordinates) and maps
every draw back exactly (tests/test_posteriordb_hard.py's TWINS): (twin model, map to the target's
coordinates, its log-Jacobian), each ``module:function``. Route 2 samples the target itself."""
SETTINGS: dict[str, dict] = {
    "mcycle_gp-accel_gp": {"target_accept": 0.995, "tune": 3000,
                           "route2": {"draws": 5000, "target_accept": 0.9, "burn_in": 2000}},
}
"""the builds that are not nutpie's defaults (target accept 0.8, 1000 tuning draws, no route 2).
accel_gp (route 1 through its twin, :data:`TWINS`): sampling the model itself, at 0.8 (0.95)
nutpie left 161 (12) divergences after tuning in two chains of 2000 draws; at 0.99 with 1000
tuning draws a chain started at a log density of -1e41 (the GP of the log sd far from the data)
had not reached the posterior when tuning ended, with 3000 every chain did, but 10 chains of 8000
draws at 0.99 and of 10 000 at 0.995 left 1 divergence after tuning each (not certified; at
0.995 in chain 7, Intercept_sigma at -5.5 on the ridge the twin removes); at 0.998 a chain stayed
at its start, and at 0.999 nutpie's step size collapsed to ~1e-9 even in chains started in the
posterior. The twin at 0.995 left none in 10 chains of 5000 draws. Route 2, the harness's
nuts_fisher on the model itself (tests/test_posteriordb_highdim.py's route 2): at target accept
0.95 and 0.99 a chain stayed at its start; at 0.9, with 2000 warm-up iterations, none did."""


def _twin_maps(name):
    """(the twin model, its map to the target's coordinates, its log-Jacobian) of :data:`TWINS`,
    or (None, the identity, zeros)."""
    from tests.test_posteriordb_highdim import _resolve

    if name not in TWINS:
        return None, (lambda u: np.asarray(u, float)), (lambda u: np.zeros(len(u)))
    return tuple(_resolve(path) for path in TWINS[name])


def route1(name, draws, chains=10, seed=0, target_accept=0.8, tune=1000):
    """nutpie (diagonal mass matrix, target accept 0.8 unless given, ``tune`` tuning draws),
    ``chains`` chains one after another, sampling the twin of :data:`TWINS` if there is one and
    mapping its draws to the target's coordinates; returns (target, runs, cost)
    (tests/test_posteriordb_highdim.py's route 1, for LATER)."""
    import nutpie

    from ckam_bench.checks.reference import ChainRun, overdispersed_start
    from ckam_bench.targets.pymc import PyMCModel

    target = PyMCModel(spec(name))
    twin, to_target, log_jacobian = _twin_maps(name)
    t0 = time.process_time()
    compiled = nutpie.compile_pymc_model(twin() if twin else target.model, backend="numba")
    compile_s = time.process_time() - t0
    runs, grads, div_tune, div_draws, wall = [], 0, 0, 0, 0.0
    for c in range(chains):
        rng = np.random.default_rng([seed, c])
        x0 = overdispersed_start(target, 1.0, rng)  # a twin starts at the same numbers, its own coordinates
        c0, w0 = time.process_time(), time.time()
        tr = nutpie.sample(compiled, draws=draws, tune=tune, chains=1, cores=1, seed=int(rng.integers(2**63)),
                           progress_bar=False, init_mean=x0, target_accept=target_accept, store_unconstrained=True)
        sec, wall = time.process_time() - c0, wall + time.time() - w0
        st, wst = tr.sample_stats, tr.warmup_sample_stats
        own = np.asarray(st["unconstrained_draw"].values[0], float).reshape(draws, target.dim)
        held = to_target(own)  # the target's coordinates (the identity without a twin)
        lp = np.asarray(st["logp"].values[0][:3], float)
        assert np.ptp(lp - np.array([target._log_density(h) for h in held[:3]]) - log_jacobian(own[:3])) < 1e-6
        grads += int(st["n_steps"].values.sum() + wst["n_steps"].values.sum())
        div_draws += int(st["diverging"].values.sum())
        div_tune += int(wst["diverging"].values.sum())
        sq = held * held
        runs.append(ChainRun(held=held, sums=np.array([held.sum(0), sq.sum(0), (sq * sq).sum(0)]),
                             count=draws, acceptance=float(st["mean_tree_accept"].values.mean()),
                             n_nonfinite=0, start=to_target(np.asarray(x0)[None])[0], seconds=sec))
        print(f"  chain {c}: {sec:.0f} s, {int(st['diverging'].values.sum())} divergences", file=sys.stderr, flush=True)
    cost = {"cpu_seconds": sum(r.seconds for r in runs), "wall_seconds": wall, "compile_cpu_seconds": compile_s,
            "gradients": grads, "divergences_after_tuning": div_draws, "divergences_during_tuning": div_tune,
            "machine": machine()}
    return target, runs, cost


def build(name, draws):
    """Route 1 with :data:`SETTINGS`' target accept and tuning, certified; route 2 where
    :data:`SETTINGS` asks for it (its agreement in the certificate, as
    tests/test_posteriordb_highdim.py's build stores it)."""
    from ckam_bench.checks.reference import certify_runs
    from ckam_bench.reference_lookup import diagnose

    how = SETTINGS.get(name, {})
    accept, tune = how.get("target_accept", 0.8), how.get("tune", 1000)
    target, runs, cost = route1(name, draws, target_accept=accept, tune=tune)
    ok, why, certificate, arrays = certify_runs(
        target, runs, burn_in=tune, iterations=draws, max_draws=20_000, stored_draws=100,
        sampler_name="nutpie", settings={"library": "nutpie", "tune": tune, "target_accept": accept,
                                         "mass_matrix": "diag", "chains run": "one at a time, cores=1",
                                         **({"sampled": f"the twin {TWINS[name][0]}, draws mapped by "
                                                        f"{TWINS[name][1]}"} if name in TWINS else {})})
    d = certificate["diagnostics"]
    print(f"{name}: certified={certificate['certified']} {why} R-hat {d['rhat_max']:.4f} bulk {d['ess_bulk_min']:.0f} "
          f"tail {d['ess_tail_min']:.0f} {cost}", file=sys.stderr, flush=True)
    if not ok or cost["divergences_after_tuning"]:
        return 3
    model = LATER[name].build()
    x = constrained_columns(model, np.stack([r.held for r in runs]))  # (chains, n, d): every draw, constrained
    flat = x.reshape(-1, x.shape[-1])
    certificate["cost"] = cost
    certificate["constrained"] = {
        "names": constrained_names(model), "mean": flat.mean(0).tolist(),
        "mcse_mean": diagnose(x)["mcse_mean"].tolist(), "mean_sq": (flat**2).mean(0).tolist(),
        "mcse_mean_sq": diagnose(x**2)["mcse_mean"].tolist(),
        "note": "Stan's parameters (Stan's inverse transforms of the unconstrained draws) over every draw of every chain; "
                "MCSE of the mean of x and of x² from arviz-stats"}
    if "route2" in how:
        certificate["second_route"] = route2(name, runs, arrays, **how["route2"])
    return ship(certificate, arrays)


def route2(name, runs, arrays, draws, target_accept, burn_in):
    """The harness's nuts_fisher (tests/test_posteriordb_highdim.py's route 2: 4 chains, seed 1,
    start spread 2) and its agreement with route 1 per unconstrained coordinate, mean and sd."""
    from tests.test_posteriordb_highdim import _mcse_sd, second_route

    sd1, mcse_sd1 = np.sqrt(arrays["variance"]), _mcse_sd(np.stack([r.held for r in runs]))
    s = second_route(name, draws=draws, target_accept=target_accept, burn_in=burn_in)
    z_mean = (arrays["mean"] - np.array(s["mean"])) / np.sqrt(arrays["mcse_mean"] ** 2 + np.array(s["mcse_mean"]) ** 2)
    z_sd = (sd1 - np.array(s["sd"])) / np.sqrt(mcse_sd1**2 + np.array(s["mcse_sd"]) ** 2)
    s.update(max_abs_z_mean=float(np.max(np.abs(z_mean))), max_abs_z_sd=float(np.max(np.abs(z_sd))),
             reference_mcse_sd=mcse_sd1.tolist())
    print(f"  second route: max|z| mean {s['max_abs_z_mean']:.2f} sd {s['max_abs_z_sd']:.2f}, "
          f"{s['cpu_seconds']:.0f} s, {s['gradients']} gradients", file=sys.stderr, flush=True)
    return s


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    if sys.argv[1] == "build":
        sys.exit(build(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 3000))
    if sys.argv[1] == "table":
        print(summary_table())
