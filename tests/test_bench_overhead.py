"""scripts/bench_peer_overhead.py's pooled verdict: the sign-test interval for the median of the
harness / direct ratios, against its closed form and by coverage."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    argv = sys.argv
    sys.argv = [*argv, "--no-pin"]  # importing must not pin this test process to one core
    try:
        spec = importlib.util.spec_from_file_location("bench_peer_overhead", ROOT / "scripts" / "bench_peer_overhead.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.argv = argv
    return module


def test_median_interval_is_the_sign_tests(bench):
    x = np.arange(1.0, 29.0)  # n = 28, already sorted
    mid, lo, hi = bench.median_interval(x[::-1])
    k = max(j for j in range(1, 15) if binom.cdf(j - 1, 28, 0.5) <= 0.025)
    assert (mid, lo, hi) == (14.5, x[k - 1], x[28 - k]) and k == 9
    assert np.isnan(bench.median_interval(np.arange(5.0))[1:]).all()  # n = 5: no 95 % interval exists
    assert bench.median_interval(np.arange(7.0))[1:] == (0.0, 6.0)  # n = 7: the range (98.4 %)


def test_median_interval_covers_the_median(bench):
    rng = np.random.default_rng(0)
    hits = [lo <= 1.0 <= hi for lo, hi in (bench.median_interval(1.0 + rng.standard_t(3, 28) / 10)[1:]
                                           for _ in range(2000))]
    assert 0.95 <= np.mean(hits) <= 0.99


def test_pooled_verdict_per_peer(bench):
    rows = [{"peer": "numpyro_nuts", "ratios": [1.0, 1.1, 1.2]}, {"peer": "numpyro_nuts", "ratios": [0.9, 1.05]},
            {"peer": "nutpie", "ratios": [1.0]}, {"peer": "nuts (ours)"}]
    lines = bench.pooled(rows)
    assert len(lines) == 2 and lines[0].startswith("numpyro_nuts: pooled harness / direct 1.050")
    assert "over 5 quadruples on 2 models" in lines[0]
