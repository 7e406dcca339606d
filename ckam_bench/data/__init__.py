"""Data files shipped with ckam-bench (datasets of the papers' targets, certified reference
samples), and the one way targets find them.

Every file here is a copy of a public, redistributable source listed in ``SOURCES.md`` beside
this module; nothing is downloaded at run time. A target that reads a data file takes its
path as a config key (``data_file``; null means the shipped copy) and may also honour an
environment variable, so a user can point it at another copy without editing configs.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


class DataFileError(ValueError):
    """A data file is missing or malformed (a configuration error: the message names the key
    and the file)."""


def data_file(name: str, override: str | os.PathLike | None = None, env: str | None = None,
              key: str = "data_file") -> Path:
    """Path of the data file ``name``: ``override`` when given, else the environment variable
    ``env`` when set, else the copy shipped in this package. Raises :class:`DataFileError`
    (naming ``key``) when the file does not exist."""
    source = key
    path = override
    if path is None and env and os.environ.get(env):
        path, source = os.environ[env], f"{key} (from ${env})"
    path = Path(path).expanduser() if path is not None else HERE / name
    if not path.is_file():
        raise DataFileError(f"{source}: data file {str(path)!r} does not exist")
    return path


def content_sha256(path: str | os.PathLike) -> str:
    """sha256 (hex) of a data file's content: its bytes, or the decompressed bytes of a ``.gz``
    file (so recompressing it changes nothing).

    This is how a target that reads a file identifies its data (the ``data_sha256`` of its
    ``describe()``, hence its reference id): from the bytes that define the distribution, never
    from arrays computed from them, whose last bits depend on the CPU's BLAS and SIMD kernels."""
    h = hashlib.sha256()
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def array_sha256(arrays) -> str:
    """sha256 (hex) of labelled arrays by their bytes: ``arrays`` is a sequence of ``(label,
    array)`` pairs, hashed in the order given, each as its label, dtype, shape and C-order bytes
    (little-endian), so the digest changes when any label, dtype, shape or element changes, and
    no two sequences hash alike by shifting bytes from one array to the next.

    For arrays read or built exactly (a data file's values, integer indices, a config's
    numbers): never for the result of a floating-point computation whose last bits depend on the
    CPU (a standardised design, a Cholesky factor), which :func:`content_sha256` of the file it
    was computed from identifies instead."""
    h = hashlib.sha256()
    for label, value in arrays:
        a = np.ascontiguousarray(value)
        if a.dtype.hasobject:
            raise TypeError(f"array_sha256: {label!r} is an object array, which has no bytes to hash")
        if a.dtype.str.startswith(">"):
            a = a.astype(a.dtype.newbyteorder("<"))
        head = f"{label}\0{a.dtype.str}\0{a.shape}\0{a.nbytes}\0"
        h.update(head.encode())
        h.update(a.tobytes())
    return h.hexdigest()
