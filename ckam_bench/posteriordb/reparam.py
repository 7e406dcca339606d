r"""Reparametrised twins of suite posteriors whose own form cannot be certified, and the exact maps
that carry their draws back (issue 45 §3).

A twin is the same joint distribution of data and parameters written in other coordinates: its
posterior is the pushforward of the original's under a bijection T, so draws of the twin mapped
by T⁻¹ are draws of the original posterior, exactly. The reference of the original target
(:mod:`ckam_bench.posteriordb.hierarchical`) is certified on the twin's chains mapped back.

**irt_2pl, abilities and discriminations non-centred.** The centred 2PL model has funnels between
the scales and their effects; nutpie left divergences after tuning at every target accept tried.
The twin draws z_θ ~ N(0, I_J) and z_a ~ N(0, I_I) and sets

    θ = σ_θ z_θ,    log a = σ_a z_a,

the scales (on the log scale), μ_b and the difficulties b unchanged: each difficulty is informed
by 100 answers, so b stays centred (non-centred too, the first attempt, 16 divergences remained
and μ_b's bulk ESS fell to 3 844 of 100 000 draws). On the unconstrained coordinates of the two
PyMC models (the same order: log σ_θ, θ | z_θ, log σ_a, log a | z_a, μ_b, log σ_b, b) the map is
:func:`irt_2pl_to_centred`, and its log-Jacobian J·log σ_θ + I·log σ_a
(:func:`irt_2pl_log_jacobian`, J = 100 persons, I = 20 items) is what makes

    log π_twin(u) = log π_centred(T(u)) + log |det ∂T/∂u|,

which the tests check at random points: the twin is the centred posterior, not an
approximation of it.

This file's bytes are part of the twins' identity; the centred targets' reference ids do not
depend on it.
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm

from ckam_bench.posteriordb import hierarchical, load_data, radon_family


def irt_2pl_noncentered() -> pm.Model:
    """The twin of :func:`ckam_bench.posteriordb.hierarchical.irt_2pl` (module docstring):
    ``theta = sigma_theta * z_theta``, ``a = exp(sigma_a * z_a)``, the z's standard normal; the
    priors of the scales, ``mu_b`` and ``b ~ normal(mu_b, sigma_b)`` and the likelihood
    ``y[i] ~ bernoulli_logit(a[i] * (theta - b[i]))`` as in the centred model."""
    d = load_data("irt_2pl")
    I, J = int(d["I"]), int(d["J"])
    with pm.Model() as model:
        sigma_theta = pm.HalfCauchy("sigma_theta", 2.0)
        z_theta = pm.Normal("z_theta", 0.0, 1.0, shape=J)
        sigma_a = pm.HalfCauchy("sigma_a", 2.0)
        z_a = pm.Normal("z_a", 0.0, 1.0, shape=I)
        mu_b = pm.Normal("mu_b", 0.0, 5.0)
        sigma_b = pm.HalfCauchy("sigma_b", 2.0)
        b = pm.Normal("b", mu_b, sigma_b, shape=I)
        theta, a = sigma_theta * z_theta, pm.math.exp(sigma_a * z_a)
        pm.Bernoulli("y", logit_p=a[:, None] * (theta[None, :] - b[:, None]), observed=d["y"])
    return model


def _irt_2pl_blocks(I: int = 20, J: int = 100) -> dict[str, slice]:
    """Where each value variable sits in the flat unconstrained vector (both models' order)."""
    sizes = (("log_sigma_theta", 1), ("theta", J), ("log_sigma_a", 1), ("a", I), ("mu_b", 1),
             ("log_sigma_b", 1), ("b", I))
    out, at = {}, 0
    for name, size in sizes:
        out[name], at = slice(at, at + size), at + size
    return out


def irt_2pl_to_centred(u: np.ndarray) -> np.ndarray:
    """T: the twin's unconstrained draws (n, 144) -> the centred model's (n, 144) (module docstring)."""
    u = np.atleast_2d(np.asarray(u, float))
    s, x = _irt_2pl_blocks(), u.copy()
    x[:, s["theta"]] = np.exp(u[:, s["log_sigma_theta"]]) * u[:, s["theta"]]
    x[:, s["a"]] = np.exp(u[:, s["log_sigma_a"]]) * u[:, s["a"]]
    return x


def irt_2pl_log_jacobian(u: np.ndarray) -> np.ndarray:
    """log |det ∂T/∂u| at each row of ``u``: J log σ_θ + I log σ_a (T is triangular)."""
    u = np.atleast_2d(np.asarray(u, float))
    s = _irt_2pl_blocks()
    J, I = s["theta"].stop - s["theta"].start, s["a"].stop - s["a"].start
    return (J * u[:, s["log_sigma_theta"]] + I * u[:, s["log_sigma_a"]]).ravel()


# ---------------------------------------------------------------------------- radon_mn, centred
# The twin of each centred radon_mn posterior (ckam_bench.posteriordb.radon_family) is its
# posteriordb non-centred sibling: alpha = mu_alpha + sigma_alpha * alpha_raw (beta likewise), the
# other parameters unchanged. The siblings declare alpha_raw where Stan declares alpha, the centred
# PyMC models declare alpha after its mu and sigma: T reorders the blocks as well.
RADON_J = 85
"""radon_mn's counties: the size of every effect vector."""
_RADON_BLOCKS = {  # (twin's, centred target's) value variables in order, (Stan name, size)
    "radon_variable_slope": (
        (("alpha", 1), ("beta_raw", RADON_J), ("mu_beta", 1), ("sigma_beta", 1), ("sigma_y", 1)),
        (("alpha", 1), ("mu_beta", 1), ("sigma_beta", 1), ("sigma_y", 1), ("beta", RADON_J))),
    "radon_variable_intercept_slope": (
        (("sigma_y", 1), ("sigma_alpha", 1), ("sigma_beta", 1), ("alpha_raw", RADON_J), ("beta_raw", RADON_J),
         ("mu_alpha", 1), ("mu_beta", 1)),
        (("sigma_y", 1), ("sigma_alpha", 1), ("sigma_beta", 1), ("mu_alpha", 1), ("mu_beta", 1),
         ("alpha", RADON_J), ("beta", RADON_J))),
    "radon_hierarchical_intercept": (
        (("alpha_raw", RADON_J), ("beta", 2), ("mu_alpha", 1), ("sigma_alpha", 1), ("sigma_y", 1)),
        (("beta", 2), ("mu_alpha", 1), ("sigma_alpha", 1), ("sigma_y", 1), ("alpha", RADON_J))),
}


def _radon_twin_blocks(family: str) -> dict[str, slice]:
    """Where each value variable of ``family``'s twin sits in its flat unconstrained vector."""
    out, at = {}, 0
    for name, size in _RADON_BLOCKS[family][0]:
        out[name], at = slice(at, at + size), at + size
    return out


def _radon_to_centred(family: str, u: np.ndarray) -> np.ndarray:
    """T of ``family``: each block of the centred target is the twin's block of the same name, or,
    for an effect ``x`` the twin does not have, ``mu_x + exp(log sigma_x) * x_raw`` (a scale's
    unconstrained coordinate is its log)."""
    u = np.atleast_2d(np.asarray(u, float))
    s = _radon_twin_blocks(family)
    return np.hstack([u[:, s[name]] if name in s else
                      u[:, s[f"mu_{name}"]] + np.exp(u[:, s[f"sigma_{name}"]]) * u[:, s[f"{name}_raw"]]
                      for name, _ in _RADON_BLOCKS[family][1]])


def _radon_log_jacobian(family: str, u: np.ndarray) -> np.ndarray:
    """log |det ∂T/∂u|: size(x) log sigma_x summed over the effects x (T is a permutation of a
    triangular map whose diagonal is sigma_x on x_raw's coordinates and 1 elsewhere)."""
    u = np.atleast_2d(np.asarray(u, float))
    s = _radon_twin_blocks(family)
    return sum(size * u[:, s[f"sigma_{name}"]].ravel() for name, size in _RADON_BLOCKS[family][1] if name not in s)


def _radon_twin(family: str, twin):
    """(twin model, T, log |det ∂T/∂u|) of the centred ``family``."""
    return (twin, functools.partial(_radon_to_centred, family), functools.partial(_radon_log_jacobian, family))


# the twins of the centred models whose funnels left divergences (tests/test_posteriordb_hard.py)
radon_variable_slope_twin, radon_variable_slope_to_centred, radon_variable_slope_log_jacobian = _radon_twin(
    "radon_variable_slope", radon_family.radon_variable_slope_noncentered)
(radon_variable_intercept_slope_twin, radon_variable_intercept_slope_to_centred,
 radon_variable_intercept_slope_log_jacobian) = _radon_twin(
    "radon_variable_intercept_slope", hierarchical.radon_variable_intercept_slope_noncentered)
(radon_hierarchical_intercept_twin, radon_hierarchical_intercept_to_centred,
 radon_hierarchical_intercept_log_jacobian) = _radon_twin(
    "radon_hierarchical_intercept", radon_family.radon_hierarchical_intercept_noncentered)
