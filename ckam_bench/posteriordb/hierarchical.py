"""posteriordb posteriors of 50-500 dimensions that posteriordb has no reference draws for:
hierarchical and GLM models of different character (registry and notes:
:mod:`ckam_bench.posteriordb.highdim`; their references are certified by ``ckam-bench-reference``'s
criteria and shipped in ``ckam_bench/data/references/``, docs/posteriordb.md).

Each function returns a ``pymc.Model`` equal to the posteriordb Stan program quoted in its
docstring (posteriordb commit :data:`ckam_bench.posteriordb.POSTERIORDB_COMMIT`), under the
translation rules of :mod:`ckam_bench.posteriordb.models`: Stan's ``<lower=0>`` is PyMC's log
transform, ``<lower=0, upper=U>`` with no prior statement is ``pm.Uniform(0, U)`` (its interval
transform is Stan's scaled logit, its normalising constant -log U is a constant), a truncated
prior on ``<lower=0>`` is the half distribution, indices are Stan's minus one.

This file's bytes are part of every one of these targets' reference id (the pymc target hashes
the source file of the model function): an edit here, even of a comment, orphans the shipped
references. Notes and the registry live in :mod:`~ckam_bench.posteriordb.highdim`.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ckam_bench.posteriordb import load_data


def radon_variable_intercept_slope_noncentered() -> pm.Model:
    """``real<lower=0> sigma_y, sigma_alpha, sigma_beta ~ normal(0, 1); vector[J] alpha_raw,
    beta_raw ~ normal(0, 1); mu_alpha, mu_beta ~ normal(0, 10); alpha = mu_alpha + sigma_alpha *
    alpha_raw; beta = mu_beta + sigma_beta * beta_raw; log_radon[n] ~ normal(alpha[county_idx[n]]
    + floor_measure[n] * beta[county_idx[n]], sigma_y)`` (data radon_mn)."""
    d = load_data("radon_mn")
    J, county = int(d["J"]), d["county_idx"].astype(np.int64) - 1
    floor = d["floor_measure"].astype(np.float64)
    with pm.Model() as model:
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        sigma_alpha = pm.HalfNormal("sigma_alpha", 1.0)
        sigma_beta = pm.HalfNormal("sigma_beta", 1.0)
        alpha_raw = pm.Normal("alpha_raw", 0.0, 1.0, shape=J)
        beta_raw = pm.Normal("beta_raw", 0.0, 1.0, shape=J)
        mu_alpha = pm.Normal("mu_alpha", 0.0, 10.0)
        mu_beta = pm.Normal("mu_beta", 0.0, 10.0)
        alpha = mu_alpha + sigma_alpha * alpha_raw
        beta = mu_beta + sigma_beta * beta_raw
        pm.Normal("log_radon", alpha[county] + floor * beta[county], sigma_y, observed=d["log_radon"])
    return model


def irt_2pl() -> pm.Model:
    """``real<lower=0> sigma_theta ~ cauchy(0, 2); vector[J] theta ~ normal(0, sigma_theta);
    real<lower=0> sigma_a ~ cauchy(0, 2); vector<lower=0>[I] a ~ lognormal(0, sigma_a);
    real mu_b ~ normal(0, 5); real<lower=0> sigma_b ~ cauchy(0, 2); vector[I] b ~ normal(mu_b,
    sigma_b); y[i] ~ bernoulli_logit(a[i] * (theta - b[i]))`` (I = 20 items, J = 100 persons)."""
    d = load_data("irt_2pl")
    I, J = int(d["I"]), int(d["J"])
    with pm.Model() as model:
        sigma_theta = pm.HalfCauchy("sigma_theta", 2.0)
        theta = pm.Normal("theta", 0.0, sigma_theta, shape=J)
        sigma_a = pm.HalfCauchy("sigma_a", 2.0)
        a = pm.LogNormal("a", 0.0, sigma_a, shape=I)
        mu_b = pm.Normal("mu_b", 0.0, 5.0)
        sigma_b = pm.HalfCauchy("sigma_b", 2.0)
        b = pm.Normal("b", mu_b, sigma_b, shape=I)
        pm.Bernoulli("y", logit_p=a[:, None] * (theta[None, :] - b[:, None]), observed=d["y"])
    return model


def glmm1() -> pm.Model:
    """``vector[nsite] alpha ~ normal(mu_alpha, sd_alpha); real mu_alpha ~ normal(0, 10);
    real<lower=0, upper=5> sd_alpha`` (flat: "uniform(0, 5), implicitly defined");
    ``log_lambda = rep_matrix(alpha', nyear); obs[i] ~ poisson_log(log_lambda[obsyear[i],
    obssite[i]])`` (BPA's site-effects Poisson GLMM; the missing counts are generated
    quantities, not parameters)."""
    d = load_data("GLMM_data")
    site = d["obssite"].astype(np.int64) - 1
    with pm.Model() as model:
        mu_alpha = pm.Normal("mu_alpha", 0.0, 10.0)
        sd_alpha = pm.Uniform("sd_alpha", 0.0, 5.0)
        alpha = pm.Normal("alpha", mu_alpha, sd_alpha, shape=int(d["nsite"]))
        pm.Poisson("obs", pt.exp(alpha[site]), observed=d["obs"])
    return model


def radon_county() -> pm.Model:
    """``vector[J] a ~ normal(mu_a, sigma_a); real mu_a ~ normal(0, 1); real<lower=0,
    upper=100> sigma_a, sigma_y`` (flat); ``y ~ normal(a[county], sigma_y)`` (data radon_mod:
    the radon measurements of every state, 386 counties)."""
    d = load_data("radon_mod")
    county = d["county"].astype(np.int64) - 1
    with pm.Model() as model:
        mu_a = pm.Normal("mu_a", 0.0, 1.0)
        sigma_a = pm.Uniform("sigma_a", 0.0, 100.0)
        sigma_y = pm.Uniform("sigma_y", 0.0, 100.0)
        a = pm.Normal("a", mu_a, sigma_a, shape=int(d["J"]))
        pm.Normal("y", a[county], sigma_y, observed=d["y"])
    return model


def election88_full() -> pm.Model:
    """``real<lower=0, upper=100> sigma_a, ..., sigma_e`` (flat); ``a ~ normal(0, sigma_a)``
    (age), ``b`` (education), ``c`` (age x education), ``d`` (state), ``e`` (region) likewise;
    ``vector[5] beta ~ normal(0, 100); y ~ bernoulli_logit(beta[1] + beta[2] * black + beta[3] *
    female + beta[5] * female .* black + beta[4] * v_prev_full + a[age] + b[edu] + c[age_edu] +
    d[state] + e[region_full])``."""
    d = load_data("election88")
    groups = (("a", "age", "n_age"), ("b", "edu", "n_edu"), ("c", "age_edu", "n_age_edu"),
              ("d", "state", "n_state"), ("e", "region_full", "n_region_full"))
    black, female = d["black"].astype(np.float64), d["female"].astype(np.float64)
    with pm.Model() as model:
        sigmas = {name: pm.Uniform(f"sigma_{name}", 0.0, 100.0) for name, _, _ in groups}
        effects = [pm.Normal(name, 0.0, sigmas[name], shape=int(d[size]))[d[index].astype(np.int64) - 1]
                   for name, index, size in groups]
        beta = pm.Normal("beta", 0.0, 100.0, shape=5)
        y_hat = (beta[0] + beta[1] * black + beta[2] * female + beta[4] * female * black
                 + beta[3] * d["v_prev_full"] + sum(effects))
        pm.Bernoulli("y", logit_p=y_hat, observed=d["y"])
    return model
