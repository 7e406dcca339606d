"""The divergence paper's tables and figures from stored runs (ckam_bench.report.paper_divergence):
mean ± sd over seeds of the last checkpoint, Ê[X] averaged over seeds, N/A for columns a run
lacks, the paper's row order, and the scatter / trace figures written as files."""

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from ckam_bench.engine import rundir, store
from ckam_bench.report.aggregate import load_results
from ckam_bench.report.paper_divergence import divergence_table, figures, tables
from ckam_bench.targets.divergence import basis4, double_banana
from tests import clirun

TARGETS = {"double_banana": (double_banana, "ckam_bench.targets.divergence.double_banana", 2),
           "basis4": (basis4, "ckam_bench.targets.divergence.basis4", 4)}


def _run(root, target, sampler, seed, acceptance, mean_error, estimate, moments=True):
    make, node, dim = TARGETS[target]
    path = root / f"{sampler}_{target}_s{seed}"
    (path / ".hydra").mkdir(parents=True)
    OmegaConf.save(OmegaConf.create({"target": {"_target_": node, "dim": dim}, "seed": seed,
                                     "sampler": {"_target_": "x"}}), path / ".hydra" / "config.yaml")
    OmegaConf.save(OmegaConf.create({"hydra": {"runtime": {"choices": {"target": target, "sampler": sampler}}}}),
                   path / ".hydra" / "hydra.yaml")
    trace = pd.DataFrame({"run_id": path.name, "target": target, "sampler": sampler, "kernel": "none",
                          "seed": seed, "checkpoint": [0, 1], "sampler_seconds": [0.1, 1.0],
                          "iterations": [100, 1000], "acceptance": [0.9, acceptance], "esjd": [5.0, 2.0]})
    if moments:
        trace["mean_error"] = [99.0, mean_error]
        trace["mean_estimate"] = [np.zeros(dim), np.asarray(estimate, float)]
    rundir.write_parquet(trace, path / store.TRACE)
    x = make().sample(300, np.random.default_rng(seed))
    samples = pd.DataFrame(x, columns=[f"x{j}" for j in range(dim)])
    samples.insert(0, "index", np.arange(300))
    rundir.write_parquet(samples, path / store.SAMPLES)
    rundir.write_json({"state": "complete", "run_id": path.name, "target": target, "sampler": sampler,
                      "kernel": "none", "seed": seed}, path / store.STATUS)


def test_tables_and_figures(tmp_path):
    root = tmp_path / "runs"
    _run(root, "double_banana", "scout", 0, 0.8, 1.0, [0.0, -24.0])
    _run(root, "double_banana", "scout", 1, 0.6, 3.0, [2.0, -26.0])
    _run(root, "double_banana", "rw", 0, 0.5, 7.0, [0.0, -18.0], moments=False)
    _run(root, "basis4", "pt", 0, 0.4, 2.0, [0, 0, 0, 0])
    results = load_results(root)
    table = divergence_table(results, "double_banana")
    assert table.title.startswith("Table 1")
    assert [row[0] for row in table.rows] == ["rw", "scout"]  # the paper's order
    header = table.header
    scout = dict(zip(header, table.rows[1]))
    assert scout["Accept (%)"] == "70 ± 14.1"
    assert scout["d(E[X], Ê[X])"] == "2 ± 1.41"
    assert scout["Ê[X]"] == "[1, -25]"
    assert scout["ESJD (mean)"] == "2 ± 0"
    rw = dict(zip(header, table.rows[0]))
    assert rw["d(E[X], Ê[X])"] == "N/A" and rw["seeds"] == "1"
    assert [t.stem for t in tables(results)] == ["dm_table_double_banana", "dm_table_basis4"]
    saved = [d.save(tmp_path / "out", ("png",)) for d in figures(results)]
    assert {f.paths[0].name for f in saved} == {"dm_scatter_double_banana.png", "dm_traces_basis4.png"}
    assert all(p.stat().st_size > 1000 for f in saved for p in f.paths)


@pytest.mark.slow
def test_reproduce_divergence_script_with_one_seed(tmp_path):
    """The documented command end to end with one seed: every experiment's sweep (MALA and,
    on the horseshoe, the exact Gibbs sampler included), the four tables with a row per sampler,
    Table 4 scored against the shipped horseshoe reference, and the figures."""
    import os
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "reproduce_divergence_paper.sh"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = tmp_path / "dm"
    proc = clirun.run(["bash", str(script), "--seeds", "1", "--out", str(out)], cwd=tmp_path, env=env,
                      capture_output=True, text=True, timeout=2400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = out / "report"
    expected = {"double_banana": 9, "basis4": 9, "banana_bunch": 9, "horseshoe": 8}
    for target, n_samplers in expected.items():
        table = (report / f"dm_table_{target}.md").read_text()
        rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| sampler")]
        assert len(rows) == n_samplers, (target, rows)
        assert any(r.startswith("| mala |") for r in rows)
    horseshoe = (report / "dm_table_horseshoe.md").read_text()
    gibbs = next(line for line in horseshoe.splitlines() if line.startswith("| horseshoe_gibbs |"))
    assert "N/A" not in gibbs.split("|")[4]  # the mean error against the reference
    assert (report / "dm_scatter_double_banana.png").is_file() and (report / "dm_traces_basis4.png").is_file()
