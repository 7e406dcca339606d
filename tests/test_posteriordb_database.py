"""The whole of posteriordb listed, each posterior with one status (issue 45 §4):
``ckam_bench/posteriordb/database.json`` covers posteriordb at the suite's commit, every
registered posterior has a suite status or says why not, the posteriors with a posteriordb
reference that are not in the suite are pinned (none drops out silently), ``ckam-bench list
posteriordb --all`` prints them, and docs/posteriordb.md's table is what the code produces."""

import json
from pathlib import Path

import pytest

from ckam_bench.posteriordb import NOT_SHIPPED, POSTERIORDB_COMMIT, SUITE, database, registered
from ckam_bench.posteriordb.database import (HAS_REFERENCE, NO_REFERENCE, NOT_CERTIFIED, NOT_YET, STATUSES,
                                             SUITE_HARNESS, SUITE_POSTERIORDB, UNDETERMINED)
from ckam_bench.posteriordb.hard import HARD
from ckam_bench.posteriordb.highdim import HIGHDIM
from ckam_bench.posteriordb.later import LATER

ROOT = Path(__file__).resolve().parents[1]

WITH_A_POSTERIORDB_REFERENCE_NOT_IN_THE_SUITE: set[str] = set()
# v1.0's reference whose draws the mirror lacks (NOT_SHIPPED), mcycle_gp-accel_gp, and the
# references posteriordb added after v1.0 (database.json's "later"): all 17 joined the suite,
# with a reference the harness certified (ckam_bench/posteriordb/later.py's LATER)
"""Every posteriordb posterior that has a posteriordb reference and is not in the suite. A
posterior leaves this set only by joining the suite (then its status says so); the set changes
only by an edit here, never silently."""


@pytest.fixture(scope="module")
def rows():
    """Every posterior's status, with PyMC (the harness references are looked up: ~5 s, once)."""
    return database.statuses()


def test_the_listing_is_posteriordb_at_the_suites_commit():
    listing = database.listing()
    assert listing["source"]["commit"] == POSTERIORDB_COMMIT
    assert listing["source"]["repository"] == "github.com/stan-dev/posteriordb"
    assert "BSD-3-Clause" in listing["source"]["licence"]
    entries = database.entries()
    names = [e.name for e in entries]
    assert len(names) == len(set(names)) == 147 and names == sorted(names)
    assert all(e.name == f"{e.data}-{e.model}" and e.dim > 0 for e in entries)
    # posteriordb's 46 reference sets of v1.0 (47 posteriors: the centred eight schools shares one)
    assert len({e.reference for e in entries if e.reference}) == 46
    assert sum(e.reference is not None for e in entries) == 47
    assert {e.name for e in entries if e.draws == "missing"} == set(NOT_SHIPPED)
    assert all((e.draws is None) == (e.reference is None) for e in entries)
    # a later reference only where v1.0 had none, with its date and the commits read
    later = [e for e in entries if e.later]
    assert later and all(e.reference is None and e.later["added"] > listing["source"]["date"] for e in later)
    commits = set(listing["later_references"]["commits"])
    assert all(e.later["summaries"] in commits and e.later["draws"] in commits | {None} for e in later)
    assert (ROOT / "ckam_bench" / "posteriordb" / "database.json").stat().st_size < 40_000  # compact


def test_every_posterior_has_exactly_one_status(rows):
    assert [r.entry.name for r in rows] == [e.name for e in database.entries()]
    for r in rows:
        assert r.status in STATUSES and r.status != UNDETERMINED  # PyMC is installed here
        assert bool(r.why) == (r.status == NOT_YET), r.entry.name
        assert (r.kind in (HAS_REFERENCE, NOT_CERTIFIED, NO_REFERENCE)) == (r.status == NOT_YET)
    counts = database.counts(rows)
    assert sum(counts.values()) == len(rows)
    assert database.summary(rows).startswith(f"{len(rows)} posteriors of posteriordb {POSTERIORDB_COMMIT[:7]}")


def test_every_suite_posterior_has_a_suite_status(rows):
    from ckam_bench.posteriordb.subset import suite

    status = {r.entry.name: r for r in rows}
    assert set(registered()) <= set(status)  # a registered posterior posteriordb lacks: regenerate
    for p in suite():
        assert status[p.name].status == (SUITE_POSTERIORDB if p.name in SUITE else SUITE_HARNESS), p.name
    assert {n for n, r in status.items() if r.status in (SUITE_POSTERIORDB, SUITE_HARNESS)} == \
        {p.name for p in suite()}
    assert all(status[name].status == SUITE_POSTERIORDB for name in SUITE)


def test_a_registered_posterior_without_a_reference_says_why(rows):
    not_certified = {r.entry.name: r for r in rows if r.kind == NOT_CERTIFIED}
    assert set(not_certified) == set(database.WHY_NOT_CERTIFIED) <= set(HIGHDIM) | set(HARD)
    for name, r in not_certified.items():
        assert database.WHY_NOT_CERTIFIED[name] in r.why and registered()[name].function in r.why


def test_the_posteriors_with_a_posteriordb_reference_outside_the_suite_are_pinned(rows):
    with_reference = {r.entry.name for r in rows if r.kind == HAS_REFERENCE}
    assert with_reference == WITH_A_POSTERIORDB_REFERENCE_NOT_IN_THE_SUITE
    assert len(with_reference) == 0
    # every posterior posteriordb gives a reference for is in the suite or in that set
    referenced = {e.name for e in database.entries() if e.reference or e.later}
    in_suite = {r.entry.name for r in rows if r.status in (SUITE_POSTERIORDB, SUITE_HARNESS)}
    assert referenced <= in_suite | with_reference
    by_name = {r.entry.name: r for r in rows}
    assert all(by_name[n].status == SUITE_HARNESS for n in LATER)
    # posteriordb's draws are not shipped (NOT_SHIPPED), a reference the harness certified is
    assert set(NOT_SHIPPED) == {"mcycle_gp-accel_gp"} <= set(LATER)
    assert by_name["mcycle_gp-accel_gp"].entry.posteriordb_reference() == "v1.0, draws missing from the mirror"
    assert by_name["GLMM_Poisson_data-GLMM_Poisson_model"].why == \
        "no reference in posteriordb and none certified by the harness"


def test_the_command_lists_the_whole_database(capsys):
    from ckam_bench.commands.discovery import list_command

    assert list_command(["posteriordb", "--all"]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert sorted(rows) == [e.name for e in database.entries()]
    titles = [line for line in out.splitlines() if line and not line.startswith(" ")]
    harness = len(HIGHDIM) + len(LATER) + len(HARD) - len(database.WHY_NOT_CERTIFIED)
    assert titles[:3] == [f"{database.TITLES[SUITE_POSTERIORDB]} (46)", f"{database.TITLES[SUITE_HARNESS]} ({harness})",
                          f"{database.TITLES[NOT_YET]} ({147 - 46 - harness})"]  # posteriordb's 147
    assert titles[-1] == f"posteriordb: {database.summary()}"
    for name, why in database.WHY_NOT_CERTIFIED.items():  # registered, each says why it is not in the suite
        line = next(ln for ln in out.splitlines() if ln.startswith(f"  {name} "))
        assert f"registered, reference not certified ({registered()[name].function}: {why}" in line
        assert f"d={registered()[name].dim}, posteriordb reference: none" in line
    line = next(ln for ln in out.splitlines() if ln.startswith("  irt_2pl-irt_2pl "))  # certified via its twin
    assert "not certified" not in line and "d=144, posteriordb reference: none" in line
    for args, words in ((["sampler", "--all"], "ckam-bench list posteriordb --all"),
                        (["posteriordb", "--every"], "unknown flag '--every'"),
                        (["posteriordb", "--all", "posteriordb.subset=[nes*]"], "takes no posteriordb.subset")):
        assert list_command(args) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and words in captured.err and len(captured.err.strip().splitlines()) == 1


def test_without_pymc_a_harness_reference_is_not_looked_up(monkeypatch, capsys):
    import ckam_bench.posteriordb as posteriordb

    monkeypatch.setattr(posteriordb, "pymc_installed", lambda: False)
    rows = database.statuses()
    status = {r.entry.name: r for r in rows}
    for name in [*HIGHDIM, *LATER, *HARD]:
        assert status[name].status == UNDETERMINED and "ckam-bench[pymc]" in status[name].why
    assert all(status[name].status == SUITE_POSTERIORDB for name in SUITE)
    assert database.counts(rows)[UNDETERMINED] == len(HIGHDIM) + len(LATER) + len(HARD)
    from ckam_bench.commands.discovery import print_database

    print_database()
    out = capsys.readouterr().out
    assert f"{database.TITLES[UNDETERMINED]} ({len(HIGHDIM) + len(LATER) + len(HARD)})" in out


def test_the_docs_table_is_what_the_code_produces(rows):
    text = (ROOT / "docs" / "posteriordb.md").read_text()
    assert database.BEGIN in text and database.END in text
    assert database.replace_docs_table(text, rows) == text, \
        "docs/posteriordb.md: run python scripts/posteriordb_database.py docs"
    for status, n in database.counts(rows).items():
        assert f"| {status} | {n} |" in text
