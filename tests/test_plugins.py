"""An out-of-tree sampler and target, packaged and installed as a user would, found through
the ``ckam_bench.commands.plugins`` entry point: ``ckam-bench list``, a single run, a sweep and
``ckam-bench-figures``."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = ROOT / "examples" / "plugin_package"


def build_plugin(tmp_path: Path) -> Path:
    """pip-install a copy of the shipped example plugin (examples/plugin_package) into a fresh
    folder, as a user would; returns the folder."""
    src = tmp_path / "src"
    shutil.copytree(PLUGIN, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info",
                                                               "build"))
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(site), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return site


def run(args, cwd, site, module="ckam_bench.commands.cli"):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env=env)


def test_entry_points_become_search_path_entries(tmp_path, monkeypatch):
    from ckam_bench.commands import plugins

    dist = tmp_path / "ckb_fake-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ckb-fake\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[ckam_bench.commands.plugins]\nzz = zz_pkg.conf\naa = aa_pkg.conf\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plugins.search_path()[:2] == ["pkg://aa_pkg.conf", "pkg://zz_pkg.conf"]


@pytest.mark.slow
def test_plugin_sampler_and_target_run_sweep_and_figures(tmp_path):
    site = build_plugin(tmp_path)
    work = tmp_path / "work"
    work.mkdir()

    listing = run(["list"], work, site)
    assert listing.returncode == 0, listing.stderr
    lines = {ln.split()[0]: ln for ln in listing.stdout.splitlines() if ln.startswith("  ")}
    assert "Barker proposal MCMC" in lines["barker"] and "needs a gradient" in lines["barker"]
    assert "d=3" in lines["banana3"] and "exact draws" in lines["banana3"]

    sweep = work / "sweep"
    args = ["-m", "sampler=barker,rw", "target=banana3", "seed=0,1",
            "budget.max_iterations=3000", "progress=false", f"hydra.sweep.dir={sweep}"]
    proc = run(args, work, site)
    assert proc.returncode == 0, proc.stderr
    # the run folders (the sweep also holds report/, written by the end-of-sweep callback)
    folders = sorted(p for p in sweep.iterdir() if (p / "status.json").is_file())
    assert len(folders) == 4
    assert (sweep / "report" / "report.html").is_file()
    for folder in folders:
        status = json.loads((folder / "status.json").read_text())
        assert status["state"] == "complete", (folder, status["state"])
    assert any("barker" in f.name for f in folders)

    again = run(args, work, site)  # a complete sweep re-run is skipped, not recomputed
    assert again.returncode == 0, again.stderr

    out = tmp_path / "figs"
    figs = run([str(sweep), "--out", str(out)], work, site, module="ckam_bench.report.cli")
    assert figs.returncode == 0, figs.stderr
    report = (out / "report.md").read_text()
    assert "| banana3 | barker | none | 2 | 0, 1 | complete 2 |" in report
    results = (out / "results_banana3.md").read_text()
    assert any(row.startswith("| barker |") for row in results.splitlines())

    # A typo in a plugin option is a configuration error naming the option (exit 2).
    bad = run(["sampler=barker", "target=banana3", "sampler.step_size=-1",
               "budget.max_iterations=10"], work, site)
    assert bad.returncode == 2 and "sampler.step_size" in bad.stderr
