"""Run folders on disk: atomic writes, and loading runs back into pandas.

A run folder (Hydra's run or sweep-job directory) holds

* ``.hydra/`` — Hydra's config snapshot (``config.yaml``, ``overrides.yaml``, ``hydra.yaml``);
* ``trace.parquet`` — one tidy row per checkpoint (see :mod:`ckam_bench.runner`);
* ``samples.parquet`` — a bounded, thinned sample of the collected states
  (``index`` = position in the collected chain, then ``x0 … x{d-1}``);
* ``diagnostics.parquet`` — per-iteration diagnostics (``iteration, phase, accepted,
  accept_prob, step_size, noise``): every iteration of the first ``diagnostics_head``
  iterations, then a thinned record;
* ``status.json`` — complete / interrupted / failed / running, timing totals, versions, seed;
* ``resume.npz`` — everything needed to continue the run from its last checkpoint (sampler
  state, random generator state, clock, counters, metric accumulators, bounded stores, the
  trace rows so far), as plain numpy arrays plus one JSON string: loaded with
  ``allow_pickle=False``, never unpickled;
* ``.lock`` — held while a process runs in the folder (see :class:`RunLock`).

Every file is written to a temporary name in the same folder, flushed to disk and renamed
over the old one (``os.replace`` is atomic on POSIX), so a run killed at any moment leaves
each file either in its previous or its new complete version.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

TRACE = "trace.parquet"
SAMPLES = "samples.parquet"
DIAGNOSTICS = "diagnostics.parquet"
STATUS = "status.json"
RESUME = "resume.npz"
LOCK = ".lock"


_UMASK = os.umask(0)
os.umask(_UMASK)


def _atomic_write(path: Path, write) -> None:
    """Call ``write(tmp_path)`` then atomically move the temporary file onto ``path``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide results from collaborators
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


def write_rows(rows: list[dict], path: Path) -> None:
    """Atomically write a list of flat dicts (one per checkpoint) as a parquet table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows)
    _atomic_write(path, lambda tmp: pq.write_table(table, tmp))


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
    if isinstance(obj, np.ndarray) and obj.ndim > 0:  # e.g. a list trace column (swap acceptance per pair)
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot store {type(obj).__name__} in JSON")


# ---------------------------------------------------------------------------- resume files
def flatten_state(obj, prefix: str = "") -> dict[str, np.ndarray]:
    """Flatten a (nested) state dataclass of arrays and numbers into ``{dotted.name: array}``."""
    if is_dataclass(obj):
        out = {}
        for f in fields(obj):
            out.update(flatten_state(getattr(obj, f.name), f"{prefix}{f.name}."))
        return out
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out.update(flatten_state(v, f"{prefix}{k}."))
        return out
    value = np.asarray(obj)
    if value.dtype == object:
        raise TypeError(f"state field {prefix[:-1]!r} is not numeric ({type(obj).__name__})")
    return {prefix[:-1]: value}


def restore_state(template, arrays: dict, prefix: str = ""):
    """Inverse of :func:`flatten_state`: a copy of ``template`` with the stored values."""
    if is_dataclass(template):
        values = {f.name: restore_state(getattr(template, f.name), arrays, f"{prefix}{f.name}.")
                  for f in fields(template)}
        return replace(template, **values)
    if isinstance(template, dict):
        return {k: restore_state(v, arrays, f"{prefix}{k}.") for k, v in template.items()}
    value = arrays[prefix[:-1]]
    if isinstance(template, np.ndarray):
        return np.array(value, dtype=value.dtype)
    if isinstance(template, (bool, np.bool_)):
        return bool(value)
    if isinstance(template, (int, np.integer)):
        return int(value)
    return float(value)


def write_resume(arrays: dict[str, np.ndarray], meta: dict, path: Path) -> None:
    """Atomically store arrays plus a JSON document (no pickle) in one ``.npz`` file."""
    payload = {k: np.asarray(v) for k, v in arrays.items()}
    payload["__meta__"] = np.array(json.dumps(meta, default=_json_default))

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **payload)

    _atomic_write(path, write)


def read_resume(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    """Read a file written by :func:`write_resume` (``allow_pickle=False``)."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files if k != "__meta__"}
        meta = json.loads(str(data["__meta__"]))
    return arrays, meta


# ---------------------------------------------------------------------------- folder lock
class FolderBusy(RuntimeError):
    """Another live process holds the run folder."""


class RunLock:
    """An exclusive claim on a run folder, so two processes never write into one folder.

    The lock is a file created with ``O_CREAT | O_EXCL`` (atomic, also on shared network
    file systems that honour it) holding the owner's host, pid and a heartbeat time that the
    runner refreshes at every checkpoint. A lock left behind by a dead process is taken over:
    on the same host when its pid no longer exists, on another host when its heartbeat is
    older than ``stale_seconds``.
    """

    def __init__(self, folder: Path, stale_seconds: float = 900.0):
        self.path = Path(folder) / LOCK
        self.stale_seconds = stale_seconds
        self.owner = {"host": socket.gethostname(), "pid": os.getpid()}

    def acquire(self) -> "RunLock":
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and not self._stale(holder):
                    raise FolderBusy(f"{self.path.parent} is in use by pid {holder.get('pid')} "
                                     f"on {holder.get('host')}") from None
                self.path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as fh:
                json.dump({**self.owner, "heartbeat": time.time()}, fh)
            return self
        raise FolderBusy(f"could not claim {self.path.parent}")

    def heartbeat(self) -> None:
        write_json({**self.owner, "heartbeat": time.time()}, self.path)

    def release(self) -> None:
        holder = self._holder()
        if holder is not None and holder.get("pid") == self.owner["pid"] and \
                holder.get("host") == self.owner["host"]:
            self.path.unlink(missing_ok=True)

    def _holder(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None  # vanished or half-written: treat as stale

    def _stale(self, holder: dict) -> bool:
        if holder.get("host") == self.owner["host"]:
            pid = int(holder.get("pid", -1))
            if pid == self.owner["pid"]:
                return True
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                return False
            return False
        return time.time() - float(holder.get("heartbeat", 0)) > self.stale_seconds


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
