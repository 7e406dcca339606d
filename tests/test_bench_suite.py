"""scripts/bench_peers.py --suite: the ablation table and the goals' ratios from stored
posteriordb runs, checked against a brute-force reading of the runs' traces."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

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
    proc = subprocess.run(["ckam-bench", "-m", "experiment=posteriordb", "sampler=nuts_fisher,nuts_reference_diag",
                           f"target.model={MODEL}", "seed=0,1", "budget.max_grad=40000", "budget.max_density=40000",
                           f"hydra.sweep.dir={root}"], capture_output=True, text=True, timeout=600, cwd=root.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root


def test_suite_tables_match_the_traces(sweep):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_peers.py"), "--suite", str(sweep)],
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
    empty = subprocess.run([*script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert empty.returncode == 0 and empty.stdout.startswith("no posteriordb runs under")
    missing = subprocess.run([*script, str(tmp_path / "nope")], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no such folder" in missing.stderr
    assert sorted(tmp_path.iterdir()) == []
