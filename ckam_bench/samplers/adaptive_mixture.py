r"""aRWM: the adaptive random-walk mixture of Roberts & Rosenthal (2009), "Examples of
adaptive MCMC", J. Comput. Graph. Stat. 18 — one of the samplers the divergence-minimisation
paper compares (docs/papers/divergence.md). The math is in :class:`AdaptiveRWMixture`'s
docstring.

Compiled loop: with numba and a target that has a compiled density, ``_arwm_kernel`` runs a
block. For a plain numpy target the Python loop :func:`_arwm_python_loop` calls the density
once per iteration and does everything else in one compiled call of :func:`_arwm_step`, made
of the kernel's own helpers :func:`_arwm_propose` and :func:`_arwm_move` (the kernel's chain to
the bit, tested), as :mod:`ckam_bench.samplers.adaptive` does for AM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ckam_bench import jit
from ckam_bench.samplers.adaptive import _nonnegative_ridge
from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start
from ckam_bench.targets.base import Target


@jit.jitable
def _arwm_propose(x, mean, m2, count, row, delta, fixed_sd, ridge, cov, chol, y):
    """aRWM's proposal from ``x`` into ``y``, from one row of the block's normals (d steps, the
    accept normal, the mixture normal): the fixed component x + fixed_sd·step while count ≤ 2d,
    with probability δ, or when 2.38² Σ/d + ridge·I (Σ = m2/(count − 1), lower triangle into
    ``cov``) has no Cholesky factor; else x + L·step (L into ``chol``). True for the fixed one."""
    d = x.shape[0]
    scale = 2.38 * 2.38 / d
    use_fixed = count <= 2 * d or 0.5 * math.erfc(-row[d + 1] / math.sqrt(2.0)) < delta
    if not use_fixed:
        for a in range(d):
            for b in range(a + 1):
                cov[a, b] = scale * m2[a, b] / (count - 1.0)
        use_fixed = not jit.cholesky_into(cov, scale * ridge, 0.0, chol)
    if use_fixed:
        for a in range(d):
            y[a] = x[a] + fixed_sd * row[a]
    else:
        for a in range(d):
            s = 0.0
            for b in range(a + 1):
                s += chol[a, b] * row[b]
            y[a] = x[a] + s
    return use_fixed


@jit.jitable
def _arwm_move(x, logp, y, logp_y, z, mean, m2, count):
    """The accept step of ``y`` (log π(y) = ``logp_y``, u = Φ(z)) on ``x`` in place, then
    Welford's update of ``mean`` and ``m2`` with the new state, the count-th summed (``y`` is
    its scratch). Returns (log π of the new state, log ratio (−inf if log π(y) is not finite),
    accepted)."""
    d = x.shape[0]
    accepted = False
    if math.isfinite(logp_y):
        r = logp_y - logp
        log_u = math.log(0.5 * math.erfc(-z / math.sqrt(2.0))) if z > -30.0 else -math.inf
        if log_u < r:
            accepted = True
            for a in range(d):
                x[a] = y[a]
            logp = logp_y
    else:
        r = -math.inf
    for a in range(d):
        y[a] = x[a] - mean[a]
        mean[a] += y[a] / count
    for a in range(d):
        for b in range(d):
            m2[a, b] += y[a] * (x[b] - mean[b])
    return logp, r, accepted


def _arwm_loop(log_density, x, logp, mean, m2, count, normals, delta, fixed_sd, ridge):
    r"""n iterations of :class:`AdaptiveRWMixture` in place on ``mean`` (d,) and ``m2`` (d, d)
    (Welford sums of the states so far, ``count`` of them). Row i of ``normals``: d steps, the
    accept normal, the mixture normal. Returns (x, logp, count, samples, log_ratio, accepted,
    logps, n_nonfinite, n_fixed). Compiled only (:data:`_arwm_kernel`); the Python loop is
    :func:`_arwm_python_loop`, the same helpers in the same order."""
    n = normals.shape[0]
    d = x.shape[0]
    samples = np.empty((n, d))
    log_ratio = np.empty(n)
    accepted = np.zeros(n, dtype=np.bool_)
    logps = np.empty(n)
    x = x.copy()
    y = np.empty(d)
    cov = np.empty((d, d))
    chol = np.empty((d, d))
    n_nonfinite = 0
    n_fixed = 0
    for i in range(n):
        if _arwm_propose(x, mean, m2, count, normals[i], delta, fixed_sd, ridge, cov, chol, y):
            n_fixed += 1
        logp_y = log_density(y)
        if not math.isfinite(logp_y):
            n_nonfinite += 1
        count += 1.0
        logp, log_ratio[i], accepted[i] = _arwm_move(x, logp, y, logp_y, normals[i, d], mean, m2, count)
        logps[i] = logp
        for a in range(d):
            samples[i, a] = x[a]
    return x, logp, count, samples, log_ratio, accepted, logps, n_nonfinite, n_fixed


_arwm_kernel = jit.kernel(jit.A1, jit.F8, jit.A1, jit.A2, jit.F8, jit.A2, jit.F8, jit.F8, jit.F8)(_arwm_loop)


@jit.helper
def _arwm_step(i, logp_y, work, mean, m2, cov, chol, normals, record, delta, fixed_sd, ridge):
    """What :func:`_arwm_python_loop` does around one density call log π(y) = ``logp_y``:
    iteration i − 1's accept step and update, recorded in row i − 1 of ``record`` (state, log
    ratio, accepted, log π) when i ≥ 1, then iteration i's proposal y (i < n) — one compiled
    call. ``work`` holds x, y and the tally (log π(x), count, non-finite proposals,
    fixed-component proposals)."""
    n, d = normals.shape[0], mean.shape[0]
    x, y, tally = work[:d], work[d:2 * d], work[2 * d:]
    if i > 0:
        k = i - 1
        if not math.isfinite(logp_y):
            tally[2] += 1.0
        tally[1] += 1.0
        tally[0], record[k, d], accepted = _arwm_move(x, tally[0], y, logp_y, normals[k, d], mean, m2, tally[1])
        record[k, d + 1], record[k, d + 2] = accepted, tally[0]
        for a in range(d):
            record[k, a] = x[a]
    if i < n and _arwm_propose(x, mean, m2, tally[1], normals[i], delta, fixed_sd, ridge, cov, chol, y):
        tally[3] += 1.0


def _arwm_python_loop(log_density, x, logp, mean, m2, count, normals, delta, fixed_sd, ridge, step):
    """:func:`_arwm_loop` for a target without a compiled density (its numpy log density is
    called once per iteration): everything else is ``step``, :func:`_arwm_step` — compiled
    (one call per iteration) when numba is there and switched on, else its Python function.
    The same chain as the kernel's, to the bit. The step's arrays are packed (``work``,
    ``record``): a compiled call costs ~60 ns per array argument."""
    n, d = normals.shape[0], x.shape[0]
    work, record = np.empty(2 * d + 4), np.empty((n, d + 3))
    work[:d], work[2 * d:] = x, (logp, count, 0.0, 0.0)
    options = (mean, m2, np.empty((d, d)), np.empty((d, d)), normals, record, delta, fixed_sd, ridge)
    y = work[d:2 * d]
    step(0, 0.0, work, *options)
    for i in range(1, n + 1):
        step(i, float(log_density(y)), work, *options)
    logp, count, n_nonfinite, n_fixed = work[2 * d:].tolist()
    return (work[:d].copy(), logp, count, np.ascontiguousarray(record[:, :d]), record[:, d].copy(),
            record[:, d + 1] == 1.0, record[:, d + 2].copy(), int(n_nonfinite), int(n_fixed))


@dataclass(kw_only=True)
class ARWMState(ChainState):
    """State of aRWM: Welford sums of every state so far (the start included)."""

    mean: np.ndarray
    """Running mean of the states x_0…x_t, shape (d,)."""
    m2: np.ndarray
    """Σ (x_i − mean)(x_i − mean)ᵀ over the same states, shape (d, d)."""
    count: float
    """Number of states summed (t + 1)."""
    n_fixed: int = 0
    """Iterations that used the fixed component N(x, 0.1² I/d)."""


class AdaptiveRWMixture(Sampler):
    r"""aRWM of Roberts & Rosenthal (2009), as compared in the divergence-minimisation paper.

    Proposal, with Σ_n the empirical covariance of the states x_0…x_n so far (Welford's
    recursion, O(d²) per iteration, never a rescan of the history):

        Q_n(x, ·) = (1 − δ) N(x, 2.38² Σ_n / d) + δ N(x, 0.1² I_d / d)   (n > 2d),
        Q_n(x, ·) = N(x, 0.1² I_d / d)                                    (n ≤ 2d),

    δ = 0.05. Both components are symmetric, so α = min{1, π(y)/π(x)}. The change of Σ_n per
    step is O(1/n): diminishing adaptation, and the fixed component gives containment on
    bounded-away targets (Roberts & Rosenthal 2009). If 2.38²Σ_n/d + ridge·I cannot be
    factored the fixed component is used for that step. (The authors' ``aRWM`` uses one
    Gaussian with the mixed covariance instead of the mixture.)

    delta : mixture weight δ ∈ (0, 1) of the fixed component (0.05).
    fixed_scale : 0.1 in N(x, fixed_scale² I/d).
    ridge : r ≥ 0 added to Σ_n's diagonal before factorising.
    burnin : iterations whose states are not collected (≥ 0).
    """

    name = "arwm"
    phases = ("burnin", "sampling")

    def __init__(self, delta: float = 0.05, fixed_scale: float = 0.1, ridge: float = 1e-10, burnin: int = 0):
        delta = float(delta)
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
        self.delta = delta
        fixed_scale = float(fixed_scale)
        if not (math.isfinite(fixed_scale) and fixed_scale > 0):
            raise ValueError(f"fixed_scale must be a finite number > 0, got {fixed_scale}")
        self.fixed_scale = fixed_scale
        self.ridge = _nonnegative_ridge(ridge)
        if isinstance(burnin, bool) or int(burnin) != burnin or int(burnin) < 0:
            raise ValueError(f"burnin must be an integer >= 0, got {burnin!r}")
        self.burnin = int(burnin)

    def describe(self) -> dict:
        return {"adaptation": "diminishing", "delta": self.delta, "fixed_scale": self.fixed_scale}

    def warm_up(self, target: Target) -> None:
        density = jit.compiled_log_density(target)
        d = target.dim
        x = np.array(target.start, dtype=float)
        args = (x, 0.0, x.copy(), np.zeros((d, d)), 1.0, np.zeros((1, d + 2)), self.delta, self.fixed_scale, self.ridge)
        if density is not None:
            _arwm_kernel(density, *args)
        elif jit.enabled():  # the Python loop's compiled step, on a constant density
            _arwm_python_loop(lambda y: 0.0, *args, _arwm_step)

    def init(self, target: Target, x0, rng: np.random.Generator) -> ARWMState:
        self.target = target
        self.rng = rng
        self._density = jit.compiled_log_density(target)
        self._step = jit.as_enabled(_arwm_step)
        x, logp = check_start(target, x0)
        d = target.dim
        return ARWMState(x=x, logp=logp, t=0, mean=x.copy(), m2=np.zeros((d, d)), count=1.0)

    def trace_columns(self, state: ARWMState) -> dict:
        return {"fixed_component_share": state.n_fixed / state.t if state.t else math.nan}

    def advance(self, state: ARWMState, n: int):
        d = self.target.dim
        normals = self.rng.standard_normal((n, d + 2))
        mean, m2 = np.array(state.mean, dtype=float), np.array(state.m2, dtype=float)
        fixed_sd = self.fixed_scale / math.sqrt(d)
        args = (np.ascontiguousarray(state.x, dtype=float), float(state.logp), mean, m2, float(state.count), normals,
                self.delta, fixed_sd, self.ridge)
        if self._density is None:
            out = _arwm_python_loop(self.target._log_density, *args, self._step)
        else:
            out = _arwm_kernel(self._density, *args)
        x, logp, count, samples, log_ratio, accepted, logps, n_nonfinite, n_fixed = out
        self.target.n_density += n
        t = np.arange(state.t, state.t + n)
        block = Block(
            samples=samples[t >= self.burnin],
            accepted=accepted,
            accept_prob=np.exp(np.minimum(log_ratio, 0.0)),
            phase=(t >= self.burnin).astype(np.int8),
            step_size=np.full(n, np.nan),
            noise=np.full(n, np.nan),
            n_nonfinite=int(n_nonfinite),
            logp=logps,
        )
        new = ARWMState(x=x, logp=float(logp), t=state.t + n, mean=mean, m2=m2, count=float(count),
                        n_fixed=state.n_fixed + int(n_fixed))
        return new, block
