"""The whole-chain streaming ESS (:class:`ckam_bench.metrics.ess.StreamingESS`) against
arviz-stats' bulk ESS of the stored whole chain, its independence of how the chain is cut into
blocks, and its resume state."""

from __future__ import annotations

import math

import numpy as np
import pytest
from arviz_stats.base import array_stats
from scipy.signal import lfilter

from ckam_bench.engine import store
from ckam_bench.metrics.ess import MIN_BATCHES, BulkESS, StreamingESS
from ckam_bench.engine.runner import Budget, Runner
from ckam_bench.samplers.random_walk import RandomWalk
from ckam_bench.targets.gaussians import gauss2d_corr


def arviz_bulk(x: np.ndarray) -> np.ndarray:
    return np.atleast_1d(np.asarray(
        array_stats.ess(x.T, chain_axis=None, draw_axis=-1, method="bulk"), dtype=float))


def ar1(phi: float, n: int, d: int, seed: int) -> np.ndarray:
    e = np.random.default_rng(seed).standard_normal((n, d))
    e[0] /= math.sqrt(1.0 - phi**2)  # stationary start
    return lfilter([1.0], [1.0, -phi], e, axis=0)


def feed(x: np.ndarray, seed: int, largest: int = 5000) -> StreamingESS:
    """Feed x in blocks of random sizes (1 … largest)."""
    rng = np.random.default_rng(seed)
    s, i = StreamingESS(x.shape[1]), 0
    while i < x.shape[0]:
        k = int(rng.integers(1, largest + 1))
        s.update(x[i:i + k])
        i += k
    return s


@pytest.mark.parametrize("phi, n", [(0.0, 300_000), (0.5, 300_000), (0.9, 300_000),
                                    (0.99, 2_000_000)])
def test_ar1_within_5_percent_of_arviz_bulk_ess(phi, n):
    """Long AR(1) chains (τ from 1 to 199): per coordinate within 5 % of arviz-stats' bulk ESS
    of the whole stored chain. Both estimate τ from about 2M lags with relative noise about
    sqrt(4M/n) (Bartlett), so the chains are long enough for arviz's own figure to be stable:
    at φ = 0.99 and n = 300 000 the two differ by up to 15 % (both 7–8 % from the true
    n(1 − φ)/(1 + φ)); at 2 000 000, by 2 %."""
    x = ar1(phi, n, 2, seed=int(phi * 100))
    ess = feed(x, seed=1).ess()
    np.testing.assert_allclose(ess, arviz_bulk(x), rtol=0.05)


def test_block_sizes_do_not_change_the_estimate():
    x = ar1(0.9, 50_000, 2, seed=5)
    one = feed(x, seed=2, largest=7).ess()
    np.testing.assert_allclose(feed(x, seed=3, largest=20000).ess(), one, rtol=1e-9)
    whole = StreamingESS(2)
    whole.update(x)
    np.testing.assert_allclose(whole.ess(), one, rtol=1e-9)


def test_memory_does_not_grow_with_the_chain():
    short, long = feed(ar1(0.5, 10_000, 2, 0), 0), feed(ar1(0.5, 1_000_000, 2, 0), 0)
    size = lambda s: sum(np.asarray(v).nbytes for v in s.state_dict().values())  # noqa: E731
    # one level per doubling of the chain, each of fixed size
    assert size(long) < 2 * size(short) < 100_000


def test_short_constant_nan_and_offset_columns():
    rng = np.random.default_rng(7)
    s = StreamingESS(4)
    s.update(rng.standard_normal((MIN_BATCHES - 1, 4)))
    assert np.all(np.isnan(s.ess()))
    x = rng.standard_normal((5000, 4))
    x[:, 1] = 3.0  # a coordinate that never moved: ESS 1, as ess_per_dim
    x[10, 2] = np.nan
    x[:, 3] = 1e8 + 1e-3 * x[:, 0]  # far from 0: the sums are taken about the first draw
    s = StreamingESS(4)
    s.update(x)
    ess = s.ess()
    assert ess[1] == 1.0 and math.isnan(ess[2])
    assert ess[3] == pytest.approx(ess[0], rel=1e-6)
    assert ess[0] == pytest.approx(arviz_bulk(x[:, :1])[0], rel=0.05)


def test_state_round_trip_through_the_resume_file(tmp_path):
    """Stopped half-way, saved with the resume snapshot's writer, restored and continued: the
    same ESS as the uninterrupted stream."""
    x = ar1(0.95, 100_000, 3, seed=9)
    uninterrupted = feed(x, seed=4).ess()
    first = feed(x[:37_001], seed=4)
    path = tmp_path / store.RESUME
    from ckam_bench.engine import rundir

    rundir.write_resume({f"metric.ess.{k}": v for k, v in first.state_dict().items()},
                        {"rows": []}, path)
    arrays, _ = store.read_resume(path)
    restored = StreamingESS(3)
    restored.load_state_dict({k[len("metric.ess."):]: v for k, v in arrays.items()})
    rng = np.random.default_rng(11)
    i = 37_001
    while i < x.shape[0]:
        k = int(rng.integers(1, 3000))
        restored.update(x[i:i + k])
        i += k
    np.testing.assert_allclose(restored.ess(), uninterrupted, rtol=1e-9)


class KeepAll:
    """A test metric that keeps the whole collected chain."""

    def __init__(self):
        self.blocks = []

    def update(self, samples):
        self.blocks.append(np.array(samples))

    def compute(self, buffer):
        return {}


def test_random_walk_run_matches_arviz_on_its_whole_chain(tmp_path):
    """A real run (random-walk Metropolis on a correlated Gaussian, 400 000 iterations, more
    than the 10 000 stored): the trace's ess_* are within 5 % of arviz-stats' bulk ESS of the
    whole chain, and ess_min_stored is the (lower) ESS of the thinned store."""
    target = gauss2d_corr(dim=2, rho=0.9)
    keep = KeepAll()
    labels = {"run_id": "r", "target": "g", "sampler": "rw", "kernel": "none", "seed": 3}
    runner = Runner(RandomWalk(step_size=1.5), target, {"ess": BulkESS(target), "all": keep},
                    Budget(600, max_iterations=400_000), tmp_path, np.random.default_rng(3),
                    labels, progress=False, checkpoints=np.array([100_000.0]),
                    checkpoint_unit="iterations")
    runner.run()
    chain = np.concatenate(keep.blocks)
    assert chain.shape[0] == 400_000
    ref = arviz_bulk(chain)
    row = runner.latest
    assert row["ess_min"] == pytest.approx(ref.min(), rel=0.05)
    assert row["ess_max"] == pytest.approx(ref.max(), rel=0.05)
    assert row["ess_per_density"] == pytest.approx(row["ess_min"] / target.n_density)
    assert row["ess_min_stored"] < row["ess_min"]
