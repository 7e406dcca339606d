r"""Adaptive Metropolis: AM, Rao–Blackwellised AM (RBAM) and AM with global scaling (GAM).

Algorithms 2–4 of Andrieu & Thoms (2008), "A tutorial on adaptive MCMC", Stat. Comput. 18.
All three are random-walk Metropolis samplers with proposal

    Y ~ N(θ_t, λ_t Σ_t),   accept iff log u < log π(Y) − log π(θ_t)   (symmetric q),

α_t = min{1, π(Y)/π(θ_t)} (0 when log π(Y) is NaN or ±inf: a rejection, counted), and a
running mean μ_t and covariance Σ_t adapted after every iteration with a learning rate η_t,
starting from μ_0 = θ_0, Σ_0 = I:

* **AM** (alg. 2; "AM-FS" in the KAMH paper) — λ = ν² fixed (``step_size`` ν = 2.38/√d in
  the cKAM tables). With θ_{t+1} the new state (accepted or not) and μ_t the old mean:

      μ_{t+1} = μ_t + η_t (θ_{t+1} − μ_t)
      Σ_{t+1} = Σ_t + η_t [(θ_{t+1} − μ_t)(θ_{t+1} − μ_t)ᵀ − Σ_t].

* **RBAM** (alg. 3) — λ = 1 (the proposal is N(θ_t, Σ_t), no step size). The update averages
  the two possible next states, the proposal Y and the current state θ_t, with the weights
  α_t and 1 − α_t they get from the accept step (a Rao–Blackwellisation of AM's update):

      μ_{t+1} = μ_t + η_t [α_t (Y − μ_t) + (1 − α_t)(θ_t − μ_t)]
      Σ_{t+1} = Σ_t + η_t [α_t (Y − μ_t)(Y − μ_t)ᵀ + (1 − α_t)(θ_t − μ_t)(θ_t − μ_t)ᵀ − Σ_t].

  With α ≡ 1 this is AM's update applied to Y. (PINTS' "Rao-Blackwell" sampler does a
  different update; this is the algorithm of the paper.)

* **GAM** (alg. 4; "AM-LS" in the KAMH paper) — AM's μ, Σ updates plus a global scale driven
  towards the acceptance rate α* (0.234) by a Robbins–Monro recursion with the same η_t:

      log λ_{t+1} = log λ_t + η_t (α_t − α*),   λ_0 = ν²,   η_t = s (1 + t_0 + t)^(−ε).

  The recorded step size is √λ_t.

Learning rates. ``rate`` (AM, RBAM) is any schedule of ``ckam_bench.schedules``. The
defaults (``conf/sampler/{am,rbam,gam}.yaml``) decay, η_t = (1 + t_0 + t)^(−0.75) with offset
t_0 = 100: diminishing adaptation, which is what guarantees that the chain still targets π
(Andrieu & Thoms, §2; Roberts & Rosenthal 2007). The cKAM tables use a constant η (0.1
bimodal, 0.01 / 0.001 otherwise), kept in the paper presets only: with a constant η, μ and Σ
are exponentially weighted averages over the last ~1/η states and never settle, so the
chain's stationary law is not π (issue 9 measured AM's variance 13 % low and RBAM's 22 % low
on gauss2d_corr, RBAM's gmm2d mean off by −0.70). ``describe()`` reports the kind
(``adaptation``: diminishing / non-diminishing / finite) into the run's ``status.json``.
η_t must lie in [0, 1] (Σ_{t+1} is then a convex combination of positive semidefinite
matrices); a rate with η_0 = 1 (t_0 = 0) replaces μ_0, Σ_0 by θ_1 and
(θ_1 − θ_0)(θ_1 − θ_0)ᵀ at the first step, a rank-one matrix: the offset t_0 keeps Σ_0
(:mod:`ckam_bench.schedules`).

Closed form (tested): with η_t = 1/(t + 1) the recursions give, for t ≥ 1,

    μ_t = (1/t) Σ_{k=1..t} θ_k,      Σ_t = (1/t) Σ_{k=1..t} δ_k δ_kᵀ,   δ_k = θ_k − μ_{k−1},

which exceeds the biased sample covariance C_t of θ_1..θ_t (``np.cov(bias=True)``) by
(δ_1 δ_1ᵀ + Σ_{k=2..t} δ_k δ_kᵀ / k)/t, because Welford's exact update weighs δ_k δ_kᵀ by
(k − 1)/k where AM's weighs it by 1.

Positive definiteness. Proposals use a lower Cholesky factor L of Σ_t + r I (``ridge`` r),
recomputed once per iteration (O(d³/6), a few µs for d ≤ 50 when compiled). If the
factorisation fails, a jitter c·10^k·I (c = tr Σ/d, k = −12, −11, …) is added to the
factor's input until it succeeds; each such iteration is counted in ``Block.n_jitter``. The
jitter never enters Σ itself.

Random numbers are pre-drawn per block exactly as for RW
(:func:`ckam_bench.samplers.random_walk.predraw`), and the learning rates η_t of the block
are evaluated before its loop, so the chain does not depend on how the iterations are split
into blocks.

Compiled loop: with numba and a target that has a compiled density (:mod:`ckam_bench.jit`),
``_adaptive_kernel`` runs the block, on the same pre-drawn numbers as the Python loop
``_adaptive_loop``. For a target without a compiled density (a user's plain numpy target) the
Python loop runs: it calls the density once per iteration and does everything else — the
accept step, the adaptation, the factor, the next proposal — in one call of a step: with numba
:func:`_adaptive_step`, compiled in ``warm_up`` from the kernel's own helpers (the kernel's
chain to the bit, tested; the loop costs ~1.6× the density alone at d = 10 for a ~2 µs
density), else :func:`adaptive_step` in numpy and LAPACK's ``dpotrf`` (called directly to skip
numpy's per-call overhead; the same chain to rounding). ``CKAM_BENCH_JIT=0`` forces the
latter. aRWM (:mod:`ckam_bench.samplers.adaptive_mixture`) is built the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dpotrf

from ckam_bench import jit
from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start
from ckam_bench.samplers.random_walk import positive_step_size, predraw
from ckam_bench.schedules import Constant, RobbinsMonro
from ckam_bench.targets.base import Target


@dataclass(kw_only=True)
class AdaptiveState(ChainState):
    """State of AM / RBAM / GAM (``x``, ``logp``, ``t`` as in ChainState)."""

    mean: np.ndarray
    """Running mean μ_t, shape (d,)."""
    cov: np.ndarray
    """Adapted covariance Σ_t, shape (d, d)."""
    chol: np.ndarray
    """Lower Cholesky factor of Σ_t + ridge·I (plus jitter if one was needed), shape (d, d)."""
    log_scale: float
    """log λ_t (AM: 2 log ν, fixed; RBAM: 0; GAM: adapted)."""


def am_update(mean: np.ndarray, cov: np.ndarray, x_new: np.ndarray, eta: float) -> None:
    """AM's update in place: μ += η(θ_{t+1} − μ), Σ += η((θ_{t+1} − μ)(θ_{t+1} − μ)ᵀ − Σ)."""
    dx = x_new - mean
    mean += eta * dx
    cov += eta * (dx[:, None] * dx - cov)


def rao_blackwell_update(
    mean: np.ndarray, cov: np.ndarray, y: np.ndarray, x: np.ndarray, alpha: float, eta: float
) -> None:
    """RBAM's update in place: AM's update on Y and on θ_t (= ``x``), weighted α and 1 − α."""
    dy = y - mean
    dx = x - mean
    mean += eta * (alpha * dy + (1.0 - alpha) * dx)
    cov += eta * (alpha * (dy[:, None] * dy) + (1.0 - alpha) * (dx[:, None] * dx) - cov)


def _factor_error(cov: np.ndarray) -> FloatingPointError:
    """The error for an adapted covariance that no jitter makes positive definite."""
    if not math.isfinite(float(np.trace(cov))):
        return FloatingPointError(
            f"adapted covariance is not finite (did the chain diverge on an improper target?): "
            f"{cov.tolist()}"
        )
    return FloatingPointError(f"adapted covariance cannot be made positive definite: {cov.tolist()}")


def cholesky_with_jitter(cov: np.ndarray, ridge: float) -> tuple[np.ndarray, bool]:
    """Lower Cholesky factor of ``cov + ridge·I`` and whether a jitter had to be added.

    A factor is accepted when LAPACK reports success and its last diagonal entry is > 0: a NaN
    anywhere in ``cov`` reaches that entry, and some LAPACK builds do not flag NaN pivots.
    """
    d = cov.shape[0]
    eye = np.eye(d)
    chol, info = dpotrf(cov + ridge * eye, lower=1, clean=1, overwrite_a=1)
    if info == 0 and chol[-1, -1] > 0.0:
        return chol, False
    trace = float(np.trace(cov))
    if not math.isfinite(trace):
        raise _factor_error(cov)
    level = trace / d if trace > 0 else 1.0
    for k in range(-12, 1):
        chol, info = dpotrf(cov + (ridge + level * 10.0**k) * eye, lower=1, clean=1, overwrite_a=1)
        if info == 0 and chol[-1, -1] > 0.0:
            return chol, True
    raise _factor_error(cov)


@jit.helper
def _cholesky_with_jitter_into(cov, ridge, out):
    """:func:`cholesky_with_jitter` compiled, into ``out``: 0 = factored, 1 = factored with a
    jitter, 2 = no jitter helps (then :func:`_factor_error` says why)."""
    if jit.cholesky_into(cov, ridge, 0.0, out):
        return 0
    d = cov.shape[0]
    trace = 0.0
    for j in range(d):
        trace += cov[j, j]
    if not math.isfinite(trace):
        return 2
    level = trace / d if trace > 0 else 1.0
    for k in range(-12, 1):
        if jit.cholesky_into(cov, ridge + level * 10.0 ** float(k), 0.0, out):
            return 1
    return 2


def _as_schedule(rate, name: str):
    """A schedule object from a schedule or a number (a number means a constant rate)."""
    if isinstance(rate, (int, float)) and not isinstance(rate, bool):
        rate = Constant(float(rate))
    if not callable(rate):
        raise ValueError(f"{name} must be a schedule from ckam_bench.schedules or a number, got {rate!r}")
    eta0 = float(rate(0))
    if not 0.0 <= eta0 <= 1.0:
        raise ValueError(f"{name} must give learning rates in [0, 1], got {eta0} at t = 0")
    return rate


def adaptation_kind(rate) -> str:
    """"finite" (a rate that is 0 after a fixed time), "diminishing" (decays to 0: Roberts &
    Rosenthal's diminishing adaptation) or "non-diminishing" (e.g. a constant rate > 0: the
    chain does not target π, see the module docstring), from the schedule's flags."""
    if getattr(rate, "finite", False):
        return "finite"
    return "diminishing" if getattr(rate, "diminishing", False) else "non-diminishing"


def _nonnegative_ridge(ridge) -> float:
    ridge = float(ridge)
    if not (math.isfinite(ridge) and ridge >= 0):
        raise ValueError(f"ridge must be a finite number >= 0, got {ridge}")
    return ridge


@jit.jitable
def _propose_into(x, chol, scale, z, y):
    """The proposal y = x + scale·L z into ``y`` (L = ``chol``, lower triangular)."""
    d = x.shape[0]
    for j in range(d):
        step = 0.0
        for k in range(j + 1):
            step += chol[j, k] * z[k]
        y[j] = x[j] + scale * step


@jit.jitable
def _accept_and_adapt(x, logp, y, logp_y, log_u, mean, cov, chol, dx, dy, eta, ridge, rao_blackwellised, log_scale,
                      adapt_scale, target_accept):
    """One iteration after its density call log π(y) = ``logp_y``: the accept step (x ← y in
    place when accepted), RBAM's update from θ_t and Y or AM's from θ_{t+1} (``dx``, ``dy``
    scratch), GAM's log λ update when ``adapt_scale``, the factor of Σ + ridge·I into ``chol``.
    Returns (log π(x), accepted, α, log λ, status: 0, 1 = jittered, 2 = no jitter helps)."""
    d = x.shape[0]
    if math.isfinite(logp_y):
        r = logp_y - logp
        alpha = 1.0 if r >= 0.0 else math.exp(r)
        accept = log_u < r
    else:
        alpha, accept = 0.0, False
    if rao_blackwellised:  # rao_blackwell_update, from θ_t before the move
        for j in range(d):
            dy[j] = y[j] - mean[j]
            dx[j] = x[j] - mean[j]
        for j in range(d):
            mean[j] += eta * (alpha * dy[j] + (1.0 - alpha) * dx[j])
            for k in range(d):
                cov[j, k] += eta * (alpha * (dy[j] * dy[k]) + (1.0 - alpha) * (dx[j] * dx[k]) - cov[j, k])
    if accept:
        for j in range(d):
            x[j] = y[j]
        logp = logp_y
    if not rao_blackwellised:  # am_update, from θ_{t+1}
        for j in range(d):
            dx[j] = x[j] - mean[j]
        for j in range(d):
            mean[j] += eta * dx[j]
            for k in range(d):
                cov[j, k] += eta * (dx[j] * dx[k] - cov[j, k])
    if adapt_scale:
        log_scale += eta * (alpha - target_accept)
    return logp, accept, alpha, log_scale, _cholesky_with_jitter_into(cov, ridge, chol)


def adaptive_step(i, logp_y, work, mean, cov, chol, draws, record, ridge, rao_blackwellised, adapt_scale,
                  target_accept):
    """What :func:`_adaptive_loop` does around one density call log π(y) = ``logp_y``, in numpy
    and LAPACK: iteration i − 1's accept step and adaptation, recorded in row i − 1 of
    ``record`` (i ≥ 1), then iteration i's proposal y (i < n). ``work`` holds x, y, scratch
    (2d) and the tally (log π(x), log λ, √λ, non-finite proposals, jittered factors); row t of
    ``draws`` is iteration t's (ε, log u, η), of ``record`` its (state, accepted, α, step size).
    Returns 0 (a covariance no jitter makes positive definite raises). :func:`_adaptive_step`
    is the compiled version."""
    d = mean.shape[0]
    x, y, tally = work[:d], work[d:2 * d], work[4 * d:]
    if i > 0:
        k = i - 1
        logp, log_scale, scale = tally[0], tally[1], tally[2]
        log_u, eta = draws[k, d], draws[k, d + 1]
        if math.isfinite(logp_y):
            r = logp_y - logp
            alpha = 1.0 if r >= 0.0 else math.exp(r)
            accept = log_u < r
        else:
            alpha, accept = 0.0, False
            tally[3] += 1.0
        if rao_blackwellised:  # uses θ_t, before the move
            rao_blackwell_update(mean, cov, y, x, alpha, eta)
        if accept:
            x[:] = y
            tally[0] = logp_y
        if not rao_blackwellised:  # uses θ_{t+1}, after the move
            am_update(mean, cov, x, eta)
        if adapt_scale:
            tally[1] = log_scale = log_scale + eta * (alpha - target_accept)
            tally[2] = math.exp(0.5 * log_scale)
        factor, jittered = cholesky_with_jitter(cov, ridge)
        chol[:] = factor
        tally[4] += jittered
        record[k, :d] = x
        record[k, d:] = accept, alpha, scale
    if i < draws.shape[0]:
        y[:] = x + tally[2] * (chol @ draws[i, :d])
    return 0


@jit.helper
def _adaptive_step(i, logp_y, work, mean, cov, chol, draws, record, ridge, rao_blackwellised, adapt_scale,
                   target_accept):
    """:func:`adaptive_step` compiled, with the kernel's helpers (one call per iteration instead
    of a dozen numpy calls); returns 2 when no jitter makes Σ positive definite."""
    d = mean.shape[0]
    x, y, dx, dy, tally = work[:d], work[d:2 * d], work[2 * d:3 * d], work[3 * d:4 * d], work[4 * d:]
    if i > 0:
        k = i - 1
        if not math.isfinite(logp_y):
            tally[3] += 1.0
        record[k, d + 2] = tally[2]
        tally[0], accept, record[k, d + 1], tally[1], status = _accept_and_adapt(
            x, tally[0], y, logp_y, draws[k, d], mean, cov, chol, dx, dy, draws[k, d + 1], ridge, rao_blackwellised,
            tally[1], adapt_scale, target_accept)
        record[k, d] = accept
        if adapt_scale:
            tally[2] = math.exp(0.5 * tally[1])
        if status == 2:
            return 2
        tally[4] += status
        for j in range(d):
            record[k, j] = x[j]
    if i < draws.shape[0]:
        _propose_into(x, chol, tally[2], draws[i, :d], y)
    return 0


def _adaptive_loop(log_density, x, logp, mean, cov, chol, log_scale, eps, log_u, etas, ridge, rao_blackwellised,
                   adapt_scale, target_accept, step):
    """n iterations of AM (``rao_blackwellised`` False) or RBAM, with GAM's scale adaptation
    when ``adapt_scale``; η_t = etas[i]. The target's log density is called once per
    iteration and everything else is ``step``: :func:`_adaptive_step` (one compiled call per
    iteration) when numba is there and switched on, else :func:`adaptive_step`. Updates
    ``mean``, ``cov`` and ``chol`` in place and returns (x, logp, chol, log_scale, samples,
    accepted, accept_prob, step_size, n_nonfinite, n_jitter). The step's arrays travel as
    three (``work``, ``draws``, ``record``): a compiled call costs ~60 ns per array argument."""
    n, d = eps.shape
    work = np.empty(4 * d + 5)
    work[:d], work[4 * d:] = x, (logp, log_scale, math.exp(0.5 * log_scale), 0.0, 0.0)
    draws, record = np.column_stack((eps, log_u, etas)), np.empty((n, d + 3))
    options = (mean, cov, chol, draws, record, ridge, rao_blackwellised, adapt_scale, target_accept)
    y = work[d:2 * d]
    step(0, 0.0, work, *options)
    for i in range(1, n + 1):
        if step(i, float(log_density(y)), work, *options) == 2:
            raise _factor_error(cov)
    logp, log_scale, _, n_nonfinite, n_jitter = work[4 * d:].tolist()
    return (work[:d].copy(), logp, chol, log_scale, np.ascontiguousarray(record[:, :d]), record[:, d] == 1.0,
            record[:, d + 1].copy(), record[:, d + 2].copy(), int(n_nonfinite), int(n_jitter))


@jit.kernel(jit.A1, jit.F8, jit.A1, jit.A2, jit.A2, jit.F8, jit.A2, jit.A1, jit.A1, jit.F8, jit.B1, jit.B1, jit.F8)
def _adaptive_kernel(log_density, x, logp, mean, cov, chol, log_scale, eps, log_u, etas, ridge,
                     rao_blackwellised, adapt_scale, target_accept):
    """``_adaptive_loop`` compiled (the helpers of :func:`_adaptive_step` in the same order);
    returns its tuple plus the iteration at which a covariance could not be factored (the
    block stops there and the caller raises :func:`_factor_error`), −1 if none."""
    n, d = eps.shape
    samples, accepted = np.empty((n, d)), np.zeros(n, dtype=np.bool_)
    accept_prob, step_size = np.empty(n), np.empty(n)
    x, chol = x.copy(), chol.copy()
    y, dx, dy = np.empty(d), np.empty(d), np.empty(d)
    scale = math.exp(0.5 * log_scale)
    n_nonfinite = n_jitter = 0
    failed_at = -1
    for i in range(n):
        _propose_into(x, chol, scale, eps[i], y)
        logp_y = log_density(y)
        if not math.isfinite(logp_y):
            n_nonfinite += 1
        step_size[i] = scale
        logp, accepted[i], accept_prob[i], log_scale, status = _accept_and_adapt(
            x, logp, y, logp_y, log_u[i], mean, cov, chol, dx, dy, etas[i], ridge, rao_blackwellised, log_scale,
            adapt_scale, target_accept)
        if adapt_scale:
            scale = math.exp(0.5 * log_scale)
        if status == 2:
            failed_at = i
            break
        n_jitter += status
        for j in range(d):
            samples[i, j] = x[j]
    return (x, logp, chol, log_scale, samples, accepted, accept_prob, step_size, n_nonfinite,
            n_jitter, failed_at)


class _AdaptiveCovariance(Sampler):
    """The shared loop of AM, RBAM and GAM; subclasses set the switches in ``__init__``.

    ``_rate`` gives η_t; ``_log_scale0`` is log λ_0; ``_rao_blackwellised`` selects RBAM's
    update; ``_target_accept`` (GAM only, else None) switches on the adaptation of log λ;
    ``_records_step`` says whether √λ_t is a step size worth recording (NaN otherwise).
    """

    phases = ("sampling",)
    ridge: float
    _rate = None
    _log_scale0 = 0.0
    _rao_blackwellised = False
    _target_accept: float | None = None
    _records_step = True

    def describe(self) -> dict:
        """The kind of adaptation (``adaptation_kind`` of the rate) and the first rates."""
        return {"adaptation": adaptation_kind(self._rate), "schedule": repr(self._rate),
                "rate_t0": float(self._rate(0)), "rate_t1000": float(self._rate(1000))}

    def warm_up(self, target: Target) -> None:
        density = jit.compiled_log_density(target)
        d = target.dim
        x, eye = np.array(target.start, dtype=float), np.eye(d)
        if density is not None:
            _adaptive_kernel(density, x, 0.0, x.copy(), eye, eye.copy(), 0.0, np.zeros((1, d)),
                             np.zeros(1), np.zeros(1), self.ridge, False, False, 0.0)
        elif jit.enabled():  # the Python loop's compiled step (η = 0: no change), on a constant density
            _adaptive_loop(lambda y: 0.0, x, 0.0, x.copy(), eye, eye.copy(), 0.0, np.zeros((1, d)), np.zeros(1),
                           np.zeros(1), self.ridge, self._rao_blackwellised, self._target_accept is not None, 0.0,
                           _adaptive_step)

    def init(self, target: Target, x0, rng: np.random.Generator) -> AdaptiveState:
        self.target = target
        self.rng = rng
        self._density = jit.compiled_log_density(target)
        self._step = _adaptive_step if jit.enabled() else adaptive_step
        x, logp = check_start(target, x0)
        cov = np.eye(target.dim)
        chol, _ = cholesky_with_jitter(cov, self.ridge)
        return AdaptiveState(
            x=x, logp=logp, t=0, mean=x.copy(), cov=cov, chol=chol, log_scale=self._log_scale0
        )

    def _learning_rates(self, t0: int, n: int) -> np.ndarray:
        """η_t for t = t0 … t0 + n − 1, each checked to lie in [0, 1]."""
        etas = np.array([self._rate(t) for t in range(t0, t0 + n)], dtype=float)
        bad = np.flatnonzero(~((etas >= 0.0) & (etas <= 1.0)))
        if bad.size:
            i = bad[0]
            raise ValueError(f"learning rate must be in [0, 1], got {etas[i]} at t = {t0 + i}")
        return etas

    def advance(self, state: AdaptiveState, n: int):
        eps, log_u = predraw(self.rng, n, self.target.dim)
        eps, chol = np.ascontiguousarray(eps), np.array(state.chol, dtype=float)
        if self._density is not None or self._step is _adaptive_step:  # compiled code: C-ordered arrays
            chol = np.ascontiguousarray(chol)  # (numpy's L ε rounds by memory order: its step keeps LAPACK's)
        etas = self._learning_rates(state.t, n)
        adapt_scale = self._target_accept is not None
        target_accept = self._target_accept if adapt_scale else 0.0
        mean, cov = np.array(state.mean, dtype=float), np.array(state.cov, dtype=float)
        args = (np.ascontiguousarray(state.x, dtype=float), float(state.logp), mean, cov,
                chol, float(state.log_scale), eps, log_u, etas, self.ridge,
                self._rao_blackwellised, adapt_scale, target_accept)
        if self._density is None:
            out = _adaptive_loop(self.target.log_density, *args, self._step)
        else:
            *out, failed_at = _adaptive_kernel(self._density, *args)
            self.target.n_density += n if failed_at < 0 else failed_at + 1
            if failed_at >= 0:
                raise _factor_error(cov)
        x, logp, chol, log_scale, samples, accepted, accept_prob, step_size, n_nonfinite, n_jitter = out
        block = Block(
            samples=samples,
            accepted=accepted,
            accept_prob=accept_prob,
            phase=np.zeros(n, dtype=np.int8),
            step_size=step_size if self._records_step else np.full(n, np.nan),
            noise=np.full(n, np.nan),
            n_nonfinite=int(n_nonfinite),
            n_jitter=int(n_jitter),
        )
        new_state = AdaptiveState(
            x=x, logp=float(logp), t=state.t + n, mean=mean, cov=cov, chol=chol, log_scale=float(log_scale)
        )
        return new_state, block


class AdaptiveMetropolis(_AdaptiveCovariance):
    """AM (Andrieu & Thoms alg. 2): proposal N(θ, ν² Σ_t), Σ_t adapted with rate η_t.

    step_size : ν > 0 (cKAM tables: 2.38/√d).
    rate : schedule of η_t ∈ [0, 1] (or a number, meaning a constant rate).
    ridge : r ≥ 0 added to Σ_t's diagonal in the proposal factor.
    """

    name = "am"

    def __init__(self, step_size: float, rate, ridge: float = 1e-8):
        self.step_size = positive_step_size(step_size)
        self.rate = _as_schedule(rate, "rate")
        self.ridge = _nonnegative_ridge(ridge)
        self._rate = self.rate
        self._log_scale0 = 2.0 * math.log(self.step_size)


class RaoBlackwellisedAM(_AdaptiveCovariance):
    """RBAM (Andrieu & Thoms alg. 3): proposal N(θ, Σ_t), α-weighted update of μ and Σ.

    rate : schedule of η_t ∈ [0, 1] (or a number, meaning a constant rate).
    ridge : r ≥ 0 added to Σ_t's diagonal in the proposal factor.
    The step size is not defined (recorded as NaN).
    """

    name = "rbam"

    def __init__(self, rate, ridge: float = 1e-8):
        self.rate = _as_schedule(rate, "rate")
        self.ridge = _nonnegative_ridge(ridge)
        self._rate = self.rate
        self._rao_blackwellised = True
        self._records_step = False


class GlobalAdaptiveMetropolis(_AdaptiveCovariance):
    """GAM (Andrieu & Thoms alg. 4): proposal N(θ, λ_t Σ_t), log λ_t driven to α*.

    step_size : ν > 0, λ_0 = ν² (cKAM tables: 2.38/√d).
    adaptation : a :class:`~ckam_bench.schedules.RobbinsMonro` schedule; η_t = adaptation(t)
        drives both log λ (towards ``adaptation.target_accept``) and μ, Σ.
    ridge : r ≥ 0 added to Σ_t's diagonal in the proposal factor.
    The recorded step size is √λ_t.
    """

    name = "gam"

    def __init__(self, step_size: float, adaptation: RobbinsMonro, ridge: float = 1e-8):
        self.step_size = positive_step_size(step_size)
        if not isinstance(adaptation, RobbinsMonro):
            raise ValueError(
                f"adaptation must be a ckam_bench.schedules.RobbinsMonro, got {adaptation!r}"
            )
        self.adaptation = _as_schedule(adaptation, "adaptation")
        self.ridge = _nonnegative_ridge(ridge)
        self._rate = self.adaptation
        self._log_scale0 = 2.0 * math.log(self.step_size)
        self._target_accept = float(adaptation.target_accept)
