r"""Random-walk Metropolis (RW), the speed yardstick of the benchmark.

Proposal and acceptance (symmetric proposal, so no Hastings correction):

    θ' = θ + ν ε,   ε ~ N(0, I_d),
    accept iff  log u < log π(θ') − log π(θ),   u ~ U(0, 1),

i.e. with probability α = min{1, π(θ')/π(θ)}. A proposal whose log density is NaN or ±inf
is rejected (α = 0) and counted in ``Block.n_nonfinite``. cKAM tables: ν = √15 in 2-D
(bimodal, gmm2d), ν = 2.38/√32 in 32-D (gmm32).

Random numbers (:func:`predraw`): iteration i consumes the d + 1 standard normals of row i of
one (n, d + 1) array drawn at the start of the block: the first d give the step, the last, z,
gives the log-uniform log u = log Φ(z) (Φ(Z) ~ U(0, 1) exactly). numpy's Generator fills an
array element by element from one stream, so advancing n iterations at once gives exactly the
same chain as advancing n₁ + n₂ + … = n iterations in several blocks from the same generator:
a run's chain does not depend on the block sizes the runner happens to choose.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from ckam_bench.samplers.base import BlockRecorder, ChainState, Sampler, check_start
from ckam_bench.targets.base import Target


def predraw(rng: np.random.Generator, n: int, dim: int) -> tuple[np.ndarray, list[float]]:
    """Standard normal steps (n, dim) and log-uniforms (n,) for a block of n iterations.

    One (n, dim + 1) normal array per block; the last column becomes log u = log Φ(z).
    Splitting a block into smaller ones leaves every draw unchanged (see the module docstring).
    The log-uniforms are returned as a list of Python floats for fast scalar comparisons.
    """
    z = rng.standard_normal((n, dim + 1))
    return z[:, :dim], log_ndtr(z[:, dim]).tolist()


def positive_step_size(step_size) -> float:
    """Validate a step size ν (finite, > 0) and return it as a float."""
    step_size = float(step_size)
    if not (math.isfinite(step_size) and step_size > 0):
        raise ValueError(f"step_size must be a finite number > 0, got {step_size}")
    return step_size


class RandomWalk(Sampler):
    """Random-walk Metropolis with proposal N(θ, ν² I); ``step_size`` = ν.

    The state is a plain :class:`~ckam_bench.samplers.base.ChainState` (x, logp, t); every
    state is collected (single phase ``"sampling"``).
    """

    name = "rw"
    phases = ("sampling",)

    def __init__(self, step_size: float):
        self.step_size = positive_step_size(step_size)

    def init(self, target: Target, x0, rng: np.random.Generator) -> ChainState:
        self.target = target
        self.rng = rng
        x, logp = check_start(target, x0)
        return ChainState(x=x, logp=logp, t=0)

    def advance(self, state: ChainState, n: int):
        d = self.target.dim
        eps, log_u = predraw(self.rng, n, d)
        steps = self.step_size * eps
        rec = BlockRecorder(n, d)
        samples = rec.samples
        log_ratio = np.empty(n)  # log π(θ') − log π(θ); −inf for a non-finite proposal
        log_density = self.target.log_density
        isfinite = math.isfinite
        x, logp = state.x, state.logp
        n_nonfinite = 0
        for i in range(n):
            y = x + steps[i]
            logp_y = log_density(y)
            if isfinite(logp_y):
                r = logp_y - logp
                if log_u[i] < r:
                    x, logp = y, logp_y
            else:
                r = -math.inf
                n_nonfinite += 1
            log_ratio[i] = r
            samples[i] = x
        rec.n_collected = n
        rec.n_nonfinite = n_nonfinite
        rec.accepted[:] = np.asarray(log_u) < log_ratio  # the loop's comparisons, vectorised
        rec.accept_prob[:] = np.exp(np.minimum(log_ratio, 0.0))
        rec.step_size[:] = self.step_size
        return ChainState(x=x, logp=float(logp), t=state.t + n), rec.block()
