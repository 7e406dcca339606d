"""posteriordb's radon_mn family: Gelman and Hill's Minnesota radon measurements (919 homes, 85
counties, data radon_mn) under partially pooled county intercepts, county slopes of the floor of
measurement, both, or intercepts with the county's log uranium as a predictor, each centred
(``alpha ~ normal(mu_alpha, sigma_alpha)``) and non-centred (``alpha = mu_alpha + sigma_alpha *
alpha_raw``, ``alpha_raw ~ normal(0, 1)``); the non-centred model with intercepts and slopes is
:func:`ckam_bench.posteriordb.hierarchical.radon_variable_intercept_slope_noncentered`.

Each function returns a ``pymc.Model`` equal to the posteriordb Stan program of its name (quoted in
its docstring), under the translation rules of :mod:`ckam_bench.posteriordb.models`: every scale
is ``real<lower=0> ~ normal(0, 1)``, PyMC's ``HalfNormal(1)`` (log transform); indices are Stan's
minus one; transformed parameters are plain expressions. Parameters are declared in the Stan
order, except that a centred model's effects (Stan declares them first) come after the scalars,
as their prior reads ``mu`` and ``sigma`` (PyMC needs a variable's parents first, as in
:func:`~ckam_bench.posteriordb.hierarchical.radon_county`).

This file's bytes are part of every one of these targets' reference id (the pymc target hashes
the source file of the model function): never edit it once their references ship, not even a
comment.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from ckam_bench.posteriordb import load_data


def _radon():
    """(data, J, county index from 0, floor_measure) of radon_mn."""
    d = load_data("radon_mn")
    return d, int(d["J"]), d["county_idx"].astype(np.int64) - 1, d["floor_measure"].astype(np.float64)


def radon_partially_pooled_centered() -> pm.Model:
    """``real<lower=0> sigma_y, sigma_alpha ~ normal(0, 1); mu_alpha ~ normal(0, 10); vector[J]
    alpha ~ normal(mu_alpha, sigma_alpha); log_radon[n] ~ normal(alpha[county_idx[n]], sigma_y)``
    (Stan declares alpha, mu_alpha, sigma_alpha, sigma_y)."""
    d, J, county, _ = _radon()
    with pm.Model() as model:
        mu_alpha = pm.Normal("mu_alpha", 0.0, 10.0)
        sigma_alpha = pm.HalfNormal("sigma_alpha", 1.0)
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        alpha = pm.Normal("alpha", mu_alpha, sigma_alpha, shape=J)
        pm.Normal("log_radon", alpha[county], sigma_y, observed=d["log_radon"])
    return model


def radon_partially_pooled_noncentered() -> pm.Model:
    """``vector[J] alpha_raw ~ normal(0, 1); mu_alpha ~ normal(0, 10); real<lower=0> sigma_alpha,
    sigma_y ~ normal(0, 1); alpha = mu_alpha + sigma_alpha * alpha_raw; log_radon[n] ~
    normal(alpha[county_idx[n]], sigma_y)``."""
    d, J, county, _ = _radon()
    with pm.Model() as model:
        alpha_raw = pm.Normal("alpha_raw", 0.0, 1.0, shape=J)
        mu_alpha = pm.Normal("mu_alpha", 0.0, 10.0)
        sigma_alpha = pm.HalfNormal("sigma_alpha", 1.0)
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        alpha = mu_alpha + sigma_alpha * alpha_raw
        pm.Normal("log_radon", alpha[county], sigma_y, observed=d["log_radon"])
    return model


def radon_variable_intercept_centered() -> pm.Model:
    """``beta, mu_alpha ~ normal(0, 10); real<lower=0> sigma_alpha, sigma_y ~ normal(0, 1);
    vector[J] alpha ~ normal(mu_alpha, sigma_alpha); log_radon[n] ~ normal(alpha[county_idx[n]]
    + floor_measure[n] * beta, sigma_y)`` (Stan declares alpha, beta, mu_alpha, sigma_alpha,
    sigma_y)."""
    d, J, county, floor = _radon()
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 10.0)
        mu_alpha = pm.Normal("mu_alpha", 0.0, 10.0)
        sigma_alpha = pm.HalfNormal("sigma_alpha", 1.0)
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        alpha = pm.Normal("alpha", mu_alpha, sigma_alpha, shape=J)
        pm.Normal("log_radon", alpha[county] + floor * beta, sigma_y, observed=d["log_radon"])
    return model


def radon_variable_intercept_noncentered() -> pm.Model:
    """``vector[J] alpha_raw ~ normal(0, 1); beta, mu_alpha ~ normal(0, 10); real<lower=0>
    sigma_alpha, sigma_y ~ normal(0, 1); alpha = mu_alpha + sigma_alpha * alpha_raw;
    log_radon[n] ~ normal(alpha[county_idx[n]] + floor_measure[n] * beta, sigma_y)``."""
    d, J, county, floor = _radon()
    with pm.Model() as model:
        alpha_raw = pm.Normal("alpha_raw", 0.0, 1.0, shape=J)
        beta = pm.Normal("beta", 0.0, 10.0)
        mu_alpha = pm.Normal("mu_alpha", 0.0, 10.0)
        sigma_alpha = pm.HalfNormal("sigma_alpha", 1.0)
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        alpha = mu_alpha + sigma_alpha * alpha_raw
        pm.Normal("log_radon", alpha[county] + floor * beta, sigma_y, observed=d["log_radon"])
    return model


def radon_variable_slope_centered() -> pm.Model:
    """``alpha, mu_beta ~ normal(0, 10); real<lower=0> sigma_beta, sigma_y ~ normal(0, 1);
    vector[J] beta ~ normal(mu_beta, sigma_beta); log_radon[n] ~ normal(alpha + floor_measure[n]
    * beta[county_idx[n]], sigma_y)`` (Stan declares alpha, beta, mu_beta, sigma_beta,
    sigma_y)."""
    d, J, county, floor = _radon()
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0.0, 10.0)
        mu_beta = pm.Normal("mu_beta", 0.0, 10.0)
        sigma_beta = pm.HalfNormal("sigma_beta", 1.0)
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        beta = pm.Normal("beta", mu_beta, sigma_beta, shape=J)
        pm.Normal("log_radon", alpha + floor * beta[county], sigma_y, observed=d["log_radon"])
    return model


def radon_variable_slope_noncentered() -> pm.Model:
    """``alpha, mu_beta ~ normal(0, 10); vector[J] beta_raw ~ normal(0, 1); real<lower=0>
    sigma_beta, sigma_y ~ normal(0, 1); beta = mu_beta + sigma_beta * beta_raw; log_radon[n] ~
    normal(alpha + floor_measure[n] * beta[county_idx[n]], sigma_y)``."""
    d, J, county, floor = _radon()
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0.0, 10.0)
        beta_raw = pm.Normal("beta_raw", 0.0, 1.0, shape=J)
        mu_beta = pm.Normal("mu_beta", 0.0, 10.0)
        sigma_beta = pm.HalfNormal("sigma_beta", 1.0)
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        beta = mu_beta + sigma_beta * beta_raw
        pm.Normal("log_radon", alpha + floor * beta[county], sigma_y, observed=d["log_radon"])
    return model


def radon_variable_intercept_slope_centered() -> pm.Model:
    """``real<lower=0> sigma_y, sigma_alpha, sigma_beta ~ normal(0, 1); mu_alpha, mu_beta ~
    normal(0, 10); vector[J] alpha ~ normal(mu_alpha, sigma_alpha), beta ~ normal(mu_beta,
    sigma_beta); log_radon[n] ~ normal(alpha[county_idx[n]] + floor_measure[n] *
    beta[county_idx[n]], sigma_y)`` (Stan declares sigma_y, sigma_alpha, sigma_beta, alpha, beta,
    mu_alpha, mu_beta)."""
    d, J, county, floor = _radon()
    with pm.Model() as model:
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        sigma_alpha = pm.HalfNormal("sigma_alpha", 1.0)
        sigma_beta = pm.HalfNormal("sigma_beta", 1.0)
        mu_alpha = pm.Normal("mu_alpha", 0.0, 10.0)
        mu_beta = pm.Normal("mu_beta", 0.0, 10.0)
        alpha = pm.Normal("alpha", mu_alpha, sigma_alpha, shape=J)
        beta = pm.Normal("beta", mu_beta, sigma_beta, shape=J)
        pm.Normal("log_radon", alpha[county] + floor * beta[county], sigma_y, observed=d["log_radon"])
    return model


def radon_hierarchical_intercept_centered() -> pm.Model:
    """``vector[2] beta ~ normal(0, 10); mu_alpha ~ normal(0, 10); real<lower=0> sigma_alpha,
    sigma_y ~ normal(0, 1); vector[J] alpha ~ normal(mu_alpha, sigma_alpha); log_radon[n] ~
    normal(alpha[county_idx[n]] + log_uppm[n] * beta[1] + floor_measure[n] * beta[2], sigma_y)``
    (Stan declares alpha, beta, mu_alpha, sigma_alpha, sigma_y)."""
    d, J, county, floor = _radon()
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 10.0, shape=2)
        mu_alpha = pm.Normal("mu_alpha", 0.0, 10.0)
        sigma_alpha = pm.HalfNormal("sigma_alpha", 1.0)
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        alpha = pm.Normal("alpha", mu_alpha, sigma_alpha, shape=J)
        mu = alpha[county] + d["log_uppm"] * beta[0] + floor * beta[1]
        pm.Normal("log_radon", mu, sigma_y, observed=d["log_radon"])
    return model


def radon_hierarchical_intercept_noncentered() -> pm.Model:
    """``vector[J] alpha_raw ~ normal(0, 1); vector[2] beta ~ normal(0, 10); mu_alpha ~
    normal(0, 10); real<lower=0> sigma_alpha, sigma_y ~ normal(0, 1); alpha = mu_alpha +
    sigma_alpha * alpha_raw; log_radon[n] ~ normal(alpha[county_idx[n]] + log_uppm[n] * beta[1]
    + floor_measure[n] * beta[2], sigma_y)``."""
    d, J, county, floor = _radon()
    with pm.Model() as model:
        alpha_raw = pm.Normal("alpha_raw", 0.0, 1.0, shape=J)
        beta = pm.Normal("beta", 0.0, 10.0, shape=2)
        mu_alpha = pm.Normal("mu_alpha", 0.0, 10.0)
        sigma_alpha = pm.HalfNormal("sigma_alpha", 1.0)
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        alpha = mu_alpha + sigma_alpha * alpha_raw
        mu = alpha[county] + d["log_uppm"] * beta[0] + floor * beta[1]
        pm.Normal("log_radon", mu, sigma_y, observed=d["log_radon"])
    return model
