r"""nutpie's warm-up in our compiled NUTS: the Fisher-divergence mass-matrix estimators and
nuts-rs's adaptation schedule (Seyboldt, Carlson & Carpenter, "Preconditioning HMC by
minimizing Fisher divergence", arXiv 2603.18845), as options of
:class:`~ckam_bench.samplers.nuts.NUTS` (same tree, same counting), so that estimator and
schedule can be compared one at a time.

**Estimators** (``estimator``; the math in :mod:`ckam_bench.adaptation.fisher`):

* ``fisher`` — the diagonal Fisher estimator M⁻¹ = diag(√(Var x / Var g)) from the draws and
  their gradients, starting from 1/|∇log π(x₀)|;
* ``variance`` — Stan's regularised draw variance, starting from the identity;
* ``low_rank`` — M⁻¹ = diag(σ)(I + U(Λ − I)Uᵀ)diag(σ): the diagonal Fisher scales σ and, on
  the span of the draws and gradients, the eigenpairs of the geometric mean of the draw and
  inverse-gradient covariances with λ ∉ [1/c, c]; the tree runs in y = T⁻¹x, M⁻¹ = TTᵀ,
  at O(dk) per leapfrog step (:mod:`~ckam_bench.samplers.nuts_metric`);
* ``reference_diag``, ``reference_dense`` — no estimator: the metric is the target's certified
  reference posterior's variance (diagonal) or covariance Σ (dense, M⁻¹ = Σ as
  diag(σ)(I + V(Λ − I)Vᵀ)diag(σ) with all d eigenpairs of the correlation matrix, O(d²) per
  leapfrog step), fixed from the first iteration, with schedule ``step_size``. The limit any
  adaptation of that metric family can reach: the best a perfect estimator could do.

**Schedules** (``schedule``), over N = ``burn_in`` warm-up iterations t = 0 … N − 1:

* ``stan`` — Stan's windows, exactly those of :class:`~ckam_bench.samplers.nuts.NUTS`: dual
  averaging toward ``target_accept`` throughout; the estimator sees the draws (and gradients)
  of each slow window and sets the metric at its end, then Stan's ε heuristic (from the current
  ε) and a dual-averaging restart;
* ``nutpie`` — nuts-rs's schedule. A *foreground* and a *background* estimator both see every
  draw; the metric is recomputed from the foreground at every switch and every ``update_every``
  draws between (``early_update_every`` in the early phase), once it holds ≥ 3 draws (nuts-rs:
  every draw for the diagonal, every 10 for the low rank); in the early phase also once the
  trees since the last update spent ``early_update_gradients`` gradients (``nuts_lowrank``: 16;
  a 10-draw window is rank-deficient for d ≥ 10, and the deep trees of a poor metric then
  recompute it after every draw, the short trees of a good one every few draws); after it an
  update between switches also waits until the trees since the last one spent κd² gradients
  (``update_wait`` κ; ``nuts_converged``: 0.05): a low-rank recompute's eigensolvers cost
  O(d³) (2.3 ms at d = 88, the cost of ~300 gradients of radon_mn's county model), so on a wide,
  cheap posterior they would outweigh its trees, and d² gradients of at least O(d) each bound
  them; at a
  *switch* the background (the draws since the last switch) becomes the foreground and a new
  background starts. In the early phase, t < ⌊0.3N⌋
  (``early_window``), the pair switches whenever the background holds 10 draws
  (``early_switch``); then whenever it holds w draws, w = max(80, its count then) (``window``)
  growing to max(w + 1, round(1.5w)) (``window_growth``) after each switch. A switch whose
  next window would not end before the final window is not made (the iteration is *late*).
  The final window, the last ⌊0.15N⌋ iterations (``step_size_window``), keeps the metric and
  adapts ε only. The starting point and its gradient enter both estimators; a draw enters
  only when the chain moved (its index in the trajectory ≠ 0; after a divergence only when
  |index| > 4). Step size: nuts-rs's search (from ``step_size``, doubling or halving until one
  leapfrog step's acceptance crosses ``target_accept``; a divergent step counts as acceptance 0)
  at t = 0 and again at the first metric change, each followed by a dual-averaging restart;
  otherwise dual averaging runs on without restart, on the mean acceptance statistic, and on
  the symmetric one, 2 min(1, e^Δ)/(1 + e^Δ) per leaf, once late and in the final window; ε is
  capped at π (``max_step``); the last warm-up iteration sets ε to the averaged ε̄;
  **Converged warm-up** (``converge_cutoff`` c > 0, estimator ``low_rank``): after the early
  phase, each metric update also asks whether the metric has converged (:func:`converged`:
  the low-rank estimate from the first half of the foreground's draws, applied to the second
  half, leaves every variance ratio and eigenvalue within [1/c, c] — a split-half check of the
  metric, as R-hat is of the chain). If so the metric is frozen there and the final window,
  its usual ⌊0.15N⌋ iterations, starts at once: the warm-up ends at most N iterations in, and
  earlier on a posterior whose metric settles early. ``burn_in`` is then the longest warm-up;
  the trace's ``warmup_end`` column records the iteration it ended.
* ``step_size`` — the metric is never adapted; ε by Stan's heuristic at t = 0 and dual
  averaging toward ``target_accept`` through the warm-up, ε̄ at its end.

Every iteration may use ε·u, u ~ U(1 − j, 1 + j) (``step_jitter`` j, nutpie's 0.1; one uniform
drawn after the momentum; after warm-up j is ``sampling_jitter`` when set). Finite adaptation:
after warm-up the metric and ε̄ are fixed, so the kernel (with jitter, a fixed mixture of NUTS
kernels) leaves π invariant. Counting as NUTS: every leapfrog step of the trees and of the step-size searches is
one density and one gradient evaluation (compiled: the kernel's count, added to the target's
counters; Python: the target's counted API). The draws of the loop: d uniforms for the
momentum, one for the jitter, then the tree's (:mod:`~ckam_bench.samplers.nuts`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from ckam_bench import jit
from ckam_bench.adaptation import dual_averaging, fisher
from ckam_bench.reference_lookup import load_reference
from ckam_bench.samplers import nuts_metric
from ckam_bench.samplers.hamiltonian import _I64, GradientState, _block, _copy, check_fraction, check_positive, \
    start_with_gradient
from ckam_bench.samplers.nuts import (
    _NDTRI, _NUTS_JOIN, _NUTS_START, NUTS, TS_SIZE, _normals, _nuts_steps, _nuts_transition, _step_search, _tree_rng,
)
from ckam_bench.samplers.nuts_tree import _nuts_work
from ckam_bench.targets.base import Target

ESTIMATORS = ("fisher", "variance", "low_rank", "reference_diag", "reference_dense")
SCHEDULES = ("stan", "nutpie", "step_size")
FISHER, VARIANCE, LOW_RANK, REFERENCE_DIAG, REFERENCE_DENSE = range(5)
STAN, NUTPIE, STEP_SIZE = range(3)
# the settings, in ``params``
(P_TARGET, P_GAMMA, P_T0, P_KAPPA, P_MAX_LOG_STEP, P_JITTER, P_STEP0, P_EARLY_END, P_FINAL_START, P_EARLY_SWITCH,
 P_GROWTH, P_UPDATE_EVERY, P_RANK_GAMMA, P_CUTOFF, P_ESTIMATOR, P_SCHEDULE, P_WINDOW_START,
 P_EARLY_UPDATE_EVERY, P_EARLY_UPDATE_GRADIENTS, P_CONVERGE, P_RIDGE_POWER, P_SAMPLING_JITTER, P_UPDATE_WAIT) = range(23)
# the schedule's state, in ``sched``: main window size, last metric update, first change pending,
# gradients spent since the last metric update, the final window's start and the warm-up's end
# (moved earlier when the metric has converged)
S_WINDOW, S_LAST_UPDATE, S_PENDING, S_GRADIENTS, S_FINAL, S_END = range(6)
SCHEDULE_STATE = 6
CONVERGE_DRAWS = 40
"""The fewest foreground draws a convergence check splits in halves (20 each)."""


# ---------------------------------------------------------------- per-metric operations
# diagonal metric (1-D inverse metric, estimator a flat Welford pair) or low-rank (2-D metric
# array of nuts_metric, estimator a draw buffer); compiled: chosen when the kernel is typed
def _est_update(est, x, g):
    (fisher.diag_update if est.ndim == 1 else fisher.low_rank_update)(est, x, g)


def _est_switch(est):
    (fisher.diag_switch if est.ndim == 1 else fisher.low_rank_switch)(est)


def _est_count(est, background):
    return (fisher.diag_count if est.ndim == 1 else fisher.low_rank_count)(est, background)


@jit.jitable
def _est_reset_diag(est):
    est[:] = 0.0


@jit.jitable
def _est_reset_low_rank(est):
    est[0, 0] = est[0, 1] = 0.0


def _est_reset(est):
    (_est_reset_diag if est.ndim == 1 else _est_reset_low_rank)(est)


@jit.jitable
def _metric_diag(est, metric, kind, gamma, cutoff, ridge_power):
    """The diagonal inverse metric from the foreground, in place: (metric, changed)."""
    changed = fisher.fisher_into(est, metric) if kind == FISHER else fisher.variance_into(est, metric)
    return metric, changed


@jit.jitable
def _metric_low_rank(est, metric, kind, gamma, cutoff, ridge_power):
    """A new low-rank metric array from the foreground (≥ 3 draws; the old one if σ is not
    finite, as nuts-rs, which still counts it as a change): (metric, changed)."""
    if fisher.low_rank_count(est, False) < 3:
        return metric, False
    ok, sigma, values, vectors = fisher.low_rank_metric(est, gamma, cutoff, ridge_power)
    if ok:
        return nuts_metric.build(sigma, values, vectors), True
    return metric, True


def _est_metric(est, metric, kind, gamma, cutoff, ridge_power):
    return (_metric_diag if est.ndim == 1 else _metric_low_rank)(est, metric, kind, gamma, cutoff, ridge_power)


@jit.jitable
def converged(est, gamma, c, ridge_power):
    """Whether the low-rank estimate of the foreground's first half leaves nothing to change on its
    second half: the estimator run on the second half's draws and gradients in the first half's
    coordinates y = T⁻¹x, Tᵀg gives every σⱼ² in [1/c, c] (checked first: no eigensolver where it
    fails) and no eigenvalue outside it (on a Gaussian it gives exactly the identity once T is
    right: there ∇log π(y) = −y + b). False with fewer than :data:`CONVERGE_DRAWS` draws."""
    n, d = int(est[0, 1]), est.shape[1] // 2
    if n < CONVERGE_DRAWS:
        return False
    h = n // 2
    rows = est[1:n + 1]
    ok, sigma, values, vectors = fisher.low_rank_estimate(np.ascontiguousarray(rows[:h, :d]),
                                                          np.ascontiguousarray(rows[:h, d:]), gamma, c, ridge_power)
    if not ok:
        return False
    metric = nuts_metric.build(sigma, values, vectors)
    ys, gys = np.empty((n - h, d)), np.empty((n - h, d))
    for i in range(n - h):
        nuts_metric.to_y(metric, rows[h + i, :d], ys[i])
        nuts_metric.grad_to_y(metric, rows[h + i, d:], gys[i])
    sigma, mean = np.empty(d), np.empty((2, d))
    if not fisher.scales_into(ys, gys, sigma, mean[0], mean[1]):
        return False
    for j in range(d):
        if not 1.0 / c <= sigma[j] * sigma[j] <= c:
            return False
    ok, _, values, _ = fisher.low_rank_estimate(ys, gys, gamma, c, ridge_power)
    return ok and values.shape[0] == 0


@jit.jitable
def _begin_diag(metric, x, g, y, gy, z, p):
    _copy(y, x)
    _copy(gy, g)
    for j in range(p.shape[0]):
        p[j] = z[j] / math.sqrt(metric[j])


@jit.jitable
def _begin_low_rank(metric, x, g, y, gy, z, p):
    nuts_metric.to_y(metric, x, y)
    nuts_metric.grad_to_y(metric, g, gy)
    _copy(p, z)


def _begin(metric, x, g, y, gy, z, p):
    """The tree's coordinates of (x, ∇log π(x)) and the momentum p ~ N(0, M) from normals z."""
    (_begin_diag if metric.ndim == 1 else _begin_low_rank)(metric, x, g, y, gy, z, p)


@jit.jitable
def _end_diag(metric, y, gy, x, g):
    _copy(x, y)
    _copy(g, gy)


@jit.jitable
def _end_low_rank(metric, y, gy, x, g):
    nuts_metric.to_x(metric, y, x)
    nuts_metric.grad_to_x(metric, gy, g)


def _end(metric, y, gy, x, g):
    """(x, ∇log π(x)) of the tree's new state (y, gy)."""
    (_end_diag if metric.ndim == 1 else _end_low_rank)(metric, y, gy, x, g)


if jit.AVAILABLE:
    from ckam_bench.samplers.nuts import _by_metric

    for _fn, _diag, _low in ((_est_update, fisher.diag_update, fisher.low_rank_update),
                             (_est_switch, fisher.diag_switch, fisher.low_rank_switch),
                             (_est_count, fisher.diag_count, fisher.low_rank_count),
                             (_est_reset, _est_reset_diag, _est_reset_low_rank),
                             (_est_metric, _metric_diag, _metric_low_rank)):
        _by_metric(_fn, _diag, _low, arg="est")
    for _fn, _diag, _low in ((_begin, _begin_diag, _begin_low_rank), (_end, _end_diag, _end_low_rank)):
        _by_metric(_fn, _diag, _low, arg="metric")


def nutpie_switches(burn_in: int, early_window: float = 0.3, step_size_window: float = 0.15,
                    early_switch: int = 10, window: int = 80, window_growth: float = 1.5) -> list[int]:
    """The warm-up iterations at whose end nutpie's schedule switches its estimators when every
    draw enters them (the starting point too), as :func:`_nutpie_adapt` decides them."""
    early_end, final_start = int(early_window * burn_in), burn_in - int(step_size_window * burn_in)
    background, size, out = 1, float(window), []
    for t in range(final_start):
        early = t < early_end
        if not early and t == early_end:
            size = max(size, float(background))
        background += 1
        following = early_switch if early else max(size + 1.0, math.floor(size * window_growth + 0.5))
        if background >= (early_switch if early else size) and not following + t > final_start:
            out.append(t)
            background = 0
            if not early:
                size = following
    return out


@jit.jitable
def _nutpie_adapt(f, t, burn_in, stat, sym, divergent, index, n_lf, x, logp, g, z, metric, da, est, sched, params,
                  work, y, gy, p):
    """nuts-rs's schedule after warm-up iteration t (module docstring). Returns (ε for the next
    iteration, metric, evaluations of a step-size search)."""
    target, gamma, t0, kappa, max_log = (params[P_TARGET], params[P_GAMMA], params[P_T0], params[P_KAPPA],
                                         params[P_MAX_LOG_STEP])
    final_start = int(params[P_FINAL_START])
    if t >= sched[S_FINAL]:  # the final window: ε only
        step = dual_averaging.update_bounded(da, sym, target, gamma, t0, kappa, max_log)
        if t == sched[S_END] - 1:
            step = dual_averaging.final(da)
        return step, metric, 0
    early = t < int(params[P_EARLY_END])
    if not early and t == int(params[P_EARLY_END]):
        sched[S_WINDOW] = max(sched[S_WINDOW], float(_est_count(est, True)))
    switch_at = params[P_EARLY_SWITCH] if early else sched[S_WINDOW]
    if (abs(index) > 4) if divergent else (index != 0):
        _est_update(est, x, g)
    following = params[P_EARLY_SWITCH] if early else max(sched[S_WINDOW] + 1.0,
                                                          math.floor(sched[S_WINDOW] * params[P_GROWTH] + 0.5))
    late = following + t > final_start
    switch = _est_count(est, True) >= switch_at and not late
    if switch:
        _est_switch(est)
        if not early:
            sched[S_WINDOW] = following
    changed = False
    every = params[P_EARLY_UPDATE_EVERY] if early else params[P_UPDATE_EVERY]
    sched[S_GRADIENTS] += n_lf
    spent = early and params[P_EARLY_UPDATE_GRADIENTS] > 0.0 and sched[S_GRADIENTS] >= params[P_EARLY_UPDATE_GRADIENTS]
    wait = 0.0 if early else params[P_UPDATE_WAIT] * x.shape[0] * x.shape[0]
    if switch or spent or (t - sched[S_LAST_UPDATE] >= every and sched[S_GRADIENTS] >= wait):
        metric, changed = _est_metric(est, metric, int(params[P_ESTIMATOR]), params[P_RANK_GAMMA], params[P_CUTOFF],
                                      params[P_RIDGE_POWER])
    if changed:
        sched[S_LAST_UPDATE] = t
        sched[S_GRADIENTS] = 0.0
        if not early and params[P_CONVERGE] > 0.0 and est.ndim == 2 and converged(
                est, params[P_RANK_GAMMA], params[P_CONVERGE], params[P_RIDGE_POWER]):
            sched[S_FINAL] = t + 1.0  # the metric stays; the final window (ε only) starts now
            sched[S_END] = t + 1.0 + burn_in - final_start
    step = dual_averaging.update_bounded(da, sym if late else stat, target, gamma, t0, kappa, max_log)
    evals = 0
    if changed and sched[S_PENDING] == 1.0:  # the first change of the metric: search ε again
        sched[S_PENDING] = 0.0
        _begin(metric, x, g, y, gy, z, p)
        step, evals = _step_search(f, y, logp, gy, p, metric, params[P_STEP0], target, 1e-10, 1e5, work[0], work[1],
                                   work[2])
        dual_averaging.restart(da, step)
    return step, metric, evals


@jit.jitable
def _stan_adapt(f, t, burn_in, stat, window_ends, x, logp, g, z, metric, da, est, params, work, y, gy, p):
    """Stan's windows after warm-up iteration t (as :func:`~ckam_bench.samplers.nuts._nuts_loop`).
    Returns (ε, metric, evaluations of the heuristic)."""
    step = dual_averaging.update(da, stat, params[P_TARGET], params[P_GAMMA], params[P_T0], params[P_KAPPA])
    last_window = window_ends[window_ends.shape[0] - 1] if window_ends.shape[0] > 0 else -1
    evals = 0
    if int(params[P_WINDOW_START]) <= t <= last_window:
        _est_update(est, x, g)
    for e in range(window_ends.shape[0]):
        if window_ends[e] == t:
            metric, _ = _est_metric(est, metric, int(params[P_ESTIMATOR]), params[P_RANK_GAMMA], params[P_CUTOFF],
                                      params[P_RIDGE_POWER])
            _est_reset(est)
            _begin(metric, x, g, y, gy, z, p)
            step, evals = _step_search(f, y, logp, gy, p, metric, step, 0.8, 1e-12, 1e7, work[0], work[1], work[2])
            dual_averaging.restart(da, step)
    if t == burn_in - 1:
        step = dual_averaging.final(da)
    return step, metric, evals


@jit.jitable
def _adapted_loop(f, transition, x, logp, g, step, metric, da, est, sched, t0, burn_in, window_ends, max_depth, rng,
                  quantile, n, params):
    """n NUTS iterations from global iteration ``t0`` with the warm-up of ``params``
    (module docstring; ``metric``, ``da``, ``est``, ``sched`` updated in place, a low-rank
    metric replaced). Returns (x, logp, g, step, metric, samples, n_collected, accepted,
    accept_prob, steps, logps, n_evals, divergent, depths)
    (``divergent``: whether iteration i's trajectory diverged)."""
    d = x.shape[0]
    samples = np.empty((n, d))
    accepted = np.zeros(n, dtype=np.bool_)
    accept_prob, steps, logps = np.empty(n), np.empty(n), np.empty(n)
    depths = np.zeros(n, dtype=np.int64)
    x, g = x.copy(), g.copy()
    work = _nuts_work(max_depth, d)
    y, gy, p = np.empty(d), np.empty(d), np.empty(d)
    n_collected = n_evals = 0
    diverged = np.zeros(n, dtype=np.bool_)
    jitter, sampling_jitter = params[P_JITTER], params[P_SAMPLING_JITTER]
    nutpie = int(params[P_SCHEDULE]) == NUTPIE
    step_only = int(params[P_SCHEDULE]) == STEP_SIZE
    for i in range(n):
        t = t0 + i
        end = int(sched[S_END]) if nutpie else burn_in  # the warm-up's end: earlier once converged
        z = _normals(rng.random(d), quantile)
        _begin(metric, x, g, y, gy, z, p)
        if t == 0 and burn_in > 0:
            start = params[P_STEP0] if nutpie else step
            target, low, high = (params[P_TARGET], 1e-10, 1e5) if nutpie else (0.8, 1e-12, 1e7)
            step, evals = _step_search(f, y, logp, gy, p, metric, start, target, low, high, work[0], work[1], work[2])
            n_evals += evals
            dual_averaging.restart(da, step)
        j = jitter if t < end else sampling_jitter
        eps = step * (1.0 - j + 2.0 * j * rng.random()) if j > 0.0 else step
        logp, stat, n_lf, divergent, depth, sym, index = transition(f, y, logp, gy, p, metric, eps, rng, max_depth,
                                                                    work)
        n_evals += n_lf
        diverged[i] = divergent
        if index != 0:
            _end(metric, y, gy, x, g)
        accepted[i] = index != 0
        accept_prob[i] = stat
        steps[i] = eps
        depths[i] = depth
        if t < end:
            if step_only:  # the metric stays; dual averaging of ε only
                step = dual_averaging.update(da, stat, params[P_TARGET], params[P_GAMMA], params[P_T0],
                                             params[P_KAPPA])
                evals = 0
                if t == end - 1:
                    step = dual_averaging.final(da)
            elif nutpie:
                step, metric, evals = _nutpie_adapt(f, t, burn_in, stat, sym, divergent, index, n_lf, x, logp, g, z,
                                                    metric, da, est, sched, params, work, y, gy, p)
            else:
                step, metric, evals = _stan_adapt(f, t, burn_in, stat, window_ends, x, logp, g, z, metric, da, est,
                                                  params, work, y, gy, p)
            n_evals += evals
        logps[i] = logp
        if t >= end:
            samples[n_collected] = x
            n_collected += 1
    return (x, logp, g, step, metric, samples, n_collected, accepted, accept_prob, steps, logps, n_evals,
            diverged, depths)


def _steps(f, x, logp, g, p, minv, step, rng, max_depth, work, *, tree_rng, ts):
    """:func:`~ckam_bench.samplers.nuts._nuts_steps` in the metric's coordinates: a low-rank
    metric's tree evaluates the Python density at x = Ty (:func:`nuts_metric.evaluate`)."""
    if minv.ndim == 2:
        f = functools.partial(nuts_metric.evaluate, f, minv)
    return _nuts_steps(f, x, logp, g, p, minv, step, rng, max_depth, work, tree_rng=tree_rng, ts=ts)


if jit.AVAILABLE:
    from ckam_bench.samplers.nuts import _GENERATOR, _QUANTILE

    def _adapted_compiled(f, x, logp, g, step, metric, da, est, sched, t0, burn_in, window_ends, max_depth, rng,
                          quantile, n, params):
        return _adapted_loop(f, _nuts_transition, x, logp, g, step, metric, da, est, sched, t0, burn_in, window_ends,
                             max_depth, rng, quantile, n, params)

    _KERNELS = {ndim: jit.gradient_kernel(jit.A1, jit.F8, jit.A1, jit.F8, array, jit.A1, array, jit.A1, _I64, _I64,
                                          jit.types.int64[::1], _I64, _GENERATOR, _QUANTILE, _I64, jit.A1)(
        _adapted_compiled) for ndim, array in ((1, jit.A1), (2, jit.A2))}
else:
    _KERNELS = {}


@dataclass(kw_only=True)
class AdaptedNUTSState(GradientState):
    """State of NUTS with a nutpie-style warm-up."""

    inv_metric: np.ndarray
    """The inverse metric: diagonal (d,), or a low-rank metric array (6 + k, d) of
    :mod:`~ckam_bench.samplers.nuts_metric`."""
    estimator: np.ndarray
    """The estimator state (:mod:`~ckam_bench.adaptation.fisher`: a diagonal pair, or a draw buffer)."""
    schedule: np.ndarray
    """The schedule's state: main window size, last metric update, first change pending, gradients
    since the last update, the final window's start and the warm-up's end."""
    mean_depth: float = 0.0
    """Mean tree depth of the last block."""


class AdaptedNUTS(NUTS):
    """Multinomial NUTS with a Fisher-divergence (or Stan's variance) mass-matrix estimator on
    nutpie's or Stan's warm-up schedule (module docstring).

    estimator : ``fisher``, ``variance``, ``low_rank``, ``reference_diag`` or ``reference_dense``
        (the last two need the target's certified reference and schedule ``step_size``).
    schedule : ``nutpie``, ``stan`` or ``step_size`` (ε only).
    step_size, burn_in, max_depth, target_accept, gamma, t0, kappa : as NUTS (``step_size``:
        where each step-size search starts).
    init_buffer, term_buffer, base_window : Stan's windows (schedule ``stan``).
    early_window, step_size_window : the early phase and the final window, as fractions of the
        warm-up (nuts-rs: 0.3, 0.15).
    early_switch, window, window_growth : switch after 10 draws early, then after 80 growing
        ×1.5 (nuts-rs).
    update_every : draws between metric updates (a switch updates too; nuts-rs: 1 for the diagonal,
        10 for the low rank).
    early_update_every : the same in the early phase (default: ``update_every``).
    early_update_gradients : in the early phase, also update once the trees since the last
        update spent this many gradients (0: never; ``nuts_lowrank``'s rule, module docstring).
    update_wait : κ ≥ 0; after the early phase an update between switches also waits until the
        trees since the last one spent κd² gradients (0: no wait; module docstring).
    max_step : the cap of ε in dual averaging (nuts-rs: π; schedule ``nutpie``).
    step_jitter : j of ε·U(1 − j, 1 + j) (nutpie: 0.1; 0: no jitter, no draw).
    sampling_jitter : j after warm-up (None: ``step_jitter``); a wider one lets a chain leave a
        spot whose curvature its ε overshoots (docs/samplers.md).
    rank_gamma, eigval_cutoff : the low-rank estimator's γ and c (nuts-rs: 10⁻⁵, 2).
    rank_ridge_power : r of the low-rank estimator's ridge γnʳ on the covariances of n draws
        (:mod:`~ckam_bench.adaptation.fisher`), in [−1, 1]: −1 as nuts-rs from 0.18.1 on (a
        pseudo-count of γ draws), 1 as nuts-rs up to 0.18.0 (nutpie 0.16.8).
    converge_cutoff : c of the convergence check that ends the warm-up early (module docstring;
        0: off, the fixed warm-up of ``burn_in`` iterations; ``low_rank`` on ``nutpie`` only).
    """

    name = "nuts_adapted"

    def __init__(self, estimator: str = "fisher", schedule: str = "nutpie", step_size: float = 0.1,
                 burn_in: int = 500, max_depth: int = 10, target_accept: float = 0.8, gamma: float = 0.05,
                 t0: float = 10.0, kappa: float = 0.75, init_buffer: int = 75, term_buffer: int = 50,
                 base_window: int = 25, early_window: float = 0.3, step_size_window: float = 0.15,
                 early_switch: int = 10, window: int = 80, window_growth: float = 1.5, update_every: int = 1,
                 max_step: float = math.pi, step_jitter: float = 0.0, rank_gamma: float = 1e-5,
                 eigval_cutoff: float = 2.0, early_update_every: int | None = None, early_update_gradients: int = 0,
                 converge_cutoff: float = 0.0, rank_ridge_power: float = -1.0,
                 sampling_jitter: float | None = None, update_wait: float = 0.0):
        super().__init__(step_size, burn_in, max_depth, target_accept, gamma, t0, kappa, init_buffer, term_buffer,
                         base_window)
        if estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        if estimator.startswith("reference") and schedule != "step_size":
            raise ValueError(f"estimator {estimator} keeps the reference's metric: it runs with "
                             f"schedule=step_size, got {schedule!r}")
        self.estimator, self.schedule = estimator, schedule
        self.reference_id = None
        self.early_window = check_fraction("early_window", early_window, -1e-12, 1.0)
        self.step_size_window = check_fraction("step_size_window", step_size_window, -1e-12, 1.0)
        if self.early_window + self.step_size_window >= 1.0:
            raise ValueError(f"early_window + step_size_window must be < 1, got {early_window} + {step_size_window}")
        if early_update_every is None:
            early_update_every = update_every
        for key, value in (("early_switch", early_switch), ("window", window), ("update_every", update_every),
                           ("early_update_every", early_update_every)):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{key} must be an integer >= 1, got {value}")
        self.early_switch, self.window, self.update_every = int(early_switch), int(window), int(update_every)
        self.early_update_every = int(early_update_every)
        if isinstance(early_update_gradients, bool) or int(early_update_gradients) != early_update_gradients \
                or not 0 <= early_update_gradients <= 2 ** 53:
            raise ValueError(f"early_update_gradients must be an integer >= 0, got {early_update_gradients}")
        self.early_update_gradients = int(early_update_gradients)
        self.update_wait = float(update_wait)
        if not (math.isfinite(self.update_wait) and 0.0 <= self.update_wait <= 1e6):
            raise ValueError(f"update_wait must be a number in [0, 1e6], got {update_wait}")
        self.window_growth = float(window_growth)
        if not (math.isfinite(self.window_growth) and self.window_growth >= 1.0):
            raise ValueError(f"window_growth must be a finite number >= 1, got {window_growth}")
        self.max_step = check_positive("max_step", max_step)
        self.step_jitter = check_fraction("step_jitter", step_jitter, -1e-12, 1.0)
        self.sampling_jitter = self.step_jitter if sampling_jitter is None else \
            check_fraction("sampling_jitter", sampling_jitter, -1e-12, 1.0)
        self.rank_gamma = check_positive("rank_gamma", rank_gamma)
        self.eigval_cutoff = check_positive("eigval_cutoff", eigval_cutoff)
        self.rank_ridge_power = float(rank_ridge_power)
        if not -1.0 <= self.rank_ridge_power <= 1.0:
            raise ValueError(f"rank_ridge_power must be a number in [-1, 1], got {rank_ridge_power}")
        if self.eigval_cutoff <= 1.0:
            raise ValueError(f"eigval_cutoff must be > 1, got {eigval_cutoff}")
        self.converge_cutoff = float(converge_cutoff)
        if not (math.isfinite(self.converge_cutoff) and (self.converge_cutoff == 0.0 or self.converge_cutoff > 1.0)):
            raise ValueError(f"converge_cutoff must be 0 (off) or a number > 1, got {converge_cutoff}")
        if self.converge_cutoff and (estimator != "low_rank" or schedule != "nutpie"):
            raise ValueError(f"converge_cutoff ends the warm-up of estimator=low_rank on schedule=nutpie, got "
                             f"estimator={estimator}, schedule={schedule}")
        self.early_end = int(self.early_window * self.burn_in)
        self.final_start = self.burn_in - int(self.step_size_window * self.burn_in)
        if self.schedule == "nutpie":
            self._ends = np.zeros(0, dtype=np.int64)

    def _params(self) -> np.ndarray:
        return np.array([self.target_accept, self.gamma, self.t0, self.kappa, math.log(self.max_step),
                         self.step_jitter, self.step_size, self.early_end, self.final_start, self.early_switch,
                         self.window_growth, self.update_every, self.rank_gamma, self.eigval_cutoff,
                         ESTIMATORS.index(self.estimator), SCHEDULES.index(self.schedule), self._window_start,
                         self.early_update_every, self.early_update_gradients, self.converge_cutoff,
                         self.rank_ridge_power, self.sampling_jitter, self.update_wait],
                        dtype=float)

    def skip(self, target: Target) -> tuple[bool, str]:
        if self.estimator.startswith("reference") and load_reference(target) is None:
            return True, (f"{self.name} with estimator={self.estimator} needs the target's certified "
                          f"reference posterior; {target.name!r} has none (ckam-bench-reference makes one)")
        return super().skip(target)

    def _reference_metric(self, target: Target) -> np.ndarray:
        """The reference posterior's variance (d,) or covariance as a full-rank metric array
        (read once per target: ``warm_up`` reads it before the sampler clock)."""
        cached = getattr(self, "_metric_of", None)
        if cached is not None and cached[0] is target:
            return cached[1].copy()
        reference = load_reference(target)
        if reference is None:
            raise ValueError(f"estimator={self.estimator}: target {target.name!r} has no certified reference")
        self.reference_id = reference.reference_id
        if self.estimator == "reference_diag":
            metric = np.array(reference.variance, dtype=float)
        else:
            cov = np.atleast_2d(np.cov(np.asarray(reference.samples, dtype=float), rowvar=False))
            sigma = np.sqrt(np.diag(cov))
            values, vectors = np.linalg.eigh(cov / np.outer(sigma, sigma))
            metric = nuts_metric.build(sigma, np.maximum(values, 1e-12), np.ascontiguousarray(vectors))
        self._metric_of = (target, metric)
        return metric.copy()

    def _empty(self, d: int):
        """(metric, estimator state) before any draw (identity metric)."""
        if self.estimator in ("low_rank", "reference_dense"):
            return nuts_metric.pack(np.ones(d)), fisher.low_rank_init(d, self.burn_in + 2)
        return np.ones(d), fisher.diag_init(d)

    def warm_up(self, target: Target) -> None:
        if self.estimator.startswith("reference"):  # before the clock: reading it checks its probes
            self._reference_metric(target)
        density = jit.compiled_log_density_and_grad(target)
        x, d = np.array(target.start, dtype=float), target.dim
        metric, est = self._empty(d)
        if density is not None:
            _KERNELS[metric.ndim](density, x, 0.0, np.zeros(d), 0.1, metric, dual_averaging.init(0.1), est,
                                  np.zeros(SCHEDULE_STATE), 1, 0, np.zeros(0, dtype=np.int64), 1, np.random.default_rng(0), _NDTRI,
                                  1, self._params())
        elif jit.enabled():  # the compiled steps of the tree, for this metric
            super().warm_up(target)
            if metric.ndim == 2:
                rng, work, ts = np.random.default_rng(0), _nuts_work(self.max_depth, d), np.zeros(TS_SIZE)
                _NUTS_START(x, 0.0, np.zeros(d), np.zeros(d), metric, 0.1, _tree_rng(rng), work, ts)
                _NUTS_JOIN(0.0, x, np.zeros(d), metric, _tree_rng(rng), self.max_depth, work, ts)
                nuts_metric.evaluate(lambda y, gy: 0.0, metric, x, np.zeros(d))

    def init(self, target: Target, x0, rng: np.random.Generator) -> AdaptedNUTSState:
        self._bind(target, rng)
        x, logp, grad = start_with_gradient(target, x0)
        metric, est = self._empty(target.dim)
        if self.estimator.startswith("reference"):
            metric = self._reference_metric(target)
        elif self.burn_in > 0:  # no warm-up: the identity metric (a kernel that does not depend on x₀)
            if self.estimator != "variance":
                minv = np.ones(target.dim)
                fisher.gradient_init_into(grad, minv)
                metric = nuts_metric.pack(np.sqrt(minv)) if metric.ndim == 2 else minv
            if self.schedule == "nutpie":
                _est_update(est, x, grad)
        return AdaptedNUTSState(x=x, logp=logp, t=0, grad=grad, step=self.step_size,
                                adapt=dual_averaging.init(self.step_size), inv_metric=metric, estimator=est,
                                schedule=np.array([float(self.window), 0.0, 1.0, 0.0, float(self.final_start),
                                                   float(self.burn_in)]))

    def advance(self, state: AdaptedNUTSState, n: int):
        da, est, sched = (np.array(a, dtype=float) for a in (state.adapt, state.estimator, state.schedule))
        # a state saved before the 4th slot (0 gradients) or the 5th and 6th (the fixed schedule)
        sched = np.concatenate([sched, [0.0, self.final_start, self.burn_in][sched.size - 3:]])
        metric = np.array(state.inv_metric, dtype=float)
        args = (np.ascontiguousarray(state.x, dtype=float), float(state.logp),
                np.ascontiguousarray(state.grad, dtype=float), float(state.step), metric, da, est, sched,
                int(state.t), self.burn_in, self._ends, self.max_depth, self.rng)
        if self._compiled is not None:
            out = _KERNELS[metric.ndim](self._compiled, *args, _NDTRI, int(n), self._params())
        else:
            transition = _nuts_transition if not self._compiled_steps else functools.partial(
                _steps, tree_rng=_tree_rng(self.rng), ts=np.zeros(TS_SIZE))
            out = _adapted_loop(self._density_and_grad(), transition, *args, ndtri, int(n), self._params())
        (x, logp, g, step, metric, samples, k, accepted, accept_prob, steps, logps, n_evals, diverged, depths) = out
        if metric.ndim == 2:  # the work rows: no part of the state
            metric[nuts_metric.X:nuts_metric.U] = 0.0
        self._count(n_evals)
        # the warm-up's end only moves to after the iteration that moves it: one end for the block
        end = int(sched[S_END]) if self.schedule == "nutpie" else self.burn_in
        block = _block((np.arange(state.t, state.t + n) >= end).astype(np.int8), samples[:k], accepted, accept_prob,
                       steps, logps, 0, divergent=diverged)
        new = AdaptedNUTSState(x=x, logp=float(logp), t=state.t + n, grad=g, step=float(step), adapt=da,
                               inv_metric=metric, estimator=est, schedule=sched,
                               mean_depth=float(np.mean(depths)) if n else 0.0)
        return new, block

    def trace_columns(self, state: AdaptedNUTSState) -> dict:
        columns = super().trace_columns(state)
        if np.ndim(state.inv_metric) == 2:
            columns["metric_rank"] = float(np.shape(state.inv_metric)[0] - nuts_metric.U)
        if self.converge_cutoff:
            columns["warmup_end"] = float(state.schedule[S_END])
        return columns

    def describe(self) -> dict:
        info = {**super().describe(), "estimator": self.estimator, "schedule": self.schedule,
                "step_jitter": self.step_jitter, "sampling_jitter": self.sampling_jitter,
                "kernel": "fixed after warm-up (metric and averaged step size frozen)" if self.burn_in else "fixed"}
        if self.schedule == "nutpie":
            info.update(early_end=self.early_end, final_window_start=self.final_start, early_switch=self.early_switch,
                        window=self.window, window_growth=self.window_growth, max_step=self.max_step,
                        update_every=self.update_every, early_update_every=self.early_update_every,
                        early_update_gradients=self.early_update_gradients, update_wait=self.update_wait,
                        switches=nutpie_switches(self.burn_in, self.early_window, self.step_size_window,
                                                 self.early_switch, self.window, self.window_growth))
            info.pop("window_ends", None)
        if self.schedule == "step_size":
            info.pop("window_ends", None)
        if self.estimator.startswith("reference"):
            info.update(metric=f"fixed: the certified reference's {'covariance' if 'dense' in self.estimator else 'variance'}",
                        reference_id=self.reference_id)
        if self.estimator == "low_rank":
            info.update(rank_gamma=self.rank_gamma, eigval_cutoff=self.eigval_cutoff,
                        rank_ridge_power=self.rank_ridge_power)
        if self.converge_cutoff:
            info.update(converge_cutoff=self.converge_cutoff,
                        kernel="fixed after warm-up (metric and averaged step size frozen); the warm-up ends "
                               "early once the metric has converged")
        return info
