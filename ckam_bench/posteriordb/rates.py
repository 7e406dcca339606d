"""posteriordb's binomial rate models (Lee & Wagenmakers 2013, "Bayesian Cognitive Modeling",
ch. 3; stan-dev/example-models ``Bayesian_Cognitive_Modeling/ParameterEstimation/Binomial``),
whose posteriordb reference was added after v1.0 (registry:
:mod:`ckam_bench.posteriordb.later`). Each rate is ``real<lower=0, upper=1>`` under ``beta(1, 1)``:
PyMC's ``Beta(1, 1)`` with its log-odds transform, Stan's transform for ``<lower=0, upper=1>``, so
the unconstrained coordinates are Stan's and the log densities differ by a constant. Stan's
generated quantities (posterior predictive draws, ``binomial_rng``) are not parameters and are not
part of the posterior.

The translation rules are those of :mod:`ckam_bench.posteriordb.models`, which re-exports every
model function here. This file's bytes are part of its targets' reference ids: an edit here, even
of a comment, orphans the shipped references.
"""

from __future__ import annotations

import pymc as pm

from ckam_bench.posteriordb import load_data


def rate_1() -> pm.Model:
    """Rate_1_data-Rate_1_model: ``real<lower=0, upper=1> theta; theta ~ beta(1, 1); k ~
    binomial(n, theta)`` (k = 5 of n = 10)."""
    d = load_data("Rate_1_data")
    with pm.Model() as model:
        theta = pm.Beta("theta", 1.0, 1.0)
        pm.Binomial("k", int(d["n"]), theta, observed=int(d["k"]))
    return model


def _common_rate(data_name: str) -> pm.Model:
    """``real<lower=0, upper=1> theta; theta ~ beta(1, 1); k1 ~ binomial(n1, theta); k2 ~
    binomial(n2, theta)`` (Stan programs Rate_3_model and Rate_5_model; the latter's generated
    quantities are not parameters) on data ``data_name``."""
    d = load_data(data_name)
    with pm.Model() as model:
        theta = pm.Beta("theta", 1.0, 1.0)
        pm.Binomial("k1", int(d["n1"]), theta, observed=int(d["k1"]))
        pm.Binomial("k2", int(d["n2"]), theta, observed=int(d["k2"]))
    return model


def rate_3() -> pm.Model:
    """Rate_3_data-Rate_3_model: one rate common to two counts (5 of 10 and 7 of 10)."""
    return _common_rate("Rate_3_data")


def rate_5() -> pm.Model:
    """Rate_5_data-Rate_5_model: one rate common to two counts (0 of 10 and 10 of 10)."""
    return _common_rate("Rate_5_data")


def rate_2() -> pm.Model:
    """Rate_2_data-Rate_2_model: ``real<lower=0, upper=1> theta1, theta2; theta1 ~ beta(1, 1);
    theta2 ~ beta(1, 1); k1 ~ binomial(n1, theta1); k2 ~ binomial(n2, theta2)`` (its transformed
    parameter ``delta = theta1 - theta2`` is a function of the parameters, not one)."""
    d = load_data("Rate_2_data")
    with pm.Model() as model:
        theta1 = pm.Beta("theta1", 1.0, 1.0)
        theta2 = pm.Beta("theta2", 1.0, 1.0)
        pm.Binomial("k1", int(d["n1"]), theta1, observed=int(d["k1"]))
        pm.Binomial("k2", int(d["n2"]), theta2, observed=int(d["k2"]))
    return model


def rate_4() -> pm.Model:
    """Rate_4_data-Rate_4_model: ``real<lower=0, upper=1> theta, thetaprior; theta ~ beta(1, 1);
    thetaprior ~ beta(1, 1); k ~ binomial(n, theta)`` (k = 1 of n = 15; ``thetaprior`` is its
    prior alone)."""
    d = load_data("Rate_4_data")
    with pm.Model() as model:
        theta = pm.Beta("theta", 1.0, 1.0)
        pm.Beta("thetaprior", 1.0, 1.0)
        pm.Binomial("k", int(d["n"]), theta, observed=int(d["k"]))
    return model
