"""scripts/reproduce_kamh_paper.sh's own options (the shared ones: tests/test_scripts.py)."""

import pytest

from tests.test_scripts import SCRIPTS, run

KAMH = next(s for s in SCRIPTS if s.name == "reproduce_kamh_paper.sh")


@pytest.mark.parametrize("value", ["0", "ten", "-5"])
def test_bad_glass_iterations_exit_2_and_create_nothing(value, tmp_path):
    out = run(KAMH, "--glass-iterations", value, cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.splitlines()[0] == f"reproduce_kamh_paper.sh: --glass-iterations needs a positive integer, got {value}"
    assert list(tmp_path.iterdir()) == []


def test_help_names_the_glass_options(tmp_path):
    out = run(KAMH, "--help", cwd=tmp_path)
    assert out.returncode == 0 and "--glass-iterations N" in out.stdout and "--glass-only" in out.stdout
