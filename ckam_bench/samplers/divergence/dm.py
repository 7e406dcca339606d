"""The DM sampler and its finite-adaptation variant (Algorithms 1–2 of Dharamshi, Ngo &
Rosenthal; the math is in :mod:`ckam_bench.samplers.divergence`), and the state the whole
family shares."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import log_ndtr

from ckam_bench import jit
from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start
from ckam_bench.samplers.divergence.loops import (PythonDensity, PythonDensityGrad, dm_kernel, dm_loop,
                                                  mh_kernel, mh_loop)
from ckam_bench.samplers.divergence.nearest import flatten_tree, nearest
from ckam_bench.samplers.hamiltonian import check_positive
from ckam_bench.schedules import Constant, Window
from ckam_bench.targets.base import Target

MAX_BANK_FLOATS = 25_000_000
"""Upper bound on bank_size · d² (200 MB of stored factors)."""
MAX_DRAWS = 1000


@dataclass(kw_only=True)
class DMState(ChainState):
    """State of the DM / Scout family (``x``, ``logp``, ``t`` as in ChainState)."""

    chol: np.ndarray
    """Current Cholesky factor L_t (d, d) of the main chain's proposal."""
    gamma_mult: float = 1.0
    """Product of ``gamma_shrink`` over past rejections (1 without shrinking)."""
    scout_x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Scout chain state s (d,) (empty without a scout)."""
    scout_logp: float = 0.0
    """log π(s) (the scout targets π^τ)."""
    swaps_tried: int = 0
    swaps_accepted: int = 0
    n_skipped: int = 0
    """Updates of L skipped because they left a zero or non-finite diagonal."""
    bank_x: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    """Stored states S (s, d) (finite variants)."""
    bank_chol: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    """Stored factors (s, d, d) (finite variants)."""
    bank_seen: int = 0
    """Adaptive iterations offered to the reservoir so far."""
    idx_x: int = -1
    """Index in S of the stored state nearest to x (MH phase), −1 before it."""


def _as_rate(rate):
    if isinstance(rate, (int, float)) and not isinstance(rate, bool):
        rate = Constant(float(rate))
    if not callable(rate):
        raise ValueError(f"rate must be a schedule from ckam_bench.schedules or a number, got {rate!r}")
    g0 = float(rate(0))
    if not (math.isfinite(g0) and g0 > 0):
        raise ValueError(f"rate must give a step size gamma > 0, got {g0} at t = 0")
    return rate


def check_count(name: str, value, low: int, high: int | None = None) -> int:
    """``value`` as an int in [low, high] (no upper bound when ``high`` is None)."""
    if isinstance(value, bool) or int(value) != value:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


class DivergenceMinimisation(Sampler):
    """DM sampler with perpetual adaptation (Algorithm 1; see :mod:`ckam_bench.samplers.divergence`).

    beta : balancing parameter β > 0 (0.2).
    rate : γ_t, a schedule of ckam_bench.schedules or a number (constant γ = 0.002 in the paper).
    clip : h > 0, gradient entries are clipped to ±h; None gives 10/γ₀.
    init_scale : σ > 0, L₀ = σI (2).
    n_draws : J ≥ 1 gradient draws per iteration, the proposal's own ε among them (10).
    gamma_shrink : factor in (0, 1] applied to γ at every rejection (1: off).
    burnin : iterations whose states are not collected (≥ 0).
    """

    name = "dm"
    phases = ("burnin", "sampling")
    _scout = False
    _finite = False

    def __init__(self, beta: float = 0.2, rate=0.002, clip: float | None = None, init_scale: float = 2.0,
                 n_draws: int = 10, gamma_shrink: float = 1.0, burnin: int = 0):
        self.beta = check_positive("beta", beta)
        self.rate = _as_rate(rate)
        self.clip = 10.0 / float(self.rate(0)) if clip is None else check_positive("clip", clip)
        self.init_scale = check_positive("init_scale", init_scale)
        self.n_draws = check_count("n_draws", n_draws, 1, MAX_DRAWS)
        gamma_shrink = float(gamma_shrink)
        if not 0.0 < gamma_shrink <= 1.0:
            raise ValueError(f"gamma_shrink must be in (0, 1], got {gamma_shrink}")
        self.gamma_shrink = gamma_shrink
        self.burnin = check_count("burnin", burnin, 0)

    # ------------------------------------------------------------------ contract
    def skip(self, target: Target) -> tuple[bool, str]:
        if not target.has_gradient:
            return True, f"{self.name} needs the gradient of the log density; {target.name!r} has none"
        return False, ""

    def describe(self) -> dict:
        if isinstance(self.rate, Window):
            kind = "finite"
        elif isinstance(self.rate, Constant) and self.gamma_shrink == 1.0:
            kind = "non-diminishing"
        else:
            kind = "diminishing"
        info = {"adaptation": kind, "gamma0": float(self.rate(0)), "clip": self.clip, "n_draws": self.n_draws,
                "collects": "main chain only" if self._scout else "the chain"}
        if kind == "finite":  # the kernel is fixed from this iteration on
            info["adapt_until"] = int(self.rate.until)
        return info

    def warm_up(self, target: Target) -> None:
        if jit.compiled_log_density_and_grad(target) is not None:
            dm_kernel.compile()
        if self._finite and jit.compiled_log_density(target) is not None:
            mh_kernel.compile()

    def init(self, target: Target, x0, rng: np.random.Generator) -> DMState:
        self.target = target
        self.rng = rng
        self._f = jit.compiled_log_density_and_grad(target)
        x, logp = check_start(target, x0)
        d = target.dim
        state = DMState(x=x, logp=logp, t=0, chol=self.init_scale * np.eye(d))
        if self._scout:
            state.scout_x, state.scout_logp = x.copy(), logp
        return state

    def trace_columns(self, state: DMState) -> dict:
        out = {"proposal_scale": float(np.exp(np.mean(np.log(np.abs(np.diag(state.chol)))))),
               "gamma_multiplier": float(state.gamma_mult), "chol_updates_skipped": float(state.n_skipped)}
        if self._scout:
            rate = state.swaps_accepted / state.swaps_tried if state.swaps_tried else math.nan
            out["swap_acceptance"] = out["swap_acceptance_mean"] = rate
        return out

    # ------------------------------------------------------------------ iterations
    def _row_width(self) -> int:
        d = self.target.dim
        return self.n_draws * d + 1 + (d + 2 if self._scout else 0) + (1 if self._finite else 0)

    def _phases(self, t: np.ndarray) -> np.ndarray:
        """Phase index of each iteration t: 0 burn-in, 1 sampling."""
        return (t >= self.burnin).astype(np.int8)

    def _adaptive_segment(self, state: DMState, n: int, bank_x, bank_L):
        d = self.target.dim
        normals = self.rng.standard_normal((n, self._row_width()))
        if isinstance(self.rate, Constant):
            rates = np.full(n, float(self.rate(0)))
        else:
            rates = np.array([self.rate(t) for t in range(state.t, state.t + n)], dtype=float)
        x, chol = np.array(state.x, dtype=float), np.array(state.chol, dtype=float)
        s = np.array(state.scout_x, dtype=float) if self._scout else np.zeros(d)
        args = (x, float(state.logp), chol, s, float(state.scout_logp), normals, rates, self.beta, self.clip,
                self.n_draws, float(state.gamma_mult), self.gamma_shrink, self._scout,
                float(getattr(self, "tau", 1.0)), float(getattr(self, "_scout_sd", 1.0)),
                int(getattr(self, "swap_every", 1)), int(state.t), bank_x, bank_L, int(state.bank_seen))
        if self._f is not None:
            out = dm_kernel(self._f, *args)
        else:
            out = dm_loop(PythonDensityGrad(self.target), *args)
        (logp, logp_s, gamma_mult, bank_seen, samples, log_ratio, accepted_flags, logps, scales, n_nonfinite,
         n_skipped, tried, accepted) = out
        per_iter = self.n_draws + (1 if self._scout else 0)  # the scout's step evaluates f too
        self.target.n_density += per_iter * n
        self.target.n_grad += per_iter * n
        new = DMState(x=x, logp=float(logp), t=state.t + n, chol=chol, gamma_mult=float(gamma_mult),
                      scout_x=s if self._scout else state.scout_x, scout_logp=float(logp_s),
                      swaps_tried=state.swaps_tried + int(tried), swaps_accepted=state.swaps_accepted + int(accepted),
                      n_skipped=state.n_skipped + int(n_skipped), bank_x=state.bank_x, bank_chol=state.bank_chol,
                      bank_seen=int(bank_seen), idx_x=state.idx_x)
        return new, samples, log_ratio, accepted_flags, logps, scales, int(n_nonfinite)

    def _segments(self, t: int, n: int):
        """Split iterations [t, t + n) at phase changes: list of (length, kind) with kind 'adapt'."""
        return [(n, "adapt")]

    def advance(self, state: DMState, n: int):
        t0 = state.t
        parts = {k: [] for k in ("samples", "log_ratio", "accepted", "logp", "scale")}
        n_nonfinite = 0
        empty = np.zeros((0, 0))
        for length, kind in self._segments(state.t, n):
            if kind == "adapt":
                bank_x, bank_L = (state.bank_x, state.bank_chol) if self._finite else (empty, np.zeros((0, 0, 0)))
                state, samples, log_ratio, acc, logps, scales, bad = self._adaptive_segment(state, length, bank_x,
                                                                                            bank_L)
            else:
                state, samples, log_ratio, acc, logps, bad = self._mh_segment(state, length)
                scales = np.full(length, math.nan)
            n_nonfinite += bad
            for key, value in zip(parts, (samples, log_ratio, acc, logps, scales)):
                parts[key].append(value)
        samples = np.concatenate(parts["samples"])
        log_ratio = np.concatenate(parts["log_ratio"])
        phase = self._phases(np.arange(t0, t0 + n))
        collect = np.arange(t0, t0 + n) >= self.burnin
        block = Block(
            samples=samples[collect],
            accepted=np.concatenate(parts["accepted"]),
            accept_prob=np.exp(np.minimum(log_ratio, 0.0)),
            phase=phase,
            step_size=np.concatenate(parts["scale"]),
            noise=np.full(n, np.nan),
            n_nonfinite=n_nonfinite,
            logp=np.concatenate(parts["logp"]),
        )
        return state, block


class FiniteDivergenceMinimisation(DivergenceMinimisation):
    """DM with finite adaptation (Algorithm 2; see :mod:`ckam_bench.samplers.divergence`).

    adapt_iterations : F ≥ 0, iterations of the adaptive DM phase (F = 0 needs :meth:`set_bank`).
    bank_size : |S| ≥ 1, stored (state, factor) pairs (a uniform subset of the adaptive phase).
    reverse_factor : "proposal" (correct: q(x | y) uses the factor nearest to y) or "current"
        (the authors' bug: the factor nearest to x; for tests and comparison only).
    The other arguments are DM's; ``burnin`` counts from the start of the run.
    """

    name = "dm_finite"
    phases = ("burnin", "adaptive", "sampling")
    _finite = True

    def __init__(self, beta: float = 0.2, rate=0.002, clip: float | None = None, init_scale: float = 2.0,
                 n_draws: int = 10, gamma_shrink: float = 1.0, burnin: int = 0, adapt_iterations: int = 20000,
                 bank_size: int = 1000, reverse_factor: str = "proposal"):
        super().__init__(beta, rate, clip, init_scale, n_draws, gamma_shrink, burnin)
        self.adapt_iterations = check_count("adapt_iterations", adapt_iterations, 0)
        self.bank_size = check_count("bank_size", bank_size, 1)
        if reverse_factor not in ("proposal", "current"):
            raise ValueError(f"reverse_factor must be 'proposal' or 'current', got {reverse_factor!r}")
        self.reverse_factor = reverse_factor
        self._given_bank = None

    def set_bank(self, points, chols) -> None:
        """Use a fixed bank of (state, lower Cholesky factor) pairs instead of an adaptive phase
        (needs ``adapt_iterations = 0``); call before ``init``."""
        points = np.ascontiguousarray(points, dtype=float)
        chols = np.ascontiguousarray(chols, dtype=float)
        if points.ndim != 2 or chols.shape != (points.shape[0], points.shape[1], points.shape[1]):
            raise ValueError(f"bank must be points (s, d) and factors (s, d, d), got {points.shape}, {chols.shape}")
        if self.adapt_iterations != 0:
            raise ValueError(f"adapt_iterations must be 0 with a given bank, got {self.adapt_iterations}")
        self._given_bank = (points, np.tril(chols))

    def describe(self) -> dict:
        return {**super().describe(), "adaptation": "finite", "adapt_iterations": self.adapt_iterations,
                "adapt_until": self.adapt_iterations, "bank_size": self.bank_size,
                "reverse_factor": self.reverse_factor}

    def init(self, target: Target, x0, rng: np.random.Generator) -> DMState:
        d = target.dim
        if self.bank_size * d * d > MAX_BANK_FLOATS:
            raise ValueError(f"bank_size must keep bank_size * d^2 <= {MAX_BANK_FLOATS}, got "
                             f"{self.bank_size} * {d}^2")
        if self.adapt_iterations == 0 and self._given_bank is None:
            raise ValueError("adapt_iterations must be >= 1 (or a bank given with set_bank), got 0")
        state = super().init(target, x0, rng)
        self._density = jit.compiled_log_density(target)
        self._tree = None
        if self._given_bank is not None:
            state.bank_x, state.bank_chol = self._given_bank[0].copy(), self._given_bank[1].copy()
            state.bank_seen = state.bank_x.shape[0]
            state.idx_x = self._freeze(state)
        else:
            state.bank_x = np.zeros((self.bank_size, d))
            state.bank_chol = np.zeros((self.bank_size, d, d))
        return state

    def trace_columns(self, state: DMState) -> dict:
        out = super().trace_columns(state)
        out["bank_filled"] = float(min(state.bank_seen, state.bank_x.shape[0]))
        return out

    def _phases(self, t: np.ndarray) -> np.ndarray:
        """Phase index of each iteration t: 0 burn-in, 1 adaptive, 2 MH (sampling)."""
        return np.where(t < self.burnin, 0, np.where(t < self.adapt_iterations, 1, 2)).astype(np.int8)

    def _segments(self, t: int, n: int):
        k = min(n, max(0, self.adapt_iterations - t))
        return [seg for seg in ((k, "adapt"), (n - k, "mh")) if seg[0] > 0]

    def _freeze(self, state: DMState) -> int:
        """Build the nearest-neighbour tree over the filled bank; the index nearest to x."""
        filled = min(state.bank_seen, state.bank_x.shape[0])
        points = np.ascontiguousarray(state.bank_x[:filled])
        chols = np.ascontiguousarray(state.bank_chol[:filled])
        log_dets = np.sum(np.log(np.abs(np.diagonal(chols, axis1=1, axis2=2))), axis=1)
        self._tree = (points, chols, np.ascontiguousarray(log_dets), *flatten_tree(points))
        size = 2 * self._tree[3].shape[0] + 2
        return int(nearest(np.ascontiguousarray(state.x, dtype=float), points, *self._tree[3:10],
                           np.empty(size, dtype=np.int64), np.empty(size), -1))

    def _mh_segment(self, state: DMState, n: int):
        d = self.target.dim
        if self._tree is None:
            state.idx_x = self._freeze(state)
        width = d + 1 + (d + 2 if self._scout else 0)
        normals = self.rng.standard_normal((n, width))
        x = np.array(state.x, dtype=float)
        s = np.array(state.scout_x, dtype=float) if self._scout else np.zeros(d)
        log_u = np.ascontiguousarray(log_ndtr(normals[:, d]))
        args = (x, float(state.logp), int(state.idx_x), s, float(state.scout_logp), normals, log_u, *self._tree,
                self.reverse_factor == "proposal", self._scout, float(getattr(self, "tau", 1.0)),
                float(getattr(self, "_scout_sd", 1.0)), int(getattr(self, "swap_every", 1)), int(state.t))
        if self._density is not None:
            out = mh_kernel(self._density, *args)
        else:
            out = mh_loop(PythonDensity(self.target), *args)
        logp, idx_x, logp_s, samples, log_ratio, accepted_flags, logps, n_nonfinite, tried, accepted = out
        self.target.n_density += n * (2 if self._scout else 1)
        new = DMState(x=x, logp=float(logp), t=state.t + n, chol=state.chol, gamma_mult=state.gamma_mult,
                      scout_x=s if self._scout else state.scout_x, scout_logp=float(logp_s),
                      swaps_tried=state.swaps_tried + int(tried), swaps_accepted=state.swaps_accepted + int(accepted),
                      n_skipped=state.n_skipped, bank_x=state.bank_x, bank_chol=state.bank_chol,
                      bank_seen=state.bank_seen, idx_x=int(idx_x))
        return new, samples, log_ratio, accepted_flags, logps, int(n_nonfinite)
