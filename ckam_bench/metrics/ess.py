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

Bounded cost: :class:`BulkESS` computes the ESS on the run's :class:`ThinningBuffer` of
collected samples, which keeps every ``stride``-th state (at most ``capacity`` of them), so a
checkpoint costs O(capacity · log(capacity) · d) whatever the chain length. The value is the ESS
of the *thinned* chain. Thinning by s keeps n/s draws whose autocorrelation time is about τ/s
(τ that of the full chain), so while ESS ≪ buffer size (τ ≫ s) it matches the full chain's ESS
n/τ; once the thinned draws are nearly independent (τ ≲ s) it saturates near the number of
stored draws and is a lower bound on the full chain's ESS.

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
    total = 2 * h
    # (d, 2, h), draws last and contiguous: the same reductions as arviz's (2, h) per column.
    split = np.stack((x[:h].T, x[n - h :].T), axis=1)
    # Average ranks are the half-integers 1, 1.5, …, N: look their normal scores up in a table
    # of 2N − 1 values instead of calling ndtri on all d·N draws.
    half_ranks = np.arange(2 * total - 1) / 2 + 1
    scores = ndtri((half_ranks - BLOM_OFFSET) / (total - 2 * BLOM_OFFSET + 1))
    z = scores[_doubled_ranks(split.reshape(d, total))].reshape(d, 2, h)
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
    cut = np.where(stops.any(axis=1), np.argmax(stops, axis=1), k_max)
    monotone = np.minimum.accumulate(pairs[:, :k_max], axis=1)
    head = np.sum(np.where(np.arange(k_max) < cut[:, None], monotone, 0.0), axis=1)
    rows = np.arange(d)
    last_even, last_pair = even[rows, cut], pairs[rows, cut]
    tail = np.where((last_even > 0.0) | (last_pair >= 0.0), last_even, 0.0)

    tau = np.maximum(-1.0 + 2.0 * head + tail, 1.0 / np.log10(total))
    return np.where(flat, float(total), total / tau)


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
    starts = np.where(np.pad(tie, ((0, 0), (1, 0))), 0, pos)  # position at a group's start
    ends = np.where(np.pad(tie, ((0, 0), (0, 1))), N, pos)  # position at a group's end
    first = np.maximum.accumulate(starts, axis=1)
    last = np.minimum.accumulate(ends[:, ::-1], axis=1)[:, ::-1]
    doubled = np.empty((d, N), dtype=np.intp)
    np.put_along_axis(doubled, order, first + last, axis=1)
    return doubled


class BulkESS:
    """Checkpoint metric: bulk ESS of the stored (thinned) samples, min / median / max over d.

    ``update`` is a no-op (the ESS needs the whole chain, which the buffer keeps thinned);
    ``compute(buffer)`` reads ``buffer.data`` (n, d).
    """

    def __init__(self, target: Target):
        self.dim = target.dim

    def update(self, samples) -> None:
        """Nothing to accumulate: the runner's sample buffer holds the chain."""

    def compute(self, buffer) -> dict:
        """Trace columns ``ess_min``, ``ess_median``, ``ess_max``."""
        ess = ess_per_dim(buffer.data)
        return {
            "ess_min": float(np.min(ess)),
            "ess_median": float(np.median(ess)),
            "ess_max": float(np.max(ess)),
        }

    def state_dict(self) -> dict:
        """No streaming state."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """No streaming state to restore."""
