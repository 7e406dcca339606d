"""The reproduce scripts' shared command line (scripts/reproduce_common.sh): help, bad arguments
and a missing installation end with a clear message and exit 2, before anything is created."""

import os
from pathlib import Path

import pytest
from tests import clirun

SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "scripts").glob("reproduce_*_paper.sh"))
EXTRA = {"reproduce_gradient_paper.sh": ["--only", "gad_neal"], "reproduce_kamh_paper.sh": ["--glass"]}


def run(script, *args, cwd, path=None):
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path
    return clirun.run(["bash", str(script), *args], cwd=cwd, env=env, capture_output=True, text=True,
                      timeout=60)


def test_there_are_four_scripts():
    assert [s.name for s in SCRIPTS] == ["reproduce_ckam_paper.sh", "reproduce_divergence_paper.sh",
                                         "reproduce_gradient_paper.sh", "reproduce_kamh_paper.sh"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_help_prints_the_usage(script, tmp_path):
    out = run(script, "--help", cwd=tmp_path)
    assert out.returncode == 0 and "--jobs N" in out.stdout and "--out DIR" in out.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
@pytest.mark.parametrize("args, message", [(["--bogus"], "unknown argument --bogus"),
                                           (["--jobs", "0"], "positive integer, got 0"),
                                           (["--seeds", "two"], "positive integer, got two")])
def test_bad_arguments_exit_2_and_create_nothing(script, args, message, tmp_path):
    out = run(script, *EXTRA.get(script.name, []), *args, cwd=tmp_path)
    assert out.returncode == 2
    first = out.stderr.splitlines()[0]
    assert first.startswith(f"{script.name}: ") and first.endswith(message)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_a_missing_installation_is_named(script, tmp_path):
    out = run(script, "--quick", cwd=tmp_path, path="/usr/bin:/bin")
    assert out.returncode == 2
    assert out.stderr.strip() == f"{script.name}: ckam-bench not found (pip install -e .)"
    assert list(tmp_path.iterdir()) == []
