"""The second route's densities for the BUGS / ARM posteriors (:mod:`ckam_bench.posteriordb.bugs`'s
targets): NumPyro models written statement by statement from the posteriordb Stan programs, never
from the PyMC models, reading posteriordb's own data JSON (:func:`second_route_models.load_posteriordb_data`),
under the conventions of :mod:`second_route_models` (a NumPyro ``sample`` site is Stan's ``~`` up
to a constant; NumPyro's unconstrained coordinates use Stan's transforms and their log-Jacobians).

The centred hierarchies (surgical, seeds, seeds_centered, seeds_stanified, pilots) are written
non-centred, effect = location + scale * raw with raw standard normal and the Stan name kept as a
``numpyro.deterministic`` site: the same posterior of the Stan parameters (normal(m, s) is the
law of m + s z), without the funnels that hurt MAMS; each docstring says so.

:data:`MODELS` has the format of :data:`second_route_models.MODELS`.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def _binomial_logit(name, N, eta, k):
    """``k ~ binomial_logit(N, eta)``."""
    numpyro.sample(name, dist.Binomial(total_count=jnp.asarray(N), logits=eta), obs=jnp.asarray(k))


def _normal_effects(name, loc, scale, size):
    """``name ~ normal(loc, scale)`` (vector of ``size``), non-centred: loc + scale * name_raw."""
    raw = numpyro.sample(f"{name}_raw", dist.Normal(0.0, 1.0).expand([size]).to_event(1))
    return numpyro.deterministic(name, loc + scale * raw)


def dugongs(d):
    """dugongs_model.stan: alpha, beta ~ normal(0.0, 1000); lambda ~ uniform(.5, 1) (lower=.5, upper=1); tau ~ gamma(.0001, .0001) (lower=0); sigma = 1 / sqrt(tau); m[i] = alpha - beta * pow(lambda, x[i]); Y ~ normal(m, sigma)."""
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 1000.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 1000.0))
    lam = numpyro.sample("lambda", dist.Uniform(0.5, 1.0))
    tau = numpyro.sample("tau", dist.Gamma(0.0001, 0.0001))
    sigma = 1 / jnp.sqrt(tau)
    m = alpha - beta * jnp.power(lam, jnp.asarray(d["x"], float))
    numpyro.sample("Y", dist.Normal(m, sigma), obs=jnp.asarray(d["Y"], float))


def surgical(d):
    """surgical_model.stan: mu ~ normal(0.0, 1000.0); sigmasq ~ inv_gamma(0.001, 0.001) (lower=0); sigma = sqrt(sigmasq); b[N] ~ normal(mu, sigma); r ~ binomial_logit(n, b).
    Written non-centred: b = mu + sigma * b_raw (module docstring)."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 1000.0))
    sigmasq = numpyro.sample("sigmasq", dist.InverseGamma(0.001, 0.001))
    sigma = jnp.sqrt(sigmasq)
    b = _normal_effects("b", mu, sigma, int(d["N"]))
    _binomial_logit("r", d["n"], b, d["r"])


def _seeds_eta(d, alpha0, alpha1, alpha12, alpha2):
    """alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2, x1x2 = x1 .* x2 (transformed data)."""
    x1, x2 = jnp.asarray(d["x1"], float), jnp.asarray(d["x2"], float)
    x1x2 = x1 * x2
    return alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2


def _alphas(scale):
    return [numpyro.sample(k, dist.Normal(0.0, scale)) for k in ("alpha0", "alpha1", "alpha12", "alpha2")]


def seeds(d):
    """seeds_model.stan: alpha0, alpha1, alpha2, alpha12 ~ normal(0.0, 1.0E3); tau ~ gamma(1.0E-3, 1.0E-3) (lower=0); sigma = 1.0 / sqrt(tau); b[I] ~ normal(0.0, sigma); n ~ binomial_logit(N, alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2 + b).
    Written non-centred: b = sigma * b_raw (module docstring)."""
    alphas = _alphas(1.0e3)
    tau = numpyro.sample("tau", dist.Gamma(1.0e-3, 1.0e-3))
    sigma = 1.0 / jnp.sqrt(tau)
    b = _normal_effects("b", 0.0, sigma, int(d["I"]))
    _binomial_logit("n", d["N"], _seeds_eta(d, *alphas) + b, d["n"])


def seeds_centered(d):
    """seeds_centered_model.stan: alpha0, alpha1, alpha2, alpha12 ~ normal(0.0, 1.0); sigma ~ cauchy(0, 1) (lower=0); c[I] ~ normal(0.0, sigma); b = c - mean(c); n ~ binomial_logit(N, alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2 + b).
    Written non-centred: c = sigma * c_raw (module docstring)."""
    alphas = _alphas(1.0)
    sigma = numpyro.sample("sigma", dist.HalfCauchy(1.0))
    c = _normal_effects("c", 0.0, sigma, int(d["I"]))
    b = c - jnp.mean(c)
    _binomial_logit("n", d["N"], _seeds_eta(d, *alphas) + b, d["n"])


def seeds_stanified(d):
    """seeds_stanified_model.stan: alpha0, alpha1, alpha2, alpha12 ~ normal(0.0, 1.0); sigma ~ cauchy(0, 1) (lower=0); b[I] ~ normal(0.0, sigma); n ~ binomial_logit(N, alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2 + b).
    Written non-centred: b = sigma * b_raw (module docstring)."""
    alphas = _alphas(1.0)
    sigma = numpyro.sample("sigma", dist.HalfCauchy(1.0))
    b = _normal_effects("b", 0.0, sigma, int(d["I"]))
    _binomial_logit("n", d["N"], _seeds_eta(d, *alphas) + b, d["n"])


def pilots(d):
    """pilots.stan: sigma_a, sigma_b, sigma_y flat on (0, 100); mu_a ~ normal(0, 1); a[n_groups] ~ normal(10 * mu_a, sigma_a); mu_b ~ normal(0, 1); b[n_scenarios] ~ normal(10 * mu_b, sigma_b); y_hat[i] = a[group_id[i]] + b[scenario_id[i]]; y ~ normal(y_hat, sigma_y).
    Written non-centred: a = 10 * mu_a + sigma_a * a_raw, b likewise (module docstring)."""
    sigma_a = numpyro.sample("sigma_a", dist.Uniform(0.0, 100.0))
    sigma_b = numpyro.sample("sigma_b", dist.Uniform(0.0, 100.0))
    sigma_y = numpyro.sample("sigma_y", dist.Uniform(0.0, 100.0))
    mu_a = numpyro.sample("mu_a", dist.Normal(0.0, 1.0))
    a = _normal_effects("a", 10 * mu_a, sigma_a, int(d["n_groups"]))
    mu_b = numpyro.sample("mu_b", dist.Normal(0.0, 1.0))
    b = _normal_effects("b", 10 * mu_b, sigma_b, int(d["n_scenarios"]))
    y_hat = a[jnp.asarray(d["group_id"], int) - 1] + b[jnp.asarray(d["scenario_id"], int) - 1]
    numpyro.sample("y", dist.Normal(y_hat, sigma_y), obs=jnp.asarray(d["y"], float))


_SEEDS = ("alpha0", "alpha1", "alpha12", "alpha2")
MODELS: dict[str, tuple] = {
    "dugongs_data-dugongs_model": (dugongs, "dugongs_data", ("alpha", "beta", "lambda", "tau")),
    "surgical_data-surgical_model": (surgical, "surgical_data", ("mu", "sigmasq", "b")),
    "seeds_data-seeds_model": (seeds, "seeds_data", (*_SEEDS, "tau", "b")),
    "seeds_data-seeds_centered_model": (seeds_centered, "seeds_data", (*_SEEDS, "c", "sigma")),
    "seeds_data-seeds_stanified_model": (seeds_stanified, "seeds_data", (*_SEEDS, "b", "sigma")),
    "pilots-pilots": (pilots, "pilots", ("a", "b", "mu_a", "mu_b", "sigma_a", "sigma_b", "sigma_y")),
}
"""posteriordb name -> (NumPyro model, posteriordb data name, the Stan program's parameters in
its declaration order)."""
