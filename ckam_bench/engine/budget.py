"""What a run may spend and where it checkpoints: the budget, the sampler clock and the
checkpoint schedule (used by :class:`ckam_bench.engine.runner.Runner`).

Costs are counted in the :data:`UNITS` — sampler seconds (on the budget's clock), iterations,
density evaluations, gradient evaluations. :class:`Budget` says when a run stops,
:func:`checkpoint_times` lays out the checkpoint positions in one unit, :class:`Schedule`
tracks the run along them (which checkpoint is next, how many iterations the next block may
run without passing it or a budget) and :class:`SamplerClock` counts only the time spent
inside the sampler.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

UNITS = ("seconds", "iterations", "density", "grad")
"""Cost units of budgets and checkpoints: sampler seconds (on the budget's clock), iterations,
density evaluations, gradient evaluations."""
MAX_CHECKPOINTS = 100_000


@dataclass(frozen=True)
class Budget:
    """When a run stops: sampler seconds on ``clock`` (``wall``: wall time of the sampler
    loop; ``cpu``: the sampler thread's CPU time), and optionally a number of iterations (met
    exactly), density evaluations or gradient evaluations (met at the end of the iteration that
    reaches them), and a hard wall-clock cap on the whole run."""

    seconds: float
    max_iterations: int | None = None
    wall_seconds: float | None = None
    max_density: int | None = None
    max_grad: int | None = None
    clock: str = "wall"

    def __post_init__(self):
        if not (math.isfinite(self.seconds) and self.seconds > 0):
            raise ValueError(f"budget.seconds must be a finite number > 0, got {self.seconds}")
        for key in ("max_iterations", "max_density", "max_grad"):
            value = getattr(self, key)
            if value is not None and int(value) < 1:
                raise ValueError(f"budget.{key} must be >= 1, got {value}")
        if self.wall_seconds is not None and not self.wall_seconds > 0:
            raise ValueError(f"budget.wall_seconds must be > 0, got {self.wall_seconds}")
        if self.clock not in ("wall", "cpu"):
            raise ValueError(f"budget.clock must be wall or cpu, got {self.clock!r}")

    @property
    def wall_cap(self) -> float:
        return self.wall_seconds if self.wall_seconds is not None else 2.0 * self.seconds + 60.0

    def limit(self, unit: str) -> float | None:
        """The budget in ``unit`` (None when the budget sets none)."""
        return {"seconds": self.seconds, "iterations": self.max_iterations,
                "density": self.max_density, "grad": self.max_grad}[unit]

    def exhausted(self, position) -> str | None:
        """Why a run at ``position(unit)`` stops (``max_iterations``, ``max_density``,
        ``max_grad`` or ``budget``, checked in that order), None while it may go on."""
        for unit, reason in (("iterations", "max_iterations"), ("density", "max_density"),
                             ("grad", "max_grad"), ("seconds", "budget")):
            limit = self.limit(unit)
            if limit is not None and position(unit) >= limit:
                return reason
        return None


POSITION_COLUMNS = {"seconds": "sampler_seconds", "iterations": "iterations",
                    "density": "n_density", "grad": "n_grad"}
"""The trace column holding a run's position in each of the :data:`UNITS`."""


@dataclass(frozen=True)
class EarlyStop:
    r"""Stop a run once its answer is known (``budget.early_stop``; issue 44 §3).

    At each checkpoint, let :math:`c` be the cost (in the checkpoint unit) at the first
    checkpoint from which the trace column ``metric`` has stayed below ``threshold`` up to now
    (the cost to accuracy the ranking reads, :func:`ckam_bench.report.ranking.cost_to_accuracy`,
    as it stands so far). The run stops when

    .. math:: \text{cost now} \ge \text{multiple}\cdot c \quad\text{and}\quad
              \text{ESS}_{\min} \ge \text{min\_ess},

    so the metric has stayed below its threshold over a ``multiple`` of the first-crossing cost
    and the ESS the ranking's ESS key reads rests on at least ``min_ess`` effective draws (the
    ESS floor under which a run is flagged too short to trust). A run whose metric rises above
    the threshold again starts a new streak.

    **Futility** (``futility``: a margin F, or None for never). A run whose metric is above
    the threshold stops as futile when, with min ESS ≥ ``min_ess``,

    .. math:: m_{\text{now}}\cdot\frac{\text{cost now}}{\text{budget}} \ge F\cdot\text{threshold}:

    b² of a chain past its transient falls at best as 1/cost (a squared standardised Monte Carlo
    error), so even at that rate it would still be F times the threshold at the end of the
    budget. Its cost to accuracy is then ∞, as at the full budget unless the metric would have
    fallen faster than 1/cost (the rule's error, measured by
    ``scripts/early_stop_agreement.py``). Only the rows decide: a resumed run decides as an
    uninterrupted one would, and applying :meth:`decide` to a full-budget run's trace prefix by
    prefix gives exactly where it would have stopped (the rank-agreement check,
    ``scripts/early_stop_agreement.py``)."""

    metric: str = "bias2"
    threshold: float = 0.01
    multiple: float = 4.0
    min_ess: float = 100.0
    futility: float | None = None

    def __post_init__(self):
        if not (isinstance(self.metric, str) and self.metric):
            raise ValueError(f"budget.early_stop.metric must be a trace column name, got {self.metric!r}")
        if not (math.isfinite(self.threshold) and self.threshold > 0):
            raise ValueError(f"budget.early_stop.threshold must be a finite number > 0, got {self.threshold}")
        if not (math.isfinite(self.multiple) and self.multiple >= 1):
            raise ValueError(f"budget.early_stop.multiple must be a finite number >= 1, got {self.multiple}")
        if not (math.isfinite(self.min_ess) and self.min_ess >= 0):
            raise ValueError(f"budget.early_stop.min_ess must be a finite number >= 0, got {self.min_ess}")
        if self.futility is not None and not (math.isfinite(self.futility) and self.futility > 0):
            raise ValueError(f"budget.early_stop.futility must be null or a finite number > 0, got {self.futility}")

    def first_below(self, rows: list[dict], unit: str) -> float | None:
        """The cost at the first row of the current streak below the threshold (None when the
        latest row is not below)."""
        column = POSITION_COLUMNS[unit]
        first = None
        for row in reversed(rows):
            value = row.get(self.metric)
            try:
                below = value is not None and float(value) < self.threshold
            except (TypeError, ValueError):
                below = False
            if not below:
                break
            first = float(row[column])
        return first

    def decide(self, rows: list[dict], unit: str, limit: float | None = None) -> dict | None:
        """Whether to stop after the latest of ``rows`` (``limit``: the budget in ``unit``,
        for the futility rule): None, or what decided it, as ``status.json`` records it:
        ``kind`` (``known``: the cost to accuracy is known; ``futile``), the first-crossing
        cost (``first_below``; None when futile), the cost now (``at``), the min ESS and the
        metric now."""
        if not rows:
            return None
        now = float(rows[-1][POSITION_COLUMNS[unit]])
        ess = rows[-1].get("ess_min")
        ess = float(ess) if ess is not None else math.nan
        if not now > 0 or (self.min_ess > 0 and not ess >= self.min_ess):
            return None
        try:
            value = float(rows[-1].get(self.metric))
        except (TypeError, ValueError):
            return None
        first = self.first_below(rows, unit)
        found = {"unit": unit, "first_below": first, "at": now, "ess_min": ess, "metric": value}
        if first is not None:
            return {"kind": "known", **found} if now >= self.multiple * max(first, 0.0) else None
        if (self.futility is not None and limit is not None and math.isfinite(value)
                and value * now / limit >= self.futility * self.threshold):
            return {"kind": "futile", **found}
        return None

    def describe(self) -> dict:
        return {"metric": self.metric, "threshold": self.threshold, "multiple": self.multiple,
                "min_ess": self.min_ess, "futility": self.futility}


def checkpoint_times(limit: float, first: float = 0.05, per_decade: int | None = 8,
                     every: float | None = None, unit: str = "seconds") -> np.ndarray:
    """Sorted checkpoint positions in ``unit``, all < ``limit``.

    The union of a log-spaced grid from ``first`` to ``limit`` (``per_decade`` points per
    factor 10) and, when ``every`` is set, the multiples of ``every``. Counts (iterations,
    evaluations) are rounded up to whole numbers. More than :data:`MAX_CHECKPOINTS` positions
    is an error, raised before anything is allocated.
    """
    if not first > 0:
        raise ValueError(f"checkpoint.first must be > 0, got {first}")
    times = []
    if per_decade:
        if int(per_decade) < 1:
            raise ValueError(f"checkpoint.per_decade must be >= 1 or null, got {per_decade}")
        if first < limit:
            n = int(math.floor(per_decade * math.log10(limit / first))) + 1
            if n > MAX_CHECKPOINTS:
                raise ValueError(f"checkpoint.per_decade gives {n} checkpoints, more than "
                                 f"{MAX_CHECKPOINTS}")
            times.append(first * 10.0 ** (np.arange(n) / per_decade))
    if every is not None:
        if not every > 0:
            raise ValueError(f"checkpoint.every must be > 0, got {every}")
        n = math.ceil(limit / every)
        if n > MAX_CHECKPOINTS:
            raise ValueError(f"checkpoint.every={every} gives {n:.3g} checkpoints in a budget "
                             f"of {limit:g} {unit}, more than {MAX_CHECKPOINTS}")
        times.append(np.arange(1, n + 1) * every)
    if not times:
        return np.empty(0)
    t = np.concatenate(times)
    if unit != "seconds":
        t = np.ceil(t)
    t = np.unique(t)
    return t[t < limit]


class Schedule:
    """A run's way along its checkpoint positions ``times`` (in ``unit``) under ``budget``.

    ``next`` is the index of the next checkpoint (stored in the resume state, so a resumed run
    never repeats a row). ``position(unit)`` is the run's position in any of the :data:`UNITS`.
    """

    def __init__(self, times: np.ndarray, unit: str, budget: Budget, position):
        self.times = times
        self.unit = unit
        self.budget = budget
        self.position = position
        self.next = 0

    def due(self) -> bool:
        """True when the run has reached the next checkpoint; moves past every position it
        has reached (several, when one block passed more than one)."""
        here = self.position(self.unit)
        if self.next < len(self.times) and here >= self.times[self.next]:
            while self.next < len(self.times) and here >= self.times[self.next]:
                self.next += 1
            return True
        return False

    def seconds_left(self) -> float:
        """Sampler seconds to the end of the budget, or to the next checkpoint in seconds."""
        clock = self.position("seconds")
        left = self.budget.seconds - clock
        if self.unit == "seconds" and self.next < len(self.times):
            left = min(left, self.times[self.next] - clock)
        return left

    def iterations_left(self, cost: dict) -> int:
        """The most iterations the next block may run without passing the next checkpoint or
        a budget in a counted unit (iterations exactly; evaluations at ``cost``, the
        evaluations per iteration of the latest block)."""
        limits = {unit: self.budget.limit(unit) for unit in ("iterations", "density", "grad")}
        if self.unit != "seconds" and self.next < len(self.times):
            mark = self.times[self.next]
            limits[self.unit] = mark if limits[self.unit] is None else min(limits[self.unit], mark)
        n = 1 << 62
        for unit, limit in limits.items():
            if limit is None:
                continue
            left = limit - self.position(unit)
            per = 1.0 if unit == "iterations" else cost[unit]
            if per > 0:
                n = min(n, max(1, math.ceil(left / per)))
        return n


class SamplerClock:
    """Time spent inside the sampler only, in wall seconds (``wall``) and in CPU seconds of
    the whole process (``cpu``: ``time.process_time``, every thread included); ``last`` is the
    wall time of the latest timed call."""

    def __init__(self):
        self.wall = 0.0
        self.cpu = 0.0
        self.last = 0.0

    @contextmanager
    def running(self):
        """Count the time of the ``with`` body."""
        t0, c0 = time.perf_counter(), time.process_time()
        yield  # a call that raises is not counted
        self.last = time.perf_counter() - t0
        self.wall += self.last
        self.cpu += time.process_time() - c0

    def on(self, clock: str) -> float:
        """Sampler seconds on ``clock`` (``wall`` or ``cpu``)."""
        return self.cpu if clock == "cpu" else self.wall
