"""R-hat and the MCSE of the mean across chains (ckam_bench.metrics.ess.rank_rhat, mcse_mean),
held equal to arviz-stats on the chains of tests/test_metrics.py."""

import math

import numpy as np
import pytest
from arviz_stats.base import array_stats

from ckam_bench.metrics.ess import mcse_mean, rank_rhat
from tests.test_metrics import chain

KINDS = ["iid", "ar0.3", "ar0.9", "ar0.99", "ar-0.5", "walk", "lattice", "discrete", "sticky", "alternating"]


def chains(kind, m, n, d, seed, shift=0.0):
    """(m, n, d): m chains of one kind, the last shifted by ``shift`` (a chain elsewhere)."""
    x = np.stack([chain(kind, n, d, seed + 97 * c) for c in range(m)])
    x[-1] += shift
    return x


def arviz(x, what):
    """arviz-stats on (m, n, d) chains, per coordinate."""
    if what == "rhat":
        out = array_stats.rhat(x, chain_axis=0, draw_axis=1, method="rank")
    else:
        out = array_stats.mcse(x, chain_axis=0, draw_axis=1, method="mean")
    return np.atleast_1d(np.asarray(out, dtype=float))


@pytest.mark.parametrize("seed", range(40))
def test_rhat_and_mcse_equal_arviz_stats(seed):
    rng = np.random.default_rng(seed)
    kind = KINDS[seed % len(KINDS)]
    m, n, d = int(rng.integers(2, 7)), int(np.exp(rng.uniform(math.log(8), math.log(3000)))), int(rng.integers(1, 6))
    x = chains(kind, m, n, d, seed, shift=float(rng.choice([0.0, 0.5, 3.0])))
    np.testing.assert_allclose(rank_rhat(x), arviz(x, "rhat"), rtol=1e-9, err_msg=f"{kind} {m} {n} {d}")
    np.testing.assert_allclose(mcse_mean(x), arviz(x, "mcse"), rtol=1e-9, err_msg=f"{kind} {m} {n} {d}")


def test_chains_apart_have_a_large_rhat_and_mixed_ones_not():
    mixed = chains("iid", 4, 2000, 3, seed=1)
    apart = chains("iid", 4, 2000, 3, seed=1, shift=5.0)
    assert np.all(rank_rhat(mixed) < 1.01)
    assert np.all(rank_rhat(apart) > 1.5)
    # iid draws: the MCSE of the mean is sd / sqrt(m n)
    np.testing.assert_allclose(mcse_mean(mixed), 1 / math.sqrt(8000), rtol=0.1)


def test_nan_constant_and_short_chains():
    x = chains("iid", 3, 101, 4, seed=3)
    x[1, 5, 0] = math.nan
    x[:, :, 2] = 1.0  # never moved: R-hat 0/0, NaN as arviz-stats
    rhat, mcse = rank_rhat(x), mcse_mean(x)
    assert math.isnan(rhat[0]) and math.isnan(mcse[0])
    np.testing.assert_allclose(rhat[[1, 3]], arviz(x[..., [1, 3]], "rhat"), rtol=1e-9)
    np.testing.assert_allclose(mcse, arviz(x, "mcse"), rtol=1e-9)
    assert math.isnan(rhat[2]) and mcse[2] == 0.0
    assert np.all(np.isnan(rank_rhat(x[:1])))  # one chain: no R-hat
    assert np.all(np.isnan(rank_rhat(x[:, :3]))) and np.all(np.isnan(mcse_mean(x[:, :3])))
    with pytest.raises(ValueError, match=r"\(m, n, d\)"):
        rank_rhat(x[0])
