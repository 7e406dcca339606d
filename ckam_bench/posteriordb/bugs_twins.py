r"""Non-centred twins of the centred hierarchies of :mod:`ckam_bench.posteriordb.bugs`, and the exact
maps that carry their draws back (the pattern of :mod:`ckam_bench.posteriordb.reparam`).

Each of surgical, seeds, seeds_centered, seeds_stanified and pilots draws its effects centred,
``effect ~ normal(m, s)`` with the scale s a parameter: a funnel between s and the effects. The
twin draws ``effect_raw ~ normal(0, 1)`` and sets effect = m + s effect_raw, everything else as
in the target: the same joint distribution in other coordinates. Its value variables are the
target's, in the target's order, with each effect block replaced by its raw block (same size),
so the map T of the twin's unconstrained coordinates u to the target's changes the effect blocks
only, effect = m(u) + s(u) effect_raw, where s is a function of the stored scale coordinate

    surgical:                    b = mu + sqrt(sigmasq) b_raw,   s = exp(u_sigmasq / 2)
    seeds:                       b = b_raw / sqrt(tau),          s = exp(-u_tau / 2)
    seeds_centered:              c = sigma c_raw,                s = exp(u_sigma)
    seeds_stanified:             b = sigma b_raw,                s = exp(u_sigma)
    pilots:   a = 10 mu_a + sigma_a a_raw, b = 10 mu_b + sigma_b b_raw, sigma = 100 inv_logit(u_sigma),

and T is triangular with log |det ∂T/∂u| = Σ_blocks size · log s(u) (``<name>_log_jacobian``),
which makes

    log π_twin(u) = log π_target(T(u)) + log |det ∂T/∂u|

exactly: draws of the twin mapped by T (``<name>_to_centred``) are draws of the target.

This file's bytes are part of the twins' identity; the targets' reference ids do not depend on it.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import log_expit

from ckam_bench.posteriordb import load_data
from ckam_bench.posteriordb.bugs import _seeds_data


def _blocks(sizes) -> dict[str, slice]:
    """Where each value variable sits in the flat unconstrained vector (twin and target alike)."""
    out, at = {}, 0
    for name, size in sizes:
        out[name], at = slice(at, at + size), at + size
    return out


def _rows(u) -> np.ndarray:
    return np.atleast_2d(np.asarray(u, float))


# ------------------------------------------------------------------------------- surgical
def surgical_noncentered() -> pm.Model:
    """The twin of :func:`ckam_bench.posteriordb.bugs.surgical`: ``b = mu + sqrt(sigmasq) *
    b_raw``, ``b_raw ~ normal(0, 1)``; priors of mu and sigmasq and ``r ~ binomial_logit(n, b)`` as
    in the target."""
    d = load_data("surgical_data")
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1000.0)
        sigmasq = pm.InverseGamma("sigmasq", alpha=0.001, beta=0.001)
        b_raw = pm.Normal("b_raw", 0.0, 1.0, shape=int(d["N"]))
        b = mu + pt.sqrt(sigmasq) * b_raw
        pm.Binomial("r", n=d["n"].astype(np.int64), logit_p=b, observed=d["r"].astype(np.int64))
    return model


def _surgical_blocks():
    return _blocks((("mu", 1), ("log_sigmasq", 1), ("b", int(load_data("surgical_data")["N"]))))


def surgical_to_centred(u: np.ndarray) -> np.ndarray:
    """T: the twin's unconstrained rows (n, 14) -> the target's (module docstring)."""
    u, s = _rows(u), _surgical_blocks()
    x = u.copy()
    x[:, s["b"]] = u[:, s["mu"]] + np.exp(0.5 * u[:, s["log_sigmasq"]]) * u[:, s["b"]]
    return x


def surgical_log_jacobian(u: np.ndarray) -> np.ndarray:
    """log |det ∂T/∂u| per row: N log sigma = N u_sigmasq / 2."""
    u, s = _rows(u), _surgical_blocks()
    return (s["b"].stop - s["b"].start) * 0.5 * u[:, s["log_sigmasq"]].ravel()


# ------------------------------------------------------------------------------- seeds (three writings)
def seeds_noncentered() -> pm.Model:
    """The twin of :func:`ckam_bench.posteriordb.bugs.seeds`: ``b = b_raw / sqrt(tau)``,
    ``b_raw ~ normal(0, 1)``; the rest as in the target."""
    I, n, N, x1, x2, x1x2 = _seeds_data()
    with pm.Model() as model:
        alpha0 = pm.Normal("alpha0", 0.0, 1e3)
        alpha1 = pm.Normal("alpha1", 0.0, 1e3)
        alpha12 = pm.Normal("alpha12", 0.0, 1e3)
        alpha2 = pm.Normal("alpha2", 0.0, 1e3)
        tau = pm.Gamma("tau", alpha=1e-3, beta=1e-3)
        b = pm.Normal("b_raw", 0.0, 1.0, shape=I) / pt.sqrt(tau)
        pm.Binomial("n", n=N, logit_p=alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2 + b, observed=n)
    return model


def _seeds_scaled(effect: str):
    """The twin of seeds_centered (``effect`` "c") or seeds_stanified ("b"): effect = sigma *
    effect_raw, effect_raw ~ normal(0, 1); b = c - mean(c) for seeds_centered."""
    I, n, N, x1, x2, x1x2 = _seeds_data()
    with pm.Model() as model:
        alpha0 = pm.Normal("alpha0", 0.0, 1.0)
        alpha1 = pm.Normal("alpha1", 0.0, 1.0)
        alpha12 = pm.Normal("alpha12", 0.0, 1.0)
        alpha2 = pm.Normal("alpha2", 0.0, 1.0)
        sigma = pm.HalfCauchy("sigma", 1.0)
        e = sigma * pm.Normal(f"{effect}_raw", 0.0, 1.0, shape=I)
        b = e - pt.mean(e) if effect == "c" else e
        pm.Binomial("n", n=N, logit_p=alpha0 + alpha1 * x1 + alpha2 * x2 + alpha12 * x1x2 + b, observed=n)
    return model


def seeds_centered_noncentered() -> pm.Model:
    """The twin of :func:`ckam_bench.posteriordb.bugs.seeds_centered`: ``c = sigma * c_raw``,
    ``c_raw ~ normal(0, 1)``, ``b = c - mean(c)``; the rest as in the target."""
    return _seeds_scaled("c")


def seeds_stanified_noncentered() -> pm.Model:
    """The twin of :func:`ckam_bench.posteriordb.bugs.seeds_stanified`: ``b = sigma * b_raw``,
    ``b_raw ~ normal(0, 1)``; the rest as in the target."""
    return _seeds_scaled("b")


def _seeds_log_scale(u, scale_sign):
    """(rows, blocks, log s per row): the scale block is the fifth coordinate (tau or sigma), the
    effects the 21 after it; log s = scale_sign * u_scale."""
    u, s = _rows(u), _blocks((("alphas", 4), ("scale", 1), ("effect", _seeds_data()[0])))
    return u, s, scale_sign * u[:, s["scale"]]


def _seeds_to_centred(u, scale_sign):
    u, s, log_scale = _seeds_log_scale(u, scale_sign)
    x = u.copy()
    x[:, s["effect"]] = np.exp(log_scale) * u[:, s["effect"]]
    return x


def _seeds_log_jacobian(u, scale_sign):
    u, s, log_scale = _seeds_log_scale(u, scale_sign)
    return (s["effect"].stop - s["effect"].start) * log_scale.ravel()


def seeds_to_centred(u: np.ndarray) -> np.ndarray:
    """T for seeds: rows (n, 26), b = exp(-u_tau / 2) b_raw."""
    return _seeds_to_centred(u, -0.5)


def seeds_log_jacobian(u: np.ndarray) -> np.ndarray:
    """log |det ∂T/∂u| for seeds: I log sigma = -I u_tau / 2."""
    return _seeds_log_jacobian(u, -0.5)


def seeds_centered_to_centred(u: np.ndarray) -> np.ndarray:
    """T for seeds_centered: rows (n, 26), c = exp(u_sigma) c_raw."""
    return _seeds_to_centred(u, 1.0)


def seeds_centered_log_jacobian(u: np.ndarray) -> np.ndarray:
    """log |det ∂T/∂u| for seeds_centered: I u_sigma."""
    return _seeds_log_jacobian(u, 1.0)


def seeds_stanified_to_centred(u: np.ndarray) -> np.ndarray:
    """T for seeds_stanified: rows (n, 26), b = exp(u_sigma) b_raw."""
    return _seeds_to_centred(u, 1.0)


def seeds_stanified_log_jacobian(u: np.ndarray) -> np.ndarray:
    """log |det ∂T/∂u| for seeds_stanified: I u_sigma."""
    return _seeds_log_jacobian(u, 1.0)


# ------------------------------------------------------------------------------- pilots
def pilots_noncentered() -> pm.Model:
    """The twin of :func:`ckam_bench.posteriordb.bugs.pilots`: ``a = 10 * mu_a + sigma_a *
    a_raw``, ``b = 10 * mu_b + sigma_b * b_raw``, the raws standard normal; the rest as in the
    target."""
    d = load_data("pilots")
    group, scenario = d["group_id"].astype(np.int64) - 1, d["scenario_id"].astype(np.int64) - 1
    with pm.Model() as model:
        mu_a = pm.Normal("mu_a", 0.0, 1.0)
        mu_b = pm.Normal("mu_b", 0.0, 1.0)
        sigma_a = pm.Uniform("sigma_a", 0.0, 100.0)
        sigma_b = pm.Uniform("sigma_b", 0.0, 100.0)
        sigma_y = pm.Uniform("sigma_y", 0.0, 100.0)
        a = 10.0 * mu_a + sigma_a * pm.Normal("a_raw", 0.0, 1.0, shape=int(d["n_groups"]))
        b = 10.0 * mu_b + sigma_b * pm.Normal("b_raw", 0.0, 1.0, shape=int(d["n_scenarios"]))
        pm.Normal("y", a[group] + b[scenario], sigma_y, observed=d["y"])
    return model


def _pilots_blocks():
    d = load_data("pilots")
    return _blocks((("mu_a", 1), ("mu_b", 1), ("sigma_a", 1), ("sigma_b", 1), ("sigma_y", 1),
                    ("a", int(d["n_groups"])), ("b", int(d["n_scenarios"]))))


def pilots_to_centred(u: np.ndarray) -> np.ndarray:
    """T for pilots: rows (n, 18), a = 10 mu_a + sigma_a a_raw, b likewise, sigma = 100 inv_logit(u_sigma)."""
    u, s = _rows(u), _pilots_blocks()
    x = u.copy()
    for effect in "ab":
        sigma = 100.0 * np.exp(log_expit(u[:, s[f"sigma_{effect}"]]))
        x[:, s[effect]] = 10.0 * u[:, s[f"mu_{effect}"]] + sigma * u[:, s[effect]]
    return x


def pilots_log_jacobian(u: np.ndarray) -> np.ndarray:
    """log |det ∂T/∂u| for pilots: n_groups log sigma_a + n_scenarios log sigma_b."""
    u, s = _rows(u), _pilots_blocks()
    return sum((s[e].stop - s[e].start) * (np.log(100.0) + log_expit(u[:, s[f"sigma_{e}"]])).ravel() for e in "ab")
