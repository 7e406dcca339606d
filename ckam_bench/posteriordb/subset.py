"""Choosing posteriors of the suite by name, character or dimension (``posteriordb.subset``).

The candidates are the posteriors of :func:`suite`: every registered
posterior (posteriordb's draws, :data:`~ckam_bench.posteriordb.SUITE`, and the high-dimensional
ones, :data:`~ckam_bench.posteriordb.highdim.HIGHDIM`) whose reference is found. One without a
reference (:func:`reference_status`) is chosen only by its exact name or
model function, never by ``all``, a wildcard, a character or a dimension range.

A subset is a list of terms; a posterior is chosen when it matches any *name or character* term
(all posteriors when there is none) and every *dimension* term:

* a posteriordb name or a model function name, with shell wildcards: ``mesquite-logmesquite``,
  ``logmesquite``, ``nes*``, ``earnings-*``;
* a character (:data:`ckam_bench.posteriordb.CHARACTERS`): ``regression``, ``hierarchical``,
  ``time series`` …;
* a dimension range, bounds included: ``dim:..10`` (at most 10), ``dim:50..`` (at least 50: the
  high-dimensional ones), ``dim:50..500``, ``dim:5`` (exactly 5);
* ``all``: every posterior with a reference.

On the command line the list is written in brackets, so Hydra does not sweep over its commas::

    ckam-bench -m experiment=posteriordb 'posteriordb.subset=[regression,dim:..5]' sampler=nuts
    ckam-bench list posteriordb 'posteriordb.subset=[nes*]'

A term that matches no posterior is an error naming the nearest names (a typo never silently
shrinks a benchmark).
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

_RANGE = re.compile(r"^dim:(?:(\d+)|(\d*)\.\.(\d*))$")


@dataclass(frozen=True)
class ReferenceStatus:
    """Where a registered posterior's reference is (:func:`reference_status`)."""

    source: str
    """:attr:`ckam_bench.posteriordb.Posterior.reference_source`."""
    path: Path | None
    """the reference file; None when there is none."""
    reason: str
    """why there is none ("" when there is one)."""
    needs: str = ""
    """the optional extra without which it cannot be told whether there is one ("pymc": a
    harness reference is found by the target's reference id, which the PyMC model gives); ""
    when it is told."""

    @property
    def found(self) -> bool:
        return self.path is not None

    def describe(self) -> str:
        """One phrase for ``ckam-bench list``: the reference's source and file, or why none."""
        if self.needs:
            from ckam_bench.posteriordb import REFERENCE_SOURCES

            return (f"{REFERENCE_SOURCES[self.source]} if one is shipped or cached, looked up by "
                    f"the target's reference id once ckam-bench[{self.needs}] is installed")
        if not self.found:
            return f"no reference ({self.reason}): not run by default"
        from ckam_bench.posteriordb import HARNESS, POSTERIORDB, REFERENCE_SOURCES
        from ckam_bench.reference_lookup import SHIPPED

        if self.source == POSTERIORDB:
            return REFERENCE_SOURCES[POSTERIORDB]
        where = f"shipped {self.path.name}" if self.path.parent == SHIPPED else f"cached {self.path}"
        return f"{REFERENCE_SOURCES[HARNESS]}, {where}"


def reference_status(name: str) -> ReferenceStatus:
    """Whether posterior ``name`` of :func:`ckam_bench.posteriordb.registered` has its reference,
    from the files as they are now: posteriordb's draws ``reference/<reference>.npz``; for a
    harness reference, a certified file of the target's reference id in the shipped references
    or the user's cache (:func:`ckam_bench.reference_lookup.find_reference`, read by
    ``read_reference``, which refuses an uncertified one). Building the target to know its id
    needs PyMC (once per process and posterior); without PyMC installed (the base install), a
    harness reference is not looked for, and the status says which extra tells
    (:attr:`ReferenceStatus.needs`). posteriordb's draws are found without PyMC."""
    from ckam_bench.posteriordb import HARNESS, POSTERIORDB, PYMC_EXTRA, REFERENCE_DIR, pymc_installed, registered
    from ckam_bench.reference_lookup import find_reference

    posterior = registered()[name]
    if posterior.reference_source == POSTERIORDB:
        path = REFERENCE_DIR / f"{posterior.reference}.npz"
        return ReferenceStatus(POSTERIORDB, path if path.is_file() else None,
                               "" if path.is_file() else f"{path} is missing")
    if not pymc_installed():
        return ReferenceStatus(HARNESS, None, "its id is the PyMC target's, which needs "
                               f"{PYMC_EXTRA}", needs="pymc")
    try:
        reference_id, dim = _target_id(posterior.model)
    except ValueError as exc:  # ModelError: PyMC installed but unusable, or the model fails
        return ReferenceStatus(HARNESS, None, f"its target cannot be built: {exc}")
    path = find_reference(SimpleNamespace(reference_id=lambda: reference_id))
    if path is None:
        return ReferenceStatus(HARNESS, None, f"no certified {reference_id}.npz shipped or cached")
    stat = path.stat()
    why = _uncertified(path, stat.st_mtime_ns, stat.st_size, dim)
    return ReferenceStatus(HARNESS, None if why else path, why)


@lru_cache(maxsize=None)
def _target_id(model: str) -> tuple[str, int]:
    """(reference id, dim) of the ``target=pymc`` target of ``model``."""
    from ckam_bench.targets.pymc import PyMCModel

    target = PyMCModel(model)
    return target.reference_id(), target.dim


@lru_cache(maxsize=None)
def _uncertified(path: Path, _mtime_ns: int, _size: int, dim: int) -> str:
    """Why the reference file is not a certified one of dimension ``dim``; "" when it is."""
    from ckam_bench.reference_lookup import read_reference

    try:
        read_reference(path, dim)
    except ValueError as exc:
        return str(exc)
    return ""


def suite() -> list:
    """The posteriors ``experiment=posteriordb`` runs by default: every registered posterior
    whose reference is found (:func:`reference_status`), in
    :func:`~ckam_bench.posteriordb.registered`'s order."""
    from ckam_bench.posteriordb import registered

    return [p for p in registered().values() if reference_status(p.name).found]


class SubsetError(ValueError):
    """A ``posteriordb.subset`` term that selects nothing or cannot be read, or a suite that
    cannot run here (PyMC not installed)."""


def _terms(subset) -> list[str]:
    if subset is None:
        return ["all"]
    if isinstance(subset, str):
        subset = [subset]
    terms = [str(t).strip() for t in subset]
    if not terms or any(not t for t in terms):
        raise SubsetError(f"posteriordb.subset: empty term in {list(subset)!r}")
    return terms


def select(subset=None) -> list:
    """The suite's :class:`~ckam_bench.posteriordb.Posterior` entries chosen by ``subset`` (a
    term or a list of terms, see the module docstring), in the suite's order. Without PyMC (the
    base install, where nothing of the suite runs: :func:`model_specs` refuses) the posteriors
    whose reference cannot be looked for are candidates too, so ``ckam-bench list posteriordb``
    shows them, marked (:attr:`ReferenceStatus.needs`)."""
    from ckam_bench.posteriordb import CHARACTERS, registered

    everything = list(registered().values())
    usable: dict[str, bool] = {}  # a reference found (or looked for only with PyMC), asked lazily:

    def candidates(keep) -> set[str]:  # a harness reference's status builds the target
        names = set()
        for p in everything:
            if keep(p):
                if p.name not in usable:
                    status = reference_status(p.name)
                    usable[p.name] = bool(status.found or status.needs)
                if usable[p.name]:
                    names.add(p.name)
        return names

    chosen: set[str] = set()
    bounds = []
    any_name = False
    for term in _terms(subset):
        if term.startswith("dim:"):
            found = _RANGE.match(term.replace(" ", ""))
            if found is None or found.group(0) == "dim:..":
                raise SubsetError(f"posteriordb.subset: {term!r} is not a dimension range "
                                  "(dim:5, dim:..10, dim:50..500, dim:100..)")
            exact, lo, hi = found.groups()
            lo, hi = (exact, exact) if exact else (lo, hi)
            bounds.append((int(lo) if lo else 0, int(hi) if hi else None))
            continue
        any_name = True
        if term == "all":
            matched = candidates(lambda p: True)
        elif term in CHARACTERS:
            matched = candidates(lambda p, term=term: p.character == term)
        else:
            matched = candidates(lambda p, term=term: fnmatch.fnmatchcase(p.name, term)
                                 or fnmatch.fnmatchcase(p.function, term))
            matched |= {p.name for p in everything if term in (p.name, p.function)}
        if not matched:
            names = [p.name for p in everything] + [p.function for p in everything] + list(CHARACTERS)
            close = difflib.get_close_matches(term, names, n=3, cutoff=0.6)
            hint = f" — did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise SubsetError(f"posteriordb.subset: {term!r} matches no posterior{hint} "
                              "(ckam-bench list posteriordb shows names and characters)")
        chosen |= matched
    if not any_name:
        chosen = candidates(lambda p: True)
    out = [p for p in everything if p.name in chosen
           and all(lo <= p.dim and (hi is None or p.dim <= hi) for lo, hi in bounds)]
    if not out:
        raise SubsetError(f"posteriordb.subset: {list(_terms(subset))!r} selects no posterior")
    return out


def model_specs(subset=None) -> str:
    """The ``target.model`` values of the chosen posteriors joined by commas: Hydra's sweep
    syntax, for ``hydra.sweeper.params`` of ``conf/experiment/posteriordb.yaml``
    (the ``${posteriordb_models:...}`` resolver)."""
    from omegaconf import ListConfig, OmegaConf

    from ckam_bench.posteriordb import PYMC_EXTRA, pymc_installed

    if not pymc_installed():  # before anything is launched: one line, nothing created
        raise SubsetError(f"experiment=posteriordb runs PyMC models (target=pymc), and PyMC is not "
                          f'installed: pip install "{PYMC_EXTRA}"')
    if isinstance(subset, ListConfig):
        subset = OmegaConf.to_container(subset)
    return ",".join(p.model for p in select(subset))
