"""KAMH paper figures and table from real stored runs (a tiny kamh_banana_moderate sweep)."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a small sweep through the CLI (~60 s on the shared machine)

from ckam_bench.report import paper_kamh
from ckam_bench.report.aggregate import load_results


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("kamh")
    subprocess.run([sys.executable, "-m", "ckam_bench.cli", "-m", "experiment=kamh_banana_moderate",
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
