"""The BlackJAX peers of issue 32 §4: MAMS and unadjusted MCLMC (microcanonical.py), BlackJAX
NUTS with its low-rank and Fisher-diagonal staged adaptations (blackjax_lowrank.py): gradient
accounting against a density that counts its own evaluations (tuners included), the staged
warm-up against BlackJAX's own ``run``, blocks, stationarity (MAMS, low-rank and Fisher NUTS),
MCLMC's bias, resume, the missing extra, declining targets."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from ckam_bench.engine import store
from ckam_bench.engine.runner import Budget, Runner
from ckam_bench.samplers import blackjax_lowrank, microcanonical
from ckam_bench.targets.gaussians import Gaussian, gauss2d_corr
from ckam_bench.targets.mixtures import gmm2d
from tests.samplers.invariance import assert_stationary
from tests.samplers.test_peers import _counted_target  # gauss2d_corr counting its JAX evaluations

jax = pytest.importorskip("jax")  # the optional extra; CI installs it
blackjax = pytest.importorskip("blackjax")

FAST = {"mams": lambda **k: microcanonical.MAMS(**{"num_steps": 1000, **k}),
        "mclmc": lambda **k: microcanonical.MCLMC(**{"num_steps": 1000, **k}),
        "blackjax_nuts_lowrank": lambda **k: blackjax_lowrank.BlackJAXNUTSLowRank(**{"burn_in": 200, **k}),
        "blackjax_nuts_fisher": lambda **k: blackjax_lowrank.BlackJAXNUTSFisher(**{"burn_in": 200, **k})}
GAUSS = gauss2d_corr()  # one instance: the JAX peers compile once per target instance


def _standard_gaussian(dim):
    return Gaussian(np.zeros(dim), np.eye(dim), dim, start=np.zeros(dim), name="std_gaussian")


# ---------------------------------------------------------------------------- accounting
@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n == "blackjax_nuts_fisher" else pytest.mark.slow)
                                  for n in sorted(FAST)])  # one in the default tier: each compiles ~3-7 s
def test_gradient_count_equals_the_evaluations_the_library_made(name):
    """Tuner and warm-up included: the harness's n_grad is exactly the number of evaluations the
    density saw (the harness's start check adds one density evaluation)."""
    target = _counted_target()
    sampler = FAST[name]()
    sampler.warm_up(target)
    target.counter.clear()  # compilation traces the density, it evaluates nothing
    state = sampler.init(target, None, np.random.default_rng(1))
    for n in (100, 123):
        state, block = sampler.advance(state, n)
    assert target.n_grad == target.n_density - 1 == len(target.counter) > 223
    assert state.t == 223 and np.all(np.isfinite(block.logp))
    if name in ("mams", "mclmc"):  # the tuner's gradients are most of them
        assert sampler.describe()["tuning_grad"] > 500


def test_mclmc_tuning_count_is_its_structure():
    """BlackJAX's mclmc tuner: round(f1 N) + round(f2 N) + round(round(f2 N)/3) + round(f3 N)
    kernel steps (its own returned count uses // for the third term: one short for N = 500)."""
    assert microcanonical.mclmc_tuning_steps(1000, 0.1, 0.1, 0.1, True) == 100 + 100 + 33 + 100
    assert microcanonical.mclmc_tuning_steps(500, 0.1, 0.1, 0.1, True) == 50 + 50 + 17 + 50
    assert microcanonical.mclmc_tuning_steps(500, 0.1, 0.1, 0.0, False) == 100


@pytest.mark.parametrize("name", ["blackjax_nuts_lowrank", "blackjax_nuts_fisher"])
def test_staged_warm_up_is_blackjax_run_step_for_step(name):
    """Advanced one iteration at a time, the warm-up ends where BlackJAX's own ``run`` ends:
    the same state (low rank: restarted at μ*), step size and inverse mass matrix."""
    target, burn_in = gauss2d_corr(), 200
    sampler = FAST[name](burn_in=burn_in)
    state = sampler.init(target, None, np.random.default_rng(3))
    state, _ = sampler.advance(state, burn_in)
    carry = jax.tree_util.tree_unflatten(sampler._treedef, [state.library_state[k]
                                                            for k in sorted(state.library_state)])
    key = jax.random.PRNGKey(int(np.random.default_rng(3).integers(2**63)))
    warm_key, density = jax.random.split(key)[1], target.jax_log_density()
    start = np.asarray(target.start, float)
    if name == "blackjax_nuts_lowrank":
        warm = blackjax.window_adaptation_low_rank(blackjax.nuts, density)
    else:
        warm = blackjax.staged_adaptation(blackjax.nuts, density, metric="fisher_diag")
    (ref_state, params), _ = warm.run(warm_key, start, burn_in)
    np.testing.assert_array_equal(np.asarray(carry[0].position), np.asarray(ref_state.position))
    assert float(carry[2]) == float(params["step_size"])
    for mine, theirs in zip(jax.tree_util.tree_leaves(carry[3]),
                            jax.tree_util.tree_leaves(params["inverse_mass_matrix"])):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))


@pytest.mark.slow  # several compilations and runs (~1 min on a shared machine)
def test_blocks_do_not_change_the_chain():
    for name, make in FAST.items():
        out = []
        for sizes in ((700,), (13, 600, 87)):
            GAUSS.reset_counters()
            sampler = make()
            state = sampler.init(GAUSS, np.array([0.3, 0.2]), np.random.default_rng(5))
            for n in sizes:
                state, _ = sampler.advance(state, n)
            out.append((state.x, GAUSS.n_grad))
        np.testing.assert_array_equal(out[0][0], out[1][0])
        assert out[0][1] == out[1][1], name


# ---------------------------------------------------------------------------- validity
def test_describe_marks_unadjusted_mclmc_as_not_exact():
    for name, exact in (("mams", True), ("mclmc", False)):
        info = FAST[name]().describe()
        assert info["adaptation"] == "finite" and info["exact"] is exact
        assert info["library"].startswith("blackjax ")
    assert "unadjusted" in microcanonical.MCLMC().describe()["bias"]


@pytest.mark.slow  # several compilations and runs (~1 min on a shared machine)
def test_mclmc_bias_is_small_at_its_tuned_settings_and_grows_with_the_energy_error():
    """On N(0, I_5), pooled over 8 chains of 4 000 tuned draws: the variance is within 5 % at
    BlackJAX's desired_energy_var = 5e-4; tuned to a 200 times larger energy error, the bias is
    plain (its stationary law is not π: no Metropolis correction)."""
    target = _standard_gaussian(5)

    def pooled_variance(**settings):
        draws = []
        for seed in range(8):
            sampler = microcanonical.MCLMC(num_steps=4000, **settings)
            state = sampler.init(target, target.sample(1, np.random.default_rng(seed))[0],
                                 np.random.default_rng(seed))
            state, block = sampler.advance(state, 4000)
            draws.append(block.samples)
        return np.concatenate(draws).var(axis=0).mean()

    assert abs(pooled_variance() - 1.0) < 0.05
    assert abs(pooled_variance(desired_energy_var=0.1) - 1.0) > 0.1


def test_stationary_from_exact_draws_mams():
    """MAMS's tuner and then its fixed MH kernel keep π from exact draws."""
    assert_stationary(lambda: microcanonical.MAMS(num_steps=600), GAUSS, n_chains=40,
                      times=[50, 400], seed=11)


@pytest.mark.slow  # several compilations and runs (~1 min on a shared machine)
def test_stationary_from_exact_draws_staged_nuts():
    """Low-rank NUTS without the restart (through warm-up and after), with the restart at μ*
    (every chain there after warm-up: stationary again once the fixed kernel mixed), Fisher."""
    make = blackjax_lowrank.BlackJAXNUTSLowRank
    assert_stationary(lambda: make(burn_in=150, restart=False), GAUSS, n_chains=40, times=[150, 450], seed=11)
    assert_stationary(lambda: make(burn_in=150), GAUSS, n_chains=40, times=[450], seed=12)
    assert_stationary(lambda: blackjax_lowrank.BlackJAXNUTSFisher(burn_in=150), GAUSS, n_chains=40,
                      times=[150, 450], seed=13)


@pytest.mark.slow
@pytest.mark.parametrize("target_name", ["gauss2d_corr", "gmm2d"])
@pytest.mark.parametrize("name", ["mams", "blackjax_nuts_lowrank", "blackjax_nuts_fisher"])
def test_stationary_from_exact_draws(name, target_name):
    target = {"gauss2d_corr": gauss2d_corr, "gmm2d": gmm2d}[target_name]()
    make = {"mams": lambda: microcanonical.MAMS(num_steps=3000),
            "blackjax_nuts_lowrank": lambda: blackjax_lowrank.BlackJAXNUTSLowRank(burn_in=300),
            "blackjax_nuts_fisher": lambda: blackjax_lowrank.BlackJAXNUTSFisher(burn_in=300)}[name]
    assert_stationary(make, target, n_chains=60, times=[1300] if name == "blackjax_nuts_lowrank" else [300, 1300],
                      seed=11)


# ---------------------------------------------------------------------------- declining, extra, resume
def test_targets_without_a_jax_density_or_with_one_dimension_are_declined():
    from ckam_bench.targets.flower import Flower

    for make in FAST.values():
        skip, why = make().skip(Flower())
        assert skip and "JAX log density" in why
    for name in ("mams", "mclmc"):
        skip, why = FAST[name]().skip(_standard_gaussian(1))
        assert skip and "2 dimensions" in why


def _run(folder, sampler, budget, checkpoints):
    GAUSS.reset_counters()
    labels = {"run_id": "r", "target": GAUSS.name, "sampler": sampler.name, "kernel": "none", "seed": 0}
    return Runner(sampler, GAUSS, {}, budget, folder, np.random.default_rng(0), labels,
                  checkpoints=checkpoints, progress=False, checkpoint_unit="iterations",
                  status_extra={"config_hash": "test"}).run()


def _interrupt_after(sampler, iterations):
    advance = sampler.advance

    def stop(state, n):
        if state.t >= iterations:
            raise KeyboardInterrupt
        return advance(state, n)

    sampler.advance = stop
    return sampler


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n == "mams" else pytest.mark.slow)
                                  for n in sorted(FAST)])
def test_killed_run_resumes_with_the_uninterrupted_result(name, tmp_path):
    """The tuned parameters, the adaptation state and the PRNG key are the carry: a resumed
    run equals an uninterrupted one row for row and draw for draw (tuning gradients included)."""
    make = FAST[name]
    budget, cks = Budget(600, max_iterations=900), np.array([100.0, 250, 400, 600, 750])
    _run(tmp_path / "full", make(), budget, cks)
    status = _run(tmp_path / "run", _interrupt_after(make(), 450), budget, cks)
    assert status["state"] == "interrupted" and (tmp_path / "run" / store.RESUME).exists()
    status = _run(tmp_path / "run", make(), budget, cks)
    assert status["state"] == "complete" and "restarted" not in status
    cols = ["checkpoint", "iterations", "n_collected", "n_density", "n_grad", "acceptance"]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "full" / store.TRACE)[cols],
                                  pd.read_parquet(tmp_path / "run" / store.TRACE)[cols])
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "full" / store.SAMPLES),
                                  pd.read_parquet(tmp_path / "run" / store.SAMPLES))
