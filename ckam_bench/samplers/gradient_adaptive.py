r"""Gradient-based adaptive MCMC (Titsias & Dellaportas 2019, NeurIPS): gadRWM, gadMALA fast/exact.

Proposals with a lower-triangular factor L (positive diagonal):

* **gadRWM**: y = x + Lε, ε ~ N(0, I), log r = log π(y) − log π(x).
* **gadMALA**: y = x + ½LLᵀ∇log π(x) + Lε, with (u_x = Lᵀ∇log π(x), u_y = Lᵀ∇log π(y))

  .. math::
      \log r = \log\pi(y) - \log\pi(x) - \tfrac12\|\varepsilon + \tfrac12(u_x + u_y)\|^2
      + \tfrac12\|\varepsilon\|^2 .

Adaptation (burn-in only, Algorithm 1): at every burn-in iteration, with the proposal's own ε,
L climbs the stochastic gradient of the entropy-regularised speed measure

.. math::
    F(L) = \min\{0, \log r\} + \beta\textstyle\sum_i \log L_{ii},

    \nabla_L F = [\,\nabla_L \log r\,]_{\text{lower}}\,\mathbb 1[\log r < 0]
    + \beta\,\mathrm{diag}(1/L_{11}, \dots, 1/L_{dd}),

with, writing a = ∇log π(x), b = ∇log π(y), w = ε + ½(u_x + u_y):

* gadRWM: ∇_L log r = b εᵀ;
* gadMALA exact (y and b depend on L; H = ∇²log π(y)): with c = b − ½H L w,
  ∇_L log r = ½c u_xᵀ + ½a(Lᵀc)ᵀ + cεᵀ − ½(a + b)wᵀ;
* gadMALA fast (the paper's approximation: b held constant in L, i.e. H = 0 above):
  ∇_L log r = −½(a − b)(ε + ½(u_x − u_y))ᵀ — one O(d²) outer product (paper, supplement B).

The exact gradient is a sum of three outer products (:func:`log_ratio_factors`), so both
variants update L in one fused pass over its lower triangle (plus, for the exact one, the
Hessian at y and two matrix-vector products).

The step is RMSprop (:mod:`ckam_bench.adaptation.rmsprop`): G ← 0.9G + 0.1g²,
L ← L + η/(1 + √G)·g elementwise (η = 5e-5 gadRWM, 1.5e-4 gadMALA; 1e-5 for MNIST in the
paper). Then β ← β[1 + ρ_β(1[accepted] − α*)] (ρ_β = 0.02, α* = 0.25 gadRWM / 0.55 gadMALA,
β₀ = 1) and the usual MH accept/reject with the proposal made from the L *before* the update.
L₀ = (``init_scale``/√d)·I (0.1/√d in the paper). A diagonal entry that an update would push to
≤ 0 is halved instead (a guard the paper does not need to state: the RMSprop step is at most
η per entry and β/L_ii pushes small entries up). A proposal whose log density or gradient is not
finite is a rejection (α = 0, so β shrinks) without a gradient: instead of the step, L is
multiplied by :data:`~ckam_bench.samplers.base.NONFINITE_SHRINK` (0.99), so a run of such
proposals shrinks the proposal (the entropy term alone would grow it). After burn-in L is fixed: gadRWM is then a
random walk with steps Lε (it needs no gradient: density evaluations only), gadMALA a
preconditioned MALA costing two O(d²) products per iteration (u_y is reused as the next u_x).

Every gradient is counted (``target.n_grad``), every Hessian in ``target.n_hessian``; gadMALA
exact evaluates the Hessian at y only when log r < 0 (the only case that uses it). A target
without a Hessian makes gadMALA exact decline it (``skip``).

Compiled loops as in :mod:`ckam_bench.samplers.hamiltonian`: the kernel's body is the Python
loop ``_gad_loop``, compiled when the target has ``jit_log_density_and_grad()`` and
``CKAM_BENCH_JIT`` is not 0; the exact variant's burn-in also needs ``jit_hessian_log_density()``
(without it the burn-in runs in Python and the sampling phase, which needs no Hessian,
compiled). A target without a compiled density runs ``_gad_steps``: its Python density-and-gradient
and, between evaluations, one compiled :func:`_gad_iteration` (the same chain to the bit; gadMALA
exact's burn-in, which calls the Python Hessian, runs the Python loop).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ckam_bench import jit
from ckam_bench.adaptation import rmsprop
from ckam_bench.samplers.base import NONFINITE_SHRINK, ChainState
from ckam_bench.samplers.hamiltonian import (
    GradientSampler,
    _all_finite,
    _block,
    check_burn_in,
    check_fraction,
    check_positive,
    counted_density_and_grad,
    counted_hessian,
    start_with_gradient,
)
from ckam_bench.samplers.random_walk import metropolis_walk, predraw, warm_up_walk
from ckam_bench.targets.base import Target

RWM, MALA_FAST, MALA_EXACT = 0, 1, 2
_RMS_DECAY = 0.9


@jit.jitable
def log_ratio_factors(mode, L, eps, a, b, u_x, u_y, hess, lefts, rights):
    """∇_L log r as a sum of k ≤ 3 outer products Σ_r lefts[r] rights[r]ᵀ (written into the
    (3, d) arrays; returns k) for ``mode`` RWM, MALA_FAST or MALA_EXACT at a proposal made with
    ε from x (gradient a, u_x = Lᵀa) to y (gradient b, u_y = Lᵀb, Hessian ``hess`` used by
    MALA_EXACT only). The exact gradient ½c u_xᵀ + ½a(Lᵀc)ᵀ + cεᵀ − ½(a + b)wᵀ regroups as
    c(½u_x + ε)ᵀ + a(½Lᵀc)ᵀ − ½(a + b)wᵀ."""
    if mode == RWM:
        lefts[0] = b
        rights[0] = eps
        return 1
    if mode == MALA_FAST:
        lefts[0] = -0.5 * (a - b)
        rights[0] = eps + 0.5 * (u_x - u_y)
        return 1
    w = eps + 0.5 * (u_x + u_y)
    c = b - 0.5 * (hess @ (L @ w))
    lefts[0] = c
    rights[0] = 0.5 * u_x + eps
    lefts[1] = a
    rights[1] = 0.5 * (L.T @ c)
    lefts[2] = -0.5 * (a + b)
    rights[2] = w
    return 3


def log_ratio_gradient(mode, L, eps, a, b, u_x, u_y, hess):
    """∇_L log r as a full matrix (the caller keeps its lower part); see :func:`log_ratio_factors`."""
    d = a.shape[0]
    lefts, rights = np.zeros((3, d)), np.zeros((3, d))
    k = log_ratio_factors(mode, L, eps, a, b, u_x, u_y, hess, lefts, rights)
    return lefts[:k].T @ rights[:k]


@jit.jitable
def log_ratio(mode, logp_x, logp_y, eps, u_x, u_y):
    """log r of the proposal (no Hastings term for gadRWM)."""
    if mode == RWM:
        return logp_y - logp_x
    w = eps + 0.5 * (u_x + u_y)
    return logp_y - logp_x - 0.5 * np.dot(w, w) + 0.5 * np.dot(eps, eps)


def low_rank_step(L, moment, lefts, rights, k, beta, eta, decay):
    """RMSprop step of L along g = [Σ_{r<k} lefts[r] rights[r]ᵀ]_lower + β diag(1/L_ii), in place
    (the Python version, vectorised: ``np.tril`` with a cached mask, the diagonal as a strided
    view — a plain-numpy target's Python loop spends half its time here)."""
    d = L.shape[0]
    grad = np.where(_lower_mask(d), lefts[:k].T @ rights[:k], 0.0)
    grad.ravel()[:: d + 1] += beta / L.diagonal()
    rmsprop.step(L, moment, grad, eta, decay)


@functools.lru_cache(maxsize=8)
def _lower_mask(d: int) -> np.ndarray:
    return np.tri(d, dtype=bool)


if jit.AVAILABLE:
    from numba.extending import overload

    @overload(low_rank_step, jit_options={"error_model": "numpy"})
    def _low_rank_step_compiled(L, moment, lefts, rights, k, beta, eta, decay):
        """The same step as one pass over the lower triangle, row by row (no d × d temporaries),
        with the k = 1 loop (gadRWM, gadMALA fast) written apart from the k = 3 one (exact).
        ``error_model="numpy"``: no zero-division branch, so LLVM vectorises each row (the
        square roots and divisions several at a time, each still correctly rounded: the same L
        to the bit as the scalar loop, 5× faster at d = 100)."""

        def step(L, moment, lefts, rights, k, beta, eta, decay):
            d = L.shape[0]
            c = 1.0 - decay
            for i in range(d):
                Li, Mi = L[i], moment[i]
                if k == 0:  # log r ≥ 0: the gradient is the entropy term alone (the diagonal)
                    for j in range(i):
                        m = decay * Mi[j]
                        Mi[j] = m
                elif k == 1:
                    a, r0 = lefts[0, i], rights[0]
                    for j in range(i):
                        g = a * r0[j]
                        m = decay * Mi[j] + c * g * g
                        Mi[j] = m
                        Li[j] += eta / (1.0 + math.sqrt(m)) * g
                else:
                    a0, a1, a2 = lefts[0, i], lefts[1, i], lefts[2, i]
                    r0, r1, r2 = rights[0], rights[1], rights[2]
                    for j in range(i):
                        g = 0.0
                        g += a0 * r0[j]
                        g += a1 * r1[j]
                        g += a2 * r2[j]
                        m = decay * Mi[j] + c * g * g
                        Mi[j] = m
                        Li[j] += eta / (1.0 + math.sqrt(m)) * g
                g = beta / Li[i]
                for r in range(k):
                    g += lefts[r, i] * rights[r, i]
                m = decay * Mi[i] + c * g * g
                Mi[i] = m
                Li[i] += eta / (1.0 + math.sqrt(m)) * g

        return step


@jit.jitable
def _gad_proposal(mode, x, L, u_x, eps):
    """y = x + Lε (gadRWM) or x + L(½u_x + ε) (gadMALA)."""
    if mode == RWM:
        return x + L @ eps
    return x + L @ (0.5 * u_x + eps)


def _gad_iteration(i, logp_y, y, gy, mode, w, L, moment, lefts, rights, s, t0, burn_in, z, log_u, params, samples,
                   accepted, records):
    """Iteration i of :func:`_gad_loop` after the evaluation of its proposal y (log π(y) =
    logp_y, ∇log π(y) = gy), for the modes and phases that call no Hessian (not gadMALA exact's
    burn-in): the accept step, the adaptation of L (``moment``, in place) and β while t < burn_in
    (``params``: η, ρ_β, α*), the records, the next proposal (y after the last). State in place:
    w = [x, ∇log π(x), u_x, u_y, L's diagonal before the step], s = [log π(x), β, states
    collected, non-finite proposals]."""
    x, g, u_x, u_y, diag_before = w[0], w[1], w[2], w[3], w[4]
    d = x.shape[0]
    adapting = t0 + i < burn_in
    eps = z[i]
    finite = math.isfinite(logp_y) and _all_finite(gy)
    if finite:
        if mode != RWM:
            u_y[:] = L.T @ gy
        r = log_ratio(mode, s[0], logp_y, eps, u_x, u_y)
    else:
        r = -math.inf
    alpha, accept = jit.record_accept(r, log_u, i, s, 3, accepted, records)
    if adapting and not finite:  # α = 0 and no gradient: L shrinks (base.NONFINITE_SHRINK)
        L *= NONFINITE_SHRINK
    elif adapting:
        for j in range(d):
            diag_before[j] = L[j, j]
        k = 0
        if r < 0.0:  # min{0, log r} has a gradient (no Hessian: RWM or MALA_FAST)
            k = log_ratio_factors(mode, L, eps, g, gy, u_x, u_y, L, lefts, rights)
        low_rank_step(L, moment, lefts, rights, k, s[1], params[0], _RMS_DECAY)
        for j in range(d):
            if not L[j, j] > 0.0:
                L[j, j] = 0.5 * diag_before[j]
    if adapting:
        s[1] = s[1] * (1.0 + params[1] * ((1.0 if accept else 0.0) - params[2]))
    if accept:
        x[:] = y
        s[0] = logp_y
        g[:] = gy
        u_x[:] = u_y
    if adapting and mode != RWM:  # u_x = Lᵀ∇log π(x) with the L the next iteration uses
        u_x[:] = L.T @ g
    records[1, i] = s[0]
    if not adapting:
        samples[int(s[2])] = x
        s[2] += 1.0
    if i + 1 < z.shape[0]:
        return _gad_proposal(mode, x, L, u_x, z[i + 1])
    return y


def _gad_steps(f, mode, x, logp, g, L, moment, beta, t0, burn_in, z, log_u, params):
    """:func:`_gad_loop` for a target without a compiled density (no Hessian called): its Python
    density-and-gradient and, between evaluations, one call of the compiled :func:`_gad_iteration`
    (the same operations: the same chain, to the bit)."""
    n, d = z.shape
    samples, accepted, records = np.empty((n, d)), np.zeros(n, dtype=np.bool_), np.empty((2, n))
    w = np.vstack([x, g, L.T @ g, np.zeros((2, d))])
    lefts, rights, gy = np.zeros((3, d)), np.zeros((3, d)), np.empty(d)
    s = np.array([logp, beta, 0.0, 0.0])
    y = _gad_proposal(mode, w[0], L, w[2], z[0]) if n > 0 else x
    for i in range(n):
        y = _GAD_ITERATION(i, f(y, gy), y, gy, mode, w, L, moment, lefts, rights, s, t0, burn_in, z, log_u, params,
                           samples, accepted, records)
    return w[0], s[0], w[1], s[1], samples, int(s[2]), accepted, records[0], records[1], n, 0, int(s[3])


_GAD_ITERATION = jit.helper(_gad_iteration)


def _gad_loop(f, h, mode, x, logp, g, L, moment, beta, t0, burn_in, z, log_u, eta, rho_beta, target_accept):
    """n iterations from global iteration ``t0``: adaptation of L (in place, with the RMSprop
    moment) and β while t < burn_in, then fixed-L gadMALA (gadRWM's sampling phase runs
    :func:`~ckam_bench.samplers.random_walk.metropolis_walk` instead). Returns (x, logp, g,
    beta, samples, n_collected, accepted, accept_prob, logps, n_evals, n_hessian, n_nonfinite)."""
    n, d = z.shape
    samples = np.empty((n, d))
    accepted = np.zeros(n, dtype=np.bool_)
    accept_prob, logps = np.empty(n), np.empty(n)
    x, g = x.copy(), g.copy()
    gy = np.empty(d)
    hess = np.zeros((d, d))
    u_x = L.T @ g
    u_y = np.zeros(d)
    lefts, rights, diag_before = np.zeros((3, d)), np.zeros((3, d)), np.empty(d)
    n_collected = n_evals = n_hessian = n_nonfinite = 0
    for i in range(n):
        t = t0 + i
        adapting = t < burn_in
        eps = z[i]
        if mode == RWM:
            y = x + L @ eps
        else:
            y = x + L @ (0.5 * u_x + eps)
        logp_y = f(y, gy)
        n_evals += 1
        finite = math.isfinite(logp_y) and _all_finite(gy)
        if finite:
            if mode != RWM:
                u_y = L.T @ gy
            r = log_ratio(mode, logp, logp_y, eps, u_x, u_y)
        else:
            r = -math.inf
        alpha = jit.acceptance(r)
        n_nonfinite += not r > -math.inf  # NaN or −∞
        accept = log_u[i] < r
        accepted[i] = accept
        accept_prob[i] = alpha
        if adapting and not finite:  # α = 0 and no gradient: L shrinks (base.NONFINITE_SHRINK)
            L *= NONFINITE_SHRINK
        elif adapting:
            for j in range(d):
                diag_before[j] = L[j, j]
            k = 0
            if r < 0.0:  # min{0, log r} has a gradient
                if mode == MALA_EXACT:
                    h(y, hess)
                    n_hessian += 1
                k = log_ratio_factors(mode, L, eps, g, gy, u_x, u_y, hess, lefts, rights)
            low_rank_step(L, moment, lefts, rights, k, beta, eta, _RMS_DECAY)
            for j in range(d):
                if not L[j, j] > 0.0:
                    L[j, j] = 0.5 * diag_before[j]
        if adapting:
            beta = beta * (1.0 + rho_beta * ((1.0 if accept else 0.0) - target_accept))
        if accept:
            x = y
            logp = logp_y
            g[:] = gy
            u_x[:] = u_y
        if adapting and mode != RWM:  # u_x = Lᵀ∇log π(x) with the L the next iteration uses
            u_x = L.T @ g
        logps[i] = logp
        if not adapting:
            samples[n_collected] = x
            n_collected += 1
    return (x, logp, g, beta, samples, n_collected, accepted, accept_prob, logps, n_evals, n_hessian,
            n_nonfinite)


_I64 = jit.types.int64 if jit.AVAILABLE else None
_gad_kernel = jit.gradient_kernel(_I64, jit.A1, jit.F8, jit.A1, jit.A2, jit.A2, jit.F8, _I64, _I64, jit.A2,
                                  jit.A1, jit.F8, jit.F8, jit.F8, hessian=True)(_gad_loop) if jit.AVAILABLE else None


def _no_hessian(x, hess_out):
    return 0.0


_NO_HESSIAN = jit.CompiledHessian(jit.numba.njit(_no_hessian)) if jit.AVAILABLE else None


@dataclass(kw_only=True)
class GadState(ChainState):
    """State of gadRWM / gadMALA (``x``, ``logp``, ``t`` as in ChainState)."""

    grad: np.ndarray
    """∇log π at ``x`` (NaN after gadRWM's burn-in: its random walk needs no gradient)."""
    chol: np.ndarray
    """The proposal factor L (lower triangular, positive diagonal), shape (d, d)."""
    moment: np.ndarray
    """RMSprop's running mean of squared gradients G, shape (d, d)."""
    beta: float
    """Entropy weight β."""


class _GradientAdaptive(GradientSampler):
    """The shared sampler of the family; subclasses set ``_mode`` and their defaults."""

    _mode = RWM
    MAX_DIM = 5000  # L and G are dense d × d

    def __init__(self, burn_in: int, learning_rate: float, target_accept: float, beta_rate: float = 0.02,
                 init_scale: float = 0.1):
        self.burn_in = check_burn_in(burn_in)
        self.learning_rate = check_positive("learning_rate", learning_rate)
        self.target_accept = check_fraction("target_accept", target_accept)
        self.beta_rate = check_positive("beta_rate", beta_rate)
        self.init_scale = check_positive("init_scale", init_scale)

    def warm_up(self, target: Target) -> None:
        density = jit.compiled_log_density_and_grad(target)
        if self._mode == RWM:
            warm_up_walk(target)
        x, d = np.array(target.start, dtype=float), target.dim
        if density is not None:  # (no Hessian is called after burn-in)
            _gad_kernel(density, _NO_HESSIAN, self._mode, x, 0.0, np.zeros(d), np.eye(d), np.zeros((d, d)), 1.0, 0,
                        0, np.zeros((1, d)), np.zeros(1), 1e-4, 0.02, 0.5)
        elif jit.enabled():  # the compiled steps of the Python loop (burn-in: the adaptation compiled too)
            _GAD_ITERATION(0, 0.0, x, x.copy(), self._mode, np.zeros((5, d)), np.eye(d),
                           np.zeros((d, d)), np.zeros((3, d)), np.zeros((3, d)), np.zeros(4), 0, 1, np.zeros((1, d)),
                           np.zeros(1), np.ones(3), np.zeros((1, d)), np.zeros(1, dtype=bool), np.zeros((2, 1)))

    def _hessian_for(self, target: Target):
        return _NO_HESSIAN

    def init(self, target: Target, x0, rng: np.random.Generator) -> GadState:
        d = target.dim
        if d > self.MAX_DIM:
            raise ValueError(f"target.dim must be <= {self.MAX_DIM} for {self.name} (dense d x d factor), got {d}")
        self._bind(target, rng)
        # without a compiled Hessian (gadMALA exact on such a target) the burn-in runs in Python
        # and the fixed-L sampling phase, which needs none, compiled
        self._compiled_hessian = self._hessian_for(target) if self._compiled is not None else None
        x, logp, grad = start_with_gradient(target, x0)
        return GadState(x=x, logp=logp, t=0, grad=grad, chol=(self.init_scale / math.sqrt(d)) * np.eye(d),
                        moment=np.zeros((d, d)), beta=1.0)

    def advance(self, state: GadState, n: int):
        d = self.target.dim
        z, log_u = predraw(self.rng, n, d)
        L, moment = np.array(state.chol, dtype=float), np.array(state.moment, dtype=float)
        phase = self._phase(state.t, n)
        burn = int(min(n, max(0, self.burn_in - state.t)))  # burn-in iterations of this block
        n_adapt = n if self._mode != RWM else burn
        x, logp, g, beta = np.ascontiguousarray(state.x, dtype=float), float(state.logp), state.grad, state.beta
        parts = []
        # (first, last) iterations per loop call: the burn-in apart when it needs a Python Hessian
        python_hessian = self._mode == MALA_EXACT and self._compiled_hessian is None
        split = python_hessian and (self._compiled is not None or self._compiled_steps) and 0 < burn < n_adapt
        for lo, hi in ((0, burn), (burn, n_adapt)) if split else ((0, n_adapt),):
            if hi <= lo:
                continue
            hessian_now = python_hessian and state.t + lo < self.burn_in
            args = (self._mode, x, logp, np.ascontiguousarray(g, dtype=float), L, moment, float(beta),
                    int(state.t + lo), self.burn_in, np.ascontiguousarray(z[lo:hi]), log_u[lo:hi])
            params = (self.learning_rate, self.beta_rate, self.target_accept)
            if self._compiled is not None and not hessian_now:
                h = self._compiled_hessian if self._compiled_hessian is not None else _NO_HESSIAN
                out = _gad_kernel(self._compiled, h, *args, *params)
            elif self._compiled_steps and not hessian_now:
                out = _gad_steps(counted_density_and_grad(self.target), *args, np.array(params))
            else:
                out = _gad_loop(counted_density_and_grad(self.target), counted_hessian(self.target), *args, *params)
            (x, logp, g, beta, samples, k, accepted, accept_prob, logps, n_evals, n_hess, n_nonfinite) = out
            if self._compiled is not None and not hessian_now:  # the Python loop counted through the target's API
                self._count(n_evals)
                self.target.n_hessian += int(n_hess)
            parts.append((samples[:k], accepted, accept_prob, logps, n_nonfinite))
        if n_adapt < n:  # gadRWM after burn-in: a random walk with steps Lε, no gradients
            logp0 = logp
            x, logp, samples, lr, n_nonfinite = metropolis_walk(
                self.target, jit.compiled_log_density(self.target), x, logp, z[n_adapt:] @ L.T, log_u[n_adapt:])
            moved = log_u[n_adapt:] < lr
            logps = logp0 + np.cumsum(np.where(moved, lr, 0.0))
            parts.append((samples, moved, np.exp(np.minimum(lr, 0.0)), logps, n_nonfinite))
            g = np.full(d, np.nan)  # the walk needs no gradient and does not track it
        samples, accepted, accept_prob, logps = (np.concatenate([p[j] for p in parts]) for j in range(4))
        # the recorded step size: the mean diagonal of L after the block
        block = _block(phase, samples, accepted, accept_prob, np.full(n, float(np.mean(np.diag(L)))), logps,
                       sum(p[4] for p in parts))
        new = GadState(x=x, logp=float(logp), t=state.t + n, grad=np.asarray(g, dtype=float), chol=L,
                       moment=moment, beta=float(beta))
        return new, block

    def trace_columns(self, state: GadState) -> dict:
        return {"beta": float(state.beta), "L_diag": np.diag(state.chol).copy()}

    def describe(self) -> dict:
        return {**super().describe(), "learning_rate": self.learning_rate, "target_accept": self.target_accept,
                "beta_rate": self.beta_rate, "init_scale": self.init_scale}


class GadRWM(_GradientAdaptive):
    """gadRWM: random walk y = x + Lε with L adapted by the gradient of F during burn-in.

    burn_in : adaptation iterations (not collected); L is fixed afterwards.
    learning_rate : RMSprop's η (paper: 5e-5).
    target_accept : α* of the β recursion (paper: 0.25).
    beta_rate : ρ_β (paper: 0.02).
    init_scale : L₀ = init_scale/√d · I (paper: 0.1).
    """

    name = "gadrwm"
    _mode = RWM

    def __init__(self, burn_in: int = 20000, learning_rate: float = 5e-5, target_accept: float = 0.25,
                 beta_rate: float = 0.02, init_scale: float = 0.1):
        super().__init__(burn_in, learning_rate, target_accept, beta_rate, init_scale)


class GadMALAFast(_GradientAdaptive):
    """gadMALA fast: preconditioned MALA, L adapted with ∇log π(y) held constant in L (O(d²)).

    Keys as :class:`GadRWM`; paper: learning_rate 1.5e-4 (1e-5 for MNIST), target_accept 0.55.
    """

    name = "gadmala_fast"
    _mode = MALA_FAST

    def __init__(self, burn_in: int = 20000, learning_rate: float = 1.5e-4, target_accept: float = 0.55,
                 beta_rate: float = 0.02, init_scale: float = 0.1):
        super().__init__(burn_in, learning_rate, target_accept, beta_rate, init_scale)


class GadMALAExact(_GradientAdaptive):
    """gadMALA exact: as gadMALA fast, with the exact gradient of log r through ∇log π(y) (the
    target's Hessian at y). Declines targets without a Hessian."""

    name = "gadmala_exact"
    _mode = MALA_EXACT

    def __init__(self, burn_in: int = 20000, learning_rate: float = 1.5e-4, target_accept: float = 0.55,
                 beta_rate: float = 0.02, init_scale: float = 0.1):
        super().__init__(burn_in, learning_rate, target_accept, beta_rate, init_scale)

    def _hessian_for(self, target: Target):
        return jit.compiled_hessian(target)

    def skip(self, target: Target) -> tuple[bool, str]:
        skipped, why = super().skip(target)
        if skipped:
            return skipped, why
        if not target.has_hessian:
            return True, f"gadmala_exact needs the Hessian of the log density; target {target.name!r} has none"
        return False, ""
