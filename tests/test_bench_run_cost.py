"""scripts/bench_run_cost.py: the cost breakdown of a run, cold and warm (issue 44 §2)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_run_cost.py"


@pytest.mark.slow  # a new interpreter running two runs (5 s)
def test_the_phases_add_up_to_the_total_and_the_warm_run_pays_no_imports_or_compile():
    proc = subprocess.run([sys.executable, str(SCRIPT), "sampler=nuts", "target=gauss2d_corr",
                           "budget.max_iterations=1500"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = {m[1].strip(): (float(m[2]), float(m[3]))
            for m in re.finditer(r"^\| ([a-z ]+?)\s+\|\s+([\d.]+) \|\s+([\d.]+) \|$", proc.stdout, re.M)}
    phases = ["imports", "config", "build", "model compile", "sampler compile", "sampling",
              "metrics", "writes", "other"]
    assert list(rows)[:len(phases)] == phases
    for column in (0, 1):
        assert abs(sum(rows[p][column] for p in phases) - rows["total"][column]) < 0.01
        assert abs(rows["total"][column] - rows["sampling"][column] - rows["fixed cost"][column]) < 0.01
        assert all(rows[p][column] >= 0 for p in phases)
    assert rows["imports"][0] > 0 and rows["imports"][1] == 0  # the warm run: imported already
    assert "states: complete, complete; gradients:" in proc.stdout


@pytest.mark.slow  # a new interpreter (3 s)
def test_a_failing_run_prints_its_error_and_exits_with_its_code(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "sampler=nope"], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 2 and "unknown sampler 'nope'" in proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # a sweep of four short runs in two worker processes (~25 s)
def test_a_sweeps_cpu_is_split_into_sampling_warm_up_and_the_harness():
    """--sweep: every process's CPU (the sweep's and its joblib workers') against the runs'
    sampling and warm-up; the rows add up and the runs are all counted."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "--sweep", "sampler=rw", "target=gauss2d_corr",
                           "seed=0,1,2,3", "budget.max_iterations=500000", "hydra/launcher=joblib"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^load average at the end: [\d.]+; 4 runs \(complete; 0 stopped early\)", proc.stdout, re.M)
    rows = {m[1].strip(): (float(m[2]), float(m[3]))
            for m in re.finditer(r"^\| ([a-z (),;:-]+?)\s+\|\s+([\d.]+) \|\s+([\d.]+) \|$", proc.stdout, re.M)}
    total, sampling = rows["every process"][0], rows["sampling (sampler clock)"][0]
    warmup, harness = rows["warm-up (compile; wall)"][0], rows["harness (all but sampling, warm-up)"][0]
    assert total > sampling > 0 and rows["fixed cost (all but sampling)"][0] == pytest.approx(total - sampling, abs=0.2)
    assert harness == pytest.approx(total - sampling - warmup, abs=0.2)
    # the total is printed to 0.1 s, the per-run figure to 0.001 s: rounding the total moves
    # total / 4 by up to 0.0125
    assert rows["every process"][1] == pytest.approx(total / 4, abs=0.0126)
    assert "harness overhead:" in proc.stdout
