r"""Kernel Adaptive Metropolis–Hastings (KAM) and cyclical KAM (cKAM).

KAM: Sejdinovic, Strathmann, Lomeli Garcia, Andrieu & Gretton (2014), "Kernel Adaptive
Metropolis-Hastings" (MCMC Kameleon). cKAM: Li, Zeng & Guo, "Cyclical Kernel Adaptive
Metropolis" (Algorithm 2).

**Kernel proposal.** A subsample z = (z_1, …, z_M) of the chain history and a kernel k
(:mod:`ckam_bench.kernels`) define, at a point θ,

    M_θ = 2 [∇_θ k(θ, z_1), …, ∇_θ k(θ, z_M)]          (d × M)
    A_θ = M_θ − m̄_θ 1ᵀ = M_θ H,   H = I − 11ᵀ/M       (m̄_θ the mean column)
    C(θ) = γ² I + ν² M_θ H M_θᵀ = γ² I + ν² A_θ A_θᵀ

(H is idempotent, so M H Mᵀ = (MH)(MH)ᵀ: no M × M matrix is ever built). The proposal
q(θ'|θ) = N(θ, C(θ)) is sampled without any factorisation,

    θ' = θ + γ ξ + ν A_θ ζ,   ξ ~ N(0, I_d),  ζ ~ N(0, I_M),

and accepted with probability

    α = min{1, exp(log π(θ') − log π(θ) + log q(θ|θ') − log q(θ'|θ))},

where the forward and the reverse density use the **same** z, ν and γ: C(θ') is built from
the subsample that drew θ'. (kameleon-mcmc caches the forward density from an older z, a
wrong ratio while adapting.) Only the Gram matrix S_θ = A_θ A_θᵀ (d × d) enters the
densities; with δ = θ' − θ (the same δ for both directions)

    log q(θ'|θ) = −½ δᵀ C(θ)⁻¹ δ − ½ log|C(θ)| − (d/2) log 2π.

In 2-D, C is 2 × 2 and closed forms on Python floats are used; otherwise a Cholesky factor.
A covariance whose Cholesky pivots fall below 1e-12 × their diagonal entry is numerically
singular; it gets a jitter ``ridge · (tr C / d) · I`` (× 10 until it factors), counted in
``Block.n_jitter`` (``ridge``: cKAM's argument, 1e-10 for KAM). With M < 2 (an empty or
one-state history) A = 0 and the proposal is N(θ, γ² I).

**One KAM iteration** (schedule clock s: s = t for KAM, s = τ, the iteration within the
cycle, for cKAM's exploration):

1. with probability p_s redraw z: M = min(m, n) states drawn uniformly without replacement
   from the n states of the history (one state per iteration, accepted or not: x_0 … x_{t−1},
   the current state excluded, as in the KAMH paper), and refit the kernel on z
   (``kernel.fit``: the median heuristic of the Gaussian kernel);
2. draw θ', accept or reject with α (a NaN or ±inf log π(θ'), or a proposal covariance
   that is not finite, is a rejection, α = 0, counted in ``Block.n_nonfinite``);
3. adapt the step size: log ν ← log ν + η_s (α − α*) (``adaptation``, Robbins–Monro);
4. append the iteration's starting state θ_t to the history.

A_θ and S_θ at the current state live in the state and stay valid while z is unchanged:
a redraw recomputes them, an acceptance takes over those computed at θ'. The cost of an
iteration is one density evaluation and one kernel-gradient evaluation (at θ').

**History (KAM).** The history is kept bounded as a uniform reservoir sample (Vitter's
algorithm R) of capacity ``history_size`` ≥ m: the first ``history_size`` states are stored;
after that, the i-th state of the chain (counted from 1) replaces a uniformly chosen slot
with probability ``history_size``/i and is dropped otherwise. At every step the reservoir is a uniform random subset of the whole
history, so M states drawn without replacement from it are distributed exactly like M states
drawn without replacement from the whole history (successive redraws share the reservoir,
which a draw from the full history would not). The cKAM cycle history is at most βL + 1
states and is stored whole (a reservoir that never fills).

**KAM** (:class:`KAM`) — phases ``("burnin", "sampling")``: the state after iteration t is
collected for t ≥ ``burnin``. Redraw probability p_t = ``subsample_prob(t)``: PowerDecay
(p_t = (1 + t)^(−1/2), diminishing adaptation, Roberts & Rosenthal 2007), Constant(1), or
Window(until=burnin) (adapt z during burn-in only). Noise γ_t = ``noise(t)``: Constant (0.2
in the KAMH paper) or NoiseDecay (the cKAM authors: 4 → 1 over the run). The step size keeps
adapting with the diminishing rate η_t. (The cKAM authors' code never fills its subsample, so
its kernel term is always empty, and redraws with probability 1 − p_t; not here.)

**cKAM** (:class:`CyclicalKAM`) — cycles of L = ``cycle.cycle_length`` iterations, τ = t mod L,
u = τ/L, phases ``("exploration", "sampling")``; runs for as long as it is advanced.

* Cycle start (τ = 0): clear the history (z comes from the current cycle only, M = 0 at
  τ = 0), reset ν to ``step_size`` and restart the clocks of ``adaptation``, ``noise`` and
  ``subsample_prob`` (all evaluated at τ).
* Exploration (u ≤ β): exactly the KAM iteration above (the same code), nothing collected.
* Transition (the first sampling iteration, τ_s = min{τ : τ/L > β}): with ν_exp the current
  adapted step size and γ = noise(τ_s),

      ν_0 = 2 ν_exp / (cos βπ + 1),   Σ = (γ/ν_exp)² I + A_θ A_θᵀ

  at the current θ and z; Σ is factored once (L_Σ, jitter if needed).
* Sampling (u > β): ν_τ = (ν_0/2)(cos πu + 1) (= ν_exp at u = β, → 0 at the cycle end),

      θ' = θ + ν_τ L_Σ ε,  ε ~ N(0, I_d),   accept iff log U < log π(θ') − log π(θ)

  (symmetric proposal), collecting every state. The steps ν_τ L_Σ ε of the whole sampling
  part of a block come from one matrix product and the loop is random-walk Metropolis's own
  (:func:`ckam_bench.samplers.random_walk.metropolis_walk`): sampling costs what RW costs.

**cKAM as published is not π-invariant.** Each iteration is a valid MH step for the kernel it
uses, but that kernel depends on the chain's past: ν is re-adapted inside every cycle, the
adapted ν depends on the mode the cycle spent its exploration in (bimodal: median 0.48 in the
narrow mode, 1.83 in the wide one, issue 9), and it is frozen, together with Σ built from A_θ
at the *current* θ, into the whole sampling phase. The sampling-phase kernel is thus chosen by
the state it starts from, and since the adaptation restarts every cycle it never diminishes:
Roberts & Rosenthal's conditions fail and the cycle kernel does not leave π invariant. The
stationarity check (:mod:`ckam_bench.checks.stationarity`) shows it: 100 chains started from exact
draws of the bimodal target at a cycle start drift from 50 % in the wide mode to about a
quarter within 60 cycles (docs/validity.md; ``describe()`` reports
``adaptation: non-diminishing``).

**cKAM with finite adaptation** (``adapt_cycles`` = C, ``sampler=ckam_finite``). The first C
cycles run exactly as above. At the transition of cycle C − 1 the adapted quantities are
frozen: ξ = (z, ν_exp, L_Σ, ν_0, γ_s). Every later cycle keeps them: its exploration runs the
KAM iteration with the frozen z and ν (no redraw, no step-size update; the noise γ_τ still
follows its schedule over the cycle, a deterministic function of τ), its transition reuses
L_Σ and ν_0 instead of rebuilding Σ at the current θ, and its sampling phase is unchanged
(the cheap symmetric N(θ, ν_τ² Σ) walk, ν_τ the cosine of τ). Validity: after the fixed time
T_f = C·L, each iteration τ of a cycle is a Metropolis–Hastings step whose proposal depends
only on (θ, ξ, τ) — exploration: N(θ, γ_τ² I + ν² A_θ A_θᵀ) with the forward and reverse
densities built from the same z; sampling: a symmetric Gaussian — so each step is
π-reversible and the cycle kernel P_ξ = K_{ξ,0} ⋯ K_{ξ,L−1} leaves π invariant for every ξ.
Each exploration step has a proposal density positive everywhere (γ_τ ≥ γ_end > 0) and
positive acceptance where π > 0, so P_ξ is π-irreducible and aperiodic, hence ergodic. The
adaptation stops at a fixed time (finite adaptation, Roberts & Rosenthal 2007, §3): given ξ
and X_{T_f}, the cycle-start states are a homogeneous Markov chain with kernel P_ξ and their
law converges to π, and so does that of every collected state. The exploration (noise 4 → 1
over each cycle, the kernel proposal) and the cheap sampling phase are kept; only the
per-cycle re-adaptation goes. ``describe()`` reports ``adaptation: finite`` and T_f.

**cKAM with diminishing adaptation** (:class:`DiminishingCyclicalKAM`, ``sampler=ckam_dim``).
The cycles go on as published (exploration with the noise γ_τ restarting at every cycle, a
fixed function of τ; the cheap cosine walk in the sampling phase), but nothing is reset and
every adapted quantity moves by less and less. With s the adaptation clock (exploration
iterations of the whole run, s = c·n_explore + τ in cycle c) and ξ = (z, ν, Σ):

* history: a uniform reservoir (capacity ``history_size``) of the exploration states of
  *all* cycles; z is redrawn from it with probability p_s = ``subsample_prob(s)`` (PowerDecay
  (1 + s)^(−1/2): p_s → 0, Σ p_s = ∞, KAM's rule);
* ν: log ν ← Π[log ν + η_s(α − α*)], η_s = ``adaptation`` on the clock s, Π the projection on
  [log ν_min, log ν_max] (``step_size_bounds``);
* Σ, at the transition of cycle c: Σ̂_c = (γ/ν)² I + A_θ A_θᵀ (published cKAM's matrix) and
  Σ_c = Π_Λ[Σ_{c−1} + w_c (Σ̂_c − Σ_{c−1})] (Σ_0 = Π_Λ Σ̂_0), w_c = ``covariance_rate(c)``
  (PowerDecay (1 + c)^(−1): the mean of the cycles' estimates), Π_Λ clipping the eigenvalues
  into [λ_min, λ_max] (``covariance_bounds``); ν_0 = 2ν/(cos βπ + 1) with the current ν.

Validity (Roberts & Rosenthal 2007: diminishing adaptation and containment imply that the
law of the chain converges to π). For fixed ξ every step is an MH step whose proposal
depends only on (θ, ξ, τ) — exploration: N(θ, γ_τ² I + ν² A_θ A_θᵀ) with both densities
from the same z; sampling: a symmetric Gaussian — so the cycle kernel P_ξ leaves π invariant, and it is
π-irreducible and aperiodic (γ_τ ≥ γ_end > 0). *Diminishing adaptation*: from one
iteration to the next ξ changes only through a redraw of z (probability p_s → 0), a step
of log ν of at most η_s (→ 0), or a move of Σ of at most w_c·(λ_max − λ_min) (→ 0) once per
cycle, so sup_θ ‖P_{ξ_{t+1}}(θ, ·) − P_{ξ_t}(θ, ·)‖ → 0 in probability. *Containment*: ν
lies in [ν_min, ν_max] and Σ's eigenvalues in [λ_min, λ_max], and for a kernel with bounded
gradients (Gaussian, Matérn at a fixed lengthscale: the defaults) A_θ A_θᵀ ⪯ 4M·sup‖∇k‖² I,
so every proposal covariance of the cycle is bounded above, and those of the exploration
steps below by γ_end² I: on targets with super-exponential tails and regular contours (the
Gaussian mixtures here; Jarner & Hansen 2000) such random-walk-type kernels share a drift
condition with V ∝ π^(−1/2) and a small set, which gives containment (Bai, Roberts &
Rosenthal 2011 make this argument for adaptive Metropolis with bounded covariances).
The chain is then ergodic for π; this is a sketch of the standard argument, and the
stationarity check (chains started from π stay at π, docs/validity.md) is its test.
``describe()`` reports ``adaptation: diminishing`` when p, η and w all decay to 0.

Compiled loops (:mod:`ckam_bench.jit`; ``CKAM_BENCH_JIT=0`` switches them off): with numba
and a target that has a compiled density, the sampling phase runs RW's compiled kernel. The
KAM iteration stays in Python (the kernel gradients call scipy's Bessel functions, which
numba cannot), but calls the target's compiled density when it has one (counting one
evaluation per iteration, as the Python path does) and, for d > 2, factors C with the
compiled Cholesky branch of :func:`log_normal_kernel` (same rule, same jitter).

Recorded per iteration: step size ν (exploration: the adapted ν used by the proposal) and
noise γ (sampling: the γ frozen into Σ at the transition).

**Random numbers.** Every iteration consumes one row of standard normals drawn per phase
segment of a block (a segment: consecutive iterations of one phase inside one block): a KAM
row holds ξ (d), ζ (m) and m + 3 normals turned into uniforms by Φ (accept log U = log Φ,
redraw coin, reservoir slot, and m for the subsample: Floyd's algorithm draws a uniform
M-subset from M uniforms); a cKAM sampling row holds ε (d) and log U. No other draws are made,
so a chain does not depend on how the runner splits it into blocks.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dpotrf, dtrtrs
from scipy.special import log_ndtr, ndtr

from ckam_bench import jit
from ckam_bench.samplers.base import BlockRecorder, ChainState, Sampler, accept_prob, check_start
from ckam_bench.samplers.random_walk import metropolis_walk, warm_up_walk
from ckam_bench.schedules import CyclicalCosine
from ckam_bench.targets.base import Target

__all__ = ["KAMState", "CyclicalKAMState", "DiminishingCKAMState", "KAM", "CyclicalKAM",
           "DiminishingCyclicalKAM", "proposal_covariance"]

_PIVOT_TOL = 1e-12
_MAX_JITTER_TRIES = 40
_LOG_2PI = math.log(2.0 * math.pi)


# ---------------------------------------------------------------------------------- states
@dataclass(kw_only=True)
class KAMState(ChainState):
    """KAM chain state (also the exploration part of cKAM's)."""

    log_step: float
    """log ν, the adapted step size."""
    z: np.ndarray
    """(m, d) subsample buffer; rows ``[:n_sub]`` are the current subsample z."""
    n_sub: int
    """M, the current subsample size."""
    grads: np.ndarray
    """(m, d) buffer; rows ``[:n_sub]`` are A_xᵀ = 2(G − Ḡ), G the kernel gradients at x."""
    gram: np.ndarray
    """(d, d) S_x = A_x A_xᵀ."""
    history: np.ndarray
    """(capacity, d) reservoir of past states; rows ``[:min(n_seen, capacity)]`` are valid."""
    n_seen: int
    """States offered to the history so far (KAM: t; cKAM: iterations of this cycle)."""

    def copy(self):
        """A deep copy (``advance`` works on a copy and leaves its input untouched)."""
        return copy.deepcopy(self)


@dataclass(kw_only=True)
class CyclicalKAMState(KAMState):
    """cKAM chain state: KAM's plus the sampling-phase proposal of the current cycle."""

    initial_step: float = math.nan
    """ν_0 = 2ν_exp/(cos βπ + 1) of the current cycle (NaN before its first transition)."""
    chol: np.ndarray
    """(d, d) lower Cholesky factor L_Σ of the current cycle's sampling covariance Σ (zeros
    before the first transition)."""
    sampling_noise: float = math.nan
    """γ frozen into Σ at the transition."""


@dataclass(kw_only=True)
class DiminishingCKAMState(CyclicalKAMState):
    """State of cKAM with diminishing adaptation: cKAM's plus the running Σ."""

    sigma: np.ndarray
    """(d, d) Σ_c, the sampling covariance averaged over the cycles (zeros before the first
    transition)."""


# ---------------------------------------------------------------------------------- helpers
# Upper bounds on sizes that allocate: a subsample of M points costs O(M d) memory and O(M d)
# work per step (O(M² d) at a cKAM transition); a history reservoir O(H d) memory.
MAX_SUBSAMPLE = 100_000
MAX_HISTORY = 10_000_000


def _count(name: str, value, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or float(value) != int(float(value)) or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    if maximum is not None and int(value) > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}, got {int(value):,}")
    return int(value)


def _bounds(name: str, value) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be two numbers [low, high], got {value!r}") from None
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"{name} must be two finite numbers 0 < low < high, got {value!r}")
    return lo, hi


def _jitter_scale(diag_sum: float, d: int) -> float:
    scale = diag_sum / d
    return scale if scale > 0 and math.isfinite(scale) else 1.0


def cholesky_repaired(C: np.ndarray, ridge: float) -> tuple[np.ndarray, bool]:
    """Lower Cholesky factor of C, adding ridge·(tr C/d)·I (× 10 per retry) if needed.

    C counts as numerically singular when a pivot L_ii² is ≤ 1e-12 · C_ii (or LAPACK's
    ``dpotrf`` fails). Returns (L, jittered).
    """
    d = C.shape[0]
    diag = C.diagonal().copy()
    jitter = 0.0
    for _ in range(_MAX_JITTER_TRIES):
        L, info = dpotrf(C if jitter == 0.0 else C + jitter * np.eye(d), lower=1, clean=1)
        if info == 0 and (L.diagonal() ** 2 > _PIVOT_TOL * (diag + jitter)).all():
            return L, jitter > 0.0
        jitter = ridge * _jitter_scale(float(diag.sum()), d) if jitter == 0.0 else 10.0 * jitter
    raise np.linalg.LinAlgError(f"covariance could not be repaired by a jitter up to {jitter:g}")


def log_normal_kernel(delta: np.ndarray, gram: np.ndarray, nu2: float, g2: float, ridge: float,
                      compiled: bool = False):
    """log N(δ; 0, C) + (d/2) log 2π for C = g2·I + nu2·gram; returns (value, jittered).

    2-D: closed forms on floats (same singularity rule and jitter as
    :func:`cholesky_repaired`); otherwise a Cholesky factor (LAPACK, no wrappers; with
    ``compiled``, the same steps compiled by numba, ``_log_normal_cholesky``). NaN when C is
    not finite (a gram matrix BᵀB is finite iff its trace is), and the MH step then rejects.
    """
    d = delta.shape[0]
    if d != 2 and compiled:
        value, status = _log_normal_cholesky(delta, np.ascontiguousarray(gram), nu2, g2, ridge)
        if status == 2:
            raise np.linalg.LinAlgError(f"covariance could not be repaired by a jitter up to {value:g}")
        return value, status == 1
    if d != 2:
        C = nu2 * gram
        C.flat[:: d + 1] += g2
        if not math.isfinite(C.trace()):
            return math.nan, False
        L, jittered = cholesky_repaired(C, ridge)
        w = dtrtrs(L, delta, lower=1)[0]
        return -0.5 * float(w @ w) - float(np.log(L.diagonal()).sum()), jittered
    a = g2 + nu2 * gram.item(0)
    b = nu2 * gram.item(1)
    c = g2 + nu2 * gram.item(3)
    if not math.isfinite(a + b + c):
        return math.nan, False
    det = a * c - b * b
    jitter = 0.0
    tries = 0
    # pivots of the 2×2 Cholesky: a and det/a; numerically singular when a ≤ 0 or det/a ≤ tol·c
    while not (a + jitter > 0.0 and det > _PIVOT_TOL * (a + jitter) * (c + jitter)):
        tries += 1
        if tries > _MAX_JITTER_TRIES:
            raise np.linalg.LinAlgError(f"covariance could not be repaired by a jitter up to {jitter:g}")
        jitter = ridge * _jitter_scale(a + c, 2) if jitter == 0.0 else 10.0 * jitter
        det = (a + jitter) * (c + jitter) - b * b
    d0, d1 = delta.item(0), delta.item(1)
    quad = ((c + jitter) * d0 * d0 - 2.0 * b * d0 * d1 + (a + jitter) * d1 * d1) / det
    return -0.5 * quad - 0.5 * math.log(det), jitter > 0.0


@jit.helper
def _log_normal_cholesky(delta, gram, nu2, g2, ridge):
    """The Cholesky branch of :func:`log_normal_kernel` compiled (:func:`cholesky_repaired`'s
    rule and jitter, then a forward solve): (value, 0 or 1 = jittered), (NaN, 0) when C is
    not finite, (last jitter, 2) when no jitter helped."""
    d = delta.shape[0]
    C = nu2 * gram
    trace = 0.0
    for j in range(d):
        C[j, j] += g2
        trace += C[j, j]
    if not math.isfinite(trace):
        return math.nan, 0
    L = np.empty((d, d))
    jitter = 0.0
    for _ in range(_MAX_JITTER_TRIES):
        if jit.cholesky_into(C, jitter, _PIVOT_TOL, L):
            quad = log_det = 0.0
            w = np.empty(d)
            for i in range(d):
                s = delta[i]
                for k in range(i):
                    s -= L[i, k] * w[k]
                w[i] = s / L[i, i]
                quad += w[i] * w[i]
                log_det += math.log(L[i, i])
            return -0.5 * quad - log_det, 1 if jitter > 0.0 else 0
        if jitter == 0.0:  # ridge · _jitter_scale(tr C, d)
            scale = trace / d
            jitter = ridge * (scale if scale > 0 and math.isfinite(scale) else 1.0)
        else:
            jitter *= 10.0
    return jitter, 2


def centred_gradients(kernel, x: np.ndarray, Z: np.ndarray, weights: np.ndarray | None = None):
    """(A_xᵀ, A_x A_xᵀ) with A_xᵀ = 2(G − Ḡ), G = kernel.gradients(x, Z) (M, d), M ≥ 2.

    ``weights``: the vector (1/M, …, 1/M) (Ḡ = weights @ G), passed by the sampling loop to
    save its allocation.
    """
    G = kernel.gradients(x, Z)
    G -= (np.full(G.shape[0], 1.0 / G.shape[0]) if weights is None else weights) @ G
    G *= 2.0
    return G, G.T.dot(G)


def proposal_covariance(kernel, x, Z, step_size: float, noise: float) -> np.ndarray:
    """C(x) = γ² I + ν² A_x A_xᵀ, the covariance of KAM's proposal q(·|x) = N(x, C(x)) for the
    subsample ``Z`` (``kernel`` is fitted on Z, as at a redraw; M < 2 gives γ² I).

    The same routines as the sampling loop and :meth:`_Kameleon.log_proposal_density`
    (``kernel.fit``, :func:`centred_gradients`); the KAMH paper's Figure 2 draws its contours.
    """
    x = np.asarray(x, float)
    Z = np.asarray(Z, float).reshape(-1, x.shape[0])
    C = np.zeros((x.shape[0], x.shape[0]))
    if Z.shape[0] >= 2:
        C = step_size**2 * centred_gradients(kernel.fit(Z), x, Z)[1]
    C.flat[:: x.shape[0] + 1] += noise**2
    return C


def floyd_subset(n: int, k: int, uniforms: list[float]) -> list[int]:
    """A uniformly random k-subset of range(n) from k uniforms (Floyd's algorithm)."""
    chosen: set[int] = set()
    out = []
    for j, u in zip(range(n - k, n), uniforms):
        r = min(int(u * (j + 1)), j)
        if r in chosen:
            r = j
        chosen.add(r)
        out.append(r)
    return out


def _check_schedule(name: str, schedule, method: str = "__call__"):
    if not callable(getattr(schedule, method, None)):
        raise ValueError(f"{name} must be a schedule from ckam_bench.schedules, got {schedule!r}")
    return schedule


# ---------------------------------------------------------------------------------- samplers
class _Kameleon(Sampler):
    """Hyperparameters and the KAM iteration shared by :class:`KAM` and :class:`CyclicalKAM`."""

    ridge: float = 1e-10
    log_step_bounds: tuple[float, float] = (-math.inf, math.inf)
    """log ν is kept in this interval (unbounded but for cKAM with diminishing adaptation)."""

    def _setup(self, kernel, step_size, subsample_size, adaptation, noise, subsample_prob):
        if not callable(getattr(kernel, "gradients", None)) or not callable(getattr(kernel, "fit", None)):
            raise ValueError(f"kernel must be a kernel from ckam_bench.kernels, got {kernel!r}")
        self.kernel = kernel
        step_size = float(step_size)
        if not (math.isfinite(step_size) and step_size > 0):
            raise ValueError(f"step_size must be a finite number > 0, got {step_size}")
        self.step_size = step_size
        self.subsample_size = _count("subsample_size", subsample_size, 2, MAX_SUBSAMPLE)
        self.adaptation = _check_schedule("adaptation", adaptation, "update")
        self.noise = _check_schedule("noise", noise)
        if not float(noise(0)) > 0:
            raise ValueError(f"noise must be > 0 (γ = 0 makes the proposal degenerate), got γ_0 = {noise(0)}")
        self.subsample_prob = _check_schedule("subsample_prob", subsample_prob)

    def warm_up(self, target: Target) -> None:
        density = jit.compiled_log_density(target)
        if density is not None:  # the KAM loop calls the compiled density from Python
            density(np.array(target.start, dtype=float))
        if jit.enabled() and target.dim != 2:
            d = target.dim
            log_normal_kernel(np.zeros(d), np.zeros((d, d)), 1.0, 1.0, self.ridge, compiled=True)

    def _new_state(self, cls, target: Target, x0, rng, capacity: int, **extra):
        self.target = target
        self.rng = rng
        self._density = jit.compiled_log_density(target)
        self._compiled = jit.enabled()
        x, logp = check_start(target, x0)
        d, m = target.dim, self.subsample_size
        return cls(
            x=x, logp=logp, t=0, log_step=math.log(self.step_size),
            z=np.zeros((m, d)), n_sub=0, grads=np.zeros((m, d)), gram=np.zeros((d, d)),
            history=np.zeros((capacity, d)), n_seen=0, **extra,
        )

    def log_proposal_density(self, x_to, x_from, z, step_size: float, noise: float) -> float:
        """log q(x_to | x_from) = log N(x_to; x_from, γ²I + ν² A A ᵀ) for subsample ``z``.

        The same routines as the sampling loop (kernel fitted on z, centred gradients, the
        2-D closed form or Cholesky), with the normalising constant included.
        """
        x_to, x_from = np.asarray(x_to, float), np.asarray(x_from, float)
        z = np.asarray(z, float).reshape(-1, x_from.shape[0])
        d = x_from.shape[0]
        gram = np.zeros((d, d))
        if z.shape[0] >= 2:
            gram = centred_gradients(self.kernel.fit(z), x_from, z)[1]
        value, _ = log_normal_kernel(x_to - x_from, gram, step_size**2, noise**2, self.ridge)
        return value - 0.5 * d * _LOG_2PI

    def _fit(self, Z: np.ndarray):
        """``kernel.fit(Z)``, memoised on the last subsample: a block starting with the z the
        previous one ended with reuses its fit (a median heuristic on 1000 states costs ~30 ms)."""
        cached = getattr(self, "_fitted", None)
        if cached is not None and cached[0].shape == Z.shape and np.array_equal(cached[0], Z):
            return cached[1]
        kern = self.kernel.fit(Z)
        self._fitted = (Z.copy(), kern)
        return kern

    def _kam_segment(self, st: KAMState, kern, rec: BlockRecorder, i0: int, k: int,
                     clock0: int, collect: bool, phase: int, adapt: bool = True,
                     adapt_clock0: int | None = None):
        """Run k KAM iterations on ``st`` in place (schedule clock clock0, clock0 + 1, …).

        ``kern`` is the kernel fitted on the current subsample; returns the one fitted on the
        subsample at the end. Records diagnostics into rows i0 … i0 + k − 1 of ``rec``.
        ``adapt`` False (cKAM after its adaptation cycles) keeps z and ν fixed: no redraw,
        no step-size update (the same random numbers are drawn either way).
        ``adapt_clock0``: the clock of ``subsample_prob`` and ``adaptation`` when it is not the
        noise's (cKAM with diminishing adaptation); log ν is kept in ``self.log_step_bounds``.
        """
        d, m = st.x.shape[0], self.subsample_size
        draws = self.rng.standard_normal((k, d + 2 * m + 3))
        clocks = range(clock0, clock0 + k)
        a0 = clock0 if adapt_clock0 is None else adapt_clock0
        gammas = [float(self.noise(s)) for s in clocks]
        redraw = ((ndtr(draws[:, d + m + 1]) < [self.subsample_prob(s) for s in range(a0, a0 + k)]).tolist()
                  if adapt else [False] * k)
        noise_steps = draws[:, :d] * np.asarray(gammas)[:, None]  # γ_s ξ
        zeta = draws[:, d : d + m]
        log_u = log_ndtr(draws[:, d + m]).tolist()
        u_slot = ndtr(draws[:, d + m + 2]).tolist()
        u_subset = ndtr(draws[:, d + m + 3 :])

        # the compiled density when there is one (uncounted: counted once for the segment)
        log_density = self.target.log_density if self._density is None else self._density
        isfinite, exp, compiled = math.isfinite, math.exp, self._compiled
        update, ridge = self.adaptation.update, self.ridge
        lo_step, hi_step = self.log_step_bounds
        hist, capacity, zbuf, samples = st.history, st.history.shape[0], st.z, rec.samples
        x, logp, log_nu = st.x, st.logp, st.log_step
        n_seen, n_sub = st.n_seen, st.n_sub
        B, S = st.grads[:n_sub].copy(), st.gram.copy()
        Z = zbuf[:n_sub]
        weights = np.full(n_sub, 1.0 / max(n_sub, 1))
        n_collected, n_nonfinite, n_jitter = rec.n_collected, 0, 0
        accepted, alphas, nus = [False] * k, [0.0] * k, [0.0] * k
        for j in range(k):
            if redraw[j]:
                n_sub = min(m, n_seen)
                zbuf[:n_sub] = hist[floyd_subset(min(n_seen, capacity), n_sub, u_subset[j, :n_sub].tolist())]
                Z = zbuf[:n_sub]
                kern = self._fit(Z)
                weights = np.full(n_sub, 1.0 / max(n_sub, 1))
                if n_sub >= 2:
                    B, S = centred_gradients(kern, x, Z, weights)
                else:
                    B, S = np.zeros((n_sub, d)), np.zeros((d, d))
            nu = exp(log_nu)
            if n_sub >= 2:
                delta = noise_steps[j] + nu * (zeta[j, :n_sub] @ B)
            else:
                delta = noise_steps[j]
            y = x + delta
            logp_y = log_density(y)
            alpha = 0.0
            if isfinite(logp_y):
                if n_sub >= 2:
                    g2, nu2 = gammas[j] ** 2, nu * nu
                    B_y, S_y = centred_gradients(kern, y, Z, weights)
                    log_fwd, jit_f = log_normal_kernel(delta, S, nu2, g2, ridge, compiled)
                    log_rev, jit_r = log_normal_kernel(delta, S_y, nu2, g2, ridge, compiled)
                    n_jitter += jit_f + jit_r
                    log_ratio = logp_y - logp + log_rev - log_fwd
                    if log_ratio != log_ratio:  # a non-finite proposal covariance: rejected
                        n_nonfinite += 1
                else:
                    B_y, S_y = B, S
                    log_ratio = logp_y - logp
                alpha = accept_prob(log_ratio)
                if log_u[j] < log_ratio:
                    accepted[j] = True
                    x_old, x, logp, B, S = x, y, logp_y, B_y, S_y
                else:
                    x_old = x
            else:
                n_nonfinite += 1
                x_old = x
            alphas[j] = alpha
            nus[j] = nu
            if adapt:
                log_nu = min(max(update(log_nu, alpha, a0 + j), lo_step), hi_step)
            if n_seen < capacity:
                hist[n_seen] = x_old
            else:
                slot = min(int(u_slot[j] * (n_seen + 1)), n_seen)
                if slot < capacity:
                    hist[slot] = x_old
            n_seen += 1
            if collect:
                samples[n_collected] = x
                n_collected += 1

        rows = slice(i0, i0 + k)
        rec.accepted[rows] = accepted
        rec.accept_prob[rows] = alphas
        rec.phase[rows] = phase
        rec.step_size[rows] = nus
        rec.noise[rows] = gammas
        rec.n_collected = n_collected
        rec.n_nonfinite += n_nonfinite
        rec.n_jitter += n_jitter
        if self._density is not None:
            self.target.n_density += k  # one proposal per iteration
        st.x, st.logp, st.log_step, st.t = x, float(logp), float(log_nu), st.t + k
        st.n_seen, st.n_sub = n_seen, n_sub
        st.grads[:n_sub] = B
        st.gram[...] = S
        return kern


class KAM(_Kameleon):
    """Kernel Adaptive Metropolis–Hastings (see the module docstring).

    Parameters
    ----------
    kernel : a kernel of :mod:`ckam_bench.kernels`.
    step_size : initial ν (> 0), adapted by ``adaptation``.
    subsample_size : m (≥ 2), the maximum subsample size.
    adaptation : :class:`~ckam_bench.schedules.RobbinsMonro` (rate η_t and target α*).
    noise : schedule of γ_t (Constant or NoiseDecay), γ_0 > 0.
    subsample_prob : schedule of the redraw probability p_t (PowerDecay, Constant, Window).
    burnin : iterations before states are collected (≥ 0).
    history_size : capacity of the history reservoir (≥ subsample_size).
    """

    name = "kam"
    phases = ("burnin", "sampling")

    def __init__(self, kernel, step_size: float, subsample_size: int, adaptation, noise,
                 subsample_prob, burnin: int = 0, history_size: int = 5000):
        self._setup(kernel, step_size, subsample_size, adaptation, noise, subsample_prob)
        self.burnin = _count("burnin", burnin, 0)
        self.history_size = _count("history_size", history_size, self.subsample_size, MAX_HISTORY)

    def describe(self) -> dict:
        """Adaptation kind and the resolved burn-in and noise horizon (iterations)."""
        p = self.subsample_prob
        finite = getattr(p, "finite", False)
        diminishing = finite or getattr(p, "diminishing", False)
        return {"adaptation": "diminishing" if diminishing else "non-diminishing",
                "burnin": self.burnin, "noise_horizon": getattr(self.noise, "horizon", None),
                "subsample_prob": repr(p), "step_size_rate": repr(self.adaptation)}

    def init(self, target: Target, x0, rng: np.random.Generator) -> KAMState:
        return self._new_state(KAMState, target, x0, rng, self.history_size)

    def advance(self, state: KAMState, n: int):
        st = state.copy()
        rec = BlockRecorder(n, self.target.dim)
        kern = self._fit(st.z[: st.n_sub])
        i = 0
        while i < n:
            burning = st.t < self.burnin
            k = min(n - i, self.burnin - st.t) if burning else n - i
            kern = self._kam_segment(st, kern, rec, i, k, st.t, collect=not burning, phase=0 if burning else 1)
            i += k
        return st, rec.block()


class CyclicalKAM(_Kameleon):
    """Cyclical Kernel Adaptive Metropolis (see the module docstring).

    Parameters
    ----------
    kernel : a kernel of :mod:`ckam_bench.kernels`.
    step_size : ν reset at every cycle start (> 0), adapted during exploration.
    subsample_size : m (≥ 2), the maximum subsample size.
    cycle : :class:`~ckam_bench.schedules.CyclicalCosine` (cycle_length L, exploration β).
    adaptation : :class:`~ckam_bench.schedules.RobbinsMonro`, clock restarted every cycle.
    noise : schedule of γ_τ, clock restarted every cycle, γ_0 > 0.
    subsample_prob : schedule of the redraw probability p_τ, clock restarted every cycle.
    ridge : relative jitter for covariances that are numerically singular (> 0).
    adapt_cycles : None (as published: every cycle re-adapts; not π-invariant) or C ≥ 1:
        adapt during the first C cycles, then freeze z, ν and the sampling covariance
        (finite adaptation; the module docstring gives the validity argument).
    """

    name = "ckam"
    phases = ("exploration", "sampling")

    def __init__(self, kernel, step_size: float, subsample_size: int, cycle: CyclicalCosine,
                 adaptation, noise, subsample_prob, ridge: float = 1e-10, adapt_cycles: int | None = None):
        self._setup(kernel, step_size, subsample_size, adaptation, noise, subsample_prob)
        self.adapt_cycles = None if adapt_cycles is None else _count("adapt_cycles", adapt_cycles, 1)
        if not isinstance(cycle, CyclicalCosine):
            raise ValueError(f"cycle must be a ckam_bench.schedules.CyclicalCosine, got {cycle!r}")
        self.cycle = cycle
        self.cycle_length = int(cycle.cycle_length)
        # exploration iterations per cycle: τ = 0 … n_explore − 1 (u = τ/L ≤ β)
        self.n_explore = next((tau for tau in range(self.cycle_length) if not cycle.exploring(tau)), None)
        if self.n_explore is None:
            raise ValueError(
                f"cycle: beta = {cycle.beta} leaves no sampling iteration in a cycle of "
                f"{self.cycle_length}; beta must be < (cycle_length − 1)/cycle_length"
            )
        ridge = float(ridge)
        if not (math.isfinite(ridge) and ridge > 0):
            raise ValueError(f"ridge must be a finite number > 0, got {ridge}")
        self.ridge = ridge
        # (cos πu + 1)/2 at u = τ/L, τ = 0 … L − 1: ν_τ = ν_0 · this
        self._cosine = 0.5 * (np.cos(np.pi * (np.arange(self.cycle_length) / self.cycle_length)) + 1.0)

    def warm_up(self, target: Target) -> None:
        super().warm_up(target)
        warm_up_walk(target)

    def describe(self) -> dict:
        """Adaptation kind (non-diminishing as published, finite with ``adapt_cycles``) and
        the cycle's resolved numbers."""
        info = {"adaptation": "non-diminishing" if self.adapt_cycles is None else "finite",
                "cycle_length": self.cycle_length, "exploration_iterations": self.n_explore,
                "noise_horizon": getattr(self.noise, "horizon", None)}
        if self.adapt_cycles is not None:
            info.update(adapt_cycles=self.adapt_cycles,
                        frozen_after_iterations=self.adapt_cycles * self.cycle_length)
        return info

    def _frozen(self, t: int) -> bool:
        """True in the cycles after the adaptation cycles (never for published cKAM)."""
        return self.adapt_cycles is not None and t // self.cycle_length >= self.adapt_cycles

    def init(self, target: Target, x0, rng: np.random.Generator) -> CyclicalKAMState:
        d = target.dim
        return self._new_state(CyclicalKAMState, target, x0, rng, self.n_explore, chol=np.zeros((d, d)))

    def advance(self, state: CyclicalKAMState, n: int):
        st, owned = copy.copy(state), False  # sampling only rebinds fields: arrays are copied
        rec = BlockRecorder(n, self.target.dim)  # before the first exploration step changes them
        L, n_explore = self.cycle_length, self.n_explore
        kern = None
        i = 0
        while i < n:
            tau = st.t % L
            frozen = self._frozen(st.t)
            if tau < n_explore:
                if not owned:
                    st, owned = st.copy(), True
                if tau == 0 and frozen:
                    kern = self._restart_frozen(st)
                elif tau == 0:
                    self._start_cycle(st)
                    kern = self.kernel
                elif kern is None:
                    kern = self._fit(st.z[: st.n_sub])
                k = min(n - i, n_explore - tau)
                kern = self._kam_segment(st, kern, rec, i, k, tau, collect=False, phase=0,
                                         adapt=not frozen)
            else:
                if tau == n_explore and not frozen:
                    self._transition(st, rec)
                k = min(n - i, L - tau)
                self._sampling_segment(st, rec, i, k, tau)
            i += k
        return st, rec.block()

    def _start_cycle(self, st: CyclicalKAMState) -> None:
        """τ = 0: empty history and subsample, ν back to ``step_size``."""
        st.n_seen = 0
        st.n_sub = 0
        st.gram[...] = 0.0
        st.log_step = math.log(self.step_size)

    def _restart_frozen(self, st: CyclicalKAMState):
        """τ = 0 of a frozen cycle: keep z and ν, recompute A_θ, S_θ at the current θ (the
        sampling phase moved it); returns the kernel fitted on the frozen z."""
        st.n_seen = 0
        kern = self.kernel.fit(st.z[: st.n_sub])
        if st.n_sub >= 2:
            B, S = centred_gradients(kern, st.x, st.z[: st.n_sub])
            st.grads[: st.n_sub] = B
            st.gram[...] = S
        return kern

    def _transition(self, st: CyclicalKAMState, rec: BlockRecorder) -> None:
        """First sampling iteration: ν_0 and L_Σ, Σ = (γ/ν_exp)² I + A Aᵀ at the current θ, z."""
        nu_exp = math.exp(st.log_step)
        gamma = float(self.noise(self.n_explore))
        d = st.x.shape[0]
        sigma = (gamma / nu_exp) ** 2 * np.eye(d) + st.gram
        st.chol, jittered = cholesky_repaired(sigma, self.ridge)
        rec.n_jitter += jittered
        st.initial_step = self.cycle.initial_step(nu_exp)
        st.sampling_noise = gamma

    def _sampling_segment(self, st: CyclicalKAMState, rec: BlockRecorder, i0: int, k: int, tau0: int) -> None:
        """k sampling iterations: symmetric N(θ, ν_τ² Σ) proposals, every state collected."""
        d = st.x.shape[0]
        draws = self.rng.standard_normal((k, d + 1))
        log_u = log_ndtr(draws[:, d])
        nu = st.initial_step * self._cosine[tau0 : tau0 + k]
        moves = draws[:, :d] @ st.chol.T
        moves *= nu[:, None]
        st.x, logp, samples, log_ratio, n_nonfinite = metropolis_walk(
            self.target, self._density, st.x, st.logp, moves, log_u
        )
        c0, rows = rec.n_collected, slice(i0, i0 + k)
        rec.samples[c0 : c0 + k] = samples
        rec.accepted[rows] = log_u < log_ratio  # the loop's comparisons, vectorised
        rec.accept_prob[rows] = np.exp(np.minimum(log_ratio, 0.0))
        rec.phase[rows] = 1
        rec.step_size[rows] = nu
        rec.noise[rows] = st.sampling_noise
        rec.n_collected = c0 + k
        rec.n_nonfinite += n_nonfinite
        st.logp, st.t = float(logp), st.t + k


class DiminishingCyclicalKAM(CyclicalKAM):
    """cKAM whose adaptation diminishes across cycles (the module docstring gives the update
    of ξ = (z, ν, Σ) and the validity argument).

    Parameters
    ----------
    kernel, step_size, subsample_size, cycle, noise, ridge : as :class:`CyclicalKAM` (ν starts
        at ``step_size`` and is never reset; γ_τ restarts with every cycle).
    adaptation : :class:`~ckam_bench.schedules.RobbinsMonro` on the adaptation clock s (the
        exploration iterations of the whole run).
    subsample_prob : redraw probability p_s on the clock s (PowerDecay: p_s → 0).
    covariance_rate : weight w_c of cycle c's estimate Σ̂_c in Σ_c (c ≥ 1; Σ_0 = Σ̂_0).
    history_size : capacity of the reservoir of exploration states (≥ subsample_size).
    step_size_bounds : [ν_min, ν_max], the projection of the step size.
    covariance_bounds : [λ_min, λ_max], the eigenvalues of Σ are clipped into it.
    """

    name = "ckam_dim"

    def __init__(self, kernel, step_size: float, subsample_size: int, cycle: CyclicalCosine,
                 adaptation, noise, subsample_prob, covariance_rate, history_size: int = 5000,
                 step_size_bounds=(1e-3, 1e3), covariance_bounds=(1e-8, 1e8), ridge: float = 1e-10):
        super().__init__(kernel, step_size, subsample_size, cycle, adaptation, noise, subsample_prob, ridge)
        self.covariance_rate = _check_schedule("covariance_rate", covariance_rate)
        self.history_size = _count("history_size", history_size, self.subsample_size, MAX_HISTORY)
        lo, hi = _bounds("step_size_bounds", step_size_bounds)
        if not lo <= self.step_size <= hi:
            raise ValueError(f"step_size_bounds {[lo, hi]} must contain step_size {self.step_size}")
        self.step_size_bounds = (lo, hi)
        self.log_step_bounds = (math.log(lo), math.log(hi))
        self.covariance_bounds = _bounds("covariance_bounds", covariance_bounds)

    def describe(self) -> dict:
        """``diminishing`` when the redraw probability, the step-size rate and the covariance
        rate all decay to 0, else ``non-diminishing``; the cycle's numbers and the schedules."""
        decays = all(getattr(s, "diminishing", False)
                     for s in (self.subsample_prob, self.adaptation, self.covariance_rate))
        return {"adaptation": "diminishing" if decays else "non-diminishing",
                "cycle_length": self.cycle_length, "exploration_iterations": self.n_explore,
                "noise_horizon": getattr(self.noise, "horizon", None),
                "subsample_prob": repr(self.subsample_prob), "step_size_rate": repr(self.adaptation),
                "covariance_rate": repr(self.covariance_rate)}

    def init(self, target: Target, x0, rng: np.random.Generator) -> DiminishingCKAMState:
        d = target.dim
        return self._new_state(DiminishingCKAMState, target, x0, rng, self.history_size,
                               chol=np.zeros((d, d)), sigma=np.zeros((d, d)))

    def advance(self, state: DiminishingCKAMState, n: int):
        st, owned = copy.copy(state), False  # as CyclicalKAM.advance
        rec = BlockRecorder(n, self.target.dim)
        L, n_explore = self.cycle_length, self.n_explore
        kern = None
        i = 0
        while i < n:
            tau = st.t % L
            if tau < n_explore:
                if not owned:
                    st, owned = st.copy(), True
                if kern is None or tau == 0:
                    kern = self._fit(st.z[: st.n_sub])
                if tau == 0 and st.n_sub >= 2:  # the sampling phase moved θ: A_θ, S_θ anew
                    st.grads[: st.n_sub], st.gram[...] = centred_gradients(kern, st.x, st.z[: st.n_sub])
                k = min(n - i, n_explore - tau)
                kern = self._kam_segment(st, kern, rec, i, k, tau, collect=False, phase=0,
                                         adapt_clock0=(st.t // L) * n_explore + tau)
            else:
                if tau == n_explore:
                    self._transition(st, rec)
                k = min(n - i, L - tau)
                self._sampling_segment(st, rec, i, k, tau)
            i += k
        return st, rec.block()

    def _transition(self, st: DiminishingCKAMState, rec: BlockRecorder) -> None:
        """Σ_c = Π_Λ[Σ_{c−1} + w_c (Σ̂_c − Σ_{c−1})], Σ̂_c = (γ/ν)² I + A_θ A_θᵀ; ν_0, L_Σ."""
        nu = math.exp(st.log_step)
        gamma = float(self.noise(self.n_explore))
        d = st.x.shape[0]
        estimate = (gamma / nu) ** 2 * np.eye(d) + st.gram
        c = st.t // self.cycle_length
        sigma = estimate if c == 0 else st.sigma + float(self.covariance_rate(c)) * (estimate - st.sigma)
        values, vectors = np.linalg.eigh(sigma)
        st.sigma = (vectors * np.clip(values, *self.covariance_bounds)) @ vectors.T
        st.chol, jittered = cholesky_repaired(st.sigma, self.ridge)
        rec.n_jitter += jittered
        st.initial_step = self.cycle.initial_step(nu)
        st.sampling_noise = gamma
