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

import numpy as np
import pymc as pm

from ckam_bench.posteriordb import load_data


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
