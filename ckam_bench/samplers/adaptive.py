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

      log λ_{t+1} = log λ_t + η_t (α_t − α*),   λ_0 = ν²,   η_t = s (1 + t)^(−ε).

  The recorded step size is √λ_t.

Learning rates. ``rate`` (AM, RBAM) is any schedule of ``ckam_bench.schedules``: the cKAM
tables use a constant η (0.1 bimodal, 0.01 / 0.001 otherwise); a decaying η_t = (1 + t)^(−ε),
ε ∈ (1/2, 1], gives diminishing adaptation, which is what guarantees that the chain still
targets π (Andrieu & Thoms, §2). With a constant η, μ and Σ are exponentially weighted
averages over the last ~1/η states and never settle, so the chain's stationary law is only
approximately π. η_t must lie in [0, 1] (Σ_{t+1} is then a convex combination of positive
semidefinite matrices); a rate with η_0 = 1 replaces μ_0, Σ_0 by θ_1 and
(θ_1 − θ_0)(θ_1 − θ_0)ᵀ at the first step.

Closed form (tested): with η_t = 1/(t + 1) the recursions give, for t ≥ 1,

    μ_t = (1/t) Σ_{k=1..t} θ_k,      Σ_t = (1/t) Σ_{k=1..t} δ_k δ_kᵀ,   δ_k = θ_k − μ_{k−1},

which exceeds the biased sample covariance C_t of θ_1..θ_t (``np.cov(bias=True)``) by
(δ_1 δ_1ᵀ + Σ_{k=2..t} δ_k δ_kᵀ / k)/t, because Welford's exact update weighs δ_k δ_kᵀ by
(k − 1)/k where AM's weighs it by 1.

Positive definiteness. Proposals use a lower Cholesky factor L of Σ_t + r I (``ridge`` r),
recomputed once per iteration with LAPACK's ``dpotrf`` (the routine behind
``np.linalg.cholesky``, called directly to skip numpy's per-call overhead, which dominates at
small d; a rank-one update in Python would be slower than this for the d ≤ 32 used here). If
the factorisation fails, a jitter c·10^k·I (c = tr Σ/d, k = −12, −11, …) is added to the
factor's input until it succeeds; each such iteration is counted in ``Block.n_jitter``. The
jitter never enters Σ itself.

Random numbers are pre-drawn per block exactly as for RW
(:func:`ckam_bench.samplers.random_walk.predraw`), so the chain does not depend on how the
iterations are split into blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dpotrf

from ckam_bench.samplers.base import BlockRecorder, ChainState, Sampler, check_start
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
        raise FloatingPointError(
            f"adapted covariance is not finite (did the chain diverge on an improper target?): "
            f"{cov.tolist()}"
        )
    level = trace / d if trace > 0 else 1.0
    for k in range(-12, 1):
        chol, info = dpotrf(cov + (ridge + level * 10.0**k) * eye, lower=1, clean=1, overwrite_a=1)
        if info == 0 and chol[-1, -1] > 0.0:
            return chol, True
    raise FloatingPointError(f"adapted covariance cannot be made positive definite: {cov.tolist()}")


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


def _nonnegative_ridge(ridge) -> float:
    ridge = float(ridge)
    if not (math.isfinite(ridge) and ridge >= 0):
        raise ValueError(f"ridge must be a finite number >= 0, got {ridge}")
    return ridge


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

    def init(self, target: Target, x0, rng: np.random.Generator) -> AdaptiveState:
        self.target = target
        self.rng = rng
        x, logp = check_start(target, x0)
        cov = np.eye(target.dim)
        chol, _ = cholesky_with_jitter(cov, self.ridge)
        return AdaptiveState(
            x=x, logp=logp, t=0, mean=x.copy(), cov=cov, chol=chol, log_scale=self._log_scale0
        )

    def advance(self, state: AdaptiveState, n: int):
        d = self.target.dim
        eps, log_u = predraw(self.rng, n, d)
        rec = BlockRecorder(n, d)
        samples, accepted, accept_prob, step_size = (
            rec.samples, rec.accepted, rec.accept_prob, rec.step_size,
        )
        log_density = self.target.log_density
        isfinite, exp = math.isfinite, math.exp
        rate, ridge = self._rate, self.ridge
        rao_blackwellised, target_accept = self._rao_blackwellised, self._target_accept
        x, logp, t = state.x, state.logp, state.t
        mean, cov, chol = state.mean.copy(), state.cov.copy(), state.chol
        log_scale = state.log_scale
        scale = exp(0.5 * log_scale)
        n_nonfinite = n_jitter = 0
        for i in range(n):
            y = x + scale * (chol @ eps[i])
            logp_y = log_density(y)
            if isfinite(logp_y):
                r = logp_y - logp
                alpha = 1.0 if r >= 0.0 else exp(r)
                accept = log_u[i] < r
            else:
                alpha, accept = 0.0, False
                n_nonfinite += 1
            accepted[i] = accept
            accept_prob[i] = alpha
            step_size[i] = scale

            eta = rate(t)
            if not 0.0 <= eta <= 1.0:
                raise ValueError(f"learning rate must be in [0, 1], got {eta} at t = {t}")
            if rao_blackwellised:  # uses θ_t, before the move
                rao_blackwell_update(mean, cov, y, x, alpha, eta)
            if accept:
                x, logp = y, logp_y
            if not rao_blackwellised:  # uses θ_{t+1}, after the move
                am_update(mean, cov, x, eta)
            if target_accept is not None:
                log_scale += eta * (alpha - target_accept)
                scale = exp(0.5 * log_scale)
            chol, jittered = cholesky_with_jitter(cov, ridge)
            n_jitter += jittered
            samples[i] = x
            t += 1
        rec.n_collected = n
        rec.n_nonfinite = n_nonfinite
        rec.n_jitter = n_jitter
        if not self._records_step:
            step_size[:] = np.nan
        new_state = AdaptiveState(
            x=x, logp=float(logp), t=t, mean=mean, cov=cov, chol=chol, log_scale=float(log_scale)
        )
        return new_state, rec.block()


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
