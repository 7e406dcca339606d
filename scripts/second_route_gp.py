"""The second route's density for posteriordb's mcycle_gp-accel_gp (:mod:`ckam_bench.posteriordb.mcycle`'s
target): a NumPyro model written statement by statement from the posteriordb Stan program
``accel_gp.stan`` (brms 2.10.0's code), never from the PyMC model, reading posteriordb's own data
JSON (:func:`second_route_models.load_posteriordb_data`), under the conventions of
:mod:`second_route_models` (a NumPyro ``sample`` site is Stan's ``~`` / ``target +=`` up to a
constant; NumPyro's unconstrained coordinates use Stan's transforms and their log-Jacobians).

Stan's truncated prior ``student_t_lpdf(sdgp | 3, 0, 36) - student_t_lccdf(0 | 3, 0, 36)`` on a
``<lower=0>`` parameter is NumPyro's Student-t truncated at 0 (``LeftTruncatedDistribution``,
support ``(0, inf)``: the exp transform, Stan's). ``spd_cov_exp_quad``'s square root is taken as
``exp(log(spd) / 2)`` with ``log(spd)`` written out term by term, the same number as Stan's
``sqrt(spd)``, whose derivative is not NaN where the exponential underflows (long length scales
during tuning).

:data:`MODELS` has the format of :data:`second_route_models.MODELS`.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def _sqrt_spd_cov_exp_quad(slambda, sdgp, lscale):
    """``sqrt(spd_cov_exp_quad(slambda, sdgp, lscale))`` for one length scale (``Dls == 1``):
    ``spd[m] = square(sdgp) * (sqrt(2 * pi()) * lscale)^D * exp(-0.5 * square(lscale) *
    dot_self(slambda[m]))``, on the log scale."""
    x = jnp.asarray(slambda, float)  # (NB, D)
    dim = x.shape[1]
    log_spd = (2 * jnp.log(sdgp) + dim * (0.5 * math.log(2 * math.pi) + jnp.log(lscale))
               - 0.5 * lscale**2 * jnp.sum(x * x, axis=1))
    return jnp.exp(0.5 * log_spd)


def _gpa(X, sdgp, lscale, zgp, slambda):
    """``gpa(X, sdgp, lscale, zgp, slambda) = X * (diag_spd .* zgp)``."""
    return jnp.asarray(X, float) @ (_sqrt_spd_cov_exp_quad(slambda, sdgp, lscale) * zgp)


def _positive_student_t(name, df, scale):
    """``real<lower=0> name``; ``target += student_t_lpdf(name | df, 0, scale) - student_t_lccdf(0 | df, 0, scale)``."""
    return numpyro.sample(name, dist.LeftTruncatedDistribution(dist.StudentT(df, 0.0, scale), low=0.0))


def accel_gp(d):
    """accel_gp.stan: Intercept ~ student_t(3, -13, 36); sdgp_1 ~ student_t(3, 0, 36) truncated at 0 (lower=0); zgp_1 ~ normal(0, 1); lscale_1 ~ inv_gamma(1.124909, 0.0177) (lower=0); Intercept_sigma ~ student_t(3, 0, 10); sdgp_sigma_1 ~ student_t(3, 0, 36) truncated at 0 (lower=0); zgp_sigma_1 ~ normal(0, 1); lscale_sigma_1 ~ inv_gamma(1.124909, 0.0177) (lower=0); mu = Intercept + gpa(Xgp_1, sdgp_1, lscale_1, zgp_1, slambda_1); sigma = exp(Intercept_sigma + gpa(Xgp_sigma_1, sdgp_sigma_1, lscale_sigma_1, zgp_sigma_1, slambda_sigma_1)); if (!prior_only) Y ~ normal(mu, sigma).
    Sample sites in the order of Stan's parameters block (the target's statements commute)."""
    intercept = numpyro.sample("Intercept", dist.StudentT(3.0, -13.0, 36.0))
    sdgp_1 = _positive_student_t("sdgp_1", 3.0, 36.0)
    lscale_1 = numpyro.sample("lscale_1", dist.InverseGamma(1.124909, 0.0177))
    zgp_1 = numpyro.sample("zgp_1", dist.Normal(0.0, 1.0).expand([int(d["NBgp_1"])]).to_event(1))
    intercept_sigma = numpyro.sample("Intercept_sigma", dist.StudentT(3.0, 0.0, 10.0))
    sdgp_sigma_1 = _positive_student_t("sdgp_sigma_1", 3.0, 36.0)
    lscale_sigma_1 = numpyro.sample("lscale_sigma_1", dist.InverseGamma(1.124909, 0.0177))
    zgp_sigma_1 = numpyro.sample("zgp_sigma_1", dist.Normal(0.0, 1.0).expand([int(d["NBgp_sigma_1"])]).to_event(1))
    mu = intercept + _gpa(d["Xgp_1"], sdgp_1, lscale_1, zgp_1, d["slambda_1"])
    sigma = jnp.exp(intercept_sigma + _gpa(d["Xgp_sigma_1"], sdgp_sigma_1, lscale_sigma_1, zgp_sigma_1,
                                           d["slambda_sigma_1"]))
    if not int(d["prior_only"]):
        numpyro.sample("Y", dist.Normal(mu, sigma), obs=jnp.asarray(d["Y"], float))


MODELS: dict[str, tuple] = {
    "mcycle_gp-accel_gp": (accel_gp, "mcycle_gp", ("Intercept", "sdgp_1", "lscale_1", "zgp_1", "Intercept_sigma",
                                                   "sdgp_sigma_1", "lscale_sigma_1", "zgp_sigma_1")),
}
"""posteriordb name -> (NumPyro model, posteriordb data name, the Stan program's parameters in
its declaration order)."""
