"""The label-switching mixtures of :mod:`ckam_bench.posteriordb.mixtures` in numpy, written
statement by statement from their posteriordb Stan programs, independently of the PyMC models:
Stan's target (full log densities) plus the log-Jacobian of each constraint transform (log x for
``<lower=0>``; log x + log(1 - x) for ``<lower=0, upper=1>``). Not a test module: the tests import
:data:`STAN_NUMPY` and :data:`BOUNDS`.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ckam_bench.posteriordb import load_data

lognorm = stats.norm.logpdf


def _log_mix(theta, lp1, lp2):
    """Stan's ``log_mix(theta, lp1, lp2)`` = log(theta exp(lp1) + (1 - theta) exp(lp2))."""
    return np.logaddexp(np.log(theta) + lp1, np.log1p(-theta) + lp2)


def stan_normal_mixture(v):
    y = load_data("normal_2")["y"]
    theta, mu = v["theta"], v["mu"]
    target = stats.uniform.logpdf(theta, 0, 1)
    for k in range(2):
        target += lognorm(mu[k], 0, 10)
    for n in range(len(y)):
        target += _log_mix(theta, lognorm(y[n], mu[0], 1.0), lognorm(y[n], mu[1], 1.0))
    return target + np.log(theta) + np.log1p(-theta)


def stan_low_dim_gauss_mix_collapse(v):
    y = load_data("low_dim_gauss_mix_collapse")["y"]
    mu, sigma, theta = v["mu"], v["sigma"], v["theta"]
    target = lognorm(sigma, 0, 2).sum() + lognorm(mu, 0, 2).sum() + stats.beta.logpdf(theta, 5, 5)
    target += np.sum(_log_mix(theta, lognorm(y, mu[0], sigma[0]), lognorm(y, mu[1], sigma[1])))
    return target + np.log(sigma).sum() + np.log(theta) + np.log1p(-theta)


STAN_NUMPY = {
    "normal_2-normal_mixture": stan_normal_mixture,
    "low_dim_gauss_mix_collapse-low_dim_gauss_mix_collapse": stan_low_dim_gauss_mix_collapse,
}
"""posteriordb name -> numpy log density of the dict of constrained Stan parameters (Stan names)."""

BOUNDS: dict[str, tuple[float, float]] = {"theta": (0.0, 1.0)}
"""(lower, upper) of the interval-constrained parameters (both mixtures' weight)."""
