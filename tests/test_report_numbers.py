"""Issue 29 §8: numbers in the report agree with the data — every curve ends at its run's last
checkpoint, ties share a rank, the suite discards what b² discards and keys rows by
configuration, R-hat compares the seeds on the same collected iterations."""

import numpy as np
import pandas as pd
import pytest

from ckam_bench.report import aggregate as agg


def test_every_run_curve_ends_at_its_last_checkpoint():
    """A run shorter than the longest ends at its own last value (the tables' final value),
    not at its second-to-last checkpoint."""
    x_short = np.geomspace(1.0, 10.0, 7)      # ends at 10: no geometric grid point there
    x_long = np.geomspace(1.0, 100.0, 13)
    rows = [{"run_id": "short", "g": "a", "checkpoint": k, "s": x, "kl": 1.0 / (k + 1)}
            for k, x in enumerate(x_short)]
    rows += [{"run_id": "long", "g": "b", "checkpoint": k, "s": x, "kl": 2.0 / (k + 1)}
             for k, x in enumerate(x_long)]
    frame = pd.DataFrame(rows)
    curve = agg.aggregate(frame, "s", "kl", by=["g"])
    for name, final, end in (("a", 1.0 / 7, 10.0), ("b", 2.0 / 13, 100.0)):
        part = curve[curve["g"] == name]
        assert part["x"].iloc[-1] == pytest.approx(end)
        assert part["median"].iloc[-1] == pytest.approx(final)
    # a grid passed in (as the figures do) gets the run ends too
    grid = agg.common_grid(frame, "s", n=50)
    part = agg.aggregate(frame, "s", "kl", by=["g"], grid=grid).query("g == 'a'")
    assert part["median"].iloc[-1] == pytest.approx(1.0 / 7)


# ---------------------------------------------------------------------------- ranking
def _rows(table):
    return {row[1].split(" ")[0]: dict(zip(table.header, row)) for row in table.rows}


def test_ranking_ties_go_to_the_next_key_and_equal_values_share_a_rank(tmp_path):
    """Groups that never reach b² < 0.01 tie at ∞ and are then ordered by final KL (not by
    name); groups equal on every key share a rank."""
    from ckam_bench.report import ranking
    from ckam_bench.targets.mixtures import bimodal
    from tests.test_report import make_run

    rng = np.random.default_rng(4)
    x = bimodal().sample(400, rng)
    never = {"bias2": np.full(10, 0.5)}
    reaches = {"bias2": np.full(10, 0.001)}
    for seed in (0, 1):
        make_run(tmp_path, "bimodal", "ckam", seed=seed, samples=x, columns=reaches)
        make_run(tmp_path, "bimodal", "am", seed=seed, samples=x, kl_scale=5.0, columns=never)
        make_run(tmp_path, "bimodal", "rw", seed=seed, samples=x, kl_scale=1.0, columns=never)
        make_run(tmp_path, "bimodal", "gam", seed=seed, samples=x, kl_scale=1.0, columns=never)
    table = ranking.ranking_table(agg.load_results(tmp_path), "bimodal")
    rows = _rows(table)
    assert rows["ckam"]["rank"] == "1"
    assert rows["rw"]["rank"] == rows["gam"]["rank"] == "2"  # equal on every key
    assert rows["am"]["rank"] == "4"  # ∞ like rw and gam, but a larger final KL
    assert [r[1].split(" ")[0] for r in table.rows] == ["ckam", "gam", "rw", "am"]


def test_a_flagged_run_never_ranks_above_an_unflagged_one(tmp_path):
    from ckam_bench.report import ranking
    from ckam_bench.targets.mixtures import bimodal
    from tests.test_report import make_run

    rng = np.random.default_rng(5)
    x = bimodal().sample(400, rng)
    stuck = {"flags": ["stuck"], "flag_notes": {"stuck": "no move accepted"}}
    for seed in (0, 1):
        make_run(tmp_path, "bimodal", "rw", seed=seed, samples=x, kl_scale=0.1,
                 columns={"bias2": np.full(10, 0.5)}, status_extra=stuck if seed == 0 else None)
        make_run(tmp_path, "bimodal", "am", seed=seed, samples=x, kl_scale=5.0,
                 columns={"bias2": np.full(10, 0.5)})
    rows = _rows(ranking.ranking_table(agg.load_results(tmp_path), "bimodal"))
    assert rows["am"]["rank"] == "1" and rows["rw"]["rank"] == "2"
    assert "⚠ stuck (1/2 seeds)" in rows["rw"]["sampler"]


def test_seeds_that_disagree_are_flagged_and_rank_last(tmp_path):
    """A wrong sampler whose seeds sample different distributions (R-hat > 1.01) is flagged in
    the ranking and the HTML report, and ranks below the correct one despite better numbers."""
    from ckam_bench.report import ranking
    from ckam_bench.report.cli import main as figures_main
    from ckam_bench.targets.mixtures import bimodal
    from tests.test_report import make_run

    rng = np.random.default_rng(6)
    for seed in (0, 1, 2):
        good = bimodal().sample(1000, rng)
        make_run(tmp_path / "runs", "bimodal", "am", seed=seed, samples=good, kl_scale=5.0)
        make_run(tmp_path / "runs", "bimodal", "rw", seed=seed, samples=good + 3.0 * seed,
                 kl_scale=0.1)
    table = ranking.ranking_table(agg.load_results(tmp_path / "runs"), "bimodal")
    rows = _rows(table)
    assert "⚠ seeds disagree (R-hat" in rows["rw"]["sampler"]
    assert float(rows["rw"]["R-hat"]) > 1.01 and float(rows["am"]["R-hat"]) <= 1.01
    assert "⚠" not in rows["am"]["sampler"]
    assert rows["am"]["rank"] == "1" and rows["rw"]["rank"] == "2"
    assert any("flagged by the report's checks" in n and "rw: seeds disagree: R-hat" in n
               for n in table.notes)
    out = tmp_path / "out"
    assert figures_main([str(tmp_path / "runs"), "--out", str(out), "--figures", "none",
                         "--generic", "none"]) == 0
    page = (out / "report.html").read_text()
    assert "flagged by the report's checks (seeds" in page and "bimodal: rw: seeds disagree: R-hat" in page


def test_a_b2_far_beyond_the_runs_own_mcse_is_flagged(tmp_path):
    """b² · n_eff > 10²: the final moment error is more than 10 of the run's own MCSEs."""
    from ckam_bench.report import ranking
    from ckam_bench.targets.mixtures import bimodal
    from tests.test_report import make_run

    x = bimodal().sample(400, np.random.default_rng(7))
    ess = np.full(10, 5000.0)
    make_run(tmp_path, "bimodal", "rw", samples=x,  # √(0.05 · 5000) = 15.8 MCSEs off
             columns={"bias2": np.full(10, 0.05), "ess_min": ess})
    make_run(tmp_path, "bimodal", "am", samples=x,  # √(0.01 · 5000) = 7.1 MCSEs: not flagged
             columns={"bias2": np.full(10, 0.01), "ess_min": ess})
    results = agg.load_results(tmp_path)
    rows = _rows(ranking.ranking_table(results, "bimodal"))
    assert "⚠ b² off (1/1 seeds)" in rows["rw"]["sampler"]
    assert "⚠" not in rows["am"]["sampler"]
    group = next(g for g in results.groups("bimodal") if g.sampler == "rw")
    assert ranking.bias_sigmas(group.runs[0].trace) == pytest.approx(np.sqrt(250.0))
    assert "15.8 MCSEs (seed 0)" in ranking.report_flags(group)["b² off"]
