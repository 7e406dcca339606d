"""posteriordb's time series beyond arK and garch11: ``arma-arma11``; the translation rules are
those of :mod:`ckam_bench.posteriordb.models`, which re-exports every model function here.

Recursions are written without loops over time in the graph (the graph stays small, compiles
quickly and evaluates in vectorised operations): a first-order linear recursion by recursive
doubling (:func:`linear_recursion`).
"""

from __future__ import annotations

import pymc as pm
import pytensor.tensor as pt

from ckam_bench.posteriordb import load_data


def linear_recursion(c, a, length: int):
    """The solution v of ``v[1] = c[1], v[t] = c[t] + a * v[t-1]`` (t = 2..length) as a graph
    without a loop: starting from v = c, the step k = 1, 2, 4, ... adds a^k v[t-k], after which
    v[t] = sum_{j < 2k} a^j c[t-j]; once 2k >= length this is the recursion's solution."""
    v = c
    k = 1
    while k < length:
        v = pt.concatenate([v[:k], v[k:] + a**k * v[:-k]])
        k *= 2
    return v


def arma11() -> pm.Model:
    """``mu ~ normal(0, 10); phi ~ normal(0, 2); theta ~ normal(0, 2); real<lower=0> sigma ~
    cauchy(0, 2.5)``; ``nu[1] = mu + phi * mu; err[1] = y[1] - nu[1]``; for t = 2..T ``nu[t] = mu +
    phi * y[t-1] + theta * err[t-1]; err[t] = y[t] - nu[t]``; ``err ~ normal(0, sigma)``.

    err[t] = c[t] - theta err[t-1] with c[1] = y[1] - mu - phi mu, c[t] = y[t] - mu - phi y[t-1]
    (:func:`linear_recursion`); ``err ~ normal(0, sigma)`` is written as ``y ~ normal(y - err,
    sigma)``, the same density.
    """
    y = load_data("arma")["y"]
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        phi = pm.Normal("phi", 0.0, 2.0)
        theta = pm.Normal("theta", 0.0, 2.0)
        sigma = pm.HalfCauchy("sigma", 2.5)
        c = pt.concatenate([pt.stack([y[0] - mu - phi * mu]), y[1:] - mu - phi * y[:-1]])
        err = linear_recursion(c, -theta, len(y))
        pm.Normal("y", y - err, sigma, observed=y)
    return model
