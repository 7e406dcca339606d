"""The runner's clock, budget, checkpoints and stored files (with tiny stand-in objects)."""

import json
import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from ckam_bench import rundir, store
from ckam_bench.runner import Budget, Runner, checkpoint_times
from ckam_bench.samplers.base import Block, Sampler
from ckam_bench.targets.base import Target


class StdNormal(Target):
    name = "stdnormal"

    def __init__(self, dim=2):
        super().__init__(dim, box=[[-5, 5]] * dim)

    def _log_density(self, x):
        return -0.5 * float(x @ x)


@dataclass
class _State:
    x: np.ndarray
    logp: float
    t: int = 0


class CountingSampler(Sampler):
    """Independent N(0, I) draws, one density evaluation per iteration; two phases."""

    name = "counting"
    phases = ("warm", "sampling")

    def __init__(self, seconds_per_iteration=0.0, collect_from=0):
        self.seconds_per_iteration = seconds_per_iteration
        self.collect_from = collect_from

    def init(self, target, x0, rng):
        self.target, self.rng = target, rng
        return _State(np.zeros(target.dim), target.log_density(np.zeros(target.dim)))

    def advance(self, state, n):
        if self.seconds_per_iteration:
            time.sleep(self.seconds_per_iteration * n)
        draws = self.rng.standard_normal((n, self.target.dim))
        for x in draws:
            self.target.log_density(x)
        it = state.t + np.arange(n)
        phase = (it >= self.collect_from).astype(np.int8)
        state.t += n
        return state, Block(samples=draws[phase == 1], accepted=np.ones(n, bool),
                            accept_prob=np.ones(n), phase=phase, step_size=np.full(n, 0.5),
                            noise=np.full(n, np.nan))


class SlowMetric:
    """Sleeps at every checkpoint: its time must not count against the sampler budget."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.n = 0

    def update(self, samples):
        self.n += samples.shape[0]

    def compute(self, buffer):
        time.sleep(self.seconds)
        return {"seen": float(self.n)}


def _runner(tmp_path, sampler, budget, metrics=None, **kw):
    labels = {"run_id": "r1", "target": "stdnormal", "sampler": sampler.name, "kernel": "none",
              "seed": 0}
    return Runner(sampler, StdNormal(), metrics or {}, budget, tmp_path, np.random.default_rng(0),
                  labels, progress=False, **kw)


def test_checkpoint_times_log_spaced_and_every():
    t = checkpoint_times(10.0, first=0.1, per_decade=2, every=4.0)
    assert np.allclose(t, [0.1, 0.1 * 10**0.5, 1.0, 10**0.5, 4.0, 8.0])
    assert checkpoint_times(1.0, first=2.0, per_decade=4).size == 0
    with pytest.raises(ValueError, match="first"):
        checkpoint_times(1.0, first=0)


def test_budget_validation():
    with pytest.raises(ValueError, match="budget.seconds"):
        Budget(0)
    with pytest.raises(ValueError, match="max_iterations"):
        Budget(1, max_iterations=0)
    assert Budget(10).wall_cap == 80


def test_slow_metric_does_not_consume_the_sampler_budget(tmp_path):
    budget = Budget(seconds=0.6)
    runner = _runner(tmp_path, CountingSampler(seconds_per_iteration=2e-5), budget,
                     metrics={"slow": SlowMetric(0.1)}, checkpoints=checkpoint_times(0.6, 0.02, 8))
    status = runner.run()
    trace = pd.read_parquet(tmp_path / store.TRACE)
    last = trace.iloc[-1]
    assert status["state"] == "complete" and status["reason"] == "budget"
    # the clock stops at the end of the block that crosses the budget: a block is ~20 ms
    assert budget.seconds <= last.sampler_seconds < budget.seconds + 0.1
    assert last.wall_seconds > budget.seconds + 0.1 * (len(trace) - 1)
    assert (trace.eval_seconds >= 0.1 * np.arange(len(trace))).all()
    assert trace.sampler_seconds.is_monotonic_increasing
    assert last.seen == last.n_collected


def test_heavy_stores_wait_when_checkpoints_get_expensive(tmp_path, monkeypatch):
    """Trace rows follow the schedule; slow sample/diagnostic writes are postponed."""
    writes = []
    original = rundir.write_columns

    def slow_write(columns, path, digest=None):
        time.sleep(0.03)
        writes.append(path.name)
        original(columns, path, digest)

    monkeypatch.setattr(rundir, "write_columns", slow_write)
    times = checkpoint_times(1.0, first=0.01, per_decade=30)
    runner = _runner(tmp_path, CountingSampler(seconds_per_iteration=2e-5), Budget(seconds=1.0),
                     checkpoints=times, max_overhead=0.1)
    runner.run()
    trace = pd.read_parquet(tmp_path / store.TRACE)
    assert len(trace) >= 0.8 * len(times)  # a row at (nearly) every scheduled time
    n_store = writes.count(store.SAMPLES)
    assert 1 <= n_store < len(times) / 2
    assert writes[-1] == store.DIAGNOSTICS  # the final checkpoint writes the stores


def test_iteration_cap_stops_exactly(tmp_path):
    runner = _runner(tmp_path, CountingSampler(), Budget(seconds=60, max_iterations=12345))
    status = runner.run()
    trace = pd.read_parquet(tmp_path / store.TRACE)
    assert status["reason"] == "max_iterations"
    assert trace.iterations.iloc[-1] == 12345
    # init evaluates the start point once, then one evaluation per iteration
    assert trace.n_density.iloc[-1] == 12345 + 1


def test_trace_samples_diagnostics_status(tmp_path):
    sampler = CountingSampler(collect_from=1000)
    runner = _runner(tmp_path, sampler, Budget(seconds=60, max_iterations=30000),
                     samples_capacity=1000, diagnostics_capacity=500, diagnostics_head=2000)
    runner.run()
    trace = pd.read_parquet(tmp_path / store.TRACE)
    for col in ("run_id", "target", "sampler", "kernel", "seed", "checkpoint", "sampler_seconds",
                "wall_seconds", "iterations", "n_collected", "n_density", "n_grad",
                "acceptance", "acceptance_warm", "acceptance_sampling", "step_size"):
        assert col in trace.columns
    assert trace.checkpoint.tolist() == list(range(len(trace)))
    assert trace.n_collected.iloc[-1] == 29000
    samples = pd.read_parquet(tmp_path / store.SAMPLES)
    assert len(samples) <= 1000 and list(samples.columns) == ["index", "x0", "x1"]
    diag = pd.read_parquet(tmp_path / store.DIAGNOSTICS)
    # every iteration of the head, a thinned record after it, no duplicates
    assert diag.iteration.iloc[:2000].tolist() == list(range(2000))
    assert diag.iteration.is_unique and diag.iteration.is_monotonic_increasing
    assert set(diag.phase_name.unique()) == {"warm", "sampling"}
    status = json.loads((tmp_path / store.STATUS).read_text())
    assert status["state"] == "complete" and status["totals"]["iterations"] == 30000
    run = store.load_run(tmp_path)
    assert len(run.trace) == len(trace) and run.samples is not None


def test_interrupt_writes_final_checkpoint(tmp_path):
    class Interrupting(CountingSampler):
        def advance(self, state, n):
            if state.t > 5000:
                raise KeyboardInterrupt
            return super().advance(state, n)

    status = _runner(tmp_path, Interrupting(), Budget(seconds=60)).run()
    assert status["state"] == "interrupted"
    trace = pd.read_parquet(tmp_path / store.TRACE)
    # the rows stay on the checkpoint schedule; the status and resume state hold the stop
    assert trace.empty or trace.iterations.iloc[-1] < status["totals"]["iterations"]
    assert status["totals"]["iterations"] > 5000
    assert json.loads((tmp_path / store.STATUS).read_text())["state"] == "interrupted"
    assert store.read_resume(tmp_path / store.RESUME)[1]["iterations"] > 5000


def test_failure_marks_status_failed(tmp_path):
    class Failing(CountingSampler):
        def advance(self, state, n):
            if state.t > 100:
                raise RuntimeError("boom")
            return super().advance(state, n)

    with pytest.raises(RuntimeError, match="boom"):
        _runner(tmp_path, Failing(), Budget(seconds=60)).run()
    status = json.loads((tmp_path / store.STATUS).read_text())
    assert status["state"] == "failed" and "boom" in status["reason"]
    assert status["totals"]["iterations"] > 100
