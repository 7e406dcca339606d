"""Titsias & Dellaportas tables and figures from real stored runs (a tiny gad_neal sweep)."""

import sys

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # two small sweeps through the CLI (~40 s on the shared machine)

from ckam_bench.report import paper_gradient
from ckam_bench.report.aggregate import load_results
from tests import clirun


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gad")
    common = ["experiment=gad_neal", "budget.max_iterations=1200", "sampler.burn_in=600", "progress=false"]
    for i, extra in enumerate((["sampler=gadmala_fast", "seed=0,1"], ["sampler=hmc", "sampler.n_leapfrog=2,3", "seed=0"])):
        clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", "-m", *common, *extra,
                        f"hydra.sweep.dir={root / str(i)}"], check=True, capture_output=True)
    return root


def test_table_in_the_papers_form(runs, tmp_path):
    results = load_results(runs)
    frame = paper_gradient.summary(results, "neal100")
    assert sorted(frame["method"]) == ["HMC-2", "HMC-3", "gadMALAf", "gadMALAf"]
    np.testing.assert_allclose(frame["min_ess_per_s"], frame["ess_min"] / frame["time"])
    table = paper_gradient.paper_table(results, "neal100")
    assert table.title.startswith("Table 1 ")
    methods = [row[0] for row in table.rows]
    assert methods[0] == "gadMALAf" and len([m for m in methods if m.startswith("HMC")]) == 1
    best = frame[frame.method.str.startswith("HMC")].groupby("method")["min_ess_per_s"].mean().idxmax()
    assert best in methods
    assert table.rows[0][-1] == "2"  # repeats
    names = {d.stem for d in paper_gradient.figures(results)}
    assert {"gad_logp_neal100", "gad_neal_diagL"} <= names
    assert len(paper_gradient.tables(results)) == 1


def test_figures_cli_writes_the_gad_table(runs, tmp_path):
    from ckam_bench.report.cli import main

    assert main([str(runs), "--out", str(tmp_path), "--formats", "png", "--figures", "1"]) == 0
    assert (tmp_path / "gad_table1_neal100.md").exists()
    assert "gad_logp_neal100.png" in (tmp_path / "report.md").read_text()


def test_partial_runs_are_listed_not_averaged(runs, tmp_path):
    """A run that did not finish (here: a copy marked interrupted) is shown as its own
    "(partial ...)" row with its iterations, and the means use the complete runs only."""
    import json
    import shutil

    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    status_file = sorted(copy.rglob("status.json"))[0]
    status = json.loads(status_file.read_text())
    status["state"] = "interrupted"
    status_file.write_text(json.dumps(status))
    complete = paper_gradient.paper_table(load_results(runs), "neal100")
    results = load_results(copy, include_incomplete=True)
    table = paper_gradient.paper_table(results, "neal100")
    partial = [row for row in table.rows if "(partial" in row[0]]
    assert len(partial) == 1 and f"seed {status['seed']}" in partial[0][0] and partial[0][-1] == "0"
    assert len(table.rows) == len(complete.rows) + 1
