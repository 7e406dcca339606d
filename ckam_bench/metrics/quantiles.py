r"""Quantile deviation (the KAMH paper's Figure 5; Haario et al. 1999; SPEC §6).

A target with exact quantile regions provides ``quantile_statistic(X)``: a statistic
:math:`u(x)` that is U(0, 1) under π, the region of level q being :math:`\{x : u(x) \le q\}`
(banana: the χ²_d CDF of the whitened point; flower: the χ²_{d−1} CDF of the whitened ring
coordinate and the other coordinates). For the n collected samples, the empirical coverage of
level q is :math:`\hat c_q = \frac1n\#\{t : u(x_t) \le q\}` and

.. math::
    \text{quantile\_deviation} = \frac{1}{|Q|}\sum_{q\in Q} |\hat c_q - q|,
    \qquad Q = \{0.1, 0.2, \dots, 0.9\}.

Columns: ``quantile_deviation`` and ``quantile_coverage_error`` (the list of
:math:`|\hat c_q - q|`, one per level, for the per-quantile bars of Figure 5). Streaming: each
block adds its counts, so a checkpoint costs O(|Q|) and covers every collected sample. A target
without ``quantile_statistic`` raises :class:`CapabilityError` (the columns are absent).
"""

from __future__ import annotations

import math

import numpy as np

from ckam_bench.targets.base import CapabilityError, Target, has_quantile_statistic, quantile_statistic_of


class QuantileDeviation:
    """Checkpoint metric: mean |empirical − nominal| coverage of the target's quantile regions.

    Parameters
    ----------
    target : the run's target (must define ``ckam_quantile_statistic``).
    levels : the nominal levels q, each in (0, 1) (default 0.1, …, 0.9).
    """

    def __init__(self, target: Target, levels=None):
        if not has_quantile_statistic(target):
            raise CapabilityError(f"target {target.name!r} defines no exact quantile regions")
        levels = np.arange(1, 10) / 10.0 if levels is None else np.asarray(levels, float).ravel()
        if levels.size == 0 or levels.size > 1000 or not np.all((levels > 0) & (levels < 1)):
            raise ValueError(f"levels must be 1 to 1000 numbers in (0, 1), got {levels.tolist()}")
        self.levels = levels
        self._statistic = lambda X: quantile_statistic_of(target, X)
        self.counts = np.zeros(levels.size, dtype=np.int64)
        self.n = 0

    def describe(self) -> dict:
        return {"levels": self.levels.tolist()}

    def update(self, samples) -> None:
        x = np.asarray(samples, float)
        if x.shape[0]:
            u = self._statistic(x)
            self.counts += np.count_nonzero(u[:, None] <= self.levels[None, :], axis=0)
            self.n += x.shape[0]

    def compute(self, buffer=None) -> dict:
        if self.n == 0:
            return {"quantile_deviation": math.nan, "quantile_coverage_error": np.full(self.levels.size, np.nan)}
        error = np.abs(self.counts / self.n - self.levels)
        return {"quantile_deviation": float(error.mean()), "quantile_coverage_error": error}

    def state_dict(self) -> dict:
        return {"counts": self.counts.copy(), "n": np.int64(self.n)}

    def load_state_dict(self, state: dict) -> None:
        self.counts = np.asarray(state["counts"], np.int64).copy()
        self.n = int(state["n"])
