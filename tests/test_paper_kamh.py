"""KAMH paper figures and tables from real stored runs (tiny kamh_banana_moderate and kamh_glass
sweeps)."""

import os
import sys

import pytest

pytestmark = pytest.mark.slow  # a small sweep through the CLI (~60 s on the shared machine)

from ckam_bench.report import paper_kamh
from ckam_bench.report.aggregate import load_results
from tests import clirun


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("kamh")
    clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", "-m", "experiment=kamh_banana_moderate",
                    "sampler=rw,kamh", "seed=0,1", "budget.max_iterations=800", "burnin=200", "progress=false",
                    f"hydra.sweep.dir={root}"], check=True, capture_output=True)
    return root


def test_figure5_and_table(runs, tmp_path):
    results = load_results(runs)
    assert {r.sampler for r in results.runs} == {"rw", "kamh"}
    names = {d.stem for d in paper_kamh.figures(results)}
    assert names == {"kamh_fig2_banana_moderate", "kamh_fig5_banana_moderate"}
    (table,) = paper_kamh.tables(results)
    assert [row[1] for row in table.rows] == ["SM", "KAMH-LS"]
    assert all(row[2] == "2" for row in table.rows)
    last = paper_kamh._last(results.runs[0])
    assert last["q"].shape == (9,) and 0 <= last["accept"] <= 1


def stand_in_reference(folder):
    """A gp_glass reference file in ``folder`` (a user cache) for rendering tests: 4 × 250 draws of
    N(2, I) marked certified. The shipped certified reference, when present, is found first."""
    import numpy as np

    from ckam_bench.checks.reference import store_reference
    from ckam_bench.targets.gp_classification import gp_glass

    target = gp_glass()
    draws = np.random.default_rng(0).normal(2.0, 1.0, (1000, 9))
    arrays = {"samples": draws.astype(np.float32), "chain": np.repeat(np.arange(4, dtype=np.int16), 250),
              "mean": draws.mean(0), "second_moment": (draws**2).mean(0), "variance": draws.var(0),
              "fourth_moment": (draws**4).mean(0), "mcse_mean": np.full(9, 0.03)}
    certificate = {"reference_id": target.reference_id(), "certified": True, "sampler": "stand-in (test)",
                   "date": "test", "chains": 4, "iterations": 250,
                   "criteria": {"rhat_max": 1.01, "ess_bulk_min": 10000, "ess_tail_min": 10000},
                   "diagnostics": {"rhat_max": 1.0, "ess_bulk_min": 20000.0, "ess_tail_min": 20000.0}}
    store_reference(folder, certificate, arrays)


@pytest.fixture(scope="module")
def glass_runs(tmp_path_factory):
    """A tiny kamh_glass sweep (SM and KAMH-LS, 2 chains, 60 iterations): its mean error and MMD²
    are measured against the certified gp_glass reference (shipped; else a stand-in in a
    temporary cache)."""
    root = tmp_path_factory.mktemp("glass")
    cache = tmp_path_factory.mktemp("cache")
    stand_in_reference(cache)
    clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", "-m", "experiment=kamh_glass",
                    "sampler=rw,kamh", "seed=0,1", "budget.max_iterations=60", "burnin=20",
                    "checkpoint.every=0.5", "progress=false", f"hydra.sweep.dir={root}"],
               check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1",
                                                         "OPENBLAS_NUM_THREADS": "1",
                                                         "CKAM_BENCH_CACHE": str(cache)})
    return root, cache


def test_figure4_and_glass_table(glass_runs):
    results = load_results(glass_runs[0])
    assert {r.sampler for r in results.runs} == {"rw", "kamh"}
    drawn = {d.stem: d for d in paper_kamh.figures(results)}
    assert set(drawn) == {"kamh_fig4_gp_glass"}
    lines = drawn["kamh_fig4_gp_glass"].figure.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["SM (2)", "KAMH-LS (2)"]
    (table,) = paper_kamh.tables(results)
    assert [row[0] for row in table.rows] == ["SM", "KAMH-LS"]
    assert all(row[1] == "2" for row in table.rows)
    for run in results.runs:
        last = run.trace.iloc[-1]
        assert last["mean_error"] > 0 and last["mmd2"] == last["mmd2"]  # measured, not NaN


def test_figure4_from_stored_samples_when_the_runs_had_no_reference(glass_runs, monkeypatch):
    """Runs made before the reference existed (no mean_error / mmd2 in the trace) render from their
    stored samples against the reference found at render time."""
    import numpy as np

    from ckam_bench.metrics.mmd import evenly_spaced, mmd2_unbiased
    from ckam_bench.checks.reference import load_reference

    root, cache = glass_runs
    monkeypatch.setenv("CKAM_BENCH_CACHE", str(cache))
    results = load_results(root)
    for run in results.runs:
        run.trace = run.trace.drop(columns=["mean_error", "mmd2"])
    drawn = {d.stem for d in paper_kamh.figures(results)}
    assert drawn == {"kamh_fig4_gp_glass"}
    run = results.runs[0]
    ref = load_reference(run.build_target())
    curve = paper_kamh.glass_curve(run, ref)
    X = run.samples()[[f"x{j}" for j in range(9)]].to_numpy()
    assert curve["n_collected"].iloc[-1] == run.samples()["index"].iloc[-1] + 1
    assert curve["mean_error"].iloc[-1] == pytest.approx(np.linalg.norm(X.mean(0) - ref.mean))
    # against the reference's 1000 evenly spaced draws, as the run's own MMD metric
    Y = evenly_spaced(ref.samples, 1000)
    assert curve["mmd2"].iloc[-1] == pytest.approx(mmd2_unbiased(X, Y, "polynomial"))
    (table,) = paper_kamh.tables(results)
    assert [row[0] for row in table.rows] == ["SM", "KAMH-LS"]
