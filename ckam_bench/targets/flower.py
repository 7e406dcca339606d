r"""The flower F(r₀, A, ω, σ) in d dimensions (the KAMH paper's second synthetic target; SPEC §5).

With polar coordinates :math:`(\rho, \theta)` of :math:`(x_1, x_2)` (θ = atan2(x₂, x₁)) and the
ring radius :math:`c(\theta) = r_0 + A\cos(\omega\theta)`,

.. math::
    \pi(x) = \frac1{Z}\exp\Big(-\frac{(\rho - c(\theta))^2}{2\sigma^2}\Big)
             \prod_{j\ge3} N(x_j; 0, 1),
    \qquad Z = \int_{-\pi}^{\pi} g(c(\theta))\,d\theta,

where :math:`g(c) = \int_0^\infty \rho\, e^{-(\rho-c)^2/(2\sigma^2)}\,d\rho
= \sigma^2 e^{-c^2/(2\sigma^2)} + c\,\sigma\sqrt{2\pi}\,\Phi(c/\sigma)` (the seed paper's formula
lost the square; SPEC §5). Z is a 1-D integral, done once by Gauss–Legendre quadrature, so the
density is normalised. With :math:`e = \rho - c(\theta)`,

.. math::
    \nabla_{x_{1:2}}\log\pi = -\frac{e}{\sigma^2}\Big(\frac{x_{1:2}}{\rho}
        + A\omega\sin(\omega\theta)\,\frac{(-x_2, x_1)}{\rho^2}\Big),
    \qquad \nabla_{x_j}\log\pi = -x_j\ (j \ge 3),

undefined at ρ = 0 (NaN there).

**Exact draws.** In polar form the density of (ρ, θ) is :math:`\propto \rho\, e^{-(\rho -
c(\theta))^2/(2\sigma^2)}` on ρ > 0, so θ has density :math:`g(c(\theta))/Z` and ρ | θ density
:math:`\rho\,e^{-(\rho-c)^2/(2\sigma^2)}/g(c)`. Since :math:`dg/dc = \sigma\sqrt{2\pi}\Phi(c/\sigma) > 0`,
g is increasing, so :math:`g(c(\theta)) \le g(r_0 + |A|)`: θ is drawn by rejection from the uniform
on [−π, π). For ρ | θ, :math:`\rho \le |\rho - c| + c^+` on ρ > 0 gives the envelope
:math:`(|u| + c^+)e^{-u^2/(2\sigma^2)}`, u = ρ − c: a mixture of ±Rayleigh(σ) (mass 2σ²) and
N(0, σ²) (mass :math:`c^+\sigma\sqrt{2\pi}`); a draw ρ = c + u is accepted with probability
:math:`\rho/(|u| + c^+)` if ρ > 0. Both rejections are exact.

**Quantile regions.** Given θ, the conditional CDF of ρ is in closed form (upper tail
:math:`[\sigma^2 e^{-e^2/(2\sigma^2)} + c\sigma\sqrt{2\pi}\Phi(-e/\sigma)]/g(c)`), so
:math:`z = \Phi^{-1}(F_{\rho|\theta}(\rho))` is N(0, 1) independently of θ and of
:math:`x_{3:d}`; the "whitened" point :math:`(z, x_3, \dots, x_d)` is :math:`N(0, I_{d-1})` and the
region of level q is :math:`\{z^2 + \sum_{j\ge3}x_j^2 \le F^{-1}_{\chi^2_{d-1}}(q)\}` — a band of
the flower's ring times a ball. :meth:`Flower.quantile_statistic` returns the χ²_{d−1} CDF of it.

Exact moments: E[x_j] = 0 and Var = 1 for j ≥ 3; the first two coordinates' means and second
moments are a 2-D integral in (ρ, θ), done once by Gauss–Legendre quadrature (panels no wider
than σ/2 in ρ and 1/(2ω) in θ). The default start is the ring's point at θ = 0.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
from scipy.special import erfcx, ndtr, ndtri

from ckam_bench import jit
from ckam_bench.targets.base import Target
from ckam_bench.targets.mixtures import check_geometry

_LOG_2PI = math.log(2.0 * math.pi)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(20)
MAX_DIM = 10_000
MAX_PANELS = 20_000  # quadrature panels per axis (bounds ω/σ-driven work and memory)


def _gauss_legendre(lo: float, hi: float, panels: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of composite 20-point Gauss–Legendre on [lo, hi]."""
    edges = np.linspace(lo, hi, panels + 1)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    return (mid[:, None] + half[:, None] * _GL_NODES).ravel(), (half[:, None] * _GL_WEIGHTS).ravel()


@jit.helper
def _flower_log_density_grad(x, grad_out, params):
    """Flower log density and gradient into ``grad_out`` (compiled; NaN gradient at ρ = 0)."""
    r0, amp, omega, sigma, log_const = params
    rho = math.sqrt(x[0] * x[0] + x[1] * x[1])
    theta = math.atan2(x[1], x[0])
    e = rho - r0 - amp * math.cos(omega * theta)
    s = e * e / (sigma * sigma)
    scale = -e / (sigma * sigma)
    twist = amp * omega * math.sin(omega * theta) / (rho * rho) if rho > 0.0 else math.nan
    inv_rho = 1.0 / rho if rho > 0.0 else math.nan
    grad_out[0] = scale * (x[0] * inv_rho - twist * x[1])
    grad_out[1] = scale * (x[1] * inv_rho + twist * x[0])
    for j in range(2, x.shape[0]):
        s += x[j] * x[j]
        grad_out[j] = -x[j]
    return log_const - 0.5 * s


@jit.helper
def _flower_log_density(x, params):
    """Flower log density (compiled)."""
    r0, amp, omega, sigma, log_const = params
    rho = math.sqrt(x[0] * x[0] + x[1] * x[1])
    e = rho - r0 - amp * math.cos(omega * math.atan2(x[1], x[0]))
    s = e * e / (sigma * sigma)
    for j in range(2, x.shape[0]):
        s += x[j] * x[j]
    return log_const - 0.5 * s


class Flower(Target):
    """F(r₀, A, ω, σ) in ``dim`` dimensions (module docstring).

    Parameters
    ----------
    dim : dimension d ≥ 2 (at most 10 000).
    r0 : ring radius (finite).
    amplitude : A, amplitude of the periodic perturbation (finite).
    omega : ω, its angular frequency (finite, |ω| ≤ 1000).
    sigma : σ > 0, width of the ring.
    start : default start (d,); None gives (r₀ + A, 0, …, 0).
    box : plotting box (d, 2); None gives ±(r₀ + |A| + 4σ) on x₁, x₂ and ±4 on the others.
    name : short name (the YAML name).
    """

    def __init__(self, dim: int = 8, r0: float = 10.0, amplitude: float = 6.0, omega: float = 6.0,
                 sigma: float = 1.0, start=None, box=None, name: str = "flower"):
        dim = int(dim)
        if not 2 <= dim <= MAX_DIM:
            raise ValueError(f"dim must be in [2, {MAX_DIM}], got {dim}")
        r0, amplitude, omega, sigma = float(r0), float(amplitude), float(omega), float(sigma)
        for key, value in (("r0", r0), ("amplitude", amplitude)):
            if not math.isfinite(value):
                raise ValueError(f"{key} must be finite, got {value}")
        if not (math.isfinite(omega) and abs(omega) <= 1000.0):
            raise ValueError(f"omega must be finite with |omega| <= 1000, got {omega}")
        if not (math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be a finite number > 0, got {sigma}")
        self.r0, self.amplitude, self.omega, self.sigma = r0, amplitude, omega, sigma
        self._c_max = r0 + abs(amplitude)
        if self._c_max + 12.0 * sigma <= 0:
            raise ValueError(f"r0 must leave the ring inside the plane: r0 + |amplitude| + 12 sigma = "
                             f"{self._c_max + 12.0 * sigma} <= 0")
        if (self._c_max + 12.0 * sigma) / (0.5 * sigma) > MAX_PANELS:
            raise ValueError(f"sigma must be >= (r0 + |amplitude|) / {MAX_PANELS // 2 - 12} for the "
                             f"quadrature of the moments, got {sigma}")
        reach = max(self._c_max, 0.0) + 4.0 * sigma
        if box is None:
            box = np.array([[-4.0, 4.0]] * dim)
            box[:2] = [-reach, reach]
        if start is None:
            start = np.zeros(dim)
            start[0] = max(r0 + amplitude, sigma)
        start, box = check_geometry(dim, start, box)
        super().__init__(dim, start, box)
        self.name = str(name)
        theta, w_theta = self._theta_nodes()
        self._log_z = float(np.log(np.sum(w_theta * np.exp(self._log_g(self._ring(theta))))))
        self._log_const = -self._log_z - 0.5 * (dim - 2) * _LOG_2PI

    # ------------------------------------------------------------------ helpers
    def _ring(self, theta):
        return self.r0 + self.amplitude * np.cos(self.omega * theta)

    def _log_g(self, c):
        """log g(c) = log σ² − t²/2 + log(1 + t√(π/2)·erfcx(−t/√2)), t = c/σ (stable for c < 0)."""
        t = np.asarray(c, float) / self.sigma
        return 2.0 * math.log(self.sigma) - 0.5 * t * t + np.log1p(t * math.sqrt(0.5 * math.pi) * erfcx(-t / math.sqrt(2.0)))

    def _theta_nodes(self):
        panels = min(MAX_PANELS, max(64, math.ceil(4.0 * math.pi * abs(self.omega))))
        return _gauss_legendre(-math.pi, math.pi, panels)

    def _polar(self, X):
        X = np.atleast_2d(np.asarray(X, float))
        return X, np.hypot(X[:, 0], X[:, 1]), np.arctan2(X[:, 1], X[:, 0])

    # ------------------------------------------------------------------ primitives
    def _log_density_batch(self, X: np.ndarray) -> np.ndarray:
        X, rho, theta = self._polar(X)
        e = (rho - self._ring(theta)) / self.sigma
        rest = np.einsum("ij,ij->i", X[:, 2:], X[:, 2:])
        return self._log_const - 0.5 * (e * e + rest)

    def _log_density(self, x: np.ndarray) -> float:
        return float(self._log_density_batch(x)[0])

    def _grad_log_density(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, float)
        rho, theta = math.hypot(x[0], x[1]), math.atan2(x[1], x[0])
        grad = -x.copy()
        if rho == 0.0:
            grad[:2] = np.nan
            return grad
        scale = -(rho - self._ring(theta)) / self.sigma**2
        twist = self.amplitude * self.omega * math.sin(self.omega * theta) / rho**2
        grad[0] = scale * (x[0] / rho - twist * x[1])
        grad[1] = scale * (x[1] / rho + twist * x[0])
        return grad

    def _params(self):
        return (self.r0, self.amplitude, self.omega, self.sigma, self._log_const)

    def jit_log_density(self):
        """The compiled ``_log_density`` (uncounted)."""
        return jit.bind_density(_flower_log_density, *self._params())

    def jit_log_density_and_grad(self):
        """The compiled ``f(x, grad_out) -> log π(x)`` writing ∇log π(x) into ``grad_out``."""
        return jit.bind_density_and_grad(_flower_log_density_grad, *self._params())

    # ------------------------------------------------------------------ capabilities
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        n = int(n)
        X = rng.standard_normal((n, self.dim))
        theta = np.empty(0)
        log_g_max = float(self._log_g(self._c_max))
        while theta.size < n:  # θ by rejection from the uniform (g is increasing in c)
            m = 2 * (n - theta.size) + 16
            cand = rng.uniform(-math.pi, math.pi, m)
            keep = np.log(rng.uniform(size=m)) < self._log_g(self._ring(cand)) - log_g_max
            theta = np.concatenate([theta, cand[keep]])
        theta = theta[:n]
        c = self._ring(theta)
        rho = np.full(n, np.nan)
        todo = np.arange(n)
        s, cp = self.sigma, np.maximum(c, 0.0)
        while todo.size:  # ρ | θ by rejection from the envelope (|u| + c⁺) exp(−u²/2σ²)
            k = todo.size
            p_rayleigh = 2.0 * s * s / (2.0 * s * s + cp[todo] * s * math.sqrt(2.0 * math.pi))
            rayleigh = rng.uniform(size=k) < p_rayleigh
            u = np.where(rayleigh, rng.choice([-1.0, 1.0], size=k) * rng.rayleigh(s, size=k),
                         s * rng.standard_normal(k))
            r = c[todo] + u
            with np.errstate(invalid="ignore", divide="ignore"):
                accept = (r > 0) & (rng.uniform(size=k) * (np.abs(u) + cp[todo]) < r)
            rho[todo[accept]] = r[accept]
            todo = todo[~accept]
        X[:, 0] = rho * np.cos(theta)
        X[:, 1] = rho * np.sin(theta)
        return X

    def whitened_radius(self, X: np.ndarray) -> np.ndarray:
        """z = Φ⁻¹(F_{ρ|θ}(ρ)) per row: N(0, 1) under π, independent of θ and x₃, …, x_d."""
        X, rho, theta = self._polar(X)
        c = self._ring(theta)
        e = (rho - c) / self.sigma
        s = self.sigma
        log_g = self._log_g(c)
        upper = (s * s * np.exp(-0.5 * e * e) + c * s * math.sqrt(2.0 * math.pi) * ndtr(-e)) / np.exp(log_g)
        lower = 1.0 - upper
        lower_direct = (s * s * (np.exp(-0.5 * (c / s) ** 2) - np.exp(-0.5 * e * e))
                        + c * s * math.sqrt(2.0 * math.pi) * (ndtr(e) - ndtr(-c / s))) / np.exp(log_g)
        small = lower_direct < 0.5
        return np.where(small, ndtri(np.clip(lower_direct, 0.0, 1.0)), -ndtri(np.clip(upper, 0.0, 1.0)))

    def quantile_statistic(self, X: np.ndarray) -> np.ndarray:
        """F_{χ²_{d−1}}(z² + Σ_{j≥3} x_j²) per row: U(0, 1) under π; level-q region {statistic ≤ q}."""
        from scipy.stats import chi2  # imported here: scipy.stats takes ~0.5 s (ckam-bench list)

        X = np.atleast_2d(np.asarray(X, float))
        z = self.whitened_radius(X)
        return chi2.cdf(z * z + np.einsum("ij,ij->i", X[:, 2:], X[:, 2:]), self.dim - 1)

    @cached_property
    def _moments12(self):
        """(E[x₁], E[x₂]), (E[x₁²], E[x₂²]) by 2-D Gauss–Legendre quadrature in (ρ, θ)."""
        theta, w_theta = self._theta_nodes()
        lo = max(0.0, self.r0 - abs(self.amplitude) - 12.0 * self.sigma)
        hi = self._c_max + 12.0 * self.sigma
        rho, w_rho = _gauss_legendre(lo, hi, max(1, math.ceil((hi - lo) / (0.5 * self.sigma))))
        cos, sin = np.cos(theta), np.sin(theta)
        m1, m2, total = np.zeros(2), np.zeros(2), 0.0
        for i in range(0, theta.size, 256):  # chunks of θ bound the memory
            sl = slice(i, i + 256)
            e = (rho[None, :] - self._ring(theta[sl])[:, None]) / self.sigma
            dens = np.exp(-0.5 * e * e) * rho * w_rho * w_theta[sl, None]  # (θ, ρ) incl. Jacobian ρ
            r1, r2 = dens @ rho, dens @ (rho * rho)
            total += dens.sum()
            m1 += [r1 @ cos[sl], r1 @ sin[sl]]
            m2 += [r2 @ cos[sl] ** 2, r2 @ sin[sl] ** 2]
        return m1 / total, m2 / total

    @property
    def mean(self) -> np.ndarray:
        mean = np.zeros(self.dim)
        mean[:2] = self._moments12[0]
        return mean

    @property
    def variance(self) -> np.ndarray:
        var = np.ones(self.dim)
        m1, m2 = self._moments12
        var[:2] = m2 - m1 * m1
        return var

    def describe(self) -> dict:
        return {**super().describe(), "r0": self.r0, "amplitude": self.amplitude, "omega": self.omega,
                "sigma": self.sigma}

    def ckam_quantile_statistic(self, X: np.ndarray) -> np.ndarray:
        return self.quantile_statistic(X)

