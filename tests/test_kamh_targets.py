"""Banana and flower (KAMH paper): normalisation, exact draws, quantile regions, gradients."""

import math

import numpy as np
import pytest
from scipy import stats

from ckam_bench import jit
from ckam_bench.targets.banana import Banana
from ckam_bench.targets.flower import Flower

QS = np.arange(1, 10) / 10.0


def _grid_integral(target, lo, hi, n=1201):
    x1, h1 = np.linspace(lo[0], hi[0], n, retstep=True)
    x2, h2 = np.linspace(lo[1], hi[1], n, retstep=True)
    pts = np.stack(np.meshgrid(x1, x2, indexing="ij"), axis=-1).reshape(-1, 2)
    dens = np.exp(target._log_density_batch(pts)).reshape(n, n)
    return np.trapezoid(np.trapezoid(dens, dx=h2, axis=1), dx=h1), pts, dens, h1 * h2


def _fd_grad(target, x, eps=1e-6):
    return np.array([(target._log_density(x + eps * e) - target._log_density(x - eps * e)) / (2 * eps)
                     for e in np.eye(x.size)])


@pytest.mark.parametrize("b", [0.0, 0.1, -0.05])
def test_banana_density_integrates_to_one(b):
    target = Banana(dim=2, b=b, v=4.0)
    total, *_ = _grid_integral(target, (-14.0, -30.0), (14.0, 30.0))
    assert total == pytest.approx(1.0, abs=1e-6)


def test_flower_density_integrates_to_one_and_quadrature_moments():
    target = Flower(dim=2, r0=5.0, amplitude=2.0, omega=5.0, sigma=0.7)
    total, pts, dens, cell = _grid_integral(target, (-10.0, -10.0), (10.0, 10.0), n=1601)
    assert total == pytest.approx(1.0, abs=1e-5)
    w = dens.ravel() * cell
    assert np.sum(w * pts[:, 0] ** 2) == pytest.approx(target.variance[0], rel=1e-4)
    assert np.sum(w * pts[:, 1] ** 2) == pytest.approx(target.variance[1], rel=1e-4)
    # an asymmetric flower (omega = 1) has a non-zero mean along x1
    odd = Flower(dim=2, r0=3.0, amplitude=1.5, omega=1.0, sigma=0.5)
    total, pts, dens, cell = _grid_integral(odd, (-9.0, -9.0), (9.0, 9.0), n=1801)
    assert total == pytest.approx(1.0, abs=1e-5)
    w = dens.ravel() * cell
    assert np.sum(w * pts[:, 0]) == pytest.approx(odd.mean[0], rel=1e-4)
    assert abs(odd.mean[0]) > 0.5


@pytest.mark.parametrize("make", [lambda: Banana(8, 0.03, 100.0), lambda: Banana(8, 0.1, 100.0),
                                  lambda: Flower(8, 10.0, 6.0, 6.0, 1.0),
                                  lambda: Flower(3, 1.0, 1.5, 3.0, 0.8)])
def test_exact_draws_moments_and_quantile_coverage(make):
    target = make()
    x = target.sample(200_000, np.random.default_rng(1))
    assert x.shape == (200_000, target.dim)
    se = np.sqrt(target.variance / x.shape[0])
    assert np.all(np.abs(x.mean(axis=0) - target.mean) < 5 * se)
    assert np.allclose(x.var(axis=0), target.variance, rtol=0.03)
    u = target.quantile_statistic(x)
    coverage = np.array([np.mean(u <= q) for q in QS])
    assert np.max(np.abs(coverage - QS)) < 5 * math.sqrt(0.25 / x.shape[0])
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_banana_fourth_moment():
    target = Banana(3, 0.1, 100.0)
    x = target.sample(400_000, np.random.default_rng(2))
    assert np.allclose(np.mean(x**4, axis=0), target.fourth_moment, rtol=0.05)


def test_flower_draws_match_density_on_grid():
    """Chi-square of 2-D draws against cell masses integrated from the density (not the sampler's
    polar derivation)."""
    target = Flower(dim=2, r0=4.0, amplitude=2.0, omega=4.0, sigma=0.8)
    edges = np.linspace(-9.0, 9.0, 19)
    sub = np.linspace(-9.0, 9.0, 18 * 20 + 1)
    mid = 0.5 * (sub[1:] + sub[:-1])
    pts = np.stack(np.meshgrid(mid, mid, indexing="ij"), axis=-1).reshape(-1, 2)
    fine = np.exp(target._log_density_batch(pts)).reshape(mid.size, mid.size) * (sub[1] - sub[0]) ** 2
    mass = fine.reshape(18, 20, 18, 20).sum(axis=(1, 3))
    x = target.sample(100_000, np.random.default_rng(3))
    counts, *_ = np.histogram2d(x[:, 0], x[:, 1], bins=[edges, edges])
    expected = mass * x.shape[0]
    keep = expected > 5
    chi = np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep])
    assert stats.chi2.sf(chi, keep.sum() - 1) > 1e-3


def test_quantile_statistic_flags_shifted_samples():
    target = Banana(8, 0.03, 100.0)
    x = target.sample(20_000, np.random.default_rng(4))
    x[:, 2] += 1.5
    u = target.quantile_statistic(x)
    assert np.mean(u <= 0.5) < 0.4
    flower = Flower()
    y = flower.sample(20_000, np.random.default_rng(5))
    y[:, :2] *= 1.2
    assert np.mean(flower.quantile_statistic(y) <= 0.5) < 0.4


@pytest.mark.parametrize("make", [lambda: Banana(5, 0.1, 100.0), lambda: Flower(4, 10.0, 6.0, 6.0, 1.0),
                                  lambda: Flower(3, 2.0, -1.0, 2.5, 0.3)])
def test_gradient_against_finite_differences_and_jit(make):
    target = make()
    rng = np.random.default_rng(6)
    for x in target.sample(5, rng):
        g = target._grad_log_density(x)
        assert np.allclose(g, _fd_grad(target, x), rtol=1e-5, atol=1e-5)
        if jit.AVAILABLE:
            out = np.empty(target.dim)
            assert target.jit_log_density_and_grad()(x, out) == pytest.approx(target._log_density(x), abs=1e-10)
            assert np.allclose(out, g, rtol=1e-10, atol=1e-10)
            assert target.jit_log_density()(x) == pytest.approx(target._log_density(x), abs=1e-10)
    assert target._log_density_batch(target.sample(3, rng)).shape == (3,)


def test_banana_hessian_against_finite_differences_of_the_gradient():
    target = Banana(5, 0.1, 100.0)
    assert target.has_hessian
    h = 1e-6
    for x in target.sample(5, np.random.default_rng(8)):
        H = target._hessian_log_density(x)
        fd = np.array([(target._grad_log_density(x + h * e) - target._grad_log_density(x - h * e)) / (2 * h)
                       for e in np.eye(5)])
        assert np.allclose(H, H.T) and np.allclose(H, fd, rtol=1e-5, atol=1e-5)


def test_flower_gradient_is_nan_at_the_origin():
    target = Flower(3)
    assert np.all(np.isnan(target._grad_log_density(np.zeros(3))[:2]))
    assert np.isfinite(target._log_density(np.zeros(3)))


@pytest.mark.parametrize("make, key", [(lambda: Banana(dim=1), "dim"), (lambda: Banana(v=0.0), "v"),
                                       (lambda: Banana(b=math.inf), "b"), (lambda: Flower(sigma=0.0), "sigma"),
                                       (lambda: Flower(omega=math.nan), "omega"),
                                       (lambda: Flower(dim=20_000), "dim")])
def test_bad_settings_raise_with_the_key(make, key):
    with pytest.raises(ValueError, match=f"^{key}"):
        make()
