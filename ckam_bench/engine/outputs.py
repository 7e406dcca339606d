"""Output folders of ckam-bench-check, ckam-bench-reference and ckam-bench-figures.

The run folders of ``ckam-bench`` are :mod:`ckam_bench.engine.rundir`'s; the folders the three other
commands write into follow the same rules, here, so that what any command may do to a user's
disk can be audited in these two files:

* **Claiming.** A command writes only into a folder it claims: a new or empty folder, or one
  holding its marker ``.ckam-output.json`` with the same command and the same identity (the
  check: its config hash; the figures: the results folder; the references: the store). Any
  other folder is refused (:class:`~ckam_bench.engine.rundir.FolderRefused`, exit 2) by
  :meth:`OutputFolder.inspect`, which reads only: commands call it before any long work, and
  create the folder and the marker (:meth:`OutputFolder.open`) only when they have something
  to write, so a refused, invalid or unsuccessful command changes nothing on disk.
* **Replacing.** The marker lists every file the command published there with the sha256 of
  its content. A file is replaced only when it is listed *and* its content is still what the
  command wrote; a user's file of the same name, or one of ours that was edited since, refuses
  the whole publication before anything is renamed.
* **Writing.** Files are written into a private staging folder ``.ckam-staging-<token>``
  (recorded in the marker before it is created), flushed, and then published: the marker first
  lists the new checksums next to the old ones, a journal in the staging folder lists the files,
  and each file is renamed onto its final name. A kill at any moment leaves every file in its
  old or new complete version; a kill between the renames of files that must agree (a
  reference's ``.npz`` and ``.json``, a report's ``.md`` and ``.html``) is finished at the next
  start from the journal (roll forward), so they never stay disagreeing.
* **Removing.** The only things removed are (a) this command's own staging folders named in
  its marker (published or left by a kill: removed at the next start), and (b) after an error,
  the folders created by this invocation while still empty (:func:`rundir.remove_empty`).
  A folder is never deleted by looking at the names it holds.
* **Locking.** Updates of the marker happen under an exclusive ``flock`` on
  ``.ckam-output.lock`` (blocking and short), so jobs publishing into one folder at the same
  time (the chains of a reference split over a sweep) never lose each other's entries.
* **Sweep folders.** Hydra writes ``multirun.yaml`` into the folder of every sweep
  (``hydra.sweep.dir``), replacing what is there. Before it does, :func:`claim_sweep_folder`
  refuses a folder whose ``multirun.yaml`` a ckam-bench sweep did not write (its sha256 is not
  listed in the folder's ``.ckam-sweep.json``) and lists the hash of the file about to be
  written; :func:`restore_sweep_folder` puts both back as they were after a sweep that ran no
  job (each refused, or already complete), so such a sweep leaves the disk as it found it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from ckam_bench.engine import rundir
from ckam_bench.engine.rundir import FolderRefused

MARKER = ".ckam-output.json"
LOCK = ".ckam-output.lock"
STAGING = ".ckam-staging-"
JOURNAL = ".publish.json"
FORMAT = 1
SWEEP_MARKER = ".ckam-sweep.json"
MULTIRUN = "multirun.yaml"


def sha256(path) -> str:
    """sha256 of a file's content (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class OutputFolder:
    """A folder one of ckam-bench-check / -reference / -figures writes into (module docstring).

    ``command`` names the command, ``identity`` the job: a folder marked by another command or
    another identity is refused.
    """

    def __init__(self, path, command: str, identity: str, created=()):
        self.path = Path(path)
        self.command = command
        self.identity = str(identity)
        self.created: list[Path] = list(created)  # folders this invocation created
        self.token = uuid.uuid4().hex[:12]
        self.opened = False
        self._staging: Path | None = None

    # ---------------------------------------------------------------- claiming
    @classmethod
    def inspect(cls, path, command: str, identity: str, created=()) -> "OutputFolder":
        """The folder, checked read-only: :class:`FolderRefused` when it is not this job's.
        ``created``: folders of the path the caller's invocation created already (Hydra creates
        a run folder before its task starts), removed again by :meth:`discard` when empty."""
        folder = cls(path, command, identity, created)
        folder._check()
        return folder

    def _check(self) -> dict | None:
        """The marker of a folder of this job (None: new or empty folder); refuses others."""
        p = self.path
        if not p.exists():
            above = p.parent
            while not above.exists() and above != above.parent:
                above = above.parent
            if not above.is_dir():
                raise FolderRefused(f"{above} is a file, so {p} cannot be created; nothing was "
                                    "changed")
            return None
        if not p.is_dir():
            raise FolderRefused(f"{p} is a file, not a folder; nothing was changed")
        entries = [e.name for e in os.scandir(p)]
        if MARKER not in entries:
            if all(name == LOCK for name in entries):
                return None
            shown = ", ".join(sorted(entries)[:3]) + (", ..." if len(entries) > 3 else "")
            raise FolderRefused(
                f"{p} holds files that {self.command} did not write ({shown}); nothing was "
                "changed: choose an empty or new folder")
        marker = self._read_marker()
        if marker.get("command") != self.command or marker.get("identity") != self.identity:
            raise FolderRefused(
                f"{p} holds the output of another {marker.get('command', 'command')} job "
                f"({marker.get('identity')}); nothing was changed: choose another folder")
        return marker

    def _read_marker(self) -> dict:
        try:
            marker = json.loads((self.path / MARKER).read_text())
            if not (isinstance(marker, dict) and isinstance(marker.get("files"), dict)
                    and isinstance(marker.get("staging"), list)):
                raise ValueError("not a marker")
        except (OSError, ValueError):
            raise FolderRefused(f"the marker {self.path / MARKER} is damaged, so the folder "
                                "cannot be identified; nothing was changed: choose another "
                                "folder") from None
        return marker

    def _write_marker(self, marker: dict) -> None:
        rundir.write_json(marker, self.path / MARKER)

    @contextlib.contextmanager
    def _locked(self):
        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o666 & ~rundir._UMASK)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def open(self) -> "OutputFolder":
        """Create and mark the folder (when new or empty) and finish or remove the staging
        folders a killed earlier invocation left. Idempotent."""
        if self.opened:
            return self
        self._check()
        missing = rundir.missing_ancestors(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.created = missing + self.created
        with self._locked():
            marker = self._check()
            if marker is None:
                marker = {"format": FORMAT, "command": self.command, "identity": self.identity,
                          "files": {}, "staging": []}
            self._recover(marker)
            self._write_marker(marker)
        self.opened = True
        return self

    def _recover(self, marker: dict) -> None:
        """Roll forward the journals of staging folders a kill left; remove those folders."""
        for name in list(marker["staging"]):
            staging = self.path / name
            journal = staging / JOURNAL
            if journal.is_file():
                try:
                    files = json.loads(journal.read_text())["files"]
                except (OSError, ValueError, KeyError, TypeError):
                    files = {}
                for rel in files:
                    if (staging / rel).is_file():
                        dest = self.path / rel
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        os.replace(staging / rel, dest)
            if staging.is_dir() and not staging.is_symlink():
                shutil.rmtree(staging)
            marker["staging"].remove(name)

    # ---------------------------------------------------------------- writing
    def staging(self) -> Path:
        """A new private folder to write files into before :meth:`publish` (recorded in the
        marker first, so a kill leaves nothing unidentified)."""
        self.open()
        if self._staging is None:
            name = f"{STAGING}{self.token}"
            with self._locked():
                marker = self._read_marker()
                marker["staging"].append(name)
                self._write_marker(marker)
            self._staging = self.path / name
            self._staging.mkdir()
        return self._staging

    def owns(self, rel: str, marker: dict | None = None) -> bool:
        """Whether ``rel`` may be (re)written: absent, or listed with its current content."""
        dest = self.path / rel
        if not dest.exists() and not dest.is_symlink():
            return True
        if dest.is_symlink() or not dest.is_file():
            return False
        marker = marker if marker is not None else self._read_marker()
        return sha256(dest) in marker["files"].get(rel, ())

    def publish(self, keep: tuple[str, ...] = (), last: tuple[str, ...] = ()) -> list[Path]:
        """Move every file of the staging folder onto its place in the folder, then remove the
        staging folder. ``keep``: names never replaced, even when ours (refused when present);
        ``last``: names renamed after all others (e.g. the report pointing at the figures).
        Refuses (:class:`FolderRefused`) before renaming anything when a file in the way is
        not this job's."""
        staging = self._staging
        if staging is None:
            return []
        files = sorted(str(p.relative_to(staging)) for p in staging.rglob("*")
                       if p.is_file() and p.name != JOURNAL)
        files = [f for f in files if f not in last] + [f for f in last if f in files]
        hashes = {}
        for rel in files:
            with open(staging / rel, "rb") as fh:
                os.fsync(fh.fileno())
            hashes[rel] = sha256(staging / rel)
        refused = None
        with self._locked():
            marker = self._read_marker()
            for rel in files:
                dest = self.path / rel
                if rel in keep and (dest.exists() or dest.is_symlink()):
                    refused = (f"{dest} already exists and is never replaced; nothing was "
                               "changed: move it away or choose another folder")
                elif not self.owns(rel, marker):
                    refused = (f"{dest} was not written by {self.command} for this job (or "
                               "was changed since); nothing was changed: move it away or "
                               "choose another folder")
                if refused:
                    break
            else:
                self._rename(staging, files, hashes, marker)
        if refused:
            self.discard()
            raise FolderRefused(refused)
        self._staging = None
        return [self.path / rel for rel in files]

    def _rename(self, staging: Path, files: list, hashes: dict, marker: dict) -> None:
        """The publication proper (under the lock): marker, journal, renames, marker."""
        for rel, digest in hashes.items():  # old and new content both ours until renamed
            dest = self.path / rel
            old = [sha256(dest)] if dest.is_file() else []
            marker["files"][rel] = old + [digest]
        self._write_marker(marker)
        rundir.write_json({"files": files}, staging / JOURNAL)
        for rel in files:
            dest = self.path / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, dest)
            _fsync_dir(dest.parent)
        for rel, digest in hashes.items():
            marker["files"][rel] = [digest]
        shutil.rmtree(staging)
        marker["staging"].remove(staging.name)
        self._write_marker(marker)

    def discard(self) -> None:
        """After an error: remove this invocation's staging folder, and the folders it created
        while they are empty (anything else stays)."""
        if self._staging is not None and self._staging.is_dir():
            shutil.rmtree(self._staging)
            with self._locked():
                marker = self._read_marker()
                if self._staging.name in marker["staging"]:
                    marker["staging"].remove(self._staging.name)
                self._write_marker(marker)
            self._staging = None
        if self.opened and self.created and (self.path / MARKER).is_file():
            marker = self._read_marker()
            if not marker["files"] and not marker["staging"] and \
                    {e.name for e in os.scandir(self.path)} <= {MARKER, LOCK}:
                for name in (MARKER, LOCK):  # our own two files of a folder we just created
                    (self.path / name).unlink(missing_ok=True)
        rundir.remove_empty(self.created)


# ---------------------------------------------------------------------------- sweep folders
def _sweep_hashes(folder: Path) -> list[str]:
    """The multirun.yaml hashes listed in a sweep folder's marker ([] without a marker)."""
    path = folder / SWEEP_MARKER
    if not path.exists() and not path.is_symlink():
        return []
    try:
        hashes = json.loads(path.read_text())[MULTIRUN]
        if not (isinstance(hashes, list) and all(isinstance(h, str) for h in hashes)):
            raise ValueError("not a list of hashes")
    except (OSError, ValueError, KeyError, TypeError):
        raise FolderRefused(f"the sweep marker {path} is damaged, so {folder / MULTIRUN} cannot "
                            "be identified; nothing was changed: choose another "
                            "hydra.sweep.dir") from None
    return hashes


@dataclass
class SweepState:
    """What a sweep folder held before Hydra wrote into it (None: no such file)."""

    folder: Path
    multirun: bytes | None
    marker: bytes | None


def claim_sweep_folder(folder, text: str) -> SweepState:
    """Before Hydra writes ``text`` as ``folder/multirun.yaml``: refuse
    (:class:`FolderRefused`, nothing changed) when a ``multirun.yaml`` is there that no
    ckam-bench sweep wrote, or that was changed since; else list the new file's hash in the
    folder's marker (the folder is created when new). Returns what the folder held before, for
    :func:`restore_sweep_folder`."""
    folder = Path(folder)
    path = folder / MULTIRUN
    if (folder.exists() or folder.is_symlink()) and not folder.is_dir():
        raise FolderRefused(f"{folder} is a file, not a folder; nothing was changed")
    hashes = _sweep_hashes(folder) if folder.is_dir() else []
    if path.exists() or path.is_symlink():
        if path.is_symlink() or not path.is_file() or sha256(path) not in hashes:
            raise FolderRefused(f"{path} was not written by a ckam-bench sweep (or was changed "
                                "since) and a sweep would replace it; nothing was changed: move "
                                "it away or choose another hydra.sweep.dir")
    before = SweepState(folder, path.read_bytes() if path.is_file() else None,
                        (folder / SWEEP_MARKER).read_bytes() if hashes else None)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if digest not in hashes:
        folder.mkdir(parents=True, exist_ok=True)
        rundir.write_json({"format": FORMAT, MULTIRUN: hashes + [digest]}, folder / SWEEP_MARKER)
    return before


def restore_sweep_folder(before: SweepState) -> None:
    """After a sweep that ran no job (each was refused, or already complete): put back the
    ``multirun.yaml`` and marker the folder held before — removing them when it held none — so
    that such a sweep leaves its folder as it found it. Only while ``multirun.yaml`` is still
    one the marker lists (ours); anything else stays."""
    folder, path = before.folder, before.folder / MULTIRUN
    try:
        if path.is_symlink() or not path.is_file() or sha256(path) not in _sweep_hashes(folder):
            return
    except (OSError, FolderRefused):
        return
    for name, old in ((MULTIRUN, before.multirun), (SWEEP_MARKER, before.marker)):
        if old is None:
            (folder / name).unlink(missing_ok=True)
        else:
            rundir.atomic_write(folder / name, lambda tmp, b=old: Path(tmp).write_bytes(b))


# ---------------------------------------------------------------------------- one JSON file
WRITTEN_BY = "written_by"


def check_own_json(path, producer: str) -> None:
    """Refuse (:class:`FolderRefused`) a ``path`` that exists and is not a JSON document
    written by ``producer`` (its ``written_by`` key): a script's ``--json`` output replaces
    only its own earlier output. Read-only: scripts call it before their long work."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    try:
        if path.is_symlink() or not path.is_file():
            raise ValueError("not a file")
        ours = json.loads(path.read_text()).get(WRITTEN_BY) == producer
    except (OSError, ValueError, AttributeError):
        ours = False
    if not ours:
        raise FolderRefused(f"{path} exists and was not written by {producer}; nothing was "
                            "changed: move it away or choose another --json")


def write_own_json(path, obj: dict, producer: str) -> None:
    """Write ``obj`` (with ``written_by: producer``) atomically to ``path``, refused as
    :func:`check_own_json` says."""
    check_own_json(path, producer)
    rundir.write_json({WRITTEN_BY: producer, **obj}, Path(path))
