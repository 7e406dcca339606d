r"""Gaussian mixtures with diagonal covariances: the cKAM paper's targets.

:class:`GaussianMixture` — K components with diagonal covariances,

.. math::
    \pi(x) = \sum_k w_k \prod_j N(x_j; \mu_{kj}, v_{kj}),

    \log\pi(x) = \operatorname{logsumexp}_k \big(c_k - \tfrac12 \sum_j (x_j-\mu_{kj})^2 / v_{kj}\big),
    \quad c_k = \log w_k - \tfrac12 \sum_j \log(2\pi v_{kj}),

    \nabla\log\pi(x) = -\sum_k r_k(x)\,(x-\mu_k)/v_k, \quad r_k = \text{softmax}_k(\cdot)
    \ \text{(the responsibilities)}.

Exact draws (component, then a normal), exact 1-D marginals (1-D mixtures
:math:`\sum_k w_k N(\mu_{kj}, v_{kj})`), mean :math:`\sum_k w_k\mu_k` and variance
:math:`\sum_k w_k(v_k + (\mu_k - m)^2)`. Grid cells get exact masses: each component's cell mass is
a product of 1-D normal CDF differences.

:class:`ProductMixture` — d independent coordinates, each the same 1-D mixture
:math:`\sum_k w_k N(\mu_k, v_k)`, so :math:`\log\pi(x) = \sum_j \operatorname{logsumexp}_k(\dots)`:
:math:`K^d` modes on a grid, evaluated in O(dK).

Factories (the cKAM paper's definitions; see SPEC §5):

* :func:`bimodal` — :math:`\tfrac12 N((-8,0), 0.5I) + \tfrac12 N((8,0), 2I)`, start (−8, 0),
  box [−17, 17]×[−12, 12]. The authors' code mis-normalises to weights ≈ 1:2; the weights are an
  argument, defaulting to the paper's ½, ½.
* :func:`gmm2d` — :math:`\tfrac15\sum_{i=1}^5 N(2.5(i-1)(1,1), \sqrt{i}\,I)`, start (0, 0), box
  [−7, 17]² (the mass outside it is below 1e-5). ``variance="authors"`` uses :math:`(i/2)I`, what the
  authors' ``i**1/2`` computes.
* :func:`gmm32` — 32 coordinates, each :math:`\tfrac15\sum_k N(\mu_k, 15)`,
  :math:`\mu_k \in \{-30,-15,0,15,30\}` (the paper prints "{−30, 15, 0, 15, 30}", a typo); start 0;
  box [−50, 50] per coordinate.

All densities are normalised. Both classes provide ``jit_log_density()`` (:mod:`ckam_bench.jit`):
the same log density compiled with numba, for the samplers' compiled loops.
"""

from __future__ import annotations

import math
from functools import reduce

import numpy as np
from scipy.special import logsumexp, ndtr

from ckam_bench import jit
from ckam_bench.data import array_sha256
from ckam_bench.targets.base import Target

_LOG_2PI = math.log(2.0 * math.pi)
_PYTHON_LOOP_MAX = 40
_TINY, _HUGE = 1e-280, 1e280


# ---------------------------------------------------------------------------- helpers
def check_dim(name: str, dim, expected: int) -> None:
    """Raise ValueError unless a factory's ``dim`` equals the target's fixed dimension."""
    if int(dim) != expected:
        raise ValueError(f"dim must be {expected} for target {name!r}, got {dim}")


def check_geometry(dim: int, start, box) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Validate a start point (d,) and a box (d, 2) with low < high; None passes through."""
    if start is not None:
        start = np.asarray(start, float)
        if start.shape != (dim,) or not np.all(np.isfinite(start)):
            raise ValueError(f"start must be a finite array of shape ({dim},), got {start.tolist()}")
    if box is not None:
        box = np.asarray(box, float)
        if box.shape != (dim, 2) or not np.all(np.isfinite(box)) or np.any(box[:, 0] >= box[:, 1]):
            raise ValueError(f"box must be finite with shape ({dim}, 2) and low < high, got {box.tolist()}")
    return start, box


def normal_interval_mass(edges: np.ndarray, mean, sd) -> np.ndarray:
    """P(e_i < X < e_{i+1}) for X ~ N(mean, sd²), accurate in both tails.

    Works along the last axis; ``mean`` and ``sd`` broadcast against ``edges`` (e.g. shape
    (q, 1) for q different normals). Left of the mean the lower-tail CDF is differenced, right
    of it the upper tail, so a cell far out in a tail keeps its relative precision.
    """
    z = (np.asarray(edges, float) - mean) / sd
    lower, upper = ndtr(z), ndtr(-z)
    right_of_mean = z[..., :-1] >= 0.0
    return np.where(right_of_mean, upper[..., :-1] - upper[..., 1:], lower[..., 1:] - lower[..., :-1])


def _positive_dim(dim) -> int:
    dim = int(dim)
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    return dim


def _positive_variances(name: str, v: np.ndarray, shape: tuple) -> np.ndarray:
    """``v`` broadcast to ``shape`` (a copy), checked finite and > 0."""
    v = np.broadcast_to(v, shape).copy()
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {v.tolist()}")
    return v


def _positive_weights(weights, n_components: int) -> np.ndarray:
    """Validate K positive weights and normalise them to sum 1."""
    w = np.asarray(weights, float)
    if w.shape != (n_components,):
        raise ValueError(f"weights must have shape ({n_components},), got {w.tolist()}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be finite and > 0, got {w.tolist()}")
    return w / w.sum()


def check_coordinate(j, dim: int) -> int:
    """Validate a coordinate index 0 <= j < dim."""
    if not 0 <= int(j) < dim:
        raise ValueError(f"j must be in [0, {dim}), got {j}")
    return int(j)


def _parameters_sha256(**arrays) -> str:
    """First 16 hex digits of the sha256 of a target's parameters as given (before weights are
    normalised: numbers from a config or a factory, exact on every CPU), labelled by name."""
    return array_sha256([(name, np.asarray(value, float)) for name, value in arrays.items()])[:16]


def _six_sd_box(means: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """Per coordinate, the hull of every component's mean ± 6 sd; means, sd shape (K, d)."""
    return np.stack([(means - 6.0 * sd).min(axis=0), (means + 6.0 * sd).max(axis=0)], axis=1)


def _outer_product(factors: list[np.ndarray]) -> np.ndarray:
    return reduce(np.multiply.outer, factors)


def grid_edges(edges, dim: int) -> list[np.ndarray]:
    """Validate ``dim`` arrays of strictly increasing bin edges."""
    edges = [np.asarray(e, float) for e in edges]
    if len(edges) != dim or any(e.ndim != 1 or e.size < 2 or np.any(np.diff(e) <= 0) for e in edges):
        raise ValueError(f"edges must hold {dim} increasing 1-D arrays of at least 2 edges")
    return edges


# ---------------------------------------------------------------------------- compiled densities
@jit.helper
def _mixture_term(x, log_const, means, half_inv_var, k):
    """c_k − Σ_j (x_j − μ_kj)² h_kj (h = 1/(2v)), summed in order as in _component_terms."""
    s = 0.0
    for j in range(x.shape[0]):
        diff = x[j] - means[k, j]
        s += diff * diff * half_inv_var[k, j]
    return log_const[k] - s


@jit.helper
def _mixture_log_density(x, params):
    """GaussianMixture._log_density compiled: logsumexp over k of the component terms (max as
    Python's ``max``; terms recomputed in the second pass instead of stored: no allocation)."""
    log_const, means, half_inv_var = params
    n_comp = means.shape[0]
    top = _mixture_term(x, log_const, means, half_inv_var, 0)
    for k in range(1, n_comp):
        term = _mixture_term(x, log_const, means, half_inv_var, k)
        if term > top:
            top = term
    if top == -math.inf:
        return top
    total = 0.0
    for k in range(n_comp):
        total += math.exp(_mixture_term(x, log_const, means, half_inv_var, k) - top)
    return top + math.log(total)


@jit.helper
def _coordinate_density(xj, means, half_inv_var, scaled_weights):
    """Σ_k w_k N(x_j; μ_k, v_k) for one coordinate."""
    s = 0.0
    for k in range(means.shape[0]):
        diff = xj - means[k]
        s += math.exp(-(diff * diff) * half_inv_var[k]) * scaled_weights[k]
    return s


@jit.helper
def _product_log_density(x, params):
    """ProductMixture._log_density compiled: the product of the coordinate densities while none
    underflows (else the sum of their logs), else the sum of per-coordinate log-sum-exps
    (non-finite x: −‖x‖²). Nothing is stored: the rare paths recompute what they need."""
    means, half_inv_var, scaled_weights, log_const = params
    dim, n_comp = x.shape[0], means.shape[0]
    fast = True
    total = 1.0
    for j in range(dim):
        dens = _coordinate_density(x[j], means, half_inv_var, scaled_weights)
        fast = fast and dens > _TINY
        total *= dens
    if fast:
        if _TINY < total < _HUGE:
            return math.log(total)
        out = 0.0
        for j in range(dim):
            out += math.log(_coordinate_density(x[j], means, half_inv_var, scaled_weights))
        return out
    norm2 = 0.0
    for j in range(dim):
        norm2 += x[j] * x[j]
    if not math.isfinite(norm2):
        return -norm2
    out = 0.0
    for j in range(dim):
        top = -math.inf
        for k in range(n_comp):
            diff = x[j] - means[k]
            top = max(top, log_const[k] - diff * diff * half_inv_var[k])
        total = 0.0
        for k in range(n_comp):
            diff = x[j] - means[k]
            total += math.exp(log_const[k] - diff * diff * half_inv_var[k] - top)
        out += top + math.log(total)
    return out


# ---------------------------------------------------------------------------- classes
class GaussianMixture(Target):
    """Mixture of K Gaussians with diagonal covariances.

    Parameters
    ----------
    weights : (K,) positive weights; normalised to sum 1 (so ``[1, 2]`` means ⅓, ⅔).
    means : (K, dim) component means.
    variances : (K, dim) per-coordinate variances, or (K,) one isotropic variance per
        component, or a scalar shared by all; all > 0.
    dim : dimension d.
    start : default start (d,); None gives 0.
    box : plotting/KL box (d, 2); None gives the hull of the components' means ± 6 sd.
    name : short name (the YAML name).
    """

    def jax_log_density(self):
        """This density in JAX for the peer samplers (:func:`.jax_densities.mixture`)."""
        from ckam_bench.targets import jax_densities

        return jax_densities.mixture(self)

    def __init__(self, weights, means, variances, dim: int, start=None, box=None, name: str = "gmm"):
        dim = _positive_dim(dim)
        means = np.asarray(means, float)
        if means.ndim != 2 or means.shape[1] != dim or means.shape[0] == 0:
            raise ValueError(f"means must have shape (K, {dim}), got shape {means.shape}")
        if not np.all(np.isfinite(means)):
            raise ValueError("means must be finite")
        n_comp = means.shape[0]
        w = _positive_weights(weights, n_comp)
        v = np.asarray(variances, float)
        self._identity = _parameters_sha256(weights=weights, means=means, variances=v)
        if v.shape == (n_comp,):
            v = v[:, None]
        if v.shape not in ((), (n_comp, 1), (n_comp, dim)):
            raise ValueError(
                f"variances must be a scalar, shape ({n_comp},) or ({n_comp}, {dim}), got shape {v.shape}"
            )
        v = _positive_variances("variances", v, (n_comp, dim))
        if box is None:
            box = _six_sd_box(means, np.sqrt(v))
        start, box = check_geometry(dim, start, box)
        super().__init__(dim, start, box)
        self.name = str(name)
        self.weights, self.means, self.variances = w, means, v
        self.n_components = n_comp
        self._sd = np.sqrt(v)
        self._inv_var = 1.0 / v
        self._half_inv_var = 0.5 / v
        self._log_const = np.log(w) - 0.5 * np.sum(np.log(v) + _LOG_2PI, axis=1)
        # Single-point evaluations loop over components in Python when K·d is small (a few
        # µs instead of the ~15 µs of numpy's per-call overhead), in numpy otherwise.
        self._small = n_comp * dim <= _PYTHON_LOOP_MAX
        self._components = list(zip(self._log_const.tolist(), means.tolist(), self._half_inv_var.tolist()))

    def describe(self) -> dict:
        """Name, dimension and ``parameters_sha256``: the sha256 of the weights, means and
        variances as given (:func:`_parameters_sha256`; part of the reference id)."""
        return {**super().describe(), "parameters_sha256": self._identity}

    # ------------------------------------------------------------------ primitives
    def _component_terms(self, x: np.ndarray) -> list[float]:
        """c_k − ½ Σ_j (x_j − μ_kj)²/v_kj for each k, with Python floats (fast for small K·d)."""
        xs = x.tolist()
        return [
            c - sum((xi - mi) * (xi - mi) * hi for xi, mi, hi in zip(xs, mu, h))
            for c, mu, h in self._components
        ]

    def _log_density(self, x: np.ndarray) -> float:
        x = np.asarray(x, float)
        if self._small:
            terms = self._component_terms(x)
            top = max(terms)
            if top == -math.inf:
                return top
            return top + math.log(sum([math.exp(q - top) for q in terms]))
        diff = x - self.means
        terms = self._log_const - np.sum(diff * diff * self._half_inv_var, axis=1)
        top = terms.max()
        if top == -math.inf:
            return -math.inf
        return float(top + math.log(np.exp(terms - top).sum()))

    def jit_log_density(self):
        """The compiled ``_log_density`` (uncounted; see :mod:`ckam_bench.jit`)."""
        return jit.bind_density(_mixture_log_density, self._log_const, self.means, self._half_inv_var)

    def _log_density_batch(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, float)
        terms = np.empty((X.shape[0], self.n_components))
        for k in range(self.n_components):
            diff = X - self.means[k]
            terms[:, k] = self._log_const[k] - (diff * diff) @ self._half_inv_var[k]
        return logsumexp(terms, axis=1)

    def _grad_log_density(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, float)
        if self._small:
            terms = self._component_terms(x)
            top = max(terms)
            resp = [math.exp(q - top) for q in terms]
            scale = -2.0 / sum(resp)
            xs = x.tolist()
            return np.array(
                [
                    scale * sum(r * (xs[j] - mu[j]) * h[j] for r, (_, mu, h) in zip(resp, self._components))
                    for j in range(self.dim)
                ]
            )
        diff = x - self.means
        terms = self._log_const - np.sum(diff * diff * self._half_inv_var, axis=1)
        resp = np.exp(terms - terms.max())
        resp /= resp.sum()
        return -(resp @ (diff * self._inv_var))

    # ------------------------------------------------------------------ capabilities
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        comp = rng.choice(self.n_components, size=int(n), p=self.weights)
        return self.means[comp] + self._sd[comp] * rng.standard_normal((int(n), self.dim))

    def marginal_logpdf(self, j: int, x: np.ndarray) -> np.ndarray:
        j = check_coordinate(j, self.dim)
        x = np.asarray(x, float)[..., None]
        mu, var = self.means[:, j], self.variances[:, j]
        terms = np.log(self.weights) - 0.5 * (np.log(var) + _LOG_2PI) - 0.5 * (x - mu) ** 2 / var
        return logsumexp(terms, axis=-1)

    def marginal_cdf(self, j: int, x: np.ndarray) -> np.ndarray:
        j = check_coordinate(j, self.dim)
        z = (np.asarray(x, float)[..., None] - self.means[:, j]) / self._sd[:, j]
        return ndtr(z) @ self.weights

    @property
    def mean(self) -> np.ndarray:
        return self.weights @ self.means

    @property
    def variance(self) -> np.ndarray:
        return self.weights @ (self.variances + (self.means - self.mean) ** 2)

    def grid_mass(self, edges: list[np.ndarray]) -> np.ndarray:
        """Exact cell masses Σ_k w_k Π_j P_kj(cell), normalised to sum 1 over the grid."""
        edges = grid_edges(edges, self.dim)
        mass = sum(
            w * _outer_product([normal_interval_mass(e, m, sd) for e, m, sd in zip(edges, mu, sds)])
            for w, mu, sds in zip(self.weights, self.means, self._sd)
        )
        return mass / mass.sum()

    def ckam_mixture(self) -> tuple:
        """The components (weights, means, variances), for the stationarity check's mode occupancy."""
        return self.weights, self.means, self.variances



class ProductMixture(Target):
    """d independent coordinates, each the 1-D mixture Σ_k w_k N(μ_k, v_k).

    Parameters
    ----------
    weights : (K,) positive weights; normalised to sum 1.
    means : (K,) component means of one coordinate.
    variance : scalar variance shared by the components, or (K,) one per component; > 0.
    dim : dimension d.
    start : default start (d,); None gives 0.
    box : plotting/KL box (d, 2); None gives the hull of the components' means ± 6 sd.
    name : short name (the YAML name).
    """

    def jax_log_density(self):
        """This density in JAX for the peer samplers (:func:`.jax_densities.product_mixture`)."""
        from ckam_bench.targets import jax_densities

        return jax_densities.product_mixture(self)

    def __init__(self, weights, means, variance, dim: int, start=None, box=None, name: str = "product_mixture"):
        dim = _positive_dim(dim)
        means = np.asarray(means, float)
        if means.ndim != 1 or means.size == 0 or not np.all(np.isfinite(means)):
            raise ValueError(f"means must be a finite non-empty 1-D array, got {means.tolist()}")
        n_comp = means.size
        w = _positive_weights(weights, n_comp)
        v = np.asarray(variance, float)
        self._identity = _parameters_sha256(weights=weights, means=means, variance=v)
        if v.ndim > 1 or (v.ndim == 1 and v.size != n_comp):
            raise ValueError(f"variance must be a scalar or shape ({n_comp},), got shape {v.shape}")
        v = _positive_variances("variance", v, (n_comp,))
        if box is None:
            box = np.tile(_six_sd_box(means[:, None], np.sqrt(v)[:, None]), (dim, 1))
        start, box = check_geometry(dim, start, box)
        super().__init__(dim, start, box)
        self.name = str(name)
        self.weights, self.means, self.variances = w, means, v
        self.n_components = n_comp
        self._sd = np.sqrt(v)
        self._inv_var = 1.0 / v
        self._half_inv_var = 0.5 / v
        self._log_const = np.log(w) - 0.5 * (np.log(v) + _LOG_2PI)
        self._scaled_weights = np.exp(self._log_const)

    def describe(self) -> dict:
        """Name, dimension and ``parameters_sha256``: the sha256 of the weights, means and
        variances as given (:func:`_parameters_sha256`; part of the reference id)."""
        return {**super().describe(), "parameters_sha256": self._identity}

    def _terms(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per coordinate and component: log w_k N(x_j; μ_k, v_k), shape (..., d, K)."""
        diff = np.asarray(X, float)[..., None] - self.means
        return self._log_const - diff * diff * self._half_inv_var, diff

    def _log_density(self, x: np.ndarray) -> float:
        x = np.asarray(x, float)
        diff = x[:, None] - self.means
        # Fast path while every coordinate density is a normal float (no underflow): the log
        # of their product (or the sum of their logs if the product leaves the float range).
        # Far tails and non-finite points take the log-sum-exp path.
        dens = np.exp(-(diff * diff) * self._half_inv_var) @ self._scaled_weights
        if dens.min() > _TINY:
            total = float(dens.prod())
            return math.log(total) if _TINY < total < _HUGE else float(np.log(dens).sum())
        norm2 = float(x @ x)
        if not math.isfinite(norm2):  # an infinite coordinate gives -inf, a NaN gives NaN
            return -norm2
        terms = self._log_const - diff * diff * self._half_inv_var
        top = terms.max(axis=1)
        return float(np.sum(top + np.log(np.exp(terms - top[:, None]).sum(axis=1))))

    def jit_log_density(self):
        """The compiled ``_log_density`` (uncounted; see :mod:`ckam_bench.jit`)."""
        return jit.bind_density(
            _product_log_density, self.means, self._half_inv_var, self._scaled_weights, self._log_const
        )

    def _log_density_batch(self, X: np.ndarray) -> np.ndarray:
        terms, _ = self._terms(X)
        return logsumexp(terms, axis=-1).sum(axis=-1)

    def _grad_log_density(self, x: np.ndarray) -> np.ndarray:
        diff = np.asarray(x, float)[:, None] - self.means
        weighted = np.exp(-(diff * diff) * self._half_inv_var) * self._scaled_weights
        dens = weighted.sum(axis=1)
        if dens.min() > _TINY:  # fast path, as in _log_density
            return -((weighted * diff) @ self._inv_var) / dens
        terms = self._log_const - diff * diff * self._half_inv_var
        resp = np.exp(terms - terms.max(axis=1, keepdims=True))
        resp /= resp.sum(axis=1, keepdims=True)
        return -(resp * diff) @ self._inv_var

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        comp = rng.choice(self.n_components, size=(int(n), self.dim), p=self.weights)
        return self.means[comp] + self._sd[comp] * rng.standard_normal((int(n), self.dim))

    def marginal_logpdf(self, j: int, x: np.ndarray) -> np.ndarray:
        check_coordinate(j, self.dim)
        x = np.asarray(x, float)[..., None]
        return logsumexp(self._log_const - (x - self.means) ** 2 * self._half_inv_var, axis=-1)

    def marginal_cdf(self, j: int, x: np.ndarray) -> np.ndarray:
        check_coordinate(j, self.dim)
        return ndtr((np.asarray(x, float)[..., None] - self.means) / self._sd) @ self.weights

    @property
    def mean(self) -> np.ndarray:
        return np.full(self.dim, self.weights @ self.means)

    @property
    def variance(self) -> np.ndarray:
        m = self.weights @ self.means
        return np.full(self.dim, self.weights @ (self.variances + (self.means - m) ** 2))

    def grid_mass(self, edges: list[np.ndarray]) -> np.ndarray:
        """Exact cell masses: an outer product of 1-D mixture masses, normalised to sum 1."""
        edges = grid_edges(edges, self.dim)
        factors = []
        for e in edges:
            m = sum(w * normal_interval_mass(e, mu, sd) for w, mu, sd in zip(self.weights, self.means, self._sd))
            factors.append(m / m.sum())
        return _outer_product(factors)

    def ckam_mixture(self) -> tuple:
        """The components (weights, means, variances), for the stationarity check's mode occupancy."""
        return self.weights, self.means, self.variances



# ---------------------------------------------------------------------------- factories
def bimodal(weights=(0.5, 0.5), dim: int = 2) -> GaussianMixture:
    """½N((−8,0), 0.5I) + ½N((8,0), 2I) (cKAM paper); ``weights`` are normalised."""
    check_dim("bimodal", dim, 2)
    return GaussianMixture(
        weights=weights,
        means=[[-8.0, 0.0], [8.0, 0.0]],
        variances=[0.5, 2.0],
        dim=2,
        start=[-8.0, 0.0],
        box=[[-17.0, 17.0], [-12.0, 12.0]],
        name="bimodal",
    )


def gmm2d(variance: str = "paper", dim: int = 2) -> GaussianMixture:
    """(1/5)Σ_{i=1..5} N(2.5(i−1)(1,1), v_i I) with v_i = √i ("paper") or i/2 ("authors")."""
    check_dim("gmm2d", dim, 2)
    i = np.arange(1, 6, dtype=float)
    if variance == "paper":
        variances, name = np.sqrt(i), "gmm2d"
    elif variance == "authors":
        variances, name = i / 2.0, "gmm2d_authors"
    else:
        raise ValueError(f"variance must be 'paper' or 'authors', got {variance!r}")
    return GaussianMixture(
        weights=np.full(5, 0.2),
        means=2.5 * (i - 1.0)[:, None] * np.ones(2),
        variances=variances,
        dim=2,
        start=[0.0, 0.0],
        box=[[-7.0, 17.0], [-7.0, 17.0]],
        name=name,
    )


def gmm32(dim: int = 32, means=(-30.0, -15.0, 0.0, 15.0, 30.0), variance: float = 15.0) -> ProductMixture:
    """``dim`` independent coordinates, each (1/K)Σ_k N(μ_k, variance); box [−50, 50]^d."""
    dim = int(dim)
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    means = np.asarray(means, float)
    return ProductMixture(
        weights=np.ones(means.size),
        means=means,
        variance=variance,
        dim=dim,
        start=np.zeros(dim),
        box=np.tile([-50.0, 50.0], (dim, 1)),
        name="gmm32",
    )
