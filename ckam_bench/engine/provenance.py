"""Where and how a run was made: stored in every run's ``status.json`` (``provenance``).

:func:`collect` gathers what can change a chain or its speed and is not in the config: the
loop mode (numba-compiled or Python), the versions of the packages that compute (numba
included), the ckam-bench source (git commit and whether the checkout had uncommitted
changes, when it runs from a checkout), the CPU model and count, the platform and the load
average when the run started (the runner adds the load average at its end). Every field is
best effort: a missing tool or file gives ``None``, never an error.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

PACKAGES = ("ckam-bench", "numpy", "scipy", "numba", "pandas", "pyarrow", "hydra-core",
            "omegaconf", "arviz-stats", "threadpoolctl", "jax", "jaxlib", "numpyro", "blackjax",
            "nutpie", "walnutpie")


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the system has none)."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def package_versions(names) -> dict[str, str | None]:
    """The installed version of each distribution of ``names`` (None: not installed)."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def versions() -> dict:
    """Python's and the packages' versions (:data:`PACKAGES`), read once per process: a
    worker of a sweep runs hundreds of jobs with the same code."""
    return dict(_versions())


@functools.lru_cache(maxsize=1)
def _versions() -> dict:
    return {"python": platform.python_version(), **package_versions(PACKAGES)}


def source() -> dict:
    """The git commit of the ckam-bench source and a dirty flag, when it is a checkout; asked
    of git once per process (the code a process runs is the code it imported)."""
    return dict(_source())


@functools.lru_cache(maxsize=1)
def _source() -> dict:
    here = Path(__file__).resolve().parent

    def git(*args):
        return subprocess.run(["git", "-C", str(here), *args], capture_output=True, text=True,
                              timeout=10)

    try:
        commit = git("rev-parse", "HEAD")
        if commit.returncode != 0:
            return {"git_commit": None, "git_dirty": None}
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return {"git_commit": commit.stdout.strip(),
                "git_dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None}


def collect() -> dict:
    from ckam_bench import jit

    return {
        "loops": "compiled" if jit.enabled() else "python",
        "versions": versions(),
        **source(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "hostname": platform.node(),
        "load_average_start": load_average(),
    }
