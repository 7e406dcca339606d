"""What a :class:`ckam_bench.engine.runner.Runner` reports at a checkpoint: the trace row (one per
checkpoint, in ``trace.parquet``; its columns are listed in :mod:`ckam_bench.engine.runner`) and the
status dictionary (``status.json``: state, flags, budget, totals, provenance)."""

from __future__ import annotations

import time

import numpy as np

from ckam_bench.engine.provenance import load_average
from ckam_bench.engine.tally import ratio

LABELS = ("run_id", "target", "sampler", "kernel", "seed")


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
    """The status dictionary of ``run`` in ``state`` (running, complete, interrupted, failed)
    for ``reason`` (why it stopped)."""
    tally, budget, timer = run.tally, run.budget, run.timer
    cpu_share = ratio(timer.cpu, timer.wall)
    flags = tally.flags()
    ran, why = tally.loops(run.target, run.labels["sampler"])
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
                   "wall_seconds": budget.wall_cap},
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
