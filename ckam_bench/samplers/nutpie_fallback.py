"""nutpie's fallback for a target without a compiled density (or ``CKAM_BENCH_JIT=0``):
nutpie's ``from_pyfunc`` with a Python callback per evaluation, several times slower than its
native speed (:mod:`ckam_bench.samplers.nutpie_native`), held between blocks by a
:class:`Gate` on a condition variable, as the native path holds it on a pipe."""

from __future__ import annotations

import math
import threading

import numpy as np

from ckam_bench.targets.base import Target


class Gate:
    """Hands nutpie's thread ``n`` draws at a time. The density callback waits while the granted
    draws are done; the expansion callback records each draw and wakes ``advance`` at the last."""

    def __init__(self):
        self.cond = threading.Condition()
        self.quota = 0
        self.done = 0
        self.evals = 0
        self.nonfinite = 0
        self.draws: list[np.ndarray] = []
        self.logps: list[float] = []
        self.values: dict[bytes, float] = {}  # log π at the points evaluated since the last draw
        self.last_logp = math.nan
        self.closing = False

    def evaluated(self, x: np.ndarray, value: float) -> None:
        """Count one evaluation of the density at ``x`` (its value kept for the draw's log density)."""
        self.evals += 1
        if not math.isfinite(value):  # nutpie ends the trajectory there (a divergence)
            self.nonfinite += 1
        self.values[x.tobytes()] = value

    def wait_for_quota(self) -> bool:
        """Called on nutpie's thread once the granted draws are done: waits for the next grant;
        False once closing."""
        with self.cond:
            while self.done >= self.quota and not self.closing:
                self.cond.wait()
            return not self.closing

    def record(self, x: np.ndarray) -> None:
        """Called on nutpie's thread once per draw."""
        with self.cond:
            if self.closing:
                return
            self.draws.append(np.array(x, dtype=float))
            # the draw is a point of its trajectory (evaluated) or the previous state
            self.last_logp = self.values.get(x.tobytes(), self.last_logp)
            self.values.clear()
            self.logps.append(self.last_logp)
            self.done += 1
            if self.done >= self.quota:
                self.cond.notify_all()

    def grant(self, n: int, finished) -> tuple[list[np.ndarray], list[float], int, int]:
        """Let ``n`` more draws happen and wait for them (``finished()`` true: the chain died).
        Returns the draws, their log densities, the density evaluations and the non-finite ones
        among them."""
        with self.cond:
            self.quota += n
            self.cond.notify_all()
            while self.done < self.quota:
                self.cond.wait(0.2)
                if self.done < self.quota and finished():
                    raise RuntimeError("nutpie's chain stopped")
            draws, self.draws = self.draws, []
            logps, self.logps = self.logps, []
            evals, self.evals = self.evals, 0
            nonfinite, self.nonfinite = self.nonfinite, 0
        return draws, logps, evals, nonfinite

    def close(self) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()


def finished(background) -> bool:
    """Whether nutpie's chain has stopped (its error, if it failed, is raised here)."""
    try:
        return background.is_finished
    except TimeoutError:  # nutpie's way of saying "still running"
        return False


def close(gate: Gate, background) -> None:
    gate.close()
    try:
        background.cancel()
    except BaseException:  # noqa: BLE001 - nutpie reports a stopped chain's error again on cancel
        pass


def python_density(target: Target, gate: Gate):
    """The fallback's ``logp(x) -> (log π(x), ∇log π(x))`` for ``from_pyfunc``: a Python call per
    evaluation, held by the gate between blocks."""

    def logp(x):
        if (gate.done >= gate.quota or gate.closing) and not gate.wait_for_quota():
            return -math.inf, np.zeros(x.shape[0])
        value, grad = target._log_density(x), target._grad_log_density(x)
        gate.evaluated(x, value)
        return value, grad

    return logp
