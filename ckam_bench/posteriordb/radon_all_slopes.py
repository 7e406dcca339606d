"""posteriordb's radon_all-radon_variable_intercept_slope_noncentered: the varying intercepts and
slopes of all 386 counties (12 573 homes of every state), 777 dimensions: the suite's largest
(registry: :mod:`ckam_bench.posteriordb.highdim`).

The Stan program is the one of radon_mn-radon_variable_intercept_slope_noncentered (175
dimensions, :func:`ckam_bench.posteriordb.hierarchical.radon_variable_intercept_slope_noncentered`,
which reads radon_mn). That function is not given a data argument here because its module's
bytes are part of its shipped reference's id; this one takes the data set by name instead.

This file's bytes are part of its target's reference id (the pymc target hashes the source file
of the model function): an edit here, even of a comment, orphans the shipped reference.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from ckam_bench.posteriordb import load_data


def _variable_intercept_slope_noncentered(data_name: str) -> pm.Model:
    """``real<lower=0> sigma_y, sigma_alpha, sigma_beta ~ normal(0, 1); vector[J] alpha_raw,
    beta_raw ~ normal(0, 1); mu_alpha, mu_beta ~ normal(0, 10); alpha = mu_alpha + sigma_alpha *
    alpha_raw; beta = mu_beta + sigma_beta * beta_raw; log_radon[n] ~ normal(alpha[county_idx[n]]
    + floor_measure[n] * beta[county_idx[n]], sigma_y)`` on data ``data_name``."""
    d = load_data(data_name)
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


def radon_all_variable_intercept_slope_noncentered() -> pm.Model:
    """radon_all-radon_variable_intercept_slope_noncentered: 386 counties, 777 dimensions."""
    return _variable_intercept_slope_noncentered("radon_all")
