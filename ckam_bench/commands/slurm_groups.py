"""SLURM sweeps with several runs per array element (``hydra.launcher.runs_per_job=k``).

At suite scale (thousands of runs of seconds to minutes each) one SLURM job per run is what
cluster administrators forbid. ``hydra/launcher=slurm`` (``conf/hydra/launcher/slurm.yaml``)
therefore uses :class:`SlurmLauncher`, hydra-submitit-launcher's ``SlurmLauncher`` with one key
more, ``runs_per_job`` (default 1: exactly the upstream launcher, one array element per run).
With ``k > 1`` the sweep's runs, in Hydra's order, are cut into consecutive groups of ``k``
(:func:`chunk`); each array element runs its group's runs one after another in one process
(:class:`RunGroup`), each run exactly as the upstream launcher runs it alone (its own sweep
config, ``hydra.job.num``, run folder and Hydra callbacks), each in its own ``try``: a run that
fails is reported failed (``status.json``: ``failed``, the traceback under ``error``) and the
next run of its group starts. The sweep gets one ``JobReturn`` per run, in the original order;
a group that ended without a result (cancelled, killed at its time limit) gives a failed
``JobReturn`` for each of its runs. Ctrl-C, SIGTERM (``scancel``, the time limit) are not
failures of one run: the running run writes its final checkpoint (``interrupted``) and the
group ends there; its remaining runs have not started.

Resuming is per run, as everywhere in ckam-bench (:mod:`ckam_bench.engine.rundir`): run folders
are named as without groups (``hydra.job.num`` is the run's index in the sweep), so re-running
the same command with the same ``hydra.sweep.dir`` — with any ``runs_per_job`` — skips the
complete runs (their files untouched), resumes the interrupted ones from their last checkpoint
and starts the others. ``timeout_min`` is per array element: the user sizes it for ``k`` runs
(:func:`time_note` logs the worst case from the sweep's wall-clock cap); a group cut by its time
limit is completed by re-running the sweep, or requeued by submitit with
``hydra.launcher.max_num_timeout=N`` (:meth:`RunGroup.checkpoint`).

Hydra instantiates launchers only from its plugin registry, under names starting with
``hydra_plugins.``; :func:`ckam_bench.commands.plugins.register_launcher` registers this class
as :data:`TARGET` and its config as ``hydra/launcher/submitit_slurm_groups`` (an editable
install is not seen by Hydra's ``hydra_plugins`` scan).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from hydra_plugins.hydra_submitit_launcher import submitit_launcher as upstream
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf, SlurmQueueConf
from omegaconf import OmegaConf

log = logging.getLogger(__name__)
# Shown as Hydra's own launch lines are (conf/hydra/hydra_logging/ckam.yaml shows the `hydra`
# loggers at INFO, every other library's from WARNING).
say = logging.getLogger("hydra.ckam_bench.slurm_groups")

TARGET = "hydra_plugins.ckam_bench.submitit_launcher.SlurmLauncher"
"""The launcher's name in Hydra's plugin registry (``_target_`` of ``hydra/launcher=slurm``)."""
CONFIG_NAME = "submitit_slurm_groups"


@dataclass
class SlurmGroupsConf(SlurmQueueConf):
    """hydra-submitit-launcher's ``submitit_slurm`` config plus ``runs_per_job``."""

    _target_: str = TARGET
    # Runs per SLURM array element, run one after another; 1: one array element per run.
    # Typed Any so a bad value reaches ckam-bench's check (one line naming the key, exit 2:
    # ckam_bench.commands.slurm.SlurmStates) instead of OmegaConf's multi-line error.
    runs_per_job: Any = 1


def chunk(items: Sequence, k: int) -> list[list]:
    """``items`` cut into consecutive groups of ``k`` (the last one may be shorter)."""
    if not (isinstance(k, int) and k >= 1):
        raise ValueError(f"runs_per_job: must be an integer >= 1, got {k!r}")
    items = list(items)
    return [items[i:i + k] for i in range(0, len(items), k)]


def failed(overrides: Sequence[str], exc: BaseException) -> JobReturn:
    """A failed run's ``JobReturn`` (Hydra's sweeper re-raises ``exc`` when it reads it)."""
    ret = JobReturn(overrides=list(overrides), status=JobStatus.FAILED)
    ret.return_value = exc
    return ret


class RunGroup:
    """The callable of one array element: run ``runs`` (``[(overrides, job index), ...]``)
    one after another through ``launcher`` (its upstream per-run ``__call__``)."""

    def __init__(self, launcher: "SlurmLauncher"):
        self.launcher = launcher

    def __call__(self, runs: Sequence[tuple[list[str], int]],
                 singleton_state: dict) -> list[JobReturn]:
        from ckam_bench.commands.sweeps import reuse_compositions

        reuse_compositions()  # a group's runs of one shape compose once
        results = []
        for overrides, idx in runs:
            try:  # a run's own failure never stops the others (run_job catches most itself)
                ret = self.launcher(list(overrides), "hydra.sweep.dir", idx, f"job_id_for_{idx}",
                                    singleton_state)
            except Exception as exc:
                log.error("run #%d (%s) failed: %s: %s", idx, " ".join(overrides),
                          type(exc).__name__, exc)
                ret = failed(overrides, exc)
            results.append(ret)
        return results

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        """On submitit's time-limit warning (with ``max_num_timeout`` > 0): requeue the same
        group; its complete runs are then skipped, the interrupted one resumes."""
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


def wall_cap(config) -> float | None:
    """A run's wall-clock cap in seconds from the sweep's config (``budget.wall_seconds``,
    else 2 x ``budget.seconds`` + 60); None without a budget (not a ckam-bench run)."""
    wall = OmegaConf.select(config, "budget.wall_seconds", default=None)
    seconds = OmegaConf.select(config, "budget.seconds", default=None)
    try:
        return float(wall) if wall is not None else (
            2.0 * float(seconds) + 60.0 if seconds is not None else None)
    except (TypeError, ValueError):
        return None


def time_note(k: int, timeout_min: float, signal_delay_s: float, cap: float | None) -> str:
    """One line on the time limit of a group of ``k`` runs."""
    text = f"up to {k} runs per SLURM array element, timeout_min={timeout_min:g} per element"
    if cap is None:
        return text
    worst = k * cap + signal_delay_s
    text += f"; {k} runs at their wall cap ({cap:g} s each) would take {worst / 60:.0f} min"
    if worst > timeout_min * 60:
        text += (": a group cut by its time limit leaves its remaining runs to a re-run of the "
                 "same sweep (or set hydra.launcher.max_num_timeout to requeue it)")
    return text


class SlurmLauncher(upstream.SlurmLauncher):
    """hydra-submitit-launcher's SLURM launcher, ``runs_per_job`` runs per array element."""

    def __init__(self, runs_per_job: int = 1, **params: Any) -> None:
        from ckam_bench.commands.validate import check_runs_per_job

        super().__init__(**params)
        self.runs_per_job = check_runs_per_job(runs_per_job)

    def executor(self):
        """The submitit executor with the launcher's parameters (as the upstream ``launch``
        builds it)."""
        import submitit

        params = self.params
        init_keys = {"max_num_timeout", "submitit_folder"}
        init = {"folder": params["submitit_folder"]}
        if "max_num_timeout" in params:
            init[f"{self._EXECUTOR}_max_num_timeout"] = params["max_num_timeout"]
        executor = submitit.AutoExecutor(cluster=self._EXECUTOR, **init)
        base = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(**{
            k if k in base else f"{self._EXECUTOR}_{k}": v
            for k, v in params.items() if k not in init_keys})
        return executor

    def launch(self, job_overrides: Sequence[Sequence[str]],
               initial_job_idx: int) -> Sequence[JobReturn]:
        k = self.runs_per_job
        if k == 1:
            return super().launch(job_overrides, initial_job_idx)
        assert self.config is not None and len(job_overrides) > 0
        executor = self.executor()
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if "mode" in self.config.hydra.sweep:
            sweep_dir.chmod(int(str(self.config.hydra.sweep.mode), 8))
        runs = [(list(o), initial_job_idx + i) for i, o in enumerate(job_overrides)]
        groups = chunk(runs, k)
        say.info(f"Submitit '{self._EXECUTOR}' sweep output dir : {sweep_dir}: {len(runs)} runs "
                 f"in {len(groups)} array elements")
        say.info(time_note(k, float(self.params.get("timeout_min", 0)),
                           float(self.params.get("signal_delay_s", 0)), wall_cap(self.config)))
        for g, group in enumerate(groups):
            for overrides, idx in group:
                log.info(f"\t#{idx} (array element {g}) : {' '.join(filter_overrides(overrides))}")
        state = Singleton.get_state()
        jobs = executor.map_array(RunGroup(self), groups, [state] * len(groups))
        return collect(jobs, groups)


def collect(jobs, groups) -> list[JobReturn]:
    """One ``JobReturn`` per run, in the sweep's order, from the groups' jobs; a group without
    a result (cancelled, killed) gives each of its runs a failed one. Waits for every group."""
    out: list[JobReturn] = []
    for job, group in zip(jobs, groups):
        try:
            results = list(job.results()[0])
            if len(results) != len(group):
                raise RuntimeError(f"array element {job.job_id} returned {len(results)} results "
                                   f"for {len(group)} runs")
        except Exception as exc:  # e.g. submitit's UncompletedJobError
            log.error("array element %s ended without its results: %s",
                      getattr(job, "job_id", "?"), str(exc).splitlines()[0] if str(exc) else exc)
            results = [failed(overrides, exc) for overrides, _ in group]
        out.extend(results)
    return out
