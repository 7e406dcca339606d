"""Nothing a user owns is ever lost: run folders under hostile input and machine faults.

Every test snapshots the folders involved byte for byte and asserts that nothing outside the
run's own files changed: config errors create nothing, refused runs change nothing, damaged
resume state is set aside (never deleted, never trusted), the lock is never held twice.
"""

import json
import multiprocessing as mp
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from ckam_bench.engine import rundir, store
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "0"}
RW = ["sampler=rw", "target=gmm2d", "progress=false"]
# A deterministic run: budget and checkpoints in iterations.
DET = [*RW, "budget.seconds=60", "budget.max_iterations=40000", "checkpoint.on=iterations",
       "checkpoint.first=1000", "checkpoint.per_decade=10"]


def cli(*args, cwd):
    return clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", *args], cwd=cwd, env=ENV,
                      capture_output=True, text=True, timeout=300)


def tree(folder: Path) -> dict:
    """Every file and folder below ``folder``: relative path -> bytes (None for folders)."""
    out = {}
    for p in sorted(Path(folder).rglob("*")):
        out[str(p.relative_to(folder))] = None if p.is_dir() else p.read_bytes()
    return out


def runs_tree(sweep: Path) -> dict:
    """A sweep folder's tree but Hydra's ``multirun.yaml`` (it records the latest sweep)."""
    return {k: v for k, v in tree(sweep).items() if k != "multirun.yaml"}


def user_folder(root: Path) -> Path:
    (root / "s").mkdir(parents=True)
    (root / "s" / "f").write_text("keep me")
    (root / "notes.txt").write_text("mine")
    return root


# ---------------------------------------------------------------------------- config errors
BAD_VALUES = [
    "sampler.step_size=0", "seed=-1", "seed=abc", "seed=9223372036854775808",
    "budget.seconds=1e308", "checkpoint.every=1e-12", "metrics.diagnostics_head=1000000000000",
    "metrics.samples_capacity=100000000000", "budget.max_iterations=0",
    "'sampler.step_size=${eval:1+1}'", "'sampler.step_size=${oc.env:NO_SUCH_VARIABLE}'",
    "checkpoint.on=grad", "checkpoint.on=parsecs", "budget.clock=sundial",
    "sampler=ckam sampler.subsample_size=1000000000",
]


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_config_error_creates_nothing_and_keeps_user_files(tmp_path, bad):
    demo = user_folder(tmp_path / "demo")
    before = tree(tmp_path)
    proc = cli(*RW, *bad.strip("'").split(" "), f"hydra.run.dir={demo}", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    key = bad.strip("'").split(" ")[-1].split("=")[0]
    assert key.split(".")[-1] in lines[0] or key in lines[0], lines[0]
    assert tree(tmp_path) == before


def test_config_error_in_a_new_nested_folder_leaves_no_folder(tmp_path):
    proc = cli(*RW, "sampler.step_size=0", f"hydra.run.dir={tmp_path}/a/b/c", cwd=tmp_path)
    assert proc.returncode == 2
    assert list(tmp_path.iterdir()) == []


def test_current_directory_is_never_removed_or_touched(tmp_path):
    project = user_folder(tmp_path / "project")
    before = tree(tmp_path)
    bad = cli(*RW, "seed=-1", "hydra.run.dir=.", cwd=project)
    good = cli(*RW, "budget.seconds=0.2", "hydra.run.dir=.", cwd=project)
    assert bad.returncode == 2 and good.returncode == 2, good.stderr
    assert "not a ckam-bench run" in good.stderr
    assert tree(tmp_path) == before


def test_a_folder_of_complete_runs_is_refused_untouched(tmp_path):
    sweep = tmp_path / "sweep"
    assert cli("-m", *RW, "seed=0,1", "budget.seconds=0.2", f"hydra.sweep.dir={sweep}",
               cwd=tmp_path).returncode == 0
    before = tree(tmp_path)
    for args in (["sampler.step_size=0"], ["budget.seconds=0.2"]):
        proc = cli(*RW, *args, f"hydra.run.dir={sweep}", cwd=tmp_path)
        assert proc.returncode == 2
    assert tree(tmp_path) == before


def test_refused_run_keeps_the_stored_config(tmp_path):
    run = tmp_path / "runA"
    assert cli(*RW, "budget.seconds=0.3", f"hydra.run.dir={run}", cwd=tmp_path).returncode == 0
    before = tree(tmp_path)
    proc = cli("sampler=gam", "target=gmm2d", "seed=5", f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 2 and "different configuration" in proc.stderr
    assert tree(tmp_path) == before


def test_a_damaged_status_does_not_let_another_config_in(tmp_path):
    run = tmp_path / "run"
    proc = cli(*DET, "budget.max_iterations=4000000", "budget.seconds=0.4",
               f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 0
    (run / store.STATUS).write_text("{ damaged")
    before = tree(tmp_path)
    other = cli("sampler=gam", "target=gmm2d", "budget.seconds=0.4", f"hydra.run.dir={run}",
                cwd=tmp_path)
    assert other.returncode == 2 and "different configuration" in other.stderr
    assert tree(tmp_path) == before


def test_a_damaged_marker_refuses_the_folder(tmp_path):
    run = tmp_path / "run"
    assert cli(*RW, "budget.seconds=0.2", f"hydra.run.dir={run}", cwd=tmp_path).returncode == 0
    (run / rundir.MARKER).write_text("garbage")
    before = tree(tmp_path)
    proc = cli(*RW, "budget.seconds=0.2", f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 2 and "damaged" in proc.stderr
    assert tree(tmp_path) == before


# ---------------------------------------------------------------------------- resume faults
def _interrupted(tmp_path, name="run", n=12000):
    """A deterministic run stopped after ``n`` iterations (state interrupted, resume kept)."""
    run = tmp_path / name
    script = textwrap.dedent(f"""
        import sys
        from ckam_bench.commands import cli
        from ckam_bench.samplers.random_walk import RandomWalk
        advance = RandomWalk.advance
        def stop(self, state, k):
            if state.t >= {n}:
                raise KeyboardInterrupt
            return advance(self, state, min(k, {n} - state.t))
        RandomWalk.advance = stop
        sys.argv = ["ckam-bench", *{DET!r}, "hydra.run.dir={run}"]
        cli.main()
    """)
    proc = clirun.run([sys.executable, "-c", script], cwd=tmp_path, env=ENV,
                      capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130, proc.stderr
    assert (run / store.RESUME).exists() and (run / rundir.RESUME_PREV).exists()
    return run


def _signalled_at(tmp_path, n: int, name="signalled"):
    """A deterministic run sent SIGTERM inside the block that ends exactly at iteration ``n``:
    the block completes, and the run stops there before writing anything else."""
    run = tmp_path / name
    script = textwrap.dedent(f"""
        import os, signal, sys
        from ckam_bench.commands import cli
        from ckam_bench.samplers.random_walk import RandomWalk
        advance = RandomWalk.advance
        def stop(self, state, k):
            k = min(k, {n} - state.t) if state.t < {n} else k
            state, block = advance(self, state, k)
            if state.t == {n}:
                os.kill(os.getpid(), signal.SIGTERM)
            return state, block
        RandomWalk.advance = stop
        sys.argv = ["ckam-bench", *{DET!r}, "hydra.run.dir={run}"]
        cli.main()
    """)
    proc = clirun.run([sys.executable, "-c", script], cwd=tmp_path, env=ENV,
                      capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0, proc.stderr
    assert json.loads((run / store.STATUS).read_text())["totals"]["iterations"] == n
    return run


@pytest.mark.parametrize("n", [3982, pytest.param(3983, marks=pytest.mark.slow),
                               pytest.param(3981, marks=pytest.mark.slow)], ids=["at", "after", "before"])
def test_a_stop_at_a_checkpoint_position_resumes_row_for_row(tmp_path, n):
    """SIGTERM landing when a block has just reached a checkpoint's position (3982 on this
    schedule): the row due there is written when the run continues, not one iteration late."""
    full, _ = _full(tmp_path)
    run = _signalled_at(tmp_path, n)
    proc = cli(*DET, f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    _same_rows(full, pd.read_parquet(run / store.TRACE))


def test_a_stop_before_the_first_checkpoint_resumes_without_setting_anything_aside(tmp_path):
    """A run stopped before its first checkpoint (a peer's warm-up is one long block) holds a
    resume state without trace rows: the next run continues from it, as from any other
    state, rather than calling it damaged and starting afresh."""
    full, _ = _full(tmp_path)
    run = _signalled_at(tmp_path, 500)
    proc = cli(*DET, f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "resuming from a state saved before its first checkpoint (500 iterations" in proc.stderr
    assert "damaged" not in proc.stderr and not list(run.glob("*.damaged-*"))
    _same_rows(full, pd.read_parquet(run / store.TRACE))


def _full(tmp_path):
    run = tmp_path / "full"
    assert cli(*DET, f"hydra.run.dir={run}", cwd=tmp_path).returncode == 0
    return pd.read_parquet(run / store.TRACE), pd.read_parquet(run / store.SAMPLES)


def _same_rows(a: pd.DataFrame, b: pd.DataFrame):
    cols = ["checkpoint", "iterations", "n_collected", "n_density", "acceptance", "kl",
            "ess_min"]
    pd.testing.assert_frame_equal(a[cols].reset_index(drop=True), b[cols].reset_index(drop=True))


def test_resume_equals_an_uninterrupted_run_row_for_row(tmp_path):
    full, full_samples = _full(tmp_path)
    run = _interrupted(tmp_path)
    rows_before = len(pd.read_parquet(run / store.TRACE))
    proc = cli(*DET, f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"resuming from checkpoint {rows_before - 1} " in proc.stderr
    resumed = pd.read_parquet(run / store.TRACE)
    _same_rows(full, resumed)  # no spurious row, no gap, the same numbers
    assert resumed.sampler_seconds.is_monotonic_increasing
    pd.testing.assert_frame_equal(full_samples, pd.read_parquet(run / store.SAMPLES))
    assert not (run / store.RESUME).exists() and not (run / rundir.RESUME_PREV).exists()


def _drop_key(path: Path):
    arrays, meta = store.read_resume(path)
    del meta["next_ck"]
    rundir.write_resume(arrays, meta, path)


def _truncate(path: Path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _empty(path: Path):
    path.write_bytes(b"")


def _flip_bytes(path: Path):
    """Corrupt a stored array's bytes without changing the zip structure (a CRC failure)."""
    with zipfile.ZipFile(path) as zf:
        info = max(zf.infolist(), key=lambda i: i.file_size)
        offset = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data = bytearray(path.read_bytes())
    for i in range(offset + 200, offset + 260):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [pytest.param(_drop_key, marks=pytest.mark.slow),
                                    pytest.param(_truncate, marks=pytest.mark.slow),
                                    pytest.param(_empty, marks=pytest.mark.slow), _flip_bytes],
                         ids=["missing-key", "truncated", "empty", "bad-crc"])
def test_damaged_resume_is_set_aside_and_the_previous_state_used(tmp_path, damage):
    full, _ = _full(tmp_path)
    run = _interrupted(tmp_path)
    trace_before = pd.read_parquet(run / store.TRACE)
    original = (run / store.RESUME).read_bytes()
    damage(run / store.RESUME)
    damaged = (run / store.RESUME).read_bytes()
    proc = cli(*DET, f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "set aside resume.npz" in proc.stderr and "resume.prev.npz" in proc.stderr
    aside = list(run.glob("resume.npz.damaged-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == damaged != original
    # every row written before is still on disk: in the trace (when the previous state had
    # them all) or in a trace set aside whole (when it went beyond that state)
    final = pd.read_parquet(run / store.TRACE)
    kept = [pd.read_parquet(p) for p in run.glob("trace.parquet.damaged-*")]
    if kept:
        pd.testing.assert_frame_equal(kept[0], trace_before)
    else:
        _same_rows(trace_before, final.iloc[: len(trace_before)])
    _same_rows(full, final)


def test_no_intact_state_restarts_and_keeps_the_old_trace(tmp_path):
    full, _ = _full(tmp_path)
    run = _interrupted(tmp_path)
    trace_before = pd.read_parquet(run / store.TRACE)
    _empty(run / store.RESUME)
    _truncate(run / rundir.RESUME_PREV)
    proc = cli(*DET, f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "starts afresh" in proc.stderr
    assert len(list(run.glob("resume*.damaged-*"))) == 2
    pd.testing.assert_frame_equal(pd.read_parquet(next(run.glob("trace.parquet.damaged-*"))),
                                  trace_before)
    _same_rows(full, pd.read_parquet(run / store.TRACE))


def test_a_resume_state_of_another_config_is_refused(tmp_path):
    run = _interrupted(tmp_path)
    other = _interrupted(tmp_path, "other", n=8000)
    # swap in a state that carries another config hash
    arrays, meta = store.read_resume(other / store.RESUME)
    rundir.write_resume(arrays, {**meta, "config_hash": "0" * 64}, run / store.RESUME)
    before = tree(run)
    proc = cli(*DET, f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 2 and "another configuration" in proc.stderr
    assert tree(run) == before


def test_kill_time_temporary_files_are_cleaned_and_nothing_else(tmp_path):
    run = _interrupted(tmp_path)
    (run / ".trace.parquet.abc123.tmp").write_bytes(b"half a write")
    (run / ".mine.tmp").write_bytes(b"not ours")  # not a name the harness writes
    assert cli(*DET, f"hydra.run.dir={run}", cwd=tmp_path).returncode == 0
    assert not (run / ".trace.parquet.abc123.tmp").exists()
    assert (run / ".mine.tmp").read_bytes() == b"not ours"


KILL_AT_WRITE = textwrap.dedent("""
    import os, sys
    from ckam_bench.commands import cli
    from ckam_bench.engine import rundir
    k = int(sys.argv[1]); calls = [0]
    original = rundir.atomic_write
    def dying(path, write):
        calls[0] += 1
        if calls[0] == k:  # die after the temporary file is written, before the rename
            import tempfile
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.close(fd); write(tmp); os._exit(9)
        original(path, write)
    rundir.atomic_write = dying
    sys.argv = ["ckam-bench", *sys.argv[2:]]
    cli.main()
""")


def _kill_at_writes(tmp_path, writes):
    full, full_samples = _full(tmp_path)
    for k in writes:
        run = tmp_path / f"k{k}"
        args = [*DET, f"hydra.run.dir={run}"]
        proc = clirun.run([sys.executable, "-c", KILL_AT_WRITE, str(k), *args], cwd=tmp_path,
                          env=ENV, capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 9), proc.stderr
        for name in (store.TRACE, store.SAMPLES, store.DIAGNOSTICS):  # all readable
            if (run / name).exists():
                pd.read_parquet(run / name)
        again = cli(*args, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        _same_rows(full, pd.read_parquet(run / store.TRACE))
        pd.testing.assert_frame_equal(full_samples, pd.read_parquet(run / store.SAMPLES))
        assert not list(run.glob(".*.tmp")) and not list(run.glob("*.damaged-*"))


@pytest.mark.slow  # kills at checkpoint writes (~40 s)
def test_kill_at_some_checkpoint_writes(tmp_path):
    _kill_at_writes(tmp_path, [1, 7, 23])  # every write: the slow test below


@pytest.mark.slow
def test_kill_at_every_checkpoint_write(tmp_path):
    _kill_at_writes(tmp_path, range(1, 60, 2))


# ---------------------------------------------------------------------------- the lock
def _contend(folder, barrier, results, trials):
    for _ in range(trials):
        barrier.wait()
        try:
            lock = rundir.FolderLock(Path(folder)).acquire()
        except rundir.FolderBusy:
            results.put(0)
            barrier.wait()
            continue
        results.put(1)
        barrier.wait()  # everybody has tried while this one holds the lock
        lock.release()


def test_lock_is_held_once_under_a_synchronised_race(tmp_path):
    n_proc, trials = 6, 60
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(n_proc), ctx.Queue()
    procs = [ctx.Process(target=_contend, args=(tmp_path, barrier, results, trials))
             for _ in range(n_proc)]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in range(n_proc * trials)]
    for p in procs:
        p.join(timeout=60)
    assert sum(got) == trials  # exactly one holder per trial
    assert all(p.exitcode == 0 for p in procs)


def test_a_dead_or_reused_pid_never_blocks_the_folder(tmp_path):
    # a lock file naming a live pid (1) and one naming a dead one: neither holds a flock
    for text in ('{"host": "this-host", "pid": 1}', "pid 4194999 on this-host\n", ""):
        (tmp_path / rundir.LOCK).write_text(text)
        lock = rundir.FolderLock(tmp_path).acquire()
        with pytest.raises(rundir.FolderBusy):
            rundir.FolderLock(tmp_path).acquire()
        lock.release()


def test_a_killed_holder_releases_the_lock(tmp_path):
    code = ("import sys, time; from pathlib import Path; from ckam_bench import rundir; "
            f"rundir.FolderLock(Path({str(tmp_path)!r})).acquire(); print('held', flush=True); "
            "time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], env=ENV, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "held"
    with pytest.raises(rundir.FolderBusy):
        rundir.FolderLock(tmp_path).acquire()
    proc.kill()
    proc.wait()
    rundir.FolderLock(tmp_path).acquire().release()


# ---------------------------------------------------------------------------- sweeps
@pytest.mark.slow  # four sweeps (~25 s)
def test_a_refused_job_does_not_abort_the_sweep(tmp_path):
    sweep = tmp_path / "sweep"
    base = ["-m", *RW, f"hydra.sweep.dir={sweep}", "seed=0,1"]
    assert cli(*base, "budget.seconds=0.2,0.3", cwd=tmp_path).returncode == 0
    runs = store.find_runs(sweep)
    assert len(runs) == 4
    before = runs_tree(sweep)
    # the value list reordered: every job meets a folder holding another config
    again = cli(*base, "budget.seconds=0.3,0.2", cwd=tmp_path)
    assert again.returncode == 2
    assert "4 job(s) of the sweep were refused" in again.stderr
    for run in runs:
        assert str(run) in again.stderr
    assert runs_tree(sweep) == before
    # a sweep mixing refused and new jobs runs the new ones
    # (jobs 0, 1 meet other configs, job 3 its own complete run, jobs 2, 4, 5 new folders)
    mixed = cli(*base, "budget.seconds=0.3,0.2,0.25", cwd=tmp_path)
    assert mixed.returncode == 2 and "2 job(s)" in mixed.stderr
    assert mixed.stderr.count("already complete") == 1
    assert len(store.find_runs(sweep)) == 7


def test_invalid_sweep_job_leaves_no_folder(tmp_path):
    sweep = tmp_path / "sweep"
    proc = cli("-m", *RW, "budget.seconds=0.2", "sampler.step_size=1,0",
               f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert proc.returncode == 2 and "1 job(s)" in proc.stderr
    assert len(store.find_runs(sweep)) == 1
    names = sorted(p.name for p in sweep.iterdir())
    # no folder for job 1 (report/: the sweep's report, ckam_bench/report/callback.py)
    # .ckam-sweep.json: the hash of the multirun.yaml Hydra wrote (ckam_bench/engine/outputs.py)
    assert names == [".ckam-sweep.json", store.find_runs(sweep)[0].name, "multirun.yaml", "report"]


# ---------------------------------------------------------------------------- empty runs
def _empty_run(folder: Path, collect_from=10**9):
    """An in-process run of config hash "h" that ends after 300 iterations; with the default
    ``collect_from`` every iteration is warm-up, so it collects nothing (state ``empty``)."""
    import numpy as np

    from ckam_bench.engine.runner import Budget, Runner
    from tests.test_runner import CountingSampler, StdNormal

    labels = {"run_id": "r1", "target": "stdnormal", "sampler": "counting", "kernel": "none",
              "seed": 0}
    runner = Runner(CountingSampler(collect_from=collect_from), StdNormal(), {},
                    Budget(60, max_iterations=300), folder, np.random.default_rng(0), labels,
                    progress=False, status_extra={"config_hash": "h"})
    return runner


def test_an_empty_run_is_redone_not_skipped(tmp_path):
    """Issue 43 §6.1: a run that collected nothing is no result, so claiming its folder again
    for the same config redoes it from its first iteration (one note saying so) instead of
    answering "already complete"; its own files are rewritten, anything unrecognised beside
    them (a damaged samples file, a stray resume state) is set aside, never deleted."""
    run = tmp_path / "run"
    assert _empty_run(run).run()["state"] == "empty"
    (run / "notes.txt").write_text("mine")  # the user's own file in the folder
    (run / store.SAMPLES).write_bytes(b"not parquet")
    (run / store.RESUME).write_bytes(b"stray state")
    folder = rundir.RunFolder.claim(run, "h")
    try:
        assert folder.state == "fresh" and folder.resume is None
        assert any(n.startswith("redoing the run from its first iteration: it ended "
                                "(max_iterations) without collecting a sample") for n in folder.notes)
        assert sorted(p.name.split(".damaged-")[0] for p in run.glob("*.damaged-*")) == \
            [store.RESUME, store.SAMPLES]
        again = _empty_run(run, collect_from=100)
        again.folder = folder
        status = again.run()
    finally:
        folder.release()
    assert status["state"] == "complete" and status["totals"]["n_collected"] == 200
    trace = pd.read_parquet(run / store.TRACE)
    assert trace.n_collected.iloc[-1] == 200 and trace.checkpoint.tolist() == list(range(len(trace)))
    assert len(pd.read_parquet(run / store.SAMPLES)) == 200
    assert (run / "notes.txt").read_text() == "mine"
    done = rundir.RunFolder.claim(run, "h")  # now a result: skipped as complete
    done.release()
    assert done.state == "complete"


def test_a_run_marked_complete_with_nothing_collected_is_redone(tmp_path):
    """Runs of earlier versions marked such a run ``complete`` (reason wall_seconds, no flag);
    their folders are redone too, not skipped as complete."""
    run = tmp_path / "run"
    _empty_run(run).run()
    status = json.loads((run / store.STATUS).read_text())
    status.update(state="complete", reason="wall_seconds", flags=[], flag_notes={})
    rundir.write_json(status, run / store.STATUS)
    folder = rundir.RunFolder.claim(run, "h")
    folder.release()
    assert folder.state == "fresh" and "(wall_seconds)" in folder.notes[0]
    assert not list(run.glob("*.damaged-*"))  # its own files: rewritten by the new run
    assert not rundir.collected(status, []) and rundir.collected({"totals": {}}, [])


# ---------------------------------------------------------------------------- the target's identity
A, B = {"data_sha256": "a" * 16}, {"data_sha256": "b" * 16}


def _identified_run(folder: Path, identity: dict, collect_from=0, fail_after=None,
                    fail_in_warm_up=False):
    """:func:`_empty_run`'s run (config hash "h") on a target of ``identity``; collecting from
    ``collect_from``; failing once ``fail_after`` iterations have run (a resume state stays), or
    in its warm-up (a model that does not compile: no chain, so no resume state)."""
    import numpy as np

    from ckam_bench.engine.runner import Budget, Runner
    from tests.test_runner import CountingSampler, StdNormal

    class Sampler(CountingSampler):
        def warm_up(self, target):
            if fail_in_warm_up:
                raise RuntimeError("the model does not compile")

        def advance(self, state, n):
            if fail_after is not None and state.t >= fail_after:
                raise RuntimeError("sampler failed")
            return super().advance(state, n)

    labels = {"run_id": "r1", "target": "stdnormal", "sampler": "counting", "kernel": "none",
              "seed": 0}
    return Runner(Sampler(collect_from=collect_from), StdNormal(), {}, Budget(60, max_iterations=300),
                  folder, np.random.default_rng(0), labels, progress=False,
                  checkpoint_unit="iterations", checkpoints=np.array([100.0, 200.0]),
                  status_extra={"config_hash": "h", store.IDENTITY_KEY: identity})


def test_a_run_kept_for_another_target_identity_is_refused_untouched(tmp_path):
    """Issue 43 §2: a complete run, and a run that would resume from its resume state, of the
    same config on another model or data (a changed ``target_identity``) are refused before
    anything is written; the same identity skips or resumes as before."""
    done, stopped = tmp_path / "done", tmp_path / "stopped"
    assert _identified_run(done, A).run()["state"] == "complete"
    with pytest.raises(RuntimeError, match="sampler failed"):
        _identified_run(stopped, A, fail_after=150).run()
    assert (stopped / store.RESUME).is_file()
    assert json.loads((done / rundir.MARKER).read_text())[store.IDENTITY_KEY] == A
    before = tree(tmp_path)
    for folder, state in ((done, "complete"), (stopped, "failed")):
        with pytest.raises(rundir.TargetChanged) as refused:
            rundir.RunFolder.claim(folder, "h", identity=B)
        assert f"({state}) on another model or data: the target's data" in str(refused.value)
        assert refused.value.changes == [f"the target's data (its data file or arrays) changed "
                                         f"(data_sha256 {'a' * 12}, now {'b' * 12})"]
    assert tree(tmp_path) == before
    same = rundir.RunFolder.claim(done, "h", identity=A)
    same.release()
    assert same.state == "complete"
    assert _identified_run(stopped, A).run()["totals"]["iterations"] == 300  # resumed
    unchecked = rundir.RunFolder.claim(done, "h")  # no identity given: none compared
    unchecked.release()
    assert unchecked.state == "complete"


def test_a_run_that_starts_afresh_anyway_takes_the_new_identity(tmp_path):
    """An empty run (no result), and a run that failed in its warm-up (a model that did not
    compile: no resume state), are not refused for another identity (the user fixed the model):
    the empty one is redone, the failed one's files set aside (never deleted), and the new run
    records the new identity."""
    empty, early = tmp_path / "empty", tmp_path / "early"
    assert _identified_run(empty, A, collect_from=10**9).run()["state"] == "empty"
    with pytest.raises(RuntimeError, match="does not compile"):
        _identified_run(early, A, fail_in_warm_up=True).run()
    assert not (early / store.RESUME).exists()
    for folder in (empty, early):
        status = _identified_run(folder, B).run()
        assert status["state"] == "complete" and status[store.IDENTITY_KEY] == B
        assert json.loads((folder / rundir.MARKER).read_text())[store.IDENTITY_KEY] == B
    assert sorted(p.name.split(".damaged-")[0] for p in early.glob("*.damaged-*")) == sorted(
        [store.DIAGNOSTICS, store.SAMPLES, store.STATUS, store.TRACE])
