"""WALNUTS through walnutpie (ckam_bench/samplers/walnuts.py): the harness's chain equals
walnutpie's own run draw for draw and evaluation for evaluation, the draws target π, budgets in
gradients are met as for every sampler, the command line runs it, bad settings are one line,
closing stops walnutpie's thread."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from ckam_bench.engine.runner import Budget, Runner
from ckam_bench.targets.gaussians import Gaussian, gauss2d_corr
from ckam_bench.targets.mixtures import gmm2d
from tests import clirun
from tests.samplers.invariance import assert_stationary

walnutpie = pytest.importorskip("walnutpie")  # the optional extra 'peers'

from ckam_bench.samplers import walnuts  # noqa: E402
from ckam_bench.samplers.walnuts import Walnutpie  # noqa: E402


class _Seed:
    """An rng whose ``integers`` gives a fixed seed: the seed walnutpie is started with."""

    def __init__(self, seed):
        self.seed = seed

    def integers(self, high):
        return self.seed


def _direct(target, burn_in, draws, seed, **settings):
    """walnutpie's own run (walnuts_pyfunc) on the target's compiled density, counting the
    evaluations it makes: (warm-up draws, draws, evaluations)."""
    import numba
    from numba import carray, types

    f = target.jit_log_density_and_grad()
    count = np.zeros(1, np.int64)
    f8p = types.CPointer(types.float64)

    @numba.cfunc(types.int32(types.uintp, f8p, f8p, f8p, types.voidptr), nopython=True)
    def logp(n, x_, g_, lp_, user_data):
        c = carray(user_data, (1,), np.int64)
        c[0] += 1
        lp_[0] = f(carray(x_, (n,)), carray(g_, (n,)))
        return 0

    out = walnutpie.walnuts_pyfunc((logp.ctypes, count.ctypes.data), num_params=target.dim,
                                   inits=np.asarray(target.start, float), num_chains=1, seed=seed,
                                   min_warmup_iter=burn_in, max_warmup_iter=burn_in,
                                   min_sampling_iter=draws, max_sampling_iter=draws, save_warmup=True,
                                   **settings)[0]
    return np.asarray(out.warmup.warmup_draws), np.asarray(out), int(count[0])


def _harness(sampler, target, blocks, seed):
    sampler.warm_up(target)
    state = sampler.init(target, np.asarray(target.start, float), _Seed(seed))
    before, got = target.n_grad, []
    for n in blocks:
        state, block = sampler.advance(state, n)
        got.append(block)
    return got, target.n_grad - before


@pytest.mark.parametrize("settings", [{}, {"max_trajectory_doublings": 3, "max_step_halvings": 2,
                                           "step_accept_rate_target": 0.9}])
def test_chain_and_evaluations_equal_walnutpies_own_run(settings):
    """Held at exact draw counts in blocks of any size, the chain is walnutpie's own chain (same
    seed, bit for bit, warm-up draws included) and the evaluations counted are exactly those
    walnutpie's own run makes for that many draws."""
    target = gauss2d_corr()
    burn_in, draws, seed = 150, 700, 12345
    warm, direct, evals = _direct(target, burn_in, draws, seed, **settings)
    ours = {"target_accept": settings.get("step_accept_rate_target", 0.8)}
    ours.update({k: v for k, v in settings.items() if k.startswith("max_")})
    sampler = Walnutpie(burn_in=burn_in, **ours)
    blocks, counted = _harness(sampler, target, [1, 6, 143, 300, 400], seed)
    assert counted == evals
    X = np.concatenate([b.samples for b in blocks])
    np.testing.assert_array_equal(X, direct)
    phase = np.concatenate([b.phase for b in blocks])
    assert phase.sum() == draws and (phase[:burn_in] == 0).all()
    # each draw's log density is the value the density returned there: no extra evaluation
    logp = np.concatenate([b.logp for b in blocks])
    exact = np.array([target._log_density(x) for x in np.vstack([warm, direct])])
    np.testing.assert_allclose(logp, exact, rtol=1e-12, atol=1e-12)
    sampler._chain.close()


def test_python_callback_gives_the_same_chain(monkeypatch):
    """A target without a compiled density (here: CKAM_BENCH_JIT off) runs through a Python
    callback with the same gate: the same chain (up to the last bits in which the numpy and the
    compiled density differ) and the same count."""
    from ckam_bench import jit

    target = gauss2d_corr()
    compiled, n_compiled = _harness(Walnutpie(burn_in=100), target, [50, 150, 100], 7)
    monkeypatch.setattr(jit, "enabled", lambda: False)
    sampler = Walnutpie(burn_in=100)
    python, n_python = _harness(sampler, target, [50, 150, 100], 7)
    assert sampler.describe()["density"] == walnuts.PYTHON_DENSITY
    assert n_python == n_compiled
    for a, b in zip(compiled, python):
        np.testing.assert_allclose(a.samples, b.samples, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(a.logp, b.logp, rtol=1e-9, atol=1e-9)
    sampler._chain.close()


def _batch_z(X, mean, batches=40):
    """|x̄ − μ| / batch-means MCSE per column."""
    m = X.shape[0] // batches
    means = X[:m * batches].reshape(batches, m, -1).mean(axis=1)
    mcse = means.std(axis=0, ddof=1) / np.sqrt(batches)
    return np.abs(X[:m * batches].mean(axis=0) - mean) / mcse


def test_draws_have_the_moments_of_a_correlated_10d_gaussian():
    """Means and variances on a 10-D Gaussian with correlations up to 0.9 and scales 0.1-10
    lie within 4.5 batch-means MCSEs of the truth (Bonferroni over 20 statistics: a false
    alarm probability below 1e-4)."""
    rng = np.random.default_rng(3)
    d = 10
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    corr = q @ np.diag(np.linspace(0.1, 1.9, d)) @ q.T
    corr = corr / np.sqrt(np.outer(np.diag(corr), np.diag(corr)))
    scale = np.geomspace(0.1, 10.0, d)
    cov = corr * np.outer(scale, scale)
    mean = np.linspace(-2.0, 2.0, d)
    target = Gaussian(mean, cov, d, start=mean + scale, name="gauss10_corr")
    blocks, _ = _harness(Walnutpie(burn_in=500), target, [500, 20_000], 11)
    X = blocks[1].samples
    assert X.shape == (20_000, d)
    assert _batch_z(X, mean).max() < 4.5
    sq = (X - mean) ** 2
    assert _batch_z(sq, np.diag(cov)).max() < 4.5


def test_budget_in_gradients_is_met_like_every_samplers(tmp_path):
    """Under budget.max_grad the run stops at the end of the block that reaches it, as for every
    peer (tests/samplers/test_peers.py): walnutpie runs whole blocks of draws, the runner sizes the
    last one by the latest block's gradients per draw, so it may pass the cap by a few draws (how
    many depends on how the run was split into blocks, by time: measured 17-855 gradients past
    20 000 in three runs); every evaluation is counted once (the start check adds one density
    evaluation)."""
    target = gauss2d_corr()
    labels = {"run_id": "r", "target": target.name, "sampler": "walnutpie", "kernel": "none", "seed": 0}
    runner = Runner(Walnutpie(burn_in=200), target, {}, Budget(600, max_grad=20_000), tmp_path / "run",
                    np.random.default_rng(0), labels, progress=False, checkpoint_unit="grad",
                    status_extra={"config_hash": "test"})
    status = runner.run()
    totals = status["totals"]
    assert status["reason"] == "max_grad"
    assert 20_000 <= totals["n_grad"] < 22_000
    assert totals["n_density"] == totals["n_grad"] + 1
    assert totals["n_collected"] == totals["iterations"] - 200


def test_command_line_run(tmp_path):
    run = tmp_path / "run"
    proc = clirun.run(["ckam-bench", "sampler=walnutpie", "target=gauss2d_corr", "budget.max_grad=20000",
                       "sampler.burn_in=300", f"hydra.run.dir={run}"], capture_output=True, text=True,
                      cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "complete" and status["reason"] == "max_grad"
    assert status["sampler_info"]["library"] == "walnutpie 0.0.3"
    assert status["totals"]["n_grad"] >= 20_000 and status["totals"]["n_collected"] > 0
    assert (run / "trace.parquet").exists() and (run / "samples.parquet").exists()


@pytest.mark.parametrize("key, value", [("burn_in", -1), ("target_accept", 1.5),
                                        ("max_trajectory_doublings", 0), ("max_trajectory_doublings", 2.5),
                                        ("max_step_halvings", -1), ("max_step_halvings", 99),
                                        ("max_draws", 0)])
def test_bad_settings_name_their_key(key, value):
    with pytest.raises(ValueError, match=key):
        Walnutpie(**{key: value})


def test_bad_setting_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    run = tmp_path / "run"
    proc = clirun.run(["ckam-bench", "sampler=walnutpie", "target=gauss2d_corr", "sampler.max_step_halvings=-1",
                       f"hydra.run.dir={run}"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "max_step_halvings" in lines[0], proc.stderr


def test_missing_extra_is_one_line_and_exit_2(tmp_path):
    run = tmp_path / "run"
    script = ("import sys; sys.modules['walnutpie'] = None; "
              f"sys.argv = ['ckam-bench', 'sampler=walnutpie', 'target=gauss2d_corr', 'hydra.run.dir={run}']; "
              "from ckam_bench.commands.cli import main; main()")
    proc = clirun.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                      env={**os.environ, "PYTHONPATH": os.getcwd()}, timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and 'pip install "ckam-bench[peers]"' in lines[0], proc.stderr


def test_closing_stops_walnutpies_thread_and_a_new_chain_closes_the_old():
    """walnutpie is stopped through its interrupt flag (a chain started for 10^6 draws ends at
    once), and the flag is reset for the next chain."""
    target = gauss2d_corr()
    first = Walnutpie(burn_in=100)
    _harness(first, target, [200], 1)
    second = Walnutpie(burn_in=100)
    _harness(second, target, [200], 2)  # starting it closed the first
    assert first._chain.closed and not first._chain.thread.is_alive()
    second._chain.close()
    assert not second._chain.thread.is_alive() and not walnuts.interrupt_flag().value


def test_draws_beyond_max_draws_fail_saying_so():
    target = gauss2d_corr()
    sampler = Walnutpie(burn_in=10, max_draws=50)
    with pytest.raises(RuntimeError, match="max_draws"):
        _harness(sampler, target, [40, 30], 1)
    sampler._chain.close()


@pytest.mark.slow
@pytest.mark.parametrize("target_name", ["gauss2d_corr", "gmm2d"])
def test_stationary_from_exact_draws(target_name):
    """Chains started at exact draws keep π through warm-up and after (finite adaptation)."""
    target = {"gauss2d_corr": gauss2d_corr, "gmm2d": gmm2d}[target_name]()
    assert_stationary(lambda: Walnutpie(burn_in=300), target, n_chains=60, times=[300, 1300], seed=11)


@pytest.mark.slow  # sends SIGINT to the test process
def test_ctrl_c_during_a_run_stops_it_cleanly(tmp_path):
    """While walnutpie samples, its own SIGINT handler replaces the process's: a Ctrl-C ends
    walnutpie's chain, the harness forwards it to the runner's handler, and the run ends
    ``interrupted`` with the draws done, as any sampler's run does."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    target = gauss2d_corr()
    sampler = Walnutpie(burn_in=200)
    advance, calls = sampler.advance, []

    def advance_then_interrupt(state, n):
        calls.append(n)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return advance(state, n)

    sampler.advance = advance_then_interrupt
    labels = {"run_id": "r", "target": target.name, "sampler": "walnutpie", "kernel": "none", "seed": 0}
    status = Runner(sampler, target, {}, Budget(60), tmp_path / "run", np.random.default_rng(0), labels,
                    progress=False, status_extra={"config_hash": "test"}).run()
    assert status["state"] == "interrupted" and len(calls) <= 4
    assert not sampler._chain.thread.is_alive() and not walnuts.interrupt_flag().value
    assert signal.getsignal(signal.SIGINT) == before  # the process's own (SIG_IGN in a pytest-xdist worker)


@pytest.mark.slow  # 300 000 draws, 6.7 million evaluations, twice
def test_long_chain_with_rows_given_back_equals_walnutpies_own_run():
    """Over 300 000 draws the rows already handed over are returned to the kernel (madvise);
    the rows still to come are untouched: the chain and the count stay walnutpie's own."""
    target = gauss2d_corr()
    _, direct, evals = _direct(target, 150, 300_000, 12345)
    sampler = Walnutpie(burn_in=150)
    blocks, counted = _harness(sampler, target, [7, 143, 70_000, 80_000, 150_000], 12345)
    assert sampler._chain.released > 1 << 20
    assert counted == evals
    np.testing.assert_array_equal(np.concatenate([b.samples for b in blocks]), direct)
    sampler._chain.close()


@pytest.mark.slow  # three runs of 900 iterations
def test_killed_run_restarts_with_the_uninterrupted_result(tmp_path):
    """walnutpie's chain cannot be saved: a killed run restarts from its first iteration (its
    status says so) and, with the same seed, ends with the rows and draws of an uninterrupted
    run."""
    import pandas as pd

    from ckam_bench.engine import store

    def run(folder, sampler):
        target = gauss2d_corr()
        labels = {"run_id": "r", "target": target.name, "sampler": "walnutpie", "kernel": "none", "seed": 0}
        return Runner(sampler, target, {}, Budget(600, max_iterations=900), folder, np.random.default_rng(0),
                      labels, checkpoints=np.array([100.0, 250, 400, 600, 750]), progress=False,
                      checkpoint_unit="iterations", status_extra={"config_hash": "test"}).run()

    run(tmp_path / "full", Walnutpie(burn_in=200))
    killed = Walnutpie(burn_in=200)
    advance = killed.advance

    def stop(state, n):
        if state.t >= 450:
            raise KeyboardInterrupt
        return advance(state, n)

    killed.advance = stop
    assert run(tmp_path / "run", killed)["state"] == "interrupted"
    status = run(tmp_path / "run", Walnutpie(burn_in=200))
    assert status["state"] == "complete" and "restarted" in status
    cols = ["checkpoint", "iterations", "n_collected", "n_density", "n_grad", "acceptance"]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "full" / store.TRACE)[cols],
                                  pd.read_parquet(tmp_path / "run" / store.TRACE)[cols])
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "full" / store.SAMPLES),
                                  pd.read_parquet(tmp_path / "run" / store.SAMPLES))


class _Truncated(Gaussian):
    """N(0, 1) restricted to |x| < 1.2: log density -inf outside. walnutpie's first step-size
    search takes steps well past the edge."""

    def __init__(self):
        super().__init__(np.zeros(1), np.eye(1), 1)

    def _log_density(self, x):
        return super()._log_density(x) if abs(x[0]) < 1.2 else -np.inf

    def jit_log_density_and_grad(self):
        if "_compiled" not in type(self).__dict__:  # one compile (and one walnutpie cfunc) per class
            type(self)._compiled = self._build()
        return type(self)._compiled

    @staticmethod
    def _build():
        import numba

        @numba.njit
        def f(x, grad):
            grad[0] = -x[0]
            return -0.5 * x[0] * x[0] if abs(x[0]) < 1.2 else -np.inf
        return f


class _Overflowing(_Truncated):
    """The same, but outside the value and the gradient are NaN (what an overflowing model gives,
    e.g. gp_pois_regr far from its mode)."""

    def _log_density(self, x):
        return super()._log_density(x) if abs(x[0]) < 1.2 else np.nan

    def _grad_log_density(self, x):
        return super()._grad_log_density(x) if abs(x[0]) < 1.2 else np.full(1, np.nan)

    @staticmethod
    def _build():
        import numba

        @numba.njit
        def f(x, grad):
            if abs(x[0]) < 1.2:
                grad[0] = -x[0]
                return -0.5 * x[0] * x[0]
            grad[0] = np.nan
            return np.nan
        return f


@pytest.mark.parametrize("target_class", [_Truncated, _Overflowing])
@pytest.mark.parametrize("compiled", [True, False])
def test_a_density_of_minus_infinity_is_a_rejection_even_in_the_first_step_size_search(compiled, target_class,
                                                                                      monkeypatch):
    """walnutpie 0.0.3 ends its chain on an error code in its first step-size search; the
    harness hands it -inf instead (code 0), which it rejects everywhere, and a zero gradient (a
    NaN gradient ends the chain in the same search: gp_pois_regr's walnutpie runs failed so). On
    the truncated normal every seed runs, the rejected evaluations are counted, and the draws
    stay inside."""
    if not compiled:
        from ckam_bench import jit

        monkeypatch.setattr(jit, "enabled", lambda: False)
    rejected = 0
    for seed in range(6):
        target = target_class()
        sampler = Walnutpie(burn_in=100)
        blocks, _ = _harness(sampler, target, [200], seed)
        assert sampler.describe()["density"] == (walnuts.HARNESS_COMPILED if compiled else walnuts.PYTHON_DENSITY)
        draws = blocks[0].samples
        assert draws.shape == (100, 1) and np.all(np.abs(draws) < 1.2)
        rejected += blocks[0].n_nonfinite
    assert rejected > 0
