"""An out-of-tree sampler and target, packaged and installed as a user would, found through
the ``ckam_bench.plugins`` entry point: ``ckam-bench list``, a single run, a sweep and
``ckam-bench-figures``. Packages registered under the group's interim name
``ckam_bench.commands.plugins`` are read too, with a one-line note."""

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = ROOT / "examples" / "plugin_package"


def build_plugin(tmp_path: Path, package: Path = PLUGIN) -> Path:
    """pip-install a copy of a plugin package (by default the shipped example,
    examples/plugin_package; a build writes into its source folder, hence the copy) into a
    fresh folder, as a user would; returns the folder."""
    src = tmp_path / "src"
    shutil.copytree(package, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info",
                                                               "build"))
    site = tmp_path / "site"
    proc = clirun.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(site), str(src)],
                      capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return site


def run(args, cwd, site, module="ckam_bench.commands.cli"):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return clirun.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True,
                      text=True, timeout=600, env=env)


def fake_dist(site: Path, name: str, entry_points: str) -> None:
    """An installed distribution's metadata (``<name>-0.1.dist-info``) with ``entry_points``."""
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)


def test_entry_points_become_search_path_entries(tmp_path, monkeypatch, capsys):
    from ckam_bench.commands import plugins

    assert plugins.GROUP == "ckam_bench.plugins"  # the documented group (docs/contract.md)
    fake_dist(tmp_path, "ckb_fake", "[ckam_bench.plugins]\nzz = zz_pkg.conf\naa = aa_pkg.conf\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plugins.search_path()[:2] == ["pkg://aa_pkg.conf", "pkg://zz_pkg.conf"]
    assert capsys.readouterr().err == ""  # the documented group: no note


def test_a_plugin_installed_while_the_process_runs_is_seen(tmp_path, monkeypatch):
    """The entry points are read once per state of the path: a distribution installed into a
    folder already on it (its modification time changes) is found at the next composition."""
    from ckam_bench.commands import plugins

    fake_dist(tmp_path, "ckb_early", "[ckam_bench.plugins]\nearly = early_pkg.conf\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "pkg://early_pkg.conf" in plugins.search_path()
    reads = []
    real = plugins.metadata.entry_points
    monkeypatch.setattr(plugins.metadata, "entry_points", lambda **kw: reads.append(kw) or real(**kw))
    assert "pkg://late_pkg.conf" not in plugins.search_path() and reads == []  # nothing changed
    fake_dist(tmp_path, "ckb_late", "[ckam_bench.plugins]\nlate = late_pkg.conf\n")
    os.utime(tmp_path, ns=(1, os.stat(tmp_path).st_mtime_ns + 1))  # whatever the clock's grain
    assert "pkg://late_pkg.conf" in plugins.search_path() and reads


def test_the_interim_group_name_is_read_with_a_one_line_note_once(tmp_path, monkeypatch, capsys):
    """``ckam_bench.commands.plugins`` (the group's name after the module move) still works; the
    package gets one line naming the group to use, once per process however often Hydra
    resolves the search path. A package declared under both names counts once, unnoted."""
    from ckam_bench.commands import plugins

    monkeypatch.setattr(plugins, "_noted", set())
    fake_dist(tmp_path, "ckb_interim", "[ckam_bench.commands.plugins]\nmid = mid_pkg.conf\n")
    fake_dist(tmp_path, "ckb_both", "[ckam_bench.plugins]\nboth = both_pkg.conf\n"
                                    "[ckam_bench.commands.plugins]\nboth = both_pkg.conf\n")
    fake_dist(tmp_path, "ckb_new", "[ckam_bench.plugins]\nmid = new_pkg.conf\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = plugins.search_path()
    ours = [e for e in first if e.split("//")[1].split(".")[0] in ("mid_pkg", "both_pkg", "new_pkg")]
    # sorted by entry-point name; under one name, the documented group's package first
    assert ours == ["pkg://both_pkg.conf", "pkg://new_pkg.conf", "pkg://mid_pkg.conf"]
    assert plugins.search_path() == first
    err = capsys.readouterr().err.splitlines()
    assert err == ["ckam-bench: note: plugin package 'ckb_interim' registers its configs under the "
                   "entry-point group 'ckam_bench.commands.plugins'; rename it to "
                   "'ckam_bench.plugins' in its pyproject.toml (the old name is still read)"]


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
