r"""Bulk effective sample size per coordinate, reported as min / median / max.

Estimator: the rank-normalised split-chain bulk ESS of Vehtari et al. (2021, "Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of MCMC", Bayesian
Analysis 16(2)), with the autocorrelations summed by Geyer's (1992, "Practical Markov chain
Monte Carlo", Statistical Science 7(4)) initial positive and initial monotone sequences, with
the index conventions of arviz-stats (``array_stats.ess(..., method="bulk")``). For one column
:math:`x_{1:n}`:

1. Split: :math:`h = \lfloor n/2 \rfloor`, chains :math:`x_{1:h}` and :math:`x_{n-h+1:n}` (an
   odd n drops the middle draw); N = 2h draws in all.
2. Rank-normalise: :math:`z_i = \Phi^{-1}((r_i - 3/8)/(N + 1/4))` with :math:`r_i` the average
   rank of draw i among the N pooled draws (Blom's offset).
3. Per chain c the autocovariance :math:`\gamma_{c,t} = h^{-1}\sum_{i=1}^{h-t}(z_{c,i}-\bar
   z_c)(z_{c,i+t}-\bar z_c)` (FFT, zero-padded); :math:`W = \frac{h}{h-1}\,\mathrm{mean}_c
   \gamma_{c,0}`, :math:`\widehat{\mathrm{var}}^+ = \frac{h-1}{h} W + B` with B the sample
   variance (ddof 1) of the two chain means, and
   :math:`\rho_t = 1 - (W - \mathrm{mean}_c\gamma_{c,t}) / \widehat{\mathrm{var}}^+`.
4. Pair sums :math:`P_0 = 1 + \rho_1`, :math:`P_k = \rho_{2k} + \rho_{2k+1}` for
   :math:`1 \le k \le k_{\max} = \lfloor (h-3)/2 \rfloor`. Initial positive sequence: K is the
   first k with :math:`P_k \le 0`, or :math:`k_{\max}` if there is none before it. Initial
   monotone sequence: :math:`\tilde P_k = \min_{j \le k} P_j`.
5. :math:`\tau = -1 + 2\sum_{k<K} \tilde P_k + e_K`, where the extra term is :math:`e_0 = 1`,
   and for K ≥ 1 :math:`e_K = \rho_{2K}` if :math:`\rho_{2K} > 0` or :math:`P_K \ge 0`, else 0.
   Then :math:`\tau \leftarrow \max(\tau, 1/\log_{10} N)` and :math:`\mathrm{ESS} = N/\tau`.

A column containing NaN gets NaN. If the N split draws are all equal, arviz-stats returns N.
A constant column (a chain that never moved in that coordinate), however, gets ESS 1 here:
its mean carries the information of one draw, and N would rank a stuck chain as perfectly
mixed. (An odd-length column that moved only at its dropped middle draw keeps arviz's N.)

Why not call arviz-stats: it runs steps 4–5 as a Python loop over lags with an ``np.mean`` per
lag, one column at a time: on a (20 000, 32) random walk that is about 2 s per checkpoint.
Here all columns go through one argsort, one FFT and a few array operations (the first
non-positive pair sum by ``argmax``, the monotone step by ``np.minimum.accumulate``), about
0.1 s for the same chain; the tests hold the result to arviz-stats to rtol 1e-9 on iid, AR(1),
random-walk and tied chains.

Whole chain: the trace's ``ess_*`` columns come from :class:`StreamingESS`, which sees every
collected draw in memory that does not grow with the run (multi-resolution batch-mean
autocovariances, see its docstring), so samplers that collect different numbers of draws are
compared on their whole chains. :func:`ess_per_dim` above (the exact arviz-stats bulk ESS) is
applied to the run's :class:`ThinningBuffer` of stored samples for the ``ess_min_stored``
column: thinning by s keeps n/s draws whose autocorrelation time is about τ/s, so once the
thinned draws are nearly independent it saturates near the number of stored draws and
understates the whole chain's ESS.

The ESS per sampler second and per density evaluation follow from the trace's ``ess_*``,
``time_sampler`` and evaluation-count columns.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.fftpack import next_fast_len
from scipy.special import ndtri

from ckam_bench.targets.base import Target

MIN_SAMPLES = 20
"""Below this many stored draws the ESS is reported as NaN."""

LAGS = 32
"""Lags 0 … LAGS − 1 of each level of :class:`StreamingESS` (LAGS / 2 Geyer pair sums)."""

MIN_BATCHES = 2 * LAGS
"""A level of :class:`StreamingESS` is used once it holds this many values (NaN before)."""

BLOM_OFFSET = 3 / 8
"""Offset c of the rank back-transform (r − c)/(N − 2c + 1)."""


def ess_per_dim(x) -> np.ndarray:
    """Bulk ESS of each column of a single chain ``x``, shape (n, d) → (d,).

    Returns NaNs when n < :data:`MIN_SAMPLES`, NaN for a column containing NaN and 1 for a
    constant column (see the module docstring).
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    ess = np.full(x.shape[1], math.nan)
    if x.shape[0] < MIN_SAMPLES:
        return ess
    valid = ~np.isnan(x).any(axis=0)
    if valid.any():
        ess[valid] = _split_bulk_ess(x[:, valid])
    return np.where(np.ptp(x, axis=0) == 0, 1.0, ess)


def _split_bulk_ess(x: np.ndarray) -> np.ndarray:
    """Steps 1–5 of the module docstring for NaN-free columns of ``x`` (n ≥ 4, d), as arviz."""
    n, d = x.shape
    h = n // 2
    # (d, 2, h), draws last and contiguous: the same reductions as arviz's (2, h) per column.
    split = np.stack((x[:h].T, x[n - h :].T), axis=1)
    return _chains_ess(_z_scores(split.reshape(d, 2 * h)).reshape(d, 2, h))


def _z_scores(a: np.ndarray) -> np.ndarray:
    """Step 2 for each row of ``a`` (d, N): the normal scores of the average ranks.

    Average ranks are the half-integers 1, 1.5, …, N: their scores are looked up in a table of
    2N − 1 values instead of calling ndtri on all d·N draws."""
    total = a.shape[1]
    half_ranks = np.arange(2 * total - 1) / 2 + 1
    scores = ndtri((half_ranks - BLOM_OFFSET) / (total - 2 * BLOM_OFFSET + 1))
    return scores[_doubled_ranks(a)]


def _chains_ess(z: np.ndarray) -> np.ndarray:
    """Steps 3–5 for the m ≥ 2 chains of h draws of each coordinate, ``z`` (d, m, h): the ESS
    of the m·h draws (arviz-stats' ``_ess``; all draws equal: m·h)."""
    d, _, h = z.shape
    total = z.shape[1] * h
    flat = np.max(z, axis=(1, 2)) - np.min(z, axis=(1, 2)) < np.finfo(float).resolution

    m = next_fast_len(2 * h)  # scipy.fftpack's 5-smooth length, as arviz pads
    spectrum = np.fft.rfft(z - z.mean(axis=-1, keepdims=True), n=m, axis=-1)
    spectrum *= np.conjugate(spectrum)
    acov = np.fft.irfft(spectrum, n=m, axis=-1)[..., :h]
    acov /= h
    mean_var = np.mean(acov[:, :, 0], axis=1) * h / (h - 1.0)
    var_plus = mean_var * (h - 1.0) / h + np.var(z.mean(axis=-1), axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):  # flat columns: 0/0, replaced below
        rho = 1.0 - (mean_var[:, None] - np.mean(acov, axis=1)) / var_plus[:, None]

    k_max = max((h - 3) // 2, 0)
    even = np.empty((d, k_max + 1))  # ρ_{2k}, with arviz's ρ_0 = 1 exactly
    even[:, 0] = 1.0
    even[:, 1:] = rho[:, 2 : 2 * k_max + 1 : 2]
    pairs = even.copy()
    pairs[:, 0] += rho[:, 1]
    pairs[:, 1:] += rho[:, 3 : 2 * k_max + 2 : 2]

    stops = ~(pairs[:, :k_max] > 0.0)  # NaN stops the sequence, as in arviz's while loop
    cut = np.where(stops.any(axis=1), np.argmax(stops, axis=1), k_max) if k_max else np.zeros(d, int)
    used = int(cut.max()) if d else 0  # pair sums past every row's cut are not summed
    monotone = np.minimum.accumulate(pairs[:, :used], axis=1)
    head = np.sum(np.where(np.arange(used) < cut[:, None], monotone, 0.0), axis=1)
    rows = np.arange(d)
    last_even, last_pair = even[rows, cut], pairs[rows, cut]
    tail = np.where((last_even > 0.0) | (last_pair >= 0.0), last_even, 0.0)

    tau = np.maximum(-1.0 + 2.0 * head + tail, 1.0 / np.log10(total))
    return np.where(flat, float(total), total / tau)


def _split_chains(x: np.ndarray) -> np.ndarray:
    """(m, n, d) chains → (d, 2m, h): each chain's first and last h = ⌊n/2⌋ draws as two."""
    h = x.shape[1] // 2
    return np.concatenate((x[:, :h], x[:, x.shape[1] - h :]), axis=0).transpose(2, 0, 1)


def _usable(x) -> tuple[np.ndarray, np.ndarray]:
    """``x`` (m, n, d) as floats and its coordinates without NaN (arviz-stats: NaN for those)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 3:
        raise ValueError(f"chains must be an (m, n, d) array, got shape {x.shape}")
    return x, ~np.isnan(x).any(axis=(0, 1))


def rank_rhat(x) -> np.ndarray:
    """Rank-normalised split R-hat of each coordinate of the chains ``x`` (m, n, d) → (d,):
    the larger of the bulk (normal scores of the ranks of the 2m split chains) and the tail
    R-hat (the same of the draws folded about their median), Vehtari et al. (2021), with
    arviz-stats' conventions (``rhat(method="rank")``; the tests hold it equal to arviz-stats).
    NaN with fewer than 2 chains or 4 draws, for a coordinate with NaN, and for one whose
    split chains are all constant."""
    x, ok = _usable(x)
    out = np.full(x.shape[2], math.nan)
    if x.shape[0] < 2 or x.shape[1] < 4 or not ok.any():
        return out
    split = _split_chains(x[..., ok])  # (d, 2m, h)
    d, chains, h = split.shape
    folded = np.abs(split - np.median(split.reshape(d, -1), axis=1)[:, None, None])

    def rhat(z):  # the split R-hat of (d, chains, h) scores
        between = h * np.var(z.mean(axis=2), axis=1, ddof=1)
        within = np.mean(np.var(z, axis=2, ddof=1), axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sqrt((between / within + h - 1) / h)

    bulk = rhat(_z_scores(split.reshape(d, -1)).reshape(d, chains, h))
    tail = rhat(_z_scores(folded.reshape(d, -1)).reshape(d, chains, h))
    out[ok] = np.where(np.isnan(bulk) | np.isnan(tail), math.nan, np.maximum(bulk, tail))
    return out


def mcse_mean(x) -> np.ndarray:
    """Monte Carlo standard error of each coordinate's mean from the chains ``x`` (m, n, d) →
    (d,): the sd of all draws over √ESS, the ESS of the 2m split chains' draws themselves
    (not their ranks), as arviz-stats' ``mcse(method="mean")``. NaN with fewer than 4 draws
    and for a coordinate with NaN."""
    x, ok = _usable(x)
    out = np.full(x.shape[2], math.nan)
    if x.shape[1] < 4 or not ok.any():
        return out
    kept = x[..., ok]
    sd = np.std(kept.reshape(-1, kept.shape[2]), axis=0, ddof=1)
    out[ok] = sd / np.sqrt(_chains_ess(_split_chains(kept)))
    return out


def _doubled_ranks(a: np.ndarray) -> np.ndarray:
    """2r − 2 for the average ranks r ∈ {1, 1.5, …, N} of each row of ``a`` (d, N), as ints.

    ``scipy.stats.rankdata(a, method="average", axis=1)`` is r; the same ranks from one
    unstable ``argsort`` cost about half as much. Tied draws occupy sorted positions
    first…last (0-based) and share r = (first + last)/2 + 1, so 2r − 2 = first + last.
    """
    d, N = a.shape
    order = np.argsort(a, axis=1)
    ordered = np.take_along_axis(a, order, axis=1)
    tie = ordered[:, 1:] == ordered[:, :-1]  # sorted position j + 1 ties with position j
    pos = np.arange(N)
    sums = np.broadcast_to(2 * pos, (d, N)).copy()  # no tie: first = last = the position
    tied = np.flatnonzero(tie.any(axis=1))  # only rows with ties need the groups' ends
    if tied.size:
        starts = np.where(np.pad(tie[tied], ((0, 0), (1, 0))), 0, pos)  # a group's start
        ends = np.where(np.pad(tie[tied], ((0, 0), (0, 1))), N, pos)  # a group's end
        sums[tied] = (np.maximum.accumulate(starts, axis=1)
                      + np.minimum.accumulate(ends[:, ::-1], axis=1)[:, ::-1])
    doubled = np.empty((d, N), dtype=np.intp)
    np.put_along_axis(doubled, order, sums, axis=1)
    return doubled


class StreamingESS:
    r"""ESS of every coordinate of the whole chain, in memory that does not grow with it.

    Multi-resolution lagged autocovariances. Level j holds the stream of batch means of
    :math:`2^j` consecutive draws (level 0 the draws themselves, shifted by the first draw to
    keep the sums well conditioned; level j + 1 the pairwise means of level j) and, for the
    :math:`n_j` values :math:`y_1, \dots, y_{n_j}` seen at that level, the running sums
    :math:`S = \sum_i y_i` and :math:`P_k = \sum_{i=1}^{n_j-k} y_i y_{i+k}` for lags
    :math:`k < L` (:data:`LAGS`), with its first and last L values. These give the exact
    autocovariances of the level's whole series,

    .. math:: \gamma_k = \frac1{n_j}\Big[P_k - \bar y\,\big(2S - \textstyle\sum_{i>n_j-k}
       y_i - \sum_{i\le k} y_i\big) + (n_j - k)\,\bar y^2\Big],\qquad \rho_k =
       \gamma_k/\gamma_0,

    and Geyer's initial positive and monotone sequence estimator (as in the module docstring,
    one chain) gives the level's autocorrelation time :math:`\tau_j` from the pair sums of
    :math:`\rho_0 … \rho_{L-1}`. Means of batches of :math:`b = 2^j` draws have the chain's
    asymptotic variance :math:`\gamma_0^{(0)}\tau` divided by b, so
    :math:`\tau = b\,\gamma_0^{(j)}\tau_j/\gamma_0^{(0)}` and, with :math:`n_j b` draws,

    .. math:: \mathrm{ESS} = \frac{n_j\,\gamma_0^{(0)}}{\gamma_0^{(j)}\,\tau_j}

    (= n/τ at level 0), taken per coordinate at the finest level whose pair sums reach a
    non-positive one within the L lags (so the truncation is Geyer's, not the window's) and
    that has at least :data:`MIN_BATCHES` values; a coordinate no level resolves uses the
    coarsest such level. Then ESS ≤ n·log10 n (arviz's floor on τ), a constant coordinate gets
    1 and one that saw a NaN gets NaN. This is Geyer's ESS of the mean of the raw coordinate
    on one chain (no split, no rank normalisation); for the near-Gaussian marginals of the
    benchmark's posteriors it is the bulk ESS (the tests hold it to arviz-stats' bulk ESS of
    the stored whole chain within 5 %).

    Cost: a block of k draws costs O(L·k·d) at level 0 and half as much at each coarser one
    (one vectorised product per level), memory O(levels·L·d) with levels ≤ log2 n. Blocks
    are gathered up to :data:`FEED_ROWS` draws or :data:`FEED_VALUES` values first (a NUTS run
    hands over a few draws at a time: the per-level calls, not the products, would dominate;
    5–20 times the cost); every reader feeds them first.
    """

    FEED_ROWS = 1024
    """Draws gathered before they are fed to the levels …"""
    FEED_VALUES = 100_000
    """… or values (draws × dim), whichever comes first."""

    def __init__(self, dim: int):
        self.dim = int(dim)
        self._waiting: list[np.ndarray] = []  # blocks not yet fed
        self._waiting_rows = 0
        self.shift = None
        self.n = np.zeros(0, dtype=np.int64)  # values seen, per level
        self.sums = np.zeros((0, dim))
        self.lagged = np.zeros((0, LAGS, dim))  # P_k per level
        self.head = np.zeros((0, LAGS, dim))  # first L values (zero-padded)
        self.tail = np.zeros((0, LAGS, dim))  # last L values, oldest first (zero-padded)
        self.pending = np.zeros((0, dim))  # an unpaired value waiting for its partner
        self.has_pending = np.zeros(0, dtype=bool)

    def update(self, samples) -> None:
        """Add a block of draws, shape (k, dim)."""
        x = np.array(samples, dtype=float).reshape(-1, self.dim)  # a copy: the caller may reuse it
        if x.shape[0] == 0:
            return
        self._waiting.append(x)
        self._waiting_rows += x.shape[0]
        if self._waiting_rows >= min(self.FEED_ROWS, self.FEED_VALUES / self.dim):
            self._flush()

    def _flush(self) -> None:
        """Feed the gathered draws to the levels."""
        if not self._waiting:
            return
        x = self._waiting[0] if len(self._waiting) == 1 else np.concatenate(self._waiting)
        self._waiting, self._waiting_rows = [], 0
        if self.shift is None:
            self.shift = x[0].copy()
        y, level = x - self.shift, 0
        while y.shape[0]:
            if level == self.n.size:
                self._add_level()
            self._feed(level, y)
            if self.has_pending[level]:
                y = np.concatenate([self.pending[level][None], y])
            m = y.shape[0] // 2 * 2
            self.has_pending[level] = m < y.shape[0]
            if m < y.shape[0]:
                self.pending[level] = y[-1]
            y = 0.5 * (y[0:m:2] + y[1:m:2])
            level += 1

    def _add_level(self) -> None:
        d = self.dim
        self.n = np.append(self.n, 0)
        self.sums = np.concatenate([self.sums, np.zeros((1, d))])
        for name in ("lagged", "head", "tail"):
            setattr(self, name, np.concatenate([getattr(self, name), np.zeros((1, LAGS, d))]))
        self.pending = np.concatenate([self.pending, np.zeros((1, d))])
        self.has_pending = np.append(self.has_pending, False)

    def _feed(self, level: int, y: np.ndarray) -> None:
        """Add the values y (k, d) to the sums of ``level``."""
        k = y.shape[0]
        # draws last and contiguous: z (d, L + k), the last L values then y; zero padding adds
        # nothing. windows[:, s] = z[:, s : s + k]: lag L − s pairs y[q] with z[:, s + q].
        yt = np.ascontiguousarray(y.T)
        z = np.concatenate([self.tail[level].T, yt], axis=1)
        windows = np.lib.stride_tricks.sliding_window_view(z, k, axis=1)[:, :LAGS + 1]
        self.lagged[level] += np.einsum("dq,dsq->sd", yt, windows)[:0:-1]
        filled = self.n[level]
        if filled < LAGS:
            take = min(LAGS - filled, k)
            self.head[level, filled:filled + take] = y[:take]
        self.tail[level] = z[:, -LAGS:].T
        self.sums[level] += y.sum(axis=0)
        self.n[level] += k

    def _level(self, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """γ_0, τ and whether Geyer's sequence stopped inside the window, per coordinate."""
        n = float(self.n[j])
        mean = self.sums[j] / n
        lags = np.arange(LAGS)
        first = np.concatenate([np.zeros((1, self.dim)), np.cumsum(self.head[j], axis=0)[:-1]])
        last = np.concatenate([np.zeros((1, self.dim)),
                               np.cumsum(self.tail[j][::-1], axis=0)[:-1]])
        acov = (self.lagged[j] - mean * (2 * self.sums[j] - first - last)
                + (n - lags)[:, None] * mean**2) / n  # (L, d)
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = (acov / acov[0]).T  # (d, L)
        even, pairs = rho[:, 0::2], rho[:, 0::2] + rho[:, 1::2]
        k_max = pairs.shape[1] - 1
        stops = ~(pairs[:, :k_max] > 0.0)
        resolved = stops.any(axis=1)
        cut = np.where(resolved, np.argmax(stops, axis=1), k_max)
        monotone = np.minimum.accumulate(pairs[:, :k_max], axis=1)
        head = np.sum(np.where(lags[:k_max] < cut[:, None], monotone, 0.0), axis=1)
        rows = np.arange(self.dim)
        last_even, last_pair = even[rows, cut], pairs[rows, cut]
        tail = np.where((last_even > 0.0) | (last_pair >= 0.0), last_even, 0.0)
        return acov[0], -1.0 + 2.0 * head + tail, resolved

    def ess(self) -> np.ndarray:
        """ESS of each coordinate of the chain fed so far, shape (dim,) (NaN before
        :data:`MIN_BATCHES` draws)."""
        self._flush()
        out = np.full(self.dim, math.nan)
        levels = np.flatnonzero(self.n >= MIN_BATCHES)
        if levels.size == 0:
            return out
        var0, tau0, done = self._level(0)
        chosen = np.where(done, self.n[0] / tau0, math.nan)
        for j in levels[1:]:
            var, tau, resolved = self._level(j)
            with np.errstate(invalid="ignore", divide="ignore"):
                ess = self.n[j] * var0 / (var * tau)
            pick = ~done & (resolved | (j == levels[-1]))
            chosen = np.where(pick, ess, chosen)
            done |= pick
        if levels.size == 1:
            chosen = np.where(done, chosen, self.n[0] / tau0)
        n = float(self.n[0])
        out = np.minimum(chosen, n * np.log10(n))
        out = np.where(var0 == 0.0, 1.0, out)
        return np.where(np.isnan(var0), math.nan, out)

    def variance(self) -> np.ndarray:
        """Variance (1/n) of each coordinate of the chain fed so far."""
        self._flush()
        n = float(self.n[0])
        return self.lagged[0, 0] / n - (self.sums[0] / n) ** 2

    def state_dict(self) -> dict:
        """Arrays only (resume snapshot)."""
        self._flush()
        return {"shift": np.zeros(0) if self.shift is None else self.shift, "n": self.n,
                "sums": self.sums, "lagged": self.lagged, "head": self.head,
                "tail": self.tail, "pending": self.pending, "has_pending": self.has_pending}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` output."""
        self._waiting, self._waiting_rows = [], 0
        shift = np.asarray(state["shift"], dtype=float)
        self.shift = shift.copy() if shift.size else None
        self.n = np.asarray(state["n"], dtype=np.int64).copy()
        self.has_pending = np.asarray(state["has_pending"], dtype=bool).copy()
        for name in ("sums", "lagged", "head", "tail", "pending"):
            setattr(self, name, np.asarray(state[name], dtype=float).copy())


class BulkESS:
    """Checkpoint metric: ESS of the whole collected chain (:class:`StreamingESS`), min /
    median / max over the d coordinates, the largest Monte-Carlo standard error of a
    coordinate's mean, and the bulk ESS of the stored (thinned) samples for comparison.

    ``update(samples)`` feeds each block to the streaming estimator; ``compute(buffer)`` reads
    ``buffer.data`` (n, d) only for ``ess_min_stored``.
    """

    def __init__(self, target: Target):
        self.dim = target.dim
        self.stream = StreamingESS(target.dim)

    def update(self, samples) -> None:
        """Add a block of collected samples (k, d) to the whole-chain estimator."""
        self.stream.update(samples)

    def compute(self, buffer) -> dict:
        """Trace columns ``ess_min``, ``ess_median``, ``ess_max``, ``mcse_max`` (whole chain)
        and ``ess_min_stored`` (stored samples)."""
        ess = self.stream.ess()
        with np.errstate(invalid="ignore", divide="ignore"):
            mcse = np.sqrt(self.stream.variance() / ess) if self.stream.n.size else ess
        return {
            "ess_min": float(np.min(ess)),
            "ess_median": float(np.median(ess)),
            "ess_max": float(np.max(ess)),
            "mcse_max": float(np.max(mcse)),
            "ess_min_stored": float(np.min(ess_per_dim(buffer.data))),
        }

    def state_dict(self) -> dict:
        """The streaming estimator's sums (saved in the resume snapshot)."""
        return self.stream.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Restore the streaming estimator (an empty state: a fresh one)."""
        if state:
            self.stream.load_state_dict(state)
