r"""A target written outside ckam-bench: a 3-D banana with exact draws and moments.

x = (y₁, y₂ − b (y₁² − v), y₃) with y ~ N(0, diag(v, 1, 1)), so

    log π(x) = −x₁² / (2v) − (x₂ + b (x₁² − v))² / 2 − x₃² / 2   (+ const),

E[x] = 0 and Var[x] = (v, 1 + 2 b² v², 1). Every member below is part of the target contract
(see the documentation's "Target contract"): ``_log_density`` is required; the others are
optional and each unlocks something — the gradient the gradient-based samplers, ``sample``
the stationarity check and MMD, ``mean``/``variance`` the moment errors, ``jit_log_density``
the compiled sampler loops.
"""

from __future__ import annotations

import numpy as np

from ckam_bench.targets.base import Target

try:  # optional: a compiled density lets the samplers run their compiled loops
    import numba
except ImportError:  # pragma: no cover - numba is a dependency of ckam-bench
    numba = None


def _log_density(x, b, v):
    twist = x[1] + b * (x[0] * x[0] - v)
    return -0.5 * (x[0] * x[0] / v + twist * twist + x[2] * x[2])


class Banana3(Target):
    """3-D banana: (y₁, y₂ − b (y₁² − v), y₃), y ~ N(0, diag(v, 1, 1)); exact draws and moments."""

    name = "banana3"

    def __init__(self, b: float = 0.1, v: float = 4.0):
        if not (np.isfinite(b) and b >= 0):
            raise ValueError(f"b must be a finite number >= 0, got {b}")
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"v must be a finite number > 0, got {v}")
        self.b, self.v = float(b), float(v)
        sd = np.sqrt(self.variance)
        super().__init__(3, start=np.zeros(3), box=np.stack([-6 * sd, 6 * sd], axis=1))

    def _log_density(self, x):
        return float(_log_density(np.asarray(x, float), self.b, self.v))

    def _grad_log_density(self, x):
        x = np.asarray(x, float)
        twist = x[1] + self.b * (x[0] ** 2 - self.v)
        return np.array([-x[0] / self.v - 2 * self.b * x[0] * twist, -twist, -x[2]])

    def sample(self, n, rng):
        y = rng.standard_normal((n, 3)) * np.sqrt([self.v, 1.0, 1.0])
        y[:, 1] -= self.b * (y[:, 0] ** 2 - self.v)
        return y

    @property
    def mean(self):
        return np.zeros(3)

    @property
    def variance(self):
        return np.array([self.v, 1 + 2 * self.b**2 * self.v**2, 1.0])

    def jit_log_density(self):
        """The compiled ``f(x) -> log π(x)`` (same math as ``_log_density``)."""
        if numba is None:
            return None
        b, v = self.b, self.v
        core = numba.njit(_log_density)

        @numba.njit
        def log_density(x):
            return core(x, b, v)

        return log_density
