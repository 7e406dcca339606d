"""BlackJAX's GIST peer (ckam_bench.samplers.gist): its gradient count is the evaluations the
library made, it keeps π, and bad settings are refused naming the key."""

import numpy as np
import pytest

pytest.importorskip("blackjax")

from ckam_bench.samplers.gist import BlackJAXGIST  # noqa: E402
from ckam_bench.targets.gaussians import gauss2d_corr  # noqa: E402
from ckam_bench.targets.mixtures import gmm2d  # noqa: E402
from tests.samplers.invariance import assert_stationary  # noqa: E402
from tests.samplers.test_peers import _counted_target  # noqa: E402


def test_gradient_count_equals_the_evaluations_the_library_made():
    """Warm-up (NUTS) and GIST transitions alike: 1 + Σ n_steps counted by the harness equals
    the evaluations the JAX density itself saw (U + U' per GIST transition)."""
    target = _counted_target()
    sampler = BlackJAXGIST(burn_in=100)
    sampler.warm_up(target)
    target.counter.clear()  # compilation traces the density, it evaluates nothing
    state = sampler.init(target, None, np.random.default_rng(1))
    for n in (80, 97):  # the second block crosses from the warm-up into GIST
        state, block = sampler.advance(state, n)
    assert target.n_grad == target.n_density - 1 == len(target.counter) > 177
    assert state.t == 177 and block.samples.shape == (77, 2) and np.all(np.isfinite(block.logp))


def test_moments_on_a_correlated_gaussian():
    """20 000 GIST draws of gauss2d_corr after a 300-iteration warm-up: means within 0.1 and the
    covariance within 10 % of the target's (about five Monte Carlo errors at this ESS)."""
    target = gauss2d_corr()
    sampler = BlackJAXGIST(burn_in=300)
    sampler.warm_up(target)
    state = sampler.init(target, None, np.random.default_rng(3))
    state, _ = sampler.advance(state, 300)  # the warm-up
    draws = []
    for _ in range(10):
        state, block = sampler.advance(state, 2_000)
        draws.append(block.samples)
    x = np.concatenate(draws)
    assert x.shape == (20_000, 2)
    np.testing.assert_allclose(x.mean(axis=0), target.mean, atol=0.1)
    np.testing.assert_allclose(np.cov(x.T), target.cov, rtol=0.1, atol=0.05)


@pytest.mark.slow
@pytest.mark.parametrize("target_name", ["gauss2d_corr", "gmm2d"])
def test_stationary_from_exact_draws(target_name):
    """Chains started at exact draws keep π through the NUTS warm-up and GIST after it."""
    target = {"gauss2d_corr": gauss2d_corr, "gmm2d": gmm2d}[target_name]()
    assert_stationary(lambda: BlackJAXGIST(burn_in=300), target, n_chains=60, times=[300, 1300], seed=11)


@pytest.mark.parametrize(("kwargs", "key"), [({"path_fraction": 1.5}, "path_fraction"),
                                             ({"path_fraction": "half"}, "path_fraction"),
                                             ({"max_steps": 0}, "max_steps"),
                                             ({"max_steps": 2.5}, "max_steps"),
                                             ({"max_steps": 1 << 40}, "max_steps"),
                                             ({"burn_in": -1}, "burn_in")])
def test_bad_settings_name_their_key(kwargs, key):
    with pytest.raises(ValueError, match=key):
        BlackJAXGIST(**kwargs)
