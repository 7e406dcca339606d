"""What a :class:`ckam_bench.engine.runner.Runner` reports at a checkpoint: the trace row (one per
checkpoint, in ``trace.parquet``; its columns are listed in :mod:`ckam_bench.engine.runner`) and the
status dictionary (``status.json``: state, flags, budget, totals, provenance).

**States.** ``running``, then one of ``complete`` (stopped by its budget or a cap, with
collected samples), ``empty`` (stopped by its budget or a cap before collecting any sample:
flagged ``no_samples``, never a result), ``interrupted`` (Ctrl-C / SIGTERM) or ``failed``.

**Too short to trust.** ``short_chain`` is true when the min ESS of the whole collected chain
(the trace's ``ess_min``) at the latest checkpoint is below :data:`ESS_FLOOR`, false when it is
not, None when the run has no ESS (the ESS metric off, or nothing collected); ``ess_floor``
holds the floor applied.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ckam_bench.engine.provenance import load_average
from ckam_bench.engine.tally import ratio

LABELS = ("run_id", "target", "sampler", "kernel", "seed")
ENDED = ("complete", "empty")
"""States of a run that has ended by its budget or a cap (its resume state is removed)."""
ESS_FLOOR = 100.0
"""A chain whose min ESS is below this is too short to trust: its estimates carry Monte Carlo
errors of more than a tenth of a posterior sd (MCSE = sd / √ESS), and the ESS estimate itself is
unreliable that early (the end-of-run line says so, ``status.json`` holds ``short_chain``)."""
_STOPS = {"budget": "its budget of sampler seconds (budget.seconds)",
          "max_iterations": "its iteration cap (budget.max_iterations)",
          "max_density": "its density-evaluation cap (budget.max_density)",
          "max_grad": "its gradient-evaluation cap (budget.max_grad)",
          "wall_seconds": "the wall-clock cap (budget.wall_seconds)"}


def no_samples_note(run, reason: str) -> str:
    """The sentence of the ``no_samples`` flag of an ``empty`` run stopped for ``reason``."""
    tally = run.tally
    phases = list(tally.phases)
    where = ""
    if len(phases) > 1:
        spent = ", ".join(f"{int(n)} in {p}" for p, n in zip(phases, tally.iters_by_phase) if n)
        where = f" ({spent})" if spent else ""
    return (f"no sample was collected: the run stopped at {_STOPS.get(reason, reason)} after "
            f"{tally.iterations} iterations{where}, before its sampler collected any state; it "
            "is no result (never ranked), and running the same command again redoes it")


def stored_no_samples_note(status: dict) -> str:
    """The ``no_samples`` sentence of a stored run that collected nothing: its own, else (a run
    an earlier version marked ``complete``) one made from its status."""
    totals = status.get("totals") if isinstance(status.get("totals"), dict) else {}
    return (status.get("flag_notes") or {}).get("no_samples") or (
        f"no sample was collected (state {status.get('state')}, stopped at "
        f"{_STOPS.get(status.get('reason'), status.get('reason') or 'its budget')} after "
        f"{totals.get('iterations', '?')} iterations); it is no result (never ranked), and "
        "running the same command again redoes it")


def short_chain(latest: dict) -> bool | None:
    """Whether the min ESS of the latest trace row is below :data:`ESS_FLOOR` (None: no ESS)."""
    ess = latest.get("ess_min")
    try:
        ess = float(ess)
    except (TypeError, ValueError):
        return None
    return bool(ess < ESS_FLOOR) if math.isfinite(ess) else None


def trace_row(run, wall: float) -> dict:
    """The trace row of ``run`` now (``wall``: wall seconds since the run started)."""
    tally, target, clock = run.tally, run.target, run.clock
    row = {
        "run_id": run.labels["run_id"],
        "target": run.labels["target"],
        "sampler": run.labels["sampler"],
        "kernel": run.labels["kernel"],
        "seed": int(run.labels["seed"]),
        "checkpoint": len(run.rows),
        "sampler_seconds": clock,
        "sampler_wall_seconds": run.timer.wall,
        "sampler_cpu_seconds": run.timer.cpu,
        "wall_seconds": wall,
        "eval_seconds": wall - run.timer.wall - run.warmup_seconds,
        "iterations": tally.iterations,
        "n_collected": tally.n_collected,
        "n_density": target.n_density,
        "n_grad": target.n_grad,
        "n_nonfinite": tally.n_nonfinite,
        "n_jitter": tally.n_jitter,
        **tally.acceptance(),
        **tally.divergences(),
        "step_size": tally.last_step,
        "noise": tally.last_noise,
        "iters_per_second": ratio(tally.iterations, clock),
    }
    if run.chain is not None:
        row.update(run.sampler.trace_columns(run.chain))
    for metric in run.metrics.values():
        row.update({k: v if isinstance(v, np.ndarray) else float(v)  # arrays: list columns
                    for k, v in metric.compute(tally.samples).items()})
    if "ess_min" in row:
        row["ess_per_second"] = ratio(row["ess_min"], clock)
        row["ess_per_density"] = ratio(row["ess_min"], target.n_density)
        row["ess_per_grad"] = ratio(row["ess_min"], target.n_grad)
    return row


def status(run, state: str, reason: str, wall: float) -> dict:
    """The status dictionary of ``run`` in ``state`` (running, complete, empty, interrupted,
    failed) for ``reason`` (why it stopped)."""
    tally, budget, timer = run.tally, run.budget, run.timer
    cpu_share = ratio(timer.cpu, timer.wall)
    flags = tally.flags()
    if state == "empty":
        flags = {"no_samples": no_samples_note(run, reason), **flags}
    ran, why = tally.loops(run.target, run.labels["sampler"])
    early = getattr(run, "early_stop", None)
    provenance = {**run.status_extra.get("provenance", {}), "loops": ran, "loops_note": why,
                  "threads": run.thread_counts or {"requested": run.threads}}
    return {
        "state": state,
        "reason": reason,
        "flags": list(flags),
        "flag_notes": flags,
        **{k: run.labels[k] for k in LABELS},
        "phases": list(tally.phases),
        "dim": run.target.dim,
        "started": run.started,
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "budget": {"seconds": budget.seconds, "clock": budget.clock,
                   "max_iterations": budget.max_iterations,
                   "max_density": budget.max_density, "max_grad": budget.max_grad,
                   "wall_seconds": budget.wall_cap, "wall_excludes_warmup": True,
                   "early_stop": early.describe() if early is not None else None},
        "stopped_early": getattr(run, "stopped_early", None),
        "checkpoint_unit": run.unit,
        "totals": {
            "sampler_seconds": run.clock,
            "sampler_wall_seconds": timer.wall,
            "sampler_cpu_seconds": timer.cpu,
            "wall_seconds": wall,
            "warmup_seconds": run.warmup_seconds,
            "iterations": tally.iterations,
            "n_collected": tally.n_collected,
            "n_density": run.target.n_density,
            "n_grad": run.target.n_grad,
            "n_nonfinite": tally.n_nonfinite,
            **{k: int(v) for k, v in tally.divergences().items()},
            "checkpoints": len(run.rows),
        },
        # the sampler thread got less than 80 % of a core while its clock ran: another
        # process competed for the CPU, and wall-clock rates understate the sampler
        "contended": bool(timer.wall > 0.5 and cpu_share < 0.8),
        "cpu_share": cpu_share,
        "short_chain": short_chain(run.latest),
        "ess_floor": ESS_FLOOR,
        "load_average_end": load_average(),
        **run.status_extra,
        "provenance": provenance,
    }


def mark_failed(run, exc: BaseException, checkpoint, wall: float) -> None:
    """Mark ``run`` ``failed`` with the exception as its reason (and the traceback under
    ``error``), whatever raised it: a last ``checkpoint(reason)`` with every file when that
    works, else ``status.json`` alone (the exception came from a store, a metric or a hook),
    else the minimum that says so — never a run left ``running``."""
    import traceback

    reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
    run.status_extra["error"] = "".join(traceback.format_exception(exc))[-4000:]
    try:
        checkpoint(reason)
        return
    except Exception:  # noqa: BLE001 - the failure is recorded below, the caller re-raises exc
        pass
    try:
        written = status(run, "failed", reason, wall)
    except Exception:  # noqa: BLE001 - a hook the status reads raised too
        written = {"state": "failed", "reason": reason, "started": run.started,
                   **{k: run.labels.get(k) for k in LABELS}, **run.status_extra}
    run.folder.write_status(written)
