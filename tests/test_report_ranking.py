"""Issue 30 §1: rankings that mean something — costs censored at the first checkpoint tie,
the report says which key decided, --rank-by, and the top two against the seed spread."""

import numpy as np
import pytest

from ckam_bench.report import aggregate as agg
from ckam_bench.report import ranking
from ckam_bench.targets.mixtures import bimodal
from tests.test_report import make_run


def _rows(table):
    return {row[1].split(" ")[0]: dict(zip(table.header, row)) for row in table.rows}


def _sweep(root, seeds=(0, 1, 2)):
    """rw, am and gam all below b² = 0.01 from the first checkpoint (as on gauss2d_corr in
    2 s): am has the lowest KL."""
    x = bimodal().sample(400, np.random.default_rng(0))
    below = {"bias2": np.full(10, 0.001)}
    for seed in seeds:
        make_run(root, "bimodal", "gam", seed=seed, samples=x, kl_scale=4.0, columns=below)
        make_run(root, "bimodal", "am", seed=seed, samples=x, kl_scale=0.1, columns=below)
        make_run(root, "bimodal", "rw", seed=seed, samples=x, kl_scale=2.0, columns=below)


def test_a_cost_censored_at_the_first_checkpoint_is_a_tie_shown_as_at_most(tmp_path):
    _sweep(tmp_path)
    table = ranking.ranking_table(agg.load_results(tmp_path), "bimodal")
    rows = _rows(table)
    assert rows["am"]["s to b²<0.01"] == "≤ 0.05"
    assert [r[1].split(" ")[0] for r in table.rows] == ["am", "rw", "gam"]  # by final KL
    assert rows["am"]["decided by"].startswith("final KL")
    assert rows["rw"]["decided by"] == rows["gam"]["decided by"] == "final KL"
    assert any("censored" in n and "checkpoint.first" in n for n in table.notes)
    assert table.notes[0].startswith("ranked on s to b²<0.01")


def test_a_censored_cost_ranks_ahead_of_a_measured_one(tmp_path):
    x = bimodal().sample(400, np.random.default_rng(0))
    later = np.r_[np.full(5, 0.5), np.full(5, 0.001)]
    for seed in (0, 1):
        make_run(tmp_path, "bimodal", "rw", seed=seed, samples=x, kl_scale=0.1,
                 columns={"bias2": later})
        make_run(tmp_path, "bimodal", "am", seed=seed, samples=x, kl_scale=9.0,
                 columns={"bias2": np.full(10, 0.001)})
    rows = _rows(ranking.ranking_table(agg.load_results(tmp_path), "bimodal"))
    assert rows["am"]["rank"] == "1" and rows["am"]["decided by"].startswith("s to b²<0.01")
    assert not rows["rw"]["s to b²<0.01"].startswith("≤")


def test_rank_by_chooses_the_first_key(tmp_path):
    _sweep(tmp_path)
    res = agg.load_results(tmp_path)
    table = ranking.ranking_table(res, "bimodal", rank_by="kl")
    assert table.notes[0].startswith("ranked on final KL") and "rank_by" in table.notes[0]
    table = ranking.ranking_table(res, "bimodal", rank_by="mean_error")  # no run has it
    assert any("not ranked on mean error (rank_by)" in n for n in table.notes)


def test_three_seeds_are_too_few_to_tell_the_top_two_apart(tmp_path):
    _sweep(tmp_path)
    table = ranking.ranking_table(agg.load_results(tmp_path), "bimodal")
    assert "too few seeds" in _rows(table)["am"]["decided by"]
    note = next(n for n in table.notes if n.startswith("top two"))
    assert "too few seeds to rank them" in note and "3 and 3 seeds" in note


def test_five_seeds_tell_a_clear_difference_from_the_spread(tmp_path):
    _sweep(tmp_path, seeds=range(5))
    table = ranking.ranking_table(agg.load_results(tmp_path), "bimodal")
    note = next(n for n in table.notes if n.startswith("top two"))
    assert "larger than the seed-to-seed spread" in note and "p = 0.0079" in note


def test_one_seed_cannot_rank_at_all(tmp_path):
    _sweep(tmp_path, seeds=(0,))
    table = ranking.ranking_table(agg.load_results(tmp_path), "bimodal")
    assert any(n.startswith("one seed per configuration") for n in table.notes)


def test_seed_spread_test_by_hand():
    short, note = ranking.seed_spread_test([1, 2, 3, 4], [5, 6, 7, 8], "a vs b")
    assert short == "p = 0.029"  # 2 of the 70 splits are as extreme
    short, _ = ranking.seed_spread_test([1, 5, 3, 7], [2, 6, 4, 8], "a vs b")
    assert "within spread" in short
    short, _ = ranking.seed_spread_test([-np.inf] * 4, [-np.inf] * 4, "a vs b")
    assert short == "p = 1, within spread"  # censored ties


def test_figures_cli_rank_by(tmp_path, capsys):
    from ckam_bench.report.cli import main

    _sweep(tmp_path / "runs")
    assert main([str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--figures", "none",
                 "--generic", "none", "--rank-by", "ess_per_second"]) == 0
    text = (tmp_path / "out" / "ranking_bimodal.md").read_text()
    assert "ranked on min ESS/s" in text
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "runs"), "--out", str(tmp_path / "o2"), "--rank-by", "nope"])
    assert exc.value.code == 2


def test_the_ranking_says_which_runs_stopped_early_and_what_that_censors():
    """budget.early_stop's runs are named in the ranking's notes: how many, the rule, what is
    censored (the cost holds unless b² rose again; final values at the stop) and the futile ones."""
    from types import SimpleNamespace

    from ckam_bench.report.stops import early_stop_note

    rule = {"metric": "bias2", "threshold": 0.01, "multiple": 4.0, "min_ess": 100.0, "futility": 10.0}

    def run(kind):
        return SimpleNamespace(status={"budget": {"early_stop": rule},
                                       "stopped_early": kind and {"kind": kind}})

    assert early_stop_note([SimpleNamespace(runs=[run(None)])]) is None
    note = early_stop_note([SimpleNamespace(runs=[run("known"), run(None)]),
                            SimpleNamespace(runs=[run("futile")])])
    assert note.startswith("2 of 3 runs stopped early (budget.early_stop: bias2 < 0.01 held from its "
                           "first crossing at cost c up to 4c, min ESS ≥ 100)")
    assert "right-censored at the stop" in note and "final b², KL and min ESS/s are at the stop" in note
    assert note.endswith("1 stopped as futile (b² · cost / budget ≥ 10.0 × 0.01): counted as never "
                         "reaching it, as at the full budget unless b² would have fallen faster than 1/cost")
