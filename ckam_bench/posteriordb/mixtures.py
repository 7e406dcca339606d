"""posteriordb's label-switching mixtures: two-component normal mixtures whose posterior is
invariant under exchanging the components (mu_k, sigma_k and the weight together), so it has
K! = 2 exchangeable copies of every mode. Registry and notes: :mod:`ckam_bench.posteriordb.hard`;
the ordered twins, the maps back and the exact symmetry: :mod:`ckam_bench.posteriordb.mixture_twins`.

Each function returns a ``pymc.Model`` equal to the posteriordb Stan program quoted in its
docstring (posteriordb commit :data:`ckam_bench.posteriordb.POSTERIORDB_COMMIT`), under the
translation rules of :mod:`ckam_bench.posteriordb.models`: ``<lower=0>`` is PyMC's log transform,
``<lower=0, upper=1>`` is the interval transform (Stan's logit; PyMC's Beta is given it
explicitly, its own logodds transform being the same map under another name), ``log_mix(theta,
a, b)`` is ``pm.NormalMixture`` with weights (theta, 1 - theta). Value variables follow the Stan
parameters block.

This file's bytes are part of every one of these targets' reference id (the pymc target hashes
the source file of the model function): an edit here, even of a comment, orphans the shipped
references.
"""

from __future__ import annotations

import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import Interval

from ckam_bench.posteriordb import load_data


def normal_mixture() -> pm.Model:
    """``real<lower=0, upper=1> theta ~ uniform(0, 1); array[2] real mu; mu[k] ~ normal(0, 10);
    target += log_mix(theta, normal_lpdf(y[n] | mu[1], 1.0), normal_lpdf(y[n] | mu[2], 1.0))``
    (data normal_2)."""
    d = load_data("normal_2")
    with pm.Model() as model:
        theta = pm.Uniform("theta", 0.0, 1.0)
        mu = pm.Normal("mu", 0.0, 10.0, shape=2)
        pm.NormalMixture("y", w=pt.stack([theta, 1.0 - theta]), mu=mu, sigma=1.0, observed=d["y"])
    return model


def low_dim_gauss_mix_collapse() -> pm.Model:
    """``vector[2] mu ~ normal(0, 2); array[2] real<lower=0> sigma ~ normal(0, 2);
    real<lower=0, upper=1> theta ~ beta(5, 5); target += log_mix(theta, normal_lpdf(y[n] | mu[1],
    sigma[1]), normal_lpdf(y[n] | mu[2], sigma[2]))`` (data low_dim_gauss_mix_collapse)."""
    d = load_data("low_dim_gauss_mix_collapse")
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0, shape=2)
        sigma = pm.HalfNormal("sigma", 2.0, shape=2)
        theta = pm.Beta("theta", 5.0, 5.0, default_transform=Interval(0.0, 1.0))
        pm.NormalMixture("y", w=pt.stack([theta, 1.0 - theta]), mu=mu, sigma=sigma, observed=d["y"])
    return model
