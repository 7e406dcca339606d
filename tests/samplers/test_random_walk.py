"""Random-walk Metropolis: invariance, a check that must fail, non-finite densities,
determinism across block splits, validation and the Hydra config."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from hydra.utils import instantiate

from ckam_bench.samplers.base import StartPointError
from ckam_bench.samplers.random_walk import RandomWalk, predraw
from ckam_bench.targets.gaussians import gauss2d_corr
from ckam_bench.targets.mixtures import gmm2d
from tests.samplers.invariance import (
    NonFiniteHalfPlane,
    Tempered,
    check_acceptance,
    check_moments,
    loop,  # noqa: F401  (a fixture)
    run_chains,
)

# (target factory, step size, acceptance bounds): exact starts, 8 chains x 4000 iterations.
INVARIANCE_CASES = {
    "gauss2d_corr_0.8": (lambda: gauss2d_corr(rho=0.8), 1.68, (0.15, 0.45)),
    "gauss2d_corr_0.99": (lambda: gauss2d_corr(rho=0.99), 0.3, (0.2, 0.6)),
    # sqrt(15), the cKAM preset: bulk ESS ~ 1000 per coordinate, all 5 components visited.
    "gmm2d": (gmm2d, math.sqrt(15.0), (0.2, 0.45)),
}


@pytest.mark.parametrize("case", list(INVARIANCE_CASES))
def test_invariance(loop, case):
    make_target, step, (low, high) = INVARIANCE_CASES[case]
    target = make_target()
    samples, accepted = run_chains(lambda: RandomWalk(step), target, 8, 4000, seed=11)
    check_moments(samples, target.mean, target.variance)
    check_acceptance(accepted, low, high)


@pytest.mark.parametrize("power", [0.0, 0.5], ids=["ignores_target", "tempered_half"])
def test_moment_check_fails_for_a_wrong_sampler(power):
    """RW on π^power, judged against π: the check must raise (power 0 = always accept)."""
    target = gauss2d_corr(rho=0.8)
    wrong = Tempered(target, power)
    samples, _ = run_chains(lambda: RandomWalk(1.68), wrong, 8, 4000, seed=11)
    with pytest.raises(AssertionError, match="moment check failed"):
        check_moments(samples, target.mean, target.variance)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "+inf", "-inf"])
def test_nonfinite_proposals_are_counted_rejections(loop, value):
    target = NonFiniteHalfPlane(dim=2, value=value)
    sampler = RandomWalk(1.5)
    state = sampler.init(target, None, np.random.default_rng(5))
    state, block = sampler.advance(state, 2000)
    assert block.n_nonfinite > 100
    assert np.all(block.samples[:, 0] >= 0.0)
    # every non-finite proposal has acceptance probability 0 and was rejected
    assert np.sum(block.accept_prob == 0.0) == block.n_nonfinite
    assert not np.any(block.accepted[block.accept_prob == 0.0])
    assert math.isfinite(state.logp)
    # the chain targets the truncated normal
    samples, _ = run_chains(lambda: RandomWalk(1.5), target, 8, 3000, seed=3)
    check_moments(samples, target.mean, target.variance)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "+inf", "-inf"])
def test_nonfinite_start_is_an_error(value):
    target = NonFiniteHalfPlane(dim=2, value=value)
    with pytest.raises(StartPointError):
        RandomWalk(1.0).init(target, np.array([-1.0, 0.0]), np.random.default_rng(0))


def test_wrong_start_shape_is_an_error():
    with pytest.raises(StartPointError, match="shape"):
        RandomWalk(1.0).init(gmm2d(), np.zeros(3), np.random.default_rng(0))


def test_block_contents(loop):
    target = gmm2d()
    sampler = RandomWalk(2.0)
    state = sampler.init(target, None, np.random.default_rng(1))
    assert target.n_density == 1
    x0 = state.x.copy()
    state, block = sampler.advance(state, 1000)
    assert target.n_density == 1001  # one counted evaluation per iteration
    assert state.t == 1000 and block.n == 1000
    assert block.samples.shape == (1000, 2)
    assert np.all(block.phase == 0) and sampler.phases[0] == "sampling"
    assert np.all(block.step_size == 2.0) and np.all(np.isnan(block.noise))
    assert block.n_nonfinite == 0 and block.n_jitter == 0
    # a state moves exactly when its proposal was accepted
    previous = np.vstack([x0, block.samples[:-1]])
    moved = np.any(block.samples != previous, axis=1)
    np.testing.assert_array_equal(moved, block.accepted)
    assert np.all((block.accept_prob >= 0) & (block.accept_prob <= 1))
    assert np.all(block.accept_prob[~block.accepted] < 1.0)
    np.testing.assert_array_equal(state.x, block.samples[-1])
    assert state.logp == target._log_density(state.x)


def test_same_seed_same_chain_whatever_the_block_sizes(loop):
    """Pre-drawing d + 1 normals per iteration makes block splits invisible."""
    target = gauss2d_corr(rho=0.8)

    def run(sizes):
        sampler = RandomWalk(1.5)
        state = sampler.init(target, None, np.random.default_rng(42))
        blocks = [sampler.advance(state, 0)[1]]
        for n in sizes:
            state, block = sampler.advance(state, n)
            blocks.append(block)
        return state, {f: np.concatenate([getattr(b, f) for b in blocks]) for f in ("samples", "accepted", "accept_prob")}

    state_a, a = run([1000])
    state_b, b = run([1000])
    state_c, c = run([1, 299, 500, 200])
    for other, other_state in ((b, state_b), (c, state_c)):
        for key in a:
            np.testing.assert_array_equal(a[key], other[key])
        np.testing.assert_array_equal(state_a.x, other_state.x)
        assert state_a.logp == other_state.logp and other_state.t == 1000


def test_predraw_log_uniforms_are_uniform():
    rng = np.random.default_rng(0)
    eps, log_u = predraw(rng, 20000, 3)
    u = np.exp(log_u)
    assert eps.shape == (20000, 3)
    assert np.all(np.asarray(log_u) < 0.0)
    # mean and variance of U(0, 1): 1/2 and 1/12, 5 standard errors
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / 20000)
    assert abs(u.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / 20000)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_step_size_is_validated(bad):
    with pytest.raises(ValueError, match="step_size must be"):
        RandomWalk(bad)


def test_yaml_instantiates_and_runs():
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=["sampler=rw", "target=gmm2d"])
    sampler = instantiate(cfg.sampler)
    target = instantiate(cfg.target)
    assert isinstance(sampler, RandomWalk) and sampler.name == "rw"
    assert sampler.step_size == pytest.approx(math.sqrt(15.0))  # cKAM Table 1
    state = sampler.init(target, cfg.start, np.random.default_rng(cfg.seed))
    state, block = sampler.advance(state, 50)
    assert block.n == 50 and state.t == 50
