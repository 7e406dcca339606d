"""Run folders: the one module that creates, replaces, sets aside or removes anything on disk.

Every write and every removal the harness makes in a run folder goes through this file, so
what ckam-bench may do to a user's disk can be audited here:

* **Claiming.** A folder belongs to a run only through its marker ``.ckam-run.json``, written
  (atomically) when the harness first claims an empty or new folder; it holds the config hash
  of the run and its target's identity (below; updated by a claim that check lets through). A
  folder with files but no marker, a damaged marker, or a marker of another config hash is
  refused (:class:`FolderRefused`, exit 2) *before anything is written*: nothing in it is
  touched, not even Hydra's ``.hydra/`` snapshot, which is written here, once the folder is
  known to be this run's (:meth:`RunFolder.claim`).
* **The target's identity.** The config names a model or data *file* (``target.model=model.py:
  fn``, ``target.data=...``); editing that file keeps the config's text, and so its hash. The
  claim therefore also compares the target's identity
  (:func:`ckam_bench.engine.store.target_identity`: the sha256 digests of its source and data
  bytes) with the one the stored run recorded (``status.json``'s ``target_identity``; the
  marker's when no status was written). A run of this config on another model or data that
  would be skipped as complete or continued from its resume state is refused
  (:class:`TargetChanged`, exit 2, one line naming what changed) before anything is written:
  its results are never overwritten, nor continued with a chain of the changed model. One that
  would start afresh anyway (it ended ``empty``, or failed or stopped before its first
  checkpoint) is not refused: its files are rewritten or set aside as below. A digest only one
  side records is not compared.
* **Locking.** While a process runs in a folder it holds an exclusive ``flock`` on ``.lock``
  (:class:`FolderLock`): the kernel (or the network file system's lock manager) takes it
  and releases it when the process dies, so a lock is never held twice, a dead process never
  blocks a folder, and a reused pid means nothing. The claim is re-checked under the lock.
* **Writing.** Each file is written under a temporary name in the same folder, flushed and
  renamed over the old version (:func:`atomic_write`), so a run killed at any moment leaves
  every file in its previous or its new complete version. Parquet files carry the config hash
  in their metadata; the resume state carries it in its JSON header.
* **Resume state.** The newest checkpoint's state is ``resume.npz``; the one before it stays
  as ``resume.prev.npz``. On a re-run both are verified (readable, complete, CRC, this config's
  hash) before anything is written: a state of another config is refused; a damaged or
  incomplete one is *set aside* (renamed ``<name>.damaged-<time>``, never deleted) with one
  line saying so, and the run resumes from the newest intact state. A trace whose rows go
  beyond that state is set aside the same way before it is rewritten, so trace rows already
  written are never lost. With no intact state the run starts afresh, its old files set aside.
* **Redoing an empty run.** A run that ended without collecting a single sample (state
  ``empty``; or ``complete`` with ``totals.n_collected`` 0, as runs before the ``empty`` state
  were marked) is no result: a re-run of the same config does not skip it but runs it again from
  its first iteration, with one line saying so. Its own files (the trace, samples and
  diagnostics carrying this config's hash, its status) are rewritten by the new run; anything
  of it that cannot be recognised as this run's (a damaged or foreign parquet file) and any
  resume state left beside it are set aside as above, never deleted.
* **Removing.** The harness deletes only (a) its own leftover temporary files of this run's
  folder (``.<file>.<random>.tmp``, from a write that was killed), (b) the resume state of
  this run once the run has ended (complete or empty), and (c) after a configuration error,
  the *empty* folders that Hydra created for this invocation (``os.rmdir``, which cannot
  remove anything that holds a file). Nothing else is ever deleted.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ckam_bench.engine import store
from ckam_bench.files import _UMASK, atomic_write  # noqa: F401  (rundir.atomic_write: callers use it)

MARKER = ".ckam-run.json"
LOCK = ".lock"
RESUME_PREV = "resume.prev.npz"
HASH_KEY = b"ckam_bench.config_hash"
FORMAT = 1

# Files of a run folder the harness writes (and so may replace, set aside or clean up).
OWN_FILES = (MARKER, LOCK, store.TRACE, store.SAMPLES, store.DIAGNOSTICS, store.STATUS,
             store.RESUME, RESUME_PREV)
_TMP = re.compile(r"^\.(%s)\.[A-Za-z0-9_]+\.tmp$" % "|".join(re.escape(n) for n in OWN_FILES))

class FolderRefused(Exception):
    """The folder holds something that is not this run's: it is left untouched (exit 2)."""


class TargetChanged(FolderRefused):
    """The folder holds a run of this config on another model or data (``changes``: what
    changed, one phrase each): it is left untouched (exit 2)."""

    def __init__(self, message: str, changes: list[str]):
        super().__init__(message)
        self.changes = changes


class FolderBusy(RuntimeError):
    """Another live process holds the run folder."""


# ---------------------------------------------------------------------------- atomic writes


def _schema_metadata(digest: str | None) -> dict | None:
    return None if digest is None else {HASH_KEY: digest.encode()}


def write_parquet(df, path: Path, digest: str | None = None) -> None:
    """Atomically write a pandas DataFrame as parquet, the config hash in its metadata."""
    import pyarrow as pa

    table = pa.Table.from_pandas(df, preserve_index=False)
    write_table(table, path, digest)


def write_table(table, path: Path, digest: str | None = None) -> None:
    """Atomically write a pyarrow Table, the config hash in its schema metadata."""
    import pyarrow.parquet as pq

    meta = _schema_metadata(digest)
    if meta:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **meta})
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def write_rows(rows: list[dict], path: Path, digest: str | None = None) -> None:
    """Atomically write a list of flat dicts (one per checkpoint) as a parquet table."""
    import pyarrow as pa

    write_table(pa.Table.from_pylist(rows), path, digest)


def write_columns(columns: dict, path: Path, digest: str | None = None) -> None:
    """Atomically write numpy columns to parquet with pyarrow (no pandas round trip)."""
    import pyarrow as pa

    write_table(pa.table({name: pa.array(col) for name, col in columns.items()}), path, digest)


def write_json(obj: dict, path: Path) -> None:
    """Atomically write ``obj`` to ``path`` as indented JSON."""

    def write(tmp):
        with open(tmp, "w") as fh:
            json.dump(obj, fh, indent=2, default=store.json_default)
            fh.write("\n")

    atomic_write(path, write)


def write_resume(arrays: dict[str, np.ndarray], meta: dict, path: Path) -> None:
    """Atomically store arrays plus a JSON document (no pickle) in one ``.npz`` file."""
    payload = {k: np.asarray(v) for k, v in arrays.items()}
    payload["__meta__"] = np.array(json.dumps(meta, default=store.json_default))

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **payload)

    atomic_write(path, write)


def parquet_hash(path: Path) -> str | None:
    """The config hash stored in a parquet file's metadata (None when it has none)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    value = meta.get(HASH_KEY)
    return value.decode() if value is not None else None


# ---------------------------------------------------------------------------- the lock
class FolderLock:
    """An exclusive ``flock`` on ``<folder>/.lock`` held for the life of a run.

    The lock file is empty and never rewritten or removed (removing it would let a late
    opener lock a file nobody else sees); the lock itself is the kernel's (or the network file
    system's), released automatically when the holder exits or dies, so there is no staleness
    to guess, no pid to trust, and no window in which two processes both hold it.
    """

    def __init__(self, folder: Path):
        self.path = Path(folder) / LOCK
        self.fd: int | None = None

    def acquire(self) -> "FolderLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666 & ~_UMASK)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise FolderBusy(f"{self.path.parent} is in use by another process") from None
            raise
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None



# ---------------------------------------------------------------------------- claiming
@dataclass
class Resume:
    """A verified resume state: ``arrays, meta`` as :func:`store.read_resume` returns them."""

    arrays: dict
    meta: dict
    source: str

    @property
    def checkpoint(self) -> int:
        return len(self.meta["rows"]) - 1


@dataclass
class RunFolder:
    """A run folder claimed for one config (see the module docstring)."""

    path: Path
    digest: str
    identity: dict | None = None  # store.target_identity of the run's target (None: unchecked)
    state: str = "fresh"  # fresh | complete | resume
    resume: Resume | None = None
    notes: list[str] = field(default_factory=list)
    lock: FolderLock | None = None

    # ---------------------------------------------------------------- claim
    @classmethod
    def claim(cls, path, digest: str, snapshot: dict | None = None,
              identity: dict | None = None) -> "RunFolder":
        """Claim ``path`` for the run of config hash ``digest`` on the target of ``identity``
        (:func:`ckam_bench.engine.store.target_identity`; None compares none).

        Refuses (:class:`FolderRefused`) a folder that is not this run's, and
        (:class:`TargetChanged`) a stored run of this config on another model or data, before
        writing anything; raises :class:`FolderBusy` when a live process holds it. Returns the folder
        locked, its state decided: ``fresh`` (marker and ``snapshot`` — ``{relative path:
        text}``, e.g. the ``.hydra/`` config files — written now), ``complete`` (nothing to
        do) or ``resume`` (``self.resume`` verified; damaged files set aside).
        """
        folder = cls(Path(path), digest, identity)
        folder._inspect()  # read-only: refuse before creating anything
        folder.path.mkdir(parents=True, exist_ok=True)
        folder.lock = FolderLock(folder.path).acquire()
        try:
            fresh = folder._inspect()  # again, under the lock
            folder._remove_own_temporaries()
            if fresh:
                write_json({"format": FORMAT, "config_hash": digest,
                            **({store.IDENTITY_KEY: identity} if identity is not None else {}),
                            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                            "host": socket.gethostname(), "pid": os.getpid()},
                           folder.path / MARKER)
                for rel, text in (snapshot or {}).items():
                    target = folder.path / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    atomic_write(target, lambda tmp, t=text: Path(tmp).write_text(t))
            else:
                folder._restamp()
                folder._decide()
        except BaseException:
            folder.release()
            raise
        return folder

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def _inspect(self) -> bool:
        """True for a new or empty folder (only our own lock/temporary files); None-raising
        otherwise unless the marker says this run. Never writes."""
        p = self.path
        if not p.exists():
            return True
        if not p.is_dir():
            raise FolderRefused(f"hydra.run.dir: {p} is a file, not a folder")
        entries = [e.name for e in os.scandir(p)]
        if MARKER not in entries:
            if all(name == LOCK or _TMP.match(name) for name in entries):
                return True
            shown = ", ".join(sorted(entries)[:3]) + (", ..." if len(entries) > 3 else "")
            raise FolderRefused(
                f"hydra.run.dir: {p} holds files that are not a ckam-bench run ({shown}); "
                "nothing was changed: choose an empty or new folder")
        try:
            marker = json.loads((p / MARKER).read_text())
            theirs = marker["config_hash"]
        except (OSError, ValueError, KeyError, TypeError):
            raise FolderRefused(f"hydra.run.dir: the run marker {p / MARKER} is damaged, so the "
                                "folder cannot be identified; nothing was changed: choose "
                                "another folder") from None
        if theirs != self.digest:
            raise FolderRefused(
                f"hydra.run.dir: {p} holds a run of a different configuration; nothing was "
                "changed: choose another folder to start a new run")
        refusal = target_changed(p, marker, self.identity)
        if refusal is not None:
            raise refusal
        return False

    # ---------------------------------------------------------------- an owned folder
    def _restamp(self) -> None:
        """Record this claim's target identity in the marker when it records another one (the
        claim passed :func:`target_changed`: nothing kept is of the other identity)."""
        marker = json.loads((self.path / MARKER).read_text())
        if self.identity is not None and marker.get(store.IDENTITY_KEY) != self.identity:
            write_json({**marker, store.IDENTITY_KEY: self.identity}, self.path / MARKER)

    def _remove_own_temporaries(self) -> None:
        for entry in os.scandir(self.path):
            if _TMP.match(entry.name) and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)

    def _decide(self) -> None:
        status = self._read_status()
        rows = self._trace_rows() if status.get("config_hash") == self.digest else None
        if status.get("state") in ("complete", "empty") and rows is not None:
            if collected(status, rows):
                self.state = "complete"
                return
            self._redo(status)
            return
        resume = self._newest_intact_resume()
        rows = self._trace_rows()
        if resume is None:
            if rows is not None or (self.path / store.TRACE).exists():
                self._set_aside(store.TRACE, store.SAMPLES, store.DIAGNOSTICS, store.STATUS,
                                why="no intact resume state: the run starts afresh")
            self.state = "fresh"
            return
        state_rows = resume.meta["rows"]
        if rows is None:
            if (self.path / store.TRACE).exists():
                self._set_aside(store.TRACE, why="unreadable or of another config")
        elif len(rows) > len(state_rows) or any(
                a.get("checkpoint") != b.get("checkpoint") or a.get("iterations") != b.get("iterations")
                for a, b in zip(rows, state_rows)):
            # rows the resume state does not hold would be overwritten: keep them aside
            self._set_aside(store.TRACE, why=f"it has {len(rows)} rows, the newest intact "
                                             f"resume state {len(state_rows)}")
        for name in (store.SAMPLES, store.DIAGNOSTICS):
            if (self.path / name).exists() and not self._parquet_ok(name):
                self._set_aside(name, why="unreadable or of another config")
        self.state, self.resume = "resume", resume

    def _redo(self, status: dict) -> None:
        """Run an ended run that collected nothing again from its first iteration (module
        docstring): its own files stay to be rewritten, anything else is set aside."""
        for name in (store.SAMPLES, store.DIAGNOSTICS):
            if (self.path / name).exists() and not self._parquet_ok(name):
                self._set_aside(name, why="unreadable or of another config")
        self._set_aside(store.RESUME, RESUME_PREV,
                        why="left beside a run that collected no sample, which starts afresh")
        self.notes.append(f"redoing the run from its first iteration: it ended "
                          f"({status.get('reason') or 'no reason recorded'}) without collecting "
                          "a sample, so it is no result")
        self.state = "fresh"

    def _read_status(self) -> dict:
        try:
            status = json.loads((self.path / store.STATUS).read_text())
            return status if isinstance(status, dict) else {}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            self._set_aside(store.STATUS, why="unreadable")
            return {}

    def _parquet_ok(self, name: str) -> bool:
        import pyarrow.parquet as pq

        try:
            if parquet_hash(self.path / name) != self.digest:
                return False
            pq.read_table(self.path / name)
            return True
        except Exception:  # any damage: the file is set aside, never trusted
            return False

    def _trace_rows(self) -> list[dict] | None:
        import pyarrow.parquet as pq

        if not (self.path / store.TRACE).exists() or not self._parquet_ok(store.TRACE):
            return None
        return pq.read_table(self.path / store.TRACE).to_pylist()

    def _newest_intact_resume(self) -> Resume | None:
        """The newest verified resume state; damaged ones set aside, foreign ones refused."""
        found = []
        for name in (store.RESUME, RESUME_PREV):
            if not (self.path / name).exists():
                continue
            try:
                arrays, meta = store.read_resume(self.path / name)
                rows, theirs = meta["rows"], meta["config_hash"]
                missing = [k for k in store.RESUME_KEYS if k not in meta]
                if missing or not isinstance(rows, list):  # no row yet: stopped before the
                    raise KeyError(", ".join(missing) or "rows")  # first checkpoint, resumable
            except Exception as exc:  # truncated, bad CRC, missing keys: never trusted
                self._set_aside(name, why=f"damaged or incomplete ({type(exc).__name__}: {exc})")
                continue
            if theirs != self.digest:
                raise FolderRefused(
                    f"hydra.run.dir: {self.path / name} belongs to another configuration; "
                    "nothing was changed: choose another folder")
            found.append(Resume(arrays, meta, name))
        return max(found, key=lambda r: r.checkpoint) if found else None

    def _set_aside(self, *names: str, why: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        for name in names:
            src = self.path / name
            if not src.exists():
                continue
            dst, k = self.path / f"{name}.damaged-{stamp}", 1
            while dst.exists():
                k += 1
                dst = self.path / f"{name}.damaged-{stamp}-{k}"
            os.rename(src, dst)
            self.notes.append(f"set aside {src.name} as {dst.name}: {why}")

    # ---------------------------------------------------------------- writes of the run
    def write_checkpoint(self, *, samples: dict | None, diagnostics: dict | None,
                         rows: list[dict], status: dict, resume: tuple[dict, dict] | None,
                         complete: bool) -> None:
        """Write one checkpoint: the stores (when given), then the resume state (rotated: the
        previous one kept as ``resume.prev.npz``), then the trace and the status — so a trace
        never exists without its stores and is never ahead of the resume state. When the run
        is complete, the resume states are removed after the final trace is written."""
        p, d = self.path, self.digest
        if samples is not None:
            write_columns(samples, p / store.SAMPLES, d)
        if diagnostics is not None:
            write_columns(diagnostics, p / store.DIAGNOSTICS, d)
        if resume is not None and not complete:
            arrays, meta = resume
            if (p / store.RESUME).exists():
                os.replace(p / store.RESUME, p / RESUME_PREV)
            write_resume(arrays, {**meta, "config_hash": d}, p / store.RESUME)
        write_rows(rows, p / store.TRACE, d)
        write_json(status, p / store.STATUS)
        if complete:
            for name in (store.RESUME, RESUME_PREV):
                (p / name).unlink(missing_ok=True)

    def write_status(self, status: dict) -> None:
        write_json(status, self.path / store.STATUS)


# ---------------------------------------------------------------------------- the target's identity
IDENTITY_WORDS = {"source_sha256": "the model's source file (target.model)",
                  "data_sha256": "the target's data (its data file or arrays)",
                  "parameters_sha256": "the target's parameters"}
"""How :class:`TargetChanged` names each digest of :func:`ckam_bench.engine.store.target_identity`."""


def identity_changes(stored, current) -> list[str]:
    """One phrase per digest recorded in both ``stored`` and ``current`` (target identities)
    whose values differ; a digest only one of them records is not compared (a version that
    records a new one does not refuse the runs made before it)."""
    if not isinstance(stored, dict) or not isinstance(current, dict):
        return []
    changes = []
    for key in sorted(set(stored) & set(current)):
        if stored[key] != current[key]:
            what = IDENTITY_WORDS.get(key, f"the target's {key.removesuffix('_sha256')}")
            changes.append(f"{what} changed ({key} {str(stored[key])[:12]}, "
                           f"now {str(current[key])[:12]})")
    return changes


def _scratch(name: str) -> bool:
    """A file of a folder that holds no result: the marker, the lock, the config snapshot, a
    temporary file, a file set aside."""
    return name in (MARKER, LOCK, ".hydra") or bool(_TMP.match(name)) or ".damaged-" in name


def target_changed(folder, marker: dict, identity) -> TargetChanged | None:
    """The refusal of a claim on ``folder`` (``marker``: its marker, read) for a target of
    ``identity`` when the folder holds a run of another model or data that the claim would keep
    (skip as complete, or continue from a resume state; module docstring); else None. Reads
    only.

    The stored identity is ``status.json``'s; without a readable status (a run that never wrote
    one, or an SBC's folder), the marker's, and the folder then keeps a result when it holds
    anything besides the marker, the snapshot, the lock and files set aside."""
    folder = Path(folder)
    if identity is None:
        return None
    try:
        status = json.loads((folder / store.STATUS).read_text())
    except (OSError, ValueError):
        status = None
    if isinstance(status, dict):
        stored = status.get(store.IDENTITY_KEY, marker.get(store.IDENTITY_KEY))
        state = status.get("state")
        kept = state == "complete" or any((folder / n).exists() for n in (store.RESUME, RESUME_PREV))
    else:
        stored, state = marker.get(store.IDENTITY_KEY), None
        kept = any(not _scratch(entry.name) for entry in os.scandir(folder))
    changes = identity_changes(stored, identity)
    if not changes or not kept:
        return None
    shown = f" ({state})" if state else ""
    return TargetChanged(
        f"hydra.run.dir: {folder} holds a run of this configuration{shown} on another model or "
        f"data: {'; '.join(changes)} since that run; nothing was changed: to run the model and "
        "data as they are now, choose a new folder (another hydra.run.dir, or hydra.sweep.dir "
        "for a sweep); to continue that run, restore the files it used", changes)


def claim_for(path, status_extra: dict) -> RunFolder:
    """Claim ``path`` for a run whose status carries ``config_hash`` and ``target_identity``
    (the ``status_extra`` of a :class:`ckam_bench.engine.runner.Runner` given a plain path)."""
    return RunFolder.claim(path, status_extra.get("config_hash", "unhashed"),
                           identity=status_extra.get(store.IDENTITY_KEY))


def collected(status: dict, rows: list[dict]) -> bool:
    """Whether an ended run collected any sample: ``totals.n_collected`` of its status, else the
    last trace row's ``n_collected`` (a run with neither counts as having collected)."""
    totals = status.get("totals")
    value = totals.get("n_collected") if isinstance(totals, dict) else None
    if value is None and rows:
        value = rows[-1].get("n_collected")
    try:
        return value is None or int(value) > 0
    except (TypeError, ValueError):
        return True


def ended_empty(folder, status: dict) -> bool:
    """Whether the stored run in ``folder`` ended (``complete`` or ``empty``) without collecting
    a sample (:func:`collected`, reading the trace only when the status has no count)."""
    import pyarrow.parquet as pq

    if status.get("state") not in ("complete", "empty"):
        return False
    if status.get("state") == "empty":
        return True
    totals = status.get("totals")
    if isinstance(totals, dict) and totals.get("n_collected") is not None:
        return not collected(status, [])
    try:
        rows = pq.read_table(Path(folder) / store.TRACE, columns=["n_collected"]).to_pylist()
    except Exception:  # no readable count: the run is judged by its other checks
        return False
    return not collected(status, rows[-1:])


# ---------------------------------------------------------------------------- config errors
def missing_ancestors(path) -> list[Path]:
    """The folders of ``path`` (itself included) that do not exist yet, deepest first: the
    only folders the clean-up after a configuration error may remove (when still empty)."""
    path = Path(os.path.abspath(path))
    out = []
    while not path.exists() and path.parent != path:
        out.append(path)
        path = path.parent
    return out


def remove_empty(folders) -> None:
    """``os.rmdir`` each folder in order (deepest first); a folder holding anything stays."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return
