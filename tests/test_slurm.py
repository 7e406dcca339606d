"""A sweep on a real (one-node) SLURM cluster through ``hydra/launcher=slurm``.

The cluster is started by ``scripts/slurm_cluster.sh`` (Debian's slurm-wlm and munge; root
needed, idempotent). One job is cancelled with ``scancel`` mid-run; re-running the same sweep
skips the complete jobs and resumes the cancelled one, which ends with the same trace and
samples as an uninterrupted local run of the same settings (RW's draws do not depend on how
the run is cut into blocks, and the budget and checkpoints are counted in iterations).
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from ckam_bench.engine import store

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "slurm_cluster.sh"
# Python loops (no numba compile in the jobs, and a chain slow enough to cancel mid-run).
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "CKAM_BENCH_JIT": "0", "HYDRA_FULL_ERROR": "0"}
RUN = ["sampler=rw", "target=gmm2d", "progress=false", "budget.seconds=600",
       "checkpoint.on=iterations", "checkpoint.first=1000", "checkpoint.per_decade=10"]
N = 400_000
SLURM = ["hydra/launcher=slurm", "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=20"]


def _cluster():
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("the test SLURM cluster needs root and apt-get")
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    states = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True,
                            timeout=30).stdout.split()
    assert states and set(states) <= {"idle", "mixed", "allocated"}, proc.stdout


def _status(folder: Path) -> dict:
    try:
        return json.loads((folder / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _sweep(sweep: Path, cwd: Path):
    args = [sys.executable, "-m", "ckam_bench.commands.cli", "-m", *SLURM, *RUN, "seed=0,1,2",
            f"budget.max_iterations={N}", f"hydra.sweep.dir={sweep}"]
    return subprocess.Popen(args, cwd=cwd, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _job_ids(sweep: Path) -> dict:
    """{array index: SLURM job id} of the sweep's submitit jobs pending or running."""
    out = subprocess.run(["squeue", "-h", "-r", "-t", "PD,R,CG", "-o", "%i %o"],
                         capture_output=True, text=True, timeout=30).stdout
    ids = {}
    for line in out.splitlines():
        job, _, command = line.partition(" ")
        if str(sweep) in command and "_" in job:
            ids[int(job.split("_")[1])] = job
    return ids


@pytest.mark.slow
def test_slurm_sweep_cancel_and_resume(tmp_path):
    _cluster()
    sweep = tmp_path / "sweep"
    folders = {s: sweep / f"{s}_rw_gmm2d_s{s}" for s in range(3)}

    first = _sweep(sweep, tmp_path)
    deadline = time.time() + 600
    cancelled = None
    while time.time() < deadline and first.poll() is None:
        st = _status(folders[1])
        if st.get("state") == "running" and st.get("totals", {}).get("iterations", 0) >= 5_000:
            job = _job_ids(sweep).get(1)
            assert job, "the running job is not in squeue"
            subprocess.run(["scancel", job], check=True, timeout=30)
            cancelled = st["totals"]["iterations"]
            break
        time.sleep(0.5)
    assert cancelled is not None, "job 1 never reached a checkpoint before the sweep ended"
    out, err = first.communicate(timeout=600)
    assert first.returncode != 0  # the sweep reports the cancelled job (submitit: CANCELLED)
    while _job_ids(sweep) and time.time() < deadline + 300:  # the other jobs run on
        time.sleep(1)
    st1 = _status(folders[1])
    assert st1["state"] == "interrupted", (st1.get("state"), err[-2000:])
    assert st1["totals"]["iterations"] < N
    for s in (0, 2):
        assert _status(folders[s])["state"] == "complete", (s, err[-2000:])
    traces = {s: (folders[s] / store.TRACE).stat().st_mtime_ns for s in (0, 2)}

    again = _sweep(sweep, tmp_path)
    out, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-3000:]
    for s in (0, 2):  # complete runs are skipped, their files untouched
        assert (folders[s] / store.TRACE).stat().st_mtime_ns == traces[s]
        assert _status(folders[s])["state"] == "complete"
    st1 = _status(folders[1])
    assert st1["state"] == "complete" and st1["totals"]["iterations"] == N

    local = tmp_path / "local"
    proc = subprocess.run([sys.executable, "-m", "ckam_bench.commands.cli", *RUN, "seed=1",
                           f"budget.max_iterations={N}", f"hydra.run.dir={local}"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    cols = ["checkpoint", "iterations", "n_collected", "n_density", "acceptance", "kl", "ess_min"]
    resumed, full = (pd.read_parquet(f / store.TRACE) for f in (folders[1], local))
    pd.testing.assert_frame_equal(resumed[cols], full[cols])
    pd.testing.assert_frame_equal(pd.read_parquet(folders[1] / store.SAMPLES),
                                  pd.read_parquet(local / store.SAMPLES))


def test_squeue_watcher_reads_states_as_sacct_would():
    from ckam_bench.commands.slurm import squeue_watcher

    watcher = squeue_watcher(delay_s=60)
    watcher.register_job("9_0")
    watcher.register_job("9_1")
    watcher.register_job("12")
    command = watcher._make_command()
    assert command[0] == "squeue" and "--states=all" in command and command[-1] == "--jobs=12,9"
    info = watcher.read_info(b"9_0|CANCELLED|vm\n9_1|RUNNING|vm\n9_[2-3]|PENDING|\n12|COMPLETED|vm\n")
    assert info["9_0"]["State"] == "CANCELLED" and info["9_1"]["State"] == "RUNNING"
    assert info["9_3"]["State"] == "PENDING" and info["12"]["State"] == "COMPLETED"


def test_slurm_callback_leaves_other_launchers_alone(monkeypatch):
    from omegaconf import OmegaConf
    from submitit.slurm.slurm import SlurmJob

    from ckam_bench.commands import slurm

    asked = []
    monkeypatch.setattr(slurm, "accounting_disabled", lambda: asked.append(1) or True)
    monkeypatch.setattr(SlurmJob, "watcher", SlurmJob.watcher)
    joblib = OmegaConf.create({"hydra": {"launcher": {
        "_target_": "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"}}})
    slurm.SlurmStates().on_multirun_start(joblib)
    assert not asked and type(SlurmJob.watcher).__name__ == "SlurmInfoWatcher"
    on_slurm = OmegaConf.create({"hydra": {"launcher": {
        "_target_": "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"}}})
    slurm.SlurmStates().on_multirun_start(on_slurm)
    assert asked and type(SlurmJob.watcher).__name__ == "SqueueInfoWatcher"
