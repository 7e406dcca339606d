"""SLURM sweeps (``hydra/launcher=slurm``, Hydra's submitit launcher) on clusters without
job accounting.

submitit learns a job's state by polling ``sacct``. On a cluster without an accounting
database (``AccountingStorageType=accounting_storage/none``, no ``slurmdbd``; e.g. the test
cluster of ``scripts/slurm_cluster.sh``) every poll fails: submitit logs "Bypassing sacct
error ..., status may be inaccurate" (three times per poll, through its two handlers and
Hydra's), and a job that ends without writing its result -- cancelled with ``scancel``,
killed by the node -- stays ``UNKNOWN`` forever, so the sweep command never returns.

:class:`SlurmStates`, a Hydra callback registered in ``conf/config.yaml``, checks at the start
of a sweep on the SLURM launcher whether ``scontrol show config`` reports accounting off, and
only then has submitit read the states from ``squeue`` instead (``squeue -t all`` keeps
finished jobs for the controller's ``MinJobAge``, 300 s by default, longer than submitit's
longest poll interval). It says so in one log line. With accounting on, nothing changes.

The same callback checks ``hydra.launcher.runs_per_job`` (``conf/hydra/launcher/slurm.yaml``
passes it; :mod:`ckam_bench.commands.slurm_groups`) when Hydra builds the callbacks, before any
of them creates the sweep folder: a value that is not an integer >= 1 is one line naming the
key, exit 2, nothing created or submitted.
"""

from __future__ import annotations

import logging
import subprocess

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)

SACCT_FIELDS = "JobID|State|NodeList"  # the header submitit's sacct parser reads


def accounting_disabled() -> bool:
    """True when the SLURM controller reports ``AccountingStorageType=accounting_storage/none``
    (False when ``scontrol`` is missing or does not answer)."""
    try:
        out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True,
                             timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    for line in out.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "AccountingStorageType":
            return value.strip() == "accounting_storage/none"
    return False


def squeue_watcher(delay_s: float):
    """A submitit ``SlurmInfoWatcher`` that polls ``squeue -t all`` instead of ``sacct``."""
    from submitit.slurm.slurm import SlurmInfoWatcher

    class SqueueInfoWatcher(SlurmInfoWatcher):
        def _make_command(self):
            to_check = sorted({x.split("_")[0] for x in self._registered - self._finished})
            if not to_check:
                return None
            return ["squeue", "--noheader", "--array", "--states=all",
                    "--format=%i|%T|%N", "--jobs=" + ",".join(to_check)]

        def read_info(self, string):
            text = string.decode() if isinstance(string, bytes) else string
            return super().read_info(SACCT_FIELDS + "\n" + text)

    return SqueueInfoWatcher(delay_s=delay_s)


def use_squeue() -> None:
    """Make every submitit SLURM job read its state from ``squeue``."""
    from submitit.slurm.slurm import SlurmJob

    if type(SlurmJob.watcher).__name__ != "SqueueInfoWatcher":
        SlurmJob.watcher = squeue_watcher(delay_s=SlurmJob.watcher._delay_s)


class SlurmStates(Callback):
    """At the start of a sweep on the SLURM launcher, switch submitit to ``squeue`` when the
    cluster has no accounting. Built with the launcher's ``runs_per_job`` (checked here)."""

    def __init__(self, runs_per_job=1) -> None:
        import sys

        from ckam_bench.commands.sweeps import program
        from ckam_bench.commands.validate import ConfigError, check_runs_per_job

        try:
            self.runs_per_job = check_runs_per_job(runs_per_job)
        except ConfigError as exc:
            print(f"{program()}: invalid configuration: {exc}", file=sys.stderr)
            sys.exit(2)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        target = str(OmegaConf.select(config, "hydra.launcher._target_", default="") or "")
        if not target.endswith(".SlurmLauncher") or not accounting_disabled():
            return
        use_squeue()
        log.info("SLURM accounting is off on this cluster: submitit reads job states with "
                 "squeue instead of sacct")
