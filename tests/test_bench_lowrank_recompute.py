"""scripts/bench_lowrank_recompute.py: one low-rank recompute's CPU time per dimension and number
of draws, on both of the estimator's routes (the span of the draws, and all d dimensions)."""

import numpy as np
import pytest

from tests import scripts


@pytest.mark.slow  # compiles the estimator: ~9 s of one core
def test_a_row_per_size_naming_its_route(capsys):
    assert scripts.load("bench_lowrank_recompute").main(["--dims", "12", "--draws", "4", "8", "--calls", "2",
                                                         "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("load average at the start:") and "load average at the end:" in out
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| 12 |")]
    assert [(r[2].strip(), r[3].strip()) for r in rows] == [("4", "span (QR)"), ("8", "all d")]
    assert all(np.isfinite(float(r[4])) and float(r[4]) > 0 for r in rows)


def test_the_sample_is_a_gaussian_with_its_gradients():
    draws, grads = scripts.load("bench_lowrank_recompute").sample(5, 400)
    assert draws.shape == grads.shape == (400, 5)
    assert np.corrcoef(draws[:, 0], grads[:, 0])[0, 1] < -0.9  # g = -x/s² plus a little noise


def test_a_size_out_of_range_is_one_line(capsys):
    assert scripts.load("bench_lowrank_recompute").main(["--draws", "2"]) == 2
    assert capsys.readouterr().err.strip() == "--draws: each must be in [3, 2000]"
