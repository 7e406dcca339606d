"""``hydra/launcher=slurm hydra.launcher.runs_per_job=k``: k runs per SLURM array element
(ckam_bench/commands/slurm_groups.py).

Fast tests call the group callable and the launcher with submitit's executor replaced by an
in-process fake; the slow test sweeps on the one-node SLURM cluster of
``scripts/slurm_cluster.sh`` (as tests/test_slurm.py does).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

from ckam_bench.commands import slurm_groups
from ckam_bench.commands.slurm_groups import RunGroup, SlurmLauncher, chunk, collect
from ckam_bench.engine import store

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------- fast
def test_chunk_keeps_order_and_sizes():
    assert chunk(range(7), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert chunk(range(6), 3) == [[0, 1, 2], [3, 4, 5]]
    assert chunk(range(2), 5) == [[0, 1]]
    assert chunk(range(3), 1) == [[0], [1], [2]]
    for bad in (0, -1, 1.5, "2", None):
        with pytest.raises(ValueError):
            chunk(range(3), bad)


def _done(overrides):
    ret = JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED)
    ret.return_value = None
    return ret


class _FakeLauncher:
    """The per-run call of the upstream launcher: seed=2 raises outside Hydra's run_job."""

    def __init__(self):
        self.calls = []

    def __call__(self, overrides, job_dir_key, job_num, job_id, singleton_state):
        self.calls.append((job_num, job_id, job_dir_key))
        if "seed=2" in overrides:
            raise RuntimeError("boom in run 2")
        return _done(overrides)


def test_run_group_isolates_a_failed_run():
    launcher = _FakeLauncher()
    runs = [([f"seed={s}"], 10 + s) for s in range(4)]
    results = RunGroup(launcher)(runs, {})
    assert [r.overrides for r in results] == [[f"seed={s}"] for s in range(4)]
    assert [r.status for r in results] == [JobStatus.COMPLETED, JobStatus.COMPLETED,
                                           JobStatus.FAILED, JobStatus.COMPLETED]
    assert isinstance(results[2]._return_value, RuntimeError)
    # every run ran, in order, with its own job number and Hydra's per-run arguments
    assert launcher.calls == [(10 + s, f"job_id_for_{10 + s}", "hydra.sweep.dir") for s in range(4)]


def test_run_group_passes_interrupts_through():
    class Interrupted(_FakeLauncher):
        def __call__(self, overrides, *args):
            self.calls.append(overrides)
            if "seed=1" in overrides:
                raise KeyboardInterrupt  # SIGTERM/Ctrl-C: the group ends, later runs not started
            return _done(overrides)

    launcher = Interrupted()
    with pytest.raises(KeyboardInterrupt):
        RunGroup(launcher)([([f"seed={s}"], s) for s in range(3)], {})
    assert launcher.calls == [["seed=0"], ["seed=1"]]


class _FakeJob:
    def __init__(self, fn, args, job_id, lost):
        self.fn, self.args, self.job_id, self.lost = fn, args, job_id, lost

    def results(self):
        if self.lost:
            raise RuntimeError(f"job {self.job_id} was cancelled")
        return [self.fn(*self.args)]


class _FakeExecutor:
    """submitit.AutoExecutor, run in this process: records what is submitted."""

    made: list = []
    lost: set = set()

    def __init__(self, cluster, folder, **init):
        self.cluster, self.folder, self.init, self.params, self.submitted = cluster, folder, init, {}, []
        _FakeExecutor.made.append(self)

    def update_parameters(self, **params):
        self.params.update(params)

    def map_array(self, fn, *iterables):
        self.submitted.append((fn, list(zip(*iterables))))
        return [_FakeJob(fn, args, f"7_{i}", i in self.lost) for i, args in enumerate(zip(*iterables))]


@pytest.fixture
def fake_submitit(monkeypatch):
    import submitit

    _FakeExecutor.made, _FakeExecutor.lost = [], set()
    monkeypatch.setattr(submitit, "AutoExecutor", _FakeExecutor)
    # the upstream per-run call: a run of seed=4 fails (as Hydra's run_job reports a task error)
    def per_run(self, overrides, job_dir_key, job_num, job_id, singleton_state):
        if "seed=4" in overrides:
            ret = JobReturn(overrides=list(overrides), status=JobStatus.FAILED)
            ret.return_value = ValueError("run 4 failed")
            return ret
        return _done(overrides + [f"num={job_num}"])

    monkeypatch.setattr(SlurmLauncher, "__call__", per_run)
    return _FakeExecutor


def _launcher(tmp_path, k, **extra):
    launcher = SlurmLauncher(runs_per_job=k, submitit_folder=str(tmp_path / ".submitit/%j"),
                             timeout_min=30, signal_delay_s=120, max_num_timeout=0,
                             partition="debug", array_parallelism=8, **extra)
    launcher.config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path / "sweep")}},
                                        "budget": {"seconds": 30.0, "wall_seconds": None}})
    return launcher


def test_launch_groups_runs_and_returns_one_result_per_run_in_order(tmp_path, fake_submitit):
    overrides = [[f"seed={s}"] for s in range(7)]
    results = _launcher(tmp_path, 3).launch(overrides, initial_job_idx=5)
    (executor,) = fake_submitit.made
    (fn, groups), = executor.submitted  # one array of ceil(7 / 3) = 3 elements
    assert isinstance(fn, RunGroup) and len(groups) == 3
    assert [[idx for _, idx in g[0]] for g in groups] == [[5, 6, 7], [8, 9, 10], [11]]
    assert [r.overrides for r in results] == [[f"seed={s}", f"num={5 + s}"] if s != 4
                                              else ["seed=4"] for s in range(7)]
    assert [r.status for r in results].count(JobStatus.FAILED) == 1
    assert results[4].status == JobStatus.FAILED  # fails alone; runs 3 and 5 of its group complete
    # the executor gets the launcher's parameters as the upstream launcher passes them
    assert executor.cluster == "slurm" and executor.folder == str(tmp_path / ".submitit/%j")
    assert executor.init == {"slurm_max_num_timeout": 0}
    assert executor.params["timeout_min"] == 30 and executor.params["slurm_partition"] == "debug"
    assert executor.params["slurm_array_parallelism"] == 8
    assert not any("runs_per_job" in key for key in executor.params)
    assert (tmp_path / "sweep").is_dir()


def test_a_lost_group_fails_its_runs_only(tmp_path, fake_submitit):
    fake_submitit.lost = {1}  # the second array element was cancelled: no results
    results = _launcher(tmp_path, 2).launch([[f"seed={s}"] for s in (0, 1, 2, 3, 5)], 0)
    assert [r.status for r in results] == [JobStatus.COMPLETED, JobStatus.COMPLETED,
                                           JobStatus.FAILED, JobStatus.FAILED, JobStatus.COMPLETED]
    assert results[2].overrides == ["seed=2"] and "cancelled" in str(results[2]._return_value)


def test_one_run_per_job_is_the_upstream_launch(tmp_path, fake_submitit):
    launcher = _launcher(tmp_path, 1)
    results = launcher.launch([["seed=0"], ["seed=1"]], initial_job_idx=0)
    (fn, args), = fake_submitit.made[0].submitted
    assert fn is launcher and len(args) == 2  # the launcher itself, one element per run
    assert [r.status for r in results] == [JobStatus.COMPLETED] * 2


def test_collect_checks_the_number_of_results():
    class Short:
        job_id = "3_0"

        def results(self):
            return [[_done(["seed=0"])]]

    (a, b) = collect([Short()], [[(["seed=0"], 0), (["seed=1"], 1)]])
    assert a.status == b.status == JobStatus.FAILED


def test_time_note_sizes_the_group():
    note = slurm_groups.time_note(20, 60, 120, 90.0)
    assert "20 runs" in note and "32 min" in note and "re-run" not in note
    assert "re-run of the same sweep" in slurm_groups.time_note(50, 60, 120, 90.0)
    assert slurm_groups.wall_cap(OmegaConf.create({"budget": {"seconds": 30, "wall_seconds": None}})) == 120
    assert slurm_groups.wall_cap(OmegaConf.create({"budget": {"seconds": 30, "wall_seconds": 50}})) == 50
    assert slurm_groups.wall_cap(OmegaConf.create({})) is None


def test_slurm_launcher_is_registered_and_watched(monkeypatch):
    from hydra import compose, initialize_config_module
    from hydra.core.plugins import Plugins
    from submitit.slurm.slurm import SlurmJob

    from ckam_bench.commands import slurm

    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=["hydra/launcher=slurm", "hydra.launcher.runs_per_job=4"],
                      return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_ == slurm_groups.TARGET and launcher.runs_per_job == 4
    assert Plugins.instance().class_name_to_class[slurm_groups.TARGET] is SlurmLauncher
    callback = cfg.hydra.callbacks.slurm_states
    assert list(cfg.hydra.callbacks)[0] == "slurm_states" and callback.runs_per_job == 4
    # the accounting check still recognises the launcher
    asked = []
    monkeypatch.setattr(slurm, "accounting_disabled", lambda: asked.append(1) or False)
    monkeypatch.setattr(SlurmJob, "watcher", SlurmJob.watcher)
    slurm.SlurmStates(runs_per_job=4).on_multirun_start(cfg)
    assert asked


@pytest.mark.parametrize("value, shown", [("0", "0"), ("-3", "-3"), ("abc", "'abc'"),
                                          ("2.5", "2.5")])
def test_bad_runs_per_job_is_one_line_and_creates_nothing(tmp_path, value, shown):
    sweep = tmp_path / "new" / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "ckam_bench.commands.cli", "-m", "hydra/launcher=slurm",
         f"hydra.launcher.runs_per_job={value}", "sampler=rw", "seed=0,1",
         f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == ("ckam-bench: invalid configuration: hydra.launcher.runs_per_job: "
                                   f"must be an integer >= 1, got {shown}")
    assert not (tmp_path / "new").exists() and not (tmp_path / "outputs").exists()


# ---------------------------------------------------------------------------- slow
BOOM = '''
"""gmm2d, but the run of job number FAIL fails while it samples (config checks pass)."""
from hydra.core.hydra_config import HydraConfig

from ckam_bench.targets.mixtures import gmm2d

FAIL = 4


def boom(variance="paper", dim=2):
    target = gmm2d(variance=variance, dim=dim)
    if HydraConfig.get().job.num == FAIL:
        calls = [0]
        for name in ("log_density", "log_density_batch"):
            inner = getattr(target, name)

            def counted(x, inner=inner):
                calls[0] += 1
                if calls[0] > 500:
                    raise RuntimeError("boom: a deliberate failure of run 4")
                return inner(x)

            setattr(target, name, counted)
    return target
'''
RUN = ["sampler=rw", "target=gmm2d", "target._target_=boom_target.boom", "progress=false",
       "budget.max_iterations=20000", "seed=0,1,2,3,4,5"]
SLURM = ["hydra/launcher=slurm", "hydra.launcher.runs_per_job=3", "hydra.launcher.mem_gb=1",
         "hydra.launcher.timeout_min=10"]


def _status(folder: Path) -> dict:
    try:
        return json.loads((folder / store.STATUS).read_text())
    except (OSError, ValueError):
        return {}


def _array_elements(sweep: Path) -> set[str]:
    """SLURM job ids (JOB_INDEX) of the array elements submitit submitted for the sweep."""
    return {p.parent.name for p in (sweep / ".submitit").glob("*/*_submitted.pkl")}


@pytest.mark.slow
def test_grouped_slurm_sweep_fails_one_run_alone_and_resumes(tmp_path):
    from tests.test_slurm import _cluster

    _cluster()
    (tmp_path / "boom_target.py").write_text(BOOM)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}", "CKAM_BENCH_JIT": "0",
           "HYDRA_FULL_ERROR": "0"}
    sweep = tmp_path / "sweep"
    command = [sys.executable, "-m", "ckam_bench.commands.cli", "-m", *SLURM, *RUN,
               f"hydra.sweep.dir={sweep}"]
    folders = {s: sweep / f"{s}_rw_gmm2d_s{s}" for s in range(6)}

    first = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=900)
    assert first.returncode != 0  # the sweep reports the failed run
    elements = _array_elements(sweep)
    assert len(elements) == 2, elements  # 6 runs, 3 per array element
    assert len({e.split("_")[0] for e in elements}) == 1  # one array job
    for s, folder in folders.items():
        st = _status(folder)
        if s == 4:
            assert st["state"] == "failed" and "boom" in json.dumps(st.get("error")), st
        else:  # the runs of run 4's group (3, 5) complete too
            assert st["state"] == "complete" and st["totals"]["iterations"] == 20000, (s, st)
            assert (folder / store.TRACE).exists()
    # each element ran its three runs in order, one after another
    logs = {p.parent.name: p.read_text() for p in (sweep / ".submitit").glob("*/*_log.err")}
    assert len(logs) == 2
    for text in logs.values():
        ran = [line for line in text.splitlines() if line.startswith(("complete", "failed"))]
        assert len(ran) == 3, text[-3000:]
    traces = {s: (folders[s] / store.TRACE).stat().st_mtime_ns for s in folders if s != 4}

    again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=900)
    assert again.returncode != 0  # run 4 fails again
    for s in traces:  # complete runs are skipped, their files untouched
        assert (folders[s] / store.TRACE).stat().st_mtime_ns == traces[s], s
        assert _status(folders[s])["state"] == "complete"
    assert _status(folders[4])["state"] == "failed"
    assert len(_array_elements(sweep)) == 4  # the re-run's two elements
    skipped = sum(p.read_text().count("already complete for this config, skipped")
                  for p in (sweep / ".submitit").glob("*/*_log.err"))
    assert skipped == 5
