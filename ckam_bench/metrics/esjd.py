r"""Expected squared jumping distance (ESJD) and the regression-coefficient distance.

:class:`ESJD` (``esjd``) — the mean over consecutive collected states of the squared jump,

.. math::
    \widehat{\mathrm{ESJD}} = \frac{1}{m-1}\sum_{t=2}^{m}\|x_t - x_{t-1}\|_2^2 ,

streaming: each block adds its jumps (and the one from the previous block's last state) to a
running sum, so a checkpoint costs O(1) and the run can be resumed (``state_dict``). The
divergence-minimisation paper *defines* ESJD as the sum Σ‖x_t − x_{t−1}‖² but the values in its
tables (0.1–40) are per-step means; ckam-bench reports the mean. Only collected states count
(burn-in and exploration states are not collected), so the first collected state has no
predecessor; states of several chains count only for the collected (target) chain.

:class:`CoefficientDistance` (``coefficient_error``) — ‖Ê[β] − β_true‖ over a regression
target's coefficient block (``target.coefficient_slice``), against its known data-generating
coefficients ``target.true_coefficients`` (the paper's Table 4 column). Streaming sum; a target
without them raises :class:`~ckam_bench.targets.base.CapabilityError` (the column is left out).
"""

from __future__ import annotations

import math

import numpy as np

from ckam_bench.targets.base import CapabilityError, Target, true_coefficients_of


class ESJD:
    """Streaming mean squared jump ‖x_t − x_{t−1}‖² over consecutive collected states."""

    def __init__(self, target: Target):
        self.dim = target.dim
        self._last = np.full(self.dim, np.nan)
        self._sum = 0.0
        self._count = 0

    def update(self, samples) -> None:
        samples = np.asarray(samples, float).reshape(-1, self.dim)
        if samples.shape[0] == 0:
            return
        if np.all(np.isfinite(self._last)):
            chain = np.concatenate([self._last[None, :], samples])
        else:
            chain = samples
        jumps = np.diff(chain, axis=0)
        self._sum += float(np.einsum("ij,ij->", jumps, jumps))
        self._count += jumps.shape[0]
        self._last = samples[-1].copy()

    def compute(self, buffer=None) -> dict:
        return {"esjd": self._sum / self._count if self._count else math.nan}

    def state_dict(self) -> dict:
        return {"last": self._last.copy(), "sum": np.float64(self._sum), "count": np.int64(self._count)}

    def load_state_dict(self, state: dict) -> None:
        self._last = np.asarray(state["last"], float).copy()
        self._sum = float(state["sum"])
        self._count = int(state["count"])


class CoefficientDistance:
    """Streaming ‖Ê[β] − β_true‖ for targets with ``ckam_true_coefficients``."""

    def __init__(self, target: Target):
        known = true_coefficients_of(target)
        if known is None:
            raise CapabilityError(f"target {target.name!r} has no true regression coefficients")
        self.truth, self.columns = known
        self._sum = np.zeros(self.truth.size)
        self._count = 0

    def update(self, samples) -> None:
        samples = np.asarray(samples, float)
        if samples.shape[0]:
            self._sum += samples[:, self.columns].sum(axis=0)
            self._count += samples.shape[0]

    def compute(self, buffer=None) -> dict:
        if not self._count:
            return {"coefficient_error": math.nan}
        return {"coefficient_error": float(np.linalg.norm(self._sum / self._count - self.truth))}

    def state_dict(self) -> dict:
        return {"sum": self._sum.copy(), "count": np.int64(self._count)}

    def load_state_dict(self, state: dict) -> None:
        self._sum = np.asarray(state["sum"], float).copy()
        self._count = int(state["count"])
