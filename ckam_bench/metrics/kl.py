r"""Symmetric KL divergence between the target and the histogram of the collected samples.

.. math:: D(p, \hat p) = \mathrm{KL}(p \,\|\, \hat p) + \mathrm{KL}(\hat p \,\|\, p)

over the bins of a histogram on the target's box (``target.box``):

* **grid** (2-D targets, the cKAM paper's KL): a ``bins × bins`` grid; the target's cell
  masses :math:`p_b` come once from ``target.grid_mass(edges)`` (exact for Gaussian
  mixtures, midpoint rule otherwise).
* **marginal** (any dimension, the default when d ≠ 2): the mean over coordinates j of the 1-D
  symmetric KL between the histogram of :math:`x_j` on ``bins`` bins over ``box[j]`` and the
  exact marginal masses :math:`p_{jb} = F_j(e_{b+1}) - F_j(e_b)` from
  ``target.marginal_cdf``, normalised over the box.

Target masses are conditional on the box, and so is the sample histogram: a sample outside
the box is not binned but counted in ``kl_outside`` (the fraction of collected samples with
at least one coordinate outside the box). In marginal mode each coordinate's histogram uses
the samples whose coordinate j lies in ``box[j]``. Bins are half-open :math:`[e_b, e_{b+1})`,
the last one closed.

Regularisation (a modelling choice). With counts :math:`c_b`, :math:`n = \sum_b c_b` in-box
samples, B bins and pseudocount a:

.. math::
    \mathrm{KL}(p \,\|\, \hat p_s) = \sum_{b:\,p_b>0} p_b \log\frac{p_b}{\hat p_{s,b}}, \quad
    \hat p_{s,b} = \frac{c_b + a}{n + aB},
    \qquad
    \mathrm{KL}(\hat p \,\|\, p)
        = \sum_{b:\,c_b>0} \hat p_b \log\frac{\hat p_b}{\max(p_b, 10^{-300})},
    \quad \hat p_b = \frac{c_b}{n}.

The pseudocount keeps the first term finite when target mass falls in empty bins (it biases
the value upwards at small n, by an amount that vanishes as n grows); the second term uses the
raw frequencies (0 log 0 = 0), and the floor on p makes a sample in a region of negligible
target mass give a large but finite value. No in-box samples gives NaN.

Streaming: ``update`` adds each block's counts (one ``np.bincount``), so a checkpoint costs
O(B) (grid: O(bins²); marginal: O(d·bins)) whatever the number of samples.
"""

from __future__ import annotations

import math

import numpy as np

from ckam_bench import jit
from ckam_bench.targets.base import CapabilityError, Target

_P_FLOOR = 1e-300


def symmetric_kl(p, counts, pseudocount: float) -> float:
    """KL(p‖p̂_s) + KL(p̂‖p) for target bin masses ``p`` and sample ``counts`` (same shape).

    ``p`` must sum to 1 over the bins; see the module docstring for the regularisation.
    Returns NaN when ``counts`` sums to 0.
    """
    p = np.asarray(p, dtype=float).ravel()
    c = np.asarray(counts, dtype=float).ravel()
    if p.shape != c.shape:
        raise ValueError(f"p and counts differ in shape: {p.shape} vs {c.shape}")
    n = c.sum()
    if n <= 0:
        return math.nan
    a = float(pseudocount)
    on_p = p > 0
    p_smooth = (c[on_p] + a) / (n + a * c.size)
    kl_p_phat = float(np.sum(p[on_p] * np.log(p[on_p] / p_smooth)))
    on_c = c > 0
    p_hat = c[on_c] / n
    kl_phat_p = float(np.sum(p_hat * np.log(p_hat / np.maximum(p[on_c], _P_FLOOR))))
    return kl_p_phat + kl_phat_p


@jit.helper
def _grid_histogram(x, low, scale, bins, counts):
    """Compiled :meth:`SymmetricKL.update` for the 2-D grid: adds the rows of ``x`` inside the
    box to ``counts`` (bins², row-major) and returns how many rows lie outside (NaN is outside)."""
    outside = 0
    for i in range(x.shape[0]):
        u = (x[i, 0] - low[0]) * scale[0]
        v = (x[i, 1] - low[1]) * scale[1]
        if u >= 0.0 and v >= 0.0 and u <= bins and v <= bins:
            counts[min(int(u), bins - 1) * bins + min(int(v), bins - 1)] += 1
        else:
            outside += 1
    return outside


@jit.helper
def _marginal_histogram(x, low, scale, bins, counts):
    """Compiled marginal update: per coordinate, counts (d, bins) of the values inside that
    coordinate's range; returns the number of rows with any coordinate outside."""
    outside = 0
    for i in range(x.shape[0]):
        out = False
        for j in range(x.shape[1]):
            u = (x[i, j] - low[j]) * scale[j]
            if u >= 0.0 and u <= bins:
                counts[j, min(int(u), bins - 1)] += 1
            else:
                out = True
        if out:
            outside += 1
    return outside


class SymmetricKL:
    """Streaming symmetric KL between ``target`` and the collected samples.

    Parameters
    ----------
    target : a Target with a ``box``; grid mode uses ``grid_mass``, marginal mode needs
        exact marginals (``marginal_cdf``).
    bins : bins per axis (grid) or per marginal.
    pseudocount : a ≥ 0 added to every bin of the sample histogram in KL(p‖p̂).
    mode : "auto" (grid when d = 2, marginal otherwise), "grid" (2-D only) or "marginal".

    ``update(samples)`` bins a block (k, d); ``compute(buffer)`` returns
    ``{"kl", "kl_outside"}`` from the counts (the buffer is not used).
    """

    def __init__(
        self, target: Target, bins: int = 50, pseudocount: float = 0.5, mode: str = "auto"
    ):
        bins = int(bins)
        if bins < 1:
            raise ValueError(f"bins must be >= 1, got {bins}")
        pseudocount = float(pseudocount)
        if not (math.isfinite(pseudocount) and pseudocount >= 0):
            raise ValueError(f"pseudocount must be a finite number >= 0, got {pseudocount}")
        if mode not in ("auto", "grid", "marginal"):
            raise ValueError(f"mode must be 'auto', 'grid' or 'marginal', got {mode!r}")
        if target.box is None:
            raise CapabilityError(f"target {target.name!r} has no box for the KL histogram")
        if mode == "auto":
            mode = "grid" if target.dim == 2 else "marginal"
        if mode == "grid" and target.dim != 2:
            raise ValueError(f"grid KL needs a 2-D target, {target.name!r} has dim {target.dim}")
        self.mode = mode
        self.bins = bins
        self.pseudocount = pseudocount
        self.dim = target.dim
        self._low = target.box[:, 0].copy()
        self._high = target.box[:, 1].copy()
        self._scale = bins / (self._high - self._low)
        if not np.all(self._high > self._low):
            raise ValueError(f"target {target.name!r} has an empty box {target.box.tolist()}")
        edges = [np.linspace(lo, hi, bins + 1) for lo, hi in target.box]
        if mode == "grid":
            self._p = np.asarray(target.grid_mass(edges), dtype=float).reshape(bins * bins)
            self._p = self._p / self._p.sum()
            self._counts = np.zeros(bins * bins, dtype=np.int64)
        else:
            p = np.stack([np.diff(target.marginal_cdf(j, e)) for j, e in enumerate(edges)])
            self._p = p / p.sum(axis=1, keepdims=True)
            self._counts = np.zeros((self.dim, bins), dtype=np.int64)
        self.n_total = 0
        self.n_outside = 0

    def _bin_index(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bin index of each entry of ``x`` (k, d) per coordinate, and whether it is in the box."""
        inside = (x >= self._low) & (x <= self._high)
        u = (x - self._low) / (self._high - self._low) * self.bins
        idx = np.minimum(np.floor(np.where(inside, u, 0.0)).astype(np.int64), self.bins - 1)
        return idx, inside

    def update(self, samples) -> None:
        """Add a block of collected samples, shape (k, d) (k may be 0)."""
        x = np.asarray(samples, dtype=float).reshape(-1, self.dim)
        if x.shape[0] == 0:
            return
        if jit.enabled():  # one compiled pass over the block instead of ~10 numpy passes
            count = _grid_histogram if self.mode == "grid" else _marginal_histogram
            outside = count(np.ascontiguousarray(x), self._low, self._scale, self.bins,
                            self._counts)
            self.n_total += x.shape[0]
            self.n_outside += int(outside)
            return
        idx, inside = self._bin_index(x)
        all_inside = inside.all(axis=1)
        self.n_total += x.shape[0]
        self.n_outside += int(x.shape[0] - all_inside.sum())
        if self.mode == "grid":
            flat = idx[all_inside, 0] * self.bins + idx[all_inside, 1]
            self._counts += np.bincount(flat, minlength=self.bins * self.bins)
        else:
            flat = (idx + np.arange(self.dim) * self.bins)[inside]
            counts = np.bincount(flat, minlength=self.dim * self.bins)
            self._counts += counts.reshape(self.dim, self.bins)

    def value(self) -> float:
        """The symmetric KL of the samples so far (NaN before any in-box sample)."""
        if self.mode == "grid":
            return symmetric_kl(self._p, self._counts, self.pseudocount)
        per_dim = [symmetric_kl(p, c, self.pseudocount) for p, c in zip(self._p, self._counts)]
        return float(np.mean(per_dim))

    def compute(self, buffer=None) -> dict:
        """Trace columns ``kl`` and ``kl_outside`` (fraction of samples outside the box)."""
        outside = self.n_outside / self.n_total if self.n_total else math.nan
        return {"kl": self.value(), "kl_outside": outside}

    def state_dict(self) -> dict:
        """Streaming state (counts and totals) for resuming a run."""
        return {"counts": self._counts.copy(), "n_total": self.n_total, "n_outside": self.n_outside}

    def load_state_dict(self, state: dict) -> None:
        """Restore the streaming state saved by :meth:`state_dict`."""
        counts = np.asarray(state["counts"], dtype=np.int64)
        if counts.shape != self._counts.shape:
            raise ValueError(f"KL counts have shape {counts.shape}, expected {self._counts.shape}")
        self._counts = counts.copy()
        self.n_total = int(state["n_total"])
        self.n_outside = int(state["n_outside"])


def kl_floor(target: Target, n_values, repeats: int = 20, bins: int = 50, pseudocount: float = 0.5,
             mode: str = "auto", band: tuple[float, float] = (10.0, 90.0), seed: int = 0):
    """The symmetric KL of n exact draws of π: the level below which a sampler's KL is
    histogram noise (the same grid, box and pseudocount as :class:`SymmetricKL`).

    For each n in ``n_values`` the histogram of n in-box exact draws is drawn ``repeats``
    times directly from its law — a multinomial over the bins with the target's box-normalised
    masses (grid: the joint cells; marginal: each coordinate's bins, drawn independently per
    coordinate, exact for independent coordinates such as gmm32's) — so the cost does not
    grow with n. Returns a DataFrame with columns ``n``, ``median``, ``lo``, ``hi`` (the
    ``band`` percentiles over repeats).
    """
    import pandas as pd

    repeats = int(repeats)
    if not 1 <= repeats <= 10_000:
        raise ValueError(f"repeats must be in [1, 10000], got {repeats}")
    n_values = np.unique(np.asarray(n_values, dtype=np.int64))
    if n_values.size == 0 or n_values[0] < 1:
        raise ValueError(f"n_values must be counts >= 1, got {n_values.tolist()}")
    metric = SymmetricKL(target, bins=bins, pseudocount=pseudocount, mode=mode)
    rng = np.random.default_rng(seed)
    rows = []
    for n in n_values.tolist():
        values = []
        for _ in range(repeats):
            if metric.mode == "grid":
                counts = rng.multinomial(n, metric._p)
                values.append(symmetric_kl(metric._p, counts, metric.pseudocount))
            else:
                values.append(float(np.mean([
                    symmetric_kl(p, rng.multinomial(n, p), metric.pseudocount) for p in metric._p])))
        lo, med, hi = np.percentile(values, [band[0], 50.0, band[1]])
        rows.append({"n": n, "median": med, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)
