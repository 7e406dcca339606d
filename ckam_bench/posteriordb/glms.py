"""posteriordb's ARM regressions whose posteriordb reference was added after v1.0 (registry:
:mod:`ckam_bench.posteriordb.later`): logistic regressions of the wells data (Gelman & Hill 2006,
ch. 5) and of the 1992 NES vote on income, the pooled radon regression (Stan case study "radon")
and sesame's one-predictor regression (ch. 10). Most have no prior statement: flat priors
(``pm.Flat``), a proper posterior from the likelihood alone. Stan's ``bernoulli_logit_glm(x,
alpha, beta)`` is ``bernoulli_logit(alpha + x * beta)``; transformed data (rescaling, centring,
the interaction) are computed here in float64 as Stan computes them.

The translation rules are those of :mod:`ckam_bench.posteriordb.models`, which re-exports every
model function here. This file's bytes are part of its targets' reference ids: an edit here, even
of a comment, orphans the shipped references.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from ckam_bench.posteriordb import load_data


def _logistic(x: np.ndarray, y: np.ndarray, names: tuple[str, ...]) -> pm.Model:
    """Flat priors on ``alpha`` (or Stan's ``beta[1]``) and the coefficients, ``y ~
    bernoulli_logit(alpha + x * beta)``; ``names`` are the value variables' names with their
    sizes read from ``x``."""
    with pm.Model() as model:
        if names == ("beta",):  # Stan's vector[2] beta: intercept beta[1], slope beta[2]
            beta = pm.Flat("beta", shape=1 + x.shape[1])
            eta = beta[0] + pm.math.dot(x, beta[1:])
        else:
            alpha = pm.Flat("alpha")
            beta = pm.Flat("beta", shape=x.shape[1])
            eta = alpha + pm.math.dot(x, beta)
        pm.Bernoulli("y", logit_p=eta, observed=y)
    return model


def _wells():
    d = load_data("wells_data")
    return d, d["switched"].astype(np.int64), d["dist"].astype(np.float64), d["arsenic"].astype(np.float64)


def wells_dist() -> pm.Model:
    """wells_data-wells_dist: ``vector[2] beta; switched ~ bernoulli_logit(beta[1] + beta[2] *
    dist)``, flat priors."""
    _, y, dist, _ = _wells()
    return _logistic(dist[:, None], y, ("beta",))


def wells_dist100() -> pm.Model:
    """wells_data-wells_dist100_model: ``real alpha; vector[1] beta; switched ~
    bernoulli_logit_glm(x, alpha, beta)``, x the column dist / 100.0, flat priors."""
    _, y, dist, _ = _wells()
    return _logistic((dist / 100.0)[:, None], y, ("alpha", "beta"))


def wells_dist100ars() -> pm.Model:
    """wells_data-wells_dist100ars_model: as :func:`wells_dist100`, x = [dist / 100.0,
    arsenic]."""
    _, y, dist, arsenic = _wells()
    return _logistic(np.column_stack([dist / 100.0, arsenic]), y, ("alpha", "beta"))


def wells_interaction_c() -> pm.Model:
    """wells_data-wells_interaction_c_model: x = [c_dist100, c_arsenic, c_dist100 .* c_arsenic]
    with ``c_dist100 = (dist - mean(dist)) / 100.0`` and ``c_arsenic = arsenic - mean(arsenic)``,
    flat priors."""
    _, y, dist, arsenic = _wells()
    c_dist100, c_arsenic = (dist - dist.mean()) / 100.0, arsenic - arsenic.mean()
    return _logistic(np.column_stack([c_dist100, c_arsenic, c_dist100 * c_arsenic]), y, ("alpha", "beta"))


def nes_logit() -> pm.Model:
    """nes_logit_data-nes_logit_model: ``real alpha; vector[1] beta; vote ~
    bernoulli_logit_glm(x, alpha, beta)``, x the column income, flat priors."""
    d = load_data("nes_logit_data")
    return _logistic(d["income"].astype(np.float64)[:, None], d["vote"].astype(np.int64), ("alpha", "beta"))


def _radon_pooled(data_name: str) -> pm.Model:
    """``real alpha; real beta; real<lower=0> sigma_y; sigma_y ~ normal(0, 1); alpha ~
    normal(0, 10); beta ~ normal(0, 10); log_radon[n] ~ normal(alpha + beta * floor_measure[n],
    sigma_y)`` (Stan program radon_pooled) on data ``data_name``."""
    d = load_data(data_name)
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0.0, 10.0)
        beta = pm.Normal("beta", 0.0, 10.0)
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        pm.Normal("log_radon", alpha + beta * d["floor_measure"].astype(np.float64), sigma_y,
                  observed=d["log_radon"].astype(np.float64))
    return model


def radon_mn_pooled() -> pm.Model:
    """radon_mn-radon_pooled: :func:`_radon_pooled` on the 919 Minnesota homes."""
    return _radon_pooled("radon_mn")


def radon_all_pooled() -> pm.Model:
    """radon_all-radon_pooled: :func:`_radon_pooled` on the 12573 homes of all states."""
    return _radon_pooled("radon_all")


def sesame_one_pred_a() -> pm.Model:
    """sesame_data-sesame_one_pred_a: ``vector[2] beta; real<lower=0> sigma; watched ~
    normal(beta[1] + beta[2] * encouraged, sigma)``, flat priors (``sigma``: flat on (0, inf),
    ``pm.HalfFlat``)."""
    d = load_data("sesame_data")
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=2)
        sigma = pm.HalfFlat("sigma")
        pm.Normal("watched", beta[0] + beta[1] * d["encouraged"].astype(np.float64), sigma,
                  observed=d["watched"].astype(np.float64))
    return model
