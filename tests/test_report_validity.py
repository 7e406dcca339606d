"""The report's Validity section (issue 24): ``ckam-bench-figures RUNS`` lists the stationarity
checks (``ckam-bench-check`` outputs) stored under RUNS, each with its verdict, a failed one
shown as failed; with no check stored there is no such section."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ckam_bench.checks import stationarity
from ckam_bench.engine import outputs
from ckam_bench.report import validity
from ckam_bench.report.cli import main as figures_main
from ckam_bench.samplers.random_walk import RandomWalk
from ckam_bench.checks.stationarity import check_stationarity, write_outputs
from ckam_bench.targets.mixtures import bimodal
from tests.samplers.invariance import Tempered
from tests.test_report import make_run
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "CKAM_BENCH_JIT": "0", "HYDRA_FULL_ERROR": "0"}


def check_command(folder: Path, *overrides: str) -> subprocess.CompletedProcess:
    return clirun.run([sys.executable, "-c", "from ckam_bench.checks.stationarity import main; main()",
                           *overrides, f"hydra.run.dir={folder}"], cwd=ROOT,
                      env=ENV, capture_output=True, text=True, timeout=300)


def failing_check(folder: Path) -> None:
    """A check that fails, written by the check's own writer: a random walk whose acceptance
    ignores the target (the bimodal target at power 0) drifts away from π."""
    result = check_stationarity(lambda: RandomWalk(3.0), Tempered(bimodal(), 0.0), n_chains=50,
                                times=[50, 200], seed=0, n_reference=500)
    assert not result.passed
    write_outputs(result, folder, {"sampler": "rw_blind", "target": "bimodal",
                                   "label": "rw_blind", "adaptation": "none"}, identity="blind")


@pytest.fixture(scope="module")
def runs_with_checks(tmp_path_factory):
    """A runs folder: two runs, a passing check run by ckam-bench-check, a failing one."""
    root = tmp_path_factory.mktemp("runs")
    for seed in (0, 1):
        make_run(root, "bimodal", "rw", seed=seed)
    done = check_command(root / "checks" / "rw_gauss", "sampler=rw", "target=gauss2d_corr",
                         "check.n_chains=20", "check.times=[50,100]", "check.n_reference=500")
    assert done.returncode == 0, done.stderr
    assert "rw on gauss2d_corr: pass" in done.stdout
    failing_check(root / "checks" / "blind")
    return root


def report(results: Path, out: Path) -> tuple[str, str]:
    assert figures_main([str(results), "--out", str(out), "--figures", "none",
                         "--generic", "none", "--formats", "png"]) == 0
    return (out / "report.md").read_text(), (out / "report.html").read_text()


def test_checks_under_the_runs_folder_make_a_validity_section(runs_with_checks, tmp_path):
    md, page = report(runs_with_checks, tmp_path / "out")
    section = md.split("## Validity (stationarity checks)")[1]
    assert "1 of 2 stored stationarity check(s) FAIL: rw_blind on bimodal" in section
    rows = {line.split("|")[1].strip(): line for line in section.splitlines()
            if line.startswith("| rw")}
    assert set(rows) == {"rw", "rw_blind"}
    assert "| gauss2d_corr |" in rows["rw"] and "| pass |" in rows["rw"]
    assert "| bimodal |" in rows["rw_blind"] and "| ⚠ FAIL |" in rows["rw_blind"]
    stored = json.loads((runs_with_checks / "checks" / "rw_gauss" / "check.json").read_text())
    assert f"| {stored['min_p_holm']:.3g} |" in rows["rw"]  # the p-value as the check stored it
    assert f"| {stored['worst_test']} |" in rows["rw"]
    validity_html = page.split('id="validity"')[1].split('id="run-inventory"')[0]
    assert 'id="validity_verdicts"' in validity_html
    assert "⚠ FAIL" in validity_html and "rw_blind on bimodal" in validity_html
    assert '<p class="warn">⚠ 1 of 2 stored stationarity check(s) FAIL' in validity_html
    assert validity_html.count("data:image/png;base64") == 2  # each check's own figure
    written = (tmp_path / "out" / validity.CSV).read_text()
    assert "rw_blind" in written and "FAIL" in written


def test_no_checks_no_validity_section(runs_with_checks, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for run in runs_with_checks.glob("rw_*"):
        shutil.copytree(run, runs / run.name)
    md, page = report(runs, tmp_path / "out")
    assert "## Validity" not in md and "stationarity check(s)" not in md
    assert 'id="validity_verdicts"' not in page and "stationarity check(s)" not in page
    assert "No stationarity check" in page
    assert not (tmp_path / "out" / validity.CSV).exists()


def test_a_folder_of_checks_only_gets_a_report_of_them(runs_with_checks, tmp_path, capsys):
    md, page = report(runs_with_checks / "checks", tmp_path / "out")
    assert "the report shows its 2 stationarity check(s)" in capsys.readouterr().out
    assert "1 of 2 stored stationarity check(s) FAIL" in md and "⚠ FAIL" in page
    empty = tmp_path / "empty"
    empty.mkdir()
    assert figures_main([str(empty), "--out", str(tmp_path / "out2")]) == 1
    assert "no usable runs and no stationarity check" in capsys.readouterr().err
    assert not (tmp_path / "out2").exists()


def test_checks_are_identified_by_their_marker_not_their_names(runs_with_checks, tmp_path):
    """A folder holding check.json and tests.csv without the check's marker (a copy, a user's
    files) is not a check; a check whose check.json was edited since, or that did not finish,
    is listed as not used, with the reason."""
    root = tmp_path / "runs"
    shutil.copytree(runs_with_checks / "checks", root / "checks")
    lookalike = root / "mine"
    lookalike.mkdir()
    for name in ("check.json", "tests.csv"):
        shutil.copy(root / "checks" / "rw_gauss" / name, lookalike / name)
    edited = root / "checks" / "blind" / "check.json"
    info = json.loads(edited.read_text())
    edited.write_text(json.dumps({**info, "verdict": "pass"}))  # a FAIL turned into a pass
    (root / "checks" / "rw_gauss" / "tests.csv").rename(root / "checks" / "rw_gauss" / "t.csv")
    found = validity.find_checks(root)
    assert found.checks == []
    assert sorted((p.name, why) for p, why in found.problems) == [
        ("blind", "check.json is not the file ckam-bench-check wrote (changed since)"),
        ("rw_gauss", "no tests.csv: the check did not finish")]
    report_folder = tmp_path / "report_of_checks"  # another command's marker: not a check
    (report_folder / outputs.MARKER).parent.mkdir()
    (report_folder / outputs.MARKER).write_text(json.dumps({"command": "ckam-bench-figures"}))
    assert validity.find_checks(tmp_path).checks == []


def test_the_marker_command_is_the_checks():
    assert validity.CHECK_COMMAND == stationarity.COMMAND


def test_drift_figure_and_verdicts_of_two_checks(tmp_path):
    """The drift figure of the checks on a mixture target (moved from test_stationarity)."""
    from tests.test_stationarity import ExactDraws

    t = bimodal()
    for name in ("exact_a", "exact_b"):
        result = check_stationarity(ExactDraws, t, n_chains=20, times=[1, 2], seed=0,
                                    n_reference=500)
        write_outputs(result, tmp_path / "results" / name,
                      {"sampler": name, "target": "bimodal", "label": name, "adaptation": "none",
                       "cycle_length": 1}, identity=name)
    section = validity.render_validity(tmp_path / "results", tmp_path / "out")
    text = "\n".join(section.markdown(tmp_path / "out"))
    assert "## Validity" in text and "validity_drift_bimodal.png" in text
    assert "All 2 stored stationarity check(s) pass." in text
    assert "| exact_a |" in text and (tmp_path / "out" / "validity_drift_bimodal.png").exists()
    assert validity.render_validity(tmp_path / "out", tmp_path / "out2") is None


def _check(folder: Path, sampler: str, config: dict, rw_step: float = 3.0) -> None:
    """A check written by the check's own writer, with the info ckam-bench-check records (the
    config group's kernel choice is 'matern' whatever the sampler)."""
    result = check_stationarity(lambda: RandomWalk(rw_step), bimodal(), n_chains=20,
                                times=[20, 50], seed=0, n_reference=300)
    write_outputs(result, folder, {"sampler": sampler, "target": "bimodal",
                                   "experiment": "default", "kernel": "matern",
                                   "label": sampler, "adaptation": "none", "config": config},
                  identity=folder.name)


def test_checks_are_keyed_by_their_full_configuration_and_kernel(tmp_path):
    """Two checks of one sampler with other overrides are two rows under two names, and a
    sampler without a kernel lists none (issue 30 §3)."""
    rw = "ckam_bench.samplers.random_walk.RandomWalk"
    matern = {"_target_": "ckam_bench.kernels.Matern", "lengthscale": 2.0, "smoothness": 4.0}
    _check(tmp_path / "checks" / "a", "rw", {"_target_": rw, "step_size": 0.5}, 0.5)
    _check(tmp_path / "checks" / "b", "rw", {"_target_": rw, "step_size": 3.873})
    _check(tmp_path / "checks" / "c", "kam", {"_target_": "x.KAM", "kernel": matern})
    section = validity.render_validity(tmp_path, tmp_path / "out")
    names = {c["name"]: c for c in section.checks}
    assert set(names) == {"rw [step_size=0.5]", "rw [step_size=3.873]", "kam"}
    assert names["rw [step_size=0.5]"]["config_key"] != names["rw [step_size=3.873]"]["config_key"]
    assert names["rw [step_size=0.5]"]["kernel"] is None
    assert names["kam"]["kernel"] == "matern (l=2, s=4)"
    header = section.table.header
    rows = {row[0]: dict(zip(header, row)) for row in section.table.rows}
    assert set(rows) == set(names)
    assert rows["rw [step_size=0.5]"]["kernel"] == "–" and rows["kam"]["kernel"] == "matern (l=2, s=4)"
    csv = pd.read_csv(tmp_path / "out" / validity.CSV)
    kernels = dict(zip(csv["label"], csv["kernel"]))
    assert pd.isna(kernels["rw [step_size=3.873]"]) and kernels["kam"] == "matern (l=2, s=4)"
    assert "matern" not in " ".join(str(v) for v in csv[csv["sampler"] == "rw"].to_numpy().ravel())
    md = "\n".join(section.markdown(tmp_path / "out"))
    assert "| rw [step_size=0.5] | bimodal | – |" in md
    page_titles = [f"{c['name']} on bimodal" for c in section.checks]
    from ckam_bench.report.html import _checks_html

    page = "".join(_checks_html(section))
    assert all(title in page for title in page_titles)
