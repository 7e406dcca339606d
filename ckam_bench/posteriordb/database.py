"""Every posterior of posteriordb, each with its status in the suite (issue 45 §4).

``database.json`` (package data, made by ``scripts/posteriordb_database.py`` from a posteriordb
git mirror; provenance in the file and in ``SOURCES.md``) lists every posterior of posteriordb at
:data:`~ckam_bench.posteriordb.POSTERIORDB_COMMIT` (v1.0): its model and data, posteriordb's
reference posterior (or none), keywords, dimension, whether posteriordb's reference draws are in
the mirror, and the references posteriordb added after v1.0. Its status here is computed when
asked, from the suite's registry (:func:`~ckam_bench.posteriordb.registered`,
:func:`~ckam_bench.posteriordb.subset.reference_status`,
:data:`~ckam_bench.posteriordb.NOT_SHIPPED`) and that listing, never written by hand:

* ``suite: posteriordb reference`` — registered, posteriordb's draws shipped;
* ``suite: harness-certified reference`` — registered, a reference the harness certified found;
* ``not yet`` — with why: posteriordb has a reference but there is no PyMC model yet; the
  posterior is registered but its reference is not certified (and why); or there is no reference
  in posteriordb and none certified by the harness;
* ``registered: reference not looked up`` — only without PyMC (the base install): a harness
  reference is found by the PyMC target's id, which needs ``ckam-bench[pymc]``.

``ckam-bench list posteriordb --all`` prints it; docs/posteriordb.md holds :func:`markdown`'s
table (``python scripts/posteriordb_database.py docs`` rewrites it). This module needs no PyMC.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from ckam_bench.posteriordb import HERE

LISTING = HERE / "database.json"

SUITE_POSTERIORDB = "suite: posteriordb reference"
SUITE_HARNESS = "suite: harness-certified reference"
NOT_YET = "not yet"
UNDETERMINED = "registered: reference not looked up"
STATUSES = (SUITE_POSTERIORDB, SUITE_HARNESS, NOT_YET, UNDETERMINED)
"""The statuses, in the order they are listed; :data:`UNDETERMINED` only without PyMC."""

HAS_REFERENCE, NOT_CERTIFIED, NO_REFERENCE = (
    "posteriordb has a reference", "registered, reference not certified", "no reference")
"""The kinds of ``not yet`` (:attr:`Status.kind`)."""

WHY_NOT_CERTIFIED: dict[str, str] = {}
"""Why a registered posterior has no certified reference, as docs/posteriordb.md tells it
("Beyond posteriordb's references"); tests/test_posteriordb_database.py holds it to the
registered posteriors whose reference is not found."""

BEGIN = "<!-- BEGIN posteriordb database table: python scripts/posteriordb_database.py docs -->"
END = "<!-- END posteriordb database table -->"


@dataclass(frozen=True)
class Entry:
    """One posterior of posteriordb, as ``database.json`` lists it."""

    name: str
    model: str
    data: str
    reference: str | None
    """posteriordb's ``reference_posterior_name`` at the listing's commit (None: none)."""
    keywords: tuple[str, ...]
    dim: int
    """the sum of posteriordb's ``dimensions`` (its count of the parameters)."""
    draws: str | None
    """posteriordb's reference draws in the mirror: "present", "missing" (listed, blob absent)
    or None (no reference)."""
    later: dict | None = None
    """a reference posteriordb added after the listing's commit: ``added`` (its date),
    ``summaries`` and ``draws`` (the commits its files were read at; draws None when not seen)."""

    def dimension(self) -> str:
        """posteriordb's dimension, and the suite's (its unconstrained coordinates) where it
        differs (posteriordb's ``dimensions`` may count transformed parameters too)."""
        from ckam_bench.posteriordb import registered

        posterior = registered().get(self.name)
        return f"{self.dim} (suite: {posterior.dim})" if posterior and posterior.dim != self.dim else str(self.dim)

    def posteriordb_reference(self) -> str:
        """posteriordb's reference, in a few words."""
        if self.reference:
            shared = "" if self.reference == self.name else f", {self.reference}'s"
            missing = ", draws missing from the mirror" if self.draws == "missing" else ""
            return f"v1.0{shared}{missing}"
        if self.later:
            return f"added {self.later['added']}, after v1.0"
        return "none"


@lru_cache(maxsize=1)
def listing() -> dict:
    """``database.json`` as read (``source``, ``later_references``, ``posteriors``)."""
    return json.loads(LISTING.read_text())


def entries() -> list[Entry]:
    """Every posterior of the listing, in its order (by name)."""
    return [Entry(name=r["name"], model=r["model"], data=r["data"], reference=r["reference"],
                  keywords=tuple(r["keywords"]), dim=r["dim"], draws=r["draws"],
                  later=r.get("later")) for r in listing()["posteriors"]]


@dataclass(frozen=True)
class Status:
    """A posterior's status in the suite."""

    entry: Entry
    status: str
    """one of :data:`STATUSES`."""
    why: str = ""
    """why not yet (or what is not known); "" for a suite status."""
    kind: str = ""
    """for :data:`NOT_YET`: :data:`HAS_REFERENCE`, :data:`NOT_CERTIFIED` or :data:`NO_REFERENCE`."""

    def line(self) -> str:
        return f"{self.status}: {self.why}" if self.why else self.status


def status_of(entry: Entry) -> Status:
    """The status of ``entry`` from the registry and the files as they are now."""
    from ckam_bench.posteriordb import HARNESS, NOT_SHIPPED, POSTERIORDB, registered
    from ckam_bench.posteriordb.subset import reference_status

    posterior = registered().get(entry.name)
    if posterior is not None:
        found = reference_status(entry.name)
        if found.found:
            return Status(entry, SUITE_POSTERIORDB if found.source == POSTERIORDB else SUITE_HARNESS)
        if found.needs:
            return Status(entry, UNDETERMINED, f"its reference would be one the {HARNESS} certified, "
                                               "found by the PyMC target's id: needs "
                                               f"ckam-bench[{found.needs}]")
        why = WHY_NOT_CERTIFIED.get(entry.name) or found.reason
        return Status(entry, NOT_YET, f"{NOT_CERTIFIED} ({posterior.function}: {why})", NOT_CERTIFIED)
    if entry.name in NOT_SHIPPED:
        return Status(entry, NOT_YET, f"{HAS_REFERENCE} (v1.0), not shipped: {NOT_SHIPPED[entry.name]}",
                      HAS_REFERENCE)
    if entry.reference:
        missing = " whose draws are missing from the mirror" if entry.draws == "missing" else ""
        return Status(entry, NOT_YET, f"{HAS_REFERENCE} (v1.0){missing}; no PyMC model yet", HAS_REFERENCE)
    if entry.later:
        unseen = "" if entry.later["draws"] else ", its draws file not seen after v1.0"
        return Status(entry, NOT_YET, f"{HAS_REFERENCE} (added {entry.later['added']}, after v1.0{unseen}); "
                                      "no PyMC model yet", HAS_REFERENCE)
    return Status(entry, NOT_YET, "no reference in posteriordb and none certified by the harness",
                  NO_REFERENCE)


def statuses() -> list[Status]:
    """Every posterior of the listing with its status, in the listing's order."""
    return [status_of(e) for e in entries()]


def ordered(rows: list[Status]) -> list[Status]:
    """``rows`` by status (:data:`STATUSES`' order), a ``not yet`` by its kind (a posteriordb
    reference first), then by name."""
    kinds = ("", HAS_REFERENCE, NOT_CERTIFIED, NO_REFERENCE)
    return sorted(rows, key=lambda r: (STATUSES.index(r.status), kinds.index(r.kind), r.entry.name))


def counts(rows: list[Status]) -> dict[str, int]:
    """Posteriors per status (only the statuses that occur), in :data:`STATUSES`' order."""
    out = {s: sum(r.status == s for r in rows) for s in STATUSES}
    return {s: n for s, n in out.items() if n}


def _where() -> str:
    source = listing()["source"]
    return f"posteriordb {source['commit'][:7]} (v1.0, {source['date']})"


TITLES = {SUITE_POSTERIORDB: "posteriordb in the suite with posteriordb's reference",
          SUITE_HARNESS: "posteriordb in the suite with a harness-certified reference",
          NOT_YET: "posteriordb not yet in the suite",
          UNDETERMINED: "posteriordb registered, reference not looked up without ckam-bench[pymc]"}


def sections() -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(title, rows) per status for ``ckam-bench list posteriordb --all``: a row is (name,
    what: the suite's note or why not yet, capabilities: dimension, posteriordb's reference,
    keywords)."""
    from ckam_bench.posteriordb import registered

    rows = ordered(statuses())
    out = []
    for status in STATUSES:
        chosen = []
        for r in (r for r in rows if r.status == status):
            e = r.entry
            what = r.why or registered()[e.name].note
            caps = f"d={e.dimension()}, posteriordb reference: {e.posteriordb_reference()}"
            if e.keywords:
                caps += f", keywords: {', '.join(e.keywords)}"
            chosen.append((e.name, what, caps))
        if chosen:
            out.append((TITLES[status], chosen))
    return out


def summary(rows: list[Status] | None = None) -> str:
    """One line: the listing's source and the count per status."""
    rows = statuses() if rows is None else rows
    per = "; ".join(f"{s}: {n}" for s, n in counts(rows).items())
    return f"{len(rows)} posteriors of {_where()}; {per}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(rows: list[Status] | None = None) -> str:
    """The docs table: counts per status (and per kind of ``not yet``), then every posterior."""
    rows = statuses() if rows is None else rows
    lines = [f"{len(rows)} posteriors of {_where()}.", "", "| status | posteriors |", "|---|---|"]
    for status, n in counts(rows).items():
        lines.append(f"| {status} | {n} |")
        if status == NOT_YET:
            for kind in (HAS_REFERENCE, NOT_CERTIFIED, NO_REFERENCE):
                k = sum(r.kind == kind for r in rows)
                if k:
                    lines.append(f"| &nbsp;&nbsp;not yet: {kind} | {k} |")
    lines += [f"| all | {len(rows)} |", "",
              "| posterior | d | keywords | posteriordb reference | status |", "|---|---|---|---|---|"]
    for r in ordered(rows):
        e = r.entry
        lines.append(f"| {e.name} | {e.dimension()} | {_cell(', '.join(e.keywords))} | "
                     f"{_cell(e.posteriordb_reference())} | {_cell(r.line())} |")
    return "\n".join(lines)


def replace_docs_table(text: str, rows: list[Status] | None = None) -> str:
    """``text`` (docs/posteriordb.md) with the part between :data:`BEGIN` and :data:`END` made
    :func:`markdown`'s table."""
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"docs/posteriordb.md: no {BEGIN!r} ... {END!r}")
    return f"{head}{BEGIN}\n{markdown(rows)}\n{END}{tail}"
