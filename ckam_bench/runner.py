"""The budget loop: advance a sampler in blocks on a sampler clock, checkpoint, store.

The runner knows no sampler, target or metric by name; it only uses the interfaces of
:mod:`ckam_bench.samplers.base`, :mod:`ckam_bench.targets.base` and the metric protocol
(``update(samples)`` per block, ``compute(buffer) -> dict`` per checkpoint).

**Sampler clock.** Only time spent inside ``sampler.init`` and ``sampler.advance`` counts
(benchopt's callback design; ``sampler.warm_up``, e.g. JIT compilation, runs before the clock): the clock stops while metrics are updated and computed, rows
are written and the progress bar redraws. The run stops at the first of: the budget of
sampler seconds, the iteration cap (met exactly: the last block is shortened), the hard
wall-clock cap, or Ctrl-C / SIGTERM (the current block finishes, a final checkpoint is written
and the run is marked ``interrupted``; see :class:`StopRequest`).

**Blocks.** Block sizes adapt so that one block takes about ``block_seconds`` of sampler
time, shortened near a checkpoint time, the end of the budget and the iteration cap.

**Checkpoints** happen when the run passes each position of the schedule (see
:func:`checkpoint_times`), in the unit ``checkpoint.on`` names — sampler seconds, iterations,
density evaluations or gradient evaluations (:data:`UNITS`), so samplers of very different cost
per iteration share checkpoints on the axis a comparison uses — and once more at the end. In
a counted unit, blocks are shortened to land on each checkpoint (exactly for iterations; for
evaluations, at the first iteration that reaches it). Each checkpoint writes one row to
``trace.parquet``, ``status.json`` and the resume state (:mod:`ckam_bench.rundir`). The bounded
``samples.parquet`` / ``diagnostics.parquet`` (heavier) are rewritten with it unless the wall
time spent outside the sampler so far exceeds ``max_overhead`` times the sampler time; they
then wait for a later checkpoint (they are always written at the first and at the last). A
trace row holds

``run_id, target, sampler, kernel, seed, checkpoint, sampler_seconds`` (on the budget's
clock), ``sampler_wall_seconds, sampler_cpu_seconds, wall_seconds, eval_seconds`` (wall time
outside the sampler, warm-up excluded), ``iterations, n_collected, n_density, n_grad,
n_nonfinite, n_jitter, acceptance, acceptance_<phase>…, step_size, noise, iters_per_second,``
the sampler's own ``trace_columns``, the metric columns (``kl, kl_outside, ess_min,
ess_median, ess_max, mcse_max, ess_min_stored`` by default; ``ess_*`` on the whole collected
chain, fed block by block), ``ess_per_second``, ``ess_per_density`` and ``ess_per_grad`` (min
ESS per sampler second, density and gradient evaluation).

**Clocks.** ``budget.clock=wall`` (default) counts the wall time of the sampler's calls;
``budget.clock=cpu`` the CPU time of the whole process (``time.process_time``: every thread,
BLAS and numba workers included) while the sampler advances, which another process competing
for the cores does not inflate. Both are recorded in every row; a run whose sampler got less
than 80 % of a core is marked ``contended`` in its status.

**Threads.** One chain is one core: the run pins the BLAS/OpenMP thread pools
(``threadpoolctl``) and numba's threads to ``threads`` (default 1) and records the counts in
``provenance.threads``.

**Flags.** A sampler that goes wrong says so: every status carries ``flags`` (a list, empty
for a healthy run) and ``flag_notes`` (flag → sentence) from :meth:`Runner.flags` — ``stuck``
(no accepted move over the last 10 % of the iterations, at least 100), ``nonfinite_proposals``
(every proposal of that stretch non-finite), ``nonfinite_state`` (the chain's state or log
density became NaN or ±inf). The end-of-run line, ``ckam-bench-figures``, the HTML report and
the ranking show them (:mod:`ckam_bench.report.ranking`).

**Loops.** ``status.json``'s ``provenance.loops`` says which loops actually ran — ``compiled``,
``python`` or ``mixed`` — counted per block from the compiled kernels' calls
(:data:`ckam_bench.jit.KERNEL_CALLS`), with ``provenance.loops_note`` saying why a run was not
compiled (numba missing, ``CKAM_BENCH_JIT=0``, or a target without a compiled density, such as
a plugin's Python target).

**Resume.** The resume state holds, at every checkpoint, the sampler state, the random
generator states, the clocks, all counters, the metric accumulators, the bounded stores and
the trace rows, so it is never behind the trace (at most the blocks since the last
checkpoint are redone after a kill). :meth:`Runner.run` on a folder whose claim found a
verified state continues from there: the trace continues without gaps or duplicates, and
since every sampler's random stream does not depend on how iterations are split into blocks,
a resumed run with checkpoints and budget in iterations writes exactly the rows and samples of
an uninterrupted one. The state is removed when a run completes. A sampler that cannot save its
chain's state (``resumable = False``) restarts a killed run from its first iteration instead
(its status says ``restarted``), never continuing a new chain in an old trace.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ckam_bench import jit, store
from ckam_bench.metrics.buffer import ThinningBuffer
from ckam_bench.provenance import load_average

DIAG_COLUMNS = ("iteration", "phase", "accepted", "accept_prob", "step_size", "noise", "logp")
STUCK_FRACTION = 0.1
STUCK_MIN = 100
"""A run is flagged ``stuck`` when no move was accepted over its last STUCK_FRACTION of the
iterations (at least STUCK_MIN iterations, or the whole run when it is shorter)."""
FLAGS = ("stuck", "nonfinite_proposals", "nonfinite_state")


class StopRequest:
    """Ctrl-C / SIGTERM handling: the first signal asks the run to stop after the current
    block (a flag checked between blocks, ~20 ms apart), so it never interrupts a sampler's
    compiled inner loop; a second Ctrl-C raises KeyboardInterrupt at once."""

    def __init__(self):
        self.requested = False
        self._previous = {}

    def _handle(self, signum, frame):
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        return False


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


class _Progress:
    """A tqdm bar over the budget of sampler seconds (quiet when not on a terminal)."""

    def __init__(self, enabled, total: float, desc: str):
        import sys

        from tqdm.auto import tqdm

        if enabled == "auto":
            enabled = sys.stderr.isatty()
        self.bar = tqdm(total=total, desc=desc, unit="s", disable=not bool(enabled),
                        bar_format="{desc} {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f}s "
                                   "[{elapsed}<{remaining}{postfix}]")

    def update(self, clock: float, postfix: dict) -> None:
        if self.bar.disable:
            return
        self.bar.n = min(clock, self.bar.total)
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.refresh()

    def close(self):
        self.bar.close()


class Runner:
    """Run one sampler on one target under a budget, writing its run folder.

    ``folder`` is a claimed :class:`ckam_bench.rundir.RunFolder` (the CLI claims it); a plain
    path is claimed here for the config hash in ``status_extra`` (used by tests and scripts).
    ``checkpoint_unit`` is one of :data:`UNITS`; ``checkpoints`` are positions in that unit.
    """

    def __init__(self, sampler, target, metrics: dict, budget: Budget, folder, rng,
                 labels: dict, x0=None, checkpoints: np.ndarray | None = None,
                 progress="auto", block_seconds: float = 0.02, samples_capacity: int = 10000,
                 diagnostics_capacity: int = 20000, diagnostics_head: int = 20000,
                 max_overhead: float | None = 0.03, status_extra: dict | None = None,
                 checkpoint_unit: str = "seconds", threads: int = 1):
        self.sampler = sampler
        self.threads = int(threads)
        self.thread_counts: dict = {}
        self.target = target
        self.metrics = metrics
        self.budget = budget
        self.folder = folder
        self.rng = rng
        self.labels = dict(labels)
        self.x0 = x0
        if checkpoint_unit not in UNITS:
            raise ValueError(f"checkpoint.on must be one of {', '.join(UNITS)}, got {checkpoint_unit!r}")
        self.unit = checkpoint_unit
        self.checkpoints = checkpoint_times(budget.seconds) if checkpoints is None else checkpoints
        self.progress = progress
        self.block_seconds = float(block_seconds)
        self.max_overhead = max_overhead
        self.samples = ThinningBuffer(samples_capacity, target.dim)
        self.diagnostics = ThinningBuffer(diagnostics_capacity, len(DIAG_COLUMNS))
        self.head = np.empty((diagnostics_head, len(DIAG_COLUMNS)))
        self.n_head = 0
        self.status_extra = dict(status_extra or {})
        phases = tuple(sampler.phases)
        self.phases = phases
        self.rows: list[dict] = []
        # running totals: the sampler clock in wall and CPU seconds; ``clock`` is the budget's
        self.clock_wall = 0.0
        self.clock_cpu = 0.0
        self.iterations = 0
        self.n_collected = 0
        self.n_nonfinite = 0
        self.n_jitter = 0
        self.accepted_by_phase = np.zeros(len(phases), dtype=np.int64)
        self.iters_by_phase = np.zeros(len(phases), dtype=np.int64)
        self.last_step = math.nan
        self.last_noise = math.nan
        # health (see flags()): trailing iterations without an accepted move / in blocks whose
        # every proposal was non-finite; the first iteration after which the chain's state or
        # its log density was not finite (-1: never)
        self.since_accept = 0
        self.since_finite = 0
        self.nonfinite_at = -1
        # blocks run, and of them blocks in which a compiled loop ran (provenance.loops)
        self.blocks = 0
        self.compiled_blocks = 0
        self.latest: dict = {}
        self.chain = None
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.wall_offset = 0.0
        self.warmup_seconds = 0.0
        self.next_ck = 0

    @property
    def clock(self) -> float:
        """Sampler seconds on the budget's clock."""
        return self.clock_cpu if self.budget.clock == "cpu" else self.clock_wall

    def _position(self, unit: str) -> float:
        return {"seconds": self.clock, "iterations": self.iterations,
                "density": self.target.n_density, "grad": self.target.n_grad}[unit]

    # ------------------------------------------------------------------ bookkeeping
    def _record_block(self, block) -> None:
        n = block.n
        first = self.iterations
        self.iterations += n
        self.n_collected += block.samples.shape[0]
        self.n_nonfinite += int(block.n_nonfinite)
        self.n_jitter += int(block.n_jitter)
        k = len(self.phases)
        if k == 1:
            self.iters_by_phase[0] += n
            self.accepted_by_phase[0] += np.count_nonzero(block.accepted)
        else:
            self.iters_by_phase += np.bincount(block.phase, minlength=k)[:k]
            self.accepted_by_phase += np.bincount(block.phase[block.accepted], minlength=k)[:k]
        if n:
            self.last_step = float(block.step_size[-1])
            self.last_noise = float(block.noise[-1])
            moved = np.flatnonzero(block.accepted)
            self.since_accept = n - 1 - int(moved[-1]) if moved.size else self.since_accept + n
            self.since_finite = self.since_finite + n if block.n_nonfinite >= n else 0
        if self.nonfinite_at < 0 and self.chain is not None and not (
                np.all(np.isfinite(np.asarray(self.chain.logp, dtype=float)))
                and np.all(np.isfinite(block.samples))):
            self.nonfinite_at = self.iterations
        logp = block.logp if block.logp is not None else np.full(n, np.nan)
        columns = (np.arange(first, first + n, dtype=float), block.phase, block.accepted,
                   block.accept_prob, block.step_size, block.noise, logp)
        room = self.head.shape[0] - self.n_head
        if room > 0:
            take = min(room, n)
            self.head[self.n_head:self.n_head + take] = np.column_stack([c[:take] for c in columns])
            self.n_head += take
        self.diagnostics.extend_columns(columns)
        if block.samples.shape[0]:
            self.samples.extend(block.samples)
            for metric in self.metrics.values():
                metric.update(block.samples)

    def _row(self, wall: float) -> dict:
        row = {
            "run_id": self.labels["run_id"],
            "target": self.labels["target"],
            "sampler": self.labels["sampler"],
            "kernel": self.labels["kernel"],
            "seed": int(self.labels["seed"]),
            "checkpoint": len(self.rows),
            "sampler_seconds": self.clock,
            "sampler_wall_seconds": self.clock_wall,
            "sampler_cpu_seconds": self.clock_cpu,
            "wall_seconds": wall,
            "eval_seconds": wall - self.clock_wall - self.warmup_seconds,
            "iterations": self.iterations,
            "n_collected": self.n_collected,
            "n_density": self.target.n_density,
            "n_grad": self.target.n_grad,
            "n_nonfinite": self.n_nonfinite,
            "n_jitter": self.n_jitter,
            "acceptance": _ratio(self.accepted_by_phase.sum(), self.iterations),
        }
        for i, phase in enumerate(self.phases):
            row[f"acceptance_{phase}"] = _ratio(self.accepted_by_phase[i], self.iters_by_phase[i])
        row["step_size"] = self.last_step
        row["noise"] = self.last_noise
        row["iters_per_second"] = _ratio(self.iterations, self.clock)
        if self.chain is not None:
            row.update(self.sampler.trace_columns(self.chain))
        for metric in self.metrics.values():
            row.update({k: v if isinstance(v, np.ndarray) else float(v)  # arrays: list columns
                        for k, v in metric.compute(self.samples).items()})
        if "ess_min" in row:
            row["ess_per_second"] = _ratio(row["ess_min"], self.clock)
            row["ess_per_density"] = _ratio(row["ess_min"], self.target.n_density)
            row["ess_per_grad"] = _ratio(row["ess_min"], self.target.n_grad)
        return row

    def flags(self) -> dict[str, str]:
        """The run's health flags, each with a sentence (empty for a healthy run):

        * ``stuck``: no move accepted over the last :data:`STUCK_FRACTION` of the iterations
          (at least :data:`STUCK_MIN`, or the whole run when shorter);
        * ``nonfinite_proposals``: every proposal of that stretch had a non-finite log density
          (or gradient);
        * ``nonfinite_state``: the chain's state or its log density became NaN or ±inf.

        A stuck chain's ESS and MCSE are meaningless (a constant chain has no variance): the
        reports show the flag and no ESS or MCSE for such a run."""
        out = {}
        n = self.iterations
        window = min(n, max(STUCK_MIN, math.ceil(STUCK_FRACTION * n)))
        if n and self.since_accept >= window:
            out["stuck"] = (f"no move accepted in the last {self.since_accept} of {n} iterations "
                            f"({self.since_accept / n:.0%} of the run)")
        if n and self.since_finite >= window:
            out["nonfinite_proposals"] = (f"every proposal of the last {self.since_finite} "
                                          "iterations had a non-finite log density")
        if self.nonfinite_at >= 0:
            out["nonfinite_state"] = (f"the chain's state or log density was not finite after "
                                      f"iteration {self.nonfinite_at}")
        return out

    def loops(self) -> tuple[str, str]:
        """Which loops ran, from the blocks run so far: ``compiled`` (a compiled loop ran in
        every block), ``python`` (in none), ``mixed`` (in some: e.g. KAM's Python exploration
        and a compiled sampling phase), and a sentence saying why when not compiled."""
        if not self.blocks or self.compiled_blocks == self.blocks:
            ran = "compiled" if self.blocks and self.compiled_blocks else "python"
        else:
            ran = "python" if not self.compiled_blocks else "mixed"
        if ran == "compiled":
            return ran, ""
        if not jit.AVAILABLE:
            why = "numba is not installed"
        elif not jit.enabled():
            why = f"{jit.ENV}=0 switches compiled loops off"
        elif not any(callable(getattr(self.target, name, None))
                     for name in ("jit_log_density", "jit_log_density_and_grad")):
            why = (f"target {self.target.name!r} has no compiled density (jit_log_density, "
                   "jit_log_density_and_grad)")
        else:
            why = (f"{self.labels['sampler']} runs these iterations as Python (e.g. KAM's kernel "
                   f"steps), or needs a compiled function {self.target.name!r} lacks (a Hessian)")
        if ran == "mixed":
            why = f"a compiled loop ran in {self.compiled_blocks} of {self.blocks} blocks; {why}"
        return ran, why

    def _status(self, state: str, reason: str, wall: float) -> dict:
        cpu_share = _ratio(self.clock_cpu, self.clock_wall)
        flags = self.flags()
        ran, why = self.loops()
        provenance = {**self.status_extra.get("provenance", {}), "loops": ran, "loops_note": why,
                      "threads": self.thread_counts or {"requested": self.threads}}
        return {
            "state": state,
            "reason": reason,
            "flags": list(flags),
            "flag_notes": flags,
            **{k: self.labels[k] for k in ("run_id", "target", "sampler", "kernel", "seed")},
            "phases": list(self.phases),
            "dim": self.target.dim,
            "started": self.started,
            "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "budget": {"seconds": self.budget.seconds, "clock": self.budget.clock,
                       "max_iterations": self.budget.max_iterations,
                       "max_density": self.budget.max_density, "max_grad": self.budget.max_grad,
                       "wall_seconds": self.budget.wall_cap},
            "checkpoint_unit": self.unit,
            "totals": {
                "sampler_seconds": self.clock,
                "sampler_wall_seconds": self.clock_wall,
                "sampler_cpu_seconds": self.clock_cpu,
                "wall_seconds": wall,
                "warmup_seconds": self.warmup_seconds,
                "iterations": self.iterations,
                "n_collected": self.n_collected,
                "n_density": self.target.n_density,
                "n_grad": self.target.n_grad,
                "n_nonfinite": self.n_nonfinite,
                "checkpoints": len(self.rows),
            },
            # the sampler thread got less than 80 % of a core while its clock ran: another
            # process competed for the CPU, and wall-clock rates understate the sampler
            "contended": bool(self.clock_wall > 0.5 and cpu_share < 0.8),
            "cpu_share": cpu_share,
            "load_average_end": load_average(),
            **self.status_extra,
            "provenance": provenance,
        }

    def _checkpoint(self, wall_start: float, state: str, reason: str = "",
                    stores: bool = True) -> None:
        wall = self.wall_offset + time.perf_counter() - wall_start
        self.latest = self._row(wall)
        if state not in ("interrupted", "failed"):
            # a run that stops early keeps its rows on the schedule (its status and resume
            # state hold where it stopped), so a resumed trace equals an uninterrupted one
            self.rows.append(self.latest)
        samples = diagnostics = None
        if stores:  # written before the trace: once a trace exists, so do the stores
            samples = {"index": self.samples.indices}
            data = self.samples.data
            samples.update({f"x{j}": data[:, j].copy() for j in range(self.target.dim)})
            if hasattr(self.target, "constrain"):  # e.g. a PyMC model's variables by name
                samples.update(self.target.constrain(data))
            diagnostics = self._diagnostics_columns()
        resume = self._snapshot(wall) if self.chain is not None else None
        self.folder.write_checkpoint(samples=samples, diagnostics=diagnostics, rows=self.rows,
                                     status=self._status(state, reason, wall), resume=resume,
                                     complete=state == "complete")

    def _diagnostics_columns(self) -> dict:
        import pyarrow as pa

        head = self.head[: self.n_head]
        tail = self.diagnostics.data
        tail = tail[tail[:, 0] >= self.n_head] if self.n_head else tail
        diag = np.concatenate([head, tail])
        phase = diag[:, 1].astype(np.int8)
        return {
            "iteration": diag[:, 0].astype(np.int64),
            "phase": phase,
            "accepted": diag[:, 2].astype(bool),
            "accept_prob": diag[:, 3],
            "step_size": diag[:, 4],
            "noise": diag[:, 5],
            "logp": diag[:, 6],
            "phase_name": pa.DictionaryArray.from_arrays(pa.array(phase),
                                                         pa.array(list(self.phases))),
        }

    # ------------------------------------------------------------------ resume
    def _snapshot(self, wall: float) -> tuple[dict, dict]:
        arrays = {f"sampler.{k}": v for k, v in store.flatten_state(self.chain).items()}
        for name, metric in self.metrics.items():
            state = metric.state_dict() if hasattr(metric, "state_dict") else {}
            arrays.update({f"metric.{name}.{k}": v for k, v in state.items()})
        for name, buf in (("samples", self.samples), ("diagnostics", self.diagnostics)):
            arrays.update({f"{name}.{k}": v for k, v in buf.state_dict().items()})
        arrays["head"] = self.head[: self.n_head]
        arrays["accepted_by_phase"] = self.accepted_by_phase
        arrays["iters_by_phase"] = self.iters_by_phase
        meta = {
            "rng": self.rng.bit_generator.state,
            "target_rng": None if self.target.rng is None else self.target.rng.bit_generator.state,
            "clock": self.clock_wall, "clock_cpu": self.clock_cpu,
            "wall": wall, "started": self.started,
            "warmup": self.warmup_seconds,
            "iterations": self.iterations, "n_collected": self.n_collected,
            "n_nonfinite": self.n_nonfinite, "n_jitter": self.n_jitter,
            "n_density": self.target.n_density, "n_grad": self.target.n_grad,
            "last_step": self.last_step, "last_noise": self.last_noise,
            "since_accept": self.since_accept, "since_finite": self.since_finite,
            "nonfinite_at": self.nonfinite_at,
            "blocks": self.blocks, "compiled_blocks": self.compiled_blocks,
            "next_ck": self.next_ck, "rows": self.rows,
        }
        return arrays, meta

    def _restore(self, arrays: dict, meta: dict) -> None:
        def group(prefix):
            return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}

        self.chain = store.restore_state(self.chain, group("sampler."))
        for name, metric in self.metrics.items():
            if hasattr(metric, "load_state_dict"):
                metric.load_state_dict(group(f"metric.{name}."))
        self.samples = ThinningBuffer.from_state(group("samples."))
        self.diagnostics = ThinningBuffer.from_state(group("diagnostics."))
        head = arrays["head"]
        self.n_head = head.shape[0]
        self.head[: self.n_head] = head
        self.accepted_by_phase = arrays["accepted_by_phase"].astype(np.int64)
        self.iters_by_phase = arrays["iters_by_phase"].astype(np.int64)
        self.rng.bit_generator.state = meta["rng"]
        if meta.get("target_rng") is not None:
            self.target.rng.bit_generator.state = meta["target_rng"]
        self.clock_wall, self.clock_cpu = float(meta["clock"]), float(meta["clock_cpu"])
        self.wall_offset, self.started = meta["wall"], meta["started"]
        self.warmup_seconds += float(meta["warmup"])
        for key in ("iterations", "n_collected", "n_nonfinite", "n_jitter", "next_ck"):
            setattr(self, key, int(meta[key]))
        for key, default in (("since_accept", 0), ("since_finite", 0), ("nonfinite_at", -1),
                             ("blocks", 0), ("compiled_blocks", 0)):
            setattr(self, key, int(meta.get(key, default)))  # older resume states lack them
        self.target.n_density, self.target.n_grad = int(meta["n_density"]), int(meta["n_grad"])
        self.last_step, self.last_noise = float(meta["last_step"]), float(meta["last_noise"])
        self.rows = list(meta["rows"])
        self.latest = self.rows[-1] if self.rows else {}

    # ------------------------------------------------------------------ main loop
    def run(self) -> dict:
        """Run to the end of the budget (continuing the folder's verified resume state when
        it has one); returns the final status dictionary."""
        from ckam_bench import rundir

        if not isinstance(self.folder, rundir.RunFolder):  # a plain path: claim it here
            self.folder = rundir.RunFolder.claim(self.folder,
                                                 self.status_extra.get("config_hash", "unhashed"))
            owned = True
        else:
            owned = False
        try:
            return self._run()
        finally:
            if owned:
                self.folder.release()

    def _run(self) -> dict:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=self.threads):
            return self._run_pinned()

    def _pin_numba(self) -> None:
        """Numba's parallel threads to ``threads`` (once numba is loaded), and the counts that
        apply to the run into ``provenance.threads``."""
        import sys

        from threadpoolctl import threadpool_info

        counts = {"requested": self.threads,
                  "blas_openmp": {f"{p['internal_api']}:{Path(p['filepath']).name}":
                                  p["num_threads"] for p in threadpool_info()}}
        numba = sys.modules.get("numba")
        if numba is not None:
            numba.set_num_threads(min(self.threads, numba.config.NUMBA_NUM_THREADS))
            counts["numba"] = numba.get_num_threads()
        self.thread_counts = counts

    def _run_pinned(self) -> dict:
        resume = self.folder.resume
        wall_start = time.perf_counter()
        bar = _Progress(self.progress, self.budget.seconds,
                        f"{self.labels['sampler']} on {self.labels['target']}")
        with StopRequest() as stop:
            try:
                state, reason = self._loop(resume, stop, bar, wall_start)
            except KeyboardInterrupt:
                state, reason = "interrupted", "interrupted"
            except Exception as exc:
                self._checkpoint(wall_start, "failed", f"{type(exc).__name__}: {exc}")
                bar.close()
                raise
        self._checkpoint(wall_start, state, reason)
        bar.update(self.clock, self._postfix())
        bar.close()
        return self._status(state, reason, self.wall_offset + time.perf_counter() - wall_start)

    def _stop_reason(self) -> str | None:
        b = self.budget
        if b.max_iterations is not None and self.iterations >= b.max_iterations:
            return "max_iterations"
        if b.max_density is not None and self.target.n_density >= b.max_density:
            return "max_density"
        if b.max_grad is not None and self.target.n_grad >= b.max_grad:
            return "max_grad"
        if self.clock >= b.seconds:
            return "budget"
        return None

    def _loop(self, resume, stop: StopRequest, bar: _Progress, wall_start: float):
        """Advance block by block until a stop condition; returns (state, reason)."""
        t0 = time.perf_counter()
        self.sampler.warm_up(self.target)  # untimed: e.g. JIT compilation
        self.warmup_seconds += time.perf_counter() - t0
        self._pin_numba()
        t0, c0 = time.perf_counter(), time.process_time()
        self.chain = self.sampler.init(self.target, self.x0, self.rng)
        self.clock_wall += time.perf_counter() - t0
        self.clock_cpu += time.process_time() - c0
        if resume is not None and not self.sampler.resumable:  # never two chains in one trace
            resume = None
            self.status_extra["restarted"] = (f"{self.labels['sampler']} cannot save its chain's "
                                              f"state: the run restarted from its first iteration")
        if resume is not None:
            self._restore(resume.arrays, resume.meta)
        self.folder.write_status(self._status("running", "", self.wall_offset))
        n, rate = 16, None
        cost = {"density": 1.0, "grad": 1.0}  # evaluations per iteration, latest block
        cks = self.checkpoints
        while True:
            # a checkpoint that is due is written first, also right after a resume: a run
            # stopped by a signal at a checkpoint's position writes that row when it continues
            position = self._position(self.unit)
            if self.next_ck < len(cks) and position >= cks[self.next_ck]:
                while self.next_ck < len(cks) and position >= cks[self.next_ck]:
                    self.next_ck += 1  # before the snapshot: a resume never repeats this row
                outside = (self.wall_offset + time.perf_counter() - wall_start - self.clock_wall
                           - self.warmup_seconds)
                heavy = (self.max_overhead is None or outside <= self.max_overhead * self.clock_wall
                         or not self.rows)  # the first checkpoint writes every file
                self._checkpoint(wall_start, "running", stores=heavy)
                bar.update(self.clock, self._postfix())
            reason = self._stop_reason()
            if reason is not None:
                return "complete", reason
            if rate is not None:  # ~block_seconds long, not far past the next checkpoint or the end
                horizon = self.budget.seconds - self.clock
                if self.unit == "seconds" and self.next_ck < len(cks):
                    horizon = min(horizon, cks[self.next_ck] - self.clock)
                n = int(max(1, min(rate * self.block_seconds, rate * horizon + 1, 4 * max(n, 1))))
            n = min(n, self._iterations_until_limits(cost))
            before = (self.target.n_density, self.target.n_grad)
            kernels = jit.KERNEL_CALLS
            t0, c0 = time.perf_counter(), time.process_time()
            self.chain, block = self.sampler.advance(self.chain, n)
            dt = time.perf_counter() - t0
            self.clock_wall += dt
            self.clock_cpu += time.process_time() - c0
            self.blocks += 1
            self.compiled_blocks += jit.KERNEL_CALLS > kernels
            self._record_block(block)
            if block.n:
                cost = {"density": (self.target.n_density - before[0]) / block.n,
                        "grad": (self.target.n_grad - before[1]) / block.n}
            if stop.requested:
                return "interrupted", "interrupted"
            if self.wall_offset + time.perf_counter() - wall_start >= self.budget.wall_cap:
                return "complete", "wall_seconds"
            # the slower of the latest and the smoothed rate, since a sampler's phases can
            # differ in speed by orders of magnitude (cKAM: exploration vs sampling)
            latest = block.n / max(dt, 1e-7)
            rate = latest if rate is None else min(latest, 0.5 * rate + 0.5 * latest)

    def _iterations_until_limits(self, cost: dict) -> int:
        """The most iterations the next block may run without passing the next checkpoint or
        a budget in a counted unit (iterations exactly; evaluations at the latest cost)."""
        limits = {"iterations": self.budget.max_iterations, "density": self.budget.max_density,
                  "grad": self.budget.max_grad}
        if self.unit != "seconds" and self.next_ck < len(self.checkpoints):
            mark = self.checkpoints[self.next_ck]
            limits[self.unit] = mark if limits[self.unit] is None else min(limits[self.unit], mark)
        n = 1 << 62
        for unit, limit in limits.items():
            if limit is None:
                continue
            left = limit - self._position(unit)
            per = 1.0 if unit == "iterations" else cost[unit]
            if per > 0:
                n = min(n, max(1, math.ceil(left / per)))
        return n

    def _postfix(self) -> dict:
        post = {"it/s": f"{_ratio(self.iterations, self.clock):.3g}",
                "acc": f"{_ratio(self.accepted_by_phase.sum(), self.iterations):.2f}"}
        if "kl" in self.latest:
            post["kl"] = f"{self.latest['kl']:.3g}"
        return post


def _ratio(a, b) -> float:
    return float(a) / float(b) if b else math.nan

