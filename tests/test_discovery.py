"""The project's own --help, --version and list."""

import os
import subprocess
import sys
from pathlib import Path

import ckam_bench

ROOT = Path(__file__).resolve().parents[1]


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "ckam_bench.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_help_and_version(tmp_path):
    help_ = run("--help", cwd=tmp_path)
    assert help_.returncode == 0
    for text in ("ckam-bench list", "ckam-bench-figures", "ckam-bench-check", "budget.clock",
                 "checkpoint.on", "experiment="):
        assert text in help_.stdout
    assert "preset/" not in help_.stdout and "Hydra" not in help_.stdout.splitlines()[0]
    version = run("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == f"ckam-bench {ckam_bench.__version__}"
    assert list(tmp_path.iterdir()) == []


def test_list_shows_every_option_with_capabilities(tmp_path):
    proc = run("list", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    sections = {line.split(" (")[0]: line for line in out.splitlines() if line and line[0] != " "}
    assert set(sections) == {"sampler", "target", "kernel", "schedule", "experiment"}
    conf = ROOT / "conf"
    for group in ("sampler", "target", "kernel", "schedule", "experiment"):
        for yaml in (conf / group).glob("*.yaml"):
            assert f"  {yaml.stem} " in out, (group, yaml.stem)
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert "d=2, gradient, exact draws" in lines["bimodal"]
    assert "gradient-free" in lines["rw"] and "kernel" in lines["ckam"]
    assert "needs a gradient" in lines["mala"] and "specific targets only" in lines["horseshoe_gibbs"]
    # target=pymc has no model until target.model=... is given: its row says so
    assert "target.model: must be set" in lines["pymc"]
    assert "error:" not in out.replace(lines["pymc"], "")
    assert list(tmp_path.iterdir()) == []
