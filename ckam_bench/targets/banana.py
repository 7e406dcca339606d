r"""Haario et al.'s banana B(b, v) in d dimensions (the KAMH paper's synthetic target; SPEC §5).

With :math:`\Sigma = \mathrm{diag}(v, 1, \dots, 1)`, :math:`X \sim N(0, \Sigma)` is twisted into
:math:`Y_2 = X_2 + b(X_1^2 - v)`, :math:`Y_i = X_i` otherwise. The twist has unit Jacobian, so the
density is normalised:

.. math::
    \log\pi(y) = \log N(y_1; 0, v) + \log N(r; 0, 1) + \textstyle\sum_{j\ge3} \log N(y_j; 0, 1),
    \qquad r = y_2 - b(y_1^2 - v),

    \nabla\log\pi(y) = \big(-y_1/v + 2b\,y_1 r,\; -r,\; -y_3, \dots, -y_d\big),

and the Hessian is :math:`-I` except :math:`\partial_{11} = -1/v + 2br - 4b^2y_1^2`,
:math:`\partial_{12} = 2by_1`.

Exact draws: X, then the twist. Exact moments: :math:`E[Y] = 0`, :math:`\mathrm{Var}[Y_1] = v`,
:math:`\mathrm{Var}[Y_2] = 1 + 2b^2v^2`, the others 1; fourth moments :math:`3v^2`,
:math:`60b^4v^4 + 12b^2v^2 + 3` and 3 (with :math:`u = Y_1/\sqrt v`,
:math:`E[(u^2-1)^4] = 60`, :math:`E[(u^2-1)^2] = 2`).

Quantile regions (the paper's quantile deviation): the whitening map
:math:`w(y) = (y_1/\sqrt v,\, r,\, y_3, \dots, y_d)` sends π to :math:`N(0, I_d)`, so the region of
level q is :math:`\{y : \|w(y)\|^2 \le F^{-1}_{\chi^2_d}(q)\}`. :meth:`Banana.quantile_statistic`
returns :math:`F_{\chi^2_d}(\|w(y)\|^2)`, which is U(0, 1) under π (a point lies in the level-q
region iff its statistic is ≤ q).

``jit_log_density()`` / ``jit_log_density_and_grad()`` are the same formulas compiled with numba
(:mod:`ckam_bench.jit`). The default start is the origin (the mode of the untwisted X); the
plotting box covers ±4 sd of :math:`Y_1` and the twisted :math:`Y_2`.
"""

from __future__ import annotations

import math

import numpy as np

from ckam_bench import jit
from ckam_bench.targets.base import Target
from ckam_bench.targets.mixtures import check_geometry

_LOG_2PI = math.log(2.0 * math.pi)
MAX_DIM = 10_000


@jit.helper
def _banana_log_density_grad(x, grad_out, params):
    """Banana log density and its gradient into ``grad_out`` (compiled)."""
    b, v, log_const = params
    r = x[1] - b * (x[0] * x[0] - v)
    s = x[0] * x[0] / v + r * r
    grad_out[0] = -x[0] / v + 2.0 * b * x[0] * r
    grad_out[1] = -r
    for j in range(2, x.shape[0]):
        s += x[j] * x[j]
        grad_out[j] = -x[j]
    return log_const - 0.5 * s


@jit.helper
def _banana_log_density(x, params):
    """Banana log density (compiled)."""
    b, v, log_const = params
    r = x[1] - b * (x[0] * x[0] - v)
    s = x[0] * x[0] / v + r * r
    for j in range(2, x.shape[0]):
        s += x[j] * x[j]
    return log_const - 0.5 * s


class Banana(Target):
    """B(b, v) in ``dim`` dimensions (module docstring).

    Parameters
    ----------
    dim : dimension d ≥ 2 (at most 10 000).
    b : twist (any finite number; 0 gives a Gaussian).
    v : variance of the first coordinate (> 0).
    start : default start (d,); None gives 0.
    box : plotting box (d, 2); None gives ±4 sd per coordinate.
    name : short name (the YAML name).
    """

    def jax_log_density(self):
        """This density in JAX for the peer samplers (:func:`.jax_densities.banana`)."""
        from ckam_bench.targets import jax_densities

        return jax_densities.banana(self)

    def __init__(self, dim: int = 8, b: float = 0.03, v: float = 100.0, start=None, box=None,
                 name: str = "banana"):
        dim = int(dim)
        if not 2 <= dim <= MAX_DIM:
            raise ValueError(f"dim must be in [2, {MAX_DIM}], got {dim}")
        b, v = float(b), float(v)
        if not math.isfinite(b):
            raise ValueError(f"b must be finite, got {b}")
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"v must be a finite number > 0, got {v}")
        self.b, self.v = b, v
        self._var = np.ones(dim)
        self._var[0] = v
        self._var[1] = 1.0 + 2.0 * b * b * v * v
        if box is None:
            sd = np.sqrt(self._var)
            box = np.stack([-4.0 * sd, 4.0 * sd], axis=1)
            box[1] = [-4.0 - abs(b) * v, 4.0 + 15.0 * abs(b) * v]  # the banana bends one way
            if b < 0:
                box[1] = -box[1][::-1]
        start, box = check_geometry(dim, start, box)
        super().__init__(dim, start, box)
        self.name = str(name)
        self._log_const = -0.5 * math.log(v) - 0.5 * dim * _LOG_2PI

    # ------------------------------------------------------------------ primitives
    def whiten(self, X: np.ndarray) -> np.ndarray:
        """The whitening map w (rows of ``X``), sending π to N(0, I)."""
        W = np.array(X, float, copy=True, ndmin=2)
        W[:, 1] -= self.b * (W[:, 0] ** 2 - self.v)
        W[:, 0] /= math.sqrt(self.v)
        return W

    def _log_density_batch(self, X: np.ndarray) -> np.ndarray:
        W = self.whiten(X)
        return self._log_const - 0.5 * np.einsum("ij,ij->i", W, W)

    def _log_density(self, x: np.ndarray) -> float:
        return float(self._log_density_batch(x)[0])

    def _grad_log_density(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, float)
        r = x[1] - self.b * (x[0] ** 2 - self.v)
        grad = -x.copy()
        grad[0] = -x[0] / self.v + 2.0 * self.b * x[0] * r
        grad[1] = -r
        return grad

    def _hessian_log_density(self, x: np.ndarray) -> np.ndarray:
        """∇² log π: −I except ∂₁₁ = −1/v + 2b r − 4b²y₁², ∂₁₂ = 2b y₁ (gadMALA exact uses it)."""
        x = np.asarray(x, float)
        r = x[1] - self.b * (x[0] ** 2 - self.v)
        H = -np.eye(self.dim)
        H[0, 0] = -1.0 / self.v + 2.0 * self.b * r - 4.0 * self.b**2 * x[0] ** 2
        H[0, 1] = H[1, 0] = 2.0 * self.b * x[0]
        return H

    def _params(self):
        return (self.b, self.v, self._log_const)

    def jit_log_density(self):
        """The compiled ``_log_density`` (uncounted)."""
        return jit.bind_density(_banana_log_density, *self._params())

    def jit_log_density_and_grad(self):
        """The compiled ``f(x, grad_out) -> log π(x)`` writing ∇log π(x) into ``grad_out``."""
        return jit.bind_density_and_grad(_banana_log_density_grad, *self._params())

    # ------------------------------------------------------------------ capabilities
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        X = rng.standard_normal((int(n), self.dim))
        X[:, 0] *= math.sqrt(self.v)
        X[:, 1] += self.b * (X[:, 0] ** 2 - self.v)
        return X

    def quantile_statistic(self, X: np.ndarray) -> np.ndarray:
        """F_{χ²_d}(‖w(x)‖²) per row: U(0, 1) under π; the level-q region is {statistic ≤ q}."""
        from scipy.stats import chi2  # imported here: scipy.stats takes ~0.5 s (ckam-bench list)

        W = self.whiten(X)
        return chi2.cdf(np.einsum("ij,ij->i", W, W), self.dim)

    @property
    def mean(self) -> np.ndarray:
        return np.zeros(self.dim)

    @property
    def variance(self) -> np.ndarray:
        return self._var.copy()

    @property
    def fourth_moment(self) -> np.ndarray:
        """Exact E[X⁴] per coordinate."""
        m4 = np.full(self.dim, 3.0)
        bv2 = (self.b * self.v) ** 2
        m4[0] = 3.0 * self.v**2
        m4[1] = 60.0 * bv2 * bv2 + 12.0 * bv2 + 3.0
        return m4

    def describe(self) -> dict:
        return {**super().describe(), "b": self.b, "v": self.v}

    def ckam_fourth_moment(self) -> np.ndarray:
        return self.fourth_moment

    def ckam_quantile_statistic(self, X: np.ndarray) -> np.ndarray:
        return self.quantile_statistic(X)

