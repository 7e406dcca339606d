"""Figures, tables and report from stored runs: aggregation, every figure, tables, the CLI."""

import json
import os
import sys
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from ckam_bench.engine import rundir, store
from ckam_bench.report import aggregate as agg
from ckam_bench.report import drawing, generic, paper_ckam, ranking, tables
from ckam_bench.report.cli import main as figures_main
from ckam_bench.targets.base import Target
from ckam_bench.targets.mixtures import bimodal, gmm2d, gmm32
from tests import clirun

TARGET_CFG = {
    "bimodal": {"_target_": "ckam_bench.targets.mixtures.bimodal", "dim": 2,
                "weights": [0.5, 0.5]},
    "gmm2d": {"_target_": "ckam_bench.targets.mixtures.gmm2d", "dim": 2, "variance": "paper"},
    "gmm32": {"_target_": "ckam_bench.targets.mixtures.gmm32", "dim": 32,
              "means": [-30.0, -15.0, 0.0, 15.0, 30.0], "variance": 15.0},
}
TARGETS = {"bimodal": bimodal, "gmm2d": gmm2d, "gmm32": gmm32}


class Banana(Target):
    """A user's own target (as a user would add one: one class plus one YAML): a bent 3-D
    Gaussian, x0 ~ N(0, 1), x1 | x0 ~ N(bend·(x0² − 1), 1), x2 ~ N(0, 1). Exact draws, no
    exact marginals, no box."""

    def __init__(self, dim: int = 3, bend: float = 0.5):
        super().__init__(dim)
        self.name, self.bend = "banana", float(bend)

    def _log_density(self, x):
        return float(self._log_density_batch(np.asarray(x, float)[None])[0])

    def _log_density_batch(self, X):
        X = np.asarray(X, float)
        y = X[:, 1] - self.bend * (X[:, 0] ** 2 - 1.0)
        return -0.5 * (X[:, 0] ** 2 + y ** 2 + X[:, 2] ** 2)

    def sample(self, n, rng):
        z = rng.standard_normal((int(n), 3))
        z[:, 1] += self.bend * (z[:, 0] ** 2 - 1.0)
        return z


TARGET_CFG["banana"] = {"_target_": "tests.test_report.Banana", "dim": 3, "bend": 0.5}
TARGETS["banana"] = Banana
SCHED = "ckam_bench.schedules."
KERNELS = {
    "matern": {"_target_": "ckam_bench.kernels.Matern", "lengthscale": 2.0, "smoothness": 4.0},
    "gaussian": {"_target_": "ckam_bench.kernels.Gaussian", "lengthscale": 1.0,
                 "median_heuristic": False},
    "none": None,
}


def sampler_cfg(name, kernel="matern", dim=2):
    """Sampler config nodes shaped like conf/sampler/*.yaml after composition."""
    nu = 2.38 / dim ** 0.5
    rm = {"_target_": SCHED + "RobbinsMonro", "epsilon": 0.75, "target_accept": 0.234,
          "scale": 1.0}
    noise = {"_target_": SCHED + "NoiseDecay", "start": 4.0, "end": 1.0, "rate": 0.55,
             "horizon": 10000}
    return {
        "rw": {"_target_": "ckam_bench.samplers.random_walk.RandomWalk", "step_size": 15 ** 0.5},
        "am": {"_target_": "x.AM", "step_size": nu,
               "rate": {"_target_": SCHED + "Constant", "value": 0.1}},
        "rbam": {"_target_": "x.RBAM", "rate": {"_target_": SCHED + "Constant", "value": 0.1}},
        "gam": {"_target_": "x.GAM", "step_size": nu, "adaptation": rm},
        "kam": {"_target_": "x.KAM", "step_size": 2 * nu, "adaptation": rm, "noise": noise,
                "subsample_size": 30, "kernel": KERNELS[kernel]},
        "ckam": {"_target_": "x.CKAM", "step_size": 2 * nu, "adaptation": rm, "noise": noise,
                 "subsample_size": 50, "kernel": KERNELS[kernel],
                 "cycle": {"_target_": SCHED + "CyclicalCosine", "cycle_length": 1000,
                           "beta": 0.4}},
    }[name]


def make_run(root, target="bimodal", sampler="rw", kernel=None, seed=0, state="complete",
             budget=2.0, kl_scale=1.0, n_samples=400, n_diag=3000, sampler_node=None,
             tag="", samples=None, columns=None, status_extra=None):
    """Write a small run folder the way the runner and Hydra do.

    ``tag`` tells apart folders (and run ids) of repeated runs of one seed; ``samples`` are
    the stored states (default: exact draws); ``columns`` adds trace columns (arrays of 10
    values, one per checkpoint); ``status_extra`` adds to status.json."""
    kernel = kernel or ("matern" if sampler in ("kam", "ckam") else "none")
    path = root / f"{sampler}_{target}_{kernel}_s{seed}_{budget:g}{tag}"
    (path / ".hydra").mkdir(parents=True)
    tgt = TARGETS[target]()
    node = sampler_node or sampler_cfg(sampler, kernel if kernel != "none" else "matern",
                                       tgt.dim)
    config = {"target": TARGET_CFG[target], "sampler": node,
              "kernel": KERNELS.get(kernel) or KERNELS["matern"], "seed": seed,
              "budget": {"seconds": budget, "max_iterations": None, "wall_seconds": None}}
    OmegaConf.save(OmegaConf.create(config), path / ".hydra" / "config.yaml")
    choices = {"target": target, "sampler": sampler,
               "kernel": kernel if kernel != "none" else "matern", "experiment": None}
    OmegaConf.save(OmegaConf.create({"hydra": {"runtime": {"choices": choices}}}),
                   path / ".hydra" / "hydra.yaml")
    times = np.geomspace(0.05, budget, 10)
    run_id = path.name
    trace = pd.DataFrame({
        "run_id": run_id, "target": target, "sampler": sampler, "kernel": kernel, "seed": seed,
        "checkpoint": np.arange(times.size), "sampler_seconds": times,
        "wall_seconds": 1.5 * times, "iterations": (1000 * times).astype(int),
        "n_density": (1000 * times).astype(int), "n_grad": 0,
        "acceptance": 0.3, "iters_per_second": 1000.0,
        "kl": kl_scale * (1 + seed) / np.sqrt(times), "ess_min": 50 * times,
        "ess_median": 60 * times, "ess_per_second": 50.0, **(columns or {}),
    })
    rundir.write_parquet(trace, path / store.TRACE)
    rng = np.random.default_rng(seed)
    x = tgt.sample(n_samples, rng) if samples is None else np.asarray(samples, float)
    n_samples = len(x)
    samples = pd.DataFrame(x, columns=[f"x{j}" for j in range(tgt.dim)])
    samples.insert(0, "index", np.arange(n_samples))
    rundir.write_parquet(samples, path / store.SAMPLES)
    it = np.arange(n_diag)
    step = 3.0 * (0.5 * (np.cos(np.pi * (it % 1000) / 1000) + 1)) if sampler == "ckam" else \
        np.full(n_diag, 2.0)
    diag = pd.DataFrame({"iteration": it, "phase": np.zeros(n_diag, np.int8),
                         "phase_name": "sampling", "accepted": it % 3 == 0,
                         "accept_prob": 0.3, "step_size": step, "noise": np.nan})
    rundir.write_parquet(diag, path / store.DIAGNOSTICS)
    status = {"state": state, "reason": "budget", "run_id": run_id, "target": target,
              "sampler": sampler, "kernel": kernel, "seed": seed, "phases": ["sampling"],
              "dim": tgt.dim, "budget": {"seconds": budget},
              "totals": {"sampler_seconds": budget, "iterations": int(1000 * budget)},
              **(status_extra or {})}
    rundir.write_json(status, path / store.STATUS)
    return path


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    for seed in (0, 1, 2):
        for sampler in ("rw", "am", "rbam", "gam", "kam", "ckam"):
            make_run(root, "bimodal", sampler, seed=seed)
        make_run(root, "bimodal", "ckam", kernel="gaussian", seed=seed, kl_scale=2.0)
        make_run(root, "bimodal", "ckam", seed=seed, budget=20.0)
        for sampler in ("rw", "ckam"):
            make_run(root, "gmm2d", sampler, seed=seed)
        make_run(root, "gmm2d", "ckam", seed=seed, budget=10.0)
    for sampler in ("rw", "ckam"):
        make_run(root, "gmm32", sampler, seed=0, n_samples=200)
    return root


@pytest.fixture(scope="module")
def results(results_dir):
    return agg.load_results(results_dir)


# ---------------------------------------------------------------------------- aggregation
def trace_frame(runs):
    """runs: {run_id: (x list, y list)} -> a trace frame with one group."""
    rows = [{"run_id": rid, "sampler": "rw", "checkpoint": k, "sampler_seconds": x, "kl": y}
            for rid, (xs, ys) in runs.items() for k, (x, y) in enumerate(zip(xs, ys))]
    return pd.DataFrame(rows)


def test_constant_seeds_give_known_median_and_band():
    xs = [1.0, 2.0, 4.0, 8.0]
    frame = trace_frame({f"r{v}": (xs, [v] * 4) for v in (1.0, 2.0, 3.0)})
    out = agg.aggregate(frame, "sampler_seconds", "kl", by=["sampler"], band=(10, 90),
                        grid=np.array([1.0, 3.0, 8.0]))
    assert list(out.columns) == ["sampler", "x", "median", "lo", "hi", "n_seeds"]
    np.testing.assert_allclose(out["median"], 2.0)
    np.testing.assert_allclose(out["lo"], 1.2)   # numpy's linear interpolation
    np.testing.assert_allclose(out["hi"], 2.8)
    assert (out["n_seeds"] == 3).all()
    wide = agg.aggregate(frame, "sampler_seconds", "kl", by=["sampler"], band=(25, 75),
                         grid=np.array([2.0]))
    np.testing.assert_allclose(wide[["lo", "hi"]].to_numpy(), [[1.5, 2.5]])


def test_step_interpolation_and_nan_outside_a_run():
    y = agg.step_values(np.array([3.0, 1.0]), np.array([20.0, 10.0]),
                        np.array([0.5, 1.0, 2.0, 2.999, 3.0, 3.5]))
    np.testing.assert_array_equal(y, [np.nan, 10.0, 10.0, 10.0, 20.0, np.nan])
    frame = trace_frame({"a": ([1.0, 3.0, 5.0], [10.0, 20.0, 30.0]),
                         "b": ([2.0, 4.0, 5.0], [40.0, 50.0, 60.0])})
    out = agg.aggregate(frame, "sampler_seconds", "kl", by=["sampler"],
                        grid=np.array([0.5, 1.5, 2.5, 4.5, 5.0]))
    # 0.5 is before both runs: left out; at 1.5 only run a (10); at 2.5: a 10, b 40
    np.testing.assert_allclose(out["x"], [1.5, 2.5, 4.5, 5.0])
    np.testing.assert_array_equal(out["n_seeds"], [1, 2, 2, 2])
    np.testing.assert_allclose(out["median"], [10.0, 25.0, 35.0, 45.0])
    np.testing.assert_allclose(out["lo"], [10.0, 10.0 + 0.1 * 30, 20.0 + 0.1 * 30, 33.0])


def test_nan_values_do_not_count_as_seeds():
    frame = trace_frame({"a": ([1.0, 2.0], [np.nan, 4.0]), "b": ([1.0, 2.0], [1.0, 2.0])})
    out = agg.aggregate(frame, "sampler_seconds", "kl", by=["sampler"], grid=np.array([1.0, 2.0]))
    np.testing.assert_array_equal(out["n_seeds"], [1, 2])
    np.testing.assert_allclose(out["median"], [1.0, 3.0])


def test_common_grid_spans_all_runs():
    frame = trace_frame({"a": ([0.0, 0.1, 1.0], [1, 1, 1]), "b": ([0.5, 10.0], [1, 1])})
    grid = agg.common_grid(frame, "sampler_seconds", n=5, log=True)
    np.testing.assert_allclose(grid, [0.1, 10 ** -0.5, 1.0, 10 ** 0.5, 10.0])
    lin = agg.common_grid(frame, "sampler_seconds", n=3, log=False)
    np.testing.assert_allclose(lin, [0.0, 5.0, 10.0])
    with pytest.raises(ValueError):
        agg.common_grid(trace_frame({"a": ([0.0], [1])}), "sampler_seconds", log=True)


def test_final_rows_takes_the_last_checkpoint_of_each_run():
    frame = trace_frame({"a": ([1.0, 2.0], [5.0, 6.0]), "b": ([1.0, 3.0, 4.0], [7.0, 8.0, 9.0])})
    last = agg.final_rows(frame.sample(frac=1.0, random_state=1)).set_index("run_id")
    assert last.loc["a", "kl"] == 6.0 and last.loc["b", "kl"] == 9.0 and len(last) == 2


def test_bad_band_is_rejected():
    frame = trace_frame({"a": ([1.0], [1.0])})
    with pytest.raises(ValueError):
        agg.aggregate(frame, "sampler_seconds", "kl", by=["sampler"], band=(90, 10))


# ---------------------------------------------------------------------------- figures
def test_runs_load_with_labels(results):
    assert len(results.runs) == 3 * 11 + 2 and not results.skipped
    run = results.select(target="bimodal", sampler="ckam", kernel="gaussian")[0]
    assert run.config["sampler"]["cycle"]["beta"] == 0.4
    assert run.choices["sampler"] == "ckam" and run.experiment == "none"
    assert {"run_id", "target", "sampler", "kernel", "seed", "path"} <= set(run.trace.columns)
    assert run.build_target().dim == 2


@pytest.mark.parametrize("number", sorted(paper_ckam.FIGURES))
def test_every_figure_renders_png_and_pdf(results, tmp_path, number):
    rendered = paper_ckam.render(number, results, tmp_path, formats=("png", "pdf"))
    assert [p.suffix for p in rendered.paths] == [".png", ".pdf"]
    for path in rendered.paths:
        assert path.stat().st_size > 1000
    assert rendered.paths[0].read_bytes()[:4] == b"\x89PNG"
    assert rendered.paths[1].read_bytes()[:4] == b"%PDF"
    assert rendered.caption


def test_all_sampler_figures_prefer_matern_and_long_runs_pick_largest_budget(results):
    chosen = paper_ckam.comparison_runs(results, "bimodal")
    assert list(chosen) == ["rw", "am", "rbam", "gam", "kam", "ckam"]
    assert {(r.kernel, r.budget_seconds) for r in chosen["ckam"]} == {("matern", 2.0)}
    assert len(chosen["ckam"]) == 3
    fig, caption = paper_ckam.figure_kl_long_ckam(results, drawing.Settings(), "bimodal")
    assert "budget 20 s" in caption and "3 seeds" in caption


def test_step_size_figure_shows_the_cycles_the_diagnostics_hold(results):
    fig, caption = paper_ckam.figure_step_size(results, drawing.Settings())
    # 3000 diagnostics rows of cycle length 1000: 3 of the 10 cycles, KAM alongside
    assert "first 3 cycles" in caption and "cycle length 1000" in caption
    assert "no KAM run" not in caption and "bimodal, seed 0" in caption
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels[:2] == ["ckam", "kam"]


def test_unsupported_figures_say_why(tmp_path):
    make_run(tmp_path, "bimodal", "ckam")
    make_run(tmp_path, "bimodal", "rw", state="interrupted")
    res = agg.load_results(tmp_path)
    assert len(res.runs) == 1 and "interrupted" in res.skipped[0].reason
    with pytest.raises(drawing.NotSupported, match="gmm32"):
        paper_ckam.render(9, res, tmp_path / "out")
    with pytest.raises(drawing.NotSupported, match="two kernels"):
        paper_ckam.render(13, res, tmp_path / "out")
    assert len(agg.load_results(tmp_path, include_incomplete=True).runs) == 2
    assert agg.load_results(tmp_path, targets=["gmm2d"]).skipped == []


def test_a_copied_run_folder_is_reported_not_merged(tmp_path):
    import shutil

    path = make_run(tmp_path / "a", "bimodal", "rw")
    shutil.copytree(path, tmp_path / "b" / path.name)
    res = agg.load_results(tmp_path)
    assert len(res.runs) == 1 and "duplicate run_id" in res.skipped[0].reason


def test_iterations_axis_and_band_setting(results, tmp_path):
    settings = drawing.Settings(x="iterations", band=(25, 75))
    rendered = paper_ckam.render(3, results, tmp_path, settings, formats=("png",))
    assert "iterations" in rendered.caption and "25–75 %" in rendered.caption


def test_one_colour_per_configuration_label(results):
    """The report's palette (tests/test_report_palette.py): every label of the fixture has its
    own colour, in the report's order."""
    colours = drawing.sampler_colours(results)
    assert set(colours) == {g.label for g in results.groups()}
    assert len(set(colours.values())) == len(colours) <= len(drawing.PALETTE)
    assert drawing.colour("newsampler") == drawing.colour("newsampler")


# ---------------------------------------------------------------------------- tables
def composed_sampler(sampler, target):
    """The sampler as the cKAM paper's experiment on ``target`` configures it (its preset)."""
    from hydra import compose, initialize_config_module

    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment=paper_{target}", f"sampler={sampler}"])
    return OmegaConf.to_container(cfg, resolve=True)


def sampler_options():
    root = resources.files("ckam_bench.conf") / "sampler"
    return {p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml")}


def test_hyperparameter_table_has_the_configured_values(results):
    table = tables.hyperparameter_table(results, "bimodal")
    assert table.stem == "table1_hyperparameters_bimodal"
    header = table.header
    rows = {row[0]: dict(zip(header, row)) for row in table.rows}
    assert list(rows) == ["rw", "am", "rbam", "gam", "kam", "ckam [gaussian, 2 s]",
                          "ckam [matern, 2 s]", "ckam [matern, 20 s]"]
    assert rows["rw"]["(initial) step size ν"] == "3.873"
    assert rows["rw"]["RM rate ε"] == "N/A" and rows["rw"]["kernel"] == "N/A"
    assert rows["am"]["(initial) step size ν"] == "1.683"
    assert rows["am"]["RM step size η"] == "0.1" and rows["rbam"]["RM step size η"] == "0.1"
    assert rows["rbam"]["(initial) step size ν"] == "N/A"
    assert rows["gam"]["RM rate ε"] == "0.75" and rows["gam"]["α*"] == "0.234"
    assert rows["kam"]["(initial) step size ν"] == "3.366"
    assert rows["kam"]["subsample size"] == "30" and rows["kam"]["T/M"] == "N/A"
    ckam = rows["ckam [matern, 2 s]"]
    assert ckam["T/M"] == "1000" and ckam["β"] == "0.4" and ckam["subsample size"] == "50"
    assert ckam["kernel"] == "matern (l=2, s=4)" and ckam["noise γ"] == "4→1 (r=0.55, T=10000)"
    assert ckam["runs"] == "3" and rows["ckam [matern, 20 s]"]["runs"] == "3"
    assert rows["ckam [gaussian, 2 s]"]["kernel"] == "gaussian (l=1)"
    tex = table.latex()
    assert r"\begin{tabular}" in tex and r"$\to$" in tex and "ckam [matern, 20 s]" in tex


def test_hyperparameters_that_differ_between_seeds_get_a_row_each(tmp_path):
    # (before configuration groups these two runs shared one row saying "varies (0.1 / 0.01)")
    for seed, value in ((0, 0.1), (1, 0.01)):
        node = sampler_cfg("am")
        node["rate"]["value"] = value
        make_run(tmp_path, "gmm2d", "am", seed=seed, sampler_node=node)
    table = tables.hyperparameter_table(agg.load_results(tmp_path), "gmm2d")
    rows = {row[0]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["am [rate.value=0.01]"]["RM step size η"] == "0.01"
    assert rows["am [rate.value=0.1]"]["RM step size η"] == "0.1"
    assert rows["am [rate.value=0.1]"]["(initial) step size ν"] == "1.683"
    assert table.title.startswith("Table 2.")


def test_configs_with_unresolvable_interpolations_still_give_values(tmp_path):
    node = sampler_cfg("ckam")
    node["step_size"] = "${optimal_scale:${target.dim},2.0}"
    node["kernel"] = "${kernel}"
    node["out"] = "${hydra:runtime.output_dir}"   # Hydra's resolver: not available here
    make_run(tmp_path, "bimodal", "ckam", sampler_node=node)
    res = agg.load_results(tmp_path)
    assert res.runs[0].config["sampler"]["out"] == "${hydra:runtime.output_dir}"
    table = tables.hyperparameter_table(res, "bimodal")
    row = dict(zip(table.header, table.rows[0]))
    assert row["(initial) step size ν"] == "3.366" and row["kernel"] == "matern (l=2, s=4)"


@pytest.mark.parametrize("target, table_no", [("bimodal", 1), ("gmm2d", 2), ("gmm32", 3)])
def test_hyperparameters_of_composed_paper_configs(tmp_path, target, table_no):
    """The real sampler YAMLs, composed with Hydra, give the values they configure."""
    samplers = sorted(sampler_options() & set(agg.SAMPLER_ORDER))
    assert samplers
    configured = {}
    for sampler in samplers:
        configured[sampler] = composed_sampler(sampler, target)["sampler"]
        make_run(tmp_path, target, sampler, sampler_node=configured[sampler],
                 n_samples=10, n_diag=10)
    table = tables.hyperparameter_table(agg.load_results(tmp_path), target)
    for sampler, expected in configured.items():
        row = dict(zip(table.header, next(r for r in table.rows if r[0] == sampler)))
        if "step_size" in expected:
            assert row["(initial) step size ν"] == tables.number(expected["step_size"])
        if "adaptation" in expected:
            assert row["RM rate ε"] == tables.number(expected["adaptation"]["epsilon"])
            assert row["α*"] == tables.number(expected["adaptation"]["target_accept"])
        if "cycle" in expected:
            assert row["T/M"] == tables.number(expected["cycle"]["cycle_length"])
        if "subsample_size" in expected:
            assert row["subsample size"] == tables.number(expected["subsample_size"])
        if "kernel" in expected:
            assert row["kernel"] == "matern (l=2, s=4)"
    dim = TARGET_CFG[target]["dim"]
    rows = {row[0]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["am"]["(initial) step size ν"] == tables.number(2.38 / dim ** 0.5)
    assert rows["gam"]["(initial) step size ν"] == tables.number(2.38 / dim ** 0.5)
    for name in ("am", "rbam"):  # the paper's constant rates, shown as the constant
        assert configured[name]["rate"]["exponent"] == 0
        assert rows[name]["RM step size η"] == tables.number(configured[name]["rate"]["scale"])
    assert rows["rbam"]["(initial) step size ν"] == "N/A" and rows["rw"]["RM rate ε"] == "N/A"
    assert (rows["gam"]["RM rate ε"], rows["gam"]["α*"]) == ("0.75", "0.234")
    assert table.stem == f"table{table_no}_hyperparameters_{target}"


def test_results_table_mean_sd_over_seeds(results):
    table = tables.results_table(results, "gmm2d")
    rows = {row[0]: dict(zip(table.header, row)) for row in table.rows}
    # rw on gmm2d: 3 seeds, final KL (1 + seed)/sqrt(2) -> mean 2/sqrt(2), sd 1/sqrt(2)
    kl = f"{2 / np.sqrt(2):.3g} ± {1 / np.sqrt(2):.3g}"
    assert rows["rw"]["final KL"] == kl and rows["rw"]["seeds"] == "3"
    assert rows["rw"]["it/s"] == "1,000 ± 0"
    assert tables.mean_sd([1.0]) == "1" and tables.mean_sd([np.nan]) == "N/A"


def test_latex_escape():
    assert tables.latex_escape("a_b & 5%") == r"a\_b \& 5\%"
    assert tables.latex_escape("(1+t)^-0.75") == "(1+t)$^{-0.75}$"


# ---------------------------------------------------------------------------- CLI
def test_cli_reports_bad_runs_and_renders_the_rest(tmp_path, capsys):
    root = tmp_path / "res"
    for seed in (0, 1):
        make_run(root, "bimodal", "rw", seed=seed)
        make_run(root, "bimodal", "ckam", seed=seed)
    corrupt = make_run(root, "bimodal", "am", seed=0)
    (corrupt / store.TRACE).write_bytes(b"PAR1 this is not parquet")
    no_trace = make_run(root, "bimodal", "gam", seed=0)
    (no_trace / store.TRACE).unlink()
    foreign = root / "other_tool"
    foreign.mkdir()
    (foreign / store.STATUS).write_text(json.dumps({"accuracy": 0.9}))
    (root / "notes.txt").write_text("not a run")
    out = tmp_path / "figs"
    code = figures_main([str(root), "--out", str(out), "--figures", "1,3,9,10,12",
                         "--generic", "none", "--formats", "png,pdf"])
    printed = capsys.readouterr().out
    assert code == 0
    assert f"skipped {corrupt}: trace.parquet unreadable" in printed
    assert f"skipped {no_trace}: no trace.parquet" in printed
    assert f"skipped {foreign}: status.json is not a ckam-bench run" in printed
    assert "figure 9: skipped (no runs on target gmm32)" in printed
    for stem in ("fig01_step_size", "fig03_kl_bimodal", "fig10_marginal_bimodal",
                 "fig12_samples_bimodal"):
        assert (out / f"{stem}.png").exists() and (out / f"{stem}.pdf").exists()
    assert (out / "table1_hyperparameters_bimodal.tex").exists()
    assert (out / "results_bimodal.md").exists()
    report = (out / "report.md").read_text()
    assert "![Figure 3](fig03_kl_bimodal.png)" in report
    assert "Table 1. Hyperparameters as run on bimodal" in report
    assert "Results on bimodal" in report
    assert "- Figure 9: no runs on target gmm32" in report
    assert str(corrupt) in report and str(no_trace) in report


def test_cli_without_runs_exits_1(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert figures_main([str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 1
    assert "no usable runs" in capsys.readouterr().err
    make_run(tmp_path / "one", "gmm2d", "rw")
    assert figures_main([str(tmp_path / "one"), "--out", str(tmp_path / "o"),
                         "--targets", "bimodal"]) == 1
    assert "no usable runs of target(s) bimodal" in capsys.readouterr().err


def test_cli_rejects_bad_arguments(tmp_path):
    for bad in (["--figures", "15"], ["--band", "90,10"], ["--formats", "gif"],
                ["--x", "fortnights"]):
        with pytest.raises(SystemExit) as exc:
            figures_main([str(tmp_path), "--out", str(tmp_path / "o"), *bad])
        assert exc.value.code == 2


@pytest.mark.slow
def test_real_sweep_renders(tmp_path):
    sweep = tmp_path / "sweep"
    proc = clirun.run(
        [sys.executable, "-m", "ckam_bench.commands.cli", "-m", "sampler=rw,ckam", "target=bimodal",
         "seed=0,1", "budget.seconds=1", "progress=false", f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HYDRA_FULL_ERROR": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "figs"
    proc = clirun.run(
        [sys.executable, "-m", "ckam_bench.report.cli", str(sweep), "--out", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    for stem in ("fig01_step_size", "fig02_density_bimodal", "fig03_kl_bimodal",
                 "fig04_kl_ckam_long_bimodal", "fig10_marginal_bimodal", "fig11_ess_bimodal",
                 "fig12_samples_bimodal"):
        assert (out / f"{stem}.png").exists(), proc.stdout
    report = (out / "report.md").read_text()
    assert "fig03_kl_bimodal.png" in report
    assert not [line for line in proc.stdout.splitlines() if line.startswith("skipped ")]
    table = (out / "table1_hyperparameters_bimodal.md").read_text()
    assert "| ckam |" in table and "| 1000 |" in table


# ---------------------------------------------------------------------------- grouping
def test_mixed_budgets_and_repeated_seeds_give_separate_groups_and_say_so(tmp_path):
    for seed in (0, 1, 2):
        make_run(tmp_path, "bimodal", "rw", seed=seed)
    make_run(tmp_path, "bimodal", "rw", seed=0, budget=20.0)
    for tag in ("_a", "_b", "_c", "_d"):  # four runs of seed 0: one seed, not four
        make_run(tmp_path, "bimodal", "ckam", seed=0, tag=tag)
    res = agg.load_results(tmp_path)
    groups = {g.label: g for g in res.groups("bimodal")}
    assert set(groups) == {"rw [2 s]", "rw [20 s]", "ckam"}
    assert groups["rw [2 s]"].seeds == [0, 1, 2] and groups["rw [20 s]"].seeds == [0]
    assert groups["ckam"].seeds == [0] and len(groups["ckam"].duplicates) == 3
    fig, caption = paper_ckam.figure_kl_all(res, drawing.Settings(), "bimodal")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["rw (n=3)", "ckam (n=1)"]
    assert "Left out: other configurations rw [20 s] (1 run)" in caption
    assert "3 repeated run(s) of a seed already shown" in caption
    table = tables.results_table(res, "bimodal")
    rows = {row[0]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["ckam"]["seeds"] == "1" and rows["rw [20 s]"]["seeds"] == "1"
    notes = " ".join(table.notes)
    assert "seed(s) 0 were run more than once" in notes and "mixed budgets" in notes
    (drawn,) = [d for d in generic.metric_figures(res, drawing.Settings(), "bimodal")
                if d.stem == "bimodal_metric_kl"]
    assert "rw [2 s] (3 seeds); rw [20 s] (1 seed); ckam (1 seed)" in drawn.caption
    assert "mixed budgets (budget.seconds) are kept apart" in drawn.caption


def test_presets_and_hyperparameters_are_never_merged(tmp_path):
    for seed in (0, 1):
        make_run(tmp_path, "gmm2d", "am", seed=seed)
        node = sampler_cfg("am")
        node["rate"]["value"] = 0.01
        make_run(tmp_path, "gmm2d", "am", seed=seed, sampler_node=node, tag="_eta")
    labels = sorted(g.label for g in agg.load_results(tmp_path).groups())
    assert labels == ["am [rate.value=0.01]", "am [rate.value=0.1]"]


# ---------------------------------------------------------------------------- generic figures
@pytest.fixture(scope="module")
def banana_results(tmp_path_factory):
    root = tmp_path_factory.mktemp("banana")
    for seed in (0, 1):
        for sampler in ("rw", "am"):
            make_run(root, "banana", sampler, seed=seed, n_samples=300, n_diag=500,
                     columns={"bias2": np.geomspace(1.0, 0.001, 10)})
    return agg.load_results(root)


def test_every_generic_figure_renders_for_a_user_target(banana_results, tmp_path):
    settings = drawing.Settings()
    drawn = {name: draw(banana_results, settings, "banana")
             for name, draw in generic.GENERIC.items()}
    stems = {d.stem for ds in drawn.values() for d in ds}
    assert {"banana_metric_kl", "banana_metric_bias2", "banana_metric_diagnostics",
            "banana_metric_ess_min", "banana_marginals", "banana_pairs",
            "banana_diagnostics"} <= stems
    (marginals,) = drawn["marginals"]
    assert "20,000 exact draws" in marginals.caption and "x0–x2" in marginals.caption
    assert len([ax for ax in marginals.figure.axes if ax.get_visible()]) == 3
    (pairs,) = drawn["pairs"]
    assert len(pairs.figure.axes) == 2 * 3  # two groups x three pairs of coordinates
    bias = next(d for d in drawn["metrics"] if d.stem == "banana_metric_bias2")
    assert [ax.get_xlabel() for ax in bias.figure.axes] == [  # what b² cost (no gradients)
        "sampler time (s)", "density evaluations"]
    assert "threshold b² = 0.01" in bias.caption
    rendered = bias.save(tmp_path, ("png",))
    assert rendered.paths[0].read_bytes()[:4] == b"\x89PNG"


def test_high_dimension_pairs_use_chosen_coordinates():
    assert generic.chosen_coordinates(3) == [0, 1, 2]
    assert generic.chosen_coordinates(32) == [0, 10, 21, 31]


# ---------------------------------------------------------------------------- cost to accuracy
def bias2_of(x, mean, second, var, var2):
    """b² of the sample x (n, d) against the truth (mean, E[X²], Var X, Var X²)."""
    m1, m2 = x.mean(axis=0), (x ** 2).mean(axis=0)
    return float(max(np.max((m1 - mean) ** 2 / var), np.max((m2 - second) ** 2 / var2)))


def truth_of(target, n=2_000_000):
    draws = target.sample(n, np.random.default_rng(123))
    return (draws.mean(0), (draws ** 2).mean(0), draws.var(0), (draws ** 2).var(0))


def test_bias2_of_exact_draws_falls_like_one_over_n():
    tgt = gauss_target()
    mean, var = tgt.mean, tgt.variance
    truth = (mean, var + mean ** 2, var, 2 * var ** 2 + 4 * mean ** 2 * var)
    rng = np.random.default_rng(5)
    avg = {n: np.mean([bias2_of(tgt.sample(n, rng), *truth) for _ in range(300)])
           for n in (100, 1000, 10000)}
    assert 7 < avg[100] / avg[1000] < 14 and 7 < avg[1000] / avg[10000] < 14


def gauss_target():
    from ckam_bench.targets.gaussians import gauss2d_corr

    return gauss2d_corr(rho=0.5)


def test_cost_to_accuracy_needs_bias2_to_stay_below():
    trace = pd.DataFrame({"checkpoint": range(5), "sampler_seconds": [1.0, 2, 3, 4, 5],
                          "n_density": [10, 20, 30, 40, 50], "n_grad": 0,
                          "bias2": [0.5, 0.005, 0.02, 0.008, 0.004]})
    assert ranking.cost_to_accuracy(trace) == {"sampler_seconds": 4.0, "n_density": 40.0,
                                               "n_grad": 0.0}
    assert ranking.cost_to_accuracy(trace.assign(bias2=0.001))["n_density"] == 10.0
    up = trace.assign(bias2=[0.5, 0.005, 0.002, 0.001, 0.02])
    assert ranking.cost_to_accuracy(up)["sampler_seconds"] == np.inf
    assert np.isnan(ranking.cost_to_accuracy(trace.drop(columns="bias2"))["n_density"])
    assert ranking.quantiles([1.0, 2.0, np.inf]) == [2.0, 1.2, np.inf]


def test_ranking_puts_a_sampler_stuck_in_one_mode_at_infinity(tmp_path):
    tgt = bimodal()
    truth = truth_of(tgt)
    rng = np.random.default_rng(0)
    counts = np.geomspace(50, 20000, 10).astype(int)
    for seed in (0, 1, 2):
        good = tgt.sample(20000, rng)
        stuck = np.column_stack([rng.normal(-8.0, np.sqrt(0.5), 20000),
                                 rng.normal(0.0, np.sqrt(0.5), 20000)])
        for name, x in (("rw", stuck), ("ckam", good)):
            b2 = [bias2_of(x[:n], *truth) for n in counts]
            make_run(tmp_path, "bimodal", name, seed=seed, samples=x[:2000],
                     columns={"bias2": b2, "n_density": counts})
    table = ranking.ranking_table(agg.load_results(tmp_path), "bimodal")
    rows = {row[1]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["rw"]["s to b²<0.01"] == "∞" and rows["rw"]["density evals to b²<0.01"] == "∞"
    assert rows["ckam"]["rank"] == "1" and rows["rw"]["rank"] == "2"
    assert float(rows["ckam"]["density evals to b²<0.01"].split(" [")[0].replace(",", "")) \
        <= 20000
    assert "ranked on s to b²<0.01" in table.notes[0]
    assert float(rows["ckam"]["R-hat"]) < 1.05 and float(rows["rw"]["R-hat"]) < 1.05
    assert table.sort_keys[1][table.header.index("s to b²<0.01")] == np.inf


def test_ranking_gradient_columns_of_a_gradient_free_sampler_are_a_dash(tmp_path):
    rng = np.random.default_rng(1)
    for seed in (0, 1):
        x = bimodal().sample(2000, rng)
        make_run(tmp_path, "bimodal", "rw", seed=seed, samples=x,
                 columns={"bias2": np.full(10, 0.001)})
        make_run(tmp_path, "bimodal", "ckam", seed=seed, samples=x,
                 columns={"bias2": np.full(10, 0.001), "n_grad": np.arange(10) * 100 + 100})
    table = ranking.ranking_table(agg.load_results(tmp_path), "bimodal")
    rows = {row[1]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["rw"]["grad evals to b²<0.01"] == ranking.NOT_APPLICABLE == "–"
    assert rows["ckam"]["grad evals to b²<0.01"] not in ("–", "0")


def test_ranking_says_which_key_it_ranks_on_when_every_run_is_infinite(tmp_path):
    rng = np.random.default_rng(2)
    for name, scale in (("rw", 1.0), ("ckam", 3.0)):
        x = bimodal().sample(2000, rng)
        make_run(tmp_path, "bimodal", name, samples=x, kl_scale=scale,
                 columns={"bias2": np.full(10, 0.5)})  # never below 0.01: ∞ for every run
    table = ranking.ranking_table(agg.load_results(tmp_path), "bimodal")
    assert table.notes[0].startswith("ranked on") and "KL" in table.notes[0]
    assert any("not ranked on s to b²<0.01" in note and "every configuration is ∞" in note
               for note in table.notes)
    rows = {row[1]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["rw"]["rank"] == "1" and rows["ckam"]["rank"] == "2"  # lower KL first


# ---------------------------------------------------------------------------- HTML and sweep end
def test_html_report_is_self_contained(tmp_path, capsys):
    root = tmp_path / "res"
    for seed in (0, 1):
        make_run(root, "banana", "rw", seed=seed, n_samples=200, n_diag=300)
        make_run(root, "banana", "am", seed=seed, n_samples=200, n_diag=300,
                 status_extra={"sampler_info": {"adaptation": "non-diminishing"}})
    make_run(root, "banana", "am", seed=1, n_samples=200, n_diag=300, tag="_again",
             status_extra={"sampler_info": {"adaptation": "non-diminishing"}})
    make_run(root, "banana", "rw", seed=5, state="interrupted")
    out = tmp_path / "out"
    assert figures_main([str(root), "--out", str(out), "--figures", "none",
                         "--generic", "marginals", "--formats", "png"]) == 0
    assert f"html report: {out / 'report.html'}" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 1
    assert "http://" not in page and "https://" not in page
    assert 'src="' not in page.replace('src="data:', "")
    assert '<table class="sortable" id="ranking_banana">' in page
    assert "am †" in page and "⚠ non-diminishing" in page
    assert "left out: seed 1 already counted" in page
    assert "run is interrupted, not complete" in page
    assert "Configurations and provenance" in page
    assert (out / "ranking_banana.md").exists()


def test_a_sampler_biased_by_design_is_marked_wherever_it_ranks(tmp_path, capsys):
    """A run whose sampler declares ``exact: False`` (as unadjusted MCLMC does) carries ‡ in the ranking,
    a note saying its stationary law is not π, and a warning in the HTML's provenance."""
    root = tmp_path / "res"
    for seed in (0, 1):
        make_run(root, "banana", "rw", seed=seed, n_samples=200, n_diag=300)
        make_run(root, "banana", "am", seed=seed, n_samples=200, n_diag=300,
                 status_extra={"sampler_info": {"adaptation": "finite", "exact": False}})
    table = ranking.ranking_table(agg.load_results(root), "banana")
    labels = {row[1] for row in table.rows}
    assert any(label.startswith("am") and "‡" in label for label in labels)
    assert not any(label.startswith("rw") and "‡" in label for label in labels)
    assert any(note.startswith("‡ biased by design") for note in table.notes)
    out = tmp_path / "out"
    assert figures_main([str(root), "--out", str(out), "--figures", "none", "--generic", "none"]) == 0
    capsys.readouterr()
    assert "⚠ biased by design" in (out / "report.html").read_text()


def test_sweep_callback_prints_report_and_ranking(banana_results, capsys):
    from ckam_bench.report.callback import SweepReport

    report = SweepReport(figures=False).report(banana_results.root)
    printed = capsys.readouterr().out
    assert f"sweep report: {report.html}" in printed
    assert "**Ranking on banana" in printed and "| rank | sampler |" in printed
    assert report.html.exists() and report.html.parent == banana_results.root / "report"


def test_read_only_output_folder_is_one_line(tmp_path, capsys):
    if os.geteuid() == 0:  # root ignores permissions: use a path below a file instead
        blocker = tmp_path / "file"
        blocker.write_text("x")
        out = blocker / "figures"
    else:
        out = tmp_path / "ro"
        out.mkdir()
        out.chmod(0o500)
    results = tmp_path / "runs"
    results.mkdir()
    root = os.geteuid() == 0  # below a file: refused before any work (exit 2); read-only: 1
    assert figures_main([str(results), "--out", str(out)]) == (2 if root else 1)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("file is a file" if root else "cannot write to") in err
