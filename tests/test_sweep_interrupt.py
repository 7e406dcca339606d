"""Ctrl-C stops a joblib sweep (ckam_bench/commands/sweeps.py: run_sweep_job): no job starts
after it, the running jobs end ``interrupted`` with a final checkpoint, and the sweep exits with
130 and one line, no traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ckam_bench.commands import sweeps
from ckam_bench.engine import store
from tests import procs

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "0"}
SEEDS = 6  # three times as many jobs as workers


def _states(sweep: Path) -> dict[str, str]:
    states = {}
    for path in sweep.glob("*/" + store.STATUS):
        try:
            states[path.parent.name] = json.loads(path.read_text())["state"]
        except (OSError, ValueError, KeyError):  # being replaced: read it again
            continue
    return states


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT to a process group")
def test_ctrl_c_stops_a_joblib_sweep(tmp_path):
    sweep = tmp_path / "sweep"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ckam_bench.commands.cli", "-m", "hydra/launcher=joblib",
         "hydra.launcher.n_jobs=2", "sampler=rw", "target=gauss2d_corr",
         f"seed={','.join(map(str, range(SEEDS)))}", "budget.seconds=5", "progress=false",
         f"hydra.sweep.dir={sweep}"], cwd=tmp_path, env=ENV, start_new_session=True,
        preexec_fn=procs.as_at_a_terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and "running" not in _states(sweep).values():
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.05)
        assert "running" in _states(sweep).values(), "no job started"
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at a terminal: the whole process group
        interrupted = time.time()
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert time.time() - interrupted < 60
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("ckam-bench: sweep interrupted: ") and f"hydra.sweep.dir={sweep}" in last
    # no job started after the Ctrl-C: the jobs queued behind the running ones made no folder
    folders = [p for p in sweep.iterdir() if p.is_dir()]
    assert 0 < len(folders) < SEEDS, sorted(p.name for p in folders)
    states = _states(sweep)
    assert set(states.values()) <= {"interrupted", "complete"}, states
    assert "interrupted" in states.values(), states
    for folder in folders:  # a job stopped before its run began holds no run
        if folder.name not in states:
            assert not list(folder.glob("*.parquet")), sorted(os.listdir(folder))
    assert not list(sweep.glob(".ckam-jobs-*")), "the sweep's job notes were left behind"
    # the workers end when they see the sweep's process gone (sweeps.watch_parent polls every
    # POLL s), so a moment after it, not necessarily before its exit status is read
    deadline = time.time() + 10 * sweeps.POLL
    while procs.session(proc.pid) and time.time() < deadline:
        time.sleep(0.1)
    assert not procs.session(proc.pid), "a worker outlived the sweep"
