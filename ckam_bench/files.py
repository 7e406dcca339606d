"""Atomic writes: a file is replaced whole or not at all (``atomic_write``), so a reader, a
crash or a second process never sees half of it. Every file the harness writes goes through
here: run folders (:mod:`ckam_bench.engine.rundir`), references, SBC simulations, caches."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: Path, write) -> None:
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
