r"""The divergence-minimisation paper's test targets (Dharamshi, Ngo & Rosenthal; SPEC §5).

:class:`BananaMixture` — K "bananas" in :math:`\mathbb R^d`, each a Gaussian pushed through a
shear that bends coordinate :math:`a_k` along coordinate :math:`b_k` (curvature :math:`c_k`):

.. math::
    u^{(k)} = x + c_k (x_{b_k}^2 - 1)\,e_{a_k} \sim N(m_k, \mathrm{diag}(v_k)),\qquad
    \pi(x) = \sum_k w_k \prod_j N(u^{(k)}_j; m_{kj}, v_{kj}).

The shear has unit Jacobian, so each component is a normalised density. With
:math:`r_{kj} = (u^{(k)}_j - m_{kj})/v_{kj}` and responsibilities :math:`\rho_k(x)`,

.. math::
    \nabla\log\pi(x) = -\sum_k \rho_k(x)\,\big(r_k + 2 c_k x_{b_k} r_{k a_k} e_{b_k}\big).

Exact draws: a component, :math:`z \sim N(m_k, v_k)`, then :math:`x = z - c_k(z_{b_k}^2 - 1)e_{a_k}`.
Exact 1-D marginals (for the KL metric): a bent coordinate's CDF is
:math:`E_{z_b}\,\Phi((x + c(z_b^2 - 1) - m_a)/\sqrt{v_a})`, a 1-D integral done by the midpoint rule.
Exact moments per component: :math:`E[x_{a}] = m_{a} - c(v_{b} + m_{b}^2 - 1)`,
:math:`\mathrm{Var}[x_{a}] = v_{a} + c^2(2v_{b}^2 + 4m_{b}^2 v_{b})`, the other coordinates as z.
A component with :math:`c_k = 0` is a plain Gaussian.

Factories (densities as in the authors' ``Code/Targets/Examples.py``; read, not copied):

* :func:`banana_dm` — :math:`(x_1, x_2 + x_1^2 - 1) \sim N(0, \mathrm{diag}(9, 4))`; mean (0, −8).
* :func:`double_banana` — ½ of the above + ½ of :math:`(x_1, x_2 - x_1^2 + 1) \sim N((0,-50), \mathrm{diag}(9,4))`;
  mean (0, −25).
* :func:`basis4` — :math:`\tfrac18\sum_{i=1}^4 [N(10e_i, I_4) + N(-10e_i, I_4)]`; mean 0. A
  :class:`~ckam_bench.targets.mixtures.GaussianMixture` (exact marginals and cell masses) with a
  compiled gradient.
* :func:`banana_bunch` — 12 bananas in :math:`\mathbb R^3`: for each axis a, sign s = ±1 and each
  other axis b, :math:`u_a = x_a + s(x_b^2 - 1) \sim N(40s, 4)`, :math:`u_b \sim N(0, 9)`, the third
  coordinate N(0, 4); equal weights. Six modes at ±40 on the axes, 24 tails; mean 0 and
  :math:`E[x_j^2] = (4\cdot 1190 + 4\cdot 9 + 4\cdot 4)/12 = 401` (the authors' notebook uses 400).

The starts are the origin (the authors draw a start uniformly in [−5, 5]^d; a run's ``start=``
overrides it). Every target provides ``jit_log_density()`` and ``jit_log_density_and_grad()``
(:mod:`ckam_bench.jit`): compiled ``f(x)`` and ``f(x, grad_out)``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp, ndtr

from ckam_bench import jit
from ckam_bench.targets.base import Target
from ckam_bench.targets.mixtures import (GaussianMixture, _parameters_sha256, check_coordinate, check_dim,
                                         check_geometry)

_LOG_2PI = math.log(2.0 * math.pi)

try:
    import numba
except ImportError:  # numba is optional
    numba = None

_DENSITY_GRADS: dict = {}


def bind_density_and_grad(fn, *params):
    """The compiled ``(x, grad_out) ↦ fn(x, grad_out, params)`` (memoised on the parameter
    values, like :func:`ckam_bench.jit.bind_density`); None without numba."""
    if numba is None:
        return None
    key = (fn, tuple((np.asarray(p).dtype.str, np.shape(p), np.asarray(p).tobytes()) for p in params))
    compiled = _DENSITY_GRADS.get(key)
    if compiled is None:

        def log_density_and_grad(x, grad_out):
            return fn(x, grad_out, params)

        compiled = numba.njit(log_density_and_grad)
        _DENSITY_GRADS[key] = compiled
    return compiled


@jit.helper
def _banana_term(x, k, log_const, means, inv_var, axis, bend, curv):
    """log w_k + log N(u^(k); m_k, v_k) for component k."""
    s = 0.0
    a, b = axis[k], bend[k]
    shear = curv[k] * (x[b] * x[b] - 1.0)
    for j in range(x.shape[0]):
        u = x[j] + shear if j == a else x[j]
        diff = u - means[k, j]
        s += diff * diff * inv_var[k, j]
    return log_const[k] - 0.5 * s


@jit.helper
def _banana_log_density_grad(x, grad_out, params):
    """BananaMixture log density and gradient (into ``grad_out``), compiled; log-sum-exp over
    components. A non-finite x gives a non-finite value and gradient."""
    log_const, means, inv_var, axis, bend, curv = params
    n_comp, dim = means.shape
    top = -math.inf
    for k in range(n_comp):
        term = _banana_term(x, k, log_const, means, inv_var, axis, bend, curv)
        if term > top or k == 0:
            top = term
    for j in range(dim):
        grad_out[j] = 0.0
    if not math.isfinite(top):
        for j in range(dim):
            grad_out[j] = math.nan
        return top
    total = 0.0
    for k in range(n_comp):
        weight = math.exp(_banana_term(x, k, log_const, means, inv_var, axis, bend, curv) - top)
        if weight == 0.0:
            continue
        total += weight
        a, b = axis[k], bend[k]
        shear = curv[k] * (x[b] * x[b] - 1.0)
        r_a = 0.0
        for j in range(dim):
            u = x[j] + shear if j == a else x[j]
            r = (u - means[k, j]) * inv_var[k, j]
            if j == a:
                r_a = r
            grad_out[j] -= weight * r
        grad_out[b] -= weight * 2.0 * curv[k] * x[b] * r_a
    for j in range(dim):
        grad_out[j] /= total
    return top + math.log(total)


@jit.helper
def _banana_log_density(x, params):
    """BananaMixture log density compiled: log-sum-exp over the components (no gradient)."""
    log_const, means, inv_var, axis, bend, curv = params
    n_comp = means.shape[0]
    top = -math.inf
    for k in range(n_comp):
        term = _banana_term(x, k, log_const, means, inv_var, axis, bend, curv)
        if term > top or k == 0:
            top = term
    if not math.isfinite(top):
        return top
    total = 0.0
    for k in range(n_comp):
        total += math.exp(_banana_term(x, k, log_const, means, inv_var, axis, bend, curv) - top)
    return top + math.log(total)


def _check_components(means, variances, axis, bend, curvature, weights, dim):
    means = np.asarray(means, float)
    if means.ndim != 2 or means.shape[1] != dim or means.shape[0] == 0 or not np.all(np.isfinite(means)):
        raise ValueError(f"means must be a finite array of shape (K, {dim}), got shape {means.shape}")
    n_comp = means.shape[0]
    v = np.broadcast_to(np.asarray(variances, float), (n_comp, dim)).copy()
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise ValueError(f"variances must be finite and > 0, got {v.tolist()}")
    axis = np.broadcast_to(np.asarray(axis), (n_comp,)).astype(np.int64)
    bend = np.broadcast_to(np.asarray(bend), (n_comp,)).astype(np.int64)
    if np.any((axis < 0) | (axis >= dim) | (bend < 0) | (bend >= dim)) or np.any(axis == bend):
        raise ValueError(f"axis and bend must be distinct coordinates in [0, {dim}), got {axis.tolist()}, {bend.tolist()}")
    curv = np.broadcast_to(np.asarray(curvature, float), (n_comp,)).copy()
    if not np.all(np.isfinite(curv)):
        raise ValueError(f"curvature must be finite, got {curv.tolist()}")
    w = np.asarray(weights, float) if weights is not None else np.ones(n_comp)
    if w.shape != (n_comp,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be {n_comp} finite numbers > 0, got {np.ravel(w).tolist()}")
    return means, v, axis, bend, curv, w / w.sum()


def _normal_moments(m: float, v: float, n: int) -> list[float]:
    """E[z^0 … z^n] for z ~ N(m, v)."""
    out = [1.0, float(m)]
    for k in range(2, n + 1):
        out.append(m * out[k - 1] + (k - 1) * v * out[k - 2])
    return out[:n + 1]


class BananaMixture(Target):
    """Mixture of sheared Gaussians ("bananas"), see the module docstring.

    Parameters
    ----------
    means, variances : (K, dim) of the Gaussian u^(k) (variances may broadcast).
    axis, bend : (K,) coordinate bent (a_k) and the coordinate it bends along (b_k), a_k ≠ b_k.
    curvature : (K,) c_k (0 gives a Gaussian component).
    weights : (K,) positive weights (normalised), None for equal weights.
    dim : dimension d.
    start : default start (d,), None gives 0.
    box : plotting box (d, 2), None gives a box covering every component's bulk.
    name : short name (the YAML name).
    """

    def __init__(self, means, variances, axis, bend, curvature, dim: int, weights=None, start=None,
                 box=None, name: str = "banana_mixture"):
        dim = int(dim)
        if dim < 2:
            raise ValueError(f"dim must be >= 2, got {dim}")
        means, v, axis, bend, curv, w = _check_components(means, variances, axis, bend, curvature, weights, dim)
        self._identity = _parameters_sha256(weights=np.ones(len(w)) if weights is None else weights,
                                            means=means, variances=v, axis=axis, bend=bend, curvature=curv)
        self.weights, self.means, self.variances = w, means, v
        self.axis, self.bend, self.curvature = axis, bend, curv
        self._inv_var = 1.0 / v
        self._log_const = np.log(w) - 0.5 * np.sum(np.log(2.0 * math.pi * v), axis=1)
        self._comp_mean, self._comp_var = self._component_moments()
        if box is None:
            sd = np.sqrt(self._comp_var)
            box = np.stack([(self._comp_mean - 4.0 * sd).min(axis=0), (self._comp_mean + 4.0 * sd).max(axis=0)], axis=1)
        start, box = check_geometry(dim, start, box)
        super().__init__(dim, start, box)
        self.name = str(name)

    def describe(self) -> dict:
        """Name, dimension and ``parameters_sha256`` (weights as given, means, variances, axes,
        bends, curvatures; part of the reference id)."""
        return {**super().describe(), "parameters_sha256": self._identity}

    def _component_moments(self):
        """Per-component exact mean and variance of x, shape (K, d) each."""
        mean, var = self.means.copy(), self.variances.copy()
        for k in range(self.means.shape[0]):
            a, b, c = self.axis[k], self.bend[k], self.curvature[k]
            mb, vb = self.means[k, b], self.variances[k, b]
            mean[k, a] = self.means[k, a] - c * (vb + mb * mb - 1.0)
            var[k, a] = self.variances[k, a] + c * c * (2.0 * vb * vb + 4.0 * mb * mb * vb)
        return mean, var

    # ------------------------------------------------------------------ primitives
    def _terms(self, X: np.ndarray) -> np.ndarray:
        """(n, K) log w_k + log N(u^(k); m_k, v_k)."""
        X = np.atleast_2d(np.asarray(X, float))
        terms = np.empty((X.shape[0], self.means.shape[0]))
        for k in range(self.means.shape[0]):
            U = X.copy()
            a, b = self.axis[k], self.bend[k]
            U[:, a] += self.curvature[k] * (X[:, b] ** 2 - 1.0)
            Z = (U - self.means[k]) ** 2 * self._inv_var[k]
            terms[:, k] = self._log_const[k] - 0.5 * Z.sum(axis=1)
        return terms

    def _log_density_batch(self, X: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            terms = self._terms(X)
            return logsumexp(terms, axis=1)

    def _log_density(self, x: np.ndarray) -> float:
        return float(self._log_density_batch(np.asarray(x, float)[None, :])[0])

    def _grad_log_density(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, float)
        terms = self._terms(x[None, :])[0]
        rho = np.exp(terms - logsumexp(terms))
        grad = np.zeros(self.dim)
        for k in range(self.means.shape[0]):
            a, b, c = self.axis[k], self.bend[k], self.curvature[k]
            u = x.copy()
            u[a] += c * (x[b] ** 2 - 1.0)
            r = (u - self.means[k]) * self._inv_var[k]
            g = -r
            g[b] -= 2.0 * c * x[b] * r[a]
            grad += rho[k] * g
        return grad

    def _params(self):
        return (self._log_const, self.means, self._inv_var, self.axis, self.bend, self.curvature)

    def jit_log_density(self):
        """The compiled ``_log_density`` (uncounted)."""
        return jit.bind_density(_banana_log_density, *self._params())

    def jit_log_density_and_grad(self):
        """The compiled ``f(x, grad_out) -> log π(x)`` writing ∇log π(x) into ``grad_out``."""
        return bind_density_and_grad(_banana_log_density_grad, *self._params())

    # ------------------------------------------------------------------ capabilities
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = int(n)
        comp = rng.choice(self.weights.size, size=n, p=self.weights)
        z = self.means[comp] + np.sqrt(self.variances[comp]) * rng.standard_normal((n, self.dim))
        rows = np.arange(n)
        a, b = self.axis[comp], self.bend[comp]
        z[rows, a] -= self.curvature[comp] * (z[rows, b] ** 2 - 1.0)
        return z

    def _marginal(self, j: int, x: np.ndarray, cdf: bool) -> np.ndarray:
        """Σ_k w_k F_kj(x) (or the density): a normal for a coordinate that is not bent; for
        the bent one, E over z_b ~ N(m_b, v_b) of the normal at x + c(z_b² − 1), by the
        midpoint rule on ±12 sd of z_b (4001 nodes)."""
        j = check_coordinate(j, self.dim)
        x = np.asarray(x, float)
        out = np.zeros_like(x)
        for k in range(self.means.shape[0]):
            m, v = self.means[k, j], self.variances[k, j]
            if j == self.axis[k] and self.curvature[k] != 0.0:
                b = self.bend[k]
                u, du = np.linspace(-12.0, 12.0, 4001, retstep=True)
                zb = self.means[k, b] + math.sqrt(self.variances[k, b]) * u
                weight = np.exp(-0.5 * u * u) * du / math.sqrt(2.0 * math.pi)
                shifted = x[..., None] + self.curvature[k] * (zb**2 - 1.0)
                z = (shifted - m) / math.sqrt(v)
                inner = ndtr(z) if cdf else np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi * v)
                out += self.weights[k] * (inner @ weight)
            else:
                z = (x - m) / math.sqrt(v)
                out += self.weights[k] * (ndtr(z) if cdf else np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi * v))
        return out

    def marginal_cdf(self, j: int, x: np.ndarray) -> np.ndarray:
        return np.clip(self._marginal(j, x, cdf=True), 0.0, 1.0)

    def marginal_logpdf(self, j: int, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self._marginal(j, x, cdf=False))

    @property
    def mean(self) -> np.ndarray:
        return self.weights @ self._comp_mean

    @property
    def second_moment(self) -> np.ndarray:
        """Exact E[X²] per coordinate."""
        return self.weights @ (self._comp_var + self._comp_mean**2)

    @property
    def variance(self) -> np.ndarray:
        return self.second_moment - self.mean**2

    @property
    def fourth_moment(self) -> np.ndarray:
        """Exact E[X⁴] per coordinate: Σ_k w_k E_k[x_j⁴]. A coordinate that component k does not
        bend is N(m, v); the bent one is x_a = z_a + y with y = −c (z_b² − 1), z_a ⊥ z_b, so
        E[x_a⁴] = Σ_i C(4, i) E[z_a^i] E[y^(4−i)] and E[y^n] = (−c)^n Σ_l C(n, l) (−1)^(n−l) E[z_b^(2l)]
        (Gaussian raw moments to order 8 by M_n = m M_(n−1) + (n−1) v M_(n−2))."""
        out = np.zeros(self.dim)
        for k in range(self.means.shape[0]):
            fourth = np.array([_normal_moments(m, v, 4)[4] for m, v in zip(self.means[k], self.variances[k])])
            a, b, c = self.axis[k], self.bend[k], self.curvature[k]
            if c != 0.0:
                za = _normal_moments(self.means[k, a], self.variances[k, a], 4)
                zb = _normal_moments(self.means[k, b], self.variances[k, b], 8)
                y = [(-c) ** n * sum(math.comb(n, l) * (-1.0) ** (n - l) * zb[2 * l] for l in range(n + 1))
                     for n in range(5)]
                fourth[a] = sum(math.comb(4, i) * za[i] * y[4 - i] for i in range(5))
            out += self.weights[k] * fourth
        return out

    def ckam_fourth_moment(self) -> np.ndarray:
        return self.fourth_moment

    def ckam_mixture(self) -> tuple:
        """The components (weights, means, variances), for the stationarity check's mode occupancy."""
        return self.weights, self.means, self.variances



class Basis4(GaussianMixture):
    """:class:`GaussianMixture` with a compiled density-and-gradient (every component a
    banana of curvature 0, through :class:`BananaMixture`'s compiled helper)."""

    def _params(self):
        k = self.n_components
        log_const = np.log(self.weights) - 0.5 * np.sum(np.log(2.0 * math.pi * self.variances), axis=1)
        zeros = np.zeros(k, dtype=np.int64)
        return (log_const, self.means, 1.0 / self.variances, zeros, zeros + 1, np.zeros(k))

    def jit_log_density_and_grad(self):
        """The compiled ``f(x, grad_out) -> log π(x)`` writing ∇log π(x) into ``grad_out``."""
        return bind_density_and_grad(_banana_log_density_grad, *self._params())

    @property
    def second_moment(self) -> np.ndarray:
        """Exact E[X²] per coordinate."""
        return self.variance + self.mean**2


# ---------------------------------------------------------------------------- factories
def banana_dm(dim: int = 2) -> BananaMixture:
    """(x₁, x₂ + x₁² − 1) ~ N(0, diag(9, 4)); mean (0, −8)."""
    check_dim("banana_dm", dim, 2)
    return BananaMixture(means=[[0.0, 0.0]], variances=[[9.0, 4.0]], axis=[1], bend=[0], curvature=[1.0],
                         dim=2, start=[0.0, 0.0], box=[[-12.0, 12.0], [-60.0, 10.0]], name="banana_dm")


def double_banana(dim: int = 2) -> BananaMixture:
    """½ banana_dm + ½ (x₁, x₂ − x₁² + 1) ~ N((0, −50), diag(9, 4)); mean (0, −25)."""
    check_dim("double_banana", dim, 2)
    return BananaMixture(means=[[0.0, 0.0], [0.0, -50.0]], variances=[[9.0, 4.0], [9.0, 4.0]], axis=[1, 1],
                         bend=[0, 0], curvature=[1.0, -1.0], dim=2, start=[0.0, 0.0],
                         box=[[-12.0, 12.0], [-60.0, 10.0]], name="double_banana")


def basis4(separation: float = 10.0, dim: int = 4) -> Basis4:
    """(1/8) Σ_i [N(s e_i, I₄) + N(−s e_i, I₄)], s = ``separation`` (10 in the paper)."""
    check_dim("basis4", dim, 4)
    separation = float(separation)
    if not (math.isfinite(separation) and separation > 0):
        raise ValueError(f"separation must be a finite number > 0, got {separation}")
    means = np.concatenate([separation * np.eye(4), -separation * np.eye(4)])
    return Basis4(weights=np.ones(8), means=means, variances=1.0, dim=4, start=np.zeros(4),
                  box=[[-separation - 6.0, separation + 6.0]] * 4, name="basis4")


def banana_bunch(offset: float = 40.0, dim: int = 3) -> BananaMixture:
    """The 12-banana mixture in 3-D (module docstring); modes at ±``offset`` on each axis."""
    check_dim("banana_bunch", dim, 3)
    offset = float(offset)
    if not (math.isfinite(offset) and offset > 0):
        raise ValueError(f"offset must be a finite number > 0, got {offset}")
    means, variances, axis, bend, curv = [], [], [], [], []
    for a in range(3):
        for sign in (1.0, -1.0):
            for b in range(3):
                if b == a:
                    continue
                m = np.zeros(3)
                m[a] = sign * offset
                v = np.full(3, 4.0)
                v[b] = 9.0
                means.append(m)
                variances.append(v)
                axis.append(a)
                bend.append(b)
                curv.append(sign)
    return BananaMixture(means=means, variances=variances, axis=axis, bend=bend, curvature=curv, dim=3,
                         start=np.zeros(3), box=[[-offset - 20.0, offset + 20.0]] * 3, name="banana_bunch")
