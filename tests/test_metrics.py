"""Tests of the metrics package: symmetric KL, bulk ESS and the thinning buffer."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from arviz_stats.base import array_stats
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf
from scipy.signal import lfilter
from scipy.special import ndtr

from ckam_bench.metrics import BulkESS, SymmetricKL, ThinningBuffer, ess_per_dim, symmetric_kl
from ckam_bench.targets.base import CapabilityError, Target
from ckam_bench.targets.mixtures import bimodal, gmm32

CONF = Path(__file__).resolve().parents[1] / "conf"


class DiagGaussian(Target):
    """N(mean, diag(sd²)) with exact draws and marginals; grid masses from the base class."""

    name = "diag_gaussian"

    def __init__(self, mean, sd, box):
        self.mu, self.sd = np.asarray(mean, float), np.asarray(sd, float)
        super().__init__(self.mu.size, box=box)

    def _log_density(self, x):
        z = (np.asarray(x) - self.mu) / self.sd
        return float(-0.5 * z @ z)

    def _log_density_batch(self, X):
        z = (np.asarray(X) - self.mu) / self.sd
        return -0.5 * np.sum(z * z, axis=1)

    def sample(self, n, rng):
        return self.mu + self.sd * rng.standard_normal((n, self.dim))

    def marginal_cdf(self, j, x):
        return ndtr((np.asarray(x) - self.mu[j]) / self.sd[j])


def gauss2d():
    return DiagGaussian([1.0, -0.5], [1.0, 2.0], [[-4.0, 6.0], [-9.0, 8.0]])


def gauss5d():
    return DiagGaussian(np.arange(5.0), np.linspace(0.5, 2.5, 5), [[-10.0, 14.0]] * 5)


def kl_of(target, x, **kwargs) -> dict:
    metric = SymmetricKL(target, **kwargs)
    metric.update(x)
    return metric.compute(None)


# ------------------------------------------------------------------------ symmetric_kl
def test_symmetric_kl_closed_form_with_pseudocount_and_floor():
    p = np.array([0.5, 0.25, 0.25, 0.0])
    counts = np.array([2, 1, 0, 1])
    # n = 4, B = 4, a = 0.5: p_s = (c + a)/(n + aB) = [2.5, 1.5, 0.5, 1.5]/6,
    # p_hat = c/n = [.5, .25, 0, .25]; the last bin has p = 0, floored at 1e-300.
    kl_p_phat = (
        0.5 * math.log(0.5 / (2.5 / 6))
        + 0.25 * math.log(0.25 / (1.5 / 6))
        + 0.25 * math.log(0.25 / (0.5 / 6))
    )
    kl_phat_p = 0.5 * math.log(1.0) + 0.25 * math.log(1.0) + 0.25 * math.log(0.25 / 1e-300)
    assert symmetric_kl(p, counts, 0.5) == pytest.approx(kl_p_phat + kl_phat_p, rel=1e-12)


def test_symmetric_kl_closed_form_without_pseudocount():
    p = np.array([0.2, 0.3, 0.5])
    p_hat = np.array([0.1, 0.2, 0.7])
    expected = sum(a * math.log(a / b) + b * math.log(b / a) for a, b in zip(p, p_hat))
    assert symmetric_kl(p, [1, 2, 7], 0.0) == pytest.approx(expected, rel=1e-12)
    # Shape-agnostic: a 2-D grid gives the same value as its flattening.
    grid = symmetric_kl(np.array([[0.2, 0.3], [0.5, 0.0]]), [[1, 2], [7, 0]], 0.0)
    assert grid == pytest.approx(expected, rel=1e-12)


def test_symmetric_kl_identical_is_zero_and_empty_is_nan():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    assert symmetric_kl(p, [1, 2, 3, 4], 0.0) == pytest.approx(0.0, abs=1e-15)
    assert symmetric_kl(p, [10, 20, 30, 40], 0.5) > 0.0
    assert math.isnan(symmetric_kl(p, [0, 0, 0, 0], 0.5))
    with pytest.raises(ValueError):
        symmetric_kl(p, [1, 2, 3], 0.5)


# ------------------------------------------------------------------------ SymmetricKL
@pytest.mark.parametrize(
    "make_target, mode",
    [(bimodal, "auto"), (gauss2d, "grid"), (gauss2d, "marginal"), (gmm32, "auto")],
)
def test_kl_streaming_equals_batch(make_target, mode):
    target = make_target()
    rng = np.random.default_rng(3)
    x = target.sample(5000, rng)
    batch = kl_of(target, x, mode=mode)
    streaming = SymmetricKL(target, mode=mode)
    cuts = np.sort(rng.integers(0, x.shape[0], size=30))
    for block in np.split(x, cuts):  # includes empty blocks
        streaming.update(block)
    assert streaming.compute(None) == batch
    assert math.isfinite(batch["kl"]) and batch["kl"] > 0


@pytest.mark.parametrize(
    "make_target, mode",
    [
        (bimodal, "auto"),
        (gauss2d, "auto"),
        (gauss5d, "auto"),
        (gauss2d, "marginal"),
        (gmm32, "auto"),
    ],
)
def test_kl_of_exact_draws_decreases_with_n(make_target, mode):
    target = make_target()
    rng = np.random.default_rng(11)
    values = [kl_of(target, target.sample(n, rng), mode=mode)["kl"] for n in (10**3, 10**4, 10**5)]
    assert values[0] > values[1] > values[2] > 0
    assert values[2] < 0.05


def test_kl_expected_mode():
    target = gauss2d()
    assert SymmetricKL(target).mode == "grid"
    assert SymmetricKL(target, mode="marginal").mode == "marginal"
    assert SymmetricKL(gauss5d()).mode == "marginal"


def test_kl_gmm32_exact_draws_small():
    # E[KL] ≈ (bins - 1)/n per marginal for exact draws: 49/1e5 ≈ 5e-4.
    target = gmm32()
    value = kl_of(target, target.sample(10**5, np.random.default_rng(5)))["kl"]
    assert 2e-4 < value < 1e-3


def test_kl_one_mode_of_bimodal_is_large():
    target = bimodal()
    rng = np.random.default_rng(7)
    n = 10**4
    left = np.array([-8.0, 0.0]) + math.sqrt(0.5) * rng.standard_normal((n, 2))
    exact = kl_of(target, target.sample(n, rng))["kl"]
    one_mode = kl_of(target, left)["kl"]
    assert one_mode > 1.0
    assert one_mode > 10 * exact


def test_kl_outside_counted_and_ignored_grid():
    target = bimodal()
    rng = np.random.default_rng(2)
    inside = target.sample(2000, rng)
    outside = np.array([[30.0, 0.0], [0.0, -13.0], [np.nan, 0.0], [np.inf, 1.0], [-17.5, 11.0]])
    metric = SymmetricKL(target)
    metric.update(inside[:1000])
    metric.update(outside)
    metric.update(inside[1000:])
    result = metric.compute(None)
    assert result["kl"] == kl_of(target, inside)["kl"]
    assert result["kl_outside"] == pytest.approx(5 / 2005, rel=1e-12)
    # Points on the box boundary are inside (the last bin is closed).
    assert kl_of(target, np.array([[17.0, 12.0], [-17.0, -12.0]]))["kl_outside"] == 0.0


def test_kl_outside_marginal_mode_keeps_in_range_coordinates():
    target = gauss5d()
    rng = np.random.default_rng(4)
    inside = target.sample(3000, rng)
    partly = target.sample(10, rng)
    partly[:, 0] = 100.0  # coordinate 0 outside; the other coordinates still count
    metric = SymmetricKL(target)
    metric.update(np.vstack([inside, partly, np.full((3, 5), -50.0)]))
    assert metric.compute(None)["kl_outside"] == pytest.approx(13 / 3013, rel=1e-12)
    reference = SymmetricKL(target)
    reference.update(inside)
    reference.update(np.column_stack([np.full(10, np.nan), partly[:, 1:]]))  # NaN: not binned
    assert metric.compute(None)["kl"] == reference.compute(None)["kl"]


def test_kl_no_samples_is_nan():
    result = SymmetricKL(bimodal()).compute(None)
    assert math.isnan(result["kl"]) and math.isnan(result["kl_outside"])


def test_kl_state_round_trip():
    target = gmm32(dim=4)
    rng = np.random.default_rng(8)
    a, b = target.sample(500, rng), target.sample(700, rng)
    first = SymmetricKL(target)
    first.update(a)
    resumed = SymmetricKL(target)
    resumed.load_state_dict(first.state_dict())
    first.update(b)
    resumed.update(b)
    assert resumed.compute(None) == first.compute(None)


def test_kl_rejects_bad_settings():
    with pytest.raises(ValueError):
        SymmetricKL(gauss5d(), mode="grid")
    with pytest.raises(ValueError):
        SymmetricKL(bimodal(), mode="cube")
    with pytest.raises(ValueError):
        SymmetricKL(bimodal(), bins=0)
    with pytest.raises(ValueError):
        SymmetricKL(bimodal(), pseudocount=-1.0)
    no_box = DiagGaussian([0.0, 0.0], [1.0, 1.0], None)
    with pytest.raises(CapabilityError):
        SymmetricKL(no_box)

    class NoMarginals(Target):
        name = "no_marginals"

    with pytest.raises(CapabilityError):
        SymmetricKL(NoMarginals(3, box=[[-1.0, 1.0]] * 3))


# ------------------------------------------------------------------------ ThinningBuffer
def naive_keep(n_seen: int, capacity: int) -> tuple[list[int], int]:
    """Row-by-row reference: keep i iff i % stride == 0, halve and double stride when full."""
    kept, stride = [], 1
    for i in range(n_seen):
        if i % stride:
            continue
        if len(kept) == capacity:
            kept, stride = kept[::2], stride * 2
            if i % stride:
                continue
        kept.append(i)
    return kept, stride


def stream_rows(start: int, stop: int) -> np.ndarray:
    i = np.arange(start, stop, dtype=float)
    return np.column_stack([i, -i, 0.5 * i])


@pytest.mark.parametrize("capacity", [1, 2, 7, 64, 100])
def test_buffer_matches_naive_for_random_blocks(capacity):
    rng = np.random.default_rng(capacity)
    buf = ThinningBuffer(capacity, 3)
    n = 0
    for _ in range(60):
        k = int(rng.choice([0, 1, 3, 17, 150, 1000]))
        buf.extend(stream_rows(n, n + k))
        n += k
        kept, stride = naive_keep(n, capacity)
        assert buf.n_seen == n and buf.stride == stride and len(buf) == len(kept) <= capacity
        np.testing.assert_array_equal(buf.indices, kept)
        assert np.all(buf.indices % buf.stride == 0)
        np.testing.assert_array_equal(buf.data, stream_rows(0, n)[kept])
    assert buf.stride > 1 and len(buf) > capacity // 2


def test_buffer_stride_doubles_when_full():
    buf = ThinningBuffer(4, 1)
    buf.extend(np.arange(4.0))
    assert (buf.stride, len(buf)) == (1, 4)
    buf.extend([4.0])
    assert buf.stride == 2
    np.testing.assert_array_equal(buf.data[:, 0], [0.0, 2.0, 4.0])
    buf.extend(np.arange(5.0, 9.0))
    assert buf.stride == 4
    np.testing.assert_array_equal(buf.indices, [0, 4, 8])
    with pytest.raises(ValueError):
        buf.data[0, 0] = 1.0  # read-only view


def test_buffer_state_round_trip():
    buf = ThinningBuffer(10, 2)
    buf.extend(stream_rows(0, 37)[:, :2])
    state = buf.state_dict()
    assert all(isinstance(v, (int, np.ndarray)) for v in state.values())
    copy = ThinningBuffer.from_state(state)
    for b in (buf, copy):
        b.extend(stream_rows(37, 101)[:, :2])
    assert (copy.stride, copy.n_seen, len(copy)) == (buf.stride, buf.n_seen, len(buf))
    np.testing.assert_array_equal(copy.data, buf.data)
    state["n_seen"] = 5
    with pytest.raises(ValueError):
        ThinningBuffer.from_state(state)


def test_buffer_rejects_bad_shapes():
    buf = ThinningBuffer(5, 2)
    with pytest.raises(ValueError):
        buf.extend(np.zeros((3, 3)))
    with pytest.raises(ValueError):
        ThinningBuffer(0, 2)
    buf.extend(np.zeros((0, 2)))
    assert len(buf) == 0 and buf.n_seen == 0


# ------------------------------------------------------------------------ ESS
def ar1(phi: float, n: int, chains: int, seed: int) -> np.ndarray:
    """(n, chains) independent stationary AR(1) chains x_t = φ x_{t−1} + e_t."""
    e = np.random.default_rng(seed).standard_normal((n, chains))
    e[0] /= math.sqrt(1.0 - phi**2)  # start in the stationary distribution
    return lfilter([1.0], [1.0, -phi], e, axis=0)


def chain(kind: str, n: int, d: int, seed: int) -> np.ndarray:
    """(n, d) test chain: iid, AR(1) "ar<φ>", Gaussian or lattice random walk, or tied draws."""
    rng = np.random.default_rng(seed)
    if kind.startswith("ar"):
        return ar1(float(kind[2:]), n, d, seed)
    if kind == "iid":
        return rng.standard_normal((n, d))
    if kind == "walk":
        return np.cumsum(rng.standard_normal((n, d)), axis=0)
    if kind == "lattice":  # random walk on the integers: many ties
        return np.cumsum(rng.integers(-1, 2, size=(n, d)), axis=0).astype(float)
    if kind == "discrete":  # iid draws from three values
        return rng.integers(0, 3, size=(n, d)).astype(float)
    if kind == "sticky":  # an AR(0.9) chain that moves with probability 0.2, else repeats
        moves = np.cumsum(rng.random((n, d)) < 0.2, axis=0)
        return np.take_along_axis(ar1(0.9, n, d, seed + 1), moves, axis=0)
    if kind == "alternating":  # two values in turn: the first pair sum 1 + ρ_1 is negative
        low, high = np.sort(rng.standard_normal((2, d)), axis=0)
        return np.where(np.arange(n)[:, None] % 2 == 0, high, low)
    raise ValueError(kind)


def arviz_bulk_ess(x: np.ndarray) -> np.ndarray:
    """arviz-stats' bulk ESS of each column of one chain (n, d), as a (d,) array."""
    ess = array_stats.ess(x.T, chain_axis=None, draw_axis=-1, method="bulk")
    return np.atleast_1d(np.asarray(ess, dtype=float))


# Short and long, odd and even chains; together they reach every branch of the Geyer sums
# (cut-off at the first pair, at a non-positive pair, at the last lag; the extra even term
# positive, kept with a non-negative pair, or dropped; the monotone step; the τ floor).
ESS_CASES = [
    ("iid", 20, 1),
    ("iid", 21, 3),
    ("iid", 23, 3),
    ("iid", 20000, 32),
    ("ar0.3", 1001, 8),
    ("ar0.3", 19999, 32),
    ("ar0.9", 100, 4),
    ("ar0.9", 5000, 16),
    ("ar0.99", 37, 2),
    ("ar0.99", 20000, 4),
    ("ar-0.5", 20, 4),
    ("ar-0.5", 22, 5),
    ("ar-0.5", 4999, 32),
    ("ar-0.99", 1000, 4),
    ("walk", 20, 8),
    ("walk", 23, 8),
    ("walk", 501, 8),
    ("walk", 20000, 2),
    ("lattice", 3001, 6),
    ("discrete", 21, 8),
    ("discrete", 999, 3),
    ("sticky", 2000, 8),
    ("sticky", 20000, 4),
    ("alternating", 200, 3),
    ("alternating", 201, 2),
]


@pytest.mark.parametrize("kind, n, d", ESS_CASES)
def test_ess_equals_arviz(kind, n, d):
    x = chain(kind, n, d, seed=n + d)
    np.testing.assert_allclose(ess_per_dim(x), arviz_bulk_ess(x), rtol=1e-9)


def test_ess_equals_arviz_on_random_chains():
    rng = np.random.default_rng(12)
    kinds = ["iid", "ar0.3", "ar0.9", "ar0.99", "ar-0.5", "walk", "lattice", "discrete", "sticky"]
    for seed in range(60):
        kind = kinds[seed % len(kinds)]
        n, d = int(np.exp(rng.uniform(math.log(20), math.log(3000)))), int(rng.integers(1, 9))
        x = chain(kind, n, d, seed)
        expected = np.where(np.ptp(x, axis=0) == 0, 1.0, arviz_bulk_ess(x))
        np.testing.assert_allclose(ess_per_dim(x), expected, rtol=1e-9, err_msg=f"{kind} {n} {d}")


def test_ess_alternating_chain_is_floored():
    # Both halves alternate between two rank scores ±a with mean ≈ 0, so
    # 1 + ρ_1 ≈ −1/(h(h − 1)) < 0: no lag is summed, τ = −1 + 1 = 0 is floored at
    # 1/log10 N, and ESS = N log10 N (N = 2h = 200).
    for n in (200, 201):
        x = chain("alternating", n, 3, seed=0)
        np.testing.assert_allclose(ess_per_dim(x), 200 * math.log10(200), rtol=1e-12)


def test_ess_nan_column_and_tied_split_halves():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((101, 3))
    x[7, 0] = math.nan
    x[:, 2] = 1.0
    x[50, 2] = 2.0  # odd n: the split drops the middle draw, so both halves are constant
    ess = ess_per_dim(x)
    assert math.isnan(ess[0])
    np.testing.assert_allclose(ess[1:], arviz_bulk_ess(x[:, 1:]), rtol=1e-9)
    assert ess[2] == 100.0
    assert np.all(np.isnan(ess_per_dim(np.full((50, 2), math.nan))))


def test_ess_one_dimensional_input():
    x = chain("ar0.9", 777, 1, seed=6)
    np.testing.assert_array_equal(ess_per_dim(x[:, 0]), ess_per_dim(x))


def test_ess_ar1_matches_closed_form():
    n, phi = 20000, 0.9
    ess = ess_per_dim(ar1(phi, n, 16, seed=0))
    expected = n * (1 - phi) / (1 + phi)
    # One chain's ESS estimate has a relative sd of about 8 %: the mean of 16 has about 2 %.
    assert np.mean(ess) == pytest.approx(expected, rel=0.08)
    assert np.all(np.abs(ess / expected - 1) < 0.3)


def test_ess_iid_is_n():
    n = 20000
    ess = ess_per_dim(np.random.default_rng(1).standard_normal((n, 16)))
    assert np.mean(ess) == pytest.approx(n, rel=0.03)
    assert np.all(np.abs(ess / n - 1) < 0.1)


def test_ess_too_few_samples_and_constant_column():
    rng = np.random.default_rng(2)
    assert np.all(np.isnan(ess_per_dim(rng.standard_normal((19, 3)))))
    assert np.all(np.isfinite(ess_per_dim(rng.standard_normal((20, 3)))))
    x = rng.standard_normal((500, 2))
    x[:, 1] = 3.0
    ess = ess_per_dim(x)
    assert ess[1] == 1.0  # arviz-stats would report 500
    assert ess[0] == pytest.approx(arviz_bulk_ess(x[:, :1])[0], rel=1e-9)
    buf = ThinningBuffer(100, 3)
    buf.extend(rng.standard_normal((19, 3)))
    assert all(math.isnan(v) for v in BulkESS(bimodal()).compute(buf).values())


def test_bulk_ess_whole_chain_and_thinned_buffer():
    """ess_* come from the whole chain fed block by block; ess_min_stored is the exact bulk
    ESS of the thinned store, which saturates near the number stored for nearly iid draws."""
    # φ = 0.99: ESS ≈ 1000 ≪ 12500 stored draws (stride 16): thinning leaves the ESS unchanged.
    x = ar1(0.99, 200000, 2, seed=3)
    buf = ThinningBuffer(20000, 2)
    metric = BulkESS(gmm32(dim=2))
    for block in np.array_split(x, 37):
        buf.extend(block)
        metric.update(block)
    assert buf.stride == 16
    result = metric.compute(buf)
    full = arviz_bulk_ess(x)
    assert result["ess_min"] <= result["ess_median"] <= result["ess_max"]
    assert result["ess_min"] == pytest.approx(full.min(), rel=0.05)
    assert result["ess_max"] == pytest.approx(full.max(), rel=0.05)
    assert result["ess_min_stored"] == pytest.approx(arviz_bulk_ess(buf.data).min(), rel=1e-9)
    assert result["mcse_max"] == pytest.approx(np.max(np.std(x, axis=0) / np.sqrt(full)),
                                               rel=0.05)
    # iid draws: the thinned ESS saturates near the number stored; the whole chain's does not.
    buf, metric = ThinningBuffer(20000, 2), BulkESS(gmm32(dim=2))
    draws = np.random.default_rng(4).standard_normal((200000, 2))
    buf.extend(draws)
    metric.update(draws)
    result = metric.compute(buf)
    assert result["ess_min_stored"] == pytest.approx(len(buf), rel=0.1)
    assert result["ess_min"] == pytest.approx(200000, rel=0.05)


# ------------------------------------------------------------------------ protocol
def test_default_metric_config_instantiates_and_reports_floats():
    cfg = OmegaConf.load(CONF / "metrics" / "default.yaml")
    target = bimodal()
    nodes = [node for node in cfg.values() if OmegaConf.is_dict(node) and "_target_" in node]
    metrics = []
    for node in nodes:  # a metric a target cannot support says so (recorded, not fatal)
        try:
            metrics.append(instantiate(node, target=target))
        except InstantiationException as exc:
            assert isinstance(exc.__cause__, CapabilityError), exc
    buf = ThinningBuffer(int(cfg.samples_capacity), target.dim)
    rng = np.random.default_rng(9)
    for k in (0, 300, 1200):
        block = target.sample(k, rng)
        buf.extend(block)
        for metric in metrics:
            metric.update(block)
    row = {}
    for metric in metrics:
        row.update(metric.compute(buf))
    assert set(row) == {"kl", "kl_outside", "ess_min", "ess_median", "ess_max", "mcse_max",
                        "ess_min_stored", "esjd",
                        "mean_error", "second_moment_error", "mean_norm", "mean_estimate", "bias2",
                        "moments_discarded", "mmd2"}
    listed = row.pop("mean_estimate")  # a list column: Ê[X]
    assert np.shape(listed) == (target.dim,) and np.all(np.isfinite(listed))
    assert all(isinstance(v, float) and math.isfinite(v) for v in row.values())


@pytest.mark.parametrize("make", [bimodal, lambda: gmm32(dim=5)], ids=["grid", "marginal"])
def test_compiled_histogram_equals_numpy(monkeypatch, make):
    """The compiled KL update (default) and the numpy update (CKAM_BENCH_JIT=0) agree exactly,
    including samples on the box edges, outside it, and NaN."""
    target = make()
    rng = np.random.default_rng(3)
    x = target.sample(5000, rng)
    x[:50] = target.box[:, 1]  # on the upper edge: inside, last bin
    x[50:100] = target.box[:, 0]  # on the lower edge: inside, first bin
    x[100:150, 0] = target.box[0, 1] + 1.0  # outside
    x[150:160, -1] = np.nan  # outside
    monkeypatch.setenv("CKAM_BENCH_JIT", "1")
    compiled = SymmetricKL(target)
    for part in np.array_split(x, 7):
        compiled.update(part)
    monkeypatch.setenv("CKAM_BENCH_JIT", "0")
    reference = SymmetricKL(target)
    for part in np.array_split(x, 3):
        reference.update(part)
    assert np.array_equal(compiled.state_dict()["counts"], reference.state_dict()["counts"])
    assert (compiled.n_total, compiled.n_outside) == (reference.n_total, reference.n_outside)
    assert compiled.value() == reference.value()


def test_extend_columns_equals_extend():
    rng = np.random.default_rng(4)
    a, b = ThinningBuffer(37, 3), ThinningBuffer(37, 3)
    for k in rng.integers(0, 60, size=40):
        rows = rng.standard_normal((int(k), 3))
        a.extend(rows)
        b.extend_columns([rows[:, 0], rows[:, 1], rows[:, 2]])
    assert np.array_equal(a.data, b.data) and a.stride == b.stride and a.n_seen == b.n_seen


def test_the_mmd_reference_terms_are_kept_per_reference_sample():
    """The bandwidth and the reference's own kernel mean are computed once per reference
    sample object (a sweep's worker runs a posterior again and again), equal to computing them
    afresh, and only the last few samples are kept."""
    from ckam_bench.metrics import mmd

    rng = np.random.default_rng(3)
    sources = [rng.normal(size=(400, 3)) for _ in range(mmd._TERMS_KEPT + 2)]
    first = mmd._reference_terms(sources[0], sources[0][::2], "gaussian")
    bandwidth = mmd.median_bandwidth(sources[0][::2])
    assert first == (bandwidth, mmd.mean_within(sources[0][::2], "gaussian", bandwidth))
    mmd._TERMS[next(k for k in mmd._TERMS if k[0] == id(sources[0]))] = (sources[0], -1.0, -1.0)
    assert mmd._reference_terms(sources[0], sources[0][::2], "gaussian") == (-1.0, -1.0)  # kept
    for source in sources[1:]:
        mmd._reference_terms(source, source[::2], "gaussian")
    assert len(mmd._TERMS) <= mmd._TERMS_KEPT
    assert mmd._reference_terms(None, sources[0][::2], "gaussian") == first  # exact draws: afresh
