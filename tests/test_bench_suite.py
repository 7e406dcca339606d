"""scripts/bench_peers.py --suite: the ablation table and the goals' ratios from stored
posteriordb runs, checked against a brute-force reading of the runs' traces."""

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]
MODEL = "ckam_bench.posteriordb.models:eight_schools_noncentered"


def _grads_to_accuracy(trace: pd.DataFrame) -> float:
    """Brute force: the smallest checkpoint's n_grad from which b² < 0.01 at every later one."""
    trace = trace.sort_values("checkpoint")
    b2, grads = trace["bias2"].to_numpy(float), trace["n_grad"].to_numpy(float)
    for k in range(len(b2)):
        if np.all(b2[k:] < 0.01):
            return float(grads[k])
    return math.inf


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    pytest.importorskip("pymc")
    root = tmp_path_factory.mktemp("suite") / "sweep"
    proc = clirun.run(["ckam-bench", "-m", "experiment=posteriordb", "sampler=nuts_fisher,nuts_reference_diag",
                           f"target.model={MODEL}", "seed=0,1", "budget.max_grad=40000", "budget.max_density=40000",
                           f"hydra.sweep.dir={root}"], capture_output=True, text=True, timeout=600, cwd=root.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root


@pytest.mark.slow  # a four-job PyMC sweep (15 s)
def test_suite_tables_match_the_traces(sweep):
    proc = clirun.run([sys.executable, str(ROOT / "scripts" / "bench_peers.py"), "--suite", str(sweep)],
                      capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    row = next(line for line in out.splitlines() if line.startswith("| eight_schools-eight_schools_noncentered |"))
    costs = {}
    for status in sweep.rglob("status.json"):
        trace = pd.read_parquet(status.parent / "trace.parquet")
        sampler = status.parent.name.split("_", 1)[1].rsplit("_pymc", 1)[0]
        costs.setdefault(sampler, []).append(_grads_to_accuracy(trace))
    assert set(costs) == {"nuts_fisher", "nuts_reference_diag"} and all(len(v) == 2 for v in costs.values())
    fisher, limit = (float(np.median(costs[s])) for s in ("nuts_fisher", "nuts_reference_diag"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    expected = "∞" if math.isinf(fisher) else f"{fisher:,.0f}" if fisher >= 1000 else f"{fisher:.3g}"
    assert cells[1].startswith(expected), (cells, fisher)
    if math.isfinite(fisher) and math.isfinite(limit):
        assert f"({fisher / limit:.2g}×)" in cells[1]
    assert "seeds per cell: 2-2" in out


def test_suite_without_runs_and_a_missing_folder(tmp_path):
    script = [sys.executable, str(ROOT / "scripts" / "bench_peers.py"), "--suite"]
    empty = clirun.run([*script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert empty.returncode == 0 and empty.stdout.startswith("no posteriordb runs under")
    missing = clirun.run([*script, str(tmp_path / "nope")], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no such folder" in missing.stderr
    assert sorted(tmp_path.iterdir()) == []


def test_suite_cpu_goal_compares_each_of_our_nuts_with_each_peer(tmp_path, monkeypatch):
    """The CPU-second goal's columns: for nuts_fisher and nuts_lowrank, CPU seconds to b² < 0.01
    over each peer's, only where our gradient costs ≤ 20 µs, with a summary line per pair."""
    import importlib.util

    from ckam_bench.report import posteriordb_suite
    from tests.test_report import make_run

    spec = importlib.util.spec_from_file_location("bench_peers", ROOT / "scripts" / "bench_peers.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(posteriordb_suite, "_posterior", lambda run: "p-" + run.target)
    reach = np.r_[np.full(4, 0.5), np.full(6, 0.001)]  # b² < 0.01 from checkpoint 4 for good
    times = np.geomspace(0.05, 2.0, 10)
    # n_grad per run: cheap (1 µs per gradient at the end) except nuts_lowrank on gmm2d (100 µs)
    # runs flagged divergent: nutpie on gmm2d; on bimodal the divergences were not recorded
    for target in ("bimodal", "gmm2d"):
        for sampler, scale in (("nuts_fisher", 1.0), ("nuts_lowrank", 0.5), ("nutpie", 2.0)):
            grads = times * 1e6 * (0.01 if (sampler, target) == ("nuts_lowrank", "gmm2d") else 1.0)
            flagged = (sampler, target) == ("nutpie", "gmm2d")
            recorded = {"divergent_sampling": np.full(10, float(flagged))} if target == "gmm2d" else {}
            make_run(tmp_path, target, sampler, sampler_node=AM_NODE,
                     columns={"bias2": reach, "n_grad": grads, "sampler_cpu_seconds": times * scale, **recorded},
                     status_extra={"flags": ["divergent"], "flag_notes": {"divergent": "1 of 9"}} if flagged else None)
    out = bench.suite_tables(tmp_path)
    lines = out.splitlines()
    head = next(line for line in lines if line.startswith("| posterior | µs/grad"))
    assert [c.strip() for c in head.strip("|").split("|")][-3:] == ["nuts_fisher / nutpie CPU-s",
                                                                  "nuts_lowrank / nutpie CPU-s",
                                                                  "divergent after warm-up (seeds)"]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
            for line in lines if line.startswith("| p-")}
    assert rows["p-bimodal"][-3:] == ["0.50", "0.25", "not recorded"]
    assert rows["p-gmm2d"][-3:] == ["0.50", "–", "nutpie 1/1"]  # 100 µs per gradient: not a cheap posterior
    assert "nuts_fisher / nutpie CPU seconds: ahead (< 1) on 2 of 2" in out
    assert "nuts_lowrank / nutpie CPU seconds: ahead (< 1) on 1 of 1" in out


AM_NODE = {"_target_": "x.AM", "step_size": 1.0}


def test_character_summary_one_change_at_a_time(tmp_path):
    """The per-character step table: medians of after / before over the posteriors both finish,
    with the posteriors a change makes finish (+) or lose (−), against a hand count."""
    import importlib.util
    from types import SimpleNamespace as R

    spec = importlib.util.spec_from_file_location("bench_peers", ROOT / "scripts" / "bench_peers.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    inf = math.inf
    grads = {("mesquite-mesquite", "nuts"): 100.0, ("mesquite-mesquite", "nuts_stan_nutpie"): 50.0,
             ("kidiq-kidscore_interaction", "nuts"): 200.0, ("kidiq-kidscore_interaction", "nuts_stan_nutpie"): 100.0,
             ("kilpisjarvi_mod-kilpisjarvi", "nuts"): inf, ("kilpisjarvi_mod-kilpisjarvi", "nuts_stan_nutpie"): 30.0,
             ("arK-arK", "nuts"): 10.0, ("arK-arK", "nuts_stan_nutpie"): inf}
    cell = {key: R(grads=value) for key, value in grads.items()}
    lines = bench.character_summary(cell, sorted({p for p, _ in grads}))
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in lines if line.startswith("| ")}
    assert rows["regression (3)"] == "0.50 [2] +1"  # mesquite 0.5, kidscore 0.5; kilpisjarvi ∞ → 30
    assert rows["time series (1)"] == "– −1"         # arK 10 → ∞
    assert "schedule: nutpie's / Stan's" in lines[2] and len(lines[2].split("|")) == 4  # only the step with data
