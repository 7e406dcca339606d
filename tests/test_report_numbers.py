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


# ---------------------------------------------------------------------------- posteriordb suite
def test_discarded_count_is_the_moment_metrics_rule():
    """One function says how many collected samples b² leaves out, for an integer count and a
    fraction; the metric's moments_discarded is it at every checkpoint."""
    from ckam_bench.metrics.moments import MomentErrors, discarded_count
    from ckam_bench.targets.gaussians import gauss2d_corr

    assert discarded_count(1000, 5000) == 1000 and discarded_count(1000, 600) == 600
    assert discarded_count(0.0, 5000) == 0
    for discard in (1000, 0.1, 0.25):
        metric = MomentErrors(gauss2d_corr(), discard=discard)
        rng = np.random.default_rng(0)
        for block in (7, 300, 1, 2500, 4000):
            metric.update(rng.standard_normal((block, 2)))
            m = discarded_count(discard, metric.n)
            if m < metric.n:
                assert metric.compute()["moments_discarded"] == m
        assert 0.1 * 6808 / 1.05 <= discarded_count(0.1, 6808) <= 0.1 * 6808


def _suite_run(tmp_path, discard, collected=3000, stride=2, warm=1000):
    """A stored run whose first ``warm`` collected draws sit far off (the warm-up), then N(0, 1);
    ``stride``: the thinning of the stored draws."""
    import pandas as pd

    from ckam_bench.engine import rundir, store
    from ckam_bench.report.aggregate import StoredRun

    path = tmp_path / f"run_{discard}"
    path.mkdir()
    index = np.arange(0, collected, stride)
    x = np.random.default_rng(1).standard_normal((index.size, 2))
    x[index < warm] += 50.0
    samples = pd.DataFrame({"index": index, "x0": x[:, 0], "x1": x[:, 1]})
    rundir.write_parquet(samples, path / store.SAMPLES)
    trace = pd.DataFrame({"checkpoint": [0, 1], "n_collected": [collected // 2, collected],
                          "bias2": [0.5, 0.001], "n_grad": 0.0, "n_density": [10.0, 20.0]})
    config = {"metrics": {"moments": {"_target_": "ckam_bench.metrics.moments.MomentErrors",
                                      "discard": discard}}}
    return StoredRun(path, {"flags": []}, config, {}, trace)


def test_an_integer_discard_is_a_count_in_the_suites_pass_fail(tmp_path, monkeypatch):
    from ckam_bench.report import posteriordb_suite as suite

    monkeypatch.setattr(suite, "_reference_moments", lambda name: (np.zeros(2), np.ones(2)))
    run = _suite_run(tmp_path, 1000)  # the first 1000 collected draws: the warm-up
    assert suite.run_passes(run, "p") is True
    assert suite.kept_draws(run, run.samples()).shape[0] == 1000  # indices 1000, 1002, …
    short = _suite_run(tmp_path, 0.1)  # leaves out ~300 of 3000: the warm-up stays in
    assert suite.run_passes(short, "p") is False


AM = {"_target_": "x.AM", "step_size": 1.0, "rate": {"_target_": "x.Constant", "value": 0.1}}
POSTERIOR = {"bimodal": "a", "gmm2d": "b", "banana": "c"}


def _suite_tables(monkeypatch, root, passes=True):
    from ckam_bench.report import posteriordb_suite as suite

    monkeypatch.setattr(suite, "_posterior", lambda run: POSTERIOR[run.target])
    monkeypatch.setattr(suite, "run_passes", lambda run, name: passes)
    results = agg.load_results(root)
    return {t.stem: t for t in suite.tables(results)}, results


def test_suite_rows_are_keyed_by_configuration(tmp_path, monkeypatch):
    """(am, ridge=0.001) on two posteriors is one suite row although its per-target labels
    differ; two configurations sharing the label "am" on different posteriors are two rows."""
    from tests.test_report import make_run

    for target, ridge in (("bimodal", 0.001), ("bimodal", 0.1), ("gmm2d", 0.001), ("banana", 0.01)):
        make_run(tmp_path, target, "am", sampler_node={**AM, "ridge": ridge}, tag=f"_{ridge}")
    out, _ = _suite_tables(monkeypatch, tmp_path)
    suite = {row[1]: row for row in out["posteriordb_suite"].rows}
    assert sorted(suite) == ["am [ridge=0.001]", "am [ridge=0.01]", "am [ridge=0.1]"]
    assert suite["am [ridge=0.001]"][4] == "2"  # posteriors run
    assert [r[1] for r in out["posteriordb_b"].rows] == ["am [ridge=0.001]"]


def test_suite_ties_share_a_rank_and_a_flagged_run_ranks_last(tmp_path, monkeypatch):
    """rw stuck (∞, flagged by the runner) never ranks above a configuration that only fails
    the reference; ∞ ties go to the final b²; equal values share a rank; the per-target
    ranking names the same order (one rule)."""
    from ckam_bench.report import ranking
    from tests.test_report import make_run

    make_run(tmp_path, "bimodal", "rw", sampler_node=AM, columns={"bias2": np.zeros(10) + 1e-9},
             status_extra={"flags": ["stuck"]})
    make_run(tmp_path, "bimodal", "am", sampler_node=AM, columns={"bias2": np.full(10, 0.5)})
    for sampler in ("gam", "nuts"):
        make_run(tmp_path, "bimodal", sampler, sampler_node=AM, columns={"bias2": np.full(10, 0.2)})
    out, results = _suite_tables(monkeypatch, tmp_path, passes=False)
    rows = [(r[0], r[1].split(" ")[0]) for r in out["posteriordb_a"].rows]
    assert rows == [("1", "gam"), ("1", "nuts"), ("3", "am"), ("4", "rw")]
    assert out["posteriordb_a"].rows[3][1].startswith("rw ⚠ stuck (1/1 seeds)")
    assert "fails the reference" in out["posteriordb_a"].rows[0][1]
    suite = [(r[0], r[1]) for r in out["posteriordb_suite"].rows]
    assert suite == [("1", "gam"), ("1", "nuts"), ("3", "am"), ("4", "rw")]
    per_target = ranking.ranking_table(results, "bimodal")
    assert [(r[0], r[1].split(" ")[0]) for r in per_target.rows] == rows


def test_the_suite_table_compares_configurations_on_the_posteriors_all_of_them_ran(tmp_path,
                                                                                   monkeypatch):
    """am passes on three posteriors, gam on the one both ran, where it is faster: counting
    whichever posteriors each ran on would rank am first by coverage alone. The suite table
    counts passes, mean rank and wins on the common posterior, says so, and says what am did
    beyond it; with equal coverage it says that."""
    from tests.test_report import make_run

    slow = {"bias2": np.r_[np.full(6, 0.5), np.full(4, 0.001)]}
    fast = {"bias2": np.r_[np.full(2, 0.5), np.full(8, 0.001)]}
    for target in ("bimodal", "gmm2d", "banana"):
        make_run(tmp_path, target, "am", sampler_node=AM, columns=slow)
    make_run(tmp_path, "bimodal", "gam", sampler_node=AM, columns=fast)
    out, _ = _suite_tables(monkeypatch, tmp_path)
    table = out["posteriordb_suite"]
    rows = [dict(zip(table.header, r)) for r in table.rows]
    assert [(r["rank"], r["sampler"]) for r in rows] == [("1", "gam"), ("2", "am")]
    assert [(r["posteriors passed"], r["mean rank"], r["posteriors run"], r["ranked first"])
            for r in rows] == [("1", "1.00", "1", "1"), ("1", "2.00", "3", "0")]
    note = next(n for n in table.notes if n.startswith("compared on"))
    assert note == ("compared on the 1 posteriors every configuration ran on, of 3 in these "
                    "results; beyond them: am on 2 more (passed 2)")
    make_run(tmp_path, "gmm2d", "gam", sampler_node=AM, columns=fast)
    make_run(tmp_path, "banana", "gam", sampler_node=AM, columns=fast)
    out, _ = _suite_tables(monkeypatch, tmp_path)
    assert "every configuration ran on the same 3 posteriors" in out["posteriordb_suite"].notes


def test_suite_counts_gradient_and_density_evaluations_apart(tmp_path, monkeypatch):
    from tests.test_report import make_run

    later = np.r_[np.full(5, 0.5), np.full(5, 0.001)]
    make_run(tmp_path, "bimodal", "rw", sampler_node=AM, columns={"bias2": later})
    make_run(tmp_path, "bimodal", "nuts", sampler_node=AM,
             columns={"bias2": later, "n_grad": np.arange(10) * 7 + 7})
    out, _ = _suite_tables(monkeypatch, tmp_path)
    table = out["posteriordb_a"]
    rows = {r[1]: dict(zip(table.header, r)) for r in table.rows}
    assert rows["rw"]["grad evals to b²<0.01"] == "–"
    assert rows["nuts"]["grad evals to b²<0.01"] == "42"
    assert rows["rw"]["density evals to b²<0.01"] == rows["nuts"]["density evals to b²<0.01"]
    assert "per-target ranking's rule" in table.notes[0]


def test_suite_ranks_failing_runs_below_passing_ones_and_marks_non_diminishing(tmp_path,
                                                                             monkeypatch):
    """A configuration whose b² dipped below 0.01 early but that fails against the reference
    ranks below every passing one; a non-diminishing (paper preset) one carries †."""
    from ckam_bench.report import posteriordb_suite as suite
    from tests.test_report import make_run

    for sampler, k in (("early_but_wrong", 1), ("slow", 6), ("fast", 3), ("paper", 4)):
        extra = {"sampler_info": {"adaptation": "non-diminishing"}} if sampler == "paper" else {}
        make_run(tmp_path, "bimodal", sampler, sampler_node=AM, status_extra=extra,
                 columns={"bias2": np.r_[np.full(k, 0.5), np.full(10 - k, 0.001)]})
    monkeypatch.setattr(suite, "_posterior", lambda run: "a")
    monkeypatch.setattr(suite, "run_passes", lambda run, name: run.sampler != "early_but_wrong")
    per_posterior, overall = suite.tables(agg.load_results(tmp_path))
    assert [row[1].split(" ⚠")[0] for row in per_posterior.rows] == [
        "fast", "paper †", "slow", "early_but_wrong"]
    assert per_posterior.rows[-1][7] == "fail (1/1 seeds)"
    assert any("non-diminishing" in note for note in per_posterior.notes + overall.notes)


def test_the_posterior_table_summarises_only_the_rows_it_shows(tmp_path, monkeypatch):
    """A block of more coordinates than MAX_ROWS: its rows are the first MAX_ROWS of arviz-stats'
    summary of every coordinate, computed on those alone; the note counts them all."""
    import arviz_stats as azs

    from ckam_bench.interop import to_datatree
    from ckam_bench.report import posterior
    from tests.test_report import make_run

    monkeypatch.setattr(posterior, "MAX_ROWS", 10)
    for seed in (0, 1):
        make_run(tmp_path, "gmm32", "rw", seed=seed)
    results = agg.load_results(tmp_path)
    table = posterior.posterior_table(results, "gmm32")
    assert len(table.rows) == 10
    assert any("the first 10 of 32 variables shown" in note for note in table.notes)
    full = azs.summary(to_datatree(results.groups("gmm32")[0].runs, stats=False), var_names=["x"],
                       ci_prob=0.9, ci_kind="eti", round_to="none")
    for row, (_, s) in zip(table.rows, full.iloc[:10].iterrows()):
        assert row[2:9] == [posterior._number(s["mean"]), posterior._number(s["sd"]),
                            posterior._number(s["eti90_lb"]), posterior._number(s["eti90_ub"]),
                            posterior._number(round(s["ess_bulk"])),
                            posterior._number(round(s["ess_tail"])), f"{s['r_hat']:.3f}"]


def test_leading_elements_keep_a_prefix_in_c_order():
    import xarray as xr

    from ckam_bench.report.posterior import leading_elements

    post = xr.Dataset({"a": (("chain", "draw", "a_dim_0"), np.zeros((2, 5, 3))),
                       "L": (("chain", "draw", "L_dim_0", "L_dim_1"), np.zeros((2, 5, 4, 3))),
                       "b": (("chain", "draw"), np.zeros((2, 5)))})
    cut, kept = leading_elements(post, ["a", "L", "b"], 8)  # a's 3, then 5 of L: 2 rows of 3
    assert kept == ["a", "L"] and (cut["a"].sizes["a_dim_0"], cut["L"].sizes["L_dim_0"]) == (3, 2)
    cut, kept = leading_elements(post, ["a", "L", "b"], 16)
    assert kept == ["a", "L", "b"] and cut["L"].sizes["L_dim_0"] == 4
    cut, kept = leading_elements(post, ["a", "L", "b"], 2)
    assert kept == ["a"] and cut["a"].sizes["a_dim_0"] == 2
