"""scripts/bench_block_calls.py: a call's own cost on the sampler clock, from one block against
as many one-iteration calls; one iteration per call runs the same chain (the block size does
not change a sampler's random stream), so the two timings cover the same work."""

import numpy as np
import pytest

from tests import scripts


def test_a_row_per_sampler_with_its_two_costs(capsys):
    pytest.importorskip("pymc")
    scripts.load("bench_block_calls").main(["--model", "eight_schools_noncentered", "--samplers", "nuts_lowrank", "--warmup", "50",
                    "--iterations", "20"])
    out = capsys.readouterr().out
    assert out.startswith("load average at the start:") and "load average at the end:" in out
    row = next(line for line in out.splitlines() if line.startswith("| nuts_lowrank |"))
    per_iteration = float(row.split("|")[2])
    assert np.isfinite(per_iteration) and per_iteration > 0
    float(row.split("|")[3])  # a number (a difference of two timings: its sign is the machine's)


def test_an_unknown_sampler_is_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        scripts.load("bench_block_calls").main(["--samplers", "nosuch"])
    assert stop.value.code == 2 and "no config conf/sampler/nosuch.yaml" in capsys.readouterr().err
