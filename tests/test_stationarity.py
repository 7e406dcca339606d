"""The stationarity check (ckam_bench/checks/stationarity.py) and its command ckam-bench-check."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
from scipy import stats

from ckam_bench.samplers.adaptive import AdaptiveMetropolis
from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start
from ckam_bench.samplers.random_walk import RandomWalk
from ckam_bench.schedules import PowerDecay
from ckam_bench.checks.stationarity import check_stationarity, holm, mode_labels, run_from_stationarity
from ckam_bench.targets.gaussians import gauss2d_corr
from ckam_bench.targets.mixtures import bimodal, gmm2d, gmm32
from tests.samplers.invariance import Tempered, assert_not_stationary, assert_stationary
from tests import clirun


class ExactDraws(Sampler):
    """A perfect sampler: every iteration replaces the state by a fresh exact draw."""

    name = "exact"

    def init(self, target, x0, rng):
        self.target, self.rng = target, rng
        x, logp = check_start(target, x0)
        return ChainState(x=x, logp=logp)

    def advance(self, state, n):
        x = self.target.sample(n, self.rng)
        block = Block(samples=x, accepted=np.ones(n, bool), accept_prob=np.ones(n),
                      phase=np.zeros(n, np.int8), step_size=np.full(n, np.nan), noise=np.full(n, np.nan))
        return ChainState(x=x[-1].copy(), logp=float(self.target._log_density(x[-1])), t=state.t + n), block


def test_holm_matches_hand_computation():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 → max(0.06, 0.04) = 0.06
    np.testing.assert_allclose(holm(p), [0.03, 0.06, 0.06, 0.02])


def test_mode_labels_joint_and_product():
    rng = np.random.default_rng(0)
    t = bimodal()
    labels = mode_labels(t, np.array([[-8.0, 0.0], [8.0, 0.0]]))
    assert labels.tolist() == [0, 1]
    x = gmm32().sample(50, rng)
    assert mode_labels(gmm32(), x).shape == (50, 32)
    assert mode_labels(gauss2d_corr(), x[:, :2]) is None


def test_chains_start_from_exact_draws_and_are_reproducible():
    t = gauss2d_corr()
    a = run_from_stationarity(lambda: RandomWalk(0.5), t, 12, [10, 20], seed=3)
    b = run_from_stationarity(lambda: RandomWalk(0.5), t, 12, [10, 20], seed=3)
    assert a.shape == (2, 12, 2)
    np.testing.assert_array_equal(a, b)


def test_exact_sampler_passes_and_tests_are_complete():
    result = check_stationarity(ExactDraws, gmm2d(), n_chains=100, times=[1, 2, 3], seed=1)
    assert result.passed
    per_time = result.tests.groupby("time").size()
    assert (per_time == 2 * 3 + 1).all()  # ks, mean, second per coordinate + occupancy
    assert set(result.summary()) >= {"verdict", "min_p_holm", "worst_test", "occupancy_last"}


def test_rw_passes_on_bimodal_and_gmm2d():
    assert_stationary(lambda: RandomWalk(3.872983346207417), bimodal(), n_chains=100,
                      times=[1000, 10_000])
    assert_stationary(lambda: RandomWalk(3.872983346207417), gmm2d(), n_chains=100,
                      times=[1000, 10_000])


def test_wrong_target_fails_clearly():
    """RW on π^(1/2) started from exact draws of π: the variance grows, the check rejects."""
    t = gauss2d_corr()
    assert_not_stationary(lambda: RandomWalk(0.3), Tempered(t, 0.5), n_chains=200,
                          times=[2000, 5000], margin=100)


@pytest.mark.parametrize("kwargs, key", [
    ({"n_chains": 5}, "n_chains"), ({"times": [10, 5]}, "times"), ({"times": [0]}, "times"),
    ({"alpha": 1.5}, "alpha"), ({"n_reference": 10}, "n_reference"),
])
def test_bad_arguments_name_their_key(kwargs, key):
    args = {"n_chains": 20, "times": [10], **kwargs}
    with pytest.raises(ValueError, match=f"^{key}"):
        check_stationarity(ExactDraws, gmm2d(), **args)


def _cli(tmp_path, *overrides):
    env = {**os.environ, "CKAM_BENCH_JIT": "0", "PYTHONPATH": os.getcwd()}
    return clirun.run([sys.executable, "-c", "from ckam_bench.checks.stationarity import main; main()",
                           *overrides], capture_output=True, text=True, cwd=tmp_path, env=env)


def test_command_writes_verdict_and_figure_and_never_overwrites(tmp_path):
    out = tmp_path / "check"
    args = ("sampler=rw", "target=gauss2d_corr", "check.n_chains=20", "check.times=[50,100]",
            "check.n_reference=500", f"hydra.run.dir={out}")
    done = _cli(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert "rw on gauss2d_corr: pass" in done.stdout
    for name in ("check.json", "tests.csv", "verdict.csv", "verdict.md", "stationarity.png"):
        assert (out / name).exists()
    info = json.loads((out / "check.json").read_text())
    assert info["verdict"] == "pass" and info["n_chains"] == 20
    assert info["kernel"] == "none"  # rw has no kernel (the default kernel choice is not its)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    again = _cli(tmp_path, *args)  # the same check again: done already, nothing rewritten
    assert again.returncode == 0 and "already checked for this config (pass)" in again.stderr
    other = _cli(tmp_path, *args, "seed=1")  # another check into this folder: refused
    assert other.returncode == 2 and "another ckam-bench-check job" in other.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_command_bad_value_exits_2(tmp_path):
    done = _cli(tmp_path, "sampler=rw", "target=gauss2d_corr", "check.n_chains=2",
                f"hydra.run.dir={tmp_path / 'bad'}")
    assert done.returncode == 2
    assert "check.n_chains" in done.stderr
    assert not (tmp_path / "bad").exists()  # nothing left behind


def test_kl_floor_is_the_kl_of_exact_draws():
    """The multinomial shortcut gives the same distribution as binning real exact draws."""
    from ckam_bench.metrics.kl import SymmetricKL, kl_floor

    t = bimodal()
    floor = kl_floor(t, [10_000], repeats=30, seed=1)
    rng = np.random.default_rng(2)
    direct = []
    for _ in range(30):
        metric = SymmetricKL(t)
        metric.update(t.sample(10_000, rng))
        direct.append(metric.value())
    assert floor["median"].iloc[0] == pytest.approx(np.median(direct), rel=0.05)
    assert floor["median"].iloc[0] == pytest.approx(0.13, abs=0.01)  # issue 9's level
    many = kl_floor(gmm32(), [100, 10_000], repeats=3)
    assert many["median"].iloc[1] < many["median"].iloc[0]
    with pytest.raises(ValueError, match="^n_values"):
        kl_floor(t, [0])


# ---------------------------------------------------------------------------- slow
@pytest.mark.slow
def test_false_alarm_rate_near_nominal():
    """A perfect sampler over 300 seeds: the verdict's false-alarm rate is at most its level
    (Holm is conservative), and the unadjusted per-test p-values are uniform."""
    t = gmm2d()
    alarms, p_values = 0, []
    for seed in range(300):
        r = check_stationarity(ExactDraws, t, n_chains=50, times=[1, 2], seed=seed, alpha=0.05,
                               n_reference=2000)
        alarms += not r.passed
        p_values.extend(r.tests.loc[r.tests["test"].str.startswith("mean"), "p_value"])
    rate = alarms / 300
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300), rate
    per_test = np.mean(np.asarray(p_values) < 0.05)
    assert abs(per_test - 0.05) < 3 * np.sqrt(0.05 * 0.95 / len(p_values)) + 0.005, per_test
    assert stats.kstest(p_values, "uniform").pvalue > 1e-3


@pytest.mark.slow
def test_am_with_constant_rate_fails_on_gauss2d_corr():
    """cKAM Table 1's constant AM rate (η = 0.1) shrinks the chain's variance: a clear failure."""
    t = gauss2d_corr()
    result = assert_not_stationary(
        lambda: AdaptiveMetropolis(2.38 / np.sqrt(2), PowerDecay(0.1, 0.0)), t,
        n_chains=3000, times=[500, 2000], margin=100)
    second = result.tests[result.tests["test"].str.startswith("second")]
    assert (second["statistic"] < 0).all()  # too narrow, never too wide


def _default_samplers():
    from pathlib import Path

    return sorted(p.stem for p in (Path(__file__).parents[1] / "conf" / "sampler").glob("*.yaml"))


@pytest.mark.long  # 23 samplers x 2 targets; each sampler's own module has faster invariance tests
@pytest.mark.parametrize("target", ["gauss2d_corr", "gmm2d"])
@pytest.mark.parametrize("sampler", _default_samplers())
def test_every_default_sampler_passes(sampler, target):
    """Every conf/sampler/*.yaml, as configured out of the box, keeps π (a sampler added later
    is picked up here automatically)."""
    from hydra import compose, initialize_config_module
    from hydra.utils import instantiate

    with initialize_config_module(config_module="ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=[f"sampler={sampler}", f"target={target}"])
    t = instantiate(cfg.target)
    probe = instantiate(cfg.sampler)
    skip, why = probe.skip(t)
    if skip:
        pytest.skip(why)
    info = probe.describe()
    cycle, start = info.get("cycle_length"), int(info.get("adapt_until") or 0)
    # a finite adaptation need not keep π while it adapts: its frozen kernel must (after it)
    times = [cycle, 3 * cycle, 6 * cycle] if cycle else [start + 1000, start + 5000]
    assert_stationary(lambda: instantiate(cfg.sampler), t, n_chains=60, times=times, seed=11)


class Drifting(ExactDraws):
    """Not π-invariant: every iteration moves the state 3 units along x₀."""

    name = "drifting"

    def advance(self, state, n):
        x = state.x + 3.0 * np.arange(1, n + 1)[:, None] * np.eye(state.x.size)[0]
        block = Block(samples=x, accepted=np.ones(n, bool), accept_prob=np.ones(n),
                      phase=np.zeros(n, np.int8), step_size=np.full(n, np.nan), noise=np.full(n, np.nan))
        return ChainState(x=x[-1].copy(), logp=float(self.target._log_density(x[-1])), t=state.t + n), block


def test_command_exits_1_on_a_fail_verdict_also_when_skipped(tmp_path):
    """A check is a gate (issue 43 §6.4): FAIL exits 1 (ckam-bench-sbc's convention; 2 stays
    for bad input), and so does the same check run again (skipped: its stored verdict)."""
    conf = tmp_path / "conf" / "sampler"
    conf.mkdir(parents=True)
    (conf / "drifting.yaml").write_text("_target_: tests.test_stationarity.Drifting\n")
    out = tmp_path / "check"
    args = (f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "sampler=drifting",
            "target=gauss2d_corr", "check.n_chains=20", "check.times=[5]",
            "check.n_reference=200", f"hydra.run.dir={out}")
    code, printed, said = _check_command(*args)
    assert code == 1, said
    assert "drifting on gauss2d_corr: FAIL" in printed
    assert json.loads((out / "check.json").read_text())["verdict"] == "FAIL"
    code, _, said = _check_command(*args)
    assert code == 1 and "already checked for this config (FAIL)" in said


def _check_command(*overrides):
    """``ckam-bench-check OVERRIDES`` as a user runs it, in a process of its own (from the
    repository root, so ``tests.test_stationarity.Drifting`` imports): (exit code, stdout,
    stderr). Run in a test worker's own process after other tests, the check left pytest's
    capture closed, failing every later test of that worker."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = clirun.run([sys.executable, "-c", "from ckam_bench.checks.stationarity import main; main()",
                           *overrides], capture_output=True, text=True, cwd=root)
    return done.returncode, done.stdout, done.stderr
