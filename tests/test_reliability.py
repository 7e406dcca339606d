"""Bad input, numerical faults, crashes, resume, concurrency: nothing is lost or silently wrong."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_module

from ckam_bench.engine import rundir, store
from ckam_bench.commands.cli import build
from ckam_bench.commands.validate import ConfigError
from tests import clirun, procs

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "0"}


def ckam_bench(*args, cwd, **kw):
    return clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", *args], cwd=cwd, env=ENV,
                      capture_output=True, text=True, timeout=300, **kw)


def start(*args, cwd):
    return subprocess.Popen([sys.executable, "-m", "ckam_bench.commands.cli", *args], cwd=cwd, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=procs.as_at_a_terminal)


def composed(*overrides):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        return compose("config", overrides=list(overrides))


LABELS = {"run_id": "t", "sampler": "s", "target": "t", "kernel": "k", "seed": 0}

# One case per bad-input class: (overrides, text the message must contain).
BAD = [
    (["sampler.cycle.beta=1.5"], "sampler.cycle.beta must be in (0, 1)"),
    (["sampler.cycle.beta=0"], "sampler.cycle.beta must be in (0, 1)"),
    (["sampler.step_size=abc"], "sampler.step_size: expected a number"),
    (["sampler.step_size=-1"], "sampler.step_size must be"),
    (["sampler.step_size=inf"], "sampler.step_size: must be a finite number"),
    (["sampler.step_size=nan"], "sampler.step_size: must be a finite number"),
    (["+sampler.foo=1"], "sampler.foo: unknown key"),
    (["start=[1,2,3]"], "start point has shape (3,)"),
    (["start=[nan,0]"], "start[0]: must be a finite number"),
    (["budget.seconds=0"], "budget.seconds: must be a number > 0"),
    (["budget.seconds=-5"], "budget.seconds: must be a number > 0"),
    (["budget.max_iterations=0"], "budget.max_iterations: must be an integer >= 1"),
    (["kernel.lengthscale=0"], "sampler.kernel.lengthscale must be"),
    (["kernel.smoothness=1"], "sampler.kernel.smoothness must be in (1"),
    (["sampler.cycle.cycle_length=1"], "sampler.cycle.cycle_length must be an integer >= 2"),
    (["sampler.subsample_size=1"], "sampler.subsample_size must be an integer >= 2"),
    (["checkpoint.first=0"], "checkpoint.first: must be a number > 0"),
    (["seed=-1"], "seed: must be an integer >= 0"),
    (["target.weights=[0,1]"], "target.weights must be"),
    (["progress=maybe"], "progress: must be auto, true or false"),
    (["threads=0"], "threads: must be an integer >= 1"),
    (["threads=100000"], "threads: must be at most"),
]


@pytest.mark.parametrize("overrides, message", BAD, ids=[" ".join(o) for o, _ in BAD])
def test_bad_input_is_named_before_anything_runs(tmp_path, overrides, message):
    cfg = composed("sampler=ckam", *overrides)
    with pytest.raises(ConfigError) as err:
        build(cfg, LABELS, tmp_path / "never")
    assert message in str(err.value)
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("args, message", [
    (["sampler=nosuch"], "unknown sampler 'nosuch'"),
    (["sampler.nosuch=1"], "unknown key 'sampler.nosuch'"),
    (["sampler=ckam", "sampler.cycle.beta=2"], "sampler.cycle.beta must be in (0, 1)"),
    (["start=[0,0,0]"], "start"),
])
def test_cli_exit_code_2_and_no_folder(tmp_path, args, message):
    out = tmp_path / "run"
    proc = ckam_bench(*args, f"hydra.run.dir={out}", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert not out.exists()


def test_nonfinite_densities_are_counted_rejections(tmp_path):
    out = tmp_path / "nan"
    proc = ckam_bench("sampler=rw", "sampler.step_size=1.0",
                      "target._target_=tests.samplers.invariance.NonFiniteHalfPlane",
                      "~target.weights", "budget.seconds=0.5",
                      f"hydra.run.dir={out}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    trace = pd.read_parquet(out / store.TRACE)
    assert trace.n_nonfinite.iloc[-1] > 0.2 * trace.iterations.iloc[-1]
    samples = pd.read_parquet(out / store.SAMPLES)
    assert (samples.x0 >= 0).all()
    status = json.loads((out / store.STATUS).read_text())
    assert "kl" in status["metrics_unsupported"]  # no box: KL left out, the run goes on


def test_nonfinite_start_is_an_error(tmp_path):
    proc = ckam_bench("sampler=rw", "start=[-1,0]",
                      "target._target_=tests.samplers.invariance.NonFiniteHalfPlane",
                      "~target.weights", f"hydra.run.dir={tmp_path / 'x'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert "log density at the start point" in proc.stderr


def test_unwritable_folder_gives_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = ckam_bench("sampler=rw", "budget.seconds=0.2", f"hydra.run.dir={blocker / 'run'}",
                      cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "file" in proc.stderr


def test_failed_write_leaves_previous_files_intact(tmp_path, monkeypatch):
    cfg = composed("sampler=rw", "budget.seconds=0.5", "progress=false",
                   "checkpoint.max_overhead=null")
    runner = build(cfg, LABELS, tmp_path)
    calls = {"n": 0}
    original = rundir.write_columns

    def flaky(columns, path, digest=None):
        calls["n"] += 1
        if calls["n"] > 4:
            raise OSError(28, "No space left on device")
        original(columns, path, digest)

    monkeypatch.setattr(rundir, "write_columns", flaky)
    with pytest.raises(OSError, match="No space"):
        runner.run()
    # every file present is a complete, readable version; no temporary files are left
    pd.read_parquet(tmp_path / store.TRACE)
    pd.read_parquet(tmp_path / store.SAMPLES)
    assert not list(tmp_path.glob(".*.tmp"))


def _kill_and_resume(tmp_path, kills, seed=0):
    """Kill a run with SIGKILL at random moments, resuming it each time, then finish it."""
    args = ["sampler=ckam", "target=bimodal", "budget.seconds=100",
            "budget.max_iterations=150000", f"seed={seed}", "checkpoint.first=0.02",
            "checkpoint.per_decade=20", "progress=false"]
    full = tmp_path / "full"
    assert ckam_bench(*args, f"hydra.run.dir={full}", cwd=tmp_path).returncode == 0
    out = tmp_path / "killed"
    rng = np.random.default_rng(seed)
    checkpoints_seen = []
    for _ in range(kills):
        proc = start(*args, f"hydra.run.dir={out}", cwd=tmp_path)
        time.sleep(rng.uniform(1.2, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if (out / store.TRACE).exists():  # every file readable whatever the moment
            trace = pd.read_parquet(out / store.TRACE)
            pd.read_parquet(out / store.SAMPLES)
            pd.read_parquet(out / store.DIAGNOSTICS)
            status = json.loads((out / store.STATUS).read_text())
            if status["state"] == "complete":
                break
            assert status["state"] == "running"  # says it did not finish
            checkpoints_seen.append(len(trace))
    proc = ckam_bench(*args, f"hydra.run.dir={out}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return full, out, checkpoints_seen


def _assert_same_run(full, out):
    a, b = pd.read_parquet(full / store.TRACE), pd.read_parquet(out / store.TRACE)
    assert b.checkpoint.tolist() == list(range(len(b)))  # no gaps, no duplicates
    assert b.iterations.is_monotonic_increasing and b.sampler_seconds.is_monotonic_increasing
    assert a.iterations.iloc[-1] == b.iterations.iloc[-1] == 150000
    assert a.n_density.iloc[-1] == b.n_density.iloc[-1]
    assert a.kl.iloc[-1] == b.kl.iloc[-1]
    pd.testing.assert_frame_equal(pd.read_parquet(full / store.SAMPLES),
                                  pd.read_parquet(out / store.SAMPLES))
    pd.testing.assert_frame_equal(pd.read_parquet(full / store.DIAGNOSTICS),
                                  pd.read_parquet(out / store.DIAGNOSTICS))
    assert json.loads((out / store.STATUS).read_text())["state"] == "complete"
    assert not (out / store.RESUME).exists()


@pytest.mark.slow  # three CLI runs, a kill and a resume (~60 s); the rundir tests resume in-process
def test_killed_run_resumes_bit_identically(tmp_path):
    full, out, _ = _kill_and_resume(tmp_path, kills=3)
    _assert_same_run(full, out)


@pytest.mark.slow
def test_twenty_kills(tmp_path):
    full, out, seen = _kill_and_resume(tmp_path, kills=20, seed=1)
    _assert_same_run(full, out)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signals_write_a_final_checkpoint(tmp_path, sig):
    out = tmp_path / "term"
    proc = start("sampler=rw", "budget.seconds=60", f"hydra.run.dir={out}", cwd=tmp_path)
    for _ in range(600):  # until the first checkpoint (start-up and warm-up vary with load)
        if (out / store.RESUME).exists():
            break
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == 130
    status = json.loads((out / store.STATUS).read_text())
    assert status["state"] == "interrupted"
    trace = pd.read_parquet(out / store.TRACE)
    assert trace.iterations.iloc[-1] <= status["totals"]["iterations"]  # rows stay on schedule
    assert store.read_resume(out / store.RESUME)[1]["iterations"] == status["totals"]["iterations"]


@pytest.mark.slow  # three sweeps (~25 s)
def test_rerun_skips_complete_and_refuses_other_config(tmp_path):
    sweep = tmp_path / "sweep"
    args = ["-m", "sampler=rw,gam", "seed=0,1", "budget.seconds=0.3", f"hydra.sweep.dir={sweep}"]
    assert ckam_bench(*args, cwd=tmp_path).returncode == 0
    traces = {p: (p / store.TRACE).stat().st_mtime_ns for p in store.find_runs(sweep)}
    assert len(traces) == 4
    again = ckam_bench(*args, cwd=tmp_path)
    assert again.returncode == 0 and again.stderr.count("already complete") == 4
    assert traces == {p: (p / store.TRACE).stat().st_mtime_ns for p in store.find_runs(sweep)}
    # a broken run of the sweep is redone, the others are left alone
    broken = sorted(traces)[0]
    (broken / store.STATUS).write_text('{"state": "running"}')
    third = ckam_bench(*args, cwd=tmp_path)
    assert third.returncode == 0 and third.stderr.count("already complete") == 3
    assert json.loads((broken / store.STATUS).read_text())["state"] == "complete"
    other = ckam_bench("sampler=rw", "budget.seconds=0.4", "seed=0",
                       f"hydra.run.dir={sorted(traces)[1]}", cwd=tmp_path)
    assert other.returncode == 2 and "different configuration" in other.stderr


@pytest.mark.slow  # a second interpreter holding the folder for 4 s of sampling (10 s)
def test_a_busy_folder_is_never_shared(tmp_path):
    out = tmp_path / "shared"
    first = start("sampler=rw", "budget.seconds=4", f"hydra.run.dir={out}", cwd=tmp_path)
    for _ in range(100):
        if (out / store.STATUS).exists():
            break
        time.sleep(0.1)
    second = ckam_bench("sampler=rw", "budget.seconds=4", f"hydra.run.dir={out}", cwd=tmp_path)
    assert second.returncode == 0 and "in use by another process" in second.stderr
    assert first.wait(timeout=120) == 0
    assert json.loads((out / store.STATUS).read_text())["state"] == "complete"


def test_resume_file_holds_no_pickle(tmp_path):
    cfg = composed("sampler=kam", "budget.seconds=0.3", "progress=false")
    runner = build(cfg, LABELS, tmp_path)
    runner.checkpoints = np.array([0.1])
    runner.budget = type(runner.budget)(seconds=60, max_iterations=60000)
    status = runner.run()
    assert status["state"] == "complete"
    # an interrupted run keeps its resume file; it loads with allow_pickle=False
    arrays, meta = store.read_resume(_interrupted_run(tmp_path / "int"))
    assert all(a.dtype != object for a in arrays.values())
    assert meta["iterations"] > 0 and "sampler.x" in arrays


def _interrupted_run(out):
    cfg = composed("sampler=kam", "budget.seconds=60", "progress=false")
    runner = build(cfg, LABELS, out)
    advance = runner.sampler.advance

    def interrupting(state, n):
        if state.t > 2000:
            raise KeyboardInterrupt
        return advance(state, n)

    runner.sampler.advance = interrupting
    assert runner.run()["state"] == "interrupted"
    return out / store.RESUME


@pytest.mark.slow  # a joblib sweep killed twice: while its workers start and while they run
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
@pytest.mark.parametrize("when", ["starting", "running"])
def test_joblib_workers_end_when_the_sweep_is_killed(tmp_path, when):
    """SIGKILL of a joblib sweep's process: its worker processes end too (ckam_bench/commands/sweeps.py)
    instead of running on, and idling for minutes, re-parented."""
    sweep = tmp_path / "sweep"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ckam_bench.commands.cli", "-m", "hydra/launcher=joblib",
         "hydra.launcher.n_jobs=2", "sampler=rw", "seed=0,1,2,3", "budget.seconds=60",
         "progress=false", f"hydra.sweep.dir={sweep}"], cwd=tmp_path, env=ENV,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set[int] = set()
    deadline = time.time() + 240
    while time.time() < deadline:  # until both workers exist (and, for "running", sample)
        workers = procs.descendants(proc.pid)
        started = len(list(sweep.glob("*/" + store.STATUS))) >= 2 if sweep.exists() else False
        if len(workers) >= 2 and (when == "starting" or started):
            break
        time.sleep(0.2)
    assert len(workers) >= 2, "the sweep did not start its workers"
    proc.kill()
    proc.wait()
    deadline = time.time() + 120
    while time.time() < deadline and any(procs.alive(p) for p in workers):
        time.sleep(0.5)
    left = [p for p in workers if procs.alive(p)]
    for pid in left:  # do not leave them running if the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left, f"worker processes {left} outlived the sweep"
    if when == "running":  # a running job ended as on Ctrl-C: resumable
        states = {json.loads(p.read_text())["state"] for p in sweep.glob("*/" + store.STATUS)}
        assert states <= {"interrupted", "running"}, states
