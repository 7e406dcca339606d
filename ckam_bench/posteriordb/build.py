"""Rebuild the shipped posteriordb files from a posteriordb checkout (run once by a maintainer,
never at run time): ``python -m ckam_bench.posteriordb.build PATH`` where PATH is a checkout of
github.com/stan-dev/posteriordb (the folder holding ``posterior_database/``).

Transformations, also recorded in ``SOURCES.md``:

- data ``posterior_database/data/data/<data>.json.zip`` -> ``data/<data>.npz``: one array per
  JSON key, integers as int64 and reals as float64 (lossless);
- reference draws ``posterior_database/reference_posteriors/draws/draws/<ref>.json.zip`` ->
  ``reference/<ref>.npz``: ``names`` (posteriordb's column names, in its order) and ``draws``
  (chains, draws per chain, columns) rounded to float32 (relative rounding 6e-8, far below the
  Monte Carlo error of 10 000 draws), which halves the package size.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import numpy as np

from ckam_bench.engine import rundir
from ckam_bench.posteriordb import DATA_DIR, REFERENCE_DIR, SUITE


def _read_zipped_json(path: Path):
    with zipfile.ZipFile(path) as archive:
        (member,) = archive.namelist()
        return json.loads(archive.read(member))


def _unchanged(path: Path, arrays: dict) -> bool:
    """Whether ``path`` already holds exactly ``arrays`` (names, dtypes, shapes, values)."""
    try:
        with np.load(path) as old:
            return sorted(old.files) == sorted(arrays) and all(
                old[k].dtype == np.asarray(v).dtype and np.array_equal(old[k], v) for k, v in arrays.items())
    except (OSError, ValueError):
        return False


def _save(path: Path, **arrays) -> None:
    """Replace a shipped file atomically (temporary file, fsync, rename), unless it already holds
    the same arrays (a zip archive records the time it was written: a rebuild leaves unchanged
    files byte for byte as they were)."""
    if _unchanged(path, arrays):
        return

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)

    rundir.atomic_write(path, write)


def build(root: Path) -> None:
    base = Path(root) / "posterior_database"
    for data_name in sorted({p.data for p in SUITE.values()}):
        raw = _read_zipped_json(base / "data" / "data" / f"{data_name}.json.zip")
        arrays = {}
        for key, value in raw.items():
            array = np.asarray(value)
            arrays[key] = array.astype(np.int64 if array.dtype.kind in "iub" else np.float64)
        _save(DATA_DIR / f"{data_name}.npz", **arrays)
    for ref_name in sorted({p.reference for p in SUITE.values()}):
        chains = _read_zipped_json(base / "reference_posteriors" / "draws" / "draws" / f"{ref_name}.json.zip")
        names = list(chains[0])
        draws = np.array([[chain[name] for name in names] for chain in chains], dtype=np.float64)
        _save(REFERENCE_DIR / f"{ref_name}.npz", names=np.array(names),
              draws=draws.transpose(0, 2, 1).astype(np.float32))


def compact(array: np.ndarray) -> np.ndarray:
    """An array of posteriordb's data in the smallest exact type: integers in the smallest signed
    integer type holding them, reals as float32 when float32 holds them exactly, else float64."""
    array = np.asarray(array)
    if array.dtype.kind in "iub":
        if array.ndim == 0:
            return array.astype(np.int64)
        for kind in (np.int8, np.int16, np.int32):
            if array.min() >= np.iinfo(kind).min and array.max() <= np.iinfo(kind).max:
                return array.astype(kind)
        return array.astype(np.int64)
    array = array.astype(np.float64)
    single = array.astype(np.float32)
    return single if np.array_equal(single.astype(np.float64), array) else array


def build_keys(root: Path, data_keys: dict[str, tuple[str, ...]]) -> None:
    """The data sets of ``data_keys`` (data name -> the keys its Stan data blocks declare), each
    key :func:`compact`, from the posteriordb checkout ``root``."""
    base = Path(root) / "posterior_database"
    for data_name, keys in data_keys.items():
        raw = _read_zipped_json(base / "data" / "data" / f"{data_name}.json.zip")
        _save(DATA_DIR / f"{data_name}.npz", **{key: compact(raw[key]) for key in keys})


def build_highdim(root: Path) -> None:
    """The data of :data:`ckam_bench.posteriordb.highdim.HIGHDIM` (posteriors without posteriordb
    reference draws)."""
    from ckam_bench.posteriordb.highdim import DATA_KEYS

    build_keys(root, DATA_KEYS)


def build_later(root: Path) -> None:
    """The data of :data:`ckam_bench.posteriordb.later.LATER` (posteriordb's references added
    after v1.0)."""
    from ckam_bench.posteriordb.later import DATA_KEYS

    build_keys(root, DATA_KEYS)


def build_hard(root: Path) -> None:
    """The data of :data:`ckam_bench.posteriordb.hard.HARD` (posteriordb's other posteriors that
    stress samplers)."""
    from ckam_bench.posteriordb.hard import DATA_KEYS

    build_keys(root, DATA_KEYS)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
    build_highdim(Path(sys.argv[1]))
    build_later(Path(sys.argv[1]))
    build_hard(Path(sys.argv[1]))
