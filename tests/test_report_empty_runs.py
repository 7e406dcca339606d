"""Issue 43 §6.1, §6.3 and §6.7 in the report: a run that collected no sample is never ranked and
is named as flagged; one seed without stored draws does not remove its sampler from the
posterior table; a chain too short to trust is named in the ranking's notes. Fabricated run
folders (tests/test_report.make_run), no sampling."""

from __future__ import annotations

import pandas as pd

from ckam_bench.engine import rundir, store
from ckam_bench.report import aggregate as agg
from ckam_bench.report import posterior, posteriordb_suite
from ckam_bench.report.cli import main as figures_main
from ckam_bench.report.ranking import ranking_table
from tests.test_report import make_run

NOTHING = {"sampler_seconds": 0.01, "iterations": 16, "n_collected": 0}


def _sweep(root):
    """rw seeds 0 and 1 and ckam seeds 0 and 1 on gmm2d; rw seed 0 collected nothing, as the
    user's first PyMC run did: marked ``complete`` (reason wall_seconds, no flag) by an earlier
    version, the way its folder still says."""
    empty = make_run(root, "gmm2d", "rw", seed=0, status_extra={"totals": NOTHING,
                                                                "reason": "wall_seconds"})
    for seed in (1,):
        make_run(root, "gmm2d", "rw", seed=seed)
    for seed in (0, 1):
        make_run(root, "gmm2d", "ckam", seed=seed)
    return empty


def test_a_run_that_collected_nothing_is_never_ranked_and_is_named(tmp_path):
    empty = _sweep(tmp_path)
    for include_incomplete in (False, True):
        results = agg.load_results(tmp_path, include_incomplete=include_incomplete)
        assert empty not in {r.path for r in results.runs}
        (skipped,) = [s for s in results.skipped if s.path == empty]
        assert skipped.flags and "no sample was collected" in skipped.flags["no_samples"]
        assert skipped.label == "rw seed 0" and skipped.target == "gmm2d"
    table = ranking_table(results, "gmm2d")
    rows = {row[1].split(" ")[0]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["rw"]["seeds"] == "1" and rows["ckam"]["seeds"] == "2"
    note = next(n for n in table.notes if n.startswith("⚠ not ranked, no sample collected"))
    assert f"rw seed 0 ({empty.name})" in note


def test_an_empty_state_run_is_skipped_with_its_own_sentence(tmp_path):
    sentence = "no sample was collected: the run stopped at the wall-clock cap"
    folder = make_run(tmp_path, "gmm2d", "rw", seed=3, state="empty", status_extra={
        "totals": NOTHING, "flags": ["no_samples"], "flag_notes": {"no_samples": sentence}})
    (skipped,) = agg.load_results(tmp_path, include_incomplete=True).skipped
    assert skipped.path == folder and skipped.flags == {"no_samples": sentence}
    assert skipped.reason == f"⚠ no_samples: rw seed 3: {sentence}"


def test_the_html_report_lists_the_empty_run_as_flagged(tmp_path, capsys):
    empty = _sweep(tmp_path / "runs")
    out = tmp_path / "out"
    assert figures_main([str(tmp_path / "runs"), "--out", str(out), "--figures", "none",
                         "--generic", "none"]) == 0
    assert f"skipped {empty}: ⚠ no_samples: rw seed 0" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    assert "These runs went wrong" in page and "No run was flagged" not in page
    assert "gmm2d: rw seed 0 (not ranked): no_samples: no sample was collected" in page


def test_one_seed_without_draws_keeps_the_sampler_in_the_posterior_table(tmp_path):
    """Seed 1's samples.parquet is empty: the rw block is over seed 0, with a note naming seed
    1, instead of "no summary (ValueError: … no stored samples)"; a run skipped for collecting
    nothing is named under the table."""
    for seed in (0, 1):
        make_run(tmp_path, "gmm2d", "ckam", seed=seed)
    make_run(tmp_path, "gmm2d", "rw", seed=0)
    bare = make_run(tmp_path, "gmm2d", "rw", seed=1)
    rundir.write_parquet(pd.read_parquet(bare / store.SAMPLES).iloc[:0], bare / store.SAMPLES)
    make_run(tmp_path, "gmm2d", "rw", seed=2, status_extra={"totals": NOTHING})
    results = agg.load_results(tmp_path)
    table = posterior.posterior_table(results, "gmm2d")
    blocks = {row[0] for row in table.rows}
    assert blocks == {"rw", "ckam"}
    assert not any("no summary" in n for n in table.notes)
    assert ("rw: seed(s) 1 stored no draws (samples.parquet missing, unreadable or empty) and are "
            "left out: the block is over seed(s) 0") in table.notes
    rw = [row for row in table.rows if row[0] == "rw"]
    assert all(row[table.header.index("R-hat")] == "n/a (one seed)" for row in rw)
    assert any(n.startswith("not in this table (no sample collected, not ranked): rw seed 2")
               for n in table.notes)


def test_the_suite_verdict_uses_the_seeds_with_draws_and_names_the_missing_one():
    verdict = posteriordb_suite._verdict
    assert verdict([True, None], seeds=[0, 1]) == "pass (seed(s) 1 stored no draws, left out)"
    assert verdict([False, None, True], seeds=[0, 1, 2]) == \
        "fail (1/2 seeds) (seed(s) 1 stored no draws, left out)"
    assert verdict([None, None], seeds=[0, 1]) == "n/a"
    assert verdict([True, True]) == "pass" and verdict([True], missing="x") == "no reference"


def test_the_ranking_names_chains_too_short_to_trust(tmp_path):
    """make_run's min ESS ends at 50 × budget: 1 s gives 50, below the floor of 100."""
    for seed in (0, 1):
        make_run(tmp_path, "gmm2d", "rw", seed=seed, budget=1.0)
        make_run(tmp_path, "gmm2d", "ckam", seed=seed, budget=4.0)
    table = ranking_table(agg.load_results(tmp_path), "gmm2d")
    note = next(n for n in table.notes if n.startswith("⚠ too short to trust"))
    assert "below 100, the ESS floor" in note
    assert "rw seed 0 (50)" in note and "rw seed 1 (50)" in note and "ckam" not in note
