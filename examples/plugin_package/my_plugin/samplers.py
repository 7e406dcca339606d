r"""A sampler written outside ckam-bench: the Barker proposal (Livingstone & Zanella 2022).

From x with gradient g = ∇log π(x): z ~ N(0, σ² I), and each coordinate keeps the sign of
z_i with probability p(z_i g_i) = 1 / (1 + exp(−z_i g_i)), else flips it; y = x + z.
Metropolis–Hastings acceptance, with z = y − x,

    log α = log π(y) − log π(x) + Σ_i [log(1 + e^{−z_i g_i(x)}) − log(1 + e^{z_i g_i(y)})].

σ is fixed (no adaptation), so the chain is π-invariant by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start


@dataclass
class BarkerState(ChainState):
    """The chain's position and log density plus the gradient there (stored, not recomputed)."""

    grad: np.ndarray = None


class Barker(Sampler):
    """Barker proposal MCMC with a fixed scale σ (``step_size``); gradient-based."""

    name = "barker"

    def __init__(self, step_size: float = 1.0):
        step_size = float(step_size)
        if not (math.isfinite(step_size) and step_size > 0):
            raise ValueError(f"step_size must be a finite number > 0, got {step_size}")
        self.step_size = step_size

    def skip(self, target):
        return (not target.has_gradient, "needs a gradient")

    def describe(self):
        return {"adaptation": "none"}

    def init(self, target, x0, rng):
        self.target, self.rng = target, rng
        x, logp = check_start(target, x0)
        return BarkerState(x=x, logp=logp, t=0, grad=target.grad_log_density(x))

    def advance(self, state, n):
        d = self.target.dim
        z = self.step_size * self.rng.standard_normal((n, d))
        flips = self.rng.random((n, d))
        log_u = np.log(self.rng.random(n))
        x, logp, g = state.x, state.logp, state.grad
        samples, log_ratio = np.empty((n, d)), np.full(n, -np.inf)
        n_nonfinite = 0
        for i in range(n):
            keep = flips[i] < 1.0 / (1.0 + np.exp(-z[i] * g))
            step = np.where(keep, z[i], -z[i])
            y = x + step
            logp_y, g_y = self.target.log_density_and_grad(y)
            if np.isfinite(logp_y) and np.all(np.isfinite(g_y)):
                log_ratio[i] = (logp_y - logp + np.logaddexp(0.0, -step * g).sum()
                                - np.logaddexp(0.0, step * g_y).sum())
                if log_u[i] < log_ratio[i]:
                    x, logp, g = y, logp_y, g_y
            else:
                n_nonfinite += 1
            samples[i] = x
        block = Block(samples=samples, accepted=log_u < log_ratio,
                      accept_prob=np.exp(np.minimum(log_ratio, 0.0)),
                      phase=np.zeros(n, dtype=np.int8), step_size=np.full(n, self.step_size),
                      noise=np.full(n, np.nan), n_nonfinite=n_nonfinite)
        return BarkerState(x=x, logp=float(logp), t=state.t + n, grad=g), block
