"""Choosing posteriors of the suite by name, character or dimension (``posteriordb.subset``).

A subset is a list of terms; a posterior is chosen when it matches any *name or character* term
(all posteriors when there is none) and every *dimension* term:

* a posteriordb name or a model function name, with shell wildcards: ``mesquite-logmesquite``,
  ``logmesquite``, ``nes*``, ``earnings-*``;
* a character (:data:`ckam_bench.posteriordb.CHARACTERS`): ``regression``, ``hierarchical``,
  ``time series`` …;
* a dimension range, bounds included: ``dim:..10`` (at most 10), ``dim:50..500``, ``dim:100..``
  (at least 100), ``dim:5`` (exactly 5);
* ``all``: every posterior.

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

_RANGE = re.compile(r"^dim:(?:(\d+)|(\d*)\.\.(\d*))$")


class SubsetError(ValueError):
    """A ``posteriordb.subset`` term that selects nothing or cannot be read."""


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
    term or a list of terms, see the module docstring), in the suite's order."""
    from ckam_bench.posteriordb import CHARACTERS, SUITE

    posteriors = list(SUITE.values())
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
            matched = {p.name for p in posteriors}
        elif term in CHARACTERS:
            matched = {p.name for p in posteriors if p.character == term}
        else:
            matched = {p.name for p in posteriors
                       if fnmatch.fnmatchcase(p.name, term) or fnmatch.fnmatchcase(p.function, term)}
        if not matched:
            names = [p.name for p in posteriors] + [p.function for p in posteriors] + list(CHARACTERS)
            close = difflib.get_close_matches(term, names, n=3, cutoff=0.6)
            hint = f" — did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise SubsetError(f"posteriordb.subset: {term!r} matches no posterior{hint} "
                              "(ckam-bench list posteriordb shows names and characters)")
        chosen |= matched
    if not any_name:
        chosen = {p.name for p in posteriors}
    out = [p for p in posteriors if p.name in chosen
           and all(lo <= p.dim and (hi is None or p.dim <= hi) for lo, hi in bounds)]
    if not out:
        raise SubsetError(f"posteriordb.subset: {list(_terms(subset))!r} selects no posterior")
    return out


def model_specs(subset=None) -> str:
    """The ``target.model`` values of the chosen posteriors joined by commas: Hydra's sweep
    syntax, for ``hydra.sweeper.params`` of ``conf/experiment/posteriordb.yaml``
    (the ``${posteriordb_models:...}`` resolver)."""
    from omegaconf import ListConfig, OmegaConf

    if isinstance(subset, ListConfig):
        subset = OmegaConf.to_container(subset)
    return ",".join(p.model for p in select(subset))
