"""The sampler interface: an explicit state advanced a *block* of iterations at a time.

A sampler is built from its config (hyperparameters only). ``init(target, x0, rng)`` binds
it to a target and a ``numpy.random.Generator`` and returns its state; ``advance(state, n)``
runs ``n`` iterations and returns the new state and a :class:`Block` with the states to
collect and per-iteration diagnostics. The runner asks for blocks sized so that one takes a
few tens of milliseconds, so a sampler can pre-draw its random numbers for the block and
keep its inner loop tight; it never needs to know about budgets, checkpoints or metrics.

State objects are dataclasses whose fields are numpy arrays, floats and ints (plus nested
such dataclasses), so they can be written to disk without pickle. Every state carries the
current position ``x`` and its log density ``logp``: the density at the current state is
stored and reused, never recomputed (which is what makes pseudo-marginal targets correct).

Samplers that run several chains (parallel tempering, Scout MCMC) keep all chains in their
state and collect the states of the target chain only.

Non-finite log densities at a proposal are rejections and are counted in
``Block.n_nonfinite``; a non-finite log density at the start point is an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ckam_bench.targets.base import Target


NONFINITE_SHRINK = 0.99
"""Factor on a proposal factor L after a non-finite proposal during adaptation (gad*, DM).

A proposal whose log density or gradient is NaN or ±inf is a rejection with acceptance
probability 0 in every adaptation rule. Rules driven by the acceptance probability (MALA's
Robbins–Monro step, HMC's and NUTS's dual averaging, the β recursion of gad*) then shrink the
step as for any rejection. The gradient rules of gad* and DM have no gradient at such a point
(their other terms, the entropy β Σ log L_ii, only grow L), so L is multiplied by this factor
instead of taking the gradient step: a run of non-finite proposals halves L every 69 of them,
while an occasional one (a rate p) costs L a relative 1 % · p per iteration."""


class StartPointError(ValueError):
    """The start point is unusable (wrong shape or non-finite log density)."""


@dataclass
class Block:
    """What ``advance`` returns for a block of ``n`` iterations.

    samples : (k, d) states collected in this block, in order (k ≤ n; burn-in and exploration
        states are not collected).
    accepted : (n,) bool, whether iteration i accepted its proposal.
    accept_prob : (n,) float, the MH acceptance probability min(1, r) of iteration i
        (0 for a non-finite proposal).
    phase : (n,) int8, index into ``sampler.phases`` of the phase iteration i ran in.
    step_size : (n,) float, the step size ν_t used at iteration i (NaN when not defined).
    noise : (n,) float, the noise γ_t used at iteration i (NaN when not defined).
    n_nonfinite : proposals whose log density (or gradient) was NaN or ±inf (rejected).
    n_jitter : proposal covariances that needed a jitter to be positive definite.
    logp : (n,) float or None, log π of the chain's state after iteration i (the log-target
        trace figures); None when the sampler does not record it (stored as NaN).
    divergent : (n,) bool or None, whether iteration i's trajectory diverged (Hamiltonian
        samplers: an energy error beyond the sampler's limit, or a non-finite step); None when
        the sampler has no such notion. Divergences in the collected phase (the last of
        ``phases``) flag the run ``divergent`` (:meth:`ckam_bench.engine.tally.Tally.flags`).
    """

    samples: np.ndarray
    accepted: np.ndarray
    accept_prob: np.ndarray
    phase: np.ndarray
    step_size: np.ndarray
    noise: np.ndarray
    n_nonfinite: int = 0
    n_jitter: int = 0
    logp: np.ndarray | None = None
    divergent: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.accepted.shape[0])


class BlockRecorder:
    """Preallocated per-iteration diagnostics for one block (a small helper for samplers)."""

    def __init__(self, n: int, dim: int, max_collect: int | None = None):
        self.accepted = np.zeros(n, dtype=bool)
        self.accept_prob = np.zeros(n)
        self.phase = np.zeros(n, dtype=np.int8)
        self.step_size = np.full(n, np.nan)
        self.noise = np.full(n, np.nan)
        self.logp = np.full(n, np.nan)
        self.samples = np.empty((n if max_collect is None else max_collect, dim))
        self.n_collected = 0
        self.n_nonfinite = 0
        self.n_jitter = 0

    def collect(self, x: np.ndarray) -> None:
        self.samples[self.n_collected] = x
        self.n_collected += 1

    def block(self) -> Block:
        return Block(
            samples=self.samples[: self.n_collected].copy(),
            accepted=self.accepted,
            accept_prob=self.accept_prob,
            phase=self.phase,
            step_size=self.step_size,
            noise=self.noise,
            n_nonfinite=self.n_nonfinite,
            n_jitter=self.n_jitter,
            logp=self.logp,
        )


def accept_prob(log_ratio: float) -> float:
    """min(1, exp(log_ratio)); NaN counts as 0 (a rejection)."""
    if log_ratio >= 0.0:
        return 1.0
    if log_ratio == log_ratio:  # not NaN
        return math.exp(log_ratio)
    return 0.0


def check_start(target: Target, x0) -> tuple[np.ndarray, float]:
    """Validate a start point and return it with its log density (counted)."""
    x0 = np.array(target.start if x0 is None else x0, dtype=float)
    if x0.shape != (target.dim,):
        raise StartPointError(
            f"start point has shape {x0.shape}, target {target.name!r} needs ({target.dim},)"
        )
    if not np.all(np.isfinite(x0)):
        raise StartPointError(f"start point {x0.tolist()} is not finite")
    logp = float(target.log_density(x0))
    if not math.isfinite(logp):
        raise StartPointError(
            f"log density at the start point {x0.tolist()} is {logp}: choose a start point "
            f"inside the support of {target.name!r}"
        )
    return x0, logp


@dataclass
class ChainState:
    """The minimum every sampler state holds."""

    x: np.ndarray
    """Current position, shape (d,) (or (k, d) for several chains)."""
    logp: float
    """log π at ``x`` (stored, never recomputed)."""
    t: int = 0
    """Iterations done so far."""


class Sampler:
    """Base class for samplers.

    Subclasses set ``phases`` (names of the phases reported per iteration; the first phase
    index whose states are collected is documented by each sampler), implement ``init`` and
    ``advance``, and may override ``skip`` to declare targets they cannot run on.
    """

    name: str = "sampler"
    phases: tuple[str, ...] = ("sampling",)
    kernel = None
    multi_chain: bool = False
    """True for samplers that run several chains and collect the target chain only."""
    resumable: bool = True
    """False for a sampler whose chain state cannot be saved (a library's sampler running on
    its own thread): the runner restarts a killed run of it from the first iteration."""
    ckam_block_seconds: float = 0.0
    """The shortest block, in sampler seconds, this sampler asks to be advanced in: the runner
    uses the larger of it and the run's ``block_seconds``. For a sampler whose ``advance``
    leaves a compiled library loop for Python at a fixed cost per call (the JAX peers: a
    dispatch, a copy of the records, cold caches afterwards), so that its harness cost per
    gradient stays its library's own. 0: the run's ``block_seconds``."""

    # An optional hook, ``ckam_divergent(state, n) -> (n,) bool``: whether each of the n
    # iterations of the block ``advance`` just returned diverged, for a sampler whose library
    # keeps that off the chain (nutpie's trace), or None when not known. The runner calls it off
    # the sampler clock, only when the block's ``divergent`` is None, and checks its result
    # (ckam_bench.engine.runner.sampler_divergences).

    def init(self, target: Target, x0, rng: np.random.Generator):  # pragma: no cover
        raise TypeError(f"{type(self).__name__} must implement init")

    def advance(self, state, n: int):  # pragma: no cover
        raise TypeError(f"{type(self).__name__} must implement advance")

    def warm_up(self, target: Target) -> None:
        """Untimed preparation before the sampler clock starts (e.g. compiling an inner loop
        for this target). Must not evaluate the target through its counted API nor draw from
        the run's random generator. The default does nothing."""

    def describe(self) -> dict:
        """JSON-able facts about this sampler stored in the run's ``status.json`` under
        ``sampler_info`` (e.g. its kind of adaptation — diminishing, finite or
        non-diminishing — and schedule values resolved for this run). The default is empty."""
        return {}

    def trace_columns(self, state) -> dict:
        """Extra columns for the trace row written at a checkpoint, computed from the chain
        state (e.g. swap acceptance per pair of a tempering sampler, the current scale of an
        adapted proposal). Values are floats or 1-D float arrays (stored as list columns).
        The default adds none."""
        return {}

    def skip(self, target: Target) -> tuple[bool, str]:
        """(True, reason) when this sampler cannot run on ``target`` (e.g. needs a gradient)."""
        return False, ""
