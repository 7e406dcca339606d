r"""A sampler written outside ckam-bench: the Barker proposal (Livingstone & Zanella 2022).

From x with gradient g = ∇log π(x): z ~ N(0, σ² I), and each coordinate keeps the sign of
z_i with probability p(z_i g_i) = 1 / (1 + exp(−z_i g_i)), else flips it; y = x + z.
Metropolis–Hastings acceptance, with z = y − x,

    log α = log π(y) − log π(x) + Σ_i [log(1 + e^{−z_i g_i(x)}) − log(1 + e^{z_i g_i(y)})].

:class:`Barker` keeps σ fixed (no adaptation), so the chain is π-invariant by construction.
:class:`AdaptiveBarker` is the worked example of an *adaptive* sampler's contract
(docs/extending.md): σ adapted during a finite burn-in, then the fixed kernel above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start


def barker_step(target, x, logp, g, z, flip, log_u):
    """One Barker iteration from (x, log π(x), ∇log π(x)) with the draws z ~ N(0, σ² I),
    flip ~ U(0, 1)^d and log u: returns the next (x, logp, g) and log α (−inf for a
    non-finite proposal, which is rejected)."""
    step = np.where(flip < 1.0 / (1.0 + np.exp(-z * g)), z, -z)
    y = x + step
    logp_y, g_y = target.log_density_and_grad(y)
    if not (np.isfinite(logp_y) and np.all(np.isfinite(g_y))):
        return x, logp, g, -np.inf
    log_ratio = (logp_y - logp + np.logaddexp(0.0, -step * g).sum()
                 - np.logaddexp(0.0, step * g_y).sum())
    if log_u < log_ratio:
        return y, logp_y, g_y, log_ratio
    return x, logp, g, log_ratio


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
            x, logp, g, log_ratio[i] = barker_step(self.target, x, logp, g, z[i], flips[i], log_u[i])
            n_nonfinite += not np.isfinite(log_ratio[i])
            samples[i] = x
        block = Block(samples=samples, accepted=log_u < log_ratio,
                      accept_prob=np.exp(np.minimum(log_ratio, 0.0)),
                      phase=np.zeros(n, dtype=np.int8), step_size=np.full(n, self.step_size),
                      noise=np.full(n, np.nan), n_nonfinite=n_nonfinite)
        return BarkerState(x=x, logp=float(logp), t=state.t + n, grad=g), block


@dataclass
class AdaptiveBarkerState(BarkerState):
    """Barker's state plus the adapted scale: everything the chain needs to go on lives in the
    state (numbers and arrays), so a stopped run resumes exactly."""

    log_step: float = 0.0


class AdaptiveBarker(Sampler):
    r"""Barker proposal MCMC with σ adapted during a finite burn-in (an adaptive sampler's contract).

    For t < burn_in (phase ``"burn_in"``): log σ ← log σ + (α_t − α*) / (t + 1)^κ, a
    Robbins–Monro step toward the acceptance rate α* (0.57 for Barker, Vogrinc et al. 2023);
    these states are not collected. From t = burn_in on (phase ``"sampling"``) σ stays fixed,
    the kernel is :class:`Barker`'s, π-invariant, and every state is collected: finite
    adaptation, valid for any burn_in.
    """

    name = "adaptive_barker"
    phases = ("burn_in", "sampling")

    def __init__(self, step_size: float = 1.0, burn_in: int = 1000, target_accept: float = 0.57,
                 kappa: float = 0.6):
        Barker(step_size)  # the same check of step_size
        if isinstance(burn_in, bool) or int(burn_in) != burn_in or not 0 <= int(burn_in) <= 10**9:
            raise ValueError(f"burn_in must be an integer in [0, 1e9], got {burn_in}")
        if not 0.0 < float(target_accept) < 1.0:
            raise ValueError(f"target_accept must be in (0, 1), got {target_accept}")
        if not 0.5 < float(kappa) <= 1.0:
            raise ValueError(f"kappa must be in (0.5, 1], got {kappa}")
        self.step_size, self.burn_in = float(step_size), int(burn_in)
        self.target_accept, self.kappa = float(target_accept), float(kappa)

    def skip(self, target):
        return (not target.has_gradient, "needs a gradient")

    def describe(self):
        return {"adaptation": "finite" if self.burn_in > 0 else "none", "burn_in": self.burn_in}

    def trace_columns(self, state):
        return {"step_size": float(np.exp(state.log_step))}

    def init(self, target, x0, rng):
        self.target, self.rng = target, rng
        x, logp = check_start(target, x0)
        return AdaptiveBarkerState(x=x, logp=logp, t=0, grad=target.grad_log_density(x),
                                   log_step=math.log(self.step_size))

    def advance(self, state, n):
        d = self.target.dim
        z = self.rng.standard_normal((n, d))
        flips, log_u = self.rng.random((n, d)), np.log(self.rng.random(n))
        x, logp, g, log_step = state.x, state.logp, state.grad, state.log_step
        collected, log_ratio = [], np.full(n, -np.inf)
        phase, steps = np.zeros(n, dtype=np.int8), np.empty(n)
        for i in range(n):
            t = state.t + i
            steps[i] = math.exp(log_step)
            x, logp, g, log_ratio[i] = barker_step(self.target, x, logp, g, steps[i] * z[i],
                                                   flips[i], log_u[i])
            if t < self.burn_in:  # adapt; the state is not collected
                alpha = math.exp(min(log_ratio[i], 0.0))
                log_step += (alpha - self.target_accept) / (t + 1.0) ** self.kappa
            else:
                phase[i] = 1
                collected.append(x)
        block = Block(samples=np.array(collected).reshape(-1, d), accepted=log_u < log_ratio,
                      accept_prob=np.exp(np.minimum(log_ratio, 0.0)), phase=phase,
                      step_size=steps, noise=np.full(n, np.nan),
                      n_nonfinite=int(np.sum(~np.isfinite(log_ratio))))
        return AdaptiveBarkerState(x=x, logp=float(logp), t=state.t + n, grad=g,
                                   log_step=log_step), block
