"""SLURM helpers for sweeps through Hydra's submitit launcher (``hydra/launcher=slurm``).

:class:`NoAccountingFilter` is a :mod:`logging` filter placed on submitit's logger by
``conf/hydra/hydra_logging/ckam.yaml``. submitit polls job states with ``sacct``; on a cluster
without an accounting database (``AccountingStorageType=accounting_storage/none``) every poll
fails and submitit logs "Bypassing sacct error ..., status may be inaccurate" (printed three
times per poll: submitit's stderr and stdout handlers and Hydra's root handler). The jobs'
results still arrive (submitit reads each job's result file), so the warning carries no
information there. The filter drops exactly those records, and only after
``scontrol show config`` confirms accounting is off; it then logs one line saying so. On a
cluster with accounting, or when ``scontrol`` cannot be asked, nothing is filtered.
"""

from __future__ import annotations

import logging
import subprocess

SACCT_WARNING = "Bypassing sacct error"


def accounting_disabled() -> bool:
    """True when the SLURM controller reports ``AccountingStorageType=accounting_storage/none``."""
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


class NoAccountingFilter(logging.Filter):
    """Drops submitit's "Bypassing sacct error" records on a cluster without accounting."""

    def __init__(self):
        super().__init__()
        self._disabled: bool | None = None  # asked once, at the first sacct warning

    def filter(self, record: logging.LogRecord) -> bool:
        if SACCT_WARNING not in str(record.msg):
            return True
        if self._disabled is None:
            self._disabled = accounting_disabled()
            if self._disabled:
                logging.getLogger(__name__).info(
                    "SLURM accounting is off on this cluster (no sacct): job states come from "
                    "submitit's result files; its sacct warnings are not shown")
        return not self._disabled
