"""ArviZ interop: stored runs (one, or the seeds of one configuration as chains) as a DataTree."""

import os
import sys

import arviz_stats as azs
import numpy as np
import pandas as pd
import pytest

from ckam_bench.interop import aligned_positions, seed_diagnostics, to_datatree
from ckam_bench.metrics.ess import ess_per_dim
from ckam_bench.report.aggregate import load_results
from ckam_bench.engine.store import load_run
from tests.test_report import make_run, sampler_cfg
from tests import clirun


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    """Two real runs (seeds 0 and 1) of one configuration, each in its own folder."""
    root = tmp_path_factory.mktemp("real")
    for seed in (0, 1):
        proc = clirun.run(
            [sys.executable, "-m", "ckam_bench.commands.cli", "sampler=am", "target=gauss2d_corr",
             f"seed={seed}", "budget.seconds=0.3", "progress=false",
             f"hydra.run.dir={root / f'am_s{seed}'}"],
            capture_output=True, text=True, timeout=300,
            env={**os.environ, "HYDRA_FULL_ERROR": "1"})
        assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def test_stored_samples_round_trip_with_arviz_stats_ess(tmp_path):
    rng = np.random.default_rng(3)
    for seed in (0, 1):
        ar = np.zeros((500, 2))
        for i in range(1, 500):  # AR(1) chains: ESS well below the sample size
            ar[i] = 0.8 * ar[i - 1] + rng.standard_normal(2)
        make_run(tmp_path, "gmm2d", "rw", seed=seed, samples=ar, n_diag=700)
    dt = to_datatree(tmp_path)
    runs = load_results(tmp_path).runs
    for chain, run in enumerate(sorted(runs, key=lambda r: r.seed)):
        x = run.samples()[["x0", "x1"]].to_numpy()
        np.testing.assert_array_equal(dt["posterior"]["x"].values[chain], x)
        one = to_datatree(run)
        np.testing.assert_allclose(azs.ess(one, method="bulk")["x"].values, ess_per_dim(x),
                                   rtol=1e-9)
        np.testing.assert_array_equal(dt["sample_stats"]["accepted"].values[chain],
                                      run.diagnostics()["accepted"])
    assert dt["sample_stats"].sizes["draw"] == 700
    assert 20 < float(azs.ess(dt, method="bulk")["x"].min()) < 500


@pytest.mark.slow
def test_one_run_round_trips_samples_stats_and_ess(real_runs):
    folder = real_runs / "am_s0"
    dt = to_datatree(folder)
    run = load_run(folder)
    x = run.samples[[c for c in run.samples.columns if c != "index"]].to_numpy()
    posterior = dt["posterior"]["x"]
    assert posterior.dims == ("chain", "draw", "dim") and posterior.shape == (1, *x.shape)
    np.testing.assert_array_equal(posterior.values[0], x)
    np.testing.assert_array_equal(dt["posterior"]["index"].values[0], run.samples["index"])
    stats = dt["sample_stats"]
    np.testing.assert_array_equal(stats["acceptance_rate"].values[0],
                                  run.diagnostics["accept_prob"])
    np.testing.assert_array_equal(stats["step_size"].values[0], run.diagnostics["step_size"])
    np.testing.assert_array_equal(stats["iteration"].values[0], run.diagnostics["iteration"])
    # arviz-stats' own bulk ESS of the converted (stored, thinned) samples = the run's ESS of
    # its stored samples at its end; ``ess_min`` is the whole chain's, not the store's
    ess = azs.ess(dt, method="bulk")["x"].values
    np.testing.assert_allclose(ess, ess_per_dim(x), rtol=1e-9)
    assert run.trace["ess_min_stored"].iloc[-1] == pytest.approx(ess.min(), rel=1e-9)
    assert dt.attrs["ckam_sampler"] == "am" and dt.attrs["ckam_seeds"] == [0]


@pytest.mark.slow
def test_seeds_of_one_configuration_become_chains(real_runs):
    dt = to_datatree([real_runs / "am_s1", real_runs / "am_s0"])
    assert dt.attrs["ckam_seeds"] == [0, 1]
    frames = [load_run(real_runs / f"am_s{seed}").samples for seed in (0, 1)]
    # the seeds aligned on collected iterations (aligned_positions), not cut to their first n
    positions = aligned_positions([f["index"].to_numpy() for f in frames])
    for chain, (frame, where) in enumerate(zip(frames, positions)):
        np.testing.assert_array_equal(dt["posterior"]["x"].values[chain],
                                      frame[["x0", "x1"]].to_numpy()[where])
        np.testing.assert_array_equal(dt["posterior"]["index"].values[chain],
                                      frame["index"].to_numpy()[where])
    diag = seed_diagnostics(load_results(real_runs).runs)
    assert diag["rhat"] == pytest.approx(float(azs.rhat(dt)["x"].max()))
    assert diag["mcse"] == pytest.approx(float(azs.mcse(dt, method="mean")["x"].max()))
    assert 0.99 < diag["rhat"] < 1.1
    # the whole folder holds one configuration: one call converts it
    assert to_datatree(real_runs)["posterior"].sizes["chain"] == 2


def test_runs_of_different_configurations_are_refused(tmp_path):
    make_run(tmp_path, "gmm2d", "am", seed=0)
    node = sampler_cfg("am")
    node["rate"]["value"] = 0.01
    make_run(tmp_path, "gmm2d", "am", seed=1, sampler_node=node)
    with pytest.raises(ValueError, match="differ in sampler.rate.value"):
        to_datatree(tmp_path)
    with pytest.raises(ValueError, match="no usable run"):
        to_datatree(tmp_path / "nothing")


def test_unequal_chains_are_cut_to_the_shortest(tmp_path):
    make_run(tmp_path, "gmm2d", "rw", seed=0, n_samples=300)
    make_run(tmp_path, "gmm2d", "rw", seed=1, n_samples=200)
    dt = to_datatree(tmp_path)
    assert dt["posterior"].sizes["draw"] == 200
    assert dt["posterior"].attrs["truncated_to"] == 200
    assert isinstance(dt["posterior"].to_dataset().to_dataframe(), pd.DataFrame)


def test_seeds_stored_with_different_strides_are_aligned_on_collected_iterations(tmp_path):
    """Issue 29 §8: seed 0 stored every 2nd collected draw of 2000, seed 1 every draw of its
    first 1000 (a shorter or finer-thinned run). Cutting both to their first 1000 draws
    compared seed 1's iterations 0–999 with seed 0's 0–1998; aligned, both chains hold the
    draws at collected iterations 0, 2, …, 998, and R-hat is arviz-stats' on those draws."""
    from ckam_bench.engine import rundir, store
    from ckam_bench.interop import aligned_positions

    rng = np.random.default_rng(8)
    draws = {}
    for seed, index in ((0, np.arange(0, 2000, 2)), (1, np.arange(1000))):
        x = np.column_stack([index / 1000.0 + rng.standard_normal(index.size),
                             rng.standard_normal(index.size)])
        path = make_run(tmp_path, "gmm2d", "rw", seed=seed, samples=x)
        frame = pd.DataFrame({"index": index, "x0": x[:, 0], "x1": x[:, 1]})
        rundir.write_parquet(frame, path / store.SAMPLES)
        draws[seed] = (index, x)
    dt = to_datatree(tmp_path)
    index = dt["posterior"]["index"].values
    np.testing.assert_array_equal(index[0], np.arange(0, 1000, 2))
    np.testing.assert_array_equal(index[1], index[0])
    assert dt["posterior"].attrs["common_range"] == [0, 998]
    aligned = np.stack([draws[0][1][:500, 0], draws[1][1][::2, 0]])
    first_n = np.stack([draws[0][1][:, 0], draws[1][1][:, 0]])
    diag = seed_diagnostics(load_results(tmp_path).runs)
    assert float(dt["posterior"]["x"].values[:, :, 0].std()) > 0
    np.testing.assert_allclose(dt["posterior"]["x"].values[:, :, 0], aligned)
    assert float(azs.rhat(dt)["x"].values[0]) == pytest.approx(float(azs.rhat(aligned)))
    assert diag["rhat"] == pytest.approx(float(np.max(azs.rhat(dt)["x"].values)))
    assert abs(float(azs.rhat(first_n)) - float(azs.rhat(aligned))) > 0.02  # the cut's error
    assert [p.tolist() for p in aligned_positions([[0, 4, 8], [1, 2, 3, 4, 5, 6, 7, 9]])] == \
        [[1, 2], [3, 6]]  # common range [1, 8]: grid 4, 8 (the chain with fewer draws there)
