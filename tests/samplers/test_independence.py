"""Independence Metropolis–Hastings with a t proposal learned in a finite warm-up."""

import numpy as np
import pytest

from ckam_bench.samplers.independence import IndependenceMetropolis
from ckam_bench.targets.banana import Banana
from ckam_bench.targets.gaussians import gauss2d_corr
from tests.samplers.invariance import assert_stationary, check_acceptance, check_moments, run_chains


def make(**kw):
    return lambda: IndependenceMetropolis(**{"warmup": 400, "refit_every": 100, **kw})


def test_gaussian_moments_and_acceptance():
    t = gauss2d_corr()
    samples, accepted = run_chains(make(), t, 6, 3400, seed=1)
    assert samples.shape == (6, 3000, 2)  # the warm-up is not collected
    check_moments(samples, t.mean, t.variance)
    check_acceptance(accepted, 0.5, 1.0)  # a t fitted to a Gaussian: nearly independent draws


class NoHastings(IndependenceMetropolis):
    """The ratio without q(x)/q(y): targets π·q, not π."""

    def _log_q(self, delta):
        return 0.0


def test_hastings_ratio_on_a_skewed_target():
    """On a banana (far from the t proposal) the chain keeps the exact moments; without the
    Hastings factor q(x)/q(y) it does not (so the test sees the ratio)."""
    t = Banana(dim=2, b=0.03, v=25.0)
    samples, _ = run_chains(make(scale=1.5), t, 6, 6400, seed=2)
    check_moments(samples, t.mean, t.variance)
    wrong, _ = run_chains(lambda: NoHastings(warmup=400, refit_every=100, scale=1.5), t, 6, 6400, seed=2)
    with pytest.raises(AssertionError):
        check_moments(wrong, t.mean, t.variance)


def test_stationary_after_the_warm_up():
    assert_stationary(make(), gauss2d_corr(), n_chains=60, times=[500, 2000], seed=3)


def test_chain_does_not_depend_on_block_sizes():
    t = gauss2d_corr()
    runs = []
    for blocks in ([700], [130, 270, 300]):
        s = IndependenceMetropolis(warmup=400, refit_every=100)
        state = s.init(t, np.zeros(2), np.random.default_rng(4))
        out = []
        for b in blocks:
            state, blk = s.advance(state, b)
            out.append(blk.samples)
        runs.append(np.concatenate(out))
    np.testing.assert_array_equal(runs[0], runs[1])


def test_counts_one_density_per_iteration_and_keeps_the_estimate():
    t = gauss2d_corr()
    s = IndependenceMetropolis(warmup=50, refit_every=10)
    state = s.init(t, np.zeros(2), np.random.default_rng(0))
    state, blk = s.advance(state, 200)
    assert t.n_density == 201 and blk.samples.shape == (150, 2)
    assert state.logp == t._log_density(state.x)
    assert set(np.unique(blk.phase)) == {0, 1}


@pytest.mark.parametrize("key, value", [("warmup", 5), ("refit_every", 0), ("df", 0), ("df", 2.5),
                                        ("scale", 0.0), ("init_scale", -1.0), ("ridge", float("nan"))])
def test_bad_settings_name_the_key(key, value):
    with pytest.raises(ValueError, match=f"^{key}"):
        IndependenceMetropolis(**{key: value})


def test_the_shipped_imh_config_is_this_sampler_and_stationary():
    """``sampler=imh`` (conf/sampler/imh.yaml, warm-up shortened) builds this class and keeps π."""
    from hydra import compose, initialize_config_module
    from hydra.utils import instantiate

    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=["sampler=imh", "target=gauss2d_corr",
                                           "sampler.warmup=200", "sampler.refit_every=50"])
    assert type(instantiate(cfg.sampler)).__name__ == "IndependenceMetropolis"
    assert instantiate(cfg.sampler).describe()["adaptation"] == "finite"
    assert_stationary(lambda: instantiate(cfg.sampler), gauss2d_corr(), n_chains=60,
                      times=[500, 2000], seed=4)


def test_block_proposals_are_the_row_by_row_ones():
    """The sampling phase computes a block's proposals at once; the chain is bit for bit the
    one of proposing row by row (``_propose``, the warm-up's arithmetic) and accepting in turn."""
    from scipy.special import log_ndtr

    from ckam_bench.targets.gaussians import Gaussian

    d = 7
    cov = 0.5 ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
    t = Gaussian(np.linspace(-1, 1, d), cov, d)
    s = IndependenceMetropolis(warmup=300, refit_every=50)
    state = s.init(t, None, np.random.default_rng(5))
    state, _ = s.advance(state, 300)
    start, rng = state, s.rng
    saved = rng.bit_generator.state
    state, block = s.advance(start, 500)
    rng.bit_generator.state = saved
    z = rng.standard_normal((500, d + s.df + 1))
    x, logp, log_q, samples, accepted = start.x, start.logp, start.log_q, [], []
    for i in range(500):
        y, log_q_y = s._propose(start, z[i])
        logp_y = float(t._log_density(y))
        accept = log_ndtr(z[i, -1]) < logp_y - logp + (log_q - log_q_y)
        if accept:
            x, logp, log_q = y, logp_y, log_q_y
        samples.append(x)
        accepted.append(accept)
    np.testing.assert_array_equal(block.samples, np.array(samples))
    np.testing.assert_array_equal(block.accepted, accepted)
    np.testing.assert_array_equal(state.x, x)
    assert (state.logp, state.log_q, state.t) == (logp, log_q, 800)
    assert 20 < block.accepted.sum() < 480  # both decisions occur
