"""MMD and quantile deviation (KAMH paper metrics): brute force, expectations, shifts."""

import math

import numpy as np
import pytest

from ckam_bench.metrics.buffer import ThinningBuffer
from ckam_bench.metrics.mmd import MMD, median_bandwidth, mmd2_unbiased
from ckam_bench.metrics.quantiles import QuantileDeviation
from ckam_bench.targets.banana import Banana
from ckam_bench.targets.base import CapabilityError
from ckam_bench.targets.gaussians import gauss2d_corr
from ckam_bench.targets.mixtures import bimodal


def _brute_force(x, y, k):
    n, m = len(x), len(y)
    xx = sum(k(x[i], x[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    yy = sum(k(y[i], y[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    xy = sum(k(a, b) for a in x for b in y) / (n * m)
    return xx + yy - 2 * xy


def test_mmd_equals_brute_force():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(7, 3)), rng.normal(0.3, 1.2, size=(9, 3))
    poly = lambda a, b: (1.0 + a @ b) ** 3  # noqa: E731
    assert mmd2_unbiased(x, y, "polynomial") == pytest.approx(_brute_force(x, y, poly), rel=1e-12)
    ell = 1.7
    gauss = lambda a, b: math.exp(-np.sum((a - b) ** 2) / (2 * ell**2))  # noqa: E731
    assert mmd2_unbiased(x, y, "gaussian", ell) == pytest.approx(_brute_force(x, y, gauss), rel=1e-12)
    pts = np.concatenate([x, y])
    dist = [np.linalg.norm(a - b) for i, a in enumerate(pts) for b in pts[i + 1:]]
    assert median_bandwidth(pts) == pytest.approx(np.median(dist))


@pytest.mark.parametrize("kernel", ["polynomial", "gaussian"])
def test_mmd_zero_in_expectation_and_positive_for_shift(kernel):
    rng = np.random.default_rng(1)
    same = [mmd2_unbiased(rng.normal(size=(60, 2)), rng.normal(size=(60, 2)), kernel) for _ in range(300)]
    spread = np.std(same) / math.sqrt(len(same))
    assert abs(np.mean(same)) < 4 * spread
    assert min(same) < 0 < max(same)  # unbiased, hence sometimes negative
    shifted = [mmd2_unbiased(rng.normal(size=(60, 2)), rng.normal(1.0, 1.0, size=(60, 2)), kernel)
               for _ in range(20)]
    assert np.mean(shifted) > 10 * np.std(same)


def test_mmd_metric_on_the_sample_store():
    target = Banana(4, 0.1, 10.0)
    metric = MMD(target, kernel="gaussian", max_points=500, reference_points=400)
    buffer = ThinningBuffer(2000, 4)
    assert math.isnan(metric.compute(buffer)["mmd2"])
    buffer.extend(target.sample(5000, np.random.default_rng(2)))
    good = metric.compute(buffer)["mmd2"]
    shifted = ThinningBuffer(2000, 4)
    shifted.extend(target.sample(5000, np.random.default_rng(3)) + [0.0, 0.0, 1.0, 0.0])
    bad = metric.compute(shifted)["mmd2"]
    assert abs(good) < 0.01 < bad
    assert metric.describe()["bandwidth"] > 0
    poly = MMD(target, kernel="polynomial", max_points=500, reference_points=400)
    assert poly.compute(shifted)["mmd2"] > 3 * abs(poly.compute(buffer)["mmd2"])


def test_mmd_without_exact_draws_or_reference_is_unsupported(monkeypatch):
    import ckam_bench.checks.reference as reference

    target = bimodal()
    monkeypatch.setattr(type(target), "has_exact_sampler", property(lambda self: False))
    monkeypatch.setattr(reference, "load_reference", lambda target: None)
    with pytest.raises(CapabilityError):
        MMD(target)


@pytest.mark.parametrize("key, kwargs", [("kernel", {"kernel": "linear"}), ("max_points", {"max_points": 1}),
                                         ("reference_points", {"reference_points": 10**9})])
def test_mmd_bad_settings(key, kwargs):
    with pytest.raises(ValueError, match=f"^{key}"):
        MMD(gauss2d_corr(), **kwargs)


def test_quantile_deviation_exact_vs_shifted_and_resume():
    target = Banana(8, 0.03, 100.0)
    exact = QuantileDeviation(target)
    x = target.sample(40_000, np.random.default_rng(4))
    for block in np.array_split(x, 7):
        exact.update(block)
    out = exact.compute()
    assert out["quantile_deviation"] < 0.01
    assert out["quantile_coverage_error"].shape == (9,)
    shifted = QuantileDeviation(target)
    shifted.update(x + np.array([0.0, 0.0, 1.5] + [0.0] * 5))
    assert shifted.compute()["quantile_deviation"] > 0.1
    resumed = QuantileDeviation(target)
    resumed.load_state_dict(exact.state_dict())
    assert resumed.compute()["quantile_deviation"] == out["quantile_deviation"]


def test_quantile_deviation_needs_quantile_regions():
    with pytest.raises(CapabilityError):
        QuantileDeviation(gauss2d_corr())
    with pytest.raises(ValueError, match="^levels"):
        QuantileDeviation(Banana(), levels=[0.5, 1.0])
