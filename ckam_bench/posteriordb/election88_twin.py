r"""A twin of :func:`ckam_bench.posteriordb.election88.election88_full` for building its
reference (issue 45 §3): the same posterior, its effects partially non-centred, its likelihood
grouped by covariate pattern as the model's.

**Partially non-centred effects.** The model's five crossed effects a (age, 4 levels), b
(education, 4), c (age x education, 16), d (state, 51), e (region, 5) are centred,
``x_j ~ normal(0, sigma_x)``, under flat ``uniform(0, 100)`` scales. Centred, a scale with few
levels makes a funnel at small sigma; non-centred (``x = sigma z``), the data pin x at large sigma
and z = x / sigma bends with sigma (745 divergences in 140 000 draws at target accept 0.99). The
twin writes each level between the two, by how much the data tell about it:

    x_j = h_j z_j,   h_j = sigma / sqrt(1 + sigma^2 tau_j),   tau_j = n_j / 4,

n_j the respondents at level j (tau_j: the Fisher information of a logit effect at p = 1/2). Where
sigma^2 tau_j << 1 (little data, small scale) h_j ~ sigma: non-centred; where >> 1, h_j ~
tau_j^(-1/2) whatever sigma: centred, rescaled. z_j's prior is then ``normal(0, sigma / h_j)``
(the density of x at h_j z_j times h_j). A level without respondents is non-centred.

**The intercept's level.** The likelihood sees beta[1] only through beta[1] + beta[4] v_prev_full
+ the effects, so beta[1] trades with the effects' means (and with beta[4] times the mean of
v_prev_full) along a ridge; the non-centred twin without this needed ~850 leapfrog steps a draw.
The twin samples, in beta[1]'s place, the level ``beta[1] + beta[4] vbar + sum_x mean(x)`` (flat;
the ``normal(0, 100)`` prior of beta is a potential at the mapped beta): a shear, unit Jacobian.

**The likelihood** is the model's, grouped by covariate pattern (1458 patterns for 11 566
respondents: :mod:`ckam_bench.posteriordb.election88`).

**The map back.** Both models' value variables come in the same order (PyMC's unconstrained
coordinates): the five scales on the interval transform, ``u = logit(sigma / 100)``; the effects
a, b, c, d, e (the twin: z_a ... z_e); beta (5; the twin: beta_level). :func:`election88_to_centred`
sets ``x_j = h_j(sigma_x(u)) z_j`` with ``sigma_x(u) = 100 inv_logit(u_sigma_x)``,
beta[1] = level - beta[4] vbar - sum_x mean(x), and leaves the rest; its Jacobian is triangular
with h_j on z_j's coordinates and 1 elsewhere, so ``log |det| = sum_x sum_j log h_j``
(:func:`election88_log_jacobian`), and

    log π_twin(u) = log π_centred(T(u)) + log |det ∂T/∂u|

(tests/test_posteriordb_highdim.py ``TWINS`` checks it to 1e-8 at random points).

This file's bytes are part of the twin's identity; the centred target's reference id does not
depend on it.
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import log_expit

from ckam_bench.posteriordb import load_data
from ckam_bench.posteriordb.election88 import GROUPS, grouped_bernoulli_logit, linear_predictor

TAU_PER_RESPONDENT = 0.25
"""tau_j = n_j / 4: a logit effect's Fisher information per respondent at p = 1/2."""
UPPER = 100.0
"""the scales' upper bound (``real<lower=0, upper=100>``)."""


def vbar() -> float:
    """vbar: the mean of v_prev_full over the respondents."""
    return float(np.mean(load_data("election88")["v_prev_full"]))


@functools.lru_cache(maxsize=1)
def tau() -> dict[str, np.ndarray]:
    """tau_j = n_j / 4 for each level j of each effect (n_j: its respondents)."""
    d = load_data("election88")
    return {name: TAU_PER_RESPONDENT * np.bincount(np.asarray(d[index], np.int64) - 1, minlength=int(d[size]))
            for name, index, size in GROUPS}


def election88_full_twin() -> pm.Model:
    """election88_full with the effects partially non-centred, the intercept replaced by the level
    and the likelihood aggregated (module docstring); value variables in the model's order."""
    d = load_data("election88")
    taus, v_bar = tau(), vbar()
    with pm.Model() as model:
        sigmas = {name: pm.Uniform(f"sigma_{name}", 0.0, UPPER) for name, _, _ in GROUPS}
        effects = {}
        for name, _, size in GROUPS:
            h = sigmas[name] / pt.sqrt(1.0 + sigmas[name] ** 2 * taus[name])
            effects[name] = h * pm.Normal(f"z_{name}", 0.0, sigmas[name] / h, shape=int(d[size]))
        level = pm.Flat("beta_level", shape=5)
        beta = pt.set_subtensor(level[0], level[0] - level[3] * v_bar - sum(pt.mean(x) for x in effects.values()))
        pm.Potential("beta_prior", pm.logp(pm.Normal.dist(0.0, 100.0), beta).sum())
        pm.Potential("y", grouped_bernoulli_logit(linear_predictor(beta, effects)))
    return model


def _blocks() -> dict[str, slice]:
    """Where each value variable sits in the flat unconstrained vector (both models' order)."""
    d = load_data("election88")
    sizes = [(f"sigma_{name}", 1) for name, _, _ in GROUPS] + [(name, int(d[size])) for name, _, size in GROUPS]
    out, at = {}, 0
    for name, size in [*sizes, ("beta", 5)]:
        out[name], at = slice(at, at + size), at + size
    return out


def _log_h(u: np.ndarray, name: str) -> np.ndarray:
    """log h_j of effect ``name`` at each row of ``u``: (n, levels)."""
    log_sigma = np.log(UPPER) + log_expit(u[:, _blocks()[f"sigma_{name}"]])  # (n, 1)
    return log_sigma - 0.5 * np.log1p(np.exp(2.0 * log_sigma) * tau()[name])


def election88_to_centred(u: np.ndarray) -> np.ndarray:
    """T: the twin's unconstrained draws (n, 90) -> the centred model's (n, 90): each effect
    ``x_j = h_j(100 inv_logit(u_sigma_x)) z_j``, ``beta[1] = level - beta[4] vbar - sum_x mean(x)``,
    the rest unchanged."""
    u = np.atleast_2d(np.asarray(u, float))
    s, x = _blocks(), u.copy()
    for name, _, _ in GROUPS:
        x[:, s[name]] = np.exp(_log_h(u, name)) * u[:, s[name]]
    beta = x[:, s["beta"]]  # a view: the level in its first column
    beta[:, 0] -= beta[:, 3] * vbar() + sum(x[:, s[name]].mean(axis=1) for name, _, _ in GROUPS)
    return x


def election88_log_jacobian(u: np.ndarray) -> np.ndarray:
    """log |det ∂T/∂u| at each row of ``u``: the sum of log h_j over every effect level (the shear
    of the intercept adds nothing)."""
    u = np.atleast_2d(np.asarray(u, float))
    return np.sum([_log_h(u, name).sum(axis=1) for name, _, _ in GROUPS], axis=0)
