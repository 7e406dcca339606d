"""Independent numpy densities of posteriordb's radon_mn family (models in
ckam_bench/posteriordb/radon_family.py), written statement by statement from the Stan programs:
Stan's target plus the log-Jacobian of each constraint transform (log x for ``<lower=0>``), as a
function of the dict of constrained Stan parameters (tests.test_posteriordb_highdim.constrained).
Not a test module: the tests import :data:`STAN_NUMPY` and :data:`BOUNDS`.
"""

from __future__ import annotations

from tests.test_posteriordb_highdim import _data, _halfnormal_jac, lognorm


def _likelihood(mu, sigma_y):
    """``for (n in 1:N) target += normal_lpdf(log_radon[n] | mu[n], sigma_y)``."""
    return lognorm(_data("radon_mn")["log_radon"], mu, sigma_y).sum()


def _county():
    return _data("radon_mn")["county_idx"].astype(int) - 1


def _floor():
    return _data("radon_mn")["floor_measure"].astype(float)


def stan_radon_partially_pooled_centered(v):
    target = _halfnormal_jac(v["sigma_y"], 1.0) + _halfnormal_jac(v["sigma_alpha"], 1.0)
    target += lognorm(v["mu_alpha"], 0, 10)
    target += lognorm(v["alpha"], v["mu_alpha"], v["sigma_alpha"]).sum()
    return target + _likelihood(v["alpha"][_county()], v["sigma_y"])


def stan_radon_partially_pooled_noncentered(v):
    alpha = v["mu_alpha"] + v["sigma_alpha"] * v["alpha_raw"]
    target = _halfnormal_jac(v["sigma_y"], 1.0) + _halfnormal_jac(v["sigma_alpha"], 1.0)
    target += lognorm(v["mu_alpha"], 0, 10) + lognorm(v["alpha_raw"], 0, 1).sum()
    return target + _likelihood(alpha[_county()], v["sigma_y"])


def stan_radon_variable_intercept_centered(v):
    target = _halfnormal_jac(v["sigma_y"], 1.0) + _halfnormal_jac(v["sigma_alpha"], 1.0)
    target += lognorm(v["mu_alpha"], 0, 10) + lognorm(v["beta"], 0, 10)
    target += lognorm(v["alpha"], v["mu_alpha"], v["sigma_alpha"]).sum()
    return target + _likelihood(v["alpha"][_county()] + _floor() * v["beta"], v["sigma_y"])


def stan_radon_variable_intercept_noncentered(v):
    alpha = v["mu_alpha"] + v["sigma_alpha"] * v["alpha_raw"]
    target = _halfnormal_jac(v["sigma_y"], 1.0) + _halfnormal_jac(v["sigma_alpha"], 1.0)
    target += lognorm(v["mu_alpha"], 0, 10) + lognorm(v["beta"], 0, 10)
    target += lognorm(v["alpha_raw"], 0, 1).sum()
    return target + _likelihood(alpha[_county()] + _floor() * v["beta"], v["sigma_y"])


def stan_radon_variable_slope_centered(v):
    target = lognorm(v["alpha"], 0, 10)
    target += _halfnormal_jac(v["sigma_y"], 1.0) + _halfnormal_jac(v["sigma_beta"], 1.0)
    target += lognorm(v["mu_beta"], 0, 10)
    target += lognorm(v["beta"], v["mu_beta"], v["sigma_beta"]).sum()
    return target + _likelihood(v["alpha"] + _floor() * v["beta"][_county()], v["sigma_y"])


def stan_radon_variable_slope_noncentered(v):
    beta = v["mu_beta"] + v["sigma_beta"] * v["beta_raw"]
    target = lognorm(v["alpha"], 0, 10)
    target += _halfnormal_jac(v["sigma_y"], 1.0) + _halfnormal_jac(v["sigma_beta"], 1.0)
    target += lognorm(v["mu_beta"], 0, 10) + lognorm(v["beta_raw"], 0, 1).sum()
    return target + _likelihood(v["alpha"] + _floor() * beta[_county()], v["sigma_y"])


def stan_radon_variable_intercept_slope_centered(v):
    target = sum(_halfnormal_jac(v[k], 1.0) for k in ("sigma_y", "sigma_beta", "sigma_alpha"))
    target += lognorm(v["mu_alpha"], 0, 10) + lognorm(v["mu_beta"], 0, 10)
    target += lognorm(v["alpha"], v["mu_alpha"], v["sigma_alpha"]).sum()
    target += lognorm(v["beta"], v["mu_beta"], v["sigma_beta"]).sum()
    c = _county()
    return target + _likelihood(v["alpha"][c] + _floor() * v["beta"][c], v["sigma_y"])


def _hierarchical_intercept_mu(alpha, beta):
    """``muj[n] = alpha[county_idx[n]] + log_uppm[n] * beta[1]; mu[n] = muj[n] + floor_measure[n] * beta[2]``."""
    muj = alpha[_county()] + _data("radon_mn")["log_uppm"] * beta[0]
    return muj + _floor() * beta[1]


def stan_radon_hierarchical_intercept_centered(v):
    target = _halfnormal_jac(v["sigma_alpha"], 1.0) + _halfnormal_jac(v["sigma_y"], 1.0)
    target += lognorm(v["mu_alpha"], 0, 10) + lognorm(v["beta"], 0, 10).sum()
    target += lognorm(v["alpha"], v["mu_alpha"], v["sigma_alpha"]).sum()
    return target + _likelihood(_hierarchical_intercept_mu(v["alpha"], v["beta"]), v["sigma_y"])


def stan_radon_hierarchical_intercept_noncentered(v):
    alpha = v["mu_alpha"] + v["sigma_alpha"] * v["alpha_raw"]
    target = _halfnormal_jac(v["sigma_alpha"], 1.0) + _halfnormal_jac(v["sigma_y"], 1.0)
    target += lognorm(v["mu_alpha"], 0, 10) + lognorm(v["beta"], 0, 10).sum()
    target += lognorm(v["alpha_raw"], 0, 1).sum()
    return target + _likelihood(_hierarchical_intercept_mu(alpha, v["beta"]), v["sigma_y"])


STAN_NUMPY = {
    "radon_mn-radon_partially_pooled_centered": stan_radon_partially_pooled_centered,
    "radon_mn-radon_partially_pooled_noncentered": stan_radon_partially_pooled_noncentered,
    "radon_mn-radon_variable_intercept_centered": stan_radon_variable_intercept_centered,
    "radon_mn-radon_variable_intercept_noncentered": stan_radon_variable_intercept_noncentered,
    "radon_mn-radon_variable_slope_centered": stan_radon_variable_slope_centered,
    "radon_mn-radon_variable_slope_noncentered": stan_radon_variable_slope_noncentered,
    "radon_mn-radon_variable_intercept_slope_centered": stan_radon_variable_intercept_slope_centered,
    "radon_mn-radon_hierarchical_intercept_centered": stan_radon_hierarchical_intercept_centered,
    "radon_mn-radon_hierarchical_intercept_noncentered": stan_radon_hierarchical_intercept_noncentered,
}
"""posteriordb name -> numpy log density of the constrained Stan parameters (up to a constant)."""
BOUNDS = {}
"""no interval-constrained parameters in this family."""
