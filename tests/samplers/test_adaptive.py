"""AM, RBAM and GAM: invariance, checks that must fail, the adaptation recursions against
closed forms, GAM's acceptance, non-finite densities, jitter, determinism and configs."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from hydra.utils import instantiate

from ckam_bench.samplers.adaptive import (
    AdaptiveMetropolis,
    AdaptiveState,
    GlobalAdaptiveMetropolis,
    RaoBlackwellisedAM,
    am_update,
    cholesky_with_jitter,
    rao_blackwell_update,
)
from ckam_bench.samplers.base import StartPointError
from ckam_bench.samplers.random_walk import predraw
from ckam_bench.schedules import Constant, PowerDecay, RobbinsMonro
from ckam_bench.targets.base import Target
from ckam_bench.targets.gaussians import gauss2d_corr
from ckam_bench.targets.mixtures import gmm2d
from tests.samplers.invariance import (
    cut_gaussian_targets,
    NonFiniteHalfPlane,
    Tempered,
    check_acceptance,
    check_moments,
    loop,  # noqa: F401  (a fixture)
    run_chains,
)

NU_2D = 2.38 / math.sqrt(2.0)

# Sampler factories with diminishing adaptation (what guarantees invariance).
SAMPLERS = {
    "am": lambda: AdaptiveMetropolis(NU_2D, PowerDecay(1.0, 0.75)),
    "rbam": lambda: RaoBlackwellisedAM(PowerDecay(1.0, 0.75)),
    "gam": lambda: GlobalAdaptiveMetropolis(NU_2D, RobbinsMonro(0.75, 0.234)),
}
TARGETS = {"gauss2d_corr_0.8": lambda: gauss2d_corr(rho=0.8), "gmm2d": gmm2d}


class Flat(Target):
    """log π ≡ 0 (improper): every proposal has α = 1. For short runs only."""

    name = "flat"

    def _log_density(self, x):
        return 0.0


# ---------------------------------------------------------------------------- invariance
@pytest.mark.parametrize("target_name", list(TARGETS))
@pytest.mark.parametrize("sampler_name", list(SAMPLERS))
def test_invariance(loop, sampler_name, target_name):
    target = TARGETS[target_name]()
    samples, accepted = run_chains(SAMPLERS[sampler_name], target, 8, 4000, seed=7)
    check_moments(samples, target.mean, target.variance)
    check_acceptance(accepted, 0.1, 0.8)


@pytest.mark.slow
@pytest.mark.parametrize("sampler_name", ["am", "gam"])
def test_invariance_strong_correlation(sampler_name):
    target = gauss2d_corr(rho=0.99)
    samples, _ = run_chains(SAMPLERS[sampler_name], target, 8, 10000, seed=8)
    check_moments(samples, target.mean, target.variance)


@pytest.mark.parametrize("sampler_name", list(SAMPLERS))
def test_moment_check_fails_on_a_tempered_target(sampler_name):
    """The sampler run on π^(1/2) (a wrong MH ratio) must fail the check against π."""
    target = gauss2d_corr(rho=0.8)
    samples, _ = run_chains(SAMPLERS[sampler_name], Tempered(target, 0.5), 8, 4000, seed=7)
    with pytest.raises(AssertionError, match="variance"):
        check_moments(samples, target.mean, target.variance)


def test_constant_rate_rbam_is_biased():
    """Known limitation of the cKAM preset (constant η = 0.1): adaptation never diminishes and
    the chain does not target π exactly; here RBAM underestimates the variances by ~20 %."""
    target = gauss2d_corr(rho=0.8)
    samples, _ = run_chains(lambda: RaoBlackwellisedAM(Constant(0.1)), target, 8, 4000, seed=7)
    with pytest.raises(AssertionError, match="variance"):
        check_moments(samples, target.mean, target.variance)


@pytest.mark.slow
def test_constant_rate_am_is_biased():
    """The same for AM with η = 0.1: variances come out ~10 % too small."""
    target = gauss2d_corr(rho=0.8)
    samples, _ = run_chains(lambda: AdaptiveMetropolis(NU_2D, Constant(0.1)), target, 8, 20000, seed=7)
    with pytest.raises(AssertionError, match="variance"):
        check_moments(samples, target.mean, target.variance)


# ---------------------------------------------------------------------------- closed forms
def _run(sampler, target, n, seed=0):
    state = sampler.init(target, None, np.random.default_rng(seed))
    x0 = state.x.copy()
    state, block = sampler.advance(state, n)
    return x0, state, block


def _weighted_am(theta0, thetas, etas):
    """AM's μ_n, Σ_n written as weighted sums (no recursion):
    μ_n = P_0 θ_0 + Σ_k w_k θ_k,  Σ_n = P_0 I + Σ_k w_k δ_k δ_kᵀ,  δ_k = θ_k − μ_{k−1},
    w_k = η_{k−1} Π_{j=k..n−1} (1 − η_j),  P_0 = Π_{j=0..n−1} (1 − η_j)."""
    n, d = thetas.shape

    def weights(m):  # (P_0, w_1..w_m) for the first m steps
        keep = np.append(np.cumprod((1.0 - etas[:m])[::-1])[::-1], 1.0)  # Π_{j=k..m−1}(1−η_j)
        return keep[0], etas[:m] * keep[1:]

    means = [theta0]
    for m in range(1, n + 1):
        p0, w = weights(m)
        means.append(p0 * theta0 + w @ thetas[:m])
    delta = thetas - np.array(means[:-1])
    p0, w = weights(n)
    cov = p0 * np.eye(d) + np.einsum("k,ki,kj->ij", w, delta, delta)
    return means[-1], cov


def test_am_with_harmonic_rate_gives_running_mean_and_covariance(loop):
    """η_t = 1/(t+1): μ_n = mean(θ_1..θ_n); Σ_n = np.cov(bias=True) + (δ_1δ_1ᵀ + Σ_{k≥2} δ_kδ_kᵀ/k)/n."""
    target = gauss2d_corr(rho=0.8)
    theta0, state, block = _run(AdaptiveMetropolis(1.0, PowerDecay(1.0, 1.0)), target, 400)
    thetas = block.samples
    n = len(thetas)
    np.testing.assert_allclose(state.mean, np.mean(thetas, axis=0), rtol=1e-12, atol=1e-12)
    prefix_means = np.array([theta0] + [thetas[:k].mean(axis=0) for k in range(1, n)])
    delta = thetas - prefix_means
    weights = 1.0 / np.arange(1, n + 1)  # δ_1 weighs 1 (η_0 = 1 replaces Σ_0 = I), δ_k 1/k
    expected = np.cov(thetas.T, bias=True) + np.einsum("k,ki,kj->ij", weights, delta, delta) / n
    np.testing.assert_allclose(state.cov, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.chol @ state.chol.T, state.cov + 1e-8 * np.eye(2), rtol=1e-10)


@pytest.mark.parametrize("rate", [Constant(0.1), PowerDecay(1.0, 0.6), PowerDecay(0.5, 1.0)], ids=repr)
def test_am_recursion_matches_weighted_sums(loop, rate):
    target = gauss2d_corr(rho=0.8)
    theta0, state, block = _run(AdaptiveMetropolis(NU_2D, rate), target, 300)
    etas = np.array([rate(t) for t in range(300)])
    mean, cov = _weighted_am(theta0, block.samples, etas)
    np.testing.assert_allclose(state.mean, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.cov, cov, rtol=1e-10, atol=1e-12)


def test_am_update_on_a_known_sequence():
    rng = np.random.default_rng(3)
    thetas = rng.standard_normal((50, 3))
    mean, cov = thetas[0].copy(), np.eye(3)
    for t, theta in enumerate(thetas[1:]):
        am_update(mean, cov, theta, 1.0 / (t + 1))
    np.testing.assert_allclose(mean, thetas[1:].mean(axis=0), rtol=1e-12)
    _, expected_cov = _weighted_am(thetas[0], thetas[1:], 1.0 / np.arange(1, 50))
    np.testing.assert_allclose(cov, expected_cov, rtol=1e-12)


def test_rao_blackwell_update_is_the_expected_am_update():
    """RB update = α·(AM update on Y) + (1 − α)·(AM update on θ_t), for any α; α = 1 is AM on Y."""
    rng = np.random.default_rng(4)
    for alpha in (0.0, 0.3, 1.0):
        mean, y, x = rng.standard_normal((3, 3))
        a = rng.standard_normal((3, 3))
        cov = a @ a.T + np.eye(3)
        eta = 0.37
        m_rb, c_rb = mean.copy(), cov.copy()
        rao_blackwell_update(m_rb, c_rb, y, x, alpha, eta)
        m_y, c_y = mean.copy(), cov.copy()
        am_update(m_y, c_y, y, eta)
        m_x, c_x = mean.copy(), cov.copy()
        am_update(m_x, c_x, x, eta)
        np.testing.assert_allclose(m_rb, alpha * m_y + (1 - alpha) * m_x, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(c_rb, alpha * c_y + (1 - alpha) * c_x, rtol=1e-12, atol=1e-15)


def test_rbam_with_alpha_one_is_am_on_the_proposals():
    """On a flat target every α is 1: RBAM and AM with ν = 1 run the same chain."""
    rate = PowerDecay(1.0, 1.0)
    _, s_rb, b_rb = _run(RaoBlackwellisedAM(rate), Flat(2), 200, seed=9)
    _, s_am, b_am = _run(AdaptiveMetropolis(1.0, rate), Flat(2), 200, seed=9)
    assert np.all(b_rb.accept_prob == 1.0) and np.all(b_rb.accepted)
    np.testing.assert_allclose(b_rb.samples, b_am.samples, rtol=1e-12)
    np.testing.assert_allclose(s_rb.mean, s_am.mean, rtol=1e-12)
    np.testing.assert_allclose(s_rb.cov, s_am.cov, rtol=1e-12)
    assert np.all(np.isnan(b_rb.step_size)) and np.all(b_am.step_size == 1.0)


def test_rbam_weights_its_update_by_the_acceptance_probability(loop):
    """Rebuild RBAM's μ, Σ from the block: the proposals come from the same pre-drawn normals."""
    target = gauss2d_corr(rho=0.8)
    rate = Constant(0.05)
    theta0, state, block = _run(RaoBlackwellisedAM(rate), target, 300, seed=12)
    eps, _ = predraw(np.random.default_rng(12), 300, 2)
    mean, cov, x = theta0.copy(), np.eye(2), theta0
    for i in range(300):
        y = x + np.linalg.cholesky(cov + 1e-8 * np.eye(2)) @ eps[i]
        alpha = block.accept_prob[i]
        assert alpha == pytest.approx(min(1.0, math.exp(target._log_density(y) - target._log_density(x))))
        rao_blackwell_update(mean, cov, y, x, alpha, rate(i))
        x = block.samples[i]
        if block.accepted[i]:
            np.testing.assert_allclose(x, y, rtol=1e-12)
    np.testing.assert_allclose(state.mean, mean, rtol=1e-9)
    np.testing.assert_allclose(state.cov, cov, rtol=1e-9)


def test_gam_scale_follows_the_robbins_monro_recursion(loop):
    target = gauss2d_corr(rho=0.8)
    rm = RobbinsMonro(0.75, 0.234)
    sampler = GlobalAdaptiveMetropolis(NU_2D, rm)
    state = sampler.init(target, None, np.random.default_rng(2))
    theta0 = state.x.copy()
    state, b1 = sampler.advance(state, 250)
    state, b2 = sampler.advance(state, 250)
    alpha = np.concatenate([b1.accept_prob, b2.accept_prob])
    steps = np.concatenate([b1.step_size, b2.step_size])
    etas = np.array([rm(t) for t in range(500)])
    log_lam = 2 * math.log(NU_2D) + np.concatenate([[0.0], np.cumsum(etas * (alpha - 0.234))])
    np.testing.assert_allclose(2 * np.log(steps), log_lam[:-1], rtol=1e-10, atol=1e-12)
    assert state.log_scale == pytest.approx(log_lam[-1], rel=1e-10, abs=1e-12)
    mean, cov = _weighted_am(theta0, np.vstack([b1.samples, b2.samples]), etas)
    np.testing.assert_allclose(state.mean, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.cov, cov, rtol=1e-10, atol=1e-12)


def test_gam_long_run_acceptance_is_near_target():
    target = gauss2d_corr(rho=0.8)
    n_iter = 10000
    _, accepted = run_chains(SAMPLERS["gam"], target, 4, n_iter, seed=5, block=1000)
    second_half = accepted.reshape(4, n_iter)[:, n_iter // 2 :]
    check_acceptance(second_half, 0.234 - 0.05, 0.234 + 0.05)


def test_am_step_size_is_constant():
    _, _, block = _run(AdaptiveMetropolis(0.7, Constant(0.1)), gmm2d(), 100)
    assert np.all(block.step_size == pytest.approx(0.7, rel=1e-14))
    assert np.all(np.isnan(block.noise)) and np.all(block.phase == 0)


# ---------------------------------------------------------------------------- robustness
@pytest.mark.parametrize("sampler_name", list(SAMPLERS))
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "+inf", "-inf"])
def test_nonfinite_proposals_are_counted_rejections(loop, sampler_name, value):
    target = NonFiniteHalfPlane(dim=2, value=value)
    sampler = SAMPLERS[sampler_name]()
    state = sampler.init(target, None, np.random.default_rng(5))
    state, block = sampler.advance(state, 2000)
    assert block.n_nonfinite > 50
    assert np.all(block.samples[:, 0] >= 0.0)
    assert np.sum(block.accept_prob == 0.0) == block.n_nonfinite
    assert np.all(np.isfinite(state.mean)) and np.all(np.isfinite(state.cov))
    assert math.isfinite(state.logp)


@pytest.mark.parametrize("sampler_name", list(SAMPLERS))
def test_half_plane_invariance(loop, sampler_name):
    target = NonFiniteHalfPlane(dim=2)
    samples, _ = run_chains(SAMPLERS[sampler_name], target, 8, 3000, seed=6)
    check_moments(samples, target.mean, target.variance)


@pytest.mark.parametrize("sampler_name", list(SAMPLERS))
def test_nonfinite_start_is_an_error(sampler_name):
    with pytest.raises(StartPointError):
        SAMPLERS[sampler_name]().init(NonFiniteHalfPlane(2), np.array([-1.0, 0.0]), np.random.default_rng(0))


def test_cholesky_jitter():
    chol, jittered = cholesky_with_jitter(np.eye(2), 1e-8)
    assert not jittered and np.allclose(chol, math.sqrt(1 + 1e-8) * np.eye(2))
    for singular in (np.ones((2, 2)), np.zeros((3, 3)), np.array([[1.0, 2.0], [2.0, 1.0]])):
        chol, jittered = cholesky_with_jitter(singular, 0.0)
        assert jittered
        assert np.all(np.isfinite(chol)) and np.all(np.diag(chol) > 0)
        np.testing.assert_allclose(np.triu(chol, 1), 0.0)
    with pytest.raises(FloatingPointError, match="not finite"):
        cholesky_with_jitter(np.array([[np.nan, 0.0], [0.0, 1.0]]), 1e-8)


def test_degenerate_covariance_is_jittered_and_counted(loop):
    """η ≡ 1 and no ridge: Σ_{t+1} = δδᵀ has rank ≤ 1, so the factorisation needs a jitter."""
    sampler = AdaptiveMetropolis(NU_2D, Constant(1.0), ridge=0.0)
    _, state, block = _run(sampler, gauss2d_corr(rho=0.8), 500)
    assert block.n_jitter > 0
    assert np.all(np.isfinite(block.samples)) and np.all(np.isfinite(state.chol))


# ---------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("sampler_name", list(SAMPLERS))
def test_same_seed_same_chain_whatever_the_block_sizes(loop, sampler_name):
    target = gmm2d()

    def run(sizes):
        sampler = SAMPLERS[sampler_name]()
        state = sampler.init(target, None, np.random.default_rng(42))
        blocks = []
        for n in sizes:
            state, block = sampler.advance(state, n)
            blocks.append(block)
        out = {f: np.concatenate([getattr(b, f) for b in blocks]) for f in ("samples", "accepted", "accept_prob", "step_size")}
        return state, out

    state_a, a = run([900])
    for sizes in ([900], [1, 400, 99, 400]):
        state_b, b = run(sizes)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
        for field in dataclasses.fields(AdaptiveState):
            np.testing.assert_array_equal(getattr(state_a, field.name), getattr(state_b, field.name))


@pytest.mark.parametrize("sampler_name", list(SAMPLERS))
def test_state_is_plain_data_and_advance_does_not_mutate_it(loop, sampler_name):
    sampler = SAMPLERS[sampler_name]()
    state = sampler.init(gmm2d(), None, np.random.default_rng(0))
    before = dataclasses.replace(state, **{f.name: np.copy(getattr(state, f.name)) for f in dataclasses.fields(state)})
    new_state, _ = sampler.advance(state, 100)
    for field in dataclasses.fields(state):
        value = getattr(new_state, field.name)
        assert isinstance(value, (np.ndarray, float, int)), field.name
        np.testing.assert_array_equal(getattr(state, field.name), getattr(before, field.name))
    assert new_state.t == 100


# ---------------------------------------------------------------------------- validation
def test_constructor_validation():
    with pytest.raises(ValueError, match="step_size"):
        AdaptiveMetropolis(0.0, Constant(0.1))
    with pytest.raises(ValueError, match="step_size"):
        GlobalAdaptiveMetropolis(math.nan, RobbinsMonro())
    with pytest.raises(ValueError, match="rate"):
        AdaptiveMetropolis(1.0, PowerDecay(2.0, 0.5))  # η_0 = 2
    with pytest.raises(ValueError, match="rate"):
        RaoBlackwellisedAM("fast")
    with pytest.raises(ValueError, match="ridge"):
        RaoBlackwellisedAM(Constant(0.1), ridge=-1.0)
    with pytest.raises(ValueError, match="adaptation"):
        GlobalAdaptiveMetropolis(1.0, Constant(0.1))
    with pytest.raises(ValueError, match="adaptation"):
        GlobalAdaptiveMetropolis(1.0, RobbinsMonro(scale=2.0))
    assert AdaptiveMetropolis(1.0, 0.05).rate == Constant(0.05)  # a number is a constant rate


def test_rate_leaving_the_unit_interval_stops_the_run(loop):
    class Rising:
        def __call__(self, t):
            return 0.5 * (1 + t)

    sampler = AdaptiveMetropolis(1.0, Rising())
    state = sampler.init(gmm2d(), None, np.random.default_rng(0))
    with pytest.raises(ValueError, match="learning rate"):
        sampler.advance(state, 10)


# ---------------------------------------------------------------------------- configs
@pytest.mark.parametrize(
    "overrides, cls, attrs",
    [
        (["sampler=am", "target=gmm2d"], AdaptiveMetropolis,
         {"step_size": NU_2D, "rate": PowerDecay(1.0, 0.75, 100.0)}),
        (["sampler=rbam", "target=gmm2d"], RaoBlackwellisedAM, {"rate": PowerDecay(1.0, 0.75, 100.0)}),
        (
            ["sampler=gam", "target=gmm2d"],
            GlobalAdaptiveMetropolis,
            {"step_size": NU_2D, "adaptation": RobbinsMonro(0.75, 0.234, 1.0, 100.0)},
        ),
        (
            ["sampler=am", "target=gmm2d", "schedule@sampler.rate=constant", "sampler.rate.value=0.1"],
            AdaptiveMetropolis,
            {"rate": Constant(0.1)},
        ),
    ],
    ids=["am", "rbam", "gam", "am_constant"],
)
def test_yaml_instantiates_and_runs(overrides, cls, attrs):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    sampler = instantiate(cfg.sampler)
    target = instantiate(cfg.target)
    assert type(sampler) is cls and sampler.name == overrides[0].split("=")[1]
    for key, value in attrs.items():
        assert getattr(sampler, key) == (pytest.approx(value) if isinstance(value, float) else value)
    assert sampler.describe()["adaptation"] == ("non-diminishing" if "constant" in str(overrides)
                                                else "diminishing")
    state = sampler.init(target, cfg.start, np.random.default_rng(cfg.seed))
    state, block = sampler.advance(state, 50)
    assert block.n == 50 and state.t == 50


def test_default_rates_keep_sigma0():
    """The default rates start below 1 (offset t0 = 100), so the first update keeps Σ_0 = I
    full rank, where the paper's (1 + t)^-0.75 (η_0 = 1) leaves a rank-one Σ_1."""
    target = gmm2d()
    for rate, full in ((PowerDecay(1.0, 0.75, 100.0), True), (PowerDecay(1.0, 0.75), False)):
        sampler = AdaptiveMetropolis(NU_2D, rate)
        state = sampler.init(target, target.start, np.random.default_rng(0))
        state, _ = sampler.advance(state, 1)
        assert (np.linalg.matrix_rank(state.cov, tol=1e-9) == 2) == full


class _PlainTarget(Target):
    """A user's target in plain numpy (no compiled density): a correlated 3-D Gaussian."""

    name = "plain"

    def __init__(self):
        super().__init__(3)
        self.precision = np.linalg.inv(np.array([[1.0, 0.6, 0.2], [0.6, 2.0, -0.3], [0.2, -0.3, 0.5]]))

    def _log_density(self, x):
        return float(-0.5 * x @ self.precision @ x)


@pytest.mark.parametrize("sampler_name", ["am", "rbam", "gam"])
def test_plain_target_python_loop_with_and_without_numba(sampler_name, monkeypatch):
    """On a target without a compiled density the Python loop runs; with numba its adaptation,
    factor and next proposal are one compiled call (_adaptive_step): the same chain as the
    all-numpy loop (CKAM_BENCH_JIT=0) — same accept decisions, μ, Σ and L to rounding (LAPACK's
    and the compiled Cholesky round differently; the adaptation carries that over 1000 steps)."""
    from ckam_bench import jit

    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    make = SAMPLERS[sampler_name]
    runs = {}
    for switch in ("1", "0"):
        monkeypatch.setenv(jit.ENV, switch)
        target, sampler = _PlainTarget(), make()
        sampler.warm_up(target)
        calls = jit.KERNEL_CALLS
        state = sampler.init(target, None, np.random.default_rng(5))
        flags = []
        for n in (300, 700, 1):
            state, block = sampler.advance(state, n)
            flags.append(block.accepted)
        assert jit.KERNEL_CALLS == calls  # no compiled kernel: provenance says "python"
        runs[switch] = (np.concatenate(flags), state, target.n_density)
    (acc1, s1, n1), (acc0, s0, n0) = runs["1"], runs["0"]
    np.testing.assert_array_equal(acc1, acc0)
    assert n1 == n0 == 1001 + 1 and 0.1 < acc1.mean() < 0.9
    for field in ("x", "mean", "cov", "chol"):
        np.testing.assert_allclose(getattr(s1, field), getattr(s0, field), rtol=1e-7, atol=1e-10)
    assert s1.log_scale == pytest.approx(s0.log_scale, rel=1e-10)


@pytest.mark.parametrize("sampler_name", ["am", "rbam", "gam", "am_jittered"])
def test_plain_target_python_loop_is_the_kernel_to_the_bit(sampler_name, monkeypatch):
    """On a plain-numpy target the Python loop calls the density once per iteration and does
    the rest in one compiled step (_adaptive_step): the compiled kernel's chain to the bit over
    uneven blocks — samples, accept flags and probabilities, step sizes, counts, μ, Σ, L and
    log λ — with non-finite proposals, or (η ≡ 1, no ridge) jittered factors. One jitted
    density serves both targets, so their densities agree exactly."""
    from ckam_bench import jit

    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setenv(jit.ENV, "1")
    Plain, Compiled = cut_gaussian_targets(1.0)

    make = {**SAMPLERS, "am_jittered": lambda: AdaptiveMetropolis(NU_2D, Constant(1.0), ridge=0.0)}[sampler_name]
    runs = {}
    for loop, target_class in (("step", Plain), ("kernel", Compiled)):
        target, sampler = target_class(3), make()
        sampler.warm_up(target)
        calls = jit.KERNEL_CALLS
        state = sampler.init(target, [0.5, -1.0, 0.5], np.random.default_rng(8))
        blocks = []
        for k in (37, 200, 63):
            state, block = sampler.advance(state, k)
            blocks.append(block)
        assert (jit.KERNEL_CALLS > calls) == (loop == "kernel")
        runs[loop] = (state, blocks, target.n_density)
    (state, blocks, n_density), (state_k, blocks_k, n_density_k) = runs["step"], runs["kernel"]
    assert n_density == n_density_k == 1 + 300
    jittered = sampler_name == "am_jittered"  # (its collapsed Σ keeps the chain off the cut)
    assert (sum(b.n_jitter for b in blocks) > 0) == jittered
    assert (sum(b.n_nonfinite for b in blocks) > 0) != jittered
    for b, b_k in zip(blocks, blocks_k):
        for field in ("samples", "accepted", "accept_prob", "step_size"):
            np.testing.assert_array_equal(getattr(b, field), getattr(b_k, field))
        assert (b.n_nonfinite, b.n_jitter) == (b_k.n_nonfinite, b_k.n_jitter)
    for field in ("x", "logp", "mean", "cov", "chol", "log_scale", "t"):
        np.testing.assert_array_equal(getattr(state, field), getattr(state_k, field))
