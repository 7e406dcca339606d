"""KAM and cKAM: invariance, the MH ratio (same subsample both ways), cKAM's cycle schedule,
non-finite targets, jitter, block-size independence, validation and the YAML configs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from hydra.utils import instantiate
from scipy.stats import chisquare, kstest, multivariate_normal

from ckam_bench import jit
from ckam_bench.kernels import Gaussian, Linear, Matern
from ckam_bench.samplers.base import StartPointError
from ckam_bench.samplers.kameleon import (
    KAM,
    CyclicalKAM,
    centred_gradients,
    cholesky_repaired,
    floyd_subset,
    log_normal_kernel,
)
from ckam_bench.schedules import Constant, CyclicalCosine, NoiseDecay, PowerDecay, RobbinsMonro
from ckam_bench.targets.base import Target
from ckam_bench.targets.gaussians import Gaussian as GaussianTarget
from ckam_bench.targets.mixtures import gmm2d
from ckam_bench.targets.mixtures import bimodal, gmm32
from tests.samplers.invariance import (  # noqa: F401  (loop is a fixture)
    assert_not_stationary,
    assert_stationary,
    check_moments,
    loop,
    run_chains,
)

needs_numba = pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")

KERNELS = {
    "linear": Linear,
    "gaussian": lambda: Gaussian(1.5),
    "gaussian_median": lambda: Gaussian(1.0, median_heuristic=True),
    "matern": lambda: Matern(2.0, 4.0),
}


def correlated_gaussian(dim: int = 2) -> GaussianTarget:
    if dim == 2:
        return GaussianTarget([1.0, -2.0], [[2.0, 1.2], [1.2, 1.5]], dim=2, name="corr2")
    cov = np.array([[2.0, 0.8, 0.3], [0.8, 1.0, -0.2], [0.3, -0.2, 0.7]])
    return GaussianTarget([0.5, -1.0, 2.0], cov, dim=3, name="corr3")


def make_kam(kernel, **kw):
    args = dict(step_size=1.0, subsample_size=20, adaptation=RobbinsMonro(), noise=Constant(1.0),
                subsample_prob=PowerDecay())
    args.update(kw)
    return KAM(kernel, **args)


def make_ckam(kernel, **kw):
    args = dict(step_size=1.0, subsample_size=20, cycle=CyclicalCosine(200, 0.4), adaptation=RobbinsMonro(),
                noise=Constant(1.0), subsample_prob=PowerDecay())
    args.update(kw)
    return CyclicalKAM(kernel, **args)


def independent_log_q(kernel, x_to, x_from, Z, step_size, noise) -> float:
    """log N(x_to; x_from, γ²I + ν² M H Mᵀ) with the explicit centring matrix H (scipy)."""
    d, m = len(x_from), len(Z)
    C = noise**2 * np.eye(d)
    if m >= 2:
        kern = kernel.fit(Z)
        M = 2.0 * kern.gradients(x_from, Z).T  # d × m
        H = np.eye(m) - np.ones((m, m)) / m
        C = C + step_size**2 * M @ H @ M.T
    return float(multivariate_normal(mean=x_from, cov=C).logpdf(x_to))


# ------------------------------------------------------------------------------ invariance
@pytest.mark.parametrize("kernel_name", list(KERNELS))
@pytest.mark.parametrize("sampler", ["kam", "ckam"])
@pytest.mark.parametrize("target_name", ["corr2", "gmm2d"])
def test_invariance_from_exact_draws(kernel_name, sampler, target_name):
    """Chains started from exact draws keep the target's mean and variance (ESS intervals).

    Constant noise γ = 1 and the default adaptation (ν, z): the bias adaptation can add in a
    run this short is well inside the intervals, a wrong kernel proposal is not."""
    target = correlated_gaussian() if target_name == "corr2" else gmm2d()
    make = make_kam if sampler == "kam" else make_ckam
    n_iter = 2500 if sampler == "kam" else 4000  # cKAM collects only its sampling phases
    samples, _ = run_chains(lambda: make(KERNELS[kernel_name]()), target, 4, n_iter, seed=3)
    check_moments(samples, target.mean, target.variance)


# ------------------------------------------------------------------------------ MH ratio
@pytest.mark.parametrize("kernel_name", ["linear", "gaussian_median", "matern"])
@pytest.mark.parametrize("dim", [2, 3])
def test_log_proposal_density_matches_scipy(kernel_name, dim):
    rng = np.random.default_rng(4)
    kernel = KERNELS[kernel_name]()
    sampler = make_kam(kernel)
    for m in (0, 1, 2, 7):
        Z = rng.normal(size=(m, dim)) * 1.5
        x, y = rng.normal(size=dim), rng.normal(size=dim)
        for nu, gamma in ((0.3, 0.2), (2.0, 1.0)):
            expected = independent_log_q(kernel, y, x, Z, nu, gamma)
            got = sampler.log_proposal_density(y, x, Z, nu, gamma)
            assert got == pytest.approx(expected, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("kernel_name", ["gaussian_median", "matern"])
@pytest.mark.parametrize("dim", [2, 3])
def test_loop_acceptance_probability_is_the_independent_mh_ratio(kernel_name, dim):
    """Step by step: for every accepted step, the recorded α equals min(1, π(θ')q(θ|θ')/(π(θ)q(θ'|θ)))
    computed independently with the subsample that drew θ' (redrawn with probability 0.3 at the
    step's start, else cached together with A at the current state), in both directions.
    A forward density cached from an older subsample (kameleon-mcmc's bug) fails this."""
    target = correlated_gaussian(dim)
    kernel = KERNELS[kernel_name]()
    sampler = make_kam(kernel, subsample_size=10, noise=Constant(0.6), subsample_prob=Constant(0.3))
    state = sampler.init(target, target.mean, np.random.default_rng(11))
    state, _ = sampler.advance(state, 60)
    checked = redrawn = 0
    for _ in range(400):
        before = state
        state, block = sampler.advance(before, 1)
        z = state.z[: state.n_sub]
        redrawn += not np.array_equal(z, before.z[: before.n_sub])
        if not block.accepted[0]:
            continue
        x, y = before.x, state.x
        nu, gamma = block.step_size[0], block.noise[0]
        log_ratio = (
            target._log_density(y) - target._log_density(x)
            + independent_log_q(kernel, x, y, z, nu, gamma) - independent_log_q(kernel, y, x, z, nu, gamma)
        )
        assert block.accept_prob[0] == pytest.approx(min(1.0, math.exp(log_ratio)), rel=1e-9)
        checked += log_ratio < 0
    assert checked >= 20 and redrawn >= 20


def test_detailed_balance_needs_the_same_subsample_both_ways():
    """π(x)K(x,y) = π(y)K(y,x), K(x,y) = q_z(y|x) α(x,y), with the sampler's own density
    routines and a fixed z; with the forward density taken from an older subsample (stale z)
    the identity breaks."""
    rng = np.random.default_rng(7)
    target = gmm2d()
    kernel = Matern(2.0, 4.0)
    z_new, z_old = rng.normal(5.0, 3.0, size=(2, 15, 2))
    nu2, g2 = 1.5**2, 0.5**2

    def log_q(x_to, x_from, Z):
        _, S = centred_gradients(kernel, x_from, Z)
        return log_normal_kernel(x_to - x_from, S, nu2, g2, 1e-10)[0]

    def log_flow(x, y, z_forward):  # log π(x) q_z(y|x) α(x, y), α's forward density from z_forward
        log_r = target._log_density(y) - target._log_density(x) + log_q(x, y, z_new) - log_q(y, x, z_forward)
        return target._log_density(x) + log_q(y, x, z_new) + min(0.0, log_r)

    worst_fixed = worst_stale = 0.0
    for _ in range(50):
        x, y = rng.normal(5.0, 3.0, size=(2, 2))
        worst_fixed = max(worst_fixed, abs(log_flow(x, y, z_new) - log_flow(y, x, z_new)))
        worst_stale = max(worst_stale, abs(log_flow(x, y, z_old) - log_flow(y, x, z_old)))
    assert worst_fixed < 1e-9
    assert worst_stale > 0.5


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=needs_numba)], ids=["python", "jit"])
@pytest.mark.parametrize("dim", [2, 3])
def test_log_normal_kernel_and_its_jitter(dim, compiled):
    """The 2-D closed form and the Cholesky path (LAPACK or compiled) agree with scipy, also
    after a jitter."""
    rng = np.random.default_rng(8)
    a = rng.normal(size=dim)
    for gram, g2, jittered in ((np.cov(rng.normal(size=(dim, 9))), 0.3, False), (np.outer(a, a), 1e-30, True)):
        delta = rng.normal(size=dim)
        value, was_jittered = log_normal_kernel(delta, gram, 2.0, g2, 1e-10, compiled)
        C = g2 * np.eye(dim) + 2.0 * gram
        if jittered:  # first retry: ridge · tr C / d
            C = C + 1e-10 * np.trace(C) / dim * np.eye(dim)
        expected = -0.5 * delta @ np.linalg.solve(C, delta) - 0.5 * np.linalg.slogdet(C)[1]
        assert was_jittered == jittered
        assert value == pytest.approx(expected, rel=1e-6 if jittered else 1e-12)
        if jittered:
            L, _ = cholesky_repaired(g2 * np.eye(dim) + 2.0 * gram, 1e-10)
            np.testing.assert_allclose(L @ L.T, C, rtol=1e-12, atol=1e-14 * np.trace(C))
    assert math.isnan(log_normal_kernel(np.ones(dim), np.full((dim, dim), math.nan), 1.0, 1.0, 1e-10, compiled)[0])
    with pytest.raises(np.linalg.LinAlgError, match="could not be repaired"):  # ridge 0: no jitter helps
        log_normal_kernel(np.ones(dim), np.outer(a, a), 1.0, 0.0, 0.0, compiled)


@needs_numba
@pytest.mark.parametrize("dim", [3, 8, 32])
def test_compiled_cholesky_branch_matches_lapack(dim):
    """log_normal_kernel's compiled Cholesky branch = its LAPACK branch, for well-conditioned
    and for jittered covariances (the same jitter decision; a rank-one C + jitter has a
    condition number ~1e12, which multiplies the rounding differences accordingly)."""
    rng = np.random.default_rng(dim)
    B = rng.normal(size=(40, dim))
    a = rng.normal(size=dim)
    for gram, g2 in ((B.T @ B, 0.5), (B.T @ B / 1e6, 1e-3), (np.outer(a, a), 1e-30)):
        delta = rng.normal(size=dim)
        lapack = log_normal_kernel(delta, gram, 1.7, g2, 1e-10)
        compiled = log_normal_kernel(delta, gram, 1.7, g2, 1e-10, compiled=True)
        assert compiled[1] == lapack[1]
        assert compiled[0] == pytest.approx(lapack[0], rel=1e-5 if lapack[1] else 1e-12)


def test_empty_history_proposal_is_isotropic_noise():
    sampler = make_kam(Matern(2.0, 4.0))
    x, y = np.array([0.5, -1.0]), np.array([1.0, 0.3])
    expected = multivariate_normal(mean=x, cov=0.7**2 * np.eye(2)).logpdf(y)
    assert sampler.log_proposal_density(y, x, np.zeros((0, 2)), 3.0, 0.7) == pytest.approx(expected, rel=1e-12)


# ------------------------------------------------------------------------------ KAM specifics
def test_subsample_size_is_min_m_t_and_drawn_from_history():
    target = correlated_gaussian()
    sampler = make_kam(Gaussian(1.0), subsample_size=10, subsample_prob=Constant(1.0))
    state = sampler.init(target, None, np.random.default_rng(0))
    visited = [tuple(state.x)]
    for t in range(30):
        state, _ = sampler.advance(state, 1)
        assert state.n_sub == min(10, t)
        rows = {tuple(r) for r in state.z[: state.n_sub]}
        assert rows <= set(visited)  # states θ_0 … θ_{t−1}: the current θ_t is not in the history
        visited.append(tuple(state.x))


def test_burnin_phases_and_collection():
    target = correlated_gaussian()
    sampler = make_kam(Matern(2.0, 4.0), burnin=100)
    state = sampler.init(target, None, np.random.default_rng(1))
    phases, collected = [], 0
    for n in (60, 60, 130):
        state, block = sampler.advance(state, n)
        phases.append(block.phase)
        collected += len(block.samples)
    phases = np.concatenate(phases)
    np.testing.assert_array_equal(phases, (np.arange(250) >= 100).astype(np.int8))
    assert collected == 150 and state.t == 250 and sampler.phases == ("burnin", "sampling")


class FlatTarget(Target):
    """log π = 0 on R²: with an empty subsample (symmetric proposal) every proposal is accepted."""

    name = "flat"

    def __init__(self):
        super().__init__(2)

    def _log_density(self, x):
        return 0.0


def test_history_reservoir_is_uniform_over_the_chain():
    """Vitter's algorithm R: the history is a uniform subset of θ_0 … θ_{T−1}."""
    T, capacity, positions = 2000, 40, []
    for seed in range(12):
        sampler = make_kam(Linear(), subsample_size=5, history_size=capacity, subsample_prob=Constant(0.0))
        state = sampler.init(FlatTarget(), None, np.random.default_rng(seed))
        x0 = state.x.copy()
        state, block = sampler.advance(state, T)
        assert block.accepted.all() and state.n_seen == T
        chain = np.vstack([x0, block.samples[:-1]])  # θ_0 … θ_{T−1}
        index = {tuple(row): i for i, row in enumerate(chain)}
        found = [index[tuple(row)] for row in state.history]
        assert len(set(found)) == capacity
        positions.extend(found)
    assert kstest((np.array(positions) + 0.5) / T, "uniform").pvalue > 1e-3


def test_floyd_subset_is_uniform():
    rng = np.random.default_rng(2)
    counts = {}
    for _ in range(20000):
        subset = floyd_subset(5, 2, rng.random(2).tolist())
        assert len(set(subset)) == 2 and all(0 <= i < 5 for i in subset)
        key = tuple(sorted(subset))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 10 and chisquare(list(counts.values())).pvalue > 1e-3


# ------------------------------------------------------------------------------ cKAM schedule
def test_ckam_cycle_schedule(loop):
    L, beta, nu_init = 50, 0.4, 1.3
    n_explore = 21  # τ = 0 … 20 explore (τ/L ≤ 0.4)
    target = gmm2d()
    sampler = make_ckam(Matern(2.0, 4.0), step_size=nu_init, subsample_size=10,
                        cycle=CyclicalCosine(L, beta), noise=Constant(0.8))
    assert sampler.n_explore == n_explore and sampler.phases == ("exploration", "sampling")
    state = sampler.init(target, None, np.random.default_rng(5))
    xs, n_collected, n_sampling = [state.x.copy()], 0, 0
    nu_exp = None
    for t in range(3 * L):
        tau = t % L
        before = state
        state, block = sampler.advance(before, 1)
        xs.append(state.x.copy())
        nu = block.step_size[0]
        assert block.phase[0] == (0 if tau < n_explore else 1)
        n_collected += len(block.samples)
        if tau == 0:
            assert nu == nu_init  # ν reset at every cycle start
        if tau < n_explore:
            assert len(block.samples) == 0
            assert block.noise[0] == 0.8
            # z only from this cycle's history θ_{cycle start} … θ_{t−1}
            assert state.n_sub <= tau
            cycle_history = {tuple(x) for x in xs[t - tau : t]}
            assert {tuple(r) for r in state.z[: state.n_sub]} <= cycle_history
            nu_exp = math.exp(state.log_step)
            continue
        n_sampling += 1
        np.testing.assert_array_equal(block.samples, [state.x])
        expected = nu_exp * (math.cos(math.pi * tau / L) + 1.0) / (math.cos(beta * math.pi) + 1.0)
        assert nu == pytest.approx(expected, rel=1e-12)
        if tau == n_explore:
            assert abs(nu / nu_exp - 1.0) < 0.05  # continuous up to one step of the cosine
            # Σ = (γ/ν_exp)² I + A Aᵀ at the last exploration state and subsample
            M = 2.0 * sampler.kernel.gradients(before.x, before.z[: before.n_sub]).T
            H = np.eye(before.n_sub) - 1.0 / before.n_sub
            sigma = (0.8 / nu_exp) ** 2 * np.eye(2) + M @ H @ M.T
            np.testing.assert_allclose(state.chol @ state.chol.T, sigma, rtol=1e-10)
            assert before.n_sub == 10
        if tau == L - 1:
            assert nu < 0.005 * state.initial_step  # ν_t → 0 at the cycle end
        if block.accepted[0]:  # symmetric proposal: α = min(1, π(θ')/π(θ))
            ratio = target._log_density(state.x) - target._log_density(before.x)
            assert block.accept_prob[0] == pytest.approx(min(1.0, math.exp(ratio)), rel=1e-12)
        else:
            np.testing.assert_array_equal(state.x, before.x)
    assert n_collected == n_sampling == 3 * (L - n_explore)
    assert state.logp == pytest.approx(target._log_density(state.x), rel=1e-12)


def test_ckam_default_cycle_is_continuous():
    sampler = make_ckam(Linear(), cycle=CyclicalCosine(1000, 0.4))
    assert sampler.n_explore == 401
    state = sampler.init(gmm2d(), None, np.random.default_rng(0))
    state, block = sampler.advance(state, 402)
    nu_exp = math.exp(state.log_step)  # adapted after τ = 400; sampling leaves it alone
    assert block.phase[400] == 0 and block.phase[401] == 1
    assert abs(block.step_size[401] / nu_exp - 1.0) < 0.005


# ------------------------------------------------------------------------------ robustness
class HoleTarget(Target):
    """Standard normal except NaN for x₀ > 0.5, +inf for x₁ > 2 and −inf for x₁ < −2."""

    name = "holes"

    def __init__(self):
        super().__init__(2, start=[-1.0, 0.0])

    def _log_density(self, x):
        if x[0] > 0.5:
            return math.nan
        if x[1] > 2.0:
            return math.inf
        if x[1] < -2.0:
            return -math.inf
        return -0.5 * float(x @ x)


@pytest.mark.parametrize("make", [make_kam, make_ckam])
def test_nonfinite_proposals_are_counted_rejections(make):
    sampler = make(Matern(2.0, 4.0))
    target = HoleTarget()
    state = sampler.init(target, None, np.random.default_rng(3))
    state, block = sampler.advance(state, 1500)
    assert block.n_nonfinite > 50
    assert np.all(block.samples[:, 0] <= 0.5) and np.all(np.abs(block.samples[:, 1]) <= 2.0)
    assert np.all((block.accept_prob >= 0) & (block.accept_prob <= 1))
    assert math.isfinite(state.logp)
    with pytest.raises(StartPointError):
        sampler.init(target, [1.0, 0.0], np.random.default_rng(0))


class BrokenKernel(Linear):
    """The linear kernel, but with NaN gradients for x₀ > 1."""

    def gradients(self, x, Z):
        return np.full(Z.shape, math.nan) if x[0] > 1.0 else np.array(Z, dtype=float)


def test_nonfinite_proposal_covariance_is_a_counted_rejection():
    sampler = make_kam(BrokenKernel(), subsample_size=5, subsample_prob=Constant(1.0))
    target = correlated_gaussian()
    state = sampler.init(target, [-1.0, -2.0], np.random.default_rng(2))
    state, block = sampler.advance(state, 1000)
    assert block.n_nonfinite > 20 and np.all(block.samples[:, 0] <= 1.0)
    assert np.all((block.accept_prob >= 0) & (block.accept_prob <= 1))


def test_kam_jitter_is_counted():
    """γ = 1e-12 and a two-point subsample: C = γ²I + ν² a aᵀ is numerically singular."""
    sampler = make_kam(Linear(), subsample_size=2, noise=Constant(1e-12), subsample_prob=Constant(0.0))
    state = sampler.init(correlated_gaussian(), None, np.random.default_rng(0))
    state.z[:] = [[0.0, -3.0], [2.0, -1.0]]
    state.n_sub = 2
    B, S = centred_gradients(sampler.kernel, state.x, state.z)
    state.grads[:], state.gram[:] = B, S
    state, block = sampler.advance(state, 200)
    assert block.n_jitter == 2 * 200 - 2 * block.n_nonfinite
    assert block.accepted.any() and np.all(np.isfinite(block.accept_prob))


def test_ckam_jitter_is_counted():
    noise = NoiseDecay(start=2.0, end=1e-12, rate=0.55, horizon=30)
    sampler = make_ckam(Linear(), subsample_size=2, cycle=CyclicalCosine(100, 0.4), noise=noise,
                        subsample_prob=Constant(1.0))
    state = sampler.init(correlated_gaussian(), None, np.random.default_rng(0))
    state, block = sampler.advance(state, 300)
    assert block.n_jitter > 0
    assert len(block.samples) == 3 * 59 and np.all(np.isfinite(block.samples))


@pytest.mark.parametrize("make", [make_kam, make_ckam])
def test_chain_does_not_depend_on_block_sizes(loop, make):
    target = gmm2d()
    runs = []
    extra = {"cycle": CyclicalCosine(90, 0.4)} if make is make_ckam else {"history_size": 40}
    for sizes in ([700], [1, 13, 200, 86, 400]):
        sampler = make(Gaussian(1.0, median_heuristic=True), **extra)
        state = sampler.init(target, None, np.random.default_rng(9))
        blocks = []
        for n in sizes:
            state, block = sampler.advance(state, n)
            blocks.append(block)
        runs.append((state, blocks))
    (s1, b1), (s2, b2) = runs
    for field in ("samples", "accepted", "accept_prob", "step_size", "noise", "phase"):
        np.testing.assert_array_equal(
            np.concatenate([getattr(b, field) for b in b1]), np.concatenate([getattr(b, field) for b in b2])
        )
    np.testing.assert_array_equal(s1.x, s2.x)
    np.testing.assert_array_equal(s1.history, s2.history)
    assert s1.log_step == s2.log_step and s1.t == s2.t == 700


def test_advance_does_not_modify_its_input_state():
    sampler = make_kam(Matern(2.0, 4.0))
    state = sampler.init(gmm2d(), None, np.random.default_rng(0))
    state, _ = sampler.advance(state, 50)
    snapshot = state.copy()
    sampler.advance(state, 50)
    np.testing.assert_array_equal(state.x, snapshot.x)
    np.testing.assert_array_equal(state.history, snapshot.history)
    assert state.t == snapshot.t


@pytest.mark.parametrize("start, n", [(100, 50), (60, 100), (150, 80)], ids=["sampling", "both", "next_cycle"])
def test_ckam_advance_does_not_modify_its_input_state(loop, start, n):
    """cKAM shares the arrays of its input state until an exploration step would change them."""
    sampler = make_ckam(Matern(2.0, 4.0), cycle=CyclicalCosine(200, 0.4))
    state = sampler.init(gmm2d(), None, np.random.default_rng(0))
    state, _ = sampler.advance(state, start)
    snapshot = state.copy()
    sampler.advance(state, n)
    for name, value in vars(snapshot).items():
        np.testing.assert_array_equal(getattr(state, name), value, err_msg=name)


# ------------------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    "make, word",
    [
        (lambda: make_kam(Linear(), step_size=0.0), "step_size"),
        (lambda: make_kam(Linear(), step_size=math.inf), "step_size"),
        (lambda: make_kam(Linear(), subsample_size=1), "subsample_size"),
        (lambda: make_kam(Linear(), subsample_size=2.5), "subsample_size"),
        (lambda: make_kam(Linear(), burnin=-1), "burnin"),
        (lambda: make_kam(Linear(), subsample_size=30, history_size=10), "history_size"),
        (lambda: make_kam(Linear(), noise=Constant(0.0)), "noise"),
        (lambda: make_kam(Linear(), adaptation=Constant(0.1)), "adaptation"),
        (lambda: make_kam("matern"), "kernel"),
        (lambda: make_ckam(Linear(), cycle=Constant(1.0)), "cycle"),
        (lambda: make_ckam(Linear(), ridge=0.0), "ridge"),
        (lambda: make_ckam(Linear(), cycle=CyclicalCosine(10, 0.95)), "beta"),
        (lambda: make_ckam(Linear(), adapt_cycles=0), "adapt_cycles"),
    ],
)
def test_validation(make, word):
    with pytest.raises(ValueError, match=word):
        make()


# ------------------------------------------------------------------------------ configs
@pytest.mark.parametrize(
    "overrides, cls, kernel_cls",
    [
        (["sampler=ckam", "kernel=gaussian"], CyclicalKAM, Gaussian),
        (["sampler=ckam", "kernel=matern", "target=gmm2d"], CyclicalKAM, Matern),
        (["sampler=kam", "kernel=linear"], KAM, Linear),
        (["sampler=ckam_authors"], CyclicalKAM, Matern),
        (["sampler=kam", "kernel=gaussian", "kernel.median_heuristic=true",
          "schedule@sampler.noise=constant", "sampler.noise.value=0.2"], KAM, Gaussian),
        (["sampler=ckam", "schedule@sampler.noise=constant", "sampler.noise.value=0.2",
          "schedule@sampler.subsample_prob=constant", "sampler.subsample_prob.value=1.0"], CyclicalKAM, Matern),
    ],
)
def test_configs_compose_and_run(overrides, cls, kernel_cls):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    sampler = instantiate(cfg.sampler)
    target = instantiate(cfg.target)
    assert type(sampler) is cls and type(sampler.kernel) is kernel_cls
    state = sampler.init(target, None, np.random.default_rng(0))
    state, block = sampler.advance(state, 300)
    assert block.n == 300 and math.isfinite(state.logp)


def test_config_defaults_are_the_paper_tables():
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        ckam = instantiate(compose("config", overrides=["sampler=ckam"]).sampler)
        kam = instantiate(compose("config", overrides=["sampler=kam"]).sampler)
        authors = instantiate(compose("config", overrides=["sampler=ckam_authors"]).sampler)
        ckam32 = instantiate(compose("config", overrides=["sampler=ckam", "target=gmm32"]).sampler)
    assert ckam.step_size == pytest.approx(2 * 2.38 / math.sqrt(2))
    assert ckam32.step_size == pytest.approx(2 * 2.38 / math.sqrt(32))
    assert (ckam.subsample_size, ckam.cycle.cycle_length, ckam.cycle.beta) == (50, 1000, 0.4)
    assert (ckam.adaptation.epsilon, ckam.adaptation.target_accept) == (0.75, 0.234)
    assert (ckam.noise.start, ckam.noise.end, ckam.noise.rate, ckam.noise.horizon) == (4.0, 1.0, 0.55, 1000)
    assert ckam.subsample_prob == PowerDecay(1.0, 0.5)
    assert ckam.adapt_cycles == 2 and ckam.describe()["adaptation"] == "finite"  # valid default
    assert (kam.subsample_size, kam.burnin, kam.noise.horizon) == (30, 10000, 25000)
    assert (kam.noise.start, kam.noise.end, kam.noise.rate) == (4.0, 1.0, 0.55)
    assert kam.step_size == ckam.step_size
    assert authors.step_size == pytest.approx(4 * 2.38**2 / 2, rel=1e-5) and authors.adaptation.epsilon == 2.0
    assert isinstance(ckam.kernel, Matern) and (ckam.kernel.lengthscale, ckam.kernel.smoothness) == (2.0, 4.0)


# ------------------------------------------------------------------------------ finite adaptation
def test_finite_adaptation_freezes_z_nu_and_sigma(loop):
    """After ``adapt_cycles`` cycles, z, ν, L_Σ and ν_0 never change again; before, they do."""
    sampler = make_ckam(Matern(2.0, 4.0), cycle=CyclicalCosine(100, 0.4), adapt_cycles=2)
    state = sampler.init(gmm2d(), None, np.random.default_rng(1))
    seen = []
    for _ in range(6):
        state, block = sampler.advance(state, 100)
        seen.append((state.z[: state.n_sub].copy(), state.log_step, state.chol.copy(), state.initial_step))
    for later in seen[2:]:
        np.testing.assert_array_equal(later[0], seen[1][0])
        assert later[1] == seen[1][1] and later[3] == seen[1][3]
        np.testing.assert_array_equal(later[2], seen[1][2])
    assert seen[0][1] != seen[1][1]  # the second cycle re-adapted ν
    info = sampler.describe()
    assert (info["adaptation"], info["frozen_after_iterations"]) == ("finite", 200)
    assert make_ckam(Linear()).describe()["adaptation"] == "non-diminishing"


def test_finite_adaptation_chain_does_not_depend_on_block_sizes(loop):
    target = gmm2d()
    ends = []
    for sizes in ([500], [7, 93, 150, 250]):
        sampler = make_ckam(Gaussian(1.0, median_heuristic=True), cycle=CyclicalCosine(90, 0.4),
                            adapt_cycles=1)
        state = sampler.init(target, None, np.random.default_rng(4))
        for n in sizes:
            state, _ = sampler.advance(state, n)
        ends.append(state)
    np.testing.assert_array_equal(ends[0].x, ends[1].x)


def test_frozen_exploration_is_invariant():
    """The frozen kernel alone (adaptation over after one short cycle) keeps a correlated
    Gaussian's moments from exact starts."""
    target = correlated_gaussian()
    samples, _ = run_chains(lambda: make_ckam(Matern(2.0, 4.0), cycle=CyclicalCosine(100, 0.4),
                                              adapt_cycles=1), target, 4, 4000, seed=5)
    check_moments(samples, target.mean, target.variance)


def _paper(sampler: str, experiment: str):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=[f"sampler={sampler}", f"experiment={experiment}"])
    return cfg, instantiate(cfg.target)


@pytest.mark.slow
def test_published_ckam_drifts_on_bimodal():
    """cKAM as published (conf/preset/paper_bimodal/ckam.yaml): 200 chains from exact draws at a
    cycle start lose the wide mode (issue 9); the check rejects with a clear margin. (100 chains
    at seed 0 gave min Holm p 0.142 on a 2-core AMD EPYC machine, 2026-11-28: too few to see
    the drift on every CPU, whose rounding changes the chains.)"""
    cfg, target = _paper("ckam", "paper_bimodal")
    result = assert_not_stationary(lambda: instantiate(cfg.sampler), target, n_chains=200,
                                   times=[20_000, 30_000], seed=0, margin=5)
    occ = result.tests[(result.tests["test"] == "occupancy") & (result.tests["time"] == 30_000)]
    assert occ.iloc[0]["share"][1] < 0.4  # the wide (right-hand) mode, 1/2 under π (measured 0.31)


@pytest.mark.slow
@pytest.mark.parametrize("experiment", ["paper_bimodal", "paper_gmm2d"])
def test_finite_adaptation_ckam_passes_the_check(experiment):
    cfg, target = _paper("ckam_finite", experiment)
    assert_stationary(lambda: instantiate(cfg.sampler), target, n_chains=100,
                      times=[2_000, 10_000, 30_000], seed=0)


@pytest.mark.slow
def test_finite_adaptation_ckam_passes_the_check_on_gmm32():
    cfg, target = _paper("ckam_finite", "paper_gmm32")
    assert_stationary(lambda: instantiate(cfg.sampler), target, n_chains=30,
                      times=[16_000, 32_000], seed=0)
