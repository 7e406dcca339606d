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

Compiled loop: with numba and a target that has a compiled density (:mod:`ckam_bench.jit`),
:func:`metropolis_walk` runs ``_rw_kernel``, a line-by-line mirror of the Python loop
``_rw_loop`` on the same pre-drawn numbers (``CKAM_BENCH_JIT=0`` forces the Python loop). The
sampling phase of cKAM uses the same walk.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from ckam_bench import jit
from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start
from ckam_bench.targets.base import Target


def predraw(rng: np.random.Generator, n: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Standard normal steps (n, dim) and log-uniforms (n,) for a block of n iterations.

    One (n, dim + 1) normal array per block; the last column becomes log u = log Φ(z).
    Splitting a block into smaller ones leaves every draw unchanged (see the module docstring).
    """
    z = rng.standard_normal((n, dim + 1))
    return z[:, :dim], log_ndtr(z[:, dim])


def positive_step_size(step_size) -> float:
    """Validate a step size ν (finite, > 0) and return it as a float."""
    step_size = float(step_size)
    if not (math.isfinite(step_size) and step_size > 0):
        raise ValueError(f"step_size must be a finite number > 0, got {step_size}")
    return step_size


def _rw_loop(log_density, x, logp, steps, log_u):
    """Metropolis with symmetric steps: propose x + steps[i], accept iff log_u[i] < log π(y) − log π(x).

    Returns (x, logp, states (n, d), log ratios (n,) with −inf for a non-finite proposal, number
    of non-finite proposals)."""
    n, d = steps.shape
    samples = np.empty((n, d))
    log_ratio = np.empty(n)
    isfinite = math.isfinite
    log_u = log_u.tolist()
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
    return x, logp, samples, log_ratio, n_nonfinite


@jit.kernel(jit.A1, jit.F8, jit.A2, jit.A1)
def _rw_kernel(log_density, x, logp, steps, log_u):
    """``_rw_loop`` compiled (two position buffers swapped on acceptance)."""
    n, d = steps.shape
    samples = np.empty((n, d))
    log_ratio = np.empty(n)
    x = x.copy()
    y = np.empty(d)
    n_nonfinite = 0
    for i in range(n):
        for j in range(d):
            y[j] = x[j] + steps[i, j]
        logp_y = log_density(y)
        if math.isfinite(logp_y):
            r = logp_y - logp
            if log_u[i] < r:
                x, y = y, x
                logp = logp_y
        else:
            r = -math.inf
            n_nonfinite += 1
        log_ratio[i] = r
        for j in range(d):
            samples[i, j] = x[j]
    return x, logp, samples, log_ratio, n_nonfinite


def metropolis_walk(target: Target, density, x: np.ndarray, logp: float, steps: np.ndarray,
                    log_u: np.ndarray):
    """Run ``len(steps)`` symmetric Metropolis steps from (x, logp), counting one density
    evaluation per proposal; ``density`` is the target's compiled density (the compiled loop)
    or None (the Python loop). Returns ``(x, logp, samples, log_ratio, n_nonfinite)``."""
    if density is None:
        return _rw_loop(target.log_density, x, logp, steps, log_u)
    out = _rw_kernel(density, np.ascontiguousarray(x, dtype=float), float(logp), np.ascontiguousarray(steps),
                     np.ascontiguousarray(log_u))
    target.n_density += steps.shape[0]
    return out


def warm_up_walk(target: Target) -> None:
    """Compile :func:`metropolis_walk`'s kernel for ``target`` (no-op on the Python path)."""
    density = jit.compiled_log_density(target)
    if density is not None:
        start = np.array(target.start, dtype=float)
        _rw_kernel(density, start, 0.0, np.zeros((1, target.dim)), np.zeros(1))


class RandomWalk(Sampler):
    """Random-walk Metropolis with proposal N(θ, ν² I); ``step_size`` = ν.

    The state is a plain :class:`~ckam_bench.samplers.base.ChainState` (x, logp, t); every
    state is collected (single phase ``"sampling"``).
    """

    name = "rw"
    phases = ("sampling",)

    def __init__(self, step_size: float):
        self.step_size = positive_step_size(step_size)

    def warm_up(self, target: Target) -> None:
        warm_up_walk(target)

    def describe(self) -> dict:
        return {"adaptation": "none"}

    def init(self, target: Target, x0, rng: np.random.Generator) -> ChainState:
        self.target = target
        self.rng = rng
        self._density = jit.compiled_log_density(target)
        x, logp = check_start(target, x0)
        return ChainState(x=x, logp=logp, t=0)

    def advance(self, state: ChainState, n: int):
        eps, log_u = predraw(self.rng, n, self.target.dim)
        x, logp, samples, log_ratio, n_nonfinite = metropolis_walk(
            self.target, self._density, state.x, state.logp, self.step_size * eps, log_u
        )
        block = Block(
            samples=samples,
            accepted=log_u < log_ratio,  # the loop's comparisons, vectorised
            accept_prob=np.exp(np.minimum(log_ratio, 0.0)),
            phase=np.zeros(n, dtype=np.int8),
            step_size=np.full(n, self.step_size),
            noise=np.full(n, np.nan),
            n_nonfinite=n_nonfinite,
        )
        return ChainState(x=x, logp=float(logp), t=state.t + n), block
