"""Kernels: values against direct formulas and closed forms, gradients against central
finite differences, the cKAM authors' Matérn-gradient bug, the ends ρ = 0 and ρ → ∞, the
median heuristic, validation and the YAML configs."""

from __future__ import annotations

import math
import warnings
from itertools import combinations

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from hydra.utils import instantiate
from scipy.special import gamma, kv

from ckam_bench.kernels import Gaussian, Linear, Matern, _profile_kve, _profile_recurrence, matern_profile

SMOOTHNESSES = [1.5, 2.5, 4.0, 7.3]


def random_points(seed: int, m: int = 7, d: int = 3, scale: float = 1.5):
    rng = np.random.default_rng(seed)
    return rng.normal(size=d), rng.normal(scale=scale, size=(m, d))


def finite_difference_gradients(kernel, x, Z, h: float = 1e-6) -> np.ndarray:
    """(M, d) central differences of k(·, z_i) at x."""
    out = np.empty_like(Z)
    for j in range(x.shape[0]):
        e = np.zeros_like(x)
        e[j] = h
        out[:, j] = (kernel.values(x + e, Z) - kernel.values(x - e, Z)) / (2.0 * h)
    return out


def matern_direct(x, z, lengthscale, s) -> float:
    """k_s(ρ) = 2^(1−s)/Γ(s) ρ^s K_s(ρ), ρ = √(2s)‖x − z‖/l, straight from scipy's kv."""
    rho = math.sqrt(2.0 * s) * np.linalg.norm(x - z) / lengthscale
    return 2.0 ** (1.0 - s) / gamma(s) * rho**s * kv(s, rho)


# ------------------------------------------------------------------------------ values
def test_linear_values_and_gradients():
    x, Z = random_points(0)
    k = Linear()
    np.testing.assert_allclose(k.values(x, Z), [float(z @ x) for z in Z], rtol=1e-14)
    np.testing.assert_array_equal(k.gradients(x, Z), Z)
    assert k.fit(Z) is k and k.name == "linear"


@pytest.mark.parametrize("lengthscale", [0.6, 1.0, 2.5])
def test_gaussian_values(lengthscale):
    x, Z = random_points(1)
    expected = [math.exp(-float((x - z) @ (x - z)) / (2 * lengthscale**2)) for z in Z]
    np.testing.assert_allclose(Gaussian(lengthscale).values(x, Z), expected, rtol=1e-13)


@pytest.mark.parametrize("s", SMOOTHNESSES + [1.2, 3.0, 10.0])
@pytest.mark.parametrize("lengthscale", [0.8, 2.0])
def test_matern_values_direct(s, lengthscale):
    x, Z = random_points(2)
    expected = [matern_direct(x, z, lengthscale, s) for z in Z]
    np.testing.assert_allclose(Matern(lengthscale, s).values(x, Z), expected, rtol=1e-11)


def test_matern_closed_forms():
    x, Z = random_points(3, m=20)
    lengthscale = 1.7
    r = np.linalg.norm(Z - x, axis=1) / lengthscale
    a = math.sqrt(3.0) * r
    np.testing.assert_allclose(Matern(lengthscale, 1.5).values(x, Z), (1 + a) * np.exp(-a), rtol=1e-12)
    b = math.sqrt(5.0) * r
    np.testing.assert_allclose(
        Matern(lengthscale, 2.5).values(x, Z), (1 + b + b**2 / 3.0) * np.exp(-b), rtol=1e-12
    )


@pytest.mark.parametrize("order", [0.5, 1.0, 1.5, 2.0, 3.0, 3.5, 6.0, 6.5, 20.0])
def test_profile_recurrence_matches_kve(order):
    rho = np.concatenate([[1e-12, 1e-4], np.linspace(0.01, 40.0, 300)])
    np.testing.assert_allclose(
        _profile_recurrence(order, rho, 1.0), _profile_kve(order, rho, 1.0), rtol=1e-12, atol=1e-300
    )


# ------------------------------------------------------------------------------ gradients
@pytest.mark.parametrize(
    "kernel",
    [Linear(), Gaussian(0.7), Gaussian(1.3)]
    + [Matern(lengthscale, s) for s in SMOOTHNESSES for lengthscale in (0.8, 2.0)],
    ids=repr,
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradients_match_finite_differences(kernel, seed):
    x, Z = random_points(10 + seed)
    fd = finite_difference_gradients(kernel, x, Z)
    np.testing.assert_allclose(kernel.gradients(x, Z), fd, rtol=1e-6, atol=1e-9)


def authors_matern_gradient(kernel: Matern, x, Z) -> np.ndarray:
    """The cKAM authors' version: the order-(s−1) profile at lengthscale l (ρ' = √(2(s−1)) r / l)."""
    s, lengthscale = kernel.smoothness, kernel.lengthscale
    D = Z - x
    rho_l = math.sqrt(2.0 * (s - 1.0)) * np.linalg.norm(D, axis=1) / lengthscale
    coef = s / (lengthscale**2 * (s - 1.0))
    return D * (coef * matern_profile(s - 1.0, rho_l))[:, None]


@pytest.mark.parametrize("s", [1.5, 2.5, 4.0])
def test_authors_matern_gradient_fails_finite_differences(s):
    kernel = Matern(2.0, s)
    x, Z = random_points(20, m=10)
    fd = finite_difference_gradients(kernel, x, Z)
    np.testing.assert_allclose(kernel.gradients(x, Z), fd, rtol=1e-6, atol=1e-9)
    wrong = authors_matern_gradient(kernel, x, Z)
    rel = np.max(np.abs(wrong - fd)) / np.max(np.abs(fd))
    assert rel > 0.05, f"the lengthscale-l gradient should be visibly wrong, relative error {rel:.3g}"


def test_matern_gradient_other_lengthscale_identity():
    """Order s−1 at the same ρ = order-(s−1) Matérn with lengthscale l·√((s−1)/s)."""
    s, lengthscale = 4.0, 2.0
    x, Z = random_points(21)
    coef = s / (lengthscale**2 * (s - 1.0))
    other = Matern(lengthscale * math.sqrt((s - 1.0) / s), s - 1.0)
    expected = (Z - x) * (coef * other.values(x, Z))[:, None]
    np.testing.assert_allclose(Matern(lengthscale, s).gradients(x, Z), expected, rtol=1e-12)


# ------------------------------------------------------------------------------ ends
@pytest.mark.parametrize(
    "kernel", [Gaussian(1.0)] + [Matern(2.0, s) for s in SMOOTHNESSES + [1.01, 100.0]], ids=repr
)
def test_coincident_and_far_points(kernel):
    x = np.array([0.3, -1.2])
    Z = np.array([x, x + 1e-200, x + [1e-9, 0.0], x + [1e4, 0.0], x + [1e200, -1e200], x + [1e300, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values, grads = kernel.values(x, Z), kernel.gradients(x, Z)
    assert np.all(np.isfinite(values)) and np.all(np.isfinite(grads))
    np.testing.assert_allclose(values[:3], 1.0, atol=1e-12)
    np.testing.assert_array_equal(values[3:], 0.0)
    np.testing.assert_array_equal(grads[0], 0.0)
    np.testing.assert_array_equal(grads[3:], 0.0)
    # near ρ = 0 the gradient is the linear term ∇k ≈ c (z − x), c = 1/l² or s/(l²(s−1))
    # (for s near 1 the order-(s−1) profile leaves 1 like ρ^(2(s−1)): not yet linear at 1e-9)
    if isinstance(kernel, Gaussian) or kernel.smoothness >= 1.5:
        c = 1.0 if isinstance(kernel, Gaussian) else kernel.smoothness / (4.0 * (kernel.smoothness - 1.0))
        np.testing.assert_allclose(grads[2], c * (Z[2] - x), rtol=1e-6)


def test_matern_profile_at_zero_for_every_path():
    for order in (0.3, 0.5, 1.0, 1.7, 3.0, 3.5, 12.25):
        np.testing.assert_allclose(matern_profile(order, np.zeros(3)), 1.0, rtol=1e-14)


# ------------------------------------------------------------------------------ median heuristic
def test_median_heuristic_rule():
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(9, 2)) * [1.0, 3.0]
    distances = [np.linalg.norm(Z[i] - Z[j]) for i, j in combinations(range(len(Z)), 2)]
    fitted = Gaussian(0.5, median_heuristic=True).fit(Z)
    assert fitted.lengthscale == pytest.approx(np.median(distances), rel=1e-14)
    x = rng.normal(size=2)
    np.testing.assert_allclose(fitted.values(x, Z), Gaussian(np.median(distances)).values(x, Z))


def test_median_heuristic_fallbacks():
    k = Gaussian(0.5, median_heuristic=True)
    assert k.fit(np.zeros((0, 2))).lengthscale == 0.5
    assert k.fit(np.ones((1, 2))).lengthscale == 0.5
    assert k.fit(np.ones((6, 2))).lengthscale == 0.5  # all pairwise distances 0
    plain = Gaussian(0.5)
    assert plain.fit(np.random.default_rng(0).normal(size=(5, 2))) is plain


# ------------------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    "make, word",
    [
        (lambda: Gaussian(0.0), "lengthscale"),
        (lambda: Gaussian(-1.0), "lengthscale"),
        (lambda: Gaussian(math.nan), "lengthscale"),
        (lambda: Matern(0.0, 4.0), "lengthscale"),
        (lambda: Matern(2.0, 1.0), "smoothness"),
        (lambda: Matern(2.0, 0.5), "smoothness"),
        (lambda: Matern(2.0, 1000.0), "smoothness"),
    ],
)
def test_validation(make, word):
    with pytest.raises(ValueError, match=word):
        make()


@pytest.mark.parametrize(
    "name, cls, params",
    [
        ("linear", Linear, {}),
        ("gaussian", Gaussian, {"lengthscale": 1.0, "median_heuristic": False}),
        ("matern", Matern, {"lengthscale": 2.0, "smoothness": 4.0}),
    ],
)
def test_kernel_yaml(name, cls, params):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=[f"kernel={name}"])
    kernel = instantiate(cfg.kernel)
    assert type(kernel) is cls and kernel.name == name
    for key, value in params.items():
        assert getattr(kernel, key) == value
    assert set(cfg.kernel) - {"_target_"} == set(params)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 50, 1000])
def test_median_distance_is_numpys_median(n):
    """The fast median of pairwise distances equals np.median(pdist(Z)) bit for bit (odd and
    even numbers of pairs, ties), and is NaN when a distance is."""
    from scipy.spatial.distance import pdist

    from ckam_bench.kernels import median_distance

    rng = np.random.default_rng(n)
    for Z in (rng.normal(size=(n, 3)), np.round(rng.normal(size=(n, 2))), np.zeros((n, 2))):
        assert median_distance(Z) == float(np.median(pdist(Z)))
    Z = rng.normal(size=(n, 3))
    Z[0, 0] = np.nan
    assert math.isnan(median_distance(Z))
