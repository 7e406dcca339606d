"""The second route's densities of posteriordb's radon_mn family (the models of
ckam_bench/posteriordb/radon_family.py), in the form of :mod:`second_route_models`: NumPyro models
written statement by statement from the Stan programs (``posterior_database/models/stan/<model>.stan``),
reading posteriordb's own data with :func:`second_route_models.load_posteriordb_data`, never the
suite's arrays nor its PyMC models.

Every scale is ``real<lower=0> ~ normal(0, 1)``, NumPyro's ``HalfNormal(1)`` (Stan's density
up to a constant; NumPyro's log transform and its Jacobian are Stan's). A centred program's
``alpha ~ normal(mu_alpha, sigma_alpha)`` is written non-centred, ``alpha = mu_alpha +
sigma_alpha * alpha_raw`` with ``alpha_raw ~ normal(0, 1)`` and ``alpha`` a deterministic site
under Stan's name (as ``second_route_models.irt_2pl`` does): the same posterior of the Stan
parameters without the centred funnel, which the second route's MAMS handles badly.

:data:`MODELS` maps the posteriordb name to ``(model function, data name, Stan parameter names in
declaration order)``, as ``second_route_models.MODELS`` does.
"""

from __future__ import annotations

from functools import partial

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def _effects(name, J, mu, sigma):
    """``vector[J] <name>_raw ~ normal(0, 1); <name> = mu + sigma * <name>_raw`` (the draws
    of ``<name> ~ normal(mu, sigma)`` a centred program names ``<name>``, the non-centred one
    computes)."""
    raw = numpyro.sample(f"{name}_raw", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    return mu + sigma * raw


def _log_radon(d, mu, sigma_y):
    """``for (n in 1:N) target += normal_lpdf(log_radon[n] | mu[n], sigma_y)``."""
    numpyro.sample("log_radon", dist.Normal(mu, sigma_y), obs=jnp.asarray(d["log_radon"], float))


def _county(d):
    return jnp.asarray(d["county_idx"], int) - 1


def _floor(d):
    return jnp.asarray(d["floor_measure"], float)


def partially_pooled(d, centered):
    """radon_partially_pooled_{centered,noncentered}.stan: sigma_y, sigma_alpha ~ normal(0, 1)
    (lower=0); mu_alpha ~ normal(0, 10); alpha[J] ~ normal(mu_alpha, sigma_alpha) (centred;
    non-centred: alpha_raw ~ normal(0, 1), alpha = mu_alpha + sigma_alpha * alpha_raw);
    log_radon[n] ~ normal(alpha[county_idx[n]], sigma_y). Both non-centred here, ``alpha`` a
    deterministic site of the centred one."""
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    sigma_alpha = numpyro.sample("sigma_alpha", dist.HalfNormal(1.0))
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    alpha = _effects("alpha", int(d["J"]), mu_alpha, sigma_alpha)
    if centered:
        numpyro.deterministic("alpha", alpha)
    _log_radon(d, alpha[_county(d)], sigma_y)


def variable_intercept(d, centered):
    """radon_variable_intercept_{centered,noncentered}.stan: sigma_y, sigma_alpha ~ normal(0, 1)
    (lower=0); mu_alpha, beta ~ normal(0, 10); alpha[J] ~ normal(mu_alpha, sigma_alpha) (or
    alpha_raw, as in :func:`partially_pooled`); log_radon[n] ~ normal(alpha[county_idx[n]] +
    floor_measure[n] * beta, sigma_y)."""
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    sigma_alpha = numpyro.sample("sigma_alpha", dist.HalfNormal(1.0))
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0))
    alpha = _effects("alpha", int(d["J"]), mu_alpha, sigma_alpha)
    if centered:
        numpyro.deterministic("alpha", alpha)
    _log_radon(d, alpha[_county(d)] + _floor(d) * beta, sigma_y)


def variable_slope(d, centered):
    """radon_variable_slope_{centered,noncentered}.stan: alpha ~ normal(0, 10); sigma_y,
    sigma_beta ~ normal(0, 1) (lower=0); mu_beta ~ normal(0, 10); beta[J] ~ normal(mu_beta,
    sigma_beta) (or beta_raw, as in :func:`partially_pooled`); log_radon[n] ~ normal(alpha +
    floor_measure[n] * beta[county_idx[n]], sigma_y)."""
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0))
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    sigma_beta = numpyro.sample("sigma_beta", dist.HalfNormal(1.0))
    mu_beta = numpyro.sample("mu_beta", dist.Normal(0.0, 10.0))
    beta = _effects("beta", int(d["J"]), mu_beta, sigma_beta)
    if centered:
        numpyro.deterministic("beta", beta)
    _log_radon(d, alpha + _floor(d) * beta[_county(d)], sigma_y)


def variable_intercept_slope_centered(d):
    """radon_variable_intercept_slope_centered.stan: sigma_y, sigma_beta, sigma_alpha ~ normal(0, 1)
    (lower=0); mu_alpha, mu_beta ~ normal(0, 10); alpha[J] ~ normal(mu_alpha, sigma_alpha);
    beta[J] ~ normal(mu_beta, sigma_beta); log_radon[n] ~ normal(alpha[county_idx[n]] +
    floor_measure[n] * beta[county_idx[n]], sigma_y). Written non-centred (alpha_raw, beta_raw;
    alpha and beta deterministic sites)."""
    J = int(d["J"])
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    sigma_beta = numpyro.sample("sigma_beta", dist.HalfNormal(1.0))
    sigma_alpha = numpyro.sample("sigma_alpha", dist.HalfNormal(1.0))
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    mu_beta = numpyro.sample("mu_beta", dist.Normal(0.0, 10.0))
    alpha = numpyro.deterministic("alpha", _effects("alpha", J, mu_alpha, sigma_alpha))
    beta = numpyro.deterministic("beta", _effects("beta", J, mu_beta, sigma_beta))
    c = _county(d)
    _log_radon(d, alpha[c] + _floor(d) * beta[c], sigma_y)


def hierarchical_intercept(d, centered):
    """radon_hierarchical_intercept_{centered,noncentered}.stan: sigma_alpha, sigma_y ~
    normal(0, 1) (lower=0); mu_alpha ~ normal(0, 10); beta[2] ~ normal(0, 10); alpha[J] ~
    normal(mu_alpha, sigma_alpha) (or alpha_raw, as in :func:`partially_pooled`); muj[n] =
    alpha[county_idx[n]] + log_uppm[n] * beta[1]; log_radon[n] ~ normal(muj[n] +
    floor_measure[n] * beta[2], sigma_y)."""
    sigma_alpha = numpyro.sample("sigma_alpha", dist.HalfNormal(1.0))
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([2]).to_event(1))
    alpha = _effects("alpha", int(d["J"]), mu_alpha, sigma_alpha)
    if centered:
        numpyro.deterministic("alpha", alpha)
    muj = alpha[_county(d)] + jnp.asarray(d["log_uppm"], float) * beta[0]
    _log_radon(d, muj + _floor(d) * beta[1], sigma_y)


MODELS: dict[str, tuple] = {
    "radon_mn-radon_partially_pooled_centered": (
        partial(partially_pooled, centered=True), "radon_mn",
        ("alpha", "mu_alpha", "sigma_alpha", "sigma_y")),
    "radon_mn-radon_partially_pooled_noncentered": (
        partial(partially_pooled, centered=False), "radon_mn",
        ("alpha_raw", "mu_alpha", "sigma_alpha", "sigma_y")),
    "radon_mn-radon_variable_intercept_centered": (
        partial(variable_intercept, centered=True), "radon_mn",
        ("alpha", "beta", "mu_alpha", "sigma_alpha", "sigma_y")),
    "radon_mn-radon_variable_intercept_noncentered": (
        partial(variable_intercept, centered=False), "radon_mn",
        ("alpha_raw", "beta", "mu_alpha", "sigma_alpha", "sigma_y")),
    "radon_mn-radon_variable_slope_centered": (
        partial(variable_slope, centered=True), "radon_mn",
        ("alpha", "beta", "mu_beta", "sigma_beta", "sigma_y")),
    "radon_mn-radon_variable_slope_noncentered": (
        partial(variable_slope, centered=False), "radon_mn",
        ("alpha", "beta_raw", "mu_beta", "sigma_beta", "sigma_y")),
    "radon_mn-radon_variable_intercept_slope_centered": (
        variable_intercept_slope_centered, "radon_mn",
        ("sigma_y", "sigma_alpha", "sigma_beta", "alpha", "beta", "mu_alpha", "mu_beta")),
    "radon_mn-radon_hierarchical_intercept_centered": (
        partial(hierarchical_intercept, centered=True), "radon_mn",
        ("alpha", "beta", "mu_alpha", "sigma_alpha", "sigma_y")),
    "radon_mn-radon_hierarchical_intercept_noncentered": (
        partial(hierarchical_intercept, centered=False), "radon_mn",
        ("alpha_raw", "beta", "mu_alpha", "sigma_alpha", "sigma_y")),
}
"""posteriordb name -> (NumPyro model, posteriordb data name, the Stan program's parameters in
its declaration order)."""
