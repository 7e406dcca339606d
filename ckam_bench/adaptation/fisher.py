r"""Mass-matrix estimators that minimise a Fisher divergence (Seyboldt, Carlson & Carpenter,
"Preconditioning HMC by minimizing Fisher divergence", arXiv 2603.18845; nutpie / nuts-rs),
and Stan's variance estimator in the same foreground/background form, for the warm-up
schedules of :mod:`ckam_bench.samplers.nuts_adaptation`.

**Diagonal Fisher estimator.** For the linear map x = σ ∘ y + μ, the Fisher divergence of the
transformed target from N(0, I) is E‖σ ∘ ∇log π(x) + y‖². Minimised over σ and μ on a sample
of draws xᵢ with gradients gᵢ = ∇log π(xᵢ), each coordinate separately, it gives

.. math::
    \sigma_j^2 = \sqrt{\operatorname{Var}(x_j) / \operatorname{Var}(g_j)},

the inverse metric M⁻¹ = diag(σ²). On a Gaussian N(m, Σ), ∇log π = −Σ⁻¹(x − m), so
Var gⱼ = (Σ⁻¹)ⱼⱼ and σⱼ² → √(Σⱼⱼ/(Σ⁻¹)ⱼⱼ): the marginal variance Σⱼⱼ when Σ is diagonal,
and between the conditional 1/(Σ⁻¹)ⱼⱼ and the marginal variance otherwise (their geometric
mean). Both variances come from Welford's recursions (:mod:`~ckam_bench.adaptation.welford`,
ddof 1: the ratio does not depend on the normalisation); an estimate that is not finite or is 0
keeps the coordinate's previous value, and the others are clipped to [10⁻²⁰, 10²⁰] (as nuts-rs).
Before any draw the metric is σⱼ² = 1/|gⱼ(x₀)| (|g| clipped to [10⁻²⁰, 10²⁰]; a gradient
coordinate that is 0 or not finite gives 1): the scale at which a Gaussian with that gradient at
x₀ has x₀ one sd out.

**Stan's variance estimator** (for the estimator × schedule ablation): M⁻¹ = diag of the draws'
sample variances regularised as Stan, n/(n + 5)·v + 10⁻³·5/(n + 5); identity before any draw.

**Foreground/background pair** (nuts-rs): two estimators see every draw; the metric comes from
the foreground one; at a *switch* the background becomes the foreground (it has seen only the
draws since the previous switch) and a fresh background starts, so old draws from the transient
are forgotten in steps. Layout of a diagonal pair, one flat array of 8d + 4:
``[fg draws | fg gradients | bg draws | bg gradients]``, each a Welford state (2d + 1).

**Low-rank Fisher estimator.** From n draws and gradients: the diagonal σⱼ = (Var xⱼ/Var gⱼ)^¼
(population variances), then in the rescaled, centred coordinates x̃ = (x − x̄)/σ and
g̃ = (g − ḡ) ∘ σ an orthonormal basis Q (d × m) of the span of all x̃ᵢ and g̃ᵢ (m ≤ min(d, 2n);
Q = I when 2n ≥ d), their projections Pₓ = X̃Q, P_g = G̃Q and the regularised second moments

.. math::
    C_x = \frac{P_x^\top P_x}{\gamma n^{r+1}} + I, \qquad C_g = \frac{P_g^\top P_g}{\gamma n^{r+1}} + I,

so C_x ∝ Cov x̃ + γnʳ·I: a ridge γnʳ on the sample covariances (γ = 10⁻⁵ as nuts-rs). The ridge
power r is −1 in nuts-rs from 0.18.1 on (C_x = nCov/γ + I: a pseudo-count of γ draws) and 1 up
to 0.18.0 (nutpie 0.16.8), which scales the draws and gradients by 1/n first. The
dense Fisher minimiser in the subspace is the SPD geometric mean of C_x and C_g⁻¹, the unique
SPD A with A C_g A = C_x,

.. math::
    A = C_g^{-1/2}\,\bigl(C_g^{1/2} C_x C_g^{1/2}\bigr)^{1/2}\,C_g^{-1/2}

(on a Gaussian Cov g = Σ⁻¹, so A = Σ: the covariance). With A = VΛVᵀ (a symmetric
eigensolver on A = GGᵀ, the factor G from Cholesky factors and one SVD,
:func:`geometric_mean_factor`, which never forms a product of C_x and C_g, whose eigenvalues
reach (nVar/γ)² ~ 10¹⁵; clipped to [1/√b(C_g), √b(C_x)], b(·) the largest absolute row sum,
which contains the range [1/√λmax(C_g), √λmax(C_x)] that A·C_g·A = C_x with C_x, C_g ⪰ I allows),
the eigenpairs with λ > c or λ < 1/c (c = ``cutoff``, nuts-rs's 2) are kept, U = QV_kept, and the inverse metric
is diag(σ)(I + U(Λ − I)Uᵀ)diag(σ) (:mod:`~ckam_bench.samplers.nuts_metric`): exactly the
diagonal estimate outside span(U), the geometric mean inside. The draws are kept in a buffer
(rows [x, g]; row 0 holds the split and end counts) whose foreground is every stored draw and
background those after the split; a switch drops the rows before the split.
"""

from __future__ import annotations

import math

import numpy as np

from ckam_bench import jit
from ckam_bench.adaptation import welford


# The decompositions of the jitable estimators below, the same LAPACK routines on the same
# library in a kernel and in its Python loop: numba's np.linalg calls scipy's LAPACK (syevd,
# gesdd, geqrf/orgqr, potrf); numpy's own np.linalg calls the LAPACK bundled with numpy, whose last
# bits differ from scipy's when their OpenBLAS builds differ (numpy 2.5.5's 0.3.34 against
# scipy 1.18.1's 0.3.31: np.linalg.svd of 2 x 2 matrices differs in most last bits), so the
# Python loop calls scipy.linalg with those drivers and a kernel np.linalg.
def _eigh(a):
    import scipy.linalg

    return scipy.linalg.eigh(a, driver="evd")


def _svd(a):
    import scipy.linalg

    return scipy.linalg.svd(a, lapack_driver="gesdd")


def _qr(a):
    import scipy.linalg

    return scipy.linalg.qr(a, mode="economic")


def _cholesky(a):
    import scipy.linalg

    return scipy.linalg.cholesky(a, lower=True)


if jit.AVAILABLE:
    from numba.extending import overload

    @overload(_eigh)
    def _eigh_compiled(a):
        return lambda a: np.linalg.eigh(a)

    @overload(_svd)
    def _svd_compiled(a):
        return lambda a: np.linalg.svd(a)

    @overload(_qr)
    def _qr_compiled(a):
        return lambda a: np.linalg.qr(a)

    @overload(_cholesky)
    def _cholesky_compiled(a):
        return lambda a: np.linalg.cholesky(a)

LOWER, UPPER = 1e-20, 1e20


# ------------------------------------------------------------------------ diagonal pair
def diag_init(dim: int) -> np.ndarray:
    """An empty foreground/background pair of draw and gradient Welford states, (8d + 4,)."""
    return np.zeros(4 * (2 * dim + 1))


@jit.jitable
def _part(est, k):
    """Welford state k of a pair: 0 fg draws, 1 fg gradients, 2 bg draws, 3 bg gradients."""
    size = est.shape[0] // 4
    return est[k * size:(k + 1) * size]


@jit.jitable
def diag_update(est, x, g):
    """Add a draw and its gradient to both estimators."""
    for k in range(4):
        welford.update(_part(est, k), x if k % 2 == 0 else g)


@jit.jitable
def diag_switch(est):
    """The background becomes the foreground; a fresh background."""
    half = est.shape[0] // 2
    for i in range(half):
        est[i] = est[half + i]
        est[half + i] = 0.0


@jit.jitable
def diag_count(est, background):
    """Draws in the foreground (or the background) estimator."""
    return int(est[est.shape[0] // 2]) if background else int(est[0])


@jit.jitable
def fisher_into(est, minv):
    """minv ← √(Var x / Var g) of the foreground, where finite and > 0, clipped to
    [10⁻²⁰, 10²⁰]; no change (False) with fewer than 3 draws."""
    wx, wg = _part(est, 0), _part(est, 1)
    n = wx[0]
    if n < 3.0:
        return False
    d = minv.shape[0]
    for j in range(d):
        v = math.sqrt(wx[1 + d + j] / wg[1 + d + j]) if wg[1 + d + j] > 0.0 else math.inf
        if math.isfinite(v) and v > 0.0:
            minv[j] = min(max(v, LOWER), UPPER)
    return True


@jit.jitable
def variance_into(est, minv):
    """minv ← Stan's regularised variance of the foreground draws; no change (False) with
    fewer than 3 draws."""
    wx = _part(est, 0)
    if wx[0] < 3.0:
        return False
    welford.regularised_variance_into(wx, minv)
    return True


@jit.jitable
def gradient_init_into(g, minv):
    """minv ← 1/|g| with |g| clipped to [10⁻²⁰, 10²⁰]; 1 where g is 0 or NaN. A zero gradient
    coordinate (a centred hierarchy's mean at its support point, where every group sits at the
    mean) says nothing of that coordinate's scale: 1/10⁻²⁰ there made every step size down to
    10⁻¹² unstable and the first trees ran to the depth limit. nuts-rs refuses such a start and
    nutpie jitters it; the harness keeps the start and leaves that coordinate's scale at 1."""
    for j in range(g.shape[0]):
        a = abs(g[j])
        minv[j] = 1.0 / min(max(a, LOWER), UPPER) if a > 0.0 else 1.0


# ------------------------------------------------------------------------ low-rank buffer
def low_rank_init(dim: int, capacity: int) -> np.ndarray:
    """An empty draw buffer for ``capacity`` draws: (capacity + 1, 2d), row 0 the counts."""
    return np.zeros((int(capacity) + 1, 2 * int(dim)))


@jit.jitable
def low_rank_update(est, x, g):
    """Store a draw and its gradient (a full buffer drops its oldest foreground draw)."""
    d = x.shape[0]
    end = int(est[0, 1])
    if end + 1 >= est.shape[0]:  # full (never with capacity ≥ warm-up + 1)
        for r in range(1, end):
            est[r] = est[r + 1]
        end -= 1
        est[0, 0] = max(est[0, 0] - 1.0, 0.0)
    row = est[end + 1]
    for j in range(d):
        row[j] = x[j]
        row[d + j] = g[j]
    est[0, 1] = end + 1


@jit.jitable
def low_rank_switch(est):
    """Drop the foreground-only draws (before the split); the rest is the new foreground."""
    split, end = int(est[0, 0]), int(est[0, 1])
    for r in range(end - split):
        est[1 + r] = est[1 + split + r]
    est[0, 0] = end - split
    est[0, 1] = end - split


@jit.jitable
def low_rank_count(est, background):
    split, end = int(est[0, 0]), int(est[0, 1])
    return end - split if background else end


@jit.jitable
def geometric_mean_factor(cx, cg):
    """G with GGᵀ = A, the SPD A with A·cg·A = cx. With the Cholesky factors cg = LLᵀ,
    cx = MMᵀ and the SVD MᵀL = UΣVᵀ, A = L⁻ᵀVΣVᵀL⁻¹ (then A·cg·A = L⁻ᵀ(LᵀcxL)L⁻¹ = cx, since
    (MᵀL)ᵀ(MᵀL) = VΣ²Vᵀ), so G = L⁻ᵀVΣ^½. This never forms a product of cx and cg: its
    singular values carry an error of ε·‖MᵀL‖, about √(λmax(cx)·λmax(cg))·ε, where the
    eigenvalues of cg^½·cx·cg^½ carry λmax(cx)·λmax(cg)·ε; with γ = 10⁻⁵ and 100 draws that
    product reaches ~10¹⁵, and its eigenvalues near 1, A's in the directions only the ridge
    fills, came out as noise, even negative (radon_all's 388 county intercepts: M⁻¹Σ⁻¹'s
    condition number 9·10⁴, trees at the depth limit)."""
    low = _cholesky(cg)
    m = low.shape[0]
    _, sv, vt = _svd(_cholesky(cx).T @ low)
    g = np.empty((m, m))
    for i in range(m - 1, -1, -1):  # back substitution Lᵀ·g = V, a row at a time
        for c in range(m):
            g[i, c] = vt[c, i]
        for k in range(i + 1, m):
            lki = low[k, i]
            for c in range(m):
                g[i, c] -= lki * g[k, c]
        for c in range(m):
            g[i, c] /= low[i, i]
    for c in range(m):  # column c times √σ_c
        root = math.sqrt(sv[c])
        for i in range(m):
            g[i, c] *= root
    return g


@jit.jitable
def _top_bound(a):
    """An upper bound on λmax of a symmetric a: its largest absolute row sum (Gershgorin)."""
    top = 0.0
    for i in range(a.shape[0]):
        row = 0.0
        for j in range(a.shape[1]):
            row += abs(a[i, j])
        top = max(top, row)
    return top


@jit.jitable
def _symmetric_product(g):
    """GGᵀ, made exactly symmetric (the lower triangle, which the eigensolvers read, mirrored)."""
    a = g @ g.T
    for i in range(a.shape[0]):
        for j in range(i):
            a[j, i] = a[i, j]
    return a


@jit.jitable
def spd_geometric_mean(cx, cg):
    """The SPD A with A·cg·A = cx: cg^(−½)(cg^½·cx·cg^½)^½·cg^(−½)."""
    return _symmetric_product(geometric_mean_factor(cx, cg))


@jit.jitable
def scales_into(draws, grads, sigma, mx, mg):
    """σⱼ = (Var xⱼ/Var gⱼ)^¼ of draws and gradients (n, d) (population variances) into sigma,
    their means into mx and mg; False when some σⱼ is not finite and positive (the rest unset)."""
    n, d = draws.shape
    for j in range(d):
        a = b = 0.0
        for i in range(n):
            a += draws[i, j]
            b += grads[i, j]
        a /= n
        b /= n
        vx = vg = 0.0
        for i in range(n):
            vx += (draws[i, j] - a) ** 2
            vg += (grads[i, j] - b) ** 2
        s = math.sqrt(math.sqrt(vx / vg)) if vg > 0.0 else math.inf
        if not (math.isfinite(s) and s > 0.0):
            return False
        sigma[j], mx[j], mg[j] = s, a, b
    return True


@jit.jitable
def low_rank_estimate(draws, grads, gamma, cutoff, ridge_power):
    """(ok, σ, λ kept, U (d, k)) from draws and gradients (n, d): the module docstring's
    estimator with the ridge γnʳ (r = ``ridge_power``); ok is False when some σⱼ is not finite and
    positive (nothing is estimated)."""
    n, d = draws.shape
    sigma, mx, mg = np.empty(d), np.empty(d), np.empty(d)
    if not scales_into(draws, grads, sigma, mx, mg):
        return False, sigma, np.zeros(0), np.zeros((d, 0))
    xs, gs = np.empty((n, d)), np.empty((n, d))
    for j in range(d):
        for i in range(n):
            xs[i, j] = (draws[i, j] - mx[j]) / sigma[j]
            gs[i, j] = (grads[i, j] - mg[j]) * sigma[j]
    whole = 2 * n >= d  # Q = I: the projections are the rescaled draws themselves
    if whole:
        basis, px, pg = np.eye(d), xs, gs
    else:
        both = np.empty((d, 2 * n))
        both[:, :n] = xs.T
        both[:, n:] = gs.T
        basis, _ = _qr(both)
        basis = np.ascontiguousarray(basis)
        px, pg = xs @ basis, gs @ basis
    m = basis.shape[1]
    scale = gamma * float(n) ** (ridge_power + 1.0)
    cx, cg = (px.T @ px) / scale, (pg.T @ pg) / scale
    for i in range(m):
        cx[i, i] += 1.0
        cg[i, i] += 1.0
    raw, vectors = _eigh(spd_geometric_mean(cx, cg))
    # A·cg·A = cx with cx, cg ⪰ I bounds A's spectrum: 1/√λmax(cg) ≤ λ ≤ √λmax(cx) (for a unit
    # eigenvector v, λ²·vᵀcg·v = vᵀcx·v), so within 1/√b(cg) and √b(cx) for upper bounds b of
    # λmax; rounding (an error of ε‖A‖) may leave them, never the true λ
    low = 1.0 / math.sqrt(_top_bound(cg))
    high = math.sqrt(_top_bound(cx))
    values = np.empty(m)
    for i in range(m):
        values[i] = min(max(raw[i], low), high)
    k = 0
    for i in range(m):
        if values[i] > cutoff or values[i] < 1.0 / cutoff:
            k += 1
    kept_values, kept = np.empty(k), np.empty((m, k))
    k = 0
    for i in range(m):
        if values[i] > cutoff or values[i] < 1.0 / cutoff:
            kept_values[k] = values[i]
            kept[:, k] = vectors[:, i]
            k += 1
    return True, sigma, kept_values, kept if whole else basis @ kept


@jit.jitable
def low_rank_metric(est, gamma, cutoff, ridge_power):
    """(ok, σ, λ, U) of the buffer's foreground draws (:func:`low_rank_estimate`); not ok with
    fewer than 3."""
    end = int(est[0, 1])
    d = est.shape[1] // 2
    if end < 3:
        return False, np.ones(d), np.zeros(0), np.zeros((d, 0))
    rows = est[1:end + 1]
    return low_rank_estimate(np.ascontiguousarray(rows[:, :d]), np.ascontiguousarray(rows[:, d:]), gamma, cutoff,
                             ridge_power)
