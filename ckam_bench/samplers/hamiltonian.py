r"""Gradient-based baselines of Titsias & Dellaportas (2019): MALA, HMC with k leapfrog steps, NUTS.

All three use ∇log π, adapt their step size during a finite burn-in (``burn_in`` iterations,
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
needed. (Stan ≥ 2.26 adds two extra checks across each merge; they are not included.)
Own implementation, compiled with numba: the libraries that offer NUTS either bring a heavy
runtime (JAX/BlackJAX, PyMC/PyTensor, Stan) or cannot take a numba density-and-gradient inside
the block loop, the sampler clock and the gradient count.

Gradient evaluations: every call of the density-and-gradient counts one density and one
gradient evaluation (``target.n_density``, ``target.n_grad``); HMC and NUTS cache the gradient
at the current state, so an HMC-k iteration costs k gradients.

Compiled loops: with numba and a target that has ``jit_log_density_and_grad()``
(:mod:`ckam_bench.jit`), each block runs as a compiled kernel. The kernels' bodies are the
Python loops (``*_loop``), compiled: with ``CKAM_BENCH_JIT=0`` or a target without a compiled
gradient the same functions run in Python, calling the counted ``target.log_density_and_grad``,
on the same random numbers, so a seed gives the same accept decisions on both paths. Vector
helpers of the leapfrog and tree steps are numpy expressions in Python and loops without
temporary arrays in compiled code (``_compiled_as``: the same arithmetic in the same order), as a
cheap model's gradient costs no more than a few allocations.

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
from scipy.special import ndtri

from ckam_bench import jit
from ckam_bench.adaptation import dual_averaging, robbins_monro, welford
from ckam_bench.samplers.base import Block, ChainState, Sampler, StartPointError, check_start
from ckam_bench.samplers.random_walk import positive_step_size, predraw
from ckam_bench.targets.base import Target

PHASES = ("burn_in", "sampling")
MAX_BURN_IN = 10**9
MAX_TREE_DEPTH = 14


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
            logp = log_density(x)
            target.n_grad += 1
            grad_out[:] = grad_log_density(x)
            return logp

        return density_and_grad

    def density_and_grad(x, grad_out):
        logp, grad = target.log_density_and_grad(x)
        grad_out[:] = grad
        return logp

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


def _block(phase, samples, accepted, accept_prob, step_size, logps, n_nonfinite) -> Block:
    return Block(samples=samples, accepted=accepted, accept_prob=accept_prob, phase=phase,
                 step_size=step_size, noise=np.full(phase.shape[0], np.nan),
                 n_nonfinite=int(n_nonfinite), logp=logps)




def _compiled_as(loop):
    """Decorator: the decorated numpy function in Python; inside compiled kernels, ``loop``: the
    same arithmetic element by element in the same order (so the same numbers), without the
    temporary arrays whose allocation costs as much as a cheap model's gradient."""

    def wrap(fn):
        if jit.AVAILABLE:
            from numba.extending import overload

            @functools.wraps(fn)  # numba checks that ``loop`` takes fn's arguments
            def typer(*args):
                return loop

            overload(fn)(typer)
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


def _leapfrog_loop(f, x, p, g, eps, minv):
    half = 0.5 * eps
    for j in range(x.shape[0]):
        p[j] += half * g[j]
        x[j] += eps * (minv[j] * p[j])
    logp = f(x, g)
    for j in range(x.shape[0]):
        p[j] += half * g[j]
    return logp


@_compiled_as(_leapfrog_loop)
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


def _kinetic_loop(p, minv):
    total = 0.0  # summed in order, as numba's np.sum
    for j in range(p.shape[0]):
        total += minv[j] * p[j] * p[j]
    return 0.5 * total


@_compiled_as(_kinetic_loop)
def _kinetic(p, minv):
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
        if r == r and r > -math.inf:
            alpha = 1.0 if r >= 0.0 else math.exp(r)
        else:
            alpha = 0.0
            n_nonfinite += 1
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
        if density is not None:
            x = np.array(target.start, dtype=float)
            _mala_kernel(density, x, 0.0, np.zeros_like(x), 0.0, 0, 0, np.zeros((1, x.size)), np.zeros(1),
                         0.5, 1.0, 0.6)

    def init(self, target: Target, x0, rng: np.random.Generator) -> GradientState:
        self._bind(target, rng)
        x, logp, grad = start_with_gradient(target, x0)
        return GradientState(x=x, logp=logp, t=0, grad=grad, step=self.step_size, adapt=np.zeros(0))

    def advance(self, state: GradientState, n: int):
        z, log_u = predraw(self.rng, n, self.target.dim)
        f = self._density_and_grad()
        run = _mala_loop if self._compiled is None else _mala_kernel
        (x, logp, g, log_step, samples, k, accepted, accept_prob, steps, logps, n_evals,
         n_nonfinite) = run(f, np.ascontiguousarray(state.x, dtype=float), float(state.logp),
                            np.ascontiguousarray(state.grad, dtype=float), math.log(state.step), int(state.t),
                            self.burn_in, np.ascontiguousarray(z), log_u, self.target_accept,
                            self.rate_scale, self.rate_exponent)
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
        if r == r and r > -math.inf:
            alpha = 1.0 if r >= 0.0 else math.exp(r)
        else:
            alpha = 0.0
            n_nonfinite += 1
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
        if density is not None:
            x = np.array(target.start, dtype=float)
            _hmc_kernel(density, x, 0.0, np.zeros_like(x), 0.1, dual_averaging.init(0.1), 1, 0, 1,
                        np.zeros((1, x.size)), np.zeros(1), 0.65, 0.05, 10.0, 0.75)

    def init(self, target: Target, x0, rng: np.random.Generator) -> GradientState:
        self._bind(target, rng)
        x, logp, grad = start_with_gradient(target, x0)
        return GradientState(x=x, logp=logp, t=0, grad=grad, step=self.step_size,
                             adapt=dual_averaging.init(self.step_size))

    def advance(self, state: GradientState, n: int):
        z, log_u = predraw(self.rng, n, self.target.dim)
        da = np.array(state.adapt, dtype=float)
        run = _hmc_loop if self._compiled is None else _hmc_kernel
        (x, logp, g, step, samples, k, accepted, accept_prob, steps, logps, n_evals, n_nonfinite) = run(
            self._density_and_grad(), np.ascontiguousarray(state.x, dtype=float), float(state.logp),
            np.ascontiguousarray(state.grad, dtype=float), float(state.step), da, int(state.t), self.burn_in,
            self.n_leapfrog, np.ascontiguousarray(z), log_u, self.target_accept, self.gamma, self.t0, self.kappa)
        self._count(n_evals)
        block = _block(self._phase(state.t, n), samples[:k], accepted, accept_prob, steps, logps, n_nonfinite)
        new = GradientState(x=x, logp=float(logp), t=state.t + n, grad=g, step=float(step), adapt=da)
        return new, block

    def trace_columns(self, state: GradientState) -> dict:
        return {"step": float(state.step)}

    def describe(self) -> dict:
        return {**super().describe(), "n_leapfrog": self.n_leapfrog, "target_accept": self.target_accept}


# ---------------------------------------------------------------------------- NUTS
def _uturn_loop(p_minus, p_plus, rho, rho0, minv, scratch):
    r, s = scratch[0], scratch[1]
    for j in range(r.shape[0]):
        r[j] = rho[j] - rho0[j]
        s[j] = minv[j] * p_minus[j]
    if not np.dot(s, r) > 0.0:  # np.dot: the same BLAS call as in Python
        return True
    for j in range(r.shape[0]):
        s[j] = minv[j] * p_plus[j]
    return not np.dot(s, r) > 0.0


@_compiled_as(_uturn_loop)
def _uturn(p_minus, p_plus, rho, rho0, minv, scratch):
    """The generalised no-U-turn criterion fails (the trajectory turns back) for the momentum sum
    ρ = rho − rho0 (``scratch``: two work vectors of compiled code)."""
    r = rho - rho0
    return not (np.dot(minv * p_minus, r) > 0.0 and np.dot(minv * p_plus, r) > 0.0)


@jit.jitable
def _logaddexp(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    if a >= b:  # log(e^a + e^b) with e^(a - a) = 1 exactly: one exp fewer
        return a + math.log(1.0 + math.exp(b - a))
    return b + math.log(math.exp(a - b) + 1.0)


@jit.jitable
def _coin(rng, log_p):
    """A Bernoulli(min(1, e^log_p)) draw; a uniform is drawn from ``rng`` only when the
    probability is below 1."""
    return log_p >= 0.0 or rng.random() < math.exp(log_p)


@jit.jitable
def _nuts_transition(f, x, logp, g, p, minv, step, rng, max_depth, work):
    """One multinomial NUTS transition from (x, logp, g) with momentum p, drawing from ``rng``
    the uniforms it uses when it uses them: each doubling's direction, then its leaves' draws,
    then the merge draw (:func:`_coin`: none for a certain event). Updates x, g in place;
    returns (logp, mean acceptance statistic, leapfrog steps, divergent, depth)."""
    xl, pl, gl = work[0], work[1], work[2]  # the trajectory's left end
    xr, pr, gr = work[3], work[4], work[5]  # its right end
    xe, pe, ge = work[6], work[7], work[8]  # the end being extended
    xc, gc = work[9], work[10]  # the new subtree's candidate state
    rho, rho_sub = work[11], work[12]  # momentum sums of the trajectory and of the new subtree
    zero, scratch = work[13], work[14:16]
    ck_p = work[16:16 + max_depth + 1]  # at each open subtree's first leaf: momentum, partial ρ
    ck_rho = work[16 + max_depth + 1:16 + 2 * (max_depth + 1)]
    zero[:] = 0.0
    _copy(xl, x)
    _copy(pl, p)
    _copy(gl, g)
    _copy(xr, x)
    _copy(pr, p)
    _copy(gr, g)
    _copy(rho, p)
    h0 = -logp + _kinetic(p, minv)
    log_w = 0.0
    logp_s = logp
    sum_accept = 0.0
    n_leapfrog = 0
    divergent = False
    depth = 0
    while depth < max_depth:
        forward = rng.random() < 0.5
        if forward:
            _copy(xe, xr)
            _copy(pe, pr)
            _copy(ge, gr)
        else:
            _copy(xe, xl)
            _copy(pe, pl)
            _copy(ge, gl)
        eps = step if forward else -step
        log_w_sub = -math.inf
        logp_c = -math.inf
        rho_sub[:] = 0.0
        valid = True
        n_leaves = 1 << depth
        for leaf in range(n_leaves):
            lp = _leapfrog(f, xe, pe, ge, eps, minv)
            n_leapfrog += 1
            h = -lp + _kinetic(pe, minv)
            if not (math.isfinite(lp) and _all_finite(ge) and h == h) or h - h0 > 1000.0:
                divergent = True
                valid = False
                break
            lw = h0 - h
            sum_accept += 1.0 if lw >= 0.0 else math.exp(lw)
            for k in range(1, depth + 1):
                if leaf % (1 << k) == 0:
                    _copy(ck_p[k], pe)
                    _copy(ck_rho[k], rho_sub)
            rho_sub += pe
            log_w_sub = _logaddexp(log_w_sub, lw)
            if _coin(rng, lw - log_w_sub):
                _copy(xc, xe)
                _copy(gc, ge)
                logp_c = lp
            for k in range(1, depth + 1):
                if (leaf + 1) % (1 << k) == 0:
                    if _uturn(ck_p[k], pe, rho_sub, ck_rho[k], minv, scratch):
                        valid = False
                        break
            if not valid:
                break
        if not valid:
            break
        if forward:
            _copy(xr, xe)
            _copy(pr, pe)
            _copy(gr, ge)
        else:
            _copy(xl, xe)
            _copy(pl, pe)
            _copy(gl, ge)
        if _coin(rng, log_w_sub - log_w):
            _copy(x, xc)
            _copy(g, gc)
            logp_s = logp_c
        log_w = _logaddexp(log_w, log_w_sub)
        rho += rho_sub
        depth += 1
        if _uturn(pl, pr, rho, zero, minv, scratch):
            break
    stat = sum_accept / n_leapfrog if n_leapfrog > 0 else 0.0
    return logp_s, stat, n_leapfrog, divergent, depth


@jit.jitable
def _nuts_work(max_depth, d):
    return np.empty((16 + 2 * (max_depth + 1), d))


def _normals_loop(u, quantile):
    z = np.empty(u.shape[0])
    for j in range(u.shape[0]):
        z[j] = quantile(max(u[j], 1e-300))
    return z


@_compiled_as(_normals_loop)
def _normals(u, quantile):
    """Standard normals Φ⁻¹(u) from uniforms (clipped away from 0)."""
    return quantile(np.clip(u, 1e-300, None))


def _nuts_loop(f, x, logp, g, step, minv, da, wf, t0, burn_in, window_ends, window_start, max_depth, rng,
               quantile, n, target_accept, gamma, da_t0, kappa):
    """n NUTS iterations from global iteration ``t0``; warm-up (t < burn_in) adapts ε (dual
    averaging ``da``) and, at the ``window_ends``, the diagonal inverse metric ``minv`` from the
    Welford state ``wf`` (all updated in place). Each iteration draws from the generator ``rng``
    d uniforms for the momentum's normals (``quantile`` = Φ⁻¹), then the tree's draws as it uses
    them (:func:`_nuts_transition`). Returns (x, logp, g, step, samples, n_collected,
    accepted, accept_prob, steps, logps, n_evals, n_divergent, depths)."""
    d = x.shape[0]
    samples = np.empty((n, d))
    accepted = np.zeros(n, dtype=np.bool_)
    accept_prob, steps, logps = np.empty(n), np.empty(n), np.empty(n)
    depths = np.zeros(n, dtype=np.int64)
    x, g = x.copy(), g.copy()
    work = _nuts_work(max_depth, d)
    x_old = np.empty(d)
    n_collected = n_evals = n_divergent = 0
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
        logp, stat, n_lf, divergent, depth = _nuts_transition(f, x, logp, g, p, minv, step, rng, max_depth,
                                                              work)
        n_evals += n_lf
        n_divergent += divergent
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
            n_divergent, depths)


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
    _nuts_kernel = jit.gradient_kernel(jit.A1, jit.F8, jit.A1, jit.F8, jit.A1, jit.A1, jit.A1, _I64, _I64,
                                       jit.types.int64[::1], _I64, _I64, _GENERATOR, _QUANTILE, _I64,
                                       jit.F8, jit.F8, jit.F8, jit.F8)(_nuts_loop)
else:
    _NDTRI = _nuts_kernel = None


@dataclass(kw_only=True)
class NUTSState(GradientState):
    """NUTS state: GradientState plus the metric and the warm-up accumulators."""

    inv_metric: np.ndarray
    """Diagonal inverse metric M⁻¹ (variances), shape (d,)."""
    welford: np.ndarray
    """Welford state of the current slow window, shape (2d + 1,)."""
    n_divergent: int = 0
    """Divergent transitions so far."""
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

    def init(self, target: Target, x0, rng: np.random.Generator) -> NUTSState:
        self._bind(target, rng)
        x, logp, grad = start_with_gradient(target, x0)
        return NUTSState(x=x, logp=logp, t=0, grad=grad, step=self.step_size,
                         adapt=dual_averaging.init(self.step_size), inv_metric=np.ones(target.dim),
                         welford=welford.init(target.dim))

    def advance(self, state: NUTSState, n: int):
        da, wf = np.array(state.adapt, dtype=float), np.array(state.welford, dtype=float)
        minv = np.array(state.inv_metric, dtype=float)
        run, quantile = (_nuts_loop, ndtri) if self._compiled is None else (_nuts_kernel, _NDTRI)
        (x, logp, g, step, samples, k, accepted, accept_prob, steps, logps, n_evals, n_div, depths) = run(
            self._density_and_grad(), np.ascontiguousarray(state.x, dtype=float), float(state.logp),
            np.ascontiguousarray(state.grad, dtype=float), float(state.step), minv, da, wf, int(state.t),
            self.burn_in, self._ends, self._window_start, self.max_depth, self.rng, quantile, int(n),
            self.target_accept, self.gamma, self.t0, self.kappa)
        self._count(n_evals)
        block = _block(self._phase(state.t, n), samples[:k], accepted, accept_prob, steps, logps, 0)
        new = NUTSState(x=x, logp=float(logp), t=state.t + n, grad=g, step=float(step), adapt=da,
                        inv_metric=minv, welford=wf, n_divergent=state.n_divergent + int(n_div),
                        mean_depth=float(np.mean(depths)) if n else 0.0)
        return new, block

    def trace_columns(self, state: NUTSState) -> dict:
        return {"step": float(state.step), "n_divergent": float(state.n_divergent),
                "tree_depth": float(state.mean_depth)}

    def describe(self) -> dict:
        return {**super().describe(), "max_depth": self.max_depth, "target_accept": self.target_accept,
                "window_ends": self._ends.tolist()}
