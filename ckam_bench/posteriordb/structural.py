"""posteriordb's structural time series without posteriordb reference draws (registry:
:mod:`ckam_bench.posteriordb.highdim`): a series as a piecewise-linear trend with changepoints
plus regressors (seasonal Fourier terms), prophet's decomposition.

The translation rules are those of :mod:`ckam_bench.posteriordb.models`, which re-exports every
model function here: Stan's ``<lower=0>`` is PyMC's log transform, a normal prior on a
``<lower=0>`` parameter is the half-normal, Stan's ``double_exponential`` is ``pm.Laplace``.

This file's bytes are part of its targets' reference ids (the pymc target hashes the source file
of the model function): an edit here, even of a comment, orphans the shipped references.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ckam_bench.posteriordb import load_data


def prophet() -> pm.Model:
    """Stan program prophet (prophet.stan of Taylor & Letham, data rstan_downloads: 1169 daily
    rstan downloads, scaled): transformed data ``A[i, j] = 1`` when ``t[i] >= t_change[j]``
    (``get_changepoint_matrix``; t and t_change are sorted); ``k ~ normal(0, 5); m ~ normal(0,
    5); delta ~ double_exponential(0, tau); real<lower=0> sigma_obs ~ normal(0, 0.5); beta ~
    normal(0, sigmas); y ~ normal(linear_trend(k, m, delta, t, A, t_change) .* (1 + X * (beta .*
    s_m)) + X * (beta .* s_a), sigma_obs)`` with ``linear_trend = (k + A * delta) .* t + (m + A *
    (-t_change .* delta))``. The data's ``trend_indicator`` is 0 (the linear trend); data that
    would reach the program's logistic branch are refused."""
    d = load_data("rstan_downloads")
    if int(d["trend_indicator"]) != 0:
        raise ValueError("prophet: only the linear trend (trend_indicator = 0) is translated")
    t, t_change, X = (d[key].astype(np.float64) for key in ("t", "t_change", "X"))
    A = (t[:, None] >= t_change[None, :]).astype(np.float64)
    with pm.Model() as model:
        k = pm.Normal("k", 0.0, 5.0)
        m = pm.Normal("m", 0.0, 5.0)
        delta = pm.Laplace("delta", 0.0, float(d["tau"]), shape=int(d["S"]))
        sigma_obs = pm.HalfNormal("sigma_obs", 0.5)
        beta = pm.Normal("beta", 0.0, d["sigmas"].astype(np.float64), shape=int(d["K"]))
        trend = (k + pt.dot(A, delta)) * t + (m + pt.dot(A, -t_change * delta))
        mu = trend * (1.0 + pt.dot(X, beta * d["s_m"])) + pt.dot(X, beta * d["s_a"])
        pm.Normal("y", mu, sigma_obs, observed=d["y"].astype(np.float64))
    return model
