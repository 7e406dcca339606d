"""posteriordb posteriors from the BUGS examples (dugongs, surgical, seeds) and Gelman and Hill's
ARM book (pilots): a nonlinear growth curve with a bounded rate, overdispersed binomial random
effects under vague gamma and inverse-gamma priors (centred: funnels), three writings of the
seeds random-effects logistic regression, and crossed random effects. Registry and notes:
:mod:`ckam_bench.posteriordb.hard`; non-centred twins: :mod:`ckam_bench.posteriordb.bugs_twins`.

Each function returns a ``pymc.Model`` equal to the posteriordb Stan program quoted in its
docstring (posteriordb commit :data:`ckam_bench.posteriordb.POSTERIORDB_COMMIT`), under the
translation rules of :mod:`ckam_bench.posteriordb.models`: Stan's ``<lower=0>`` is PyMC's log
transform, ``<lower=L, upper=U>`` with a uniform(L, U) prior or none is ``pm.Uniform(L, U)`` (its
interval transform is Stan's scaled logit), a truncated prior on ``<lower=0>`` is the half
distribution, transformed parameters are plain expressions, indices are Stan's minus one. Value
variables follow the Stan parameters block, except that a parameter whose prior depends on later
ones comes after them (PyMC needs a variable's parents first); each docstring says where.

This file's bytes are part of every one of these targets' reference id (the pymc target hashes
the source file of the model function): an edit here, even of a comment, orphans the shipped
references.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ckam_bench.posteriordb import load_data


def dugongs() -> pm.Model:
    """``real alpha, beta; real<lower=.5, upper=1> lambda; real<lower=0> tau; sigma = 1 /
    sqrt(tau); m[i] = alpha - beta * pow(lambda, x[i]); Y ~ normal(m, sigma); alpha, beta ~
    normal(0.0, 1000); lambda ~ uniform(.5, 1); tau ~ gamma(.0001, .0001)`` (data dugongs_data;
    U3 = logit(lambda) is a transformed parameter only)."""
    d = load_data("dugongs_data")
    x = d["x"].astype(np.float64)
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0.0, 1000.0)
        beta = pm.Normal("beta", 0.0, 1000.0)
        lam = pm.Uniform("lambda", 0.5, 1.0)
        tau = pm.Gamma("tau", alpha=1e-4, beta=1e-4)
        pm.Normal("Y", alpha - beta * lam**x, 1.0 / pt.sqrt(tau), observed=d["Y"])
    return model


def surgical() -> pm.Model:
    """``real mu ~ normal(0.0, 1000.0); real<lower=0> sigmasq ~ inv_gamma(0.001, 0.001);
    array[N] real b ~ normal(mu, sigma); sigma = sqrt(sigmasq); r ~ binomial_logit(n, b)`` (data
    surgical_data; p = inv_logit(b) is a transformed parameter only)."""
    d = load_data("surgical_data")
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1000.0)
        sigmasq = pm.InverseGamma("sigmasq", alpha=0.001, beta=0.001)
        b = pm.Normal("b", mu, pt.sqrt(sigmasq), shape=int(d["N"]))
        pm.Binomial("r", n=d["n"].astype(np.int64), logit_p=b, observed=d["r"].astype(np.int64))
    return model


def _seeds_data():
    """(I, n, N, x1, x2, x1x2) of seeds_data; ``x1x2 = x1 .* x2`` is the programs' transformed data."""
    d = load_data("seeds_data")
    x1, x2 = d["x1"].astype(np.float64), d["x2"].astype(np.float64)
    return int(d["I"]), d["n"].astype(np.int64), d["N"].astype(np.int64), x1, x2, x1 * x2


def seeds() -> pm.Model:
    """``real alpha0, alpha1, alpha12, alpha2 ~ normal(0.0, 1.0E3); real<lower=0> tau ~
    gamma(1.0E-3, 1.0E-3); vector[I] b ~ normal(0.0, sigma); sigma = 1.0 / sqrt(tau); n ~
    binomial_logit(N, alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2 + b)``."""
    I, n, N, x1, x2, x1x2 = _seeds_data()
    with pm.Model() as model:
        alpha0 = pm.Normal("alpha0", 0.0, 1e3)
        alpha1 = pm.Normal("alpha1", 0.0, 1e3)
        alpha12 = pm.Normal("alpha12", 0.0, 1e3)
        alpha2 = pm.Normal("alpha2", 0.0, 1e3)
        tau = pm.Gamma("tau", alpha=1e-3, beta=1e-3)
        b = pm.Normal("b", 0.0, 1.0 / pt.sqrt(tau), shape=I)
        pm.Binomial("n", n=N, logit_p=alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2 + b, observed=n)
    return model


def seeds_centered() -> pm.Model:
    """``real alpha0, alpha1, alpha12, alpha2 ~ normal(0.0, 1.0); vector[I] c ~ normal(0.0,
    sigma); real<lower=0> sigma ~ cauchy(0, 1); b = c - mean(c); n ~ binomial_logit(N, alpha0 +
    alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2 + b)``; sigma before c (Stan declares c first)."""
    I, n, N, x1, x2, x1x2 = _seeds_data()
    with pm.Model() as model:
        alpha0 = pm.Normal("alpha0", 0.0, 1.0)
        alpha1 = pm.Normal("alpha1", 0.0, 1.0)
        alpha12 = pm.Normal("alpha12", 0.0, 1.0)
        alpha2 = pm.Normal("alpha2", 0.0, 1.0)
        sigma = pm.HalfCauchy("sigma", 1.0)
        c = pm.Normal("c", 0.0, sigma, shape=I)
        b = c - pt.mean(c)
        pm.Binomial("n", n=N, logit_p=alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2 + b, observed=n)
    return model


def seeds_stanified() -> pm.Model:
    """``real alpha0, alpha1, alpha12, alpha2 ~ normal(0.0, 1.0); vector[I] b ~ normal(0.0,
    sigma); real<lower=0> sigma ~ cauchy(0, 1); n ~ binomial_logit(N, alpha0 + alpha1 * x1 +
    alpha2 * x2 + alpha12 * x1x2 + b)``; sigma before b (Stan declares b first)."""
    I, n, N, x1, x2, x1x2 = _seeds_data()
    with pm.Model() as model:
        alpha0 = pm.Normal("alpha0", 0.0, 1.0)
        alpha1 = pm.Normal("alpha1", 0.0, 1.0)
        alpha12 = pm.Normal("alpha12", 0.0, 1.0)
        alpha2 = pm.Normal("alpha2", 0.0, 1.0)
        sigma = pm.HalfCauchy("sigma", 1.0)
        b = pm.Normal("b", 0.0, sigma, shape=I)
        pm.Binomial("n", n=N, logit_p=alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2 + b, observed=n)
    return model


def pilots() -> pm.Model:
    """``vector[n_groups] a ~ normal(10 * mu_a, sigma_a); vector[n_scenarios] b ~ normal(10 *
    mu_b, sigma_b); real mu_a, mu_b ~ normal(0, 1); real<lower=0, upper=100> sigma_a, sigma_b,
    sigma_y`` (flat); ``y_hat[i] = a[group_id[i]] + b[scenario_id[i]]; y ~ normal(y_hat,
    sigma_y)`` (data pilots); a and b after the scales (Stan declares them first)."""
    d = load_data("pilots")
    group, scenario = d["group_id"].astype(np.int64) - 1, d["scenario_id"].astype(np.int64) - 1
    with pm.Model() as model:
        mu_a = pm.Normal("mu_a", 0.0, 1.0)
        mu_b = pm.Normal("mu_b", 0.0, 1.0)
        sigma_a = pm.Uniform("sigma_a", 0.0, 100.0)
        sigma_b = pm.Uniform("sigma_b", 0.0, 100.0)
        sigma_y = pm.Uniform("sigma_y", 0.0, 100.0)
        a = pm.Normal("a", 10.0 * mu_a, sigma_a, shape=int(d["n_groups"]))
        b = pm.Normal("b", 10.0 * mu_b, sigma_b, shape=int(d["n_scenarios"]))
        pm.Normal("y", a[group] + b[scenario], sigma_y, observed=d["y"])
    return model
