"""cKAM with diminishing adaptation (sampler=ckam_dim, DiminishingCyclicalKAM): the update of
z, ν and Σ across cycles, its bounds, block-size independence, validation, the YAML, and the
stationarity check on bimodal, gmm2d and gmm32 (slow)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from hydra.utils import instantiate

from ckam_bench.kernels import Gaussian, Matern
from ckam_bench.samplers.kameleon import DiminishingCyclicalKAM
from ckam_bench.schedules import Constant, CyclicalCosine, NoiseDecay, PowerDecay, RobbinsMonro
from ckam_bench.targets.mixtures import gmm2d
from tests.samplers.invariance import assert_stationary, check_moments, loop, run_chains  # noqa: F401
from tests.samplers.test_kameleon import correlated_gaussian


def make(kernel=None, **kw):
    args = dict(step_size=1.0, subsample_size=20, cycle=CyclicalCosine(100, 0.4), adaptation=RobbinsMonro(),
                noise=NoiseDecay(4.0, 1.0, 0.55, 100), subsample_prob=PowerDecay(),
                covariance_rate=PowerDecay(1.0, 1.0), history_size=500)
    args.update(kw)
    return DiminishingCyclicalKAM(Matern(2.0, 4.0) if kernel is None else kernel, **args)


def test_nothing_is_reset_at_a_cycle_start():
    """The history keeps the exploration states of every cycle and ν carries over."""
    sampler = make()
    state = sampler.init(gmm2d(), None, np.random.default_rng(0))
    seen = []
    for _ in range(5):
        before = state.log_step
        state, block = sampler.advance(state, 100)  # one whole cycle: 41 exploration iterations
        seen.append(state.n_seen)
        assert block.step_size[0] == pytest.approx(math.exp(before))  # not reset to step_size
    assert seen == [41, 82, 123, 164, 205]
    assert state.n_sub == 20


def test_sigma_is_the_mean_of_the_cycle_estimates():
    """Σ_c = Σ_{c−1} + w_c(Σ̂_c − Σ_{c−1}), Σ̂_c = (γ/ν)²I + A_θA_θᵀ at the transition; with
    w_c = 1/(1 + c), Σ_c is the mean of Σ̂_0 … Σ̂_c."""
    sampler = make()
    state = sampler.init(gmm2d(), None, np.random.default_rng(3))
    L, n_explore = 100, sampler.n_explore
    estimates = []
    for c in range(4):
        state, _ = sampler.advance(state, c * L + n_explore - state.t)  # up to the transition
        gamma = sampler.noise(n_explore)
        estimates.append((gamma / math.exp(state.log_step)) ** 2 * np.eye(2) + state.gram)
        state, _ = sampler.advance(state, 1)
        np.testing.assert_allclose(state.sigma, np.mean(estimates, axis=0), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(state.chol @ state.chol.T, state.sigma, rtol=1e-10, atol=1e-12)
        assert state.initial_step == pytest.approx(sampler.cycle.initial_step(math.exp(state.log_step)))


def test_adaptation_diminishes():
    """Redraws of z get rarer, the steps of log ν and the moves of Σ smaller, cycle after cycle."""
    sampler = make(cycle=CyclicalCosine(50, 0.4))
    state = sampler.init(gmm2d(), None, np.random.default_rng(1))
    redraws, nu_moves, sigma_moves = [], [], []
    for c in range(300):
        z, nu, sigma = state.z[: state.n_sub].copy(), state.log_step, state.sigma.copy()
        state, _ = sampler.advance(state, 50)
        redraws.append(not np.array_equal(z, state.z[: state.n_sub]))
        nu_moves.append(abs(state.log_step - nu))
        sigma_moves.append(np.abs(state.sigma - sigma).max() / np.abs(state.sigma).max())
    early, late = slice(1, 31), slice(270, 300)
    assert np.mean(redraws[late]) < 0.5 * np.mean(redraws[early])  # p_s ∝ s^(-1/2)
    assert np.mean(nu_moves[late]) < 0.2 * np.mean(nu_moves[early])
    assert np.mean(sigma_moves[late]) < 0.1 * np.mean(sigma_moves[early])
    assert sampler.describe()["adaptation"] == "diminishing"
    assert make(subsample_prob=Constant(1.0)).describe()["adaptation"] == "non-diminishing"
    assert make(covariance_rate=Constant(0.5)).describe()["adaptation"] == "non-diminishing"


def test_step_size_and_covariance_stay_in_their_bounds():
    """Containment: log ν is projected on [log ν_min, log ν_max], Σ's eigenvalues clipped."""
    sampler = make(step_size=1.0, step_size_bounds=(0.5, 1.5), covariance_bounds=(2.0, 3.0))
    state = sampler.init(gmm2d(), None, np.random.default_rng(2))
    for _ in range(20):
        state, block = sampler.advance(state, 100)
        explore = block.phase == 0
        assert np.all((block.step_size[explore] >= 0.5 - 1e-12) & (block.step_size[explore] <= 1.5 + 1e-12))
        values = np.linalg.eigvalsh(state.sigma)
        assert np.all((values >= 2.0 - 1e-9) & (values <= 3.0 + 1e-9))
    assert np.isclose(block.step_size[explore], 0.5).any() or np.isclose(block.step_size[explore], 1.5).any()


def test_invariance_from_exact_draws():
    """Chains from exact draws keep a correlated Gaussian's and gmm2d's moments."""
    for target in (correlated_gaussian(), gmm2d()):
        samples, _ = run_chains(lambda: make(), target, 4, 4000, seed=3)
        check_moments(samples, target.mean, target.variance)


def test_chain_does_not_depend_on_block_sizes(loop):
    target = gmm2d()
    runs = []
    for sizes in ([700], [1, 13, 200, 86, 400]):
        sampler = make(Gaussian(1.0, median_heuristic=True), cycle=CyclicalCosine(90, 0.4), history_size=40)
        state = sampler.init(target, None, np.random.default_rng(9))
        blocks = []
        for n in sizes:
            state, block = sampler.advance(state, n)
            blocks.append(block)
        runs.append((state, blocks))
    (s1, b1), (s2, b2) = runs
    for field in ("samples", "accepted", "accept_prob", "step_size", "noise", "phase"):
        np.testing.assert_array_equal(np.concatenate([getattr(b, field) for b in b1]),
                                      np.concatenate([getattr(b, field) for b in b2]))
    for name in ("x", "history", "sigma", "chol"):
        np.testing.assert_array_equal(getattr(s1, name), getattr(s2, name))
    assert s1.log_step == s2.log_step and s1.t == s2.t == 700


@pytest.mark.parametrize("start, n", [(100, 50), (60, 100), (150, 80)], ids=["sampling", "both", "next_cycle"])
def test_advance_does_not_modify_its_input_state(start, n):
    sampler = make()
    state = sampler.init(gmm2d(), None, np.random.default_rng(0))
    state, _ = sampler.advance(state, start)
    snapshot = state.copy()
    sampler.advance(state, n)
    for name, value in vars(snapshot).items():
        np.testing.assert_array_equal(getattr(state, name), value, err_msg=name)


@pytest.mark.parametrize("kw, word", [
    ({"step_size_bounds": (1.0, 0.5)}, "step_size_bounds"),
    ({"step_size_bounds": (0.0, 2.0)}, "step_size_bounds"),
    ({"step_size_bounds": "wide"}, "step_size_bounds"),
    ({"step_size": 5.0, "step_size_bounds": (0.1, 2.0)}, "step_size_bounds"),
    ({"covariance_bounds": (1.0, math.inf)}, "covariance_bounds"),
    ({"covariance_rate": 0.5}, "covariance_rate"),
    ({"history_size": 10}, "history_size"),
])
def test_validation(kw, word):
    with pytest.raises(ValueError, match=f"^{word}"):
        make(**kw)


def _composed(*overrides):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=["sampler=ckam_dim", *overrides])
    return instantiate(cfg.sampler), instantiate(cfg.target)


def test_config_defaults():
    """Table 1's cycle values, KAM's redraw rule, RM ν, w_c = 1/(1 + c); Table 3 in paper_gmm32."""
    sampler, target = _composed()
    assert type(sampler) is DiminishingCyclicalKAM and isinstance(sampler.kernel, Matern)
    assert sampler.step_size == pytest.approx(2 * 2.38 / math.sqrt(2))
    assert (sampler.subsample_size, sampler.cycle.cycle_length, sampler.cycle.beta) == (50, 1000, 0.4)
    assert sampler.subsample_prob == PowerDecay(1.0, 0.5)
    assert sampler.covariance_rate == PowerDecay(1.0, 1.0)
    assert (sampler.adaptation.epsilon, sampler.adaptation.target_accept) == (0.75, 0.234)
    assert sampler.describe()["adaptation"] == "diminishing"
    state = sampler.init(target, None, np.random.default_rng(0))
    state, block = sampler.advance(state, 2500)
    assert block.n == 2500 and math.isfinite(state.logp)
    big, _ = _composed("experiment=paper_gmm32")
    assert (big.subsample_size, big.cycle.cycle_length, big.cycle.beta, big.noise.horizon) == (100, 8000, 0.6, 8000)


# ------------------------------------------------------------------------------ stationarity
def _paper(experiment: str):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=["sampler=ckam_dim", f"experiment={experiment}"])
    return cfg, instantiate(cfg.target)


@pytest.mark.slow
@pytest.mark.parametrize("experiment", ["paper_bimodal", "paper_gmm2d"])
def test_passes_the_check(experiment):
    cfg, target = _paper(experiment)
    assert_stationary(lambda: instantiate(cfg.sampler), target, n_chains=100,
                      times=[2_000, 10_000, 30_000], seed=0)


@pytest.mark.slow
def test_passes_the_check_on_gmm32():
    cfg, target = _paper("paper_gmm32")
    assert_stationary(lambda: instantiate(cfg.sampler), target, n_chains=30,
                      times=[8_000, 16_000], seed=0)  # cycles 1 and 2 (L = 8000)
