r"""Divergence-minimisation (DM) sampler and Scout MCMC (Dharamshi, Ngo & Rosenthal; SPEC §3).

**DM** (:class:`DivergenceMinimisation`, Algorithm 1) — a random walk whose Cholesky factor L
follows one stochastic gradient-ascent step per iteration on a lower bound of
log[exp(−β KL(q‖π)) · E_q α]:

.. math::
    y = x + L\varepsilon_1,\qquad \text{accept iff } \log u < \log\pi(y) - \log\pi(x),

    G = \beta\,\mathrm{diag}(1/L_{ii}) + \frac1J\sum_{j=1}^J c_j\,\nabla\log\pi(y_j)\,\varepsilon_j^\top
    \ \text{(lower triangle)},\quad y_j = x + L\varepsilon_j,\quad
    c_j = \beta + \mathbb 1[\log\pi(y_j) < \log\pi(x)],

    L \leftarrow L + \gamma_t\,\mathrm{clip}(G, \pm h),

with the proposal's own ε₁ among the J draws, G computed at the current x before the accept
step, and L₀ = σI (σ = 2). Everything is in log space (the authors' code divides by raw
densities and underflows); a draw whose log density or gradient is not finite contributes no
term (the authors skip zero densities) and counts as a rejection: while L adapts (γ_t > 0), m
such draws out of J multiply L by 0.99^(m/J) (:data:`~ckam_bench.samplers.base.NONFINITE_SHRINK`),
since the entropy term alone would grow L. Costs J density and J gradient evaluations per
iteration (both counted; the scout's step below calls the same density-and-gradient function, so
an adaptive Scout iteration counts J + 1 of each). Defaults β = 0.2, γ = 0.002, h = 10/γ₀, J = 10.

Validity. With a constant γ (the paper) the adaptation never stops, and the chain is not
guaranteed to target π; measured from exact draws of banana_dm (32 chains × 8000 iterations),
its E[x₂] drifts from −8 to −12.8 and Var[x₂] from 166 to 251 (docs/papers/divergence.md). That is the paper preset
(``conf/preset/dm_*/dm.yaml``, marked non-diminishing). ``rate`` takes any schedule: the default
config adapts with γ = 0.002 during the first 5000 iterations only (``Window``) and collects
after them (``burnin``), a fixed random walk N(x, LLᵀ) from then on (finite adaptation); a
decaying rate (``PowerDecay``) is diminishing adaptation. ``gamma_shrink`` < 1 multiplies γ by
that factor at every rejection (the paper's horseshoe variant, "the step size shrinks upon
rejection"; our reading: γ is the step size of Algorithm 1's inputs).

**Finite DM** (:class:`FiniteDivergenceMinimisation`, Algorithm 2) — DM for the first F
iterations, keeping a uniform random subset S of ``bank_size`` pairs (x_t, L_t) (reservoir
sampling, so memory stays bounded); then a non-adaptive Metropolis–Hastings chain with

.. math::
    q(y\mid x) = N(y; x, L_{n(x)}L_{n(x)}^\top),\qquad
    \alpha = \min\Big\{1, \frac{\pi(y)\,q(x\mid y)}{\pi(x)\,q(y\mid x)}\Big\},

where n(z) is the stored state nearest to z: the reverse density q(x | y) uses the factor
nearest to **y** (the authors' ``DMfinite`` uses the one nearest to x, which makes the ratio
wrong; ``reverse_factor="current"`` reproduces that bug for tests and comparison only). The
nearest neighbour comes from a ``scipy.spatial.cKDTree`` built once over S, flattened into
arrays and searched by a compiled depth-first search (exact, O(log |S|) per query). The
phase-two chain is a fixed MH kernel, hence π-invariant (finite adaptation).

**Scout MCMC** (:class:`Scout`, :class:`FiniteScout`, Algorithms 3–4) — the DM (or finite DM)
chain x on π plus a scout chain s on π^τ (τ = 0.1) with random-walk proposals
N(s, σ_s I) (σ_s = 9 is a *variance*, as in the paper's N(s_t, σ_s 𝟙) and the authors' code),
and after the moves of iteration t with t ≡ 0 (mod k) (k = 20) a swap of x and s accepted with

.. math::
    \alpha_{swap} = \min\Big\{1, \frac{\pi(s)\,\pi(x)^\tau}{\pi(x)\,\pi(s)^\tau}\Big\}
    = \min\{1, \exp[(1-\tau)(\log\pi(s) - \log\pi(x))]\},

the tempering swap for π ⊗ π^τ (the paper prints garbled versions). Only the main chain is
collected. After a swap the main chain keeps its factor L (Scout) or looks up n(x) (finite).

Random numbers: each iteration consumes one row of a pre-drawn (n, w) standard-normal block
(J·d steps, the accept uniform log Φ(z), then the scout's d steps and two uniforms, and one
uniform for the reservoir), so a chain does not depend on how the runner splits it into blocks.

Compiled loops: with numba, the loops below are compiled for the target's
``jit_log_density_and_grad()`` (adaptive phases) and ``jit_log_density()`` (MH phase);
``CKAM_BENCH_JIT=0`` or a target without them runs the same source as Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import log_ndtr

from ckam_bench import jit
from ckam_bench.samplers.base import NONFINITE_SHRINK, Block, ChainState, Sampler, check_start
from ckam_bench.schedules import Constant, Window
from ckam_bench.targets.base import Target

try:
    import numba
    from numba import types
    from numba.extending import typeof_impl
except ImportError:  # numba is optional
    numba = None

_LOG_2PI = math.log(2.0 * math.pi)
MAX_BANK_FLOATS = 25_000_000
"""Upper bound on bank_size · d² (200 MB of stored factors)."""
MAX_DRAWS = 1000

# ---------------------------------------------------------------------------- compiled density + gradient
if numba is not None:
    DENSITY_GRAD_SIGNATURE = types.float64(types.float64[::1], types.float64[::1])
    DENSITY_GRAD = types.FunctionType(DENSITY_GRAD_SIGNATURE)
    _Protocol = types.WrapperAddressProtocol
else:
    DENSITY_GRAD_SIGNATURE = DENSITY_GRAD = None
    _Protocol = object


class CompiledDensityGrad(_Protocol):
    """A target's compiled ``f(x, grad_out) -> log π(x)`` for kernels (the address of a
    ``numba.cfunc`` copy, as :class:`ckam_bench.jit.CompiledDensity` does for densities)."""

    def __init__(self, jitted):
        self.jitted = jitted
        self._cfunc = numba.cfunc(DENSITY_GRAD_SIGNATURE)(jitted.py_func)

    def __wrapper_address__(self) -> int:
        return self._cfunc.address

    def signature(self):
        return DENSITY_GRAD_SIGNATURE

    def __call__(self, x, grad_out) -> float:
        return self.jitted(x, grad_out)


if numba is not None:

    @typeof_impl.register(CompiledDensityGrad)
    def _typeof_compiled_density_grad(value, context):
        return DENSITY_GRAD


_WRAPPED: dict = {}


def compiled_density_and_grad(target: Target):
    """The target's compiled density-and-gradient when compiled loops are on, else None."""
    if not jit.enabled():
        return None
    make = getattr(target, "jit_log_density_and_grad", None)
    jitted = make() if make is not None else None
    if jitted is None:
        return None
    wrapped = _WRAPPED.get(jitted)
    if wrapped is None:
        wrapped = _WRAPPED[jitted] = CompiledDensityGrad(jitted)
    return wrapped


class _PythonDensityGrad:
    """Uncounted ``f(x, grad_out)`` from a target's Python primitives (the Python loops)."""

    def __init__(self, target: Target):
        self.target = target

    def __call__(self, x, grad_out):
        logp = self.target._log_density(x)
        if math.isfinite(logp):
            grad_out[:] = self.target._grad_log_density(x)
        else:
            grad_out[:] = math.nan
        return logp


class _PythonDensity:
    def __init__(self, target: Target):
        self.target = target

    def __call__(self, x):
        return self.target._log_density(x)


def _compile(fn, signature):
    """``fn`` compiled for one explicit signature with numba (a :class:`ckam_bench.jit.Kernel`:
    disk cache when possible, calls recorded for the run's provenance)."""
    kern = jit.Kernel(fn, signature[1:], signature[:1])
    kern.compile()
    return kern


# ---------------------------------------------------------------------------- shared helpers
@jit.helper
def _log_uniform(z):
    """log Φ(z) for a standard normal z (a log-uniform), stable in the lower tail."""
    if z > -5.0:
        return math.log(0.5 * math.erfc(-z / math.sqrt(2.0)))
    # asymptotic series of log Φ for z → −∞ (relative error < 1e-7 at z = −5)
    z2 = z * z
    return -0.5 * z2 - math.log(-z) - 0.5 * math.log(2.0 * math.pi) + math.log(
        1.0 - 1.0 / z2 + 3.0 / (z2 * z2) - 15.0 / (z2 * z2 * z2))


@jit.helper
def _uniform(z):
    """Φ(z) in (0, 1) for a standard normal z."""
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@jit.helper
def _lower_step(x, L, eps, out):
    """out = x + L eps (L lower triangular)."""
    d = x.shape[0]
    for a in range(d):
        s = 0.0
        for b in range(a + 1):
            s += L[a, b] * eps[b]
        out[a] = x[a] + s


@jit.helper
def _swap(x, logp, s, logp_s, z, tau):
    """The tempering swap of x (on π) and s (on π^τ), in place; returns (logp, logp_s, swapped)."""
    if _log_uniform(z) < (1.0 - tau) * (logp_s - logp):
        for a in range(x.shape[0]):
            tmp = x[a]
            x[a] = s[a]
            s[a] = tmp
        return logp_s, logp, True
    return logp, logp_s, False


# ---------------------------------------------------------------------------- adaptive (DM) loop
def _dm_loop(f, x, logp, L, s, logp_s, normals, rates, beta, clip, n_draws, gamma_mult, shrink,
             scout, tau, scout_sd, swap_every, t0, bank_x, bank_L, bank_seen):
    """n iterations of DM (with the scout chain when ``scout``), updating x, L, s, the bank in
    place. Row i of ``normals``: J·d steps, accept, [scout d steps, scout accept, swap],
    [reservoir]. Returns (logp, logp_s, gamma_mult, bank_seen, samples, log_ratio, accepted,
    logps, scales, n_nonfinite, n_skipped, swaps_tried, swaps_accepted)."""
    n = normals.shape[0]
    d = x.shape[0]
    samples = np.empty((n, d))
    log_ratio = np.empty(n)
    accepted = np.zeros(n, dtype=np.bool_)
    logps = np.empty(n)
    scales = np.empty(n)
    y = np.empty(d)
    yj = np.empty(d)
    g = np.empty(d)
    gy = np.empty(d)
    eps = np.empty(d)
    G = np.empty((d, d))
    work = np.empty(d)
    scratch = np.empty(d)
    bank_size = bank_x.shape[0]
    n_nonfinite = 0
    n_skipped = 0
    swaps_tried = 0
    swaps_accepted = 0
    inv_j = 1.0 / n_draws
    for i in range(n):
        row = normals[i]
        # proposal y = x + L ε₁ (ε₁ is the first of the J gradient draws)
        for a in range(d):
            eps[a] = row[a]
        _lower_step(x, L, eps, y)
        logp_y = f(y, gy)
        # G = β diag(1/L_ii) + (1/J) Σ c_j ∇log π(y_j) ε_jᵀ (lower triangle)
        for a in range(d):
            for b in range(d):
                G[a, b] = 0.0
            G[a, a] = beta / L[a, a]
        n_bad = 0
        for j in range(n_draws):
            if j == 0:
                lp = logp_y
                for a in range(d):
                    g[a] = gy[a]
            else:
                for a in range(d):
                    eps[a] = row[j * d + a]
                _lower_step(x, L, eps, yj)
                lp = f(yj, g)
            ok = math.isfinite(lp)
            for a in range(d):
                ok = ok and math.isfinite(g[a])
            if not ok:
                n_bad += 1
                continue
            c = beta + 1.0 if lp < logp else beta
            c *= inv_j
            for a in range(d):
                for b in range(a + 1):
                    G[a, b] += c * g[a] * row[j * d + b]
        # accept step (symmetric proposal)
        if math.isfinite(logp_y):
            r = logp_y - logp
            accept = _log_uniform(row[n_draws * d]) < r
        else:
            r = -math.inf
            accept = False
            n_nonfinite += 1
        log_ratio[i] = r
        accepted[i] = accept
        if accept:
            for a in range(d):
                x[a] = y[a]
            logp = logp_y
        elif shrink < 1.0:
            gamma_mult *= shrink
        # L ← L + γ clip(G, ±h); an update leaving a zero or non-finite diagonal is skipped
        gamma = rates[i] * gamma_mult
        ok = True
        for a in range(d):
            for b in range(a + 1):
                v = G[a, b]
                if v > clip:
                    v = clip
                elif v < -clip:
                    v = -clip
                G[a, b] = L[a, b] + gamma * v
                ok = ok and math.isfinite(G[a, b])
            ok = ok and G[a, a] != 0.0
        if ok:
            for a in range(d):
                for b in range(a + 1):
                    L[a, b] = G[a, b]
        else:
            n_skipped += 1
        if n_bad > 0 and rates[i] > 0.0:  # non-finite draws: α = 0, no gradient; L shrinks
            factor = NONFINITE_SHRINK ** (n_bad * inv_j)
            for a in range(d):
                for b in range(a + 1):
                    L[a, b] *= factor
        col = n_draws * d + 1
        if scout:  # random-walk step of the scout on π^τ (the gradient goes to scratch)
            for a in range(d):
                work[a] = s[a] + scout_sd * row[col + a]
            lp = f(work, scratch)
            if math.isfinite(lp) and _log_uniform(row[col + d]) < tau * (lp - logp_s):
                for a in range(d):
                    s[a] = work[a]
                logp_s = lp
            if (t0 + i) % swap_every == 0:
                swaps_tried += 1
                logp, logp_s, swapped = _swap(x, logp, s, logp_s, row[col + d + 1], tau)
                swaps_accepted += swapped
            col += d + 2
        if bank_size > 0:  # reservoir sampling of (x_{t+1}, L_{t+1})
            slot = bank_seen
            if bank_seen >= bank_size:
                slot = int(_uniform(row[col]) * (bank_seen + 1))
            if slot < bank_size:
                for a in range(d):
                    bank_x[slot, a] = x[a]
                    for b in range(d):
                        bank_L[slot, a, b] = L[a, b]
            bank_seen += 1
        log_diag = 0.0
        for a in range(d):
            log_diag += math.log(abs(L[a, a]))
        scales[i] = math.exp(log_diag / d)
        logps[i] = logp
        for a in range(d):
            samples[i, a] = x[a]
    return (logp, logp_s, gamma_mult, bank_seen, samples, log_ratio, accepted, logps, scales, n_nonfinite,
            n_skipped, swaps_tried, swaps_accepted)


# ---------------------------------------------------------------------------- nearest stored state
def flatten_tree(points: np.ndarray, leafsize: int = 8):
    """A ``cKDTree`` over ``points`` flattened into arrays for :func:`_nearest`:
    (split_dim, split, lesser, greater, start, end, indices); split_dim −1 marks a leaf."""
    tree = cKDTree(points, leafsize=leafsize)
    split_dim, split, lesser, greater, start, end = [], [], [], [], [], []
    stack = [(tree.tree, -1, 0)]
    while stack:
        node, parent, side = stack.pop()
        k = len(split_dim)
        if parent >= 0:
            (lesser if side == 0 else greater)[parent] = k
        leaf = node.split_dim == -1 or node.lesser is None
        split_dim.append(-1 if leaf else int(node.split_dim))
        split.append(0.0 if leaf else float(node.split))
        lesser.append(-1)
        greater.append(-1)
        start.append(int(node.start_idx))
        end.append(int(node.end_idx))
        if not leaf:
            stack.append((node.greater, k, 1))
            stack.append((node.lesser, k, 0))
    as_int = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return (as_int(split_dim), np.asarray(split, float), as_int(lesser), as_int(greater), as_int(start),
            as_int(end), np.ascontiguousarray(tree.indices, dtype=np.int64))


@jit.helper
def _nearest(q, points, split_dim, split, lesser, greater, start, end, indices, stack, bounds, guess):
    """Index of the point nearest to q (Euclidean; exact depth-first search of the flattened
    k-d tree, pruning a subtree when its splitting plane is farther than the best so far).
    ``guess`` (a point index, or −1) seeds the best distance: the nearest point to the current
    state is a good first bound for a proposal close to it."""
    best = math.inf
    best_i = -1
    d = q.shape[0]
    if guess >= 0:
        best = 0.0
        for a in range(d):
            diff = q[a] - points[guess, a]
            best += diff * diff
        best_i = guess
    top = 0
    stack[0] = 0
    bounds[0] = 0.0
    while top >= 0:
        node = stack[top]
        bound = bounds[top]
        top -= 1
        if bound >= best:
            continue
        if split_dim[node] < 0:
            for k in range(start[node], end[node]):
                p = indices[k]
                dist = 0.0
                for a in range(d):
                    diff = q[a] - points[p, a]
                    dist += diff * diff
                if dist < best or (dist == best and p < best_i):
                    best = dist
                    best_i = p
            continue
        diff = q[split_dim[node]] - split[node]
        near, far = (lesser[node], greater[node]) if diff < 0.0 else (greater[node], lesser[node])
        far_bound = diff * diff
        if far_bound < bound:
            far_bound = bound
        top += 1
        stack[top] = far
        bounds[top] = far_bound
        top += 1
        stack[top] = near
        bounds[top] = bound
    return best_i


# ---------------------------------------------------------------------------- non-adaptive (MH) loop
def _mh_loop(f, x, logp, idx_x, s, logp_s, normals, log_u, points, chols, log_dets, split_dim, split, lesser,
             greater, start, end, indices, reverse_at_proposal, scout, tau, scout_sd, swap_every, t0):
    """n iterations of the nearest-factor MH chain (plus the scout chain when ``scout``).
    Row i of ``normals``: d steps, accept, [scout d steps, scout accept, swap]; ``log_u`` the
    accept column as log-uniforms (log Φ, computed outside the loop). Returns
    (logp, idx_x, logp_s, samples, log_ratio, accepted, logps, n_nonfinite, swaps_tried,
    swaps_accepted)."""
    n = normals.shape[0]
    d = x.shape[0]
    samples = np.empty((n, d))
    log_ratio = np.empty(n)
    accepted = np.zeros(n, dtype=np.bool_)
    logps = np.empty(n)
    y = np.empty(d)
    z = np.empty(d)
    work = np.empty(d)
    stack = np.empty(2 * split_dim.shape[0] + 2, dtype=np.int64)
    bounds = np.empty(2 * split_dim.shape[0] + 2)
    n_nonfinite = 0
    swaps_tried = 0
    swaps_accepted = 0
    for i in range(n):
        row = normals[i]
        L = chols[idx_x]
        norm2 = 0.0
        for a in range(d):
            s_ = 0.0
            for b in range(a + 1):
                s_ += L[a, b] * row[b]
            y[a] = x[a] + s_
            norm2 += row[a] * row[a]
        logp_y = f(y)
        if math.isfinite(logp_y):
            idx_y = _nearest(y, points, split_dim, split, lesser, greater, start, end, indices, stack, bounds,
                             idx_x)
            j = idx_y if reverse_at_proposal else idx_x
            # z = L_j⁻¹ (x − y), forward substitution
            M = chols[j]
            zz = 0.0
            for a in range(d):
                s_ = x[a] - y[a]
                for b in range(a):
                    s_ -= M[a, b] * z[b]
                z[a] = s_ / M[a, a]
                zz += z[a] * z[a]
            log_q_back = -0.5 * zz - log_dets[j]
            log_q_fwd = -0.5 * norm2 - log_dets[idx_x]
            r = logp_y - logp + log_q_back - log_q_fwd
            if not math.isfinite(r):
                r = -math.inf
            if log_u[i] < r:
                accepted[i] = True
                for a in range(d):
                    x[a] = y[a]
                logp = logp_y
                idx_x = idx_y
        else:
            r = -math.inf
            n_nonfinite += 1
        log_ratio[i] = r
        if scout:  # random-walk step of the scout on π^τ
            for a in range(d):
                work[a] = s[a] + scout_sd * row[d + 1 + a]
            lp = f(work)
            if math.isfinite(lp) and _log_uniform(row[2 * d + 1]) < tau * (lp - logp_s):
                for a in range(d):
                    s[a] = work[a]
                logp_s = lp
            if (t0 + i) % swap_every == 0:
                swaps_tried += 1
                logp, logp_s, swapped = _swap(x, logp, s, logp_s, row[2 * d + 2], tau)
                if swapped:
                    swaps_accepted += 1
                    idx_x = _nearest(x, points, split_dim, split, lesser, greater, start, end, indices, stack,
                                     bounds, -1)
        logps[i] = logp
        for a in range(d):
            samples[i, a] = x[a]
    return logp, idx_x, logp_s, samples, log_ratio, accepted, logps, n_nonfinite, swaps_tried, swaps_accepted


def _tempered_walk(f, s, logp_s, normals, tau, scout_sd):
    """Random-walk Metropolis on π^τ alone (the scout's warm-up), in place on s; row i of
    ``normals``: d steps then the accept uniform. Returns log π(s)."""
    d = s.shape[0]
    work = np.empty(d)
    scratch = np.empty(d)
    for i in range(normals.shape[0]):
        for a in range(d):
            work[a] = s[a] + scout_sd * normals[i, a]
        lp = f(work, scratch)
        if math.isfinite(lp) and _log_uniform(normals[i, d]) < tau * (lp - logp_s):
            for a in range(d):
                s[a] = work[a]
            logp_s = lp
    return logp_s


_KERNELS: dict = {}


def _kernel(name: str):
    """The compiled ``_dm_loop`` / ``_mh_loop`` (compiled once per process, disk-cached)."""
    kern = _KERNELS.get(name)
    if kern is None:
        A1, A2, F8, I8, B1 = types.float64[::1], types.float64[:, ::1], types.float64, types.int64, types.boolean
        A3 = types.float64[:, :, ::1]
        I1 = types.int64[::1]
        if name == "dm":
            sig = (DENSITY_GRAD, A1, F8, A2, A1, F8, A2, A1, F8, F8, I8, F8, F8, B1, F8, F8, I8, I8, A2, A3, I8)
            kern = _compile(_dm_loop, sig)
        elif name == "walk":
            kern = _compile(_tempered_walk, (DENSITY_GRAD, A1, F8, A2, F8, F8))
        else:
            sig = (jit.DENSITY, A1, F8, I8, A1, F8, A2, A1, A2, A3, A1, I1, A1, I1, I1, I1, I1, I1, B1, B1, F8,
                   F8, I8, I8)
            kern = _compile(_mh_loop, sig)
        _KERNELS[name] = kern
    return kern


# ---------------------------------------------------------------------------- states and samplers
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


def _count(name: str, value, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or int(value) != value:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def _positive(name: str, value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


class DivergenceMinimisation(Sampler):
    """DM sampler with perpetual adaptation (Algorithm 1; module docstring).

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
        self.beta = _positive("beta", beta)
        self.rate = _as_rate(rate)
        self.clip = 10.0 / float(self.rate(0)) if clip is None else _positive("clip", clip)
        self.init_scale = _positive("init_scale", init_scale)
        self.n_draws = _count("n_draws", n_draws, 1, MAX_DRAWS)
        gamma_shrink = float(gamma_shrink)
        if not 0.0 < gamma_shrink <= 1.0:
            raise ValueError(f"gamma_shrink must be in (0, 1], got {gamma_shrink}")
        self.gamma_shrink = gamma_shrink
        self.burnin = _count("burnin", burnin, 0)

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
        if compiled_density_and_grad(target) is not None:
            _kernel("dm")
        if self._finite and jit.compiled_log_density(target) is not None:
            _kernel("mh")

    def init(self, target: Target, x0, rng: np.random.Generator) -> DMState:
        self.target = target
        self.rng = rng
        self._f = compiled_density_and_grad(target)
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
            out = _kernel("dm")(self._f, *args)
        else:
            out = _dm_loop(_PythonDensityGrad(self.target), *args)
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
    """DM with finite adaptation (Algorithm 2; module docstring).

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
        self.adapt_iterations = _count("adapt_iterations", adapt_iterations, 0)
        self.bank_size = _count("bank_size", bank_size, 1)
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
        return int(_nearest(np.ascontiguousarray(state.x, dtype=float), points, *self._tree[3:10],
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
            out = _kernel("mh")(self._density, *args)
        else:
            out = _mh_loop(_PythonDensity(self.target), *args)
        logp, idx_x, logp_s, samples, log_ratio, accepted_flags, logps, n_nonfinite, tried, accepted = out
        self.target.n_density += n * (2 if self._scout else 1)
        new = DMState(x=x, logp=float(logp), t=state.t + n, chol=state.chol, gamma_mult=state.gamma_mult,
                      scout_x=s if self._scout else state.scout_x, scout_logp=float(logp_s),
                      swaps_tried=state.swaps_tried + int(tried), swaps_accepted=state.swaps_accepted + int(accepted),
                      n_skipped=state.n_skipped, bank_x=state.bank_x, bank_chol=state.bank_chol,
                      bank_seen=state.bank_seen, idx_x=int(idx_x))
        return new, samples, log_ratio, accepted_flags, logps, int(n_nonfinite)


class _ScoutMixin:
    """Scout chain settings shared by :class:`Scout` and :class:`FiniteScout`."""

    _scout = True

    def _scout_settings(self, tau, scout_variance, swap_every, scout_warmup):
        tau = float(tau)
        if not 0.0 < tau < 1.0:
            raise ValueError(f"tau must be in (0, 1), got {tau}")
        self.tau = tau
        self.scout_variance = _positive("scout_variance", scout_variance)
        self._scout_sd = math.sqrt(self.scout_variance)
        self.swap_every = _count("swap_every", swap_every, 1)
        self.scout_warmup = _count("scout_warmup", scout_warmup, 0)

    def describe(self) -> dict:
        return {**super().describe(), "tau": self.tau, "scout_variance": self.scout_variance,
                "swap_every": self.swap_every, "scout_warmup": self.scout_warmup}

    def warm_up(self, target: Target) -> None:
        super().warm_up(target)
        if compiled_density_and_grad(target) is not None:
            _kernel("walk")

    def init(self, target: Target, x0, rng: np.random.Generator) -> DMState:
        """As DM's, then the scout alone makes ``scout_warmup`` random-walk steps on π^τ from x₀
        (counted; the main chain does not move), so swaps start from a scout near π^τ."""
        state = super().init(target, x0, rng)
        if self.scout_warmup:
            normals = rng.standard_normal((self.scout_warmup, target.dim + 1))
            s = np.array(state.scout_x, dtype=float)
            f = self._f if self._f is not None else _PythonDensityGrad(target)
            walk = _kernel("walk") if self._f is not None else _tempered_walk
            state.scout_logp = float(walk(f, s, float(state.scout_logp), normals, self.tau, self._scout_sd))
            state.scout_x = s
            target.n_density += self.scout_warmup
            target.n_grad += self.scout_warmup  # f is the density-and-gradient
        return state


class Scout(_ScoutMixin, DivergenceMinimisation):
    """Scout MCMC with perpetual adaptation (Algorithm 3): DM main chain + scout on π^τ.

    tau : τ ∈ (0, 1), the scout's inverse temperature (0.1).
    scout_variance : σ_s > 0, the scout's proposal N(s, σ_s I) (9).
    swap_every : k ≥ 1, a swap is attempted after iterations t ≡ 0 (mod k) (20).
    scout_warmup : steps the scout makes alone on π^τ before the first iteration (0: s₀ = x₀,
        the paper's start).
    The other arguments are DM's. Only the main chain is collected.
    """

    name = "scout"

    def __init__(self, beta: float = 0.2, rate=0.002, clip: float | None = None, init_scale: float = 2.0,
                 n_draws: int = 10, gamma_shrink: float = 1.0, burnin: int = 0, tau: float = 0.1,
                 scout_variance: float = 9.0, swap_every: int = 20, scout_warmup: int = 0):
        super().__init__(beta, rate, clip, init_scale, n_draws, gamma_shrink, burnin)
        self._scout_settings(tau, scout_variance, swap_every, scout_warmup)


class FiniteScout(_ScoutMixin, FiniteDivergenceMinimisation):
    """Scout MCMC with finite adaptation (Algorithm 4): finite DM main chain + scout on π^τ.

    Arguments as :class:`FiniteDivergenceMinimisation` plus ``tau``, ``scout_variance``,
    ``swap_every``, ``scout_warmup`` as :class:`Scout`. Only the main chain is collected.
    """

    name = "scout_finite"

    def __init__(self, beta: float = 0.2, rate=0.002, clip: float | None = None, init_scale: float = 2.0,
                 n_draws: int = 10, gamma_shrink: float = 1.0, burnin: int = 0, adapt_iterations: int = 20000,
                 bank_size: int = 1000, reverse_factor: str = "proposal", tau: float = 0.1,
                 scout_variance: float = 9.0, swap_every: int = 20, scout_warmup: int = 0):
        super().__init__(beta, rate, clip, init_scale, n_draws, gamma_shrink, burnin, adapt_iterations, bank_size,
                         reverse_factor)
        self._scout_settings(tau, scout_variance, swap_every, scout_warmup)
