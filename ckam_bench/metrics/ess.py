r"""Bulk effective sample size per coordinate, reported as min / median / max.

The bulk ESS (Vehtari et al. 2021, "Rank-normalization, folding, and localization: an
improved R-hat", as implemented by arviz-stats) of one chain :math:`x_{1:n}` of coordinate j
rank-normalises the draws, splits the chain in two halves and estimates

.. math:: \mathrm{ESS}_j = \frac{n}{1 + 2\sum_{k\ge1} \rho_k},

with the autocorrelations :math:`\rho_k` summed by Geyer's initial monotone sequence.

Bounded cost: :class:`BulkESS` computes the ESS on the run's :class:`ThinningBuffer` of
collected samples, which keeps every ``stride``-th state (at most ``capacity`` of them), so a
checkpoint costs O(capacity · d) whatever the chain length. The value is the ESS of the
*thinned* chain. Thinning by s keeps n/s draws whose autocorrelation time is about τ/s (τ that
of the full chain), so while ESS ≪ buffer size (τ ≫ s) it matches the full chain's ESS n/τ;
once the thinned draws are nearly independent (τ ≲ s) it saturates near the number of stored
draws and is a lower bound on the full chain's ESS.

The ESS per sampler second and per density evaluation follow from the trace's ``ess_*``,
``time_sampler`` and evaluation-count columns.
"""

from __future__ import annotations

import math

import numpy as np
from arviz_stats.base import array_stats

from ckam_bench.targets.base import Target

MIN_SAMPLES = 20
"""Below this many stored draws the ESS is reported as NaN."""


def ess_per_dim(x) -> np.ndarray:
    """Bulk ESS of each column of a single chain ``x``, shape (n, d) → (d,).

    Returns NaNs when n < :data:`MIN_SAMPLES`. A constant column (a chain that never moved in
    that coordinate) gets ESS 1: its mean carries the information of one draw. (arviz-stats
    returns n for it, which would rank a stuck chain as perfectly mixed.)
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.shape[0] < MIN_SAMPLES:
        return np.full(x.shape[1], math.nan)
    ess = array_stats.ess(x.T, chain_axis=None, draw_axis=-1, method="bulk")
    ess = np.atleast_1d(np.asarray(ess, dtype=float))
    return np.where(np.ptp(x, axis=0) == 0, 1.0, ess)


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
