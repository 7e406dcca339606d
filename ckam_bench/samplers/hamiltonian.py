r"""Gradient-based baselines of Titsias & Dellaportas (2019): MALA, HMC with k leapfrog steps
(and the helpers NUTS shares, :mod:`ckam_bench.samplers.nuts`).

They use ∇log π, adapt their step size during a finite burn-in (``burn_in`` iterations,
phase ``"burn_in"``, states not collected) and then run a fixed, π-invariant kernel (phase
``"sampling"``, every state collected): finite adaptation, so the default configs target π.

**MALA** — y = x + ½σ²∇log π(x) + σε, ε ~ N(0, I), accepted with

.. math::
    \log r = \log\pi(y) - \log\pi(x) - \tfrac12\|\varepsilon + \tfrac{\sigma}{2}(\nabla\log\pi(x)
    + \nabla\log\pi(y))\|^2 + \tfrac12\|\varepsilon\|^2

(the Hastings ratio of the two Gaussian proposals, written with the forward noise ε). During
burn-in σ follows a Robbins–Monro recursion toward α* = 0.574 (Roberts & Rosenthal 1998):
log σ ← log σ + s(1 + t)^(−κ)(α_t − α*) (:mod:`ckam_bench.adaptation.robbins_monro`).

**HMC-k** — momentum p ~ N(0, I), k leapfrog steps of size ε
(p ← p + ½ε∇log π, x ← x + εp, p ← p + ½ε∇log π), accept with
log r = H(x, p) − H(x', p'), H = −log π(x) + ½‖p‖². During burn-in ε is set by Stan's
initial heuristic (double or halve ε until one leapfrog's acceptance crosses 0.8), then tuned by
dual averaging toward an average acceptance of 0.65 (:mod:`ckam_bench.adaptation.dual_averaging`);
sampling uses the averaged ε̄. The paper's k ∈ {5, 10, 20}: ``n_leapfrog``.

NUTS (same step-size machinery, its own tree): :mod:`ckam_bench.samplers.nuts`.

Gradient evaluations: every call of the density-and-gradient counts one density and one
gradient evaluation (``target.n_density``, ``target.n_grad``); HMC and NUTS cache the gradient
at the current state, so an HMC-k iteration costs k gradients.

Compiled loops: with numba and a target that has ``jit_log_density_and_grad()``
(:mod:`ckam_bench.jit`), each block runs as a compiled kernel, whose body is the Python loop
(``*_loop``): with ``CKAM_BENCH_JIT=0`` it runs in Python, calling the counted
``target.log_density_and_grad``, on the same random numbers. Vector helpers are numpy expressions
in Python and loops without temporaries in compiled code (``_compiled_as``: the same arithmetic
in the same order). A target without a compiled density (a user's numpy target) runs ``*_steps``:
its Python density-and-gradient and, between evaluations, one compiled call for everything else
(``_mala_iteration``, ``_hmc_join``), the same operations as the Python loop (the kinetic energy
summed as numpy sums): the same chain to the bit, at ~1.3–1.5× the evaluations' cost (was 2.2–2.6×).

A chain does not depend on how iterations are split into blocks: MALA and HMC pre-draw a fixed
number of random numbers per iteration, per block
(:func:`~ckam_bench.samplers.random_walk.predraw`); NUTS draws from the sampler's generator
inside its loop (numba shares the generator's state) only the uniforms it uses, in their order of
use: d normals by Φ⁻¹, then each doubling's direction, its leaves' draws and its merge draw (none
where the probability is 1), so the generator's state carries the chain across blocks.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ckam_bench import jit
from ckam_bench.adaptation import dual_averaging, robbins_monro
from ckam_bench.samplers.base import Block, ChainState, Sampler, StartPointError, check_start
from ckam_bench.samplers.random_walk import positive_step_size, predraw
from ckam_bench.targets.base import Target

PHASES = ("burn_in", "sampling")
MAX_BURN_IN = 10**9


# ---------------------------------------------------------------------------- shared helpers
def counted_density_and_grad(target: Target):
    """The Python loops' ``f(x, grad_out) -> log π(x)``: the target's counted API (when the
    target keeps the base class's counted methods, their counting and primitives are called
    directly, in the same order: three Python calls fewer per evaluation)."""
    if all(getattr(getattr(target, name), "__func__", None) is getattr(Target, name)
           for name in ("log_density_and_grad", "log_density", "grad_log_density")):
        log_density, grad_log_density = target._log_density, target._grad_log_density

        def density_and_grad(x, grad_out):
            target.n_density += 1
            logp = float(log_density(x))
            target.n_grad += 1
            grad_out[:] = grad_log_density(x)
            return logp

        return density_and_grad

    def density_and_grad(x, grad_out):
        logp, grad = target.log_density_and_grad(x)
        grad_out[:] = grad
        return float(logp)

    return density_and_grad


def counted_hessian(target: Target):
    """The Python loops' ``h(x, hess_out) -> 0``: the target's counted Hessian."""

    def hessian(x, hess_out):
        hess_out[:, :] = target.hessian_log_density(x)
        return 0.0

    return hessian


def check_burn_in(burn_in) -> int:
    if isinstance(burn_in, bool) or int(burn_in) != burn_in or not 0 <= int(burn_in) <= MAX_BURN_IN:
        raise ValueError(f"burn_in must be an integer in [0, {MAX_BURN_IN}], got {burn_in}")
    return int(burn_in)


def check_fraction(name: str, value, low: float = 0.0, high: float = 1.0) -> float:
    value = float(value)
    if not low < value < high:
        raise ValueError(f"{name} must be in ({low}, {high}), got {value}")
    return value


def check_positive(name: str, value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def start_with_gradient(target: Target, x0) -> tuple[np.ndarray, float, np.ndarray]:
    """Validate the start point; its log density and gradient (counted once each)."""
    x, logp = check_start(target, x0)
    grad = np.asarray(target.grad_log_density(x), dtype=float)
    if grad.shape != (target.dim,) or not np.all(np.isfinite(grad)):
        raise StartPointError(f"gradient of the log density at the start point {x.tolist()} is not finite")
    return x, logp, grad


@dataclass(kw_only=True)
class GradientState(ChainState):
    """State of a gradient-based sampler (``x``, ``logp``, ``t`` as in ChainState)."""

    grad: np.ndarray
    """∇log π at ``x`` (stored, never recomputed)."""
    step: float
    """Current step size (σ of MALA, ε of HMC/NUTS)."""
    adapt: np.ndarray
    """Adaptation state (dual averaging: see :mod:`ckam_bench.adaptation.dual_averaging`)."""


class GradientSampler(Sampler):
    """Shared plumbing: the compiled or Python density-and-gradient, counting, the block."""

    phases = PHASES
    burn_in: int

    def skip(self, target: Target) -> tuple[bool, str]:
        if not target.has_gradient:
            return True, f"{self.name} needs the gradient of the log density; target {target.name!r} has none"
        return False, ""

    def _bind(self, target: Target, rng: np.random.Generator) -> None:
        self.target = target
        self.rng = rng
        self._compiled = jit.compiled_log_density_and_grad(target)
        # no compiled density: the Python loop, with its steps between evaluations compiled
        self._compiled_steps = self._compiled is None and jit.enabled()

    def _density_and_grad(self):
        """The function a loop calls: compiled, or the counted Python one."""
        return self._compiled if self._compiled is not None else counted_density_and_grad(self.target)

    def _count(self, n_evals: int) -> None:
        """Add a compiled loop's evaluations to the target's counters."""
        if self._compiled is not None:
            self.target.n_density += int(n_evals)
            self.target.n_grad += int(n_evals)

    def _phase(self, t0: int, n: int) -> np.ndarray:
        return (np.arange(t0, t0 + n) >= self.burn_in).astype(np.int8)

    def describe(self) -> dict:
        return {"adaptation": "finite" if self.burn_in > 0 else "none", "burn_in": self.burn_in}


def _block(phase, samples, accepted, accept_prob, step_size, logps, n_nonfinite, divergent=None) -> Block:
    return Block(samples=samples, accepted=accepted, accept_prob=accept_prob, phase=phase,
                 step_size=step_size, noise=np.full(phase.shape[0], np.nan),
                 n_nonfinite=int(n_nonfinite), logp=logps, divergent=divergent)




def _compiled_as(loop, inline: bool = True):
    """Decorator: the decorated numpy function in Python; inside compiled kernels, ``loop``: the
    same arithmetic element by element in the same order (so the same numbers), without the
    temporary arrays whose allocation costs as much as a cheap model's gradient; inlined into
    its callers (:func:`ckam_bench.jit.jitable`'s ``inline``: no reference counts on the views
    passed)."""

    def wrap(fn):
        if jit.AVAILABLE:
            from numba.extending import overload

            @functools.wraps(fn)  # numba checks that ``loop`` takes fn's arguments
            def typer(*args):
                return loop

            overload(fn, inline="always" if inline else "never")(typer)
        return fn

    return wrap


def _all_finite_loop(v):
    for j in range(v.shape[0]):
        if not math.isfinite(v[j]):
            return False
    return True


@_compiled_as(_all_finite_loop)
def _all_finite(v):
    """Every entry of v is finite. Python: v·v (one BLAS call) is finite exactly when v is,
    unless v·v overflows; only then are the entries checked one by one."""
    return math.isfinite(v.dot(v)) or _all_finite_loop(v)


@jit.jitable
def _kick_drift(x, p, g, eps, minv):
    """:func:`_leapfrog` up to the evaluation (p half step, x full step), for compiled steps."""
    half = 0.5 * eps
    for j in range(x.shape[0]):
        p[j] += half * g[j]
        x[j] += eps * (minv[j] * p[j])


def _leapfrog_loop(f, x, p, g, eps, minv):
    half = 0.5 * eps
    for j in range(x.shape[0]):
        p[j] += half * g[j]
        x[j] += eps * (minv[j] * p[j])
    logp = f(x, g)
    for j in range(x.shape[0]):
        p[j] += half * g[j]
    return logp


@_compiled_as(_leapfrog_loop, inline=False)
def _leapfrog(f, x, p, g, eps, minv):
    """One leapfrog step in place (p half step, x full step with M⁻¹ = diag(minv), p half step);
    returns log π at the new x (its gradient is left in g)."""
    half = 0.5 * eps
    step = g * half  # written into one temporary: (0.5ε)g, ε(M⁻¹p), (0.5ε)g
    p += step
    np.multiply(minv, p, out=step)
    step *= eps
    x += step
    logp = f(x, g)
    np.multiply(g, half, out=step)
    p += step
    return logp


def _kinetic_loop(p, minv, numpy_order=False):
    if numpy_order:
        return 0.5 * jit.numpy_sum(minv * p * p)
    total = 0.0  # summed in order, as numba's np.sum (the kernels' order, kept: their chains)
    for j in range(p.shape[0]):
        total += minv[j] * p[j] * p[j]
    return 0.5 * total


@_compiled_as(_kinetic_loop)
def _kinetic(p, minv, numpy_order=False):
    """½ pᵀM⁻¹p; compiled with ``numpy_order``, summed as numpy sums (so the same number as
    Python), else in order (the kernels)."""
    return 0.5 * np.sum(minv * p * p)


def _copy_loop(dst, src):
    for j in range(dst.shape[0]):
        dst[j] = src[j]


@_compiled_as(_copy_loop)
def _copy(dst, src):
    """dst[:] = src (compiled: a loop; numba's slice assignment between rows of one array costs
    ~50 ns)."""
    dst[:] = src


@jit.jitable
def _reasonable_step(f, x, logp, g, p, minv, step, xw, pw, gw):
    """Stan's initial step size heuristic: double (or halve) ε until the acceptance of one
    leapfrog step from (x, p) crosses 0.8. Returns (ε, gradient evaluations)."""
    h0 = -logp + _kinetic(p, minv)
    log_08 = math.log(0.8)
    n_evals = 0
    direction = 0
    for _ in range(100):
        xw[:] = x
        pw[:] = p
        gw[:] = g
        lp = _leapfrog(f, xw, pw, gw, step, minv)
        n_evals += 1
        delta = h0 - (-lp + _kinetic(pw, minv))
        if delta != delta:
            delta = -math.inf
        if direction == 0:
            direction = 1 if delta > log_08 else -1
        if direction == 1 and not delta > log_08:
            break
        if direction == -1 and not delta < log_08:
            break
        step = step * 2.0 if direction == 1 else step * 0.5
        if step > 1e7 or step < 1e-12:
            break
    return step, n_evals


# ---------------------------------------------------------------------------- MALA
def _mala_proposal_arrays(x, g, eps, sigma):
    return x + (0.5 * sigma * sigma) * g + sigma * eps


@_compiled_as(_mala_proposal_arrays)
def _mala_proposal(x, g, eps, sigma):
    """y = x + ½σ²g + σε (Python: the same operations through two arrays instead of four)."""
    y = g * (0.5 * sigma * sigma)
    y += x
    step = eps * sigma
    y += step
    return y


def _mala_log_ratio_arrays(logp_y, logp, eps, g, gy, sigma):
    if math.isfinite(logp_y) and _all_finite(gy):
        w = eps + (0.5 * sigma) * (g + gy)
        return logp_y - logp - 0.5 * np.dot(w, w) + 0.5 * np.dot(eps, eps)
    return -math.inf


@_compiled_as(_mala_log_ratio_arrays)
def _mala_log_ratio(logp_y, logp, eps, g, gy, sigma):
    """log r of the module docstring; −∞ when log π(y) or ∇log π(y) is not finite. (Python: a
    non-finite ∇log π(y) makes w, hence r, −∞ or NaN, mapped to −∞, so it needs no check of
    its own; w through one array.)"""
    if not math.isfinite(logp_y):
        return -math.inf
    w = g + gy
    w *= 0.5 * sigma
    w += eps
    r = logp_y - logp - 0.5 * np.dot(w, w) + 0.5 * np.dot(eps, eps)
    return r if r == r else -math.inf


def _mala_loop(f, x, logp, g, log_step, t0, burn_in, z, log_u, target_accept, rm_scale, rm_kappa):
    """n MALA iterations from global iteration ``t0``; σ adapted while t < burn_in. Returns
    (x, logp, g, log_step, samples, n_collected, accepted, accept_prob, steps, logps, n_evals,
    n_nonfinite)."""
    n, d = z.shape
    samples = np.empty((n, d))
    accepted = np.zeros(n, dtype=np.bool_)
    accept_prob, steps, logps = np.empty(n), np.empty(n), np.empty(n)
    x, g = x.copy(), g.copy()
    gy = np.empty(d)
    n_collected = n_evals = n_nonfinite = 0
    for i in range(n):
        t = t0 + i
        sigma = math.exp(log_step)
        eps = z[i]
        y = _mala_proposal(x, g, eps, sigma)
        logp_y = f(y, gy)
        n_evals += 1
        r = _mala_log_ratio(logp_y, logp, eps, g, gy, sigma)
        alpha = jit.acceptance(r)
        n_nonfinite += not r > -math.inf  # NaN or −∞
        accept = log_u[i] < r
        accepted[i] = accept
        accept_prob[i] = alpha
        steps[i] = sigma
        if t < burn_in:
            log_step = robbins_monro.update(log_step, t, alpha, target_accept, rm_scale, rm_kappa)
        if accept:
            x = y
            logp = logp_y
            g[:] = gy
        logps[i] = logp
        if t >= burn_in:
            samples[n_collected] = x
            n_collected += 1
    return (x, logp, g, log_step, samples, n_collected, accepted, accept_prob, steps, logps, n_evals,
            n_nonfinite)


_mala_kernel = jit.gradient_kernel(jit.A1, jit.F8, jit.A1, jit.F8, jit.types.int64, jit.types.int64,
                                   jit.A2, jit.A1, jit.F8, jit.F8, jit.F8)(_mala_loop) if jit.AVAILABLE else None


def _mala_iteration(i, logp_y, y, gy, x, g, s, t0, burn_in, z, log_u, params, samples, accepted, records):
    """Iteration i of :func:`_mala_loop` after the evaluation of its proposal y (log π(y) =
    logp_y, ∇log π(y) = gy): the accept step, σ's adaptation, the records (x, g and s = [log π(x),
    log σ, states collected, non-finite proposals] in place), the next proposal (y after the last)."""
    t = t0 + i
    sigma = math.exp(s[1])
    eps = z[i]
    r = _mala_log_ratio(logp_y, s[0], eps, g, gy, sigma)
    alpha, accept = jit.record_accept(r, log_u, i, s, 3, accepted, records)
    records[1, i] = sigma
    if t < burn_in:
        s[1] = robbins_monro.update(s[1], t, alpha, params[0], params[1], params[2])
    if accept:
        _copy(x, y)
        _copy(g, gy)
        s[0] = logp_y
    records[2, i] = s[0]
    if t >= burn_in:
        samples[int(s[2])] = x
        s[2] += 1.0
    if i + 1 < z.shape[0]:
        return _mala_proposal(x, g, z[i + 1], math.exp(s[1]))
    return y


def _mala_steps(f, x, logp, g, log_step, t0, burn_in, z, log_u, params):
    """:func:`_mala_loop` for a target without a compiled density: its Python density-and-gradient,
    and between evaluations one call of the compiled :func:`_mala_iteration` (the same chain, to the bit)."""
    n, d = z.shape
    samples, accepted, records = np.empty((n, d)), np.zeros(n, dtype=np.bool_), np.empty((3, n))
    x, g, gy = x.copy(), g.copy(), np.empty(d)
    s = np.array([logp, log_step, 0.0, 0.0])
    y = _mala_proposal(x, g, z[0], math.exp(log_step)) if n > 0 else x
    for i in range(n):
        y = _MALA_ITERATION(i, f(y, gy), y, gy, x, g, s, t0, burn_in, z, log_u, params, samples, accepted, records)
    return (x, s[0], g, s[1], samples, int(s[2]), accepted, records[0], records[1], records[2], n, int(s[3]))


_MALA_ITERATION = jit.helper(_mala_iteration)


class MALA(GradientSampler):
    """MALA with isotropic proposal N(x + ½σ²∇log π(x), σ²I); σ adapted during burn-in.

    step_size : initial σ > 0.
    burn_in : iterations of adaptation (not collected); σ is fixed afterwards.
    target_accept : α* of the Robbins–Monro recursion (0.574).
    rate_scale, rate_exponent : its gain s(1 + t)^(−κ).
    """

    name = "mala"

    def __init__(self, step_size: float = 0.1, burn_in: int = 20000, target_accept: float = 0.574,
                 rate_scale: float = 1.0, rate_exponent: float = 0.6):
        self.step_size = positive_step_size(step_size)
        self.burn_in = check_burn_in(burn_in)
        self.target_accept = check_fraction("target_accept", target_accept)
        self.rate_scale = check_positive("rate_scale", rate_scale)
        self.rate_exponent = check_fraction("rate_exponent", rate_exponent, 0.0, 1.0 + 1e-12)

    def warm_up(self, target: Target) -> None:
        density = jit.compiled_log_density_and_grad(target)
        x, d = np.array(target.start, dtype=float), target.dim
        if density is not None:
            _mala_kernel(density, x, 0.0, np.zeros(d), 0.0, 0, 0, np.zeros((1, d)), np.zeros(1), 0.5, 1.0, 0.6)
        elif jit.enabled():
            _MALA_ITERATION(0, 0.0, x, x.copy(), x.copy(), x.copy(), np.zeros(4), 0, 0, np.zeros((1, d)), np.zeros(1),
                            np.ones(3), np.zeros((1, d)), np.zeros(1, dtype=bool), np.zeros((3, 1)))

    def init(self, target: Target, x0, rng: np.random.Generator) -> GradientState:
        self._bind(target, rng)
        x, logp, grad = start_with_gradient(target, x0)
        return GradientState(x=x, logp=logp, t=0, grad=grad, step=self.step_size, adapt=np.zeros(0))

    def advance(self, state: GradientState, n: int):
        z, log_u = predraw(self.rng, n, self.target.dim)
        args = (np.ascontiguousarray(state.x, dtype=float), float(state.logp),
                np.ascontiguousarray(state.grad, dtype=float), math.log(state.step), int(state.t), self.burn_in,
                np.ascontiguousarray(z), log_u)
        params = (self.target_accept, self.rate_scale, self.rate_exponent)
        if self._compiled_steps:
            out = _mala_steps(self._density_and_grad(), *args, np.array(params))
        else:
            out = (_mala_loop if self._compiled is None else _mala_kernel)(self._density_and_grad(), *args, *params)
        (x, logp, g, log_step, samples, k, accepted, accept_prob, steps, logps, n_evals, n_nonfinite) = out
        self._count(n_evals)
        block = _block(self._phase(state.t, n), samples[:k], accepted, accept_prob, steps, logps, n_nonfinite)
        new = GradientState(x=x, logp=float(logp), t=state.t + n, grad=g, step=math.exp(log_step),
                            adapt=state.adapt)
        return new, block

    def trace_columns(self, state: GradientState) -> dict:
        return {"step": float(state.step)}

    def describe(self) -> dict:
        return {**super().describe(), "target_accept": self.target_accept}


# ---------------------------------------------------------------------------- HMC
def _hmc_loop(f, x, logp, g, step, da, t0, burn_in, n_leapfrog, z, log_u, target_accept, gamma, da_t0,
              kappa):
    """n HMC-k iterations (identity metric) from global iteration ``t0``; ε by the heuristic at
    t = 0 and dual averaging while t < burn_in (``da`` updated in place), ε̄ afterwards."""
    n, d = z.shape
    samples = np.empty((n, d))
    accepted = np.zeros(n, dtype=np.bool_)
    accept_prob, steps, logps = np.empty(n), np.empty(n), np.empty(n)
    x, g = x.copy(), g.copy()
    minv = np.ones(d)
    xn, pn, gn = np.empty(d), np.empty(d), np.empty(d)
    n_collected = n_evals = n_nonfinite = 0
    for i in range(n):
        t = t0 + i
        p = z[i].copy()
        if t == 0 and burn_in > 0:
            step, evals = _reasonable_step(f, x, logp, g, p, minv, step, xn, pn, gn)
            n_evals += evals
            dual_averaging.restart(da, step)
        h0 = -logp + _kinetic(p, minv)
        xn[:] = x
        pn[:] = p
        gn[:] = g
        lp = -math.inf
        finite = True
        for _ in range(n_leapfrog):
            lp = _leapfrog(f, xn, pn, gn, step, minv)
            n_evals += 1
            if not (math.isfinite(lp) and _all_finite(gn)):
                finite = False
                break
        r = h0 - (-lp + _kinetic(pn, minv)) if finite else -math.inf
        alpha = jit.acceptance(r)
        n_nonfinite += not r > -math.inf  # NaN or −∞
        accept = log_u[i] < r
        accepted[i] = accept
        accept_prob[i] = alpha
        steps[i] = step
        if accept:
            x[:] = xn
            g[:] = gn
            logp = lp
        if t < burn_in:
            step = dual_averaging.update(da, alpha, target_accept, gamma, da_t0, kappa)
            if t == burn_in - 1:
                step = dual_averaging.final(da)
        logps[i] = logp
        if t >= burn_in:
            samples[n_collected] = x
            n_collected += 1
    return (x, logp, g, step, samples, n_collected, accepted, accept_prob, steps, logps, n_evals,
            n_nonfinite)


_I64 = jit.types.int64 if jit.AVAILABLE else None
_hmc_kernel = jit.gradient_kernel(jit.A1, jit.F8, jit.A1, jit.F8, jit.A1, _I64, _I64, _I64, jit.A2, jit.A1,
                                  jit.F8, jit.F8, jit.F8, jit.F8)(_hmc_loop) if jit.AVAILABLE else None


@jit.jitable
def _hmc_begin(i, w, s, z):
    """Start iteration i of :func:`_hmc_loop`: momentum p = z[i], H₀ = −log π(x) + ½‖p‖², the
    trajectory at (x, p, ∇log π(x)) and its first half kick and drift."""
    _copy(w[3], z[i])
    s[2] = -s[0] + _kinetic(w[3], w[5], True)
    _copy(w[2], w[0])
    _copy(w[4], w[1])
    s[3] = 0.0
    _kick_drift(w[2], w[3], w[4], s[1], w[5])


def _hmc_join(lp, i, w, s, da, t0, burn_in, n_leapfrog, z, log_u, params, samples, accepted, records):
    """After the evaluation ending a leapfrog step of iteration i (log π = lp, ∇log π in w[4]):
    the next step up to its evaluation (returns i), or after the last or a non-finite one the
    accept step, records, dual averaging and the start of iteration i + 1 (returns i + 1). In place:
    w = [x, ∇log π(x), the trajectory's x, p, ∇log π, M⁻¹ = 1], s = [log π(x), ε, H₀, steps
    done, states collected, evaluations, non-finite trajectories]."""
    x, g, xn, pn, gn, minv = w[0], w[1], w[2], w[3], w[4], w[5]
    step = s[1]
    s[3] += 1.0
    s[5] += 1.0
    for j in range(pn.shape[0]):  # the step's last half kick (as _leapfrog)
        pn[j] += (0.5 * step) * gn[j]
    finite = math.isfinite(lp) and _all_finite(gn)
    if finite and s[3] < n_leapfrog:
        _kick_drift(xn, pn, gn, step, minv)
        return i
    r = s[2] - (-lp + _kinetic(pn, minv, True)) if finite else -math.inf
    alpha, accept = jit.record_accept(r, log_u, i, s, 6, accepted, records)
    records[1, i] = step
    if accept:
        _copy(x, xn)
        _copy(g, gn)
        s[0] = lp
    t = t0 + i
    if t < burn_in:
        s[1] = dual_averaging.update(da, alpha, params[0], params[1], params[2], params[3])
        if t == burn_in - 1:
            s[1] = dual_averaging.final(da)
    records[2, i] = s[0]
    if t >= burn_in:
        samples[int(s[4])] = x
        s[4] += 1.0
    if i + 1 < z.shape[0]:
        _hmc_begin(i + 1, w, s, z)
    return i + 1


def _hmc_steps(f, x, logp, g, step, da, t0, burn_in, n_leapfrog, z, log_u, params):
    """:func:`_hmc_loop` for a target without a compiled density: its Python density-and-gradient,
    and between evaluations one call of the compiled :func:`_hmc_join` (the same chain, to the bit)."""
    n, d = z.shape
    samples, accepted, records = np.empty((n, d)), np.zeros(n, dtype=np.bool_), np.empty((3, n))
    w = np.vstack([x, g, np.empty((3, d)), np.ones((1, d))])
    s = np.array([logp, step, 0.0, 0.0, 0.0, 0.0, 0.0])
    if n > 0 and t0 == 0 and burn_in > 0:
        s[1], evals = _reasonable_step(f, w[0], logp, w[1], z[0].copy(), w[5], step, w[2], w[3], w[4])
        s[5] += evals
        dual_averaging.restart(da, s[1])
    if n > 0:
        _hmc_begin(0, w, s, z)
    xn, gn, i = w[2], w[4], 0
    while i < n:
        i = _HMC_JOIN(f(xn, gn), i, w, s, da, t0, burn_in, n_leapfrog, z, log_u, params, samples, accepted, records)
    return (w[0], s[0], w[1], s[1], samples, int(s[4]), accepted, records[0], records[1], records[2], int(s[5]),
            int(s[6]))


_HMC_JOIN = jit.helper(_hmc_join)


class _DualAveraging:
    """Validation of the dual-averaging keys shared by HMC and NUTS."""

    def _dual_averaging(self, target_accept, gamma, t0, kappa) -> None:
        self.target_accept = check_fraction("target_accept", target_accept)
        self.gamma = check_positive("gamma", gamma)
        self.t0 = check_positive("t0", t0)
        self.kappa = check_fraction("kappa", kappa, 0.5, 1.0 + 1e-12)


class HMC(GradientSampler, _DualAveraging):
    """HMC with ``n_leapfrog`` leapfrog steps (identity metric); ε tuned during burn-in.

    n_leapfrog : k ≥ 1 (the paper's HMC-5, HMC-10, HMC-20).
    step_size : initial ε > 0 (refined by Stan's heuristic at the first iteration).
    burn_in : iterations of dual averaging (not collected).
    target_accept, gamma, t0, kappa : dual averaging (0.65, 0.05, 10, 0.75).
    """

    name = "hmc"
    MAX_LEAPFROG = 10_000

    def __init__(self, n_leapfrog: int = 10, step_size: float = 0.1, burn_in: int = 20000,
                 target_accept: float = 0.65, gamma: float = 0.05, t0: float = 10.0, kappa: float = 0.75):
        if isinstance(n_leapfrog, bool) or int(n_leapfrog) != n_leapfrog or not 1 <= n_leapfrog <= self.MAX_LEAPFROG:
            raise ValueError(f"n_leapfrog must be an integer in [1, {self.MAX_LEAPFROG}], got {n_leapfrog}")
        self.n_leapfrog = int(n_leapfrog)
        self.step_size = positive_step_size(step_size)
        self.burn_in = check_burn_in(burn_in)
        self._dual_averaging(target_accept, gamma, t0, kappa)

    def warm_up(self, target: Target) -> None:
        density = jit.compiled_log_density_and_grad(target)
        x, d = np.array(target.start, dtype=float), target.dim
        if density is not None:
            _hmc_kernel(density, x, 0.0, np.zeros(d), 0.1, dual_averaging.init(0.1), 1, 0, 1, np.zeros((1, d)),
                        np.zeros(1), 0.65, 0.05, 10.0, 0.75)
        elif jit.enabled():
            _HMC_JOIN(0.0, 0, np.ones((6, d)), np.zeros(7), dual_averaging.init(0.1), 1, 0, 1, np.zeros((1, d)),
                      np.zeros(1), np.ones(4), np.zeros((1, d)), np.zeros(1, dtype=bool), np.zeros((3, 1)))

    def init(self, target: Target, x0, rng: np.random.Generator) -> GradientState:
        self._bind(target, rng)
        x, logp, grad = start_with_gradient(target, x0)
        return GradientState(x=x, logp=logp, t=0, grad=grad, step=self.step_size,
                             adapt=dual_averaging.init(self.step_size))

    def advance(self, state: GradientState, n: int):
        z, log_u = predraw(self.rng, n, self.target.dim)
        da = np.array(state.adapt, dtype=float)
        args = (np.ascontiguousarray(state.x, dtype=float), float(state.logp),
                np.ascontiguousarray(state.grad, dtype=float), float(state.step), da, int(state.t), self.burn_in,
                self.n_leapfrog, np.ascontiguousarray(z), log_u)
        params = (self.target_accept, self.gamma, self.t0, self.kappa)
        if self._compiled_steps:
            out = _hmc_steps(self._density_and_grad(), *args, np.array(params))
        else:
            out = (_hmc_loop if self._compiled is None else _hmc_kernel)(self._density_and_grad(), *args, *params)
        (x, logp, g, step, samples, k, accepted, accept_prob, steps, logps, n_evals, n_nonfinite) = out
        self._count(n_evals)
        block = _block(self._phase(state.t, n), samples[:k], accepted, accept_prob, steps, logps, n_nonfinite)
        new = GradientState(x=x, logp=float(logp), t=state.t + n, grad=g, step=float(step), adapt=da)
        return new, block

    def trace_columns(self, state: GradientState) -> dict:
        return {"step": float(state.step)}

    def describe(self) -> dict:
        return {**super().describe(), "n_leapfrog": self.n_leapfrog, "target_accept": self.target_accept}
