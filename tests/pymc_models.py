"""Small PyMC models for the tests of target=pymc and ckam-bench-sbc (loaded by the harness
through ``tests/pymc_models.py:FUNCTION``; each function takes no argument)."""

import numpy as np
import pymc as pm

Y_HIER = np.array([1.2, -0.4, 2.5, 0.3])


def halfnormal():
    with pm.Model() as m:
        pm.HalfNormal("s", sigma=2.0)
    return m


def exponential():
    with pm.Model() as m:
        pm.Exponential("lam", lam=2.0)  # 1/lam exact: PyMC computes it in float32 for a float32 constant
    return m


def beta():
    with pm.Model() as m:
        pm.Beta("p", alpha=2.0, beta=3.0)
    return m


def hierarchical():
    """mu ~ N(0, 1), tau ~ HalfNormal(1), theta_j ~ N(mu, tau), y_j ~ N(theta_j, 1)."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        theta = pm.Normal("theta", mu, tau, shape=4)
        pm.Normal("y", theta, 1.0, observed=Y_HIER)
    return m


def normal_mean():
    """mu ~ N(0, 1), y_i ~ N(mu, 1) for 5 observations: a conjugate posterior (SBC)."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.zeros(5))
    return m


def gamma_poisson():
    """lam ~ Gamma(3, 1), k_i ~ Poisson(lam) for 4 counts, ``pm.Data`` covariate scale (SBC)."""
    with pm.Model() as m:
        exposure = pm.Data("exposure", np.array([1.0, 2.0, 1.0, 0.5]))
        lam = pm.Gamma("lam", alpha=3.0, beta=1.0)
        pm.Poisson("k", lam * exposure, observed=np.array([2, 5, 3, 1]))
    return m


def mixed():
    """A simplex, a positive, a (0, 1) variable, a deterministic and pm.Data observations."""
    with pm.Model() as m:
        x = pm.Data("x", np.arange(5.0))
        yd = pm.Data("yd", 2.0 * np.arange(5.0) + 0.5)
        a = pm.Normal("a")
        s = pm.HalfNormal("s")
        p = pm.Beta("p", 2.0, 3.0, shape=2)
        pm.Dirichlet("w", np.ones(3))
        pm.Deterministic("two_a", 2.0 * a)
        pm.Normal("y", a * x, s, observed=yd)
        pm.Poisson("k", p[0] * 10.0, observed=np.array([3, 4]))
    return m


def not_a_model():
    return 3


def discrete():
    with pm.Model() as m:
        pm.Poisson("n", 3.0)
    return m


def ordered_pair():
    """mu ~ N(0, 1) x 2 with the ordered transform (prior: the pair restricted to mu0 < mu1),
    y_i ~ N(mu, 1) for 4 observations of each: a conjugate posterior restricted to mu0 < mu1 (SBC)."""
    from pymc.distributions.transforms import ordered

    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0, shape=2, transform=ordered, initval=np.array([-0.5, 0.5]))
        pm.Normal("y", mu, 1.0, observed=np.zeros((4, 2)))
    return m


def potential_shrink():
    """mu ~ N(0, 1) with pm.Potential(-mu^2): the prior is N(0, 1/3), not what pymc.draw samples."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Potential("shrink", -mu**2)
        pm.Normal("y", mu, 1.0, observed=np.zeros(5))
    return m


def clipped_mean():
    """normal_mean with the deterministic max(mu, 0): an atom at 0 (ties in SBC ranks)."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Deterministic("mu_plus", pm.math.maximum(mu, 0.0))
        pm.Normal("y", mu, 1.0, observed=np.zeros(5))
    return m


def flat_mean():
    """An improper prior: mu ~ Flat."""
    with pm.Model() as m:
        mu = pm.Flat("mu")
        pm.Normal("y", mu, 1.0, observed=np.zeros(5))
    return m


def interval_normal():
    """A Normal with an Interval(0, 1) transform: its support restricted beyond the Normal's."""
    from pymc.distributions.transforms import Interval

    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0, transform=Interval(0.0, 1.0), initval=0.5)
        pm.Normal("y", mu, 1.0, observed=np.zeros(5))
    return m
