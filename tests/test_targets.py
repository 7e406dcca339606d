"""Targets of the cKAM paper and seed 002: densities, gradients, draws, marginals, grid masses.

Every check compares against an independent reference (scipy.stats densities, finite
differences, closed-form moments, KS tests against the exact marginal CDFs).
"""

import math
from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf
from scipy import stats
from scipy.special import logsumexp

import ckam_bench  # noqa: F401  (registers the config resolvers)
from ckam_bench import jit
from ckam_bench.targets import (
    Gaussian,
    GaussianMixture,
    ProductMixture,
    Target,
    bimodal,
    gauss2d_corr,
    gmm2d,
    gmm32,
    gp51,
    neal100,
)

CONF_TARGET = Path(__file__).resolve().parents[1] / "conf" / "target"
Z = 4.5  # half-width of the CLT intervals, in standard errors

CASES = {
    "bimodal": bimodal,
    "bimodal_authors_weights": lambda: bimodal(weights=[1.0, 2.0]),
    "gmm2d": gmm2d,
    "gmm2d_authors": lambda: gmm2d(variance="authors"),
    "gmm32": gmm32,
    "gauss2d_corr": gauss2d_corr,
    "neal100": neal100,
    "gp51": gp51,
    # Generic classes: the per-component Python path (K·d small), the numpy path (K·d large),
    # and a product mixture with per-component variances.
    "mixture_4d": lambda: GaussianMixture(
        [0.2, 0.3, 0.5],
        [[0, 1, 2, 3], [3, -1, 0, 1], [-2, 2, 2, -2]],
        [[1.0, 0.5, 2.0, 0.3], [0.7, 0.7, 0.7, 0.7], [2.0, 1.0, 0.4, 1.5]],
        dim=4,
    ),
    "mixture_20d": lambda: GaussianMixture(
        [1.0, 1.0, 2.0],
        np.arange(60.0).reshape(3, 20) % 7 - 3.0,
        [0.5, 1.0, 2.0],
        dim=20,
    ),
    "product_3d": lambda: ProductMixture([0.25, 0.75], [-2.0, 3.0], [0.5, 2.0], dim=3),
}
TWO_D = ["bimodal", "bimodal_authors_weights", "gmm2d", "gmm2d_authors", "gauss2d_corr"]


@pytest.fixture(params=list(CASES))
def target(request):
    return CASES[request.param]()


@pytest.fixture(params=TWO_D)
def target2d(request):
    return CASES[request.param]()


def reference_logpdf(t: Target, X: np.ndarray) -> np.ndarray:
    """Normalised log density from scipy.stats, independent of the target's code."""
    if isinstance(t, GaussianMixture):
        comps = [
            np.log(w) + stats.multivariate_normal(mu, np.diag(v)).logpdf(X)
            for w, mu, v in zip(t.weights, t.means, t.variances)
        ]
        return logsumexp(np.stack(comps, axis=-1), axis=-1)
    if isinstance(t, ProductMixture):
        comps = [
            np.log(w) + stats.norm(mu, np.sqrt(v)).logpdf(X) for w, mu, v in zip(t.weights, t.means, t.variances)
        ]
        return logsumexp(np.stack(comps, axis=-1), axis=-1).sum(axis=-1)
    assert isinstance(t, Gaussian)
    return stats.multivariate_normal(t.mean, t.cov).logpdf(X)


def points(t: Target, n: int, seed: int) -> np.ndarray:
    """Half exact draws, half uniform in the box (between and around the modes)."""
    rng = np.random.default_rng(seed)
    uniform = rng.uniform(t.box[:, 0], t.box[:, 1], size=(n - n // 2, t.dim))
    return np.vstack([t.sample(n // 2, rng), uniform])


# ---------------------------------------------------------------------------- densities
def test_log_density_matches_scipy(target):
    X = points(target, 40, seed=1)
    ref = reference_logpdf(target, X)
    single = np.array([target._log_density(x) for x in X])
    np.testing.assert_allclose(single, ref, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(target._log_density_batch(X), ref, rtol=1e-10, atol=1e-9)
    assert all(isinstance(v, float) for v in single)


def test_gradient_matches_finite_differences(target):
    X = points(target, 6, seed=2)
    steps = 1e-5 * np.sqrt(target.variance)
    for x in X:
        grad = target._grad_log_density(x)
        fd = np.empty(target.dim)
        for j in range(target.dim):
            e = np.zeros(target.dim)
            e[j] = steps[j]
            fd[j] = (target._log_density(x + e) - target._log_density(x - e)) / (2 * steps[j])
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6 * (1 + np.abs(fd).max()))


def test_far_tail_points(target):
    """Points far outside the box (densities underflow): the log-space paths stay exact."""
    X = points(target, 6, seed=8)
    X = target.box.mean(axis=1) + 30.0 * (X - target.box.mean(axis=1))
    ref = reference_logpdf(target, X)
    np.testing.assert_allclose([target._log_density(x) for x in X], ref, rtol=1e-10)
    np.testing.assert_allclose(target._log_density_batch(X), ref, rtol=1e-10)
    steps = 1e-4 * np.sqrt(target.variance)
    for x in X:
        fd = np.array(
            [(target._log_density(x + h * e) - target._log_density(x - h * e)) / (2 * h)
             for h, e in zip(steps, np.eye(target.dim))]
        )
        np.testing.assert_allclose(target._grad_log_density(x), fd, rtol=1e-4, atol=1e-6 * np.abs(fd).max())


def test_non_finite_points_give_non_finite_density(target):
    x = np.zeros(target.dim)
    x[0] = np.inf
    assert target._log_density(x) == -np.inf
    x[0] = np.nan
    assert np.isnan(target._log_density(x))


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_compiled_density_is_the_log_density(target):
    """jit_log_density(): the same values as _log_density (to rounding) in the bulk and the far
    tails, the same NaN / ±inf at non-finite points, and no evaluation counted."""
    f = target.jit_log_density()
    X = points(target, 40, seed=3)
    X = np.vstack([X, target.box.mean(axis=1) + 30.0 * (X - target.box.mean(axis=1))])
    expected = np.array([target._log_density(x) for x in X])
    np.testing.assert_allclose([f(x) for x in X], expected, rtol=1e-12, atol=1e-12)
    rng = np.random.default_rng(4)
    for values in ([np.nan], [np.inf], [-np.inf], [np.inf, -np.inf], [np.inf, np.nan], [1e200]):
        x = target.start.copy()
        x[rng.choice(target.dim, size=len(values), replace=False)] = values
        with np.errstate(over="ignore", invalid="ignore"):
            expected = target._log_density(x)
        np.testing.assert_array_equal(f(x), expected, err_msg=str(values))
    assert (target.n_density, target.n_grad) == (0, 0)
    assert target.jit_log_density() is f  # compiled once per parameter set
    assert type(target)(**_same_parameters(target)).jit_log_density() is f


def _same_parameters(target) -> dict:
    """Constructor arguments that rebuild ``target`` (for the compile-once check)."""
    if isinstance(target, Gaussian):
        return dict(mean=target.mean, cov=target.cov, dim=target.dim)
    if isinstance(target, ProductMixture):
        return dict(weights=target.weights, means=target.means, variance=target.variances, dim=target.dim)
    return dict(weights=target.weights, means=target.means, variances=target.variances, dim=target.dim)


def test_two_d_density_integrates_to_one_over_box(target2d):
    t = target2d
    n = 800
    e1, e2 = (np.linspace(lo, hi, n + 1) for lo, hi in t.box)
    m1, m2 = np.meshgrid(0.5 * (e1[1:] + e1[:-1]), 0.5 * (e2[1:] + e2[:-1]), indexing="ij")
    logp = t._log_density_batch(np.column_stack([m1.ravel(), m2.ravel()]))
    total = np.exp(logp).sum() * np.diff(e1)[0] * np.diff(e2)[0]
    assert abs(total - 1.0) < 1e-4


# ---------------------------------------------------------------------------- exact draws
def test_exact_draws_match_moments_and_marginals(target):
    rng = np.random.default_rng(3)
    n = 40_000
    X = target.sample(n, rng)
    assert X.shape == (n, target.dim)
    mean, var = target.mean, target.variance
    centred = X - X.mean(axis=0)
    s2 = (centred**2).mean(axis=0)
    m4 = (centred**4).mean(axis=0)
    assert np.all(np.abs(X.mean(axis=0) - mean) <= Z * np.sqrt(var / n))
    assert np.all(np.abs(s2 - var) <= Z * np.sqrt((m4 - s2**2) / n))
    for j in range(target.dim):
        p = stats.kstest(X[:, j], lambda x, j=j: target.marginal_cdf(j, x)).pvalue
        assert p > 1e-4, f"coordinate {j}: KS p = {p:.2e}"


@pytest.mark.parametrize("name", ["gauss2d_corr", "gp51", "neal100"])
def test_gaussian_draws_match_covariance(name):
    t = CASES[name]()
    n = 20_000
    X = t.sample(n, np.random.default_rng(4))
    C = np.cov(X, rowvar=False)
    sd_entries = np.sqrt((np.outer(np.diag(t.cov), np.diag(t.cov)) + t.cov**2) / n)
    assert np.all(np.abs(C - t.cov) <= Z * sd_entries)


def test_two_d_draws_match_grid_mass(target2d):
    """G-test of a 12×12 histogram of exact draws against the exact cell masses."""
    t = target2d
    edges = [np.linspace(lo, hi, 13) for lo, hi in t.box]
    X = t.sample(100_000, np.random.default_rng(5))
    counts, _, _ = np.histogram2d(X[:, 0], X[:, 1], bins=edges)
    expected = counts.sum() * t.grid_mass(edges)
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    obs, exp = obs[exp > 0], exp[exp > 0]
    p = stats.power_divergence(obs, exp, lambda_="log-likelihood").pvalue
    assert p > 1e-4


# ---------------------------------------------------------------------------- marginals
def test_marginals_integrate_to_one_and_match_cdf(target):
    rng = np.random.default_rng(6)
    for j in sorted({0, target.dim // 2, target.dim - 1}):
        lo, hi = target.box[j]
        margin = 10 * np.sqrt(target.variance[j])
        grid = np.linspace(lo - margin, hi + margin, 40_001)
        pdf = np.exp(target.marginal_logpdf(j, grid))
        assert abs(np.trapezoid(pdf, grid) - 1.0) < 1e-6
        x = target.sample(50, rng)[:, j]
        h = 1e-4 * np.sqrt(target.variance[j])
        fd = (target.marginal_cdf(j, x + h) - target.marginal_cdf(j, x - h)) / (2 * h)
        dens = np.exp(target.marginal_logpdf(j, x))
        np.testing.assert_allclose(fd, dens, rtol=1e-5, atol=1e-7 * pdf.max())


def test_box_holds_essentially_all_mass(target):
    for j in range(target.dim):
        lo, hi = target.box[j]
        inside = target.marginal_cdf(j, np.array([hi])) - target.marginal_cdf(j, np.array([lo]))
        assert inside[0] > 1 - 1e-5


# ---------------------------------------------------------------------------- grid masses
def test_grid_mass_sums_to_one_and_matches_midpoint_rule(target2d):
    t = target2d
    fine = [np.linspace(lo, hi, 401) for lo, hi in t.box]
    exact = t.grid_mass(fine)
    midpoint = Target.grid_mass(t, fine)
    assert exact.shape == (400, 400)
    assert abs(exact.sum() - 1.0) < 1e-12
    assert np.abs(exact - midpoint).sum() < 5e-3
    assert np.abs(exact - midpoint).max() < 1e-2 * exact.max()


def test_grid_mass_is_exact_on_coarse_cells(target2d):
    """Coarse (uneven) cells against independent rectangle probabilities from scipy."""
    t = target2d
    (lo1, hi1), (lo2, hi2) = t.box
    e1 = np.concatenate([[lo1], np.sort(np.random.default_rng(7).uniform(lo1, hi1, 8)), [hi1]])
    e2 = np.linspace(lo2, hi2, 6)
    mass = t.grid_mass([e1, e2])
    if isinstance(t, GaussianMixture):

        def rect(a1, b1, a2, b2):
            return sum(
                w * np.prod([stats.norm(m, np.sqrt(v)).cdf(b) - stats.norm(m, np.sqrt(v)).cdf(a)
                             for m, v, a, b in zip(mu, var, (a1, a2), (b1, b2))])
                for w, mu, var in zip(t.weights, t.means, t.variances)
            )
    else:
        mvn = stats.multivariate_normal(t.mean, t.cov, abseps=1e-12, releps=1e-12)

        def rect(a1, b1, a2, b2):
            return mvn.cdf([b1, b2]) - mvn.cdf([a1, b2]) - mvn.cdf([b1, a2]) + mvn.cdf([a1, a2])

    ref = np.array([[rect(e1[i], e1[i + 1], e2[k], e2[k + 1]) for k in range(5)] for i in range(9)])
    np.testing.assert_allclose(mass, ref / ref.sum(), rtol=1e-8, atol=1e-12)


def test_product_grid_mass_is_outer_product_of_marginals():
    t = CASES["product_3d"]()
    edges = [np.linspace(-6, 8, 8), np.linspace(-5, 9, 5), np.linspace(-7, 7, 4)]
    mass = t.grid_mass(edges)
    factors = [np.diff(t.marginal_cdf(j, e)) for j, e in enumerate(edges)]
    ref = np.einsum("i,j,k->ijk", *factors)
    np.testing.assert_allclose(mass, ref / ref.sum(), rtol=1e-10)


def test_grid_mass_rejects_bad_edges():
    with pytest.raises(ValueError, match="edges"):
        bimodal().grid_mass([np.linspace(-1, 1, 5)])
    with pytest.raises(ValueError, match="edges"):
        bimodal().grid_mass([np.array([1.0, 0.0]), np.linspace(-1, 1, 5)])


# ---------------------------------------------------------------------------- definitions
def test_paper_definitions():
    b = bimodal()
    np.testing.assert_array_equal(b.means, [[-8, 0], [8, 0]])
    np.testing.assert_array_equal(b.variances, [[0.5, 0.5], [2, 2]])
    np.testing.assert_array_equal(b.weights, [0.5, 0.5])
    np.testing.assert_array_equal(b.start, [-8, 0])
    np.testing.assert_array_equal(b.box, [[-17, 17], [-12, 12]])
    np.testing.assert_allclose(bimodal(weights=[1, 2]).weights, [1 / 3, 2 / 3])

    i = np.arange(1, 6)
    for g, v in [(gmm2d(), np.sqrt(i)), (gmm2d("authors"), i / 2)]:
        np.testing.assert_allclose(g.means, 2.5 * (i[:, None] - 1) * np.ones((1, 2)))
        np.testing.assert_allclose(g.variances, np.repeat(v[:, None], 2, axis=1))
        np.testing.assert_array_equal(g.start, [0, 0])
        np.testing.assert_array_equal(g.box, [[-7, 17], [-7, 17]])

    np.testing.assert_allclose(neal100().variance, (0.01 * np.arange(1, 101)) ** 2)
    np.testing.assert_allclose(gauss2d_corr().cov, [[1, 0.99], [0.99, 1]])
    K = gp51().cov
    assert K.shape == (51, 51)
    np.testing.assert_allclose(np.diag(K), 1.01)
    np.testing.assert_allclose(K[0, 1], np.exp(-(0.08**2) / 0.32))
    np.testing.assert_allclose(K[3, 50], np.exp(-((4 - 0.24) ** 2) / 0.32))
    for t in (gauss2d_corr(), neal100(), gp51()):
        np.testing.assert_array_equal(t.start, np.zeros(t.dim))
        np.testing.assert_allclose(t.box, np.stack([-6 * np.sqrt(t.variance), 6 * np.sqrt(t.variance)], 1))


def test_gmm32_has_32_dims_and_five_modes_per_coordinate():
    t = gmm32()
    assert t.dim == 32 and t.name == "gmm32"
    np.testing.assert_array_equal(t.start, np.zeros(32))
    np.testing.assert_array_equal(t.box, np.tile([-50, 50], (32, 1)))
    grid = np.linspace(-50, 50, 10_001)
    logp = t.marginal_logpdf(7, grid)
    peaks = grid[1:-1][(logp[1:-1] > logp[:-2]) & (logp[1:-1] > logp[2:])]
    np.testing.assert_allclose(peaks, [-30, -15, 0, 15, 30], atol=0.05)
    np.testing.assert_allclose(t.mean, 0, atol=1e-12)
    np.testing.assert_allclose(t.variance, 15 + (2 * 30**2 + 2 * 15**2) / 5)


def test_capabilities(target):
    assert target.has_gradient and target.has_exact_sampler and target.has_marginals
    assert target.mean.shape == target.variance.shape == (target.dim,)


# ---------------------------------------------------------------------------- counters
def test_counted_calls_increment_and_primitives_do_not(target):
    x = target.start
    X = np.tile(x, (4, 1))
    target.reset_counters()
    target._log_density(x)
    target._log_density_batch(X)
    target._grad_log_density(x)
    target.marginal_logpdf(0, x[:1])
    assert (target.n_density, target.n_grad) == (0, 0)
    assert target.log_density(x) == target._log_density(x)
    np.testing.assert_array_equal(target.grad_log_density(x), target._grad_log_density(x))
    target.log_density_batch(X)
    target.log_density_and_grad(x)
    assert (target.n_density, target.n_grad) == (6, 2)


# ---------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "build, argument",
    [
        (lambda: GaussianMixture([0.5, -0.5], [[0, 0], [1, 1]], [1, 1], dim=2), "weights"),
        (lambda: GaussianMixture([0.5, 0.5, 0.1], [[0, 0], [1, 1]], [1, 1], dim=2), "weights"),
        (lambda: GaussianMixture([0.5, 0.5], [[0, 0, 0], [1, 1, 1]], [1, 1], dim=2), "means"),
        (lambda: GaussianMixture([0.5, 0.5], [[0, 0], [1, 1]], [1, 0], dim=2), "variances"),
        (lambda: GaussianMixture([0.5, 0.5], [[0, 0], [1, 1]], [1, 1, 1], dim=2), "variances"),
        (lambda: GaussianMixture([1.0], [[0, 0]], 1.0, dim=2, start=[0, 0, 0]), "start"),
        (lambda: GaussianMixture([1.0], [[0, 0]], 1.0, dim=2, box=[[1, -1], [-1, 1]]), "box"),
        (lambda: ProductMixture([1, 1], [0, 1], -1.0, dim=3), "variance"),
        (lambda: ProductMixture([1, 1], [0, 1], [1, 1, 1], dim=3), "variance"),
        (lambda: ProductMixture([1, 0], [0, 1], 1.0, dim=3), "weights"),
        (lambda: Gaussian([0, 0], [[1, 2], [2, 1]], dim=2), "cov"),
        (lambda: Gaussian([0, 0], [[1, 0.5], [0.4, 1]], dim=2), "cov"),
        (lambda: Gaussian([0, 0, 0], np.eye(2), dim=2), "mean"),
        (lambda: bimodal(dim=3), "dim"),
        (lambda: gmm2d(dim=1), "dim"),
        (lambda: gmm2d(variance="other"), "variance"),
        (lambda: gmm32(dim=0), "dim"),
        (lambda: gauss2d_corr(rho=1.0), "rho"),
        (lambda: neal100(dim=10), "dim"),
        (lambda: gp51(dim=50), "dim"),
        (lambda: bimodal().marginal_cdf(2, np.zeros(3)), "j"),
        (lambda: gmm32().marginal_logpdf(-1, np.zeros(3)), "j"),
        (lambda: neal100().marginal_cdf(100, np.zeros(3)), "j"),
    ],
)
def test_validation_errors_name_the_argument(build, argument):
    with pytest.raises(ValueError, match=rf"^{argument}\b"):
        build()


def test_gmm32_dimension_is_configurable():
    t = gmm32(dim=4, means=[-1.0, 1.0], variance=0.5)
    assert t.dim == 4 and t.n_components == 2
    assert t.box.shape == (4, 2)


# ---------------------------------------------------------------------------- configs
# target=pymc needs target.model (and the [pymc] extra): tests/test_pymc_target.py covers it
@pytest.mark.parametrize("path", sorted(p for p in CONF_TARGET.glob("*.yaml") if p.stem != "pymc"),
                         ids=lambda p: p.stem)
def test_target_configs_instantiate(path):
    cfg = OmegaConf.load(path)
    t = instantiate(cfg)
    assert isinstance(t, Target)
    assert t.dim == cfg.dim
    assert t.name == path.stem
    assert np.isfinite(t._log_density(t.start))


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba not installed")
def test_vectorisable_exp_and_log1p_match_the_c_library():
    """vecmath's exp(-a) and log1p(e) (fdlibm's algorithms, written so loops vectorise) agree with
    the C library to 2 ulp over their domains, at the range ends and across every binade."""
    import numba

    from ckam_bench.targets.vecmath import FLAGS, exp_neg, log1p_unit

    @numba.njit(**FLAGS)
    def both(a, e_out, l_out):
        for i in range(a.shape[0]):
            e_out[i] = exp_neg(a[i])
            l_out[i] = log1p_unit(min(a[i], 1.0))

    rng = np.random.default_rng(0)
    a = np.concatenate([[0.0, 5e-324, 1e-300, 0.5, math.log(2.0), 1.0, 707.9, 708.0, 745.0, np.inf],
                        np.sqrt(2.0) - 1.0 + np.array([-1e-16, 0.0, 1e-16]),
                        np.exp(rng.uniform(-40.0, math.log(707.0), 200_000)), rng.uniform(0.0, 1.0, 100_000)])
    e, lg = np.empty_like(a), np.empty_like(a)
    both(a, e, lg)
    want_e = np.exp(-a)
    normal = a < 708.0
    np.testing.assert_allclose(e[normal], want_e[normal], rtol=4.5e-16, atol=0.0)
    assert np.all(e[~normal] == 0.0) and np.all(want_e[~normal] <= math.exp(-708.0))  # < 3.4e-308
    u = np.minimum(a, 1.0)
    np.testing.assert_allclose(lg, np.log1p(u), rtol=4.5e-16, atol=0.0)  # 2 ulp
    assert np.all(lg[u == 0.0] == 0.0)


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize("build", [neal100, gp51, gauss2d_corr])
def test_compiled_gradient_is_the_gradient(build):
    """jit_log_density_and_grad() (vectorised sums over C-contiguous rows) gives _log_density and
    _grad_log_density within 1e-12 relative, in the bulk and 30 standard deviations out, and NaN
    gradients at non-finite points."""
    target = build()
    fg = target.jit_log_density_and_grad()
    rng = np.random.default_rng(5)
    X = target.sample(40, rng) * rng.uniform(0.01, 30.0, (40, 1))
    grad = np.empty(target.dim)
    for x in X:
        assert fg(x, grad) == pytest.approx(target._log_density(x), rel=1e-12)
        want = target._grad_log_density(x)
        assert np.abs(grad - want).max() <= 1e-12 * np.abs(want).max()
    x = target.start.copy()
    x[0] = np.inf
    assert fg(x, grad) == -np.inf and np.isnan(grad).all()
