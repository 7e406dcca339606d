r"""The no-U-turn sampler (Hoffman & Gelman 2014), one of the gradient baselines of Titsias &
Dellaportas (2019) beside MALA and HMC-k (:mod:`ckam_bench.samplers.hamiltonian`, whose counted
density, step-size heuristic, dual averaging and vector helpers it shares).

**NUTS** — the no-U-turn sampler (Hoffman & Gelman 2014) in its multinomial form
(Betancourt 2017, as in Stan): the trajectory doubles in a random direction until the
generalised U-turn criterion p♯₋·ρ ≤ 0 or p♯₊·ρ ≤ 0 (ρ the sum of momenta, p♯ = M⁻¹p at the two
ends) holds for the whole trajectory or for any of its binary subtrees, a divergence
(H − H₀ > 1000) occurs or the depth reaches ``max_depth``. The next state is drawn from the
trajectory with weights ∝ exp(−H): uniformly-progressive within a new subtree, biased-progressive
(prefer the new subtree) when it is merged, as in Stan. A diagonal metric M⁻¹ = diag(v) and ε
are adapted in Stan's warm-up: dual averaging toward ``target_accept`` = 0.8 throughout, and the
variance of the states in the slow windows (75 / 25, 50, 100, … / 50 iterations; Welford,
regularised as in Stan, :mod:`ckam_bench.adaptation.welford`) becomes v at each window's end,
followed by the ε heuristic and a dual-averaging restart. Subtrees are built leaf by leaf: a
binary counter stores the momentum and the partial ρ at the first leaf of each open subtree, so
the U-turn checks of every subtree ending at a leaf cost O(depth · d) and no recursion is
needed. Every merge of two halves (inside a subtree and of the trajectory with its new subtree)
also makes Stan's (≥ 2.26; nuts-rs's) two checks across the halves. That bookkeeping works on
rows of one work array (:mod:`~ckam_bench.samplers.nuts_tree`).
Own implementation, compiled with numba: the libraries that offer NUTS either bring a heavy
runtime (JAX/BlackJAX, PyMC/PyTensor, Stan) or cannot take a numba density-and-gradient inside
the block loop, the sampler clock and the gradient count.

Draws: from the sampler's generator inside its loop (numba shares the generator's state), only
the uniforms it uses, in their order of use: d normals by Φ⁻¹, then each doubling's direction,
its leaves' draws and its merge draw (none where the probability is 1), so the generator's
state carries the chain across blocks.

A target without a compiled density runs the Python loop with :func:`_nuts_steps`: its Python
density-and-gradient and, between evaluations, one compiled call (:func:`_nuts_join`) for the
rest of the tree, the same operations and draws (through the generator's ``next_double``): the
same chain to the bit, at ~1.5× the evaluations' cost instead of ~4.7×.
"""

from __future__ import annotations

import ctypes
import functools
import inspect
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from ckam_bench import jit
from ckam_bench.adaptation import dual_averaging, welford
from ckam_bench.samplers import nuts_metric
from ckam_bench.samplers.nuts_tree import (
    _GC, _GE, _GL, _GR, _PE, _PL, _PR, _RHO, _RHO_SUB, _XC, _XE, _XL, _XR, _ZERO, _add_row, _copy_end, _fill, _levels,
    _merge_turns, _nuts_work, _open_subtrees, _subtrees_turn, _turns,
)
from ckam_bench.samplers.hamiltonian import (
    _I64, GradientSampler, GradientState, _all_finite, _block, _compiled_as, _copy, _DualAveraging, _kick_drift,
    _kinetic, _leapfrog, _reasonable_step, check_burn_in, start_with_gradient,
)
from ckam_bench.samplers.random_walk import positive_step_size
from ckam_bench.targets.base import Target

MAX_TREE_DEPTH = 14


# The tree's metric operations: a diagonal M⁻¹ (1-D ``minv``: the operations of x), or a
# low-rank metric (2-D, :mod:`~ckam_bench.samplers.nuts_metric`: the tree runs in y = T⁻¹x with
# M⁻¹ = I, and each leapfrog step evaluates at x = Ty). Compiled: chosen when the kernel is typed.
def _leapfrog_m(f, x, p, g, eps, minv):
    if minv.ndim == 1:
        return _leapfrog(f, x, p, g, eps, minv)
    return nuts_metric.leapfrog(f, x, p, g, eps, minv)


def _kinetic_m(p, minv, numpy_order=False):
    return _kinetic(p, minv if minv.ndim == 1 else minv[nuts_metric.ONES], numpy_order)


@jit.jitable
def _step_search(f, x, logp, g, p, metric, step, target, low, high, xw, pw, gw):
    """Double (or halve) ε from ``step`` until the acceptance min(1, e^(H₀ − H)) of one leapfrog
    step from (x, p) crosses ``target`` (a non-finite step: acceptance 0), or ε leaves
    [low, high]. Returns (ε, evaluations). With target 0.8 and [10⁻¹², 10⁷] it is Stan's
    heuristic of :func:`~ckam_bench.samplers.hamiltonian._reasonable_step`; with
    ``target_accept`` and [10⁻¹⁰, 10⁵] nuts-rs's search."""
    h0 = -logp + _kinetic_m(p, metric)
    n_evals = 0
    direction = 0
    for _ in range(100):
        _copy(xw, x)
        _copy(pw, p)
        _copy(gw, g)
        lp = _leapfrog_m(f, xw, pw, gw, step, metric)
        n_evals += 1
        delta = h0 - (-lp + _kinetic_m(pw, metric))
        accept = 0.0 if delta != delta else (1.0 if delta >= 0.0 else math.exp(delta))
        if direction == 0:
            direction = 1 if accept > target else -1
        if direction == 1 and not accept > target:
            break
        if direction == -1 and not accept < target:
            break
        step = step * 2.0 if direction == 1 else step * 0.5
        if step > high or step < low:
            break
    return step, n_evals


@jit.jitable(inline=True)
def _kinetic_unit_loop(p):
    total = 0.0  # as _kinetic's loop with M⁻¹ = I (1·p = p exactly)
    for j in range(p.shape[0]):
        total += p[j] * p[j]
    return 0.5 * total


def _kick_drift_m(x, p, g, eps, minv):
    _kick_drift(x, p, g, eps, minv if minv.ndim == 1 else minv[nuts_metric.ONES])


if jit.AVAILABLE:
    from numba.extending import overload as _overload

    def _by_metric(fn, diag, low_rank, arg="minv", inline=True):
        """Compile ``fn`` as ``diag`` when its argument ``arg`` is 1-D, as ``low_rank`` when 2-D
        (inlined into its callers, as :func:`ckam_bench.jit.jitable`'s ``inline``)."""

        position = list(inspect.signature(fn).parameters).index(arg)

        @functools.wraps(fn)
        def typer(*args):
            return diag if args[position].ndim == 1 else low_rank

        _overload(fn, inline="always" if inline else "never")(typer)

    _ONES = nuts_metric.ONES
    _by_metric(_leapfrog_m, lambda f, x, p, g, eps, minv: _leapfrog(f, x, p, g, eps, minv),
               lambda f, x, p, g, eps, minv: nuts_metric.leapfrog(f, x, p, g, eps, minv), inline=False)
    _by_metric(_kinetic_m, lambda p, minv, numpy_order=False: _kinetic(p, minv, numpy_order),
               lambda p, minv, numpy_order=False: _kinetic(p, minv[_ONES], numpy_order) if numpy_order
               else _kinetic_unit_loop(p))
    _by_metric(_kick_drift_m, lambda x, p, g, eps, minv: _kick_drift(x, p, g, eps, minv),
               lambda x, p, g, eps, minv: _kick_drift(x, p, g, eps, minv[_ONES]))


@jit.jitable(inline=True)
def _symmetric_accept(lw):
    """nuts-rs's symmetric acceptance statistic of a leaf with log weight Δ = H₀ − H:
    2 min(1, e^Δ)/(1 + e^Δ) = 2e^(−|Δ|)/(1 + e^(−|Δ|)) (1 at Δ = 0, → 0 as |Δ| grows: a leaf
    far *below* the start's energy counts as badly as one far above)."""
    e = math.exp(-abs(lw))
    return 2.0 * e / (1.0 + e)


@jit.jitable(inline=True)
def _logaddexp(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    if a >= b:  # log(e^a + e^b) with e^(a - a) = 1 exactly: one exp fewer
        return a + math.log(1.0 + math.exp(b - a))
    return b + math.log(math.exp(a - b) + 1.0)


def _uniform(rng):
    """A uniform on [0, 1) from ``rng``: a Generator, or in compiled steps called from Python
    (where passing a Generator costs ~6 µs a call) its :func:`_tree_rng`: the same stream."""
    return rng.random()


def _tree_rng(rng) -> np.ndarray:
    """[address of next_double, address of the state] of a Generator's bit generator (the
    function its ``random()`` calls)."""
    interface = rng.bit_generator.ctypes
    return np.array([ctypes.cast(interface.next_double, ctypes.c_void_p).value, interface.state_address],
                    dtype=np.int64)


if jit.AVAILABLE:
    from llvmlite import ir
    from numba.core import cgutils
    from numba.extending import intrinsic, overload

    @intrinsic
    def _next_double(typingctx, function, state):
        """next_double(state) through the function's address, inside compiled code."""

        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(ir.DoubleType(), [cgutils.voidptr_t])
            function_ptr = builder.inttoptr(args[0], fnty.as_pointer())
            return builder.call(function_ptr, [builder.inttoptr(args[1], cgutils.voidptr_t)])

        return jit.types.float64(jit.types.int64, jit.types.int64), codegen

    @overload(_uniform)
    def _uniform_compiled(rng):
        if isinstance(rng, jit.types.Array):
            return lambda rng: _next_double(rng[0], rng[1])
        return lambda rng: rng.random()


@jit.jitable(inline=True)
def _coin(rng, log_p):
    """A Bernoulli(min(1, e^log_p)) draw; a uniform is drawn from ``rng`` only when the
    probability is below 1."""
    return log_p >= 0.0 or _uniform(rng) < math.exp(log_p)


@jit.jitable
def _nuts_transition(f, x, logp, g, p, minv, step, rng, max_depth, work):
    """One multinomial NUTS transition from (x, logp, g) with momentum p, drawing from ``rng``
    the uniforms it uses when it uses them: each doubling's direction, then its leaves' draws,
    then the merge draw (:func:`_coin`: none for a certain event). Updates x, g in place;
    returns (logp, mean acceptance statistic, leapfrog steps, divergent, depth, mean symmetric
    acceptance statistic (:func:`_symmetric_accept`), the new state's index in the trajectory:
    leaves from the start, negative backward, 0 when the chain stays)."""
    xl, pl, gl = work[_XL], work[_PL], work[_GL]  # the trajectory's left end
    xr, pr, gr = work[_XR], work[_PR], work[_GR]  # its right end
    xe, pe, ge = work[_XE], work[_PE], work[_GE]  # the end being extended
    xc, gc = work[_XC], work[_GC]  # the new subtree's candidate state
    rho, rho_sub, zero = work[_RHO], work[_RHO_SUB], work[_ZERO]  # momentum sums: trajectory, new subtree
    ck_p = _levels(work)[0]
    _fill(zero, 0.0)
    _copy(xl, x)
    _copy(pl, p)
    _copy(gl, g)
    _copy(xr, x)
    _copy(pr, p)
    _copy(gr, g)
    _copy(rho, p)
    h0 = -logp + _kinetic_m(p, minv)
    log_w = 0.0
    logp_s = logp
    sum_accept = sum_sym = 0.0
    n_leapfrog = 0
    divergent = False
    depth = 0
    n_fwd = n_bwd = 0  # leaves already in the trajectory after / before the start
    index_c = index_s = 0  # trajectory index (leaves from the start, negative backward) of the candidate, the state
    while depth < max_depth:
        forward = rng.random() < 0.5
        _copy_end(work, _XE, _XR if forward else _XL)
        eps = step if forward else -step
        log_w_sub = -math.inf
        logp_c = -math.inf
        _fill(rho_sub, 0.0)
        valid = True
        n_leaves = 1 << depth
        for leaf in range(n_leaves):
            lp = _leapfrog_m(f, xe, pe, ge, eps, minv)
            n_leapfrog += 1
            h = -lp + _kinetic_m(pe, minv)
            if not (math.isfinite(lp) and _all_finite(ge) and h == h) or h - h0 > 1000.0:
                divergent = True
                valid = False
                break
            lw = h0 - h
            sum_accept += 1.0 if lw >= 0.0 else math.exp(lw)
            sum_sym += _symmetric_accept(lw)
            _open_subtrees(work, leaf, depth)
            _add_row(work, _RHO_SUB, _PE)
            log_w_sub = _logaddexp(log_w_sub, lw)
            if _coin(rng, lw - log_w_sub):
                _copy(xc, xe)
                _copy(gc, ge)
                logp_c = lp
                index_c = n_fwd + leaf + 1 if forward else -(n_bwd + leaf + 1)
            if _subtrees_turn(work, leaf, depth, minv):
                valid = False
                break
        if not valid:
            break
        # the checks across the merge of the trajectory and the new subtree (its two halves)
        turned = depth > 0 and _merge_turns(work, _PL if forward else _PR, _PR if forward else _PL, ck_p + depth,
                                            _PE, minv)
        _copy_end(work, _XR if forward else _XL, _XE)
        if forward:
            n_fwd += n_leaves
        else:
            n_bwd += n_leaves
        if _coin(rng, log_w_sub - log_w):
            _copy(x, xc)
            _copy(g, gc)
            logp_s = logp_c
            index_s = index_c
        log_w = _logaddexp(log_w, log_w_sub)
        _add_row(work, _RHO, _RHO_SUB)
        depth += 1
        if turned or _turns(work, _PL, _PR, _RHO, _ZERO, _ZERO, minv):
            break
    stat = sum_accept / n_leapfrog if n_leapfrog > 0 else 0.0
    sym = sum_sym / n_leapfrog if n_leapfrog > 0 else 0.0
    return logp_s, stat, n_leapfrog, divergent, depth, sym, index_s


# the tree's scalars, in ``ts``
(_H0, _LOG_W, _LOGP_S, _SUM_ACCEPT, _N_LF, _DIVERGENT, _DEPTH, _FORWARD, _LOG_W_SUB, _LOGP_C, _LEAF, _STEP,
 _SUM_SYM, _N_FWD, _N_BWD, _INDEX_C, _INDEX_S) = range(17)
TS_SIZE = 17


@jit.jitable
def _doubling(minv, rng, work, ts):
    """Start a doubling: its direction (a draw), the end it extends, the new subtree's empty
    sums, and the first leaf's half kick and drift."""
    forward = _uniform(rng) < 0.5
    ts[_FORWARD] = 1.0 if forward else 0.0
    _copy_end(work, _XE, _XR if forward else _XL)  # the end to extend
    ts[_LOG_W_SUB] = -math.inf
    ts[_LOGP_C] = -math.inf
    _fill(work[_RHO_SUB], 0.0)
    ts[_LEAF] = 0.0
    _kick_drift_m(work[_XE], work[_PE], work[_GE], ts[_STEP] if forward else -ts[_STEP], minv)


def _nuts_start(x, logp, g, p, minv, step, rng, work, ts):
    """Start a multinomial NUTS transition from (x, logp, g) with momentum p (see
    :func:`_nuts_transition`), up to its first evaluation."""
    for r in (_XL, _XR):  # both ends at (x, p, g)
        _copy(work[r], x)
        _copy(work[r + 1], p)
        _copy(work[r + 2], g)
    _copy(work[_RHO], p)
    _fill(work[_ZERO], 0.0)
    ts[:] = 0.0
    ts[_H0] = -logp + _kinetic_m(p, minv, True)
    ts[_LOGP_S] = logp
    ts[_STEP] = step
    _doubling(minv, rng, work, ts)


def _nuts_join(lp, x, g, minv, rng, max_depth, work, ts):
    """After the evaluation ending a leaf's leapfrog step (log π = lp, its gradient in the end
    being extended): the leaf's last half kick, its weight, the subtree checks, the merge at a
    doubling's end and the next doubling, up to the next evaluation (returns True) or the end of
    the transition (False)."""
    xe, pe, ge, xc, gc = work[_XE], work[_PE], work[_GE], work[_XC], work[_GC]
    ck_p = _levels(work)[0]
    forward = ts[_FORWARD] == 1.0
    eps = ts[_STEP] if forward else -ts[_STEP]
    depth, leaf = int(ts[_DEPTH]), int(ts[_LEAF])
    for j in range(pe.shape[0]):  # the leaf's last half kick (as _leapfrog)
        pe[j] += (0.5 * eps) * ge[j]
    ts[_N_LF] += 1.0
    h = -lp + _kinetic_m(pe, minv, True)
    if not (math.isfinite(lp) and _all_finite(ge) and h == h) or h - ts[_H0] > 1000.0:
        ts[_DIVERGENT] = 1.0
        return False
    lw = ts[_H0] - h
    ts[_SUM_ACCEPT] += 1.0 if lw >= 0.0 else math.exp(lw)
    ts[_SUM_SYM] += _symmetric_accept(lw)
    _open_subtrees(work, leaf, depth)
    _add_row(work, _RHO_SUB, _PE)
    ts[_LOG_W_SUB] = _logaddexp(ts[_LOG_W_SUB], lw)
    if _coin(rng, lw - ts[_LOG_W_SUB]):
        _copy(xc, xe)
        _copy(gc, ge)
        ts[_LOGP_C] = lp
        ts[_INDEX_C] = ts[_N_FWD] + leaf + 1 if forward else -(ts[_N_BWD] + leaf + 1)
    if _subtrees_turn(work, leaf, depth, minv):
        return False
    ts[_LEAF] = leaf + 1
    if leaf + 1 < (1 << depth):
        _kick_drift_m(xe, pe, ge, eps, minv)
        return True
    turned = depth > 0 and _merge_turns(work, _PL if forward else _PR, _PR if forward else _PL, ck_p + depth, _PE,
                                        minv)
    _copy_end(work, _XR if forward else _XL, _XE)
    if forward:
        ts[_N_FWD] += 1 << depth
    else:
        ts[_N_BWD] += 1 << depth
    if _coin(rng, ts[_LOG_W_SUB] - ts[_LOG_W]):
        _copy(x, xc)
        _copy(g, gc)
        ts[_LOGP_S] = ts[_LOGP_C]
        ts[_INDEX_S] = ts[_INDEX_C]
    ts[_LOG_W] = _logaddexp(ts[_LOG_W], ts[_LOG_W_SUB])
    _add_row(work, _RHO, _RHO_SUB)
    ts[_DEPTH] = depth + 1
    if turned or _turns(work, _PL, _PR, _RHO, _ZERO, _ZERO, minv) or depth + 1 >= max_depth:
        return False
    _doubling(minv, rng, work, ts)
    return True


def _nuts_steps(f, x, logp, g, p, minv, step, rng, max_depth, work, *, tree_rng, ts):
    """:func:`_nuts_transition` for a target without a compiled density: its Python
    density-and-gradient and, between evaluations, one call of the compiled :func:`_nuts_join`
    (the same operations and draws, from ``rng`` through ``tree_rng``: the same chain, to the bit)."""
    _NUTS_START(x, logp, g, p, minv, step, tree_rng, work, ts)
    xe, ge = work[_XE], work[_GE]
    while _NUTS_JOIN(f(xe, ge), x, g, minv, tree_rng, max_depth, work, ts):
        pass
    n_leapfrog = int(ts[_N_LF])
    stat = ts[_SUM_ACCEPT] / n_leapfrog if n_leapfrog > 0 else 0.0
    sym = ts[_SUM_SYM] / n_leapfrog if n_leapfrog > 0 else 0.0
    return ts[_LOGP_S], stat, n_leapfrog, ts[_DIVERGENT] == 1.0, int(ts[_DEPTH]), sym, int(ts[_INDEX_S])


def _normals_loop(u, quantile):
    z = np.empty(u.shape[0])
    for j in range(u.shape[0]):
        z[j] = quantile(max(u[j], 1e-300))
    return z


@_compiled_as(_normals_loop)
def _normals(u, quantile):
    """Standard normals Φ⁻¹(u) from uniforms (clipped away from 0)."""
    return quantile(np.clip(u, 1e-300, None))


@jit.jitable
def _nuts_loop(f, transition, x, logp, g, step, minv, da, wf, t0, burn_in, window_ends, window_start,
               max_depth, rng, quantile, n, target_accept, gamma, da_t0, kappa):
    """n NUTS iterations from global iteration ``t0``; warm-up (t < burn_in) adapts ε (dual
    averaging ``da``) and, at the ``window_ends``, the diagonal inverse metric ``minv`` from the
    Welford state ``wf`` (all updated in place). Each iteration draws from the generator ``rng``
    d uniforms for the momentum's normals (``quantile`` = Φ⁻¹), then the tree's draws as it uses
    them (``transition``: :func:`_nuts_transition`, or :func:`_nuts_steps`). Returns (x, logp, g,
    step, samples, n_collected, accepted, accept_prob, steps, logps, n_evals, divergent, depths)
    (``divergent``: whether iteration i's trajectory diverged)."""
    d = x.shape[0]
    samples = np.empty((n, d))
    accepted = np.zeros(n, dtype=np.bool_)
    accept_prob, steps, logps = np.empty(n), np.empty(n), np.empty(n)
    depths = np.zeros(n, dtype=np.int64)
    x, g = x.copy(), g.copy()
    work = _nuts_work(max_depth, d)
    x_old = np.empty(d)
    n_collected = n_evals = 0
    diverged = np.zeros(n, dtype=np.bool_)
    last_window = window_ends[window_ends.shape[0] - 1] if window_ends.shape[0] > 0 else -1
    for i in range(n):
        t = t0 + i
        z = _normals(rng.random(d), quantile)
        p = z / np.sqrt(minv)
        if t == 0 and burn_in > 0:
            step, evals = _reasonable_step(f, x, logp, g, p, minv, step, work[0], work[1], work[2])
            n_evals += evals
            dual_averaging.restart(da, step)
        _copy(x_old, x)
        logp, stat, n_lf, divergent, depth, _, _ = transition(f, x, logp, g, p, minv, step, rng, max_depth, work)
        n_evals += n_lf
        diverged[i] = divergent
        moved = False
        for j in range(d):
            if x[j] != x_old[j]:
                moved = True
                break
        accepted[i] = moved
        accept_prob[i] = stat
        steps[i] = step
        depths[i] = depth
        if t < burn_in:
            step = dual_averaging.update(da, stat, target_accept, gamma, da_t0, kappa)
            if window_start <= t <= last_window:
                welford.update(wf, x)
            for e in range(window_ends.shape[0]):
                if window_ends[e] == t:
                    welford.regularised_variance_into(wf, minv)
                    welford.reset(wf)
                    p = z / np.sqrt(minv)
                    step, evals = _reasonable_step(f, x, logp, g, p, minv, step, work[0], work[1], work[2])
                    n_evals += evals
                    dual_averaging.restart(da, step)
            if t == burn_in - 1:
                step = dual_averaging.final(da)
        logps[i] = logp
        if t >= burn_in:
            samples[n_collected] = x
            n_collected += 1
    return (x, logp, g, step, samples, n_collected, accepted, accept_prob, steps, logps, n_evals,
            diverged, depths)


if jit.AVAILABLE:
    from numba.extending import get_cython_function_address, typeof_impl

    _GENERATOR = jit.types.NumPyRandomGeneratorType("NumPyRandomGeneratorType")
    _QUANTILE = jit.types.FunctionType(jit.F8(jit.F8))

    class _NormalQuantile(jit.types.WrapperAddressProtocol):
        """scipy's Φ⁻¹ (``ndtri``) as a first-class function of compiled kernels, through scipy's
        Cython C API: the function the Python loop calls, so both draw the same momenta."""

        def __wrapper_address__(self) -> int:
            return get_cython_function_address("scipy.special.cython_special", "ndtri")

        def signature(self):
            return _QUANTILE.signature

    typeof_impl.register(_NormalQuantile)(lambda value, context: _QUANTILE)
    _NDTRI = _NormalQuantile()

    def _nuts_compiled(f, x, logp, g, step, minv, da, wf, t0, burn_in, window_ends, window_start, max_depth, rng,
                       quantile, n, target_accept, gamma, da_t0, kappa):
        return _nuts_loop(f, _nuts_transition, x, logp, g, step, minv, da, wf, t0, burn_in, window_ends,
                          window_start, max_depth, rng, quantile, n, target_accept, gamma, da_t0, kappa)

    _nuts_kernel = jit.gradient_kernel(jit.A1, jit.F8, jit.A1, jit.F8, jit.A1, jit.A1, jit.A1, _I64, _I64,
                                       jit.types.int64[::1], _I64, _I64, _GENERATOR, _QUANTILE, _I64,
                                       jit.F8, jit.F8, jit.F8, jit.F8)(_nuts_compiled)
    _NUTS_START, _NUTS_JOIN = jit.helper(_nuts_start), jit.helper(_nuts_join)
else:
    _NDTRI = _nuts_kernel = _NUTS_START = _NUTS_JOIN = None


@dataclass(kw_only=True)
class NUTSState(GradientState):
    """NUTS state: GradientState plus the metric and the warm-up accumulators."""

    inv_metric: np.ndarray
    """Diagonal inverse metric M⁻¹ (variances), shape (d,)."""
    welford: np.ndarray
    """Welford state of the current slow window, shape (2d + 1,)."""
    mean_depth: float = 0.0
    """Mean tree depth of the last block."""


class NUTS(GradientSampler, _DualAveraging):
    """Multinomial NUTS with a diagonal metric and Stan's windowed warm-up.

    step_size : initial ε > 0 (refined by the heuristic at the first warm-up iteration).
    burn_in : warm-up iterations (the paper: 500); none are collected.
    max_depth : tree depth limit (2^max_depth − 1 leapfrog steps at most; Stan: 10).
    target_accept, gamma, t0, kappa : dual averaging (Stan: 0.8, 0.05, 10, 0.75).
    init_buffer, term_buffer, base_window : Stan's warm-up windows (75, 50, 25).
    """

    name = "nuts"

    def __init__(self, step_size: float = 0.1, burn_in: int = 500, max_depth: int = 10,
                 target_accept: float = 0.8, gamma: float = 0.05, t0: float = 10.0, kappa: float = 0.75,
                 init_buffer: int = 75, term_buffer: int = 50, base_window: int = 25):
        self.step_size = positive_step_size(step_size)
        self.burn_in = check_burn_in(burn_in)
        if isinstance(max_depth, bool) or int(max_depth) != max_depth or not 1 <= max_depth <= MAX_TREE_DEPTH:
            raise ValueError(f"max_depth must be an integer in [1, {MAX_TREE_DEPTH}] (up to 2^max_depth − 1 "
                             f"leapfrog steps per iteration), got {max_depth}")
        self.max_depth = int(max_depth)
        self._dual_averaging(target_accept, gamma, t0, kappa)
        for key, value in (("init_buffer", init_buffer), ("term_buffer", term_buffer), ("base_window", base_window)):
            if isinstance(value, bool) or int(value) != value or value < (1 if key == "base_window" else 0):
                raise ValueError(f"{key} must be an integer >= {1 if key == 'base_window' else 0}, got {value}")
        self.init_buffer, self.term_buffer, self.base_window = int(init_buffer), int(term_buffer), int(base_window)
        self._ends = welford.window_ends(self.burn_in, self.init_buffer, self.term_buffer, self.base_window)
        self._window_start = welford.slow_window_start(self.burn_in, self.init_buffer, self.term_buffer,
                                                       self.base_window)

    def warm_up(self, target: Target) -> None:
        density = jit.compiled_log_density_and_grad(target)
        if density is not None:
            x, d = np.array(target.start, dtype=float), target.dim
            _nuts_kernel(density, x, 0.0, np.zeros(d), 0.1, np.ones(d), dual_averaging.init(0.1),
                         welford.init(d), 1, 0, np.zeros(0, dtype=np.int64), 0, 1, np.random.default_rng(0),
                         _NDTRI, 1, 0.8, 0.05, 10.0, 0.75)
        elif jit.enabled():  # the Python loop's compiled steps
            x, d, rng = np.array(target.start, dtype=float), target.dim, np.random.default_rng(0)
            work, ts = _nuts_work(self.max_depth, d), np.zeros(TS_SIZE)
            _NUTS_START(x, 0.0, np.zeros(d), np.zeros(d), np.ones(d), 0.1, _tree_rng(rng), work, ts)
            _NUTS_JOIN(0.0, x, np.zeros(d), np.ones(d), _tree_rng(rng), self.max_depth, work, ts)

    def init(self, target: Target, x0, rng: np.random.Generator) -> NUTSState:
        self._bind(target, rng)
        x, logp, grad = start_with_gradient(target, x0)
        return NUTSState(x=x, logp=logp, t=0, grad=grad, step=self.step_size,
                         adapt=dual_averaging.init(self.step_size), inv_metric=np.ones(target.dim),
                         welford=welford.init(target.dim))

    def advance(self, state: NUTSState, n: int):
        da, wf = np.array(state.adapt, dtype=float), np.array(state.welford, dtype=float)
        minv = np.array(state.inv_metric, dtype=float)
        args = (np.ascontiguousarray(state.x, dtype=float), float(state.logp),
                np.ascontiguousarray(state.grad, dtype=float), float(state.step), minv, da, wf, int(state.t),
                self.burn_in, self._ends, self._window_start, self.max_depth, self.rng)
        params = (int(n), self.target_accept, self.gamma, self.t0, self.kappa)
        if self._compiled is not None:
            out = _nuts_kernel(self._compiled, *args, _NDTRI, *params)
        else:
            transition = _nuts_transition if not self._compiled_steps else functools.partial(
                _nuts_steps, tree_rng=_tree_rng(self.rng), ts=np.zeros(TS_SIZE))
            out = _nuts_loop(self._density_and_grad(), transition, *args, ndtri, *params)
        (x, logp, g, step, samples, k, accepted, accept_prob, steps, logps, n_evals, diverged, depths) = out
        self._count(n_evals)
        block = _block(self._phase(state.t, n), samples[:k], accepted, accept_prob, steps, logps, 0,
                       divergent=diverged)
        new = NUTSState(x=x, logp=float(logp), t=state.t + n, grad=g, step=float(step), adapt=da,
                        inv_metric=minv, welford=wf, mean_depth=float(np.mean(depths)) if n else 0.0)
        return new, block

    def trace_columns(self, state: NUTSState) -> dict:
        return {"step": float(state.step), "tree_depth": float(state.mean_depth)}

    def describe(self) -> dict:
        return {**super().describe(), "max_depth": self.max_depth, "target_accept": self.target_accept,
                "window_ends": self._ends.tolist()}
