r"""Ordered twins of the label-switching mixtures of :mod:`ckam_bench.posteriordb.mixtures`, the
exact maps that carry their draws to the full symmetric posterior, and the symmetry itself.

Symmetry. Each target is invariant under exchanging its components: with (mu_1, mu_2),
(sigma_1, sigma_2) and the weights (theta, 1 - theta) exchanged together the likelihood
``log_mix`` is unchanged, and so is the prior (normal_mixture: mu_k iid normal(0, 10), theta
uniform(0, 1), symmetric about 1/2; low_dim_gauss_mix_collapse: mu_k iid normal(0, 2), sigma_k iid
half-normal(0, 2), theta ~ beta(5, 5), symmetric about 1/2). In the unconstrained coordinates the
exchange P swaps the mu and log sigma blocks and negates logit(theta) (logit(1 - theta) =
-logit(theta)): a signed permutation, |det P| = 1, so π(P x) = π(x) exactly (``<name>_permute``;
tests/test_posteriordb_mixtures.py checks it at random points). The posterior is therefore the
equal-weight mixture, weights exactly 1/K! = 1/2 by symmetry (no sampler estimates them), of its
restriction to the ordered region mu_1 < mu_2 and that restriction's image under P.

Twin. The same Stan program with ``ordered[2] mu`` (PyMC's ordered transform: mu_1 = y_1, mu_2 =
y_1 + exp(y_2)) has the target's unnormalised density on the ordered region. T maps the twin's
unconstrained rows u to the target's: R (mu = (u_1, u_1 + exp(u_2)), the other coordinates as
they are, log |det ∂R/∂u| = u_2, ``<name>_log_jacobian``) followed by P applied to a uniformly
random half of the rows, which row being decided by a hash of the row's bits and a fixed seed
(:data:`SEED`): deterministic, the same row mapped the same way in every call, independent of
the chain and of the row's place in it (a random stream restarted at each call would give every
chain the same sequence of labels). As π is P-invariant, log π_twin(u) = log π(T(u)) + u_2
whichever label a row gets, and T(u) for u ~ π_twin is an exact draw of the full posterior
(its restriction to the ordered region is the twin's: the per-mode reference).

This file's bytes are part of the twins' identity; the targets' reference ids do not depend on it.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import Interval, ordered

from ckam_bench.posteriordb import load_data

SEED = 45
"""the seed of the labels' hash."""


def _rows(u) -> np.ndarray:
    return np.atleast_2d(np.asarray(u, float))


def _splitmix64(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def swapped(u: np.ndarray) -> np.ndarray:
    """Per row, whether T exchanges its components: the top bit of a splitmix64 hash of
    :data:`SEED` and the row's float64 bits (uniform, deterministic)."""
    bits = np.ascontiguousarray(_rows(u), dtype=np.float64).view(np.uint64)
    h = np.full(len(bits), np.uint64(SEED))
    for j in range(bits.shape[1]):
        h = _splitmix64(h ^ bits[:, j])
    return (h >> np.uint64(63)).astype(bool)


def _ordered(u: np.ndarray, at: int) -> np.ndarray:
    """R: the ordered pair at columns (at, at + 1) of the twin's rows to (mu_1, mu_2)."""
    x = u.copy()
    x[:, at + 1] = u[:, at] + np.exp(u[:, at + 1])
    return x


def _permute(x: np.ndarray, perm, pairs, logit: int) -> np.ndarray:
    """P_perm on the target's unconstrained rows: each pair of component columns permuted by
    ``perm`` (of (0, 1)), logit(theta) negated when the components are exchanged."""
    x, y = _rows(x), _rows(x).copy()
    for pair in pairs:
        y[:, list(pair)] = x[:, [pair[k] for k in perm]]
    if tuple(perm) != (0, 1):
        y[:, logit] = -x[:, logit]
    return y


def _to_target(u, at, pairs, logit):
    u = _rows(u)
    x = _ordered(u, at)
    flip = swapped(u)
    x[flip] = _permute(x[flip], (1, 0), pairs, logit)
    return x


# ------------------------------------------------------------------------------- normal_mixture
_NM = {"at": 1, "pairs": ((1, 2),), "logit": 0}  # columns: logit(theta), mu_1, mu_2


def normal_mixture_ordered() -> pm.Model:
    """The twin of :func:`ckam_bench.posteriordb.mixtures.normal_mixture`: ``ordered[2] mu``, the
    rest as in the target."""
    d = load_data("normal_2")
    with pm.Model() as model:
        theta = pm.Uniform("theta", 0.0, 1.0)
        mu = pm.Normal("mu", 0.0, 10.0, shape=2, transform=ordered, initval=np.array([-1.0, 1.0]))
        pm.NormalMixture("y", w=pt.stack([theta, 1.0 - theta]), mu=mu, sigma=1.0, observed=d["y"])
    return model


def normal_mixture_to_target(u: np.ndarray) -> np.ndarray:
    """T: the twin's unconstrained rows (n, 3) -> the target's (module docstring)."""
    return _to_target(u, **_NM)


def normal_mixture_log_jacobian(u: np.ndarray) -> np.ndarray:
    """log |det ∂T/∂u| per row: u_2, the ordered transform's (P's is 0)."""
    return _rows(u)[:, _NM["at"] + 1].copy()


def normal_mixture_permute(x: np.ndarray, perm) -> np.ndarray:
    """P_perm on the target's unconstrained rows (n, 3)."""
    return _permute(x, perm, _NM["pairs"], _NM["logit"])


# ------------------------------------------------------------------------------- low_dim_gauss_mix_collapse
_LD = {"at": 0, "pairs": ((0, 1), (2, 3)), "logit": 4}  # columns: mu_1, mu_2, log sigma_1, log sigma_2, logit(theta)


def low_dim_gauss_mix_collapse_ordered() -> pm.Model:
    """The twin of :func:`ckam_bench.posteriordb.mixtures.low_dim_gauss_mix_collapse`:
    ``ordered[2] mu``, the rest as in the target."""
    d = load_data("low_dim_gauss_mix_collapse")
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0, shape=2, transform=ordered, initval=np.array([-0.5, 0.5]))
        sigma = pm.HalfNormal("sigma", 2.0, shape=2)
        theta = pm.Beta("theta", 5.0, 5.0, default_transform=Interval(0.0, 1.0))
        pm.NormalMixture("y", w=pt.stack([theta, 1.0 - theta]), mu=mu, sigma=sigma, observed=d["y"])
    return model


def low_dim_gauss_mix_collapse_to_target(u: np.ndarray) -> np.ndarray:
    """T: the twin's unconstrained rows (n, 5) -> the target's (module docstring)."""
    return _to_target(u, **_LD)


def low_dim_gauss_mix_collapse_log_jacobian(u: np.ndarray) -> np.ndarray:
    """log |det ∂T/∂u| per row: u_2, the ordered transform's (P's is 0)."""
    return _rows(u)[:, _LD["at"] + 1].copy()


def low_dim_gauss_mix_collapse_permute(x: np.ndarray, perm) -> np.ndarray:
    """P_perm on the target's unconstrained rows (n, 5)."""
    return _permute(x, perm, _LD["pairs"], _LD["logit"])
