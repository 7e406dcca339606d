"""Scout MCMC (Algorithms 3–4 of Dharamshi, Ngo & Rosenthal; the math is in
:mod:`ckam_bench.samplers.divergence`): the DM or finite DM main chain plus a scout chain on
π^τ, swapped every k iterations."""

from __future__ import annotations

import math

import numpy as np

from ckam_bench import jit
from ckam_bench.samplers.divergence.dm import (DivergenceMinimisation, DMState, FiniteDivergenceMinimisation,
                                               check_count)
from ckam_bench.samplers.divergence.loops import PythonDensityGrad, tempered_walk, walk_kernel
from ckam_bench.samplers.hamiltonian import check_positive
from ckam_bench.targets.base import Target


class _ScoutMixin:
    """Scout chain settings shared by :class:`Scout` and :class:`FiniteScout`."""

    _scout = True

    def _scout_settings(self, tau, scout_variance, swap_every, scout_warmup):
        tau = float(tau)
        if not 0.0 < tau < 1.0:
            raise ValueError(f"tau must be in (0, 1), got {tau}")
        self.tau = tau
        self.scout_variance = check_positive("scout_variance", scout_variance)
        self._scout_sd = math.sqrt(self.scout_variance)
        self.swap_every = check_count("swap_every", swap_every, 1)
        self.scout_warmup = check_count("scout_warmup", scout_warmup, 0)

    def describe(self) -> dict:
        return {**super().describe(), "tau": self.tau, "scout_variance": self.scout_variance,
                "swap_every": self.swap_every, "scout_warmup": self.scout_warmup}

    def warm_up(self, target: Target) -> None:
        super().warm_up(target)
        if jit.compiled_log_density_and_grad(target) is not None:
            walk_kernel.compile()

    def init(self, target: Target, x0, rng: np.random.Generator) -> DMState:
        """As DM's, then the scout alone makes ``scout_warmup`` random-walk steps on π^τ from x₀
        (counted; the main chain does not move), so swaps start from a scout near π^τ."""
        state = super().init(target, x0, rng)
        if self.scout_warmup:
            normals = rng.standard_normal((self.scout_warmup, target.dim + 1))
            s = np.array(state.scout_x, dtype=float)
            f = self._f if self._f is not None else PythonDensityGrad(target)
            walk = walk_kernel if self._f is not None else tempered_walk
            state.scout_logp = float(walk(f, s, float(state.scout_logp), normals, self.tau, self._scout_sd))
            state.scout_x = s
            target.n_density += self.scout_warmup
            target.n_grad += self.scout_warmup  # f is the density-and-gradient
        return state


class Scout(_ScoutMixin, DivergenceMinimisation):
    """Scout MCMC with perpetual adaptation (Algorithm 3): DM main chain + scout on π^τ.

    tau : τ ∈ (0, 1), the scout's inverse temperature (0.1).
    scout_variance : σ_s > 0, the scout's proposal N(s, σ_s I) (9).
    swap_every : k ≥ 1, a swap is attempted after iterations t ≡ 0 (mod k) (20).
    scout_warmup : steps the scout makes alone on π^τ before the first iteration (0: s₀ = x₀,
        the paper's start).
    The other arguments are DM's. Only the main chain is collected.
    """

    name = "scout"

    def __init__(self, beta: float = 0.2, rate=0.002, clip: float | None = None, init_scale: float = 2.0,
                 n_draws: int = 10, gamma_shrink: float = 1.0, burnin: int = 0, tau: float = 0.1,
                 scout_variance: float = 9.0, swap_every: int = 20, scout_warmup: int = 0):
        super().__init__(beta, rate, clip, init_scale, n_draws, gamma_shrink, burnin)
        self._scout_settings(tau, scout_variance, swap_every, scout_warmup)


class FiniteScout(_ScoutMixin, FiniteDivergenceMinimisation):
    """Scout MCMC with finite adaptation (Algorithm 4): finite DM main chain + scout on π^τ.

    Arguments as :class:`FiniteDivergenceMinimisation` plus ``tau``, ``scout_variance``,
    ``swap_every``, ``scout_warmup`` as :class:`Scout`. Only the main chain is collected.
    """

    name = "scout_finite"

    def __init__(self, beta: float = 0.2, rate=0.002, clip: float | None = None, init_scale: float = 2.0,
                 n_draws: int = 10, gamma_shrink: float = 1.0, burnin: int = 0, adapt_iterations: int = 20000,
                 bank_size: int = 1000, reverse_factor: str = "proposal", tau: float = 0.1,
                 scout_variance: float = 9.0, swap_every: int = 20, scout_warmup: int = 0):
        super().__init__(beta, rate, clip, init_scale, n_draws, gamma_shrink, burnin, adapt_iterations, bank_size,
                         reverse_factor)
        self._scout_settings(tau, scout_variance, swap_every, scout_warmup)
