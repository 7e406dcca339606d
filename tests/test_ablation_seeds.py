"""scripts/ablation_seeds.py: one change to a sampler, seed by seed, from two sweep folders —
each seed's gradients to b² < 0.01 read from its trace (∞ for a run the runner flagged),
the five-seed medians, the summary line and the CSV; an earlier ablation's CSV as the runs
before; bad folders in one line."""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tests import clirun

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "ablation_seeds.py"
GRADS = np.geomspace(100.0, 1e5, 10)


def _script():
    spec = importlib.util.spec_from_file_location("ablation_seeds", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sweep(folder, crossings, stuck=()):
    """One run per seed on earn_height whose b² stays below 0.01 from checkpoint
    ``crossings[seed]``; the runner flagged the seeds in ``stuck``."""
    from tests.test_report import make_run

    for seed, k in enumerate(crossings):
        reach = np.r_[np.full(k, 0.5), np.full(10 - k, 0.001)]
        make_run(folder, "bimodal", "rw", seed=seed, columns={"bias2": reach, "n_grad": GRADS,
                                                              "n_collected": np.arange(10) * 100},
                 status_extra={"posterior": "earnings-earn_height", **({"flags": ["stuck"]} if seed in stuck else {})})


def test_seed_by_seed_medians_summary_and_csv(tmp_path, capsys):
    _sweep(tmp_path / "before", [5, 6, 7], stuck=(2,))
    _sweep(tmp_path / "after", [3, 4, 5])
    out = tmp_path / "seeds.csv"
    assert _script().main([str(tmp_path / "before"), str(tmp_path / "after"), "--csv", str(out)]) == 0
    table = pd.read_csv(out, keep_default_na=False, dtype=str)
    assert list(table["seed"]) == ["0", "1", "2"]
    assert list(table["before"]) == [f"{GRADS[5]:.0f}", f"{GRADS[6]:.0f}", "inf"]  # seed 2 flagged: ∞
    assert list(table["after"]) == [f"{GRADS[k]:.0f}" for k in (3, 4, 5)]
    assert list(table["before_void"]) == ["", "", "flagged"] and set(table["after_void"]) == {""}
    text = capsys.readouterr().out
    ratio = GRADS[4] / GRADS[6]  # the medians: seed 1's before (∞ is the largest), seed 1's after
    assert f"earnings-earn_height: {GRADS[6]:.0f} -> {GRADS[4]:.0f}" in text
    assert "fewer gradients (median, by more than 1.2x) on 1, more on 0" in text
    assert f"geometric mean of the finite median ratios {ratio:.2f}" in text
    assert "seeds voided (flagged or failing the reference) 1 before, 0 after" in text
    assert math.isclose(ratio, 10 ** -(2 / 3), rel_tol=1e-12)  # two checkpoints of 10^(1/3)


def test_an_earlier_ablations_csv_is_the_before_arm(tmp_path, capsys):
    """A CSV this script wrote stands for the runs of its ``after`` arm (``--arm before``: the
    other), its voided seeds included: the same comparison as from the folders."""
    _sweep(tmp_path / "first", [5, 6, 7], stuck=(2,))
    _sweep(tmp_path / "second", [3, 4, 5])
    script, old = _script(), tmp_path / "old.csv"
    assert script.main([str(tmp_path / "first"), str(tmp_path / "first"), "--csv", str(old)]) == 0
    from_folder, from_csv = tmp_path / "a.csv", tmp_path / "b.csv"
    assert script.main([str(tmp_path / "first"), str(tmp_path / "second"), "--csv", str(from_folder)]) == 0
    capsys.readouterr()
    for arm in ("after", "before"):
        assert script.main([str(old), str(tmp_path / "second"), "--arm", arm, "--csv", str(from_csv)]) == 0
        assert from_csv.read_bytes() == from_folder.read_bytes()
    assert "seeds voided (flagged or failing the reference) 1 before, 0 after" in capsys.readouterr().out


def test_bad_folders_are_one_line_and_exit_2(tmp_path):
    (tmp_path / "empty").mkdir()
    for args, message in (([str(tmp_path / "nothing"), str(tmp_path / "empty")], "before: no such folder"),
                          ([str(tmp_path / "empty"), str(tmp_path / "empty")], "share no suite run"),
                          ([str(tmp_path / "empty" / "x.csv"), str(tmp_path / "empty")], "before: no such folder")):
        proc = clirun.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    proc = clirun.run([sys.executable, str(SCRIPT), str(tmp_path / "other.csv"), str(tmp_path / "empty")],
                      capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and "not an ablation CSV" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "other.csv"]
