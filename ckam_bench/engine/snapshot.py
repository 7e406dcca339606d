"""A run's resume state: everything a :class:`ckam_bench.engine.runner.Runner` needs to continue a
run exactly where its latest checkpoint left it — the sampler's chain, the random generator
states, the clocks, every counter, the metric accumulators, the bounded stores, the position
on the checkpoint schedule and the trace rows — as arrays (no pickle) and plain values.
:mod:`ckam_bench.engine.rundir` writes it at every checkpoint and verifies it before a resume."""

from __future__ import annotations

from ckam_bench.engine import store


def take(run, wall: float) -> tuple[dict, dict]:
    """The resume state of ``run`` (a Runner with a chain) at wall time ``wall``."""
    arrays = {f"sampler.{k}": v for k, v in store.flatten_state(run.chain).items()}
    for name, metric in run.metrics.items():
        state = metric.state_dict() if hasattr(metric, "state_dict") else {}
        arrays.update({f"metric.{name}.{k}": v for k, v in state.items()})
    tally_arrays, tally_meta = run.tally.state()
    arrays.update(tally_arrays)
    target = run.target
    meta = {
        "rng": run.rng.bit_generator.state,
        "target_rng": None if target.rng is None else target.rng.bit_generator.state,
        "clock": run.timer.wall, "clock_cpu": run.timer.cpu,
        "wall": wall, "started": run.started,
        "warmup": run.warmup_seconds,
        **tally_meta,
        "n_density": target.n_density, "n_grad": target.n_grad,
        "next_ck": run.schedule.next, "rows": run.rows,
    }
    return arrays, meta


def restore(run, arrays: dict, meta: dict) -> None:
    """Continue ``run`` (a Runner whose sampler has just made its first state) from a resume
    state written by :func:`take`."""
    def group(prefix):
        return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}

    run.chain = store.restore_state(run.chain, group("sampler."))
    for name, metric in run.metrics.items():
        if hasattr(metric, "load_state_dict"):
            metric.load_state_dict(group(f"metric.{name}."))
    run.tally.load(arrays, meta)
    run.rng.bit_generator.state = meta["rng"]
    if meta.get("target_rng") is not None:
        run.target.rng.bit_generator.state = meta["target_rng"]
    run.timer.wall, run.timer.cpu = float(meta["clock"]), float(meta["clock_cpu"])
    run.wall_offset, run.started = meta["wall"], meta["started"]
    run.warmup_seconds += float(meta["warmup"])
    run.schedule.next = int(meta["next_ck"])
    run.target.n_density, run.target.n_grad = int(meta["n_density"]), int(meta["n_grad"])
    run.rows = list(meta["rows"])
    run.latest = run.rows[-1] if run.rows else {}
