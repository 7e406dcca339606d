"""What an interrupted run tells its user is true (issue 29 §6): the command that resumes it,
and "restarting", once, for a sampler that cannot save its chain."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ckam_bench.engine import store
from tests.legacy_plugin import PlainRandomWalk
from tests import clirun, procs

ROOT = Path(__file__).resolve().parents[1]


class NonResumableRW(PlainRandomWalk):
    """A sampler that cannot save its chain's state (like nutpie on its own thread)."""

    resumable = False


def _start(tmp_path, out, *overrides):
    conf = tmp_path / "conf" / "sampler"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "nonresumable_rw.yaml").write_text(
        "_target_: tests.test_resume_messages.NonResumableRW\nscale: 1.5\n")
    args = [sys.executable, "-m", "ckam_bench.commands.cli", f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
            "progress=false", f"hydra.run.dir={out}", *overrides]
    return subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=procs.as_at_a_terminal)


def _mtime(path: Path) -> int:
    return path.stat().st_mtime_ns if path.exists() else -1


def _interrupt(proc, out) -> str:
    before = _mtime(out / store.RESUME)
    for _ in range(1200):  # until this run's first checkpoint (start-up varies with load)
        if _mtime(out / store.RESUME) != before:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    return err


def test_an_interrupted_run_prints_the_command_that_resumes_it_and_a_restart_says_so(tmp_path):
    out = tmp_path / "run"
    overrides = ("sampler=nonresumable_rw", "target=gauss2d_corr", "budget.seconds=60")
    err = _interrupt(_start(tmp_path, out, *overrides), out)
    last = err.strip().splitlines()[-1]
    assert last.startswith("ckam-bench: resume it with: ckam-bench ")
    command = shlex.split(last.split(": ", 2)[2])
    assert set(overrides) <= set(command) and f"hydra.run.dir={out}" in command
    assert json.loads((out / store.STATUS).read_text())["state"] == "interrupted"

    # the same command again: a sampler that cannot save its chain restarts, and says so once
    again = _start(tmp_path, out, *overrides)
    err = _interrupt(again, out)
    assert err.count("restarting from the first iteration") == 1
    assert "resuming from checkpoint" not in err


# ---------------------------------------------------------------------------- a sweep (issue 43 §6.2)
def _hc(mode, task, hydra, sweep_dir="/s"):
    from types import SimpleNamespace

    from hydra.types import RunMode

    return SimpleNamespace(mode=getattr(RunMode, mode), sweep=SimpleNamespace(dir=sweep_dir),
                           overrides=SimpleNamespace(task=list(task), hydra=list(hydra)))


def test_a_job_of_a_sweep_is_resumed_by_the_sweeps_command(tmp_path, monkeypatch):
    """The message of an interrupted sweep job is the sweep's command (its swept lists, its
    hydra.* overrides, hydra.sweep.dir), recorded when the sweep started, so following it also
    runs the jobs that never started; without that record, Hydra's multirun.yaml gives it; a
    single run keeps its own command (hydra.* overrides such as the search path included)."""
    from omegaconf import OmegaConf

    from ckam_bench.commands import cli

    search = f"hydra.searchpath=[file://{tmp_path}/conf]"
    sweep = _hc("MULTIRUN", ["sampler=rw,am", "seed=0,1"],
                [f"hydra.sweep.dir={tmp_path}/s", search, "hydra.mode=MULTIRUN"])
    command = cli.sweep_command(sweep.overrides, tmp_path / "s")
    assert shlex.split(command) == ["ckam-bench", "-m", search, "sampler=rw,am", "seed=0,1",
                                    f"hydra.sweep.dir={tmp_path / 's'}"]
    monkeypatch.setenv(cli.SWEEP_COMMAND_ENV, command)
    job = _hc("MULTIRUN", ["sampler=rw", "seed=0"], sweep.overrides.hydra, str(tmp_path / "s"))
    assert cli.resume_command(job, tmp_path / "s" / "0_rw") == command

    monkeypatch.delenv(cli.SWEEP_COMMAND_ENV)  # a job in a process the sweep did not start
    (tmp_path / "s").mkdir()
    OmegaConf.save(OmegaConf.create({"hydra": {"overrides": {
        "task": ["sampler=rw,am", "seed=0,1"], "hydra": sweep.overrides.hydra}}}),
        tmp_path / "s" / "multirun.yaml")
    assert cli.resume_command(job, tmp_path / "s" / "0_rw") == command

    single = _hc("RUN", ["sampler=rw", "seed=0"], [search, "hydra.run.dir=/old", "hydra.mode=RUN"])
    assert shlex.split(cli.resume_command(single, tmp_path / "r")) == [
        "ckam-bench", search, "sampler=rw", "seed=0", f"hydra.run.dir={tmp_path / 'r'}"]


class SlowRW(PlainRandomWalk):
    """A random walk at about 1 000 iterations per second: a sweep job long enough to stop."""

    def advance(self, state, n):
        time.sleep(1e-3 * n)
        return super().advance(state, n)


@pytest.mark.slow
def test_ctrl_c_in_a_sweep_prints_the_sweep_command_that_finishes_it(tmp_path):
    """Ctrl-C during the first job of a two-job sweep: the last line is the sweep's command;
    run as printed, it resumes the stopped job and runs the one that never started."""
    conf = tmp_path / "conf" / "sampler"
    conf.mkdir(parents=True)
    (conf / "slow_rw.yaml").write_text("_target_: tests.test_resume_messages.SlowRW\nscale: 1.5\n")
    sweep = tmp_path / "sweep"
    args = [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "progress=false", "sampler=slow_rw",
            "target=gauss2d_corr", "seed=0,1", "budget.seconds=60", "budget.max_iterations=2000"]
    proc = subprocess.Popen([sys.executable, "-m", "ckam_bench.commands.cli", "-m", *args,
                             f"hydra.sweep.dir={sweep}"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = sweep / "0_slow_rw_gauss2d_corr_s0"
    err = _interrupt(proc, first)
    last = err.strip().splitlines()[-1]
    assert last.startswith("ckam-bench: resume it with: ckam-bench -m ")
    command = shlex.split(last.split(": ", 2)[2])
    assert command[:2] == ["ckam-bench", "-m"] and f"hydra.sweep.dir={sweep}" in command
    assert "seed=0,1" in command and not any(a.startswith("hydra.run.dir") for a in command)
    assert not (sweep / "1_slow_rw_gauss2d_corr_s1").exists()  # never started
    again = clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", *command[1:]],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resuming from checkpoint" in again.stderr
    for job in (first, sweep / "1_slow_rw_gauss2d_corr_s1"):
        assert json.loads((job / store.STATUS).read_text())["state"] == "complete"
