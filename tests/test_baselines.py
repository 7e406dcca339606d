"""Baselines that travel (ckam_bench/report/baselines.py; docs/posteriordb.md, "Baselines"):
suite runs packed into one parquet file with its stamp, loaded back and ranked with a user's
runs in the suite tables, and a stamp that differs from here reported in one line per
difference with its rows marked.

Two small real sweeps made with the command line (one posterior, NUTS with a short warm-up,
20 000 evaluations): the "peers" (two configurations × two seeds, packed) and the user's (one
other configuration, one seed)."""

import json
import math
import os
import sys

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pymc")
pytestmark = pytest.mark.slow  # every test reads the two sweeps: ~20 s of a core before the first

from tests import clirun  # noqa: E402

from ckam_bench.report import baselines  # noqa: E402
from ckam_bench.report.aggregate import load_results  # noqa: E402
from ckam_bench.report.posteriordb_suite import CPU_NOTE, run_evaluations, run_passes, tables  # noqa: E402

POSTERIOR = "eight_schools-eight_schools_noncentered"
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _sweep(folder, *overrides):
    proc = clirun.run(["ckam-bench", "-m", "experiment=posteriordb",
                       "posteriordb.subset=[eight_schools_noncentered]", "sampler=nuts",
                       "sampler.burn_in=100", "budget.max_grad=20000", "budget.max_density=20000",
                       "progress=false", "hydra/launcher=basic", f"hydra.sweep.dir={folder}",
                       *overrides], cwd=folder.parent, env=ENV, capture_output=True, text=True,
                      timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("baselines")
    peers = _sweep(root / "peers", "sampler.target_accept=0.8,0.9", "seed=0,1")
    mine = _sweep(root / "mine", "sampler.target_accept=0.85", "seed=0")
    packed = root / "shipped" / "baselines.parquet"
    stamp = baselines.pack(peers, packed, "ckam-bench -m experiment=posteriordb sampler=nuts")
    return peers, mine, packed, stamp


def test_pack_round_trips_the_cost_to_accuracy(sweeps):
    """Every packed run comes back with its trace's machine-independent values, its cost to
    b² < 0.01 and its pass/fail verdict; seconds are kept aside, never ranked; the stamp
    holds versions, budget, reference ids, command, seeds and CPU-hours; zstd, no temp file."""
    peers, _, packed, stamp = sweeps
    original = {r.run_id: r for r in load_results(peers).runs}
    runs, read = baselines.load(packed)
    assert read == stamp and len(runs) == len(original) == 4
    assert set(stamp["versions"]) == set(baselines.PACKAGES)
    assert stamp["budget"]["max_grad"] == 20000 and stamp["budget"]["checkpoint.first"] == 100
    assert stamp["budget"]["early_stop"]["threshold"] == 0.01
    assert stamp["references"][POSTERIOR].startswith(
        f"posteriordb:{POSTERIOR}@sha256:")
    assert stamp["seeds"] == [0, 1] and stamp["samplers"] == ["nuts"]
    assert stamp["command"].startswith("ckam-bench -m experiment=posteriordb")
    expected_cpu = sum(r.status["totals"]["sampler_cpu_seconds"] + r.status["totals"]["warmup_seconds"]
                       for r in original.values()) / 3600
    assert stamp["cpu_hours"] == pytest.approx(expected_cpu)
    for run in runs:
        source = original[run.run_id]
        assert isinstance(run, baselines.StoredRun) and run.status["baseline"] is True
        for column in ("checkpoint", "iterations", "n_collected", "n_density", "n_grad", "bias2",
                       "mean_error", "second_moment_error", "ess_min", "ess_per_grad"):
            np.testing.assert_array_equal(run.trace[column].to_numpy(float),
                                          pd.to_numeric(source.trace[column]).to_numpy(float), column)
        assert run.trace["sampler_seconds"].isna().all()
        np.testing.assert_array_equal(run.trace["packed_sampler_seconds"], source.trace["sampler_seconds"])
        assert run_evaluations(run) == run_evaluations(source)
        assert run_passes(run, POSTERIOR) == run_passes(source, POSTERIOR) is not None
        assert run.settings == source.settings
    meta = pq.ParquetFile(packed).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert [p.name for p in packed.parent.iterdir()] == ["baselines.parquet"]


def test_user_and_baseline_of_one_configuration_stay_apart(sweeps):
    """The peers' own folder ranked against their own baselines: each configuration twice, a
    "(baseline)" row next to the run here, never merged; no stamp difference."""
    peers, _, packed, _ = sweeps
    results = load_results(peers)
    attached = baselines.attach(results, packed)
    assert attached.differences == [] and len(attached.runs) == 4
    suite = tables(results)[-1]
    labels = [row[1] for row in suite.rows]
    assert len(labels) == 4 and sum("(baseline)" in label for label in labels) == 2
    assert not any(baselines.MISMATCH_MARK in label for label in labels)
    assert any(CPU_NOTE in note for note in suite.notes)


def test_a_stamp_mismatch_is_one_line_and_marks_the_rows(sweeps, monkeypatch):
    """Another pymc installed than the stamp's: exactly one line naming both versions, every
    baseline row marked; another budget of the user's runs: one line naming it."""
    _, mine, packed, stamp = sweeps
    results = load_results(mine)
    assert baselines.mismatches(stamp, results.runs) == []
    real = baselines.installed_versions()
    monkeypatch.setattr(baselines, "installed_versions", lambda: {**real, "pymc": "0.0.1"})
    lines = baselines.mismatches(stamp, results.runs)
    assert len(lines) == 1
    assert "pymc 0.0.1 is installed" in lines[0] and f"pymc {real['pymc']}" in lines[0]
    baselines.attach(results, packed)
    per_posterior, suite = tables(results)[-2:]
    marked = [row[1] for row in per_posterior.rows if "(baseline)" in row[1]]
    assert len(marked) == 2 and all(baselines.MISMATCH_MARK in label for label in marked)
    mine_row = next(row[1] for row in per_posterior.rows if "(baseline)" not in row[1])
    assert baselines.MISMATCH_MARK not in mine_row
    assert lines[0] in per_posterior.notes and lines[0] in suite.notes
    assert sum(baselines.MISMATCH_MARK in row[1] for row in suite.rows) == 2
    monkeypatch.setattr(baselines, "installed_versions", lambda: real)
    other = json.loads(json.dumps(stamp))
    other["budget"]["max_grad"] = 1000000
    lines = baselines.mismatches(other, results.runs)
    assert len(lines) == 1 and "max_grad=1e+06" in lines[0] and "max_grad=20000" in lines[0]


def test_figures_ranks_the_baselines_in_the_suite_table(sweeps, tmp_path):
    """``ckam-bench-figures --baselines PATH`` on another folder: the suite table holds the
    user's row and the baseline rows, ranked on evaluations, with the CPU-time note; a bad
    ``--baselines`` is one line naming it, exit 2."""
    _, mine, packed, _ = sweeps
    out = tmp_path / "report"
    proc = clirun.run(["ckam-bench-figures", str(mine), "--out", str(out), "--generic", "none",
                       "--baselines", str(packed)], env=ENV, capture_output=True, text=True,
                      timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    suite = (out / "posteriordb_suite.md").read_text()
    assert "nuts [target_accept=0.85] |" in suite
    assert "nuts [target_accept=0.8] (baseline)" in suite and "nuts [target_accept=0.9] (baseline)" in suite
    assert CPU_NOTE in suite
    table = (out / f"posteriordb_{POSTERIOR}.md").read_text()
    # a baseline row's sampler cell may carry a flag after "(baseline)" ("⚠ divergent (1/2
    # seeds)"): PyMC 6's pytensor 3 compiles the density to other last bits than pytensor 2.38,
    # so the same seed is another chain, and at target_accept 0.8 seed 0's diverges 10 times
    rows = [line for line in table.splitlines() if line.startswith("| ") and "(baseline)" in line]
    assert len(rows) == 2 and "density evals to b²<0.01" in table
    for bad, why in ((tmp_path / "absent.parquet", "no such file"),
                     (next(mine.glob("*/trace.parquet")), "not a ckam-bench baselines file")):
        # python -m: the exit code main() returns (clirun drops an entry point's return value)
        proc = clirun.run([sys.executable, "-m", "ckam_bench.report.cli", str(mine), "--out",
                           str(tmp_path / "r2"), "--baselines", str(bad)], env=ENV,
                          capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "--baselines" in proc.stderr and why in proc.stderr
        assert not (tmp_path / "r2").exists()


def test_the_sweep_report_says_when_no_baselines_are_shipped(sweeps):
    """The end-of-sweep report passes ``auto``: the shipped file, or one note that none is
    shipped yet."""
    _, mine, _, _ = sweeps
    suite = (mine / "report" / "posteriordb_suite.md").read_text()
    if baselines.SHIPPED.is_file():
        assert "(baseline)" in suite
    else:
        assert suite.count("no baselines are shipped yet") == 1


def test_pack_and_show_command_line(sweeps, tmp_path):
    """``pack`` refuses a missing folder and a file that is not a baselines file (left as it
    was), one line naming the argument, exit 2; ``show`` prints the stamp and the coverage."""
    peers, _, packed, _ = sweeps
    command = [sys.executable, "-m", "ckam_bench.report.baselines_cli"]
    kept = tmp_path / "notes.parquet"
    kept.write_text("mine")
    for args, name in (([str(tmp_path / "nowhere"), str(tmp_path / "b.parquet")], "FOLDER"),
                       ([str(peers), str(kept)], "OUT")):
        proc = clirun.run([*command, "pack", *args, "--command", "x"], env=ENV,
                          capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"invalid argument: {name}:" in proc.stderr
    assert kept.read_text() == "mine"
    proc = clirun.run([*command, "show", str(packed)], env=ENV, capture_output=True, text=True,
                      timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "command: ckam-bench -m experiment=posteriordb" in proc.stdout
    assert "coverage: 1 posteriors × 2 sampler configurations × 2 seeds = 4 runs, 4 present" in proc.stdout
    assert not math.isnan(float(proc.stdout.split("cpu_hours: ")[1].split()[0]))


def test_pack_in_parts_equals_one_pack(sweeps, tmp_path):
    """A suite regenerated in parts (``pack --add``): two folders packed one after the other
    give the runs and verdicts of one pack, the stamp's ``parts`` holding each part's command
    and CPU-hours; a group with fewer seeds than the others is left out, not packed; a part
    with nothing new, or another budget, is refused in one line naming the argument (exit 2)
    and the file is left as it was. ``--replace SAMPLER`` packs a sampler's runs again (after
    a fix), refused when the folder has fewer of its configurations than the file. ``missing``
    prints the sweep that makes the rest."""
    import shutil

    peers, mine, packed, stamp = sweeps
    first, second = tmp_path / "first", tmp_path / "second"
    for run in load_results(peers).runs:
        accept = run.config["sampler"]["target_accept"]
        shutil.copytree(run.path, (first if accept == 0.8 else second) / run.path.name)
    dropped = next(p for p in second.iterdir() if p.name.endswith("_s1"))
    partial = tmp_path / "partial"  # config 0.9 with seed 0 only: an incomplete group
    shutil.copytree(first, partial)
    shutil.copytree(second, partial, dirs_exist_ok=True, ignore=shutil.ignore_patterns(dropped.name))
    out = tmp_path / "parts.parquet"
    one = baselines.pack(partial, out, "part one")
    assert one["configurations"] == ["nuts [target_accept=0.8]"] and one["runs"] == 2
    assert len(one["left_out"]) == 1 and "seeds 0 of 0, 1" in one["left_out"][0]
    both = baselines.pack(second, out, "part two", add=True)
    assert [p["command"] for p in both["parts"]] == ["part one", "part two"]
    assert both["runs"] == 4 and both["command"] == "part one"
    assert both["cpu_hours"] == pytest.approx(stamp["cpu_hours"])
    whole = {(r.status["label"], r.seed): r for r in baselines.load(packed)[0]}
    runs, read = baselines.load(out)
    assert read == both and len(runs) == 4
    for run in runs:
        same = whole[(run.status["label"], run.seed)]
        assert run_evaluations(run) == run_evaluations(same)
        assert run.status["passes"] == same.status["passes"]
        assert run.status["seeds_diagnostics"] == same.status["seeds_diagnostics"]
    before = out.read_bytes()
    command = [sys.executable, "-m", "ckam_bench.report.baselines_cli"]
    proc = clirun.run([*command, "pack", str(second), str(out), "--command", "again", "--add"],
                      env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "invalid argument: FOLDER: no whole group to pack" in proc.stderr
    proc = clirun.run([*command, "pack", str(mine), str(tmp_path / "absent.parquet"), "--command",
                       "x", "--add"], env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "invalid argument: --add:" in proc.stderr
    assert not (tmp_path / "absent.parquet").exists() and out.read_bytes() == before
    for extra, message in [(["--replace", "nuts"], "--replace: replaces a sampler's runs"),
                           (["--add", "--replace", "mams"], "--replace: ")]:
        proc = clirun.run([*command, "pack", str(peers), str(out), "--command", "x", *extra],
                          env=ENV, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"invalid argument: {message}" in proc.stderr
    with pytest.raises(baselines.BaselinesError, match="fewer whole groups of nuts"):
        baselines.pack(first, out, "one configuration", add=True, replace="nuts")  # 0.9 would go
    assert out.read_bytes() == before
    again = baselines.pack(peers, out, "nuts again", add=True, replace="nuts")  # re-run after a fix
    replaced = again["parts"][-1]["replaced"]
    assert replaced["sampler"] == "nuts" and replaced["runs"] == 4 and again["runs"] == 4
    assert replaced["cpu_hours"] > 0 and again["cpu_hours"] == pytest.approx(
        both["cpu_hours"] + again["parts"][-1]["cpu_hours"] - replaced["cpu_hours"])
    for run in baselines.load(out)[0]:
        same = whole[(run.status["label"], run.seed)]
        assert run_evaluations(run) == run_evaluations(same) and run.status["passes"] == same.status["passes"]
    proc = clirun.run([*command, "missing", str(out)], env=ENV, capture_output=True, text=True,
                      timeout=300)
    assert proc.returncode == 0, proc.stderr
    sweep = proc.stdout.splitlines()[-1]
    assert sweep.startswith("part one 'posteriordb.subset=[") and POSTERIOR not in sweep
    assert "eight_schools-eight_schools_centered" in sweep
