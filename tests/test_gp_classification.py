"""gp_glass (KAMH paper): loader, Laplace mode, unbiased likelihood estimate, no re-estimation."""

import math
from collections import Counter

import numpy as np
import pytest
from hydra.utils import instantiate
from scipy import optimize
from scipy.special import expit

from ckam_bench.data import DataFileError, data_file
from ckam_bench.targets.gp_classification import GPClassification, gp_glass, load_glass, log_likelihood
from tests.test_configs import composed
from tests import clirun


@pytest.fixture(scope="module")
def glass():
    return load_glass()[:2]


def small(glass, n=30, **kwargs):
    X, y = glass
    rows = np.random.default_rng(0).choice(X.shape[0], n, replace=False)
    return GPClassification(X[rows], y[rows], **kwargs)


def test_loader_labels_and_whitening(glass):
    X, y = glass
    raw = np.loadtxt(data_file("glass.data"), delimiter=",")
    assert X.shape == (214, 9) and raw.shape == (214, 11)
    assert np.sum(y == 1) == 163 and np.sum(y == -1) == 51
    assert np.array_equal(y == 1, raw[:, 10] <= 4)
    assert np.allclose(X.mean(axis=0), 0.0, atol=1e-12)
    assert np.allclose(np.cov(X, rowvar=False), np.eye(9), atol=1e-10)
    # whitening by the Cholesky factor: a lower-triangular map of the centred features
    Xc = raw[:, 1:10] - raw[:, 1:10].mean(axis=0)
    A = np.linalg.lstsq(X, Xc, rcond=None)[0]
    assert np.allclose(np.triu(A.T, 1), 0.0, atol=1e-8)
    target = gp_glass()
    assert target.noisy and target.dim == 9 and not target.has_gradient and target.name == "gp_glass"


def test_bad_input():
    with pytest.raises(DataFileError, match="data_file"):
        gp_glass(data_file="/nonexistent/glass.data")
    with pytest.raises(ValueError, match="^n_importance"):
        gp_glass(n_importance=0)
    with pytest.raises(ValueError, match="^dim"):
        gp_glass(dim=3)
    with pytest.raises(ValueError, match="^y"):
        GPClassification(np.zeros((3, 2)), [0, 1, 1])


def test_coordinates_are_log_squared_lengthscales(glass):
    """θ_d = log ℓ_d² (the paper's convention): K_ij = exp(−½ Σ_d (x_id − x_jd)² / ℓ_d²) + ε δ_ij."""
    target = small(glass, 12)
    ell2 = np.linspace(0.3, 4.0, 9)
    X = target.X
    brute = np.array([[math.exp(-0.5 * np.sum((X[i] - X[j]) ** 2 / ell2)) for j in range(12)] for i in range(12)])
    np.testing.assert_allclose(target.kernel_matrix(np.log(ell2)), brute + 1e-6 * np.eye(12), rtol=1e-12)


@pytest.mark.parametrize("theta", [np.zeros(9), np.linspace(-2.0, 1.5, 9)])
def test_laplace_mode_against_a_generic_optimiser(glass, theta):
    target = small(glass, 60)
    K = target.kernel_matrix(theta)
    f_hat, a_hat, sw = target.laplace(K)
    Kinv = np.linalg.inv(K)

    def objective(f):
        return -log_likelihood(target.y, f) + 0.5 * f @ Kinv @ f, -(target.t - expit(f)) + Kinv @ f

    best = optimize.minimize(objective, np.zeros(60), jac=True, method="L-BFGS-B",
                             options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10000})
    assert objective(f_hat)[0] <= best.fun + 1e-8
    assert np.allclose(f_hat, best.x, atol=1e-4)
    np.testing.assert_allclose(K @ a_hat, f_hat, atol=1e-12)
    np.testing.assert_allclose(sw**2, expit(f_hat) * (1 - expit(f_hat)), rtol=1e-12)


def test_warm_start_changes_the_mode_and_the_estimate_only_by_rounding(glass):
    """The Newton search starts at the previous estimate's mode; it converges to rounding, so
    the estimate (for the same normals) is the one of a cold start to 1e-9: the estimate's
    distribution at θ does not depend on the chain's previous point."""
    target = gp_glass()
    theta = np.random.default_rng(1).normal(0.0, 1.0, 9)
    K = target.kernel_matrix(theta)
    cold, _, _ = target.laplace(K)
    for near in (theta + 0.3, -theta, np.zeros(9)):
        _, a_near, _ = target.laplace(target.kernel_matrix(near))
        warm, _, _ = target.laplace(K, a_near)
        np.testing.assert_allclose(warm, cold, atol=1e-10)
        target.bind_rng(np.random.default_rng(2))  # forgets the warm start
        first = target.log_likelihood_estimate(theta)
        target._warm = a_near
        second = target.log_likelihood_estimate(theta, rng=np.random.default_rng(2))
        assert second == pytest.approx(first, abs=1e-9)


def test_importance_draws_and_weights_against_dense_densities(glass):
    """The whitened draws are N(f̂, Σ), Σ = (K⁻¹ + W)⁻¹ (moments of 20 000 draws), and each log
    weight is log p(y|f) + log N(f; 0, K) − log N(f; f̂, Σ) by scipy's dense densities."""
    from scipy.stats import multivariate_normal

    target = small(glass, 25)
    theta = np.linspace(-1.0, 1.0, 9)
    K = target.kernel_matrix(theta)
    f_hat, _, sw = target.laplace(K)
    sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(sw**2))
    eps = np.random.default_rng(0).standard_normal((25, 20000))
    F, log_w = target.importance_draws(K, eps)
    se = np.sqrt(np.diag(sigma) / 20000)
    assert np.all(np.abs(F.mean(1) - f_hat) < 5 * se)
    np.testing.assert_allclose(np.cov(F), sigma, atol=0.05 * np.abs(sigma).max())
    few = F[:, :5].T
    dense = (log_likelihood(target.y, few.T) + multivariate_normal(np.zeros(25), K).logpdf(few)
             - multivariate_normal(f_hat, sigma).logpdf(few))
    np.testing.assert_allclose(log_w[:5], dense, atol=1e-6)


def test_estimate_is_unbiased_in_the_likelihood(glass):
    target = small(glass, 20)
    theta = np.array([0.3, -1.0, 0.5, -0.2, 0.0, 1.0, -0.5, 0.2, -1.5])
    brute = target.log_likelihood_estimate(theta, n_importance=200_000, rng=np.random.default_rng(1))
    target.bind_rng(np.random.default_rng(2))
    ratios = np.exp([target.log_likelihood_estimate(theta) - brute for _ in range(800)])
    se = ratios.std(ddof=1) / math.sqrt(ratios.size)
    assert abs(ratios.mean() - 1.0) < 4 * se + 1e-3
    # the log of an unbiased estimate is biased low (Jensen): a sanity check that noise is present
    assert ratios.std() > 0


def test_randomness_comes_only_from_the_bound_generator(glass):
    target = small(glass, 30)
    theta = np.zeros(9)
    target.bind_rng(np.random.default_rng(5))
    first = [target.log_density(theta) for _ in range(3)]
    target.bind_rng(np.random.default_rng(5))
    assert [target.log_density(theta) for _ in range(3)] == first
    assert len(set(first)) == 3
    assert target.n_density == 6


@pytest.mark.parametrize("name", ["rw", "am", "rbam", "gam", "kam", "ckam"])
def test_samplers_never_reestimate_the_current_state(glass, name):
    """Every evaluated point is evaluated once (a re-estimate evaluates the current state again),
    and the chain's stored logp is the estimate made when its state was proposed."""
    target = small(glass, 30)
    seen, values = Counter(), {}
    estimate = target._log_density

    def recording(x):
        key = np.asarray(x, float).tobytes()
        value = estimate(x)
        seen[key] += 1
        values.setdefault(key, value)
        return value

    target._log_density = recording
    target.bind_rng(np.random.default_rng(3))
    sampler = instantiate(composed(f"sampler={name}", "target=gp_glass").sampler)
    state = sampler.init(target, None, np.random.default_rng(4))
    accepted = 0
    for _ in range(6):
        state, block = sampler.advance(state, 50)
        accepted += int(np.count_nonzero(block.accepted))
        x = np.asarray(state.x, float)
        assert state.logp == values[x.tobytes()]
    assert max(seen.values()) == 1, "a state was estimated twice"
    if name == "rw":
        assert accepted > 0


def test_gradient_sampler_declines_gp_glass_from_the_cli(tmp_path):
    import sys

    out = clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", "sampler=mala", "target=gp_glass",
                          f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "gradient" in lines[0] and "gp_glass" in lines[0]
    assert not (tmp_path / "run").exists()


def test_bench_yardstick_is_the_same_formula():
    """scripts/bench_throughput.py times the estimate against a direct numpy/scipy evaluation:
    for the same standard normals the two give the same value (so the ratio compares like with
    like)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "bench_throughput.py"
    spec = importlib.util.spec_from_file_location("bench_throughput", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    target = gp_glass()
    for seed in (0, 5):
        theta = np.random.default_rng(seed).normal(0.0, 1.5, 9) * seed / 5
        eps = np.random.default_rng(seed + 1).standard_normal((target.X.shape[0], target.n_importance))
        target.rng = np.random.default_rng(seed + 1)
        assert target.log_density(theta) == pytest.approx(
            bench.direct_glass_log_density(target.X, target.y, theta, eps), abs=1e-8)

