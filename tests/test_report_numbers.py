"""Issue 29 §8: numbers in the report agree with the data — every curve ends at its run's last
checkpoint, ties share a rank, the suite discards what b² discards and keys rows by
configuration, R-hat compares the seeds on the same collected iterations."""

import numpy as np
import pandas as pd
import pytest

from ckam_bench.report import aggregate as agg


def test_every_run_curve_ends_at_its_last_checkpoint():
    """A run shorter than the longest ends at its own last value (the tables' final value),
    not at its second-to-last checkpoint."""
    x_short = np.geomspace(1.0, 10.0, 7)      # ends at 10: no geometric grid point there
    x_long = np.geomspace(1.0, 100.0, 13)
    rows = [{"run_id": "short", "g": "a", "checkpoint": k, "s": x, "kl": 1.0 / (k + 1)}
            for k, x in enumerate(x_short)]
    rows += [{"run_id": "long", "g": "b", "checkpoint": k, "s": x, "kl": 2.0 / (k + 1)}
             for k, x in enumerate(x_long)]
    frame = pd.DataFrame(rows)
    curve = agg.aggregate(frame, "s", "kl", by=["g"])
    for name, final, end in (("a", 1.0 / 7, 10.0), ("b", 2.0 / 13, 100.0)):
        part = curve[curve["g"] == name]
        assert part["x"].iloc[-1] == pytest.approx(end)
        assert part["median"].iloc[-1] == pytest.approx(final)
    # a grid passed in (as the figures do) gets the run ends too
    grid = agg.common_grid(frame, "s", n=50)
    part = agg.aggregate(frame, "s", "kl", by=["g"], grid=grid).query("g == 'a'")
    assert part["median"].iloc[-1] == pytest.approx(1.0 / 7)
