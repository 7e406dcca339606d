"""DM, finite DM, Scout MCMC and the aRWM mixture: π-invariance from exact draws (banana_dm,
basis4), the finite variants' MH phase alone with a fixed bank (and the authors' reverse-factor
bug failing the same check), the tempering swap against a two-state brute force, mode visits on
basis4, the k-d tree search, block-size independence, the Python loops, counts and bad input."""

import math

import numpy as np
import pytest
from scipy.special import ndtri

from ckam_bench.samplers.adaptive_mixture import AdaptiveRWMixture
from ckam_bench.samplers.divergence import (
    DivergenceMinimisation,
    FiniteDivergenceMinimisation,
    FiniteScout,
    Scout,
    flatten_tree,
)
from ckam_bench.samplers.divergence.loops import swap
from ckam_bench.samplers.divergence.nearest import nearest
from ckam_bench.schedules import Window
from ckam_bench.targets.divergence import banana_dm, basis4
from ckam_bench.targets.gaussians import Gaussian
from tests.samplers.invariance import check_moments, cut_gaussian_targets, loop, run_chains  # noqa: F401

# The default configs (conf/sampler/*.yaml): DM and Scout adapt during a window and collect
# after it; the scouts first walk alone on π^τ; the finite variants use shorter phases here.
FACTORIES = {
    "dm": lambda: DivergenceMinimisation(rate=Window(until=5000, value=0.002), burnin=5000),
    "dm_finite": lambda: FiniteDivergenceMinimisation(adapt_iterations=300, bank_size=200),
    "scout": lambda: Scout(rate=Window(until=5000, value=0.002), burnin=5000, scout_warmup=5000),
    "scout_finite": lambda: FiniteScout(adapt_iterations=300, bank_size=200, scout_warmup=5000),
    "arwm": lambda: AdaptiveRWMixture(),
}
# Chain lengths for the invariance checks: the adaptive windows plus 8000 collected states;
# aRWM's covariance needs 20 000 iterations before its transient bias is gone on banana_dm.
LENGTHS = {"dm": 13000, "scout": 13000, "dm_finite": 8000, "scout_finite": 8000, "arwm": 60000}


# The long chains (DM and Scout adapt for 5000 iterations first; aRWM needs 20 000) run as slow tests.
INVARIANCE_CASES = [pytest.param(name, marks=pytest.mark.slow) if name in ("dm", "scout", "arwm") else name
                    for name in FACTORIES]


@pytest.mark.parametrize("name", INVARIANCE_CASES)
def test_invariance_banana(name):
    target = banana_dm()
    make = (lambda: AdaptiveRWMixture(burnin=20000)) if name == "arwm" else FACTORIES[name]
    samples, accepted = run_chains(make, target, 32, LENGTHS[name], seed=11, block=20000)
    check_moments(samples, target.mean, target.variance)
    assert 0.05 < accepted.mean() < 0.95


@pytest.mark.parametrize("name", INVARIANCE_CASES)
def test_invariance_basis4(name):
    # Chains that cannot cross between modes still keep π when started from exact draws;
    # 64 chains make the between-chain spread measurable.
    target = basis4()
    n_iter = {"dm": 6500, "scout": 6500}.get(name, 1500)
    samples, _ = run_chains(FACTORIES[name], target, 64, n_iter, seed=12, block=10000)
    check_moments(samples, target.mean, target.variance, min_ess=40)


def _heterogeneous_bank(target, rng, size=60):
    """Stored states from exact draws, factors that change sharply across x₁ = 0."""
    points = target.sample(size, rng)
    chols = np.empty((size, 2, 2))
    for i, p in enumerate(points):
        scale = 0.6 if p[0] < 0 else 4.0
        chols[i] = scale * np.array([[1.0, 0.0], [0.5 * np.sign(p[0]), 1.0]])
    return points, chols


def _fixed_bank_sampler(points, chols, reverse):
    sampler = FiniteDivergenceMinimisation(adapt_iterations=0, reverse_factor=reverse)
    sampler.set_bank(points, chols)
    return sampler


# A correlated Gaussian for the fixed-bank checks: a random walk cannot estimate banana_dm's
# heavy-tailed Var[x₂] in a unit test's budget (even L = 2I everywhere gives 122 for 166).
def _gaussian():
    return Gaussian([0.0, 0.0], [[4.0, 1.0], [1.0, 2.0]], 2)


def test_fixed_bank_mh_phase_is_valid(loop):
    target = _gaussian()
    points, chols = _heterogeneous_bank(target, np.random.default_rng(5))
    n_iter = 10000 if loop == "jit" else 3000
    n_chains = 32 if loop == "jit" else 8
    samples, _ = run_chains(lambda: _fixed_bank_sampler(points, chols, "proposal"), target, n_chains, n_iter,
                            seed=6, block=10000)
    check_moments(samples, target.mean, target.variance)


def test_authors_reverse_factor_bug_fails_the_check():
    target = _gaussian()
    points, chols = _heterogeneous_bank(target, np.random.default_rng(5))
    samples, _ = run_chains(lambda: _fixed_bank_sampler(points, chols, "current"), target, 32, 10000, seed=6,
                            block=10000)
    with pytest.raises(AssertionError, match=r"coordinate \d: (mean|variance) -?\d"):
        check_moments(samples, target.mean, target.variance)


@pytest.mark.parametrize("tau", [0.1, 0.3])
def test_swap_rule_against_two_state_brute_force(tau):
    """Two states {a, b} with log π = (0, −1.3): the swap kernel built from ``_swap`` (its
    acceptance averaged over a fine quantile grid of the normal it consumes) must leave
    π(x) π^τ(s) invariant; two rules the paper prints must not: "always swap" (Algorithm 3,
    line 17, whose ratio cancels to 1) and exponent τ in place of 1 − τ."""
    logpi = np.array([0.0, -1.3])
    z_grid = ndtri((np.arange(200_000) + 0.5) / 200_000)

    def swap_prob(lx, ls, rule):
        if rule == "ours":
            hits = 0
            for z in z_grid[::50]:
                x, s = np.zeros(1), np.ones(1)
                hits += swap(x, lx, s, ls, z, tau)[2]
            return hits / z_grid[::50].size
        if rule == "always":
            return 1.0
        return min(1.0, math.exp(tau * (ls - lx)))

    for rule, should_hold in (("ours", True), ("always", False), ("tau", False)):
        states = [(i, j) for i in range(2) for j in range(2)]
        P = np.zeros((4, 4))
        for k, (i, j) in enumerate(states):
            p = swap_prob(logpi[i], logpi[j], rule)
            P[k, states.index((j, i))] += p
            P[k, k] += 1 - p
        w = np.array([math.exp(logpi[i] + tau * logpi[j]) for i, j in states])
        w /= w.sum()
        holds = np.allclose(w @ P, w, atol=2e-3)
        assert holds == should_hold, (rule, w @ P, w)


def _modes_visited(samples):
    """Which of the eight ±10 e_i modes each sample sits in (those farther than 5 from 0)."""
    far = np.abs(samples).max(axis=1) > 5
    axis = np.abs(samples[far]).argmax(axis=1)
    sign = samples[far][np.arange(far.sum()), axis] > 0
    return set(zip(axis.tolist(), sign.tolist()))


@pytest.mark.parametrize("make", [lambda: Scout(rate=0.002), lambda: FiniteScout(adapt_iterations=5000)])
def test_scout_visits_all_basis4_modes(make):
    target = basis4()
    sampler = make()
    state = sampler.init(target, [10.0, 0, 0, 0], np.random.default_rng(3))
    state, block = sampler.advance(state, 40_000)
    assert len(_modes_visited(block.samples)) == 8
    assert state.swaps_accepted > 10


def test_dm_alone_stays_in_its_basis4_mode():
    target = basis4()
    sampler = DivergenceMinimisation(rate=0.002)
    state = sampler.init(target, [10.0, 0, 0, 0], np.random.default_rng(3))
    _, block = sampler.advance(state, 20_000)
    assert _modes_visited(block.samples) == {(0, True)}


def test_kd_tree_search_is_exact():
    rng = np.random.default_rng(0)
    for d, size in ((2, 1), (2, 50), (3, 3000), (6, 500)):
        points = rng.standard_normal((size, d))
        tree = flatten_tree(points)
        stack, bounds = np.empty(2 * tree[0].size + 2, dtype=np.int64), np.empty(2 * tree[0].size + 2)
        for q in rng.standard_normal((200, d)) * 1.5:
            i = nearest(q, points, *tree, stack, bounds, int(rng.integers(-1, size)))
            assert i == int(np.argmin(((points - q) ** 2).sum(axis=1)))


@pytest.mark.parametrize("name", FACTORIES)
def test_chain_does_not_depend_on_block_sizes(name):
    target = banana_dm()
    make = {"dm": lambda: DivergenceMinimisation(rate=0.002),
            "scout": lambda: Scout(rate=0.002, scout_warmup=100, swap_every=7)}.get(name, FACTORIES[name])
    runs = []
    for sizes in ((700,), (123, 300, 277)):
        sampler = make()
        state = sampler.init(target, [1.0, -2.0], np.random.default_rng(9))
        out = []
        for k in sizes:
            state, block = sampler.advance(state, k)
            out.append(block.samples)
        runs.append(np.concatenate(out))
    assert runs[0].shape == (700, 2)
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("name", ["dm", "scout_finite", "arwm"])
def test_python_loop_gives_the_compiled_chain(name, monkeypatch):
    target = banana_dm()
    chains = []
    for flag in ("1", "0"):
        monkeypatch.setenv("CKAM_BENCH_JIT", flag)
        sampler = {"dm": lambda: DivergenceMinimisation(rate=0.002),
                   "scout_finite": lambda: FiniteScout(adapt_iterations=200, bank_size=50, scout_warmup=100),
                   "arwm": AdaptiveRWMixture}[name]()
        state = sampler.init(target, [1.0, -2.0], np.random.default_rng(4))
        _, block = sampler.advance(state, 300)
        chains.append(block.samples)
    assert chains[0].shape == (300, 2)
    np.testing.assert_allclose(chains[0], chains[1], rtol=1e-9, atol=1e-9)


def test_arwm_python_loop_is_the_kernel_to_the_bit(monkeypatch):
    """A plain-numpy target runs aRWM's Python loop: one density call and one compiled step per
    iteration. Its chain is the compiled kernel's and the all-Python loop's (CKAM_BENCH_JIT=0)
    to the bit, over uneven blocks, through the fixed component's start (count ≤ 2d), the
    adaptive component and non-finite proposals (the density is one jitted function for all
    three, so the densities agree exactly)."""
    from ckam_bench import jit

    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    Plain, Compiled = cut_gaussian_targets(1.5)

    runs = {}
    for loop, switch, make in (("step", "1", Plain), ("python", "0", Plain), ("kernel", "1", Compiled)):
        monkeypatch.setenv(jit.ENV, switch)
        target, sampler = make(3), AdaptiveRWMixture(delta=0.2)
        sampler.warm_up(target)
        calls = jit.KERNEL_CALLS
        state = sampler.init(target, [1.0, -1.0, 0.5], np.random.default_rng(8))
        blocks = []
        for k in (37, 200, 63):
            state, block = sampler.advance(state, k)
            blocks.append(block)
        assert (jit.KERNEL_CALLS > calls) == (loop == "kernel")
        runs[loop] = (state, blocks, target.n_density)
    state, blocks, n_density = runs["step"]
    assert n_density == 1 + 300 and 6 < state.n_fixed < 150 and sum(b.n_nonfinite for b in blocks) > 0
    for other in ("python", "kernel"):
        state_o, blocks_o, n_density_o = runs[other]
        assert n_density_o == n_density
        for b, b_o in zip(blocks, blocks_o):
            for field in ("samples", "logp", "accepted", "accept_prob"):
                np.testing.assert_array_equal(getattr(b, field), getattr(b_o, field))
            assert b.n_nonfinite == b_o.n_nonfinite
        for field in ("x", "logp", "mean", "m2", "count", "n_fixed", "t"):
            np.testing.assert_array_equal(getattr(state, field), getattr(state_o, field))


def test_counts_phases_and_burnin():
    target = banana_dm()
    sampler = FiniteScout(n_draws=4, adapt_iterations=100, bank_size=20, burnin=30)
    state = sampler.init(target, None, np.random.default_rng(0))
    target.reset_counters()
    state, block = sampler.advance(state, 250)
    assert target.n_grad == (4 + 1) * 100  # J draws and the scout's step
    assert target.n_density == (4 + 1) * 100 + 2 * 150
    assert FiniteScout(scout_warmup=7).init(target, None, np.random.default_rng(0)) is not None
    assert target.n_density == (4 + 1) * 100 + 2 * 150 + 1 + 7
    assert block.samples.shape == (220, 2)
    assert list(np.bincount(block.phase)) == [30, 70, 150]
    assert sampler.describe()["adaptation"] == "finite"
    assert DivergenceMinimisation(rate=0.002).describe()["adaptation"] == "non-diminishing"
    assert FACTORIES["dm"]().describe()["adaptation"] == "finite"
    assert 0.0 <= sampler.trace_columns(state)["swap_acceptance"] <= 1.0


def test_horseshoe_shrinking_gamma():
    from ckam_bench.targets.horseshoe import Horseshoe

    target = Horseshoe()
    sampler = DivergenceMinimisation(rate=0.002, gamma_shrink=0.99, init_scale=0.05)
    state = sampler.init(target, None, np.random.default_rng(0))
    state, block = sampler.advance(state, 300)
    rejections = int((~block.accepted).sum())
    assert state.gamma_mult == pytest.approx(0.99**rejections)
    assert sampler.describe()["adaptation"] == "diminishing"


@pytest.mark.parametrize("make, message", [
    (lambda: DivergenceMinimisation(beta=0), "^beta must be"),
    (lambda: DivergenceMinimisation(rate=0), "^rate must give"),
    (lambda: DivergenceMinimisation(n_draws=0), "^n_draws must be"),
    (lambda: DivergenceMinimisation(gamma_shrink=1.5), "^gamma_shrink must be"),
    (lambda: FiniteDivergenceMinimisation(reverse_factor="x"), "^reverse_factor must be"),
    (lambda: FiniteDivergenceMinimisation(bank_size=0), "^bank_size must be"),
    (lambda: Scout(tau=1.0), "^tau must be"),
    (lambda: Scout(swap_every=0), "^swap_every must be"),
    (lambda: AdaptiveRWMixture(delta=0), "^delta must be"),
])
def test_bad_arguments_name_the_key(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bank_memory_is_bounded():
    from ckam_bench.targets.horseshoe import Horseshoe

    sampler = FiniteDivergenceMinimisation(bank_size=10**6)
    with pytest.raises(ValueError, match="^bank_size must keep"):
        sampler.init(Horseshoe(), None, np.random.default_rng(0))


@pytest.mark.parametrize("make", [lambda: FiniteScout(adapt_iterations=300, bank_size=50),
                                  lambda: AdaptiveRWMixture()])
def test_resume_from_a_stored_state_gives_the_same_chain(make):
    """A state written with the runner's flatten/restore (a new sampler instance, the k-d tree
    rebuilt) continues the chain exactly, across the finite variant's phase change."""
    from ckam_bench.engine.store import flatten_state, restore_state

    target = banana_dm()
    full = make()
    state = full.init(target, [1.0, -2.0], np.random.default_rng(4))
    _, reference = full.advance(state, 800)

    first = make()
    rng = np.random.default_rng(4)
    state = first.init(target, [1.0, -2.0], rng)
    state, head = first.advance(state, 350)
    arrays = flatten_state(state)
    second = make()
    template = second.init(target, [1.0, -2.0], np.random.default_rng(99))
    second.rng = rng
    restored = restore_state(template, arrays)
    _, tail = second.advance(restored, 450)
    np.testing.assert_array_equal(np.concatenate([head.samples, tail.samples]), reference.samples)
