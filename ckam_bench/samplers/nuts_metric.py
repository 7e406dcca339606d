r"""The low-rank metric of NUTS (:mod:`ckam_bench.samplers.nuts`), applied in transformed
coordinates at O(d k) per leapfrog step.

The inverse metric is diagonal-plus-low-rank,

.. math::
    M^{-1} = \operatorname{diag}(\sigma)\,\bigl(I + U(\Lambda - I)U^\top\bigr)\,\operatorname{diag}(\sigma),

σ ∈ ℝᵈ positive, U ∈ ℝ^{d×k} with orthonormal columns u₁ … u_k, Λ = diag(λ₁ … λ_k) positive.
It factors as M⁻¹ = T Tᵀ with

.. math::
    T = \operatorname{diag}(\sigma)\,\bigl(I + U(\Lambda^{1/2} - I)U^\top\bigr), \qquad
    T^{-1} = \bigl(I + U(\Lambda^{-1/2} - I)U^\top\bigr)\operatorname{diag}(\sigma)^{-1}

(the columns of U are orthonormal, so (I + U A Uᵀ)(I + U B Uᵀ) = I + U(A + B + AB)Uᵀ). HMC on
π with kinetic energy ½pᵀM⁻¹p is HMC with the identity metric on y = T⁻¹x, whose density is
π(Ty)·|T| and gradient Tᵀ∇log π(Ty): so the tree runs unchanged on y with M⁻¹ = I, and each
leapfrog step maps its position to x = Ty for the evaluation and the gradient back by Tᵀ. Each
map is σ-scaling plus k rank-one updates uᵢ(uᵢ·v), 2dk multiply-adds, never a d × d matrix.
Applied one rank-one factor at a time (I + aᵢuᵢuᵢᵀ, in place): the factors commute because
the uᵢ are orthonormal, so the product is the map above. Momenta are drawn as p ~ N(0, I) in y.

The metric is one array (``metric``, shape (6 + k, d)), the rows:

* ``ONES`` — ones: the identity metric of y (the tree's kinetic energy and U-turn checks);
* ``SIGMA`` — σ;
* ``A``, ``B`` — √λᵢ − 1 and 1/√λᵢ − 1 in their first k entries (zero after);
* ``X``, ``G`` — work rows: the position x = Ty of an evaluation and its gradient in x;
* ``U`` … — u₁ … u_k, one row each.

k = 0 is the diagonal metric diag(σ²) in the same coordinates (the low-rank estimator's
metric before its first estimate).
"""

from __future__ import annotations

import math

import numpy as np

from ckam_bench import jit

ONES, SIGMA, A, B, X, G, U = range(7)


@jit.jitable
def build(sigma, values, vectors):
    """The metric array of σ (d,), eigenvalues λ (k,) and eigenvectors (d, k)."""
    d, k = sigma.shape[0], values.shape[0]
    metric = np.zeros((U + k, d))
    for j in range(d):
        metric[ONES, j] = 1.0
        metric[SIGMA, j] = sigma[j]
    for i in range(k):
        root = math.sqrt(values[i])
        metric[A, i] = root - 1.0
        metric[B, i] = 1.0 / root - 1.0
        for j in range(d):
            metric[U + i, j] = vectors[j, i]
    return metric


def pack(sigma, values=None, vectors=None) -> np.ndarray:
    """:func:`build` from array-likes (no eigenpairs: k = 0)."""
    sigma = np.asarray(sigma, dtype=float)
    if values is None:
        values, vectors = np.zeros(0), np.zeros((sigma.shape[0], 0))
    return build(sigma, np.asarray(values, dtype=float), np.asarray(vectors, dtype=float))


def inverse_metric(metric: np.ndarray) -> np.ndarray:
    """The dense M⁻¹ = T Tᵀ of a metric array, (d, d) (for tests and reports)."""
    metric = np.asarray(metric, dtype=float)
    k = metric.shape[0] - U
    vectors = metric[U:].T
    lam = (metric[A, :k] + 1.0) ** 2
    inner = np.eye(metric.shape[1]) + vectors @ np.diag(lam - 1.0) @ vectors.T
    return metric[SIGMA][:, None] * inner * metric[SIGMA][None, :]


@jit.jitable
def _rank_one_updates(metric, row, v):
    """v ← (I + Σᵢ cᵢuᵢuᵢᵀ)v in place, cᵢ from ``metric[row]`` (√λ − 1 or 1/√λ − 1)."""
    d = v.shape[0]
    for i in range(metric.shape[0] - U):  # rows indexed in place: a view per row costs a reference count
        dot = 0.0
        for j in range(d):
            dot += metric[U + i, j] * v[j]
        dot *= metric[row, i]
        for j in range(d):
            v[j] += dot * metric[U + i, j]


@jit.jitable
def to_x(metric, y, x):
    """x = T y (x and y distinct)."""
    for j in range(y.shape[0]):
        x[j] = y[j]
    _rank_one_updates(metric, A, x)
    for j in range(x.shape[0]):
        x[j] *= metric[SIGMA, j]


@jit.jitable
def grad_to_y(metric, gx, gy):
    """gy = Tᵀ gx, the gradient in y of the gradient gx in x (distinct arrays)."""
    for j in range(gx.shape[0]):
        gy[j] = metric[SIGMA, j] * gx[j]
    _rank_one_updates(metric, A, gy)


@jit.jitable
def to_y(metric, x, y):
    """y = T⁻¹ x (distinct arrays)."""
    for j in range(x.shape[0]):
        y[j] = x[j] / metric[SIGMA, j]
    _rank_one_updates(metric, B, y)


@jit.jitable
def grad_to_x(metric, gy, gx):
    """gx = T⁻ᵀ gy (distinct arrays)."""
    for j in range(gy.shape[0]):
        gx[j] = gy[j]
    _rank_one_updates(metric, B, gx)
    for j in range(gx.shape[0]):
        gx[j] /= metric[SIGMA, j]


@jit.jitable
def leapfrog(f, y, p, gy, eps, metric):
    """One leapfrog step in y with the identity metric (p half step, y full step, p half step),
    the density evaluated at x = Ty (in the metric's work rows); returns log π(Ty), leaves
    Tᵀ∇log π(Ty) in gy."""
    half = 0.5 * eps
    for j in range(y.shape[0]):
        p[j] += half * gy[j]
        y[j] += eps * p[j]
    x, gx = metric[X], metric[G]
    to_x(metric, y, x)
    logp = f(x, gx)
    grad_to_y(metric, gx, gy)
    for j in range(y.shape[0]):
        p[j] += half * gy[j]
    return logp


def evaluate(f, metric, y, gy):
    """log π(Ty) and gy = Tᵀ∇log π(Ty), for a Python density ``f`` (the compiled steps):
    the two maps are compiled helpers, the evaluation a Python call."""
    _TO_X(metric, y, metric[X])
    logp = f(metric[X], metric[G])
    _GRAD_TO_Y(metric, metric[G], gy)
    return logp


_TO_X, _GRAD_TO_Y = jit.helper(to_x), jit.helper(grad_to_y)
