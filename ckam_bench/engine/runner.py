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

**The wall-clock cap** (``budget.wall_seconds``) counts the run's wall time *after* the untimed
warm-up: ``sampler.warm_up`` (a model's compile, which took 155 s for a PyMC model on a loaded
machine) is left off its clock, as it is off the sampler clock, so a slow compile never ends a
run before its sampling has had its budget. ``status.json`` records it
(``budget.wall_excludes_warmup``: true; the warm-up's duration is ``totals.warmup_seconds``).

**A run that collected nothing is no result.** A run stopped by its budget or a cap before its
sampler collected a single state (every iteration in a warm-up phase) is marked ``empty``, not
``complete``, with the flag ``no_samples`` saying why; the reports never rank it, and running
the same command again redoes it from its first iteration (:mod:`ckam_bench.engine.rundir`).

**Too short to trust.** A run whose min ESS at its last checkpoint is below
:data:`ckam_bench.engine.runstatus.ESS_FLOOR` (100) says so: ``short_chain`` in its status, a
note under its end-of-run line and in the report's ranking notes.

**Blocks.** Block sizes adapt so that one block takes about ``block_seconds`` of sampler
time (or the sampler's ``ckam_block_seconds`` when longer), shortened near a checkpoint time,
the end of the budget and the iteration cap. A sampler's ``ckam_divergent`` hook runs once per
block; when its last call took more than :data:`HOOK_SHARE` of that, blocks grow to keep it
there (up to :data:`MAX_BLOCK_SECONDS`): nutpie's hook copies its whole trace, so its cost grows
with the chain, and fixed-length blocks would make the run's harness time quadratic in it.

**Checkpoints** happen when the run passes each position of the schedule (see
:func:`checkpoint_times`), in the unit ``checkpoint.on`` names — sampler seconds, iterations,
density evaluations or gradient evaluations (:data:`UNITS`), so samplers of very different cost
per iteration share checkpoints on the axis a comparison uses — and once more at the end. In
a counted unit, blocks are shortened to land on each checkpoint (exactly for iterations; for
evaluations, at the end of the block that reaches it: its length comes from the latest block's
evaluations per iteration, so it may pass the mark by a few iterations, and by how many depends
on how the time-sized blocks fell; the chain itself does not). Each checkpoint writes one row to
``trace.parquet``, ``status.json`` and the resume state (:mod:`ckam_bench.engine.rundir`). The bounded
``samples.parquet`` / ``diagnostics.parquet`` (heavier) are rewritten with it unless the wall
time spent outside the sampler so far exceeds ``max_overhead`` times the sampler time; they
then wait for a later checkpoint (they are always written at the first and at the last). The
trace, status and resume state are written by the same rule, or else once :data:`FLUSH_SECONDS`
of wall time have passed since they last were: a fast run's fourteen checkpoints cost one write
at the first and one at the end, not fourteen, and a run killed outright loses at most those
seconds (the next run resumes from the resume state written before). Every row is computed at its
checkpoint whatever is written (the early-stop rule reads it), and the files written at the end
hold them all. A trace row holds

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
density became NaN or ±inf) — and ``divergent`` (divergent transitions after the warm-up:
``Block.divergent``, or the sampler's ``ckam_divergent`` hook, called off the clock), a
*warning*: the run's values stand but are suspect. The end-of-run line, ``ckam-bench-figures``,
the HTML report and the ranking show them (:mod:`ckam_bench.report.ranking`).

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
an uninterrupted one. The state is removed when a run completes (or ends empty). A sampler
that cannot save its chain's state (``resumable = False``) restarts a killed run from its
first iteration instead (its status says ``restarted``), never continuing a new chain in an old
trace.
"""

from __future__ import annotations

import dataclasses
import math
import signal
import threading
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ckam_bench import jit
from ckam_bench.engine import rundir, runstatus, snapshot
from ckam_bench.engine.budget import UNITS, Budget, SamplerClock, Schedule, checkpoint_times
from ckam_bench.engine.tally import Tally, booleans, ratio
from ckam_bench.targets.base import PluginError

__all__ = ["Runner", "Budget", "UNITS", "checkpoint_times", "StopRequest"]


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


def run_labels(sampler, target, given: dict | None = None) -> dict:
    """The names a run's rows and status carry (:data:`ckam_bench.engine.runstatus.LABELS`):
    ``run_id`` (12 hex digits), ``sampler``, ``target``, ``kernel`` (``"none"`` without one) and
    ``seed``; those not ``given`` come from the objects (class names, ``target.name``), the
    seed from nothing (0). The command line gives the config names."""
    import uuid

    kernel = getattr(sampler, "kernel", None)
    labels = {"run_id": uuid.uuid4().hex[:12], "sampler": type(sampler).__name__,
              "target": getattr(target, "name", type(target).__name__),
              "kernel": "none" if kernel is None else type(kernel).__name__, "seed": 0}
    labels.update(given or {})
    return labels


FLUSH_SECONDS = 1.0
"""Wall seconds after which a checkpoint writes the trace, status and resume state even when the
time outside the sampler is over ``max_overhead`` (module docstring)."""
HOOK_SHARE = 0.05
"""The largest share of a block's length the sampler's ``ckam_divergent`` hook may take: a
block lasts at least its last call's time over this share, 20 times it (module docstring)."""
MAX_BLOCK_SECONDS = 60.0
"""The longest block the hook's cost can ask for (the cap of ``ckam_block_seconds`` too)."""


class Runner:
    """Run one sampler on one target under a budget, writing its run folder.

    ``folder`` is a claimed :class:`ckam_bench.engine.rundir.RunFolder` (the CLI claims it); a plain
    path is claimed here for the config hash in ``status_extra`` (used by tests and scripts).
    ``checkpoint_unit`` is one of :data:`UNITS`; ``checkpoints`` are positions in that unit.
    The pieces: :class:`~ckam_bench.engine.budget.Schedule` (where the next checkpoint is, how long
    the next block may be), :class:`~ckam_bench.engine.budget.SamplerClock`,
    :class:`~ckam_bench.engine.tally.Tally` (the totals fed block by block), :mod:`ckam_bench.engine.runstatus`
    (trace rows and status) and :mod:`ckam_bench.engine.snapshot` (the resume state).
    """

    def __init__(self, sampler, target, metrics: dict, budget: Budget, folder, rng,
                 labels: dict | None = None, x0=None, checkpoints: np.ndarray | None = None,
                 progress="auto", block_seconds: float = 0.02, samples_capacity: int = 10000,
                 diagnostics_capacity: int = 20000, diagnostics_head: int = 20000,
                 max_overhead: float | None = 0.03, status_extra: dict | None = None,
                 checkpoint_unit: str = "seconds", threads: int = 1, early_stop=None):
        if checkpoint_unit not in UNITS:
            raise ValueError(f"checkpoint.on must be one of {', '.join(UNITS)}, got {checkpoint_unit!r}")
        self.sampler, self.target, self.metrics, self.budget = sampler, target, metrics, budget
        self.folder, self.rng, self.x0 = folder, rng, x0
        self.labels = run_labels(sampler, target, labels)
        self.threads = int(threads)
        self.thread_counts: dict = {}
        self.unit = checkpoint_unit
        self.checkpoints = checkpoint_times(budget.seconds) if checkpoints is None else checkpoints
        self.schedule: Schedule | None = None  # built from checkpoints and budget at the start
        self.progress = progress
        self.block_seconds, self.hook_seconds = max(float(block_seconds), sampler_block_seconds(sampler)), 0.0
        self.max_overhead = max_overhead
        self.early_stop, self.stopped_early = early_stop, None  # an EarlyStop or None; its decision
        self.status_extra = dict(status_extra or {})
        self.tally = Tally(tuple(sampler.phases), target.dim, samples_capacity,
                           diagnostics_capacity, diagnostics_head)
        self.timer = SamplerClock()
        self.rows: list[dict] = []
        self.latest, self.chain = {}, None
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.wall_offset, self.warmup_seconds = 0.0, 0.0
        self.last_write = -math.inf  # perf_counter() when the checkpoint files were last written

    @property
    def clock(self) -> float:
        """Sampler seconds on the budget's clock."""
        return self.timer.on(self.budget.clock)

    @property
    def samples(self):
        """The bounded store of collected states (a :class:`ThinningBuffer`)."""
        return self.tally.samples

    def position(self, unit: str) -> float:
        """How far the run is in ``unit`` (one of :data:`UNITS`)."""
        return {"seconds": self.clock, "iterations": self.tally.iterations,
                "density": self.target.n_density, "grad": self.target.n_grad}[unit]

    def flags(self) -> dict[str, str]:
        """The run's health flags (see :meth:`ckam_bench.engine.tally.Tally.flags`)."""
        return self.tally.flags()

    def _checkpoint(self, wall_start: float, state: str, reason: str = "",
                    stores: bool = True, files: bool = True) -> None:
        """A trace row; with ``files`` the files written, the stores only with ``stores`` too."""
        wall = self.wall_offset + time.perf_counter() - wall_start
        early = reason == EARLY_STOP  # stopped right after the row that decided it: no second row
        self.latest = self.rows[-1] if early else runstatus.trace_row(self, wall)
        if not early and state not in ("interrupted", "failed"):
            # a run that stops early keeps its rows on the schedule (its status and resume
            # state hold where it stopped), so a resumed trace equals an uninterrupted one
            self.rows.append(self.latest)
        if not files:
            return
        self.last_write, samples, diagnostics = time.perf_counter(), None, None
        if stores:  # written before the trace: once a trace exists, so do the stores
            samples = self.tally.sample_columns(self.target)
            diagnostics = self.tally.diagnostics_columns()
        resume = snapshot.take(self, wall) if self.chain is not None else None
        self.folder.write_checkpoint(samples=samples, diagnostics=diagnostics, rows=self.rows,
                                     status=runstatus.status(self, state, reason, wall),
                                     resume=resume, complete=state in runstatus.ENDED)

    # ------------------------------------------------------------------ main loop
    def run(self) -> dict:
        """Run to the end of the budget (continuing the folder's verified resume state when
        it has one); returns the final status dictionary."""
        owned = not isinstance(self.folder, rundir.RunFolder)
        if owned:  # a plain path: claim it here
            self.folder = rundir.claim_for(self.folder, self.status_extra)
        try:
            with threadpool_limits(limits=self.threads):
                return self._run_pinned()
        finally:
            if owned:
                self.folder.release()

    def _run_pinned(self) -> dict:
        self.schedule = Schedule(self.checkpoints, self.unit, self.budget, self.position)
        wall_start = time.perf_counter()
        bar = _Progress(self.progress, self.budget.seconds,
                        f"{self.labels['sampler']} on {self.labels['target']}")
        with StopRequest() as stop:
            try:
                self._start(self.folder.resume)
                state, reason = self._loop(stop, bar, wall_start)
            except KeyboardInterrupt:
                state, reason = "interrupted", "interrupted"
            except Exception as exc:
                self._fail(wall_start, bar, exc)
                raise
        try:
            self._checkpoint(wall_start, state, reason)
        except Exception as exc:
            self._fail(wall_start, bar, exc)
            raise
        bar.update(self.clock, self._postfix())
        bar.close()
        wall = self.wall_offset + time.perf_counter() - wall_start
        return runstatus.status(self, state, reason, wall)

    def _fail(self, wall_start: float, bar, exc: BaseException) -> None:
        """Mark the run ``failed`` whatever raised (:func:`ckam_bench.engine.runstatus.mark_failed`)."""
        bar.close()
        runstatus.mark_failed(self, exc, lambda reason: self._checkpoint(wall_start, "failed", reason),
                              self.wall_offset + time.perf_counter() - wall_start)

    def _start(self, resume) -> None:
        """Warm the sampler up (untimed: e.g. JIT compilation), make its first state on the
        sampler clock, and continue from ``resume`` (a verified resume state) when given."""
        t0 = time.perf_counter()
        self.sampler.warm_up(self.target)
        self.warmup_seconds += time.perf_counter() - t0
        self.thread_counts = _pin_numba(self.threads)
        with self.timer.running():
            self.chain = self.sampler.init(self.target, self.x0, self.rng)
        if resume is not None and not self.sampler.resumable:  # never two chains in one trace
            resume = None
            self.status_extra["restarted"] = (f"{self.labels['sampler']} cannot save its chain's "
                                              f"state: the run restarted from its first iteration")
        if resume is not None:
            snapshot.restore(self, resume.arrays, resume.meta)
        self.folder.write_status(runstatus.status(self, "running", "", self.wall_offset))

    def _loop(self, stop: StopRequest, bar: _Progress, wall_start: float):
        """Advance block by block until a stop condition; returns (state, reason)."""
        n, rate, free = 16, None, 16  # free: the block size before a checkpoint shortens it
        cost = {"density": 1.0, "grad": 1.0}  # evaluations per iteration, latest block
        while True:
            # a checkpoint that is due is written first, also right after a resume: a run
            # stopped by a signal at a checkpoint's position writes that row when it continues
            if self.schedule.due():  # moves past it before the snapshot: never a repeated row
                heavy = writes_due(self, wall_start)
                self._checkpoint(wall_start, "running", stores=heavy,
                                 files=heavy or time.perf_counter() - self.last_write >= FLUSH_SECONDS)
                bar.update(self.clock, self._postfix())
                self.stopped_early = decided_early(self)
                if self.stopped_early is not None:
                    return ended(self.tally), EARLY_STOP
            reason = self.budget.exhausted(self.position)
            if reason is not None:
                return ended(self.tally), reason
            if rate is not None:  # ~block_seconds long, not far past the next checkpoint or the end
                free = int(max(1, min(rate * block_length(self.block_seconds, self.hook_seconds), 4 * free)))
                n = int(max(1, min(free, rate * self.schedule.seconds_left() + 1)))
            n = min(n, self.schedule.iterations_left(cost))
            block, cost = self._advance(n, cost)
            if stop.requested:
                return "interrupted", "interrupted"
            if self.wall_offset + time.perf_counter() - wall_start - self.warmup_seconds \
                    >= self.budget.wall_cap:  # the wall cap's clock: the warm-up left out
                return ended(self.tally), "wall_seconds"
            # the slower of the latest and the smoothed rate, since a sampler's phases can
            # differ in speed by orders of magnitude (cKAM: exploration vs sampling)
            latest = block.n / max(self.timer.last, 1e-7)
            rate = latest if rate is None else min(latest, 0.5 * rate + 0.5 * latest)

    def _advance(self, n: int, cost: dict):
        """One block of ``n`` iterations on the sampler clock, recorded and fed to the metrics;
        returns it and the evaluations per iteration it cost (``cost`` when it ran none)."""
        before = (self.target.n_density, self.target.n_grad)
        kernels = jit.KERNEL_CALLS
        with self.timer.running():
            self.chain, block = self.sampler.advance(self.chain, n)
        block, self.hook_seconds = timed(sampler_divergences, self.sampler, self.chain, block)  # off the clock
        self.tally.record(block, self.chain, compiled=jit.KERNEL_CALLS > kernels)
        if block.samples.shape[0]:
            for metric in self.metrics.values():
                metric.update(block.samples)
        if block.n:
            cost = {"density": (self.target.n_density - before[0]) / block.n,
                    "grad": (self.target.n_grad - before[1]) / block.n}
        return block, cost

    def _postfix(self) -> dict:
        tally = self.tally
        post = {"it/s": f"{ratio(tally.iterations, self.clock):.3g}",
                "acc": f"{ratio(tally.accepted_by_phase.sum(), tally.iterations):.2f}"}
        if "kl" in self.latest:
            post["kl"] = f"{self.latest['kl']:.3g}"
        return post


EARLY_STOP = "early_stop"
"""The reason of a run stopped by ``budget.early_stop`` (:class:`~ckam_bench.engine.budget.EarlyStop`)."""


def writes_due(run, wall_start: float) -> bool:
    """Whether a running checkpoint writes every file: at the first, and while the wall time
    spent outside the sampler is within ``max_overhead`` times the sampler time (module docstring)."""
    outside = run.wall_offset + time.perf_counter() - wall_start - run.timer.wall - run.warmup_seconds
    return run.max_overhead is None or not run.rows or outside <= run.max_overhead * run.timer.wall


def decided_early(run) -> dict | None:
    """What ``budget.early_stop`` decided after the run's latest row: None (go on, or no rule),
    else what stopped it (:meth:`ckam_bench.engine.budget.EarlyStop.decide`)."""
    rule = run.early_stop
    return None if rule is None else rule.decide(run.rows, run.unit, run.budget.limit(run.unit))


def ended(tally: Tally) -> str:
    """The state of a run its budget or a cap stopped: ``complete``, or ``empty`` when it
    collected no sample (no result; module docstring)."""
    return "complete" if tally.n_collected else "empty"


def timed(f, *args):
    """``f(*args)`` and the wall seconds it took."""
    start = time.perf_counter()
    return f(*args), time.perf_counter() - start


def block_length(block_seconds: float, hook_seconds: float) -> float:
    """A block's sampler seconds: ``block_seconds``, or longer when the ``ckam_divergent`` hook's
    last call took more than :data:`HOOK_SHARE` of that, up to :data:`MAX_BLOCK_SECONDS`."""
    return min(max(block_seconds, hook_seconds / HOOK_SHARE), max(block_seconds, MAX_BLOCK_SECONDS))


def sampler_block_seconds(sampler) -> float:
    """The sampler's ``ckam_block_seconds`` (0 when it has none), checked: a number in [0, 60]."""
    value = getattr(sampler, "ckam_block_seconds", 0.0)
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or not 0.0 <= value <= 60.0):
        cls = type(sampler)
        raise PluginError(f"{cls.__module__}.{cls.__qualname__}.ckam_block_seconds must be a number of "
                          f"seconds in [0, 60], got {value!r}")
    return float(value)


def sampler_divergences(sampler, chain, block):
    """``block`` with ``divergent`` from the sampler's ``ckam_divergent(chain, n)`` hook when
    the block has none and the sampler has the hook; the result checked: n booleans (or None:
    not known)."""
    hook = getattr(sampler, "ckam_divergent", None)
    if block.divergent is not None or not callable(hook) or not block.n:
        return block
    value = hook(chain, block.n)
    if value is None:
        return block
    where = f"{type(sampler).__module__}.{type(sampler).__qualname__}.ckam_divergent must return"
    return dataclasses.replace(block, divergent=booleans(value, block.n, where))


def _pin_numba(threads: int) -> dict:
    """Numba's parallel threads to ``threads`` (once numba is loaded); the thread counts that
    apply to the run (``provenance.threads``)."""
    import sys

    from threadpoolctl import threadpool_info

    counts = {"requested": threads,
              "blas_openmp": {f"{p['internal_api']}:{Path(p['filepath']).name}":
                              p["num_threads"] for p in threadpool_info()}}
    numba = sys.modules.get("numba")
    if numba is not None:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        counts["numba"] = numba.get_num_threads()
    return counts
