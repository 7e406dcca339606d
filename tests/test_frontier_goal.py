"""scripts/frontier_goal.py (issue 46 §3's gradient goal): the per-posterior table from the
shipped baselines, checked against a brute-force reading of their traces, its ∞ conventions,
and the docs' table (docs/tables/frontier_gradients.csv) against a run of the script."""

import functools
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from tests import clirun
from tests.test_bench_suite import _grads_to_accuracy  # the brute-force reading of a trace

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "frontier_goal.py"


@functools.lru_cache(maxsize=1)
def _shipped():
    """The shipped baselines, loaded once per test process (the tests only read them)."""
    from ckam_bench.report import baselines

    return baselines.load(baselines.SHIPPED)


def _script():
    """The script as a module whose default source (the shipped baselines) is :func:`_shipped`."""
    spec = importlib.util.spec_from_file_location("frontier_goal", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    load_runs = module.load_runs

    def cached(source):
        from ckam_bench.report import baselines

        return (_shipped()[0], f"baselines {baselines.SHIPPED}") if source is None else load_runs(source)

    module.load_runs = cached
    return module


@pytest.mark.slow  # ~5-10 s of a core
def test_a_wrong_answer_counts_as_never():
    """A seed whose trace crosses b² < 0.01 but whose draws fail the reference (or that the
    runner flagged) is ∞; a divergence warning leaves its value."""
    runs, _ = _shipped()
    module = _script()
    crossing = [r for r in runs if math.isfinite(_grads_to_accuracy(r.trace))]
    failing = next(r for r in crossing if r.status.get("passes") is False)
    assert module.seed_value(failing, failing.status["posterior"]) == (math.inf, "fails")
    warned = next(r for r in crossing if r.status.get("passes") and r.warnings and not r.flags)
    assert module.seed_value(warned, warned.status["posterior"]) == (_grads_to_accuracy(warned.trace), "")
    voided: dict = {}
    module.medians(runs, voided)
    assert "fails" in voided[(failing.status["posterior"], failing.status["label"])]


def test_ratio_conventions():
    ratio = _script().ratio
    assert ratio(100.0, 200.0) == 0.5
    assert ratio(100.0, math.inf) == 0.0  # every peer never: ours ahead
    assert math.isinf(ratio(math.inf, 100.0))  # ours never: behind
    assert math.isnan(ratio(math.inf, math.inf))  # neither: left out


def test_table_from_the_baselines_matches_their_traces():
    runs, _ = _shipped()
    module = _script()
    cells = module.medians(runs)
    brute: dict = {}
    for run in runs:  # a seed that fails the reference, or that the runner flagged, counts as never
        void = run.status.get("passes") is False or bool(run.status.get("flags") and run.flags)
        brute.setdefault((run.status["posterior"], run.status["label"]), []).append(
            math.inf if void else _grads_to_accuracy(run.trace))
    assert cells.keys() == brute.keys()
    for key, values in brute.items():
        assert cells[key] == (float(np.median(values)), len(values)), key
    rows = module.table(cells, "nuts_lowrank", None)
    for row in rows:
        peers = {c: v for (p, c), v in cells.items() if p == row["posterior"] and c != "nuts_lowrank"}
        assert row["best"] == min(v for v, _ in peers.values())


def test_the_docs_table_is_the_scripts_output(tmp_path, capsys):
    out = tmp_path / "frontier.csv"
    assert _script().main(["--csv", str(out)]) == 0
    assert "nuts_lowrank / best peer gradients: median" in capsys.readouterr().out
    assert out.read_text() == (ROOT / "docs" / "tables" / "frontier_gradients.csv").read_text(), (
        "the shipped baselines changed: run python scripts/frontier_goal.py --csv docs/tables/frontier_gradients.csv "
        "and update docs/samplers.md's section")


def test_the_docs_cpu_table_is_the_scripts_output(tmp_path, capsys):
    """docs/tables/frontier_cpu_seconds.csv is what the script computes from the shipped runs
    measured alone (docs/tables/cpu_alone_seed0.parquet, a baselines-format file whose seconds
    are CPU seconds: its runs' budget clock is ``cpu``)."""
    peers = "nutpie,nutpie_lowrank,numpyro_nuts,blackjax_nuts,mams,walnutpie,blackjax_gist,blackjax_nuts_fisher"
    for ours, table in (("nuts_lowrank", "frontier_cpu_seconds.csv"), ("nuts_converged", "frontier_cpu_converged.csv")):
        out = tmp_path / table
        assert _script().main(["--cost", "cpu", "--runs", str(ROOT / "docs" / "tables" / "cpu_alone_seed0.parquet"),
                               "--ours", ours, "--peers", peers, "--csv", str(out)]) == 0
        assert f"{ours} / best peer CPU seconds: median" in capsys.readouterr().out
        assert out.read_text() == (ROOT / "docs" / "tables" / table).read_text()


def test_a_missing_source_is_one_line(tmp_path):
    proc = clirun.run([sys.executable, str(SCRIPT), "--runs", str(tmp_path / "nothing")], capture_output=True,
                      text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2 and "no such file or folder" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow  # ~5-10 s of a core
def test_ours_from_several_sweep_folders(tmp_path, capsys):
    """``--ours-runs A B``: the runs of both folders are one configuration, ours, against the
    baselines' peers; the median is over the seeds of both."""
    import pandas as pd

    from tests.test_report import make_run

    reach = np.r_[np.full(3, 0.5), np.full(7, 0.001)]  # b² < 0.01 from checkpoint 3 for good
    for folder, seeds in (("a", (0, 1)), ("b", (2,))):
        for seed in seeds:
            grads = np.geomspace(100.0, 1e5, 10) * (seed + 1)
            make_run(tmp_path / folder, "bimodal", "rw", seed=seed, columns={"bias2": reach, "n_grad": grads, "n_collected": np.arange(10) * 100},
                     status_extra={"posterior": "earnings-earn_height"})
    out = tmp_path / "table.csv"
    assert _script().main(["--ours", "mine", "--ours-runs", str(tmp_path / "a"), str(tmp_path / "b"), "--peers",
                           "nutpie", "--csv", str(out)]) == 0
    row = pd.read_csv(out).set_index("posterior").loc["earnings-earn_height"]
    expected = float(np.median([np.geomspace(100.0, 1e5, 10)[3] * (s + 1) for s in (0, 1, 2)]))
    assert row["seeds"] == 3 and row["ours"] == round(expected) and row["best_peer"].startswith("nutpie")
    assert "ours: the runs under" in capsys.readouterr().out


def test_cpu_seconds_at_the_crossing_and_the_share_ahead(tmp_path):
    """``--cost cpu``: each seed's CPU seconds of sampler time at the checkpoint from which
    b² < 0.01 holds (the same checkpoint as its gradients), the best peer the one needing the
    fewest seconds, and the goal line counts the posteriors where ours is ahead (< 1) of every
    peer; runs without CPU seconds are refused in one line."""
    import pandas as pd

    from tests.test_report import make_run

    reach = np.r_[np.full(3, 0.5), np.full(7, 0.001)]  # b² < 0.01 from checkpoint 3 for good
    seconds = {"mine": 1.0, "fast": 2.0, "slow": 4.0}  # CPU seconds per checkpoint step
    for posterior, mine in (("earnings-earn_height", 1.0), ("kidiq-kidscore_momhs", 3.0)):
        for sampler, per in seconds.items():
            per = mine if sampler == "mine" else per
            make_run(tmp_path / "runs", "bimodal", "rw", tag=f"{sampler}{posterior}", columns={
                "bias2": reach, "n_grad": np.geomspace(100.0, 1e5, 10),
                "sampler_cpu_seconds": per * np.arange(1.0, 11.0), "n_collected": np.arange(10) * 100},
                status_extra={"posterior": posterior, "label": sampler})
    module = _script()
    out = tmp_path / "cpu.csv"
    assert module.main(["--cost", "cpu", "--runs", str(tmp_path / "runs"), "--ours", "mine", "--csv", str(out)]) == 0
    table = pd.read_csv(out).set_index("posterior")
    assert table.loc["earnings-earn_height", "ours"] == 4.0 and table.loc["earnings-earn_height", "best"] == 8.0
    assert table.loc["earnings-earn_height", "best_peer"] == "fast"
    assert table.loc["kidiq-kidscore_momhs", "ratio"] == 1.5
    rows = module.table(module.medians(load_results_of(tmp_path / "runs"), cost="cpu"), "mine", None)
    line = module.goal_lines(rows, "mine", "cpu")[0]
    assert "ahead (< 1) of every peer on 1 (50 %)" in line and line.endswith("not met")
    proc = clirun.run([sys.executable, str(SCRIPT), "--cost", "cpu"], capture_output=True, text=True,
                      timeout=300, cwd=ROOT)  # the shipped baselines: seconds of loaded sweeps
    assert proc.returncode == 2 and "--cost cpu needs --runs" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "counts").mkdir()
    make_run(tmp_path / "counts", "bimodal", "rw", columns={"bias2": reach}, status_extra={"posterior": "arK-arK"})
    make_run(tmp_path / "counts", "bimodal", "rw", tag="peer", columns={"bias2": reach},
             status_extra={"posterior": "arK-arK", "label": "peer"})
    with pytest.raises(SystemExit) as stop:  # no CPU seconds recorded: refused
        module.main(["--cost", "cpu", "--runs", str(tmp_path / "counts"), "--ours", "rw"])
    assert stop.value.code == 2


def load_results_of(folder):
    from ckam_bench.report.aggregate import load_results

    return load_results(folder).runs
