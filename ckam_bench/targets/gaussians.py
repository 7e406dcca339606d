r"""Multivariate Gaussians with full covariance: seed 002's (gradient-based adaptive MCMC) tests.

:class:`Gaussian` — :math:`N(m, \Sigma)` with :math:`\Sigma = LL^\top` (Cholesky, precomputed):

.. math::
    \log\pi(x) = -\tfrac12\|L^{-1}(x-m)\|^2 - \textstyle\sum_i \log L_{ii} - \tfrac d2 \log 2\pi,
    \qquad \nabla\log\pi(x) = -\Sigma^{-1}(x-m).

Exact draws :math:`m + L\varepsilon`; exact marginals :math:`N(m_j, \Sigma_{jj})`. In 2-D the grid
cell masses integrate the conditional normal exactly in :math:`x_2` and by Gauss–Legendre
quadrature in :math:`x_1` (10 nodes per panel, panels no wider than half the scale on which the
integrand varies, so the result is exact to ~1e-10):

.. math::
    P(\text{cell}) = \int_{a_1}^{b_1} N(x_1; m_1, \Sigma_{11})
    \big[\Phi(\tfrac{b_2 - \mu(x_1)}{s}) - \Phi(\tfrac{a_2 - \mu(x_1)}{s})\big]\,dx_1,

    \mu(x_1) = m_2 + \tfrac{\Sigma_{12}}{\Sigma_{11}}(x_1 - m_1), \qquad
    s^2 = \Sigma_{22} - \Sigma_{12}^2/\Sigma_{11},

which stays accurate for the narrow ridge of a strongly correlated pair.

``jit_log_density()`` (:mod:`ckam_bench.jit`) is the same log density compiled with numba, for
the samplers' compiled loops; ``jit_log_density_and_grad()`` returns log π(x) and writes
:math:`\nabla\log\pi(x) = -L^{-\top}L^{-1}(x - m)` in one O(d²) pass (the z = L⁻¹(x − m) of
the density is reused); the Hessian is the constant :math:`-\Sigma^{-1}`
(``_hessian_log_density``, compiled by ``jit_hessian_log_density()``).

Factories (all with start 0 and a box of ±6 standard deviations per coordinate):

* :func:`gauss2d_corr` — :math:`N(0, [[1, \rho], [\rho, 1]])`, ρ = 0.99.
* :func:`neal100` — :math:`N(0, \mathrm{diag}(s_i^2))`, :math:`s_i = 0.01 i`, i = 1..100.
* :func:`gp51` — :math:`N(0, K)`, :math:`K_{ij} = \exp(-(x_i-x_j)^2/(2\cdot 0.16)) + 0.01\delta_{ij}`,
  x = 0, 0.08, …, 4 (51 points).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import ndtr

from ckam_bench import jit
from ckam_bench.data import array_sha256
from ckam_bench.targets.base import Target
from ckam_bench.targets.vecmath import vector_helper
from ckam_bench.targets.mixtures import (
    check_coordinate,
    check_dim,
    check_geometry,
    grid_edges,
    normal_interval_mass,
)

_LOG_2PI = math.log(2.0 * math.pi)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(10)
_CHUNK = 2_000_000  # quadrature values held at once by Gaussian.grid_mass


@vector_helper
def _gaussian_log_density(x, params):
    """Gaussian._log_density compiled: c − ½‖L⁻¹(x − m)‖² (L⁻¹ lower triangular, C-contiguous,
    summed over whole rows so the sums vectorise; −‖x − m‖² if that is not finite)."""
    mean, chol_inv, log_const = params
    dim = x.shape[0]
    norm2 = 0.0
    for j in range(dim):
        norm2 += (x[j] - mean[j]) * (x[j] - mean[j])
    if not math.isfinite(norm2):
        return -norm2
    quad = 0.0
    for i in range(dim):
        z = 0.0
        for j in range(dim):
            z += chol_inv[i, j] * (x[j] - mean[j])
        quad += z * z
    return log_const - 0.5 * quad


@vector_helper
def _gaussian_log_density_and_grad(x, grad_out, params):
    """``_gaussian_log_density`` and its gradient −Σ⁻¹(x − m) into ``grad_out``, one pass over
    the rows of L⁻¹ and Σ⁻¹ (C-contiguous: whole rows, L⁻¹'s upper zeros add exact zeros, so
    the sums vectorise)."""
    mean, chol_inv, precision, log_const = params
    dim = x.shape[0]
    norm2 = 0.0
    quad = 0.0
    for i in range(dim):
        norm2 += (x[i] - mean[i]) * (x[i] - mean[i])
        z = 0.0
        g = 0.0
        for j in range(dim):
            z += chol_inv[i, j] * (x[j] - mean[j])
            g -= precision[i, j] * (x[j] - mean[j])
        quad += z * z
        grad_out[i] = g
    if not math.isfinite(norm2):
        for j in range(dim):
            grad_out[j] = math.nan
        return -norm2
    return log_const - 0.5 * quad


@vector_helper
def _diagonal_gaussian_log_density_and_grad(x, grad_out, params):
    """The same for a diagonal covariance (e.g. neal100) in O(d): z_i = (x_i − m_i)/σ_i,
    gradient −z_i/σ_i."""
    mean, inv_sd, log_const = params
    dim = x.shape[0]
    norm2 = 0.0
    quad = 0.0
    for i in range(dim):
        diff = x[i] - mean[i]
        z = inv_sd[i] * diff
        norm2 += diff * diff
        quad += z * z
        grad_out[i] = -inv_sd[i] * z
    if not math.isfinite(norm2):
        for j in range(dim):
            grad_out[j] = math.nan
        return -norm2
    return log_const - 0.5 * quad


@jit.helper
def _gaussian_hessian(x, hess_out, params):
    """The constant Hessian −Σ⁻¹ into ``hess_out``; returns log π(x)."""
    precision, mean, chol_inv, log_const = params
    dim = x.shape[0]
    for i in range(dim):
        for j in range(dim):
            hess_out[i, j] = -precision[i, j]
    return 0.0


class Gaussian(Target):
    """Multivariate normal N(mean, cov) with a full covariance.

    Parameters
    ----------
    mean : (dim,) mean.
    cov : (dim, dim) symmetric positive-definite covariance.
    dim : dimension d.
    start : default start (d,); None gives 0.
    box : plotting/KL box (d, 2); None gives mean ± 6 standard deviations.
    name : short name (the YAML name).
    settings : what ``mean`` and ``cov`` are computed from, when they are (a factory's
        arguments; :meth:`describe` records them instead of hashing a computed covariance,
        whose last bits may depend on the CPU); None hashes ``mean`` and ``cov`` as given.
    """

    def jax_log_density(self):
        """This density in JAX for the peer samplers (:func:`.jax_densities.gaussian`)."""
        from ckam_bench.targets import jax_densities

        return jax_densities.gaussian(self)

    def __init__(self, mean, cov, dim: int, start=None, box=None, name: str = "gaussian",
                 settings: dict | None = None):
        dim = int(dim)
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        mean = np.asarray(mean, float)
        if mean.shape != (dim,) or not np.all(np.isfinite(mean)):
            raise ValueError(f"mean must be a finite array of shape ({dim},), got shape {mean.shape}")
        cov = np.asarray(cov, float)
        if cov.shape != (dim, dim) or not np.all(np.isfinite(cov)):
            raise ValueError(f"cov must be a finite array of shape ({dim}, {dim}), got shape {cov.shape}")
        if not np.allclose(cov, cov.T, rtol=1e-12, atol=0.0):
            raise ValueError("cov must be symmetric")
        try:
            chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            raise ValueError("cov must be positive definite") from None
        sd = np.sqrt(np.diag(cov))
        if box is None:
            box = np.stack([mean - 6.0 * sd, mean + 6.0 * sd], axis=1)
        start, box = check_geometry(dim, start, box)
        super().__init__(dim, start, box)
        self.name = str(name)
        self.cov = cov
        self._mean = mean
        self._sd = sd
        self._chol = chol
        self._chol_inv = solve_triangular(chol, np.eye(dim), lower=True)
        self._precision = self._chol_inv.T @ self._chol_inv
        self._log_const = -float(np.sum(np.log(np.diag(chol)))) - 0.5 * dim * _LOG_2PI
        self._identity = (dict(settings) if settings is not None else
                          {"parameters_sha256": array_sha256([("mean", mean), ("cov", cov)])[:16]})

    def describe(self) -> dict:
        """Name, dimension and the distribution's parameters: the factory's settings, else the
        sha256 of the mean and covariance as given (part of the reference id)."""
        return {**super().describe(), **self._identity}

    # ------------------------------------------------------------------ primitives
    def _log_density(self, x: np.ndarray) -> float:
        diff = np.asarray(x, float) - self._mean
        norm2 = float(diff @ diff)
        if not math.isfinite(norm2):  # an infinite coordinate gives -inf, a NaN gives NaN
            return -norm2
        z = self._chol_inv @ diff
        return self._log_const - 0.5 * float(z @ z)

    def jit_log_density(self):
        """The compiled ``_log_density`` (uncounted; see :mod:`ckam_bench.jit`)."""
        return jit.bind_density(_gaussian_log_density, self._mean, np.ascontiguousarray(self._chol_inv),
                                self._log_const)

    def jit_log_density_and_grad(self):
        """The compiled ``(x, grad_out) -> log π(x)`` (uncounted; see :mod:`ckam_bench.jit`)."""
        if np.count_nonzero(self.cov - np.diag(np.diag(self.cov))) == 0:
            return jit.bind_density_and_grad(_diagonal_gaussian_log_density_and_grad, self._mean,
                                             np.diag(self._chol_inv).copy(), self._log_const)
        return jit.bind_density_and_grad(_gaussian_log_density_and_grad, self._mean,
                                         np.ascontiguousarray(self._chol_inv),
                                         np.ascontiguousarray(self._precision), self._log_const)

    def jit_hessian_log_density(self):
        """The compiled ``(x, hess_out) -> 0`` writing the Hessian −Σ⁻¹."""
        return jit.bind_density_and_grad(_gaussian_hessian, self._precision, self._mean, self._chol_inv,
                                         self._log_const)

    def _hessian_log_density(self, x: np.ndarray) -> np.ndarray:
        return -self._precision.copy()

    def _log_density_batch(self, X: np.ndarray) -> np.ndarray:
        Z = (np.asarray(X, float) - self._mean) @ self._chol_inv.T
        return self._log_const - 0.5 * np.einsum("ij,ij->i", Z, Z)

    def _grad_log_density(self, x: np.ndarray) -> np.ndarray:
        return -(self._precision @ (np.asarray(x, float) - self._mean))

    # ------------------------------------------------------------------ capabilities
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self._mean + rng.standard_normal((int(n), self.dim)) @ self._chol.T

    def marginal_logpdf(self, j: int, x: np.ndarray) -> np.ndarray:
        j = check_coordinate(j, self.dim)
        z = (np.asarray(x, float) - self._mean[j]) / self._sd[j]
        return -0.5 * z * z - math.log(self._sd[j]) - 0.5 * _LOG_2PI

    def marginal_cdf(self, j: int, x: np.ndarray) -> np.ndarray:
        j = check_coordinate(j, self.dim)
        return ndtr((np.asarray(x, float) - self._mean[j]) / self._sd[j])

    @property
    def mean(self) -> np.ndarray:
        return self._mean.copy()

    @property
    def variance(self) -> np.ndarray:
        return self._sd**2

    def grid_mass(self, edges: list[np.ndarray]) -> np.ndarray:
        """Cell masses normalised to sum 1: quadrature of the exact conditional in 2-D,
        the base class's midpoint rule otherwise."""
        if self.dim != 2:
            return super().grid_mass(edges)
        e1, e2 = grid_edges(edges, 2)
        (m1, m2), (s11, s12, s22) = self._mean, (self.cov[0, 0], self.cov[0, 1], self.cov[1, 1])
        slope, cond_sd = s12 / s11, math.sqrt(s22 - s12 * s12 / s11)
        # The integrand varies on the scale of sd(x_1) and of cond_sd/|slope| (the width of
        # a cell's band in x_1): split every column into panels of at most half of that.
        scale = min(math.sqrt(s11), cond_sd / abs(slope)) if slope != 0.0 else math.sqrt(s11)
        width = np.diff(e1)
        panels = max(1, math.ceil(width.max() / (0.5 * scale)))
        half = 0.5 * width / panels
        centres = e1[:-1, None] + (2.0 * np.arange(panels) + 1.0) * half[:, None]
        x1 = centres[..., None] + half[:, None, None] * _GL_NODES  # (n1, panels, nodes)
        z1 = (x1 - m1) / math.sqrt(s11)
        weight = np.exp(-0.5 * z1 * z1) / math.sqrt(2.0 * math.pi * s11) * half[:, None, None] * _GL_WEIGHTS
        cond_mean = m2 + slope * (x1 - m1)
        mass = np.empty((e1.size - 1, e2.size - 1))
        step = max(1, _CHUNK // (x1[0].size * e2.size))  # columns per chunk, to bound memory
        for i in range(0, mass.shape[0], step):
            inner = normal_interval_mass(e2, cond_mean[i : i + step, ..., None], cond_sd)  # (c, p, q, n2)
            mass[i : i + step] = np.einsum("ipq,ipqk->ik", weight[i : i + step], inner)
        return mass / mass.sum()


# ---------------------------------------------------------------------------- factories
def _standard_box(sd: np.ndarray) -> np.ndarray:
    return np.stack([-6.0 * sd, 6.0 * sd], axis=1)


def gauss2d_corr(rho: float = 0.99, dim: int = 2) -> Gaussian:
    """N(0, [[1, ρ], [ρ, 1]])."""
    check_dim("gauss2d_corr", dim, 2)
    rho = float(rho)
    if not -1.0 < rho < 1.0:
        raise ValueError(f"rho must be in (-1, 1), got {rho}")
    cov = [[1.0, rho], [rho, 1.0]]
    return Gaussian(np.zeros(2), cov, 2, start=np.zeros(2), box=_standard_box(np.ones(2)), name="gauss2d_corr",
                    settings={"rho": rho})


def neal100(dim: int = 100) -> Gaussian:
    """N(0, diag(s_i²)), s_i = 0.01, 0.02, …, 1.00 (Neal's 100-D test)."""
    check_dim("neal100", dim, 100)
    sd = 0.01 * np.arange(1, 101)
    return Gaussian(np.zeros(100), np.diag(sd**2), 100, start=np.zeros(100), box=_standard_box(sd), name="neal100",
                    settings={"sd": "0.01 i, i = 1..100"})


def gp51(dim: int = 51) -> Gaussian:
    """N(0, K): squared-exponential GP prior (l² = 0.16) plus 0.01 nugget on x = 0, 0.08, …, 4."""
    check_dim("gp51", dim, 51)
    x = np.linspace(0.0, 4.0, 51)
    cov = np.exp(-((x[:, None] - x[None, :]) ** 2) / (2.0 * 0.16)) + 0.01 * np.eye(51)
    box = _standard_box(np.sqrt(np.diag(cov)))
    return Gaussian(np.zeros(51), cov, 51, start=np.zeros(51), box=box, name="gp51",
                    settings={"x": "0, 0.08, ..., 4", "length_scale2": 0.16, "nugget": 0.01})
