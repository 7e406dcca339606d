"""The second route's densities for the label-switching mixtures (:mod:`ckam_bench.posteriordb.mixtures`'s
targets): NumPyro models written statement by statement from the posteriordb Stan programs, never
from the PyMC models, reading posteriordb's own data JSON, under the conventions of
:mod:`second_route_models` (a NumPyro ``sample`` site is Stan's ``~`` up to a constant).

The same construction as route 1, independently written: each model samples the restriction to
the ordered region, ``mu_ordered`` an ordered vector (NumPyro's ``ordered_vector`` constraint, its
own transform and log-Jacobian) carrying the program's normal prior by ``factor``, the other
parameters as in the program under ``_ordered`` names; the Stan parameters are
``numpyro.deterministic`` sites, the components exchanged (mu and sigma reversed, theta -> 1 -
theta) for a pseudo-random half of the draws chosen by a splitmix64 hash of the draw's float64
bits and :data:`SEED` (another seed than route 1's, and another hash input: the constrained
values). The posterior is exchangeable (ckam_bench/posteriordb/mixture_twins.py), so this gives
draws of the full posterior, each mode at its exact weight 1/2. Sampled by MAMS
(scripts/second_route.py; route 1 is nutpie's NUTS).

:data:`MODELS` has the format of :data:`second_route_models.MODELS`. A maintainer's command::

    nice -n 5 python scripts/second_route_mixtures.py build NAME [NAME ...]

runs scripts/second_route.py's route with these models added (until its ``models()`` lists them)
and stores the summary in ckam_bench/data/references/second_route.json.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

jax.config.update("jax_enable_x64", True)
SEED = 4545
"""the seed of the labels' hash."""


def _splitmix64(z):
    z = z + jnp.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> jnp.uint64(30))) * jnp.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> jnp.uint64(27))) * jnp.uint64(0x94D049BB133111EB)
    return z ^ (z >> jnp.uint64(31))


def _exchange(*values):
    """Whether to exchange the components of this draw: the top bit of a hash of SEED and the
    float64 bits of ``values``."""
    h = jnp.uint64(SEED)
    for v in values:
        for b in jnp.atleast_1d(jax.lax.bitcast_convert_type(jnp.asarray(v, jnp.float64), jnp.uint64)):
            h = _splitmix64(h ^ b)
    return (h >> jnp.uint64(63)) == 1


def _ordered_mu(prior):
    """``mu`` restricted to mu[1] < mu[2], with the program's iid ``prior`` on each."""
    mu = numpyro.sample("mu_ordered", dist.ImproperUniform(dist.constraints.ordered_vector, (), (2,)))
    numpyro.factor("mu_prior", jnp.sum(prior.log_prob(mu)))
    return mu


def normal_mixture(d):
    """normal_mixture.stan: theta ~ uniform(0, 1) (lower=0, upper=1); mu[k] ~ normal(0, 10); target +=
    log_mix(theta, normal_lpdf(y[n] | mu[1], 1.0), normal_lpdf(y[n] | mu[2], 1.0)).
    Sampled on mu[1] < mu[2], then symmetrised (module docstring)."""
    y = jnp.asarray(d["y"], float)
    theta = numpyro.sample("theta_ordered", dist.Uniform(0.0, 1.0))
    mu = _ordered_mu(dist.Normal(0.0, 10.0))
    lp1, lp2 = dist.Normal(mu[0], 1.0).log_prob(y), dist.Normal(mu[1], 1.0).log_prob(y)
    numpyro.factor("log_mix", jnp.sum(jnp.logaddexp(jnp.log(theta) + lp1, jnp.log1p(-theta) + lp2)))
    swap = _exchange(theta, mu)
    numpyro.deterministic("theta", jnp.where(swap, 1.0 - theta, theta))
    numpyro.deterministic("mu", jnp.where(swap, mu[::-1], mu))


def low_dim_gauss_mix_collapse(d):
    """low_dim_gauss_mix_collapse.stan: sigma ~ normal(0, 2) (lower=0); mu ~ normal(0, 2); theta ~ beta(5, 5)
    (lower=0, upper=1); target += log_mix(theta, normal_lpdf(y[n] | mu[1], sigma[1]), normal_lpdf(y[n] | mu[2],
    sigma[2])). Sampled on mu[1] < mu[2], then symmetrised (module docstring)."""
    y = jnp.asarray(d["y"], float)
    mu = _ordered_mu(dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma_ordered", dist.HalfNormal(2.0).expand([2]).to_event(1))
    theta = numpyro.sample("theta_ordered", dist.Beta(5.0, 5.0))
    lp1, lp2 = dist.Normal(mu[0], sigma[0]).log_prob(y), dist.Normal(mu[1], sigma[1]).log_prob(y)
    numpyro.factor("log_mix", jnp.sum(jnp.logaddexp(jnp.log(theta) + lp1, jnp.log1p(-theta) + lp2)))
    swap = _exchange(mu, sigma, theta)
    numpyro.deterministic("mu", jnp.where(swap, mu[::-1], mu))
    numpyro.deterministic("sigma", jnp.where(swap, sigma[::-1], sigma))
    numpyro.deterministic("theta", jnp.where(swap, 1.0 - theta, theta))


MODELS: dict[str, tuple] = {
    "normal_2-normal_mixture": (normal_mixture, "normal_2", ("theta", "mu")),
    "low_dim_gauss_mix_collapse-low_dim_gauss_mix_collapse": (low_dim_gauss_mix_collapse, "low_dim_gauss_mix_collapse",
                                                              ("mu", "sigma", "theta")),
}
"""posteriordb name -> (NumPyro model, posteriordb data name, the Stan program's parameters in
its declaration order)."""


def main(argv) -> int:
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]
    import second_route

    import tests.test_second_route as t

    t.BOUNDS.setdefault("theta", 1.0)  # both mixtures' weight, <lower=0, upper=1>
    listed = second_route.models
    if not set(MODELS) <= set(listed()):
        second_route.models = lambda: {**listed(), **MODELS}
    return second_route.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
