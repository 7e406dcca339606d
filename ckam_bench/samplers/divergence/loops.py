"""The per-iteration loops of the DM / Scout family (:mod:`ckam_bench.samplers.divergence`):
:func:`dm_loop` (Algorithm 1, with the scout chain of Algorithms 3–4 and the reservoir of the
finite variants), :func:`mh_loop` (the finite variants' nearest-factor MH phase) and
:func:`tempered_walk` (the scout's warm-up).

Each loop is one source: run as Python on a target's uncounted primitives
(:class:`PythonDensityGrad`, :class:`PythonDensity`), or compiled by numba (``dm_kernel``,
``mh_kernel``, ``walk_kernel``) for the target's ``jit_log_density_and_grad()`` (adaptive
phases, the scout's walk) and ``jit_log_density()`` (MH phase). The samplers count the
evaluations; the loops do not.
"""

from __future__ import annotations

import math

import numpy as np

from ckam_bench import jit
from ckam_bench.samplers.base import NONFINITE_SHRINK
from ckam_bench.samplers.divergence.nearest import nearest
from ckam_bench.targets.base import Target


class PythonDensityGrad:
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


class PythonDensity:
    """Uncounted ``f(x)`` from a target's Python density (the Python MH loop)."""

    def __init__(self, target: Target):
        self.target = target

    def __call__(self, x):
        return self.target._log_density(x)


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
def swap(x, logp, s, logp_s, z, tau):
    """The tempering swap of x (on π) and s (on π^τ), in place; returns (logp, logp_s, swapped)."""
    if jit.log_uniform(z) < (1.0 - tau) * (logp_s - logp):
        for a in range(x.shape[0]):
            tmp = x[a]
            x[a] = s[a]
            s[a] = tmp
        return logp_s, logp, True
    return logp, logp_s, False


@jit.helper
def _outputs(n, d):
    """A loop's per-iteration outputs for n iterations: states (n, d), log acceptance ratios,
    accept flags, log densities."""
    return np.empty((n, d)), np.empty(n), np.zeros(n, dtype=np.bool_), np.empty(n)


# ---------------------------------------------------------------------------- adaptive (DM) loop
def dm_loop(f, x, logp, L, s, logp_s, normals, rates, beta, clip, n_draws, gamma_mult, shrink,
            scout, tau, scout_sd, swap_every, t0, bank_x, bank_L, bank_seen):
    """n iterations of DM (with the scout chain when ``scout``), updating x, L, s, the bank in
    place. Row i of ``normals``: J·d steps, accept, [scout d steps, scout accept, swap],
    [reservoir]. Returns (logp, logp_s, gamma_mult, bank_seen, samples, log_ratio, accepted,
    logps, scales, n_nonfinite, n_skipped, swaps_tried, swaps_accepted)."""
    n = normals.shape[0]
    d = x.shape[0]
    samples, log_ratio, accepted, logps = _outputs(n, d)
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
            accept = jit.log_uniform(row[n_draws * d]) < r
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
            if math.isfinite(lp) and jit.log_uniform(row[col + d]) < tau * (lp - logp_s):
                for a in range(d):
                    s[a] = work[a]
                logp_s = lp
            if (t0 + i) % swap_every == 0:
                swaps_tried += 1
                logp, logp_s, swapped = swap(x, logp, s, logp_s, row[col + d + 1], tau)
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


# ---------------------------------------------------------------------------- non-adaptive (MH) loop
def mh_loop(f, x, logp, idx_x, s, logp_s, normals, log_u, points, chols, log_dets, split_dim, split, lesser,
            greater, start, end, indices, reverse_at_proposal, scout, tau, scout_sd, swap_every, t0):
    """n iterations of the nearest-factor MH chain (plus the scout chain when ``scout``).
    Row i of ``normals``: d steps, accept, [scout d steps, scout accept, swap]; ``log_u`` the
    accept column as log-uniforms (log Φ, computed outside the loop). Returns
    (logp, idx_x, logp_s, samples, log_ratio, accepted, logps, n_nonfinite, swaps_tried,
    swaps_accepted)."""
    n = normals.shape[0]
    d = x.shape[0]
    samples, log_ratio, accepted, logps = _outputs(n, d)
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
            idx_y = nearest(y, points, split_dim, split, lesser, greater, start, end, indices, stack, bounds,
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
            if math.isfinite(lp) and jit.log_uniform(row[2 * d + 1]) < tau * (lp - logp_s):
                for a in range(d):
                    s[a] = work[a]
                logp_s = lp
            if (t0 + i) % swap_every == 0:
                swaps_tried += 1
                logp, logp_s, swapped = swap(x, logp, s, logp_s, row[2 * d + 2], tau)
                if swapped:
                    swaps_accepted += 1
                    idx_x = nearest(x, points, split_dim, split, lesser, greater, start, end, indices, stack,
                                    bounds, -1)
        logps[i] = logp
        for a in range(d):
            samples[i, a] = x[a]
    return logp, idx_x, logp_s, samples, log_ratio, accepted, logps, n_nonfinite, swaps_tried, swaps_accepted


def tempered_walk(f, s, logp_s, normals, tau, scout_sd):
    """Random-walk Metropolis on π^τ alone (the scout's warm-up), in place on s; row i of
    ``normals``: d steps then the accept uniform. Returns log π(s)."""
    d = s.shape[0]
    work = np.empty(d)
    scratch = np.empty(d)
    for i in range(normals.shape[0]):
        for a in range(d):
            work[a] = s[a] + scout_sd * normals[i, a]
        lp = f(work, scratch)
        if math.isfinite(lp) and jit.log_uniform(normals[i, d]) < tau * (lp - logp_s):
            for a in range(d):
                s[a] = work[a]
            logp_s = lp
    return logp_s


if jit.AVAILABLE:  # each loop compiled for one explicit signature (disk-cached)
    _A1, _A2, _A3, _F8, _B1 = jit.A1, jit.A2, jit.types.float64[:, :, ::1], jit.F8, jit.B1
    _I8, _I1 = jit.types.int64, jit.types.int64[::1]
    dm_kernel = jit.gradient_kernel(_A1, _F8, _A2, _A1, _F8, _A2, _A1, _F8, _F8, _I8, _F8, _F8, _B1, _F8,
                                    _F8, _I8, _I8, _A2, _A3, _I8)(dm_loop)
    mh_kernel = jit.kernel(_A1, _F8, _I8, _A1, _F8, _A2, _A1, _A2, _A3, _A1, _I1, _A1, _I1, _I1, _I1, _I1,
                           _I1, _B1, _B1, _F8, _F8, _I8, _I8)(mh_loop)
    walk_kernel = jit.gradient_kernel(_A1, _F8, _A2, _F8, _F8)(tempered_walk)
else:
    dm_kernel = mh_kernel = walk_kernel = None
