"""The BUGS / ARM posteriors of :mod:`ckam_bench.posteriordb.bugs` in numpy, written statement by
statement from their posteriordb Stan programs, independently of the PyMC models: Stan's target
(full log densities, which differ from Stan's dropped-constant ``~`` by a constant) plus the
log-Jacobian of each constraint transform (log x for ``<lower=0>``; log(x - L) + log(U - x) -
log(U - L) for ``<lower=L, upper=U>``, x = L + (U - L) inv_logit(y)). Not a test module: the
tests import :data:`STAN_NUMPY` and :data:`BOUNDS`.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import expit

from ckam_bench.posteriordb import load_data

lognorm = stats.norm.logpdf


def _positive_jac(x):
    """``<lower=0>``: Stan's log-Jacobian of x = exp(y)."""
    return np.log(x)


def _interval_jac(x, lo, hi):
    """``<lower=lo, upper=hi>``: Stan's log-Jacobian of x = lo + (hi - lo) inv_logit(y)."""
    return np.log(x - lo) + np.log(hi - x) - np.log(hi - lo)


def _binomial_logit(k, n, eta):
    """``k ~ binomial_logit(n, eta)``, summed."""
    return np.sum(stats.binom.logpmf(k, n, expit(eta)))


def stan_dugongs(v):
    d = load_data("dugongs_data")
    alpha, beta, lam, tau = v["alpha"], v["beta"], v["lambda"], v["tau"]
    sigma = 1 / np.sqrt(tau)
    m = np.array([alpha - beta * lam ** float(x) for x in d["x"]])
    target = lognorm(d["Y"], m, sigma).sum()
    target += lognorm(alpha, 0.0, 1000) + lognorm(beta, 0.0, 1000)
    target += stats.uniform.logpdf(lam, 0.5, 0.5)
    target += stats.gamma.logpdf(tau, 0.0001, scale=1 / 0.0001)
    return target + _interval_jac(lam, 0.5, 1.0) + _positive_jac(tau)


def stan_surgical(v):
    d = load_data("surgical_data")
    sigma = np.sqrt(v["sigmasq"])
    target = lognorm(v["mu"], 0.0, 1000.0)
    target += stats.invgamma.logpdf(v["sigmasq"], 0.001, scale=0.001)
    target += lognorm(v["b"], v["mu"], sigma).sum()
    target += sum(stats.binom.logpmf(int(d["r"][i]), int(d["n"][i]), expit(v["b"][i])) for i in range(int(d["N"])))
    return target + _positive_jac(v["sigmasq"])


def _seeds_eta(v):
    d = load_data("seeds_data")
    x1, x2 = d["x1"].astype(float), d["x2"].astype(float)
    x1x2 = x1 * x2
    return d, v["alpha0"] + v["alpha1"] * x1 + v["alpha2"] * x2 + v["alpha12"] * x1x2


def stan_seeds(v):
    d, eta = _seeds_eta(v)
    sigma = 1.0 / np.sqrt(v["tau"])
    target = sum(lognorm(v[k], 0.0, 1.0e3) for k in ("alpha0", "alpha1", "alpha2", "alpha12"))
    target += stats.gamma.logpdf(v["tau"], 1.0e-3, scale=1 / 1.0e-3)
    target += lognorm(v["b"], 0.0, sigma).sum()
    target += _binomial_logit(d["n"].astype(int), d["N"].astype(int), eta + v["b"])
    return target + _positive_jac(v["tau"])


def stan_seeds_centered(v):
    d, eta = _seeds_eta(v)
    b = v["c"] - np.mean(v["c"])
    target = sum(lognorm(v[k], 0.0, 1.0) for k in ("alpha0", "alpha1", "alpha2", "alpha12"))
    target += stats.cauchy.logpdf(v["sigma"], 0, 1)
    target += lognorm(v["c"], 0.0, v["sigma"]).sum()
    target += _binomial_logit(d["n"].astype(int), d["N"].astype(int), eta + b)
    return target + _positive_jac(v["sigma"])


def stan_seeds_stanified(v):
    d, eta = _seeds_eta(v)
    target = sum(lognorm(v[k], 0.0, 1.0) for k in ("alpha0", "alpha1", "alpha2", "alpha12"))
    target += stats.cauchy.logpdf(v["sigma"], 0, 1)
    target += lognorm(v["b"], 0.0, v["sigma"]).sum()
    target += _binomial_logit(d["n"].astype(int), d["N"].astype(int), eta + v["b"])
    return target + _positive_jac(v["sigma"])


def stan_pilots(v):
    d = load_data("pilots")
    y_hat = np.array([v["a"][int(g) - 1] + v["b"][int(s) - 1] for g, s in zip(d["group_id"], d["scenario_id"])])
    target = lognorm(v["mu_a"], 0, 1) + lognorm(v["a"], 10 * v["mu_a"], v["sigma_a"]).sum()
    target += lognorm(v["mu_b"], 0, 1) + lognorm(v["b"], 10 * v["mu_b"], v["sigma_b"]).sum()
    target += lognorm(d["y"], y_hat, v["sigma_y"]).sum()
    return target + sum(_interval_jac(v[k], 0.0, 100.0) for k in ("sigma_a", "sigma_b", "sigma_y"))


STAN_NUMPY = {
    "dugongs_data-dugongs_model": stan_dugongs,
    "surgical_data-surgical_model": stan_surgical,
    "seeds_data-seeds_model": stan_seeds,
    "seeds_data-seeds_centered_model": stan_seeds_centered,
    "seeds_data-seeds_stanified_model": stan_seeds_stanified,
    "pilots-pilots": stan_pilots,
}
"""posteriordb name -> numpy log density of the dict of constrained Stan parameters (Stan names)."""

BOUNDS: dict[str, tuple[float, float]] = {"lambda": (0.5, 1.0), "sigma_a": (0.0, 100.0), "sigma_b": (0.0, 100.0),
                                          "sigma_y": (0.0, 100.0)}
"""(lower, upper) of the interval-constrained parameters (dugongs' lambda; pilots' scales)."""
