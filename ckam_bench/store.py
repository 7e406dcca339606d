"""Run folders on disk: atomic writes, and loading runs back into pandas.

A run folder (Hydra's run or sweep-job directory) holds

* ``.hydra/`` — Hydra's config snapshot (``config.yaml``, ``overrides.yaml``, ``hydra.yaml``);
* ``trace.parquet`` — one tidy row per checkpoint (see :mod:`ckam_bench.runner`);
* ``samples.parquet`` — a bounded, thinned sample of the collected states
  (``index`` = position in the collected chain, then ``x0 … x{d-1}``);
* ``diagnostics.parquet`` — per-iteration diagnostics (``iteration, phase, accepted,
  accept_prob, step_size, noise``): every iteration of the first ``diagnostics_head``
  iterations, then a thinned record;
* ``status.json`` — complete / interrupted / failed / running, timing totals, versions, seed.

Every file is written to a temporary name in the same folder, flushed to disk and renamed
over the old one (``os.replace`` is atomic on POSIX), so a run killed at any moment leaves
each file either in its previous or its new complete version.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

TRACE = "trace.parquet"
SAMPLES = "samples.parquet"
DIAGNOSTICS = "diagnostics.parquet"
STATUS = "status.json"


def _atomic_write(path: Path, write) -> None:
    """Call ``write(tmp_path)`` then atomically move the temporary file onto ``path``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_parquet(df: pd.DataFrame, path: Path) -> None:
    """Atomically write ``df`` to ``path`` as parquet (pyarrow)."""
    _atomic_write(path, lambda tmp: df.to_parquet(tmp, engine="pyarrow", index=False))


def write_columns(columns: dict, path: Path) -> None:
    """Atomically write numpy columns to parquet with pyarrow (no pandas round trip: this is
    the per-checkpoint path for the bounded sample and diagnostics stores)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({name: pa.array(col) for name, col in columns.items()})
    _atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def write_json(obj: dict, path: Path) -> None:
    """Atomically write ``obj`` to ``path`` as indented JSON."""

    def write(tmp):
        with open(tmp, "w") as fh:
            json.dump(obj, fh, indent=2, default=_json_default)
            fh.write("\n")

    _atomic_write(path, write)


def _json_default(obj):
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot store {type(obj).__name__} in JSON")


@dataclass
class Run:
    """A run folder read back from disk."""

    path: Path
    status: dict
    trace: pd.DataFrame
    samples: pd.DataFrame | None
    diagnostics: pd.DataFrame | None
    config: dict | None

    @property
    def run_id(self) -> str:
        return self.status.get("run_id", self.path.name)


def load_run(path: str | Path, with_samples: bool = True) -> Run:
    """Read one run folder. Missing optional files come back as None."""
    from omegaconf import OmegaConf

    path = Path(path)
    with open(path / STATUS) as fh:
        status = json.load(fh)
    trace = pd.read_parquet(path / TRACE) if (path / TRACE).exists() else pd.DataFrame()

    def optional(name):
        return pd.read_parquet(path / name) if with_samples and (path / name).exists() else None

    cfg_file = path / ".hydra" / "config.yaml"
    config = OmegaConf.to_container(OmegaConf.load(cfg_file)) if cfg_file.exists() else None
    return Run(path, status, trace, optional(SAMPLES), optional(DIAGNOSTICS), config)


def find_runs(root: str | Path) -> list[Path]:
    """Every run folder (a folder holding ``status.json``) under ``root``, sorted."""
    root = Path(root)
    if (root / STATUS).exists():
        return [root]
    return sorted(p.parent for p in root.rglob(STATUS))


def load_traces(root: str | Path, states: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Concatenate the traces of every run under ``root`` (one row per checkpoint).

    Adds a ``status`` column; ``states`` keeps only runs in those states
    (e.g. ``("complete",)``). Unreadable runs are skipped with a warning.
    """
    import warnings

    frames = []
    for path in find_runs(root):
        try:
            run = load_run(path, with_samples=False)
        except Exception as exc:  # a damaged run must not hide the others
            warnings.warn(f"skipping unreadable run {path}: {exc}", stacklevel=2)
            continue
        if states is not None and run.status.get("state") not in states:
            continue
        frames.append(run.trace.assign(status=run.status.get("state"), path=str(path)))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
