"""posteriordb.subset: choosing the suite's posteriors by name, character or dimension."""

import os
import sys
from pathlib import Path

import pytest

from ckam_bench.commands.config import posteriordb_models
from ckam_bench.commands.overrides import problem
from ckam_bench.posteriordb import CHARACTERS, SUITE
from ckam_bench.posteriordb.subset import SubsetError, select, suite
from ckam_bench.commands.validate import ConfigError
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]


def names(subset):
    return [p.name for p in select(subset)]


def test_terms_choose_by_name_glob_function_character_and_dimension():
    chosen = {p.name: p for p in suite()}  # SUITE and the high-dimensional ones with a reference
    everything = list(chosen)
    assert everything[:len(SUITE)] == list(SUITE)
    assert names(None) == names("all") == names(["all"]) == everything
    assert names(["mesquite-mesquite"]) == names(["mesquite"]) == ["mesquite-mesquite"]
    assert names(["eight_schools-*"]) == [n for n in everything if n.startswith("eight_schools-")]
    for character in {p.character for p in chosen.values()}:
        assert names([character]) == [p.name for p in chosen.values() if p.character == character]
    assert set(CHARACTERS) >= {p.character for p in chosen.values()}
    # names and characters are a union; dimension ranges cut it (bounds included)
    small = [p.name for p in chosen.values() if p.dim <= 5]
    assert names(["dim:..5"]) == small
    assert names(["regression", "dim:..5"]) == [
        p.name for p in chosen.values() if p.character == "regression" and p.dim <= 5]
    dims = sorted({p.dim for p in chosen.values()})
    d = dims[len(dims) // 2]
    assert names([f"dim:{d}"]) == [p.name for p in chosen.values() if p.dim == d]
    assert names([f"dim:{d}..", f"dim:..{d}"]) == names([f"dim:{d}"])
    assert names(["mesquite", "eight_schools-*"]) == [
        n for n in everything if n == "mesquite-mesquite" or n.startswith("eight_schools-")]
    assert posteriordb_models(["mesquite"]) == SUITE["mesquite-mesquite"].model


@pytest.mark.parametrize("subset, words", [
    (["mesquitte"], "did you mean 'mesquite"),
    (["dim:x"], "is not a dimension range"),
    (["dim:.."], "is not a dimension range"),
    (["dim:100000.."], "selects no posterior"),
    ([""], "empty term"),
])
def test_a_term_that_selects_nothing_is_an_error(subset, words):
    with pytest.raises(SubsetError, match=words):
        select(subset)
    with pytest.raises(ConfigError, match=words):
        posteriordb_models(subset)


def test_the_command_line_refuses_a_bad_subset_in_one_line(tmp_path):
    assert "did you mean 'kilpisjarvi'" in problem(["experiment=posteriordb", "posteriordb.subset=[kilpisjarvx]"])
    assert problem(["experiment=posteriordb", "posteriordb.subset=[kilpis*,dim:..3]"]) is None
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = clirun.run([sys.executable, "-m", "ckam_bench.commands.entry", "list", "posteriordb",
                           "posteriordb.subset=[regression,dim:..3]"], cwd=tmp_path,
                      capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ")]
    assert listed == names(["regression", "dim:..3"])
    bad = clirun.run([sys.executable, "-m", "ckam_bench.commands.entry", "list", "posteriordb",
                          "posteriordb.subset=[dim:x]"], cwd=tmp_path, capture_output=True,
                     text=True, timeout=300, env=env)
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
