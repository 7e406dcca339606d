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

from ckam_bench.engine import store
from tests.legacy_plugin import PlainRandomWalk

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
    return subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


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
