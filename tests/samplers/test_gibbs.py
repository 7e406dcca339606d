"""The exact Gibbs sampler of horseshoe regression (``horseshoe_gibbs``).

The horseshoe posterior has no exact draws, so its invariance is tested on the *joint* of
parameters and data (Geweke 2004, "Getting it right"): (θ, y) drawn from the prior and the
likelihood is an exact draw of the joint; alternating a Gibbs sweep on θ | y with a fresh
y | θ leaves that joint invariant, so after any number of steps θ must still follow the prior,
whose marginals are known (log λ, log τ, log σ of a half-Cauchy: P(log s ≤ l) = (2/π)·arctan eˡ)
or drawn exactly (β). A wrong conditional (here the σ² shape with a wrong n) fails the same test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ckam_bench.samplers.gibbs import HorseshoeGibbs, auxiliaries_given, draw_randoms, sweeps
from ckam_bench.targets.gaussians import gauss2d_corr
from ckam_bench.targets.horseshoe import Horseshoe
from tests.samplers.invariance import loop  # noqa: F401  (fixture)
from tests import clirun


def _prior_draws(rng, k, p):
    """k exact prior draws of θ = (β, log λ, log τ, log σ): half-Cauchy scales, β ~ N(0, λ²τ²)."""
    scales = np.abs(stats.cauchy.rvs(size=(k, p + 2), random_state=rng))
    lam, tau, sigma = scales[:, :p], scales[:, p], scales[:, p + 1]
    beta = rng.standard_normal((k, p)) * lam * tau[:, None]
    return np.column_stack([beta, np.log(lam), np.log(tau), np.log(sigma)])


def _geweke(n_obs_shift=0.0, k=3000, steps=8, seed=0):
    """θ after ``steps`` successive-conditional steps from exact joint draws (n = 6, p = 3);
    ``n_obs_shift`` corrupts the σ² conditional (shape (n + shift + 1)/2)."""
    rng = np.random.default_rng(seed)
    n, p = 6, 3
    X = rng.standard_normal((n, p))
    xtx = np.ascontiguousarray(X.T @ X)
    theta = _prior_draws(rng, k, p)
    run = sweeps()
    out = np.empty((1, 2 * p + 2))
    for c in range(k):
        x = theta[c].copy()
        nu, aux = auxiliaries_given(x, p, rng)
        for _ in range(steps):
            y = X @ x[:p] + math.exp(x[2 * p + 1]) * rng.standard_normal(n)
            normals, expo, g_tau, g_sigma = draw_randoms(rng, 1, p, n + n_obs_shift)
            run(x, nu, aux, xtx, X.T @ y, float(y @ y), float(n + n_obs_shift), normals, expo, g_tau, g_sigma, out)
        theta[c] = x
    return theta, _prior_draws(rng, 200_000, p), p


def _geweke_pvalues(theta, prior, p):
    """KS p-values of every coordinate: two-sample for β, exact half-Cauchy CDF for the log scales."""
    log_scale_cdf = lambda v: (2.0 / np.pi) * np.arctan(np.exp(v))  # noqa: E731
    pvals = [stats.ks_2samp(theta[:, j], prior[:, j]).pvalue for j in range(p)]
    pvals += [stats.kstest(theta[:, j], log_scale_cdf).pvalue for j in range(p, 2 * p + 2)]
    return np.array(pvals)


def test_gibbs_sweep_keeps_the_joint_of_parameters_and_data():
    theta, prior, p = _geweke()
    pvals = _geweke_pvalues(theta, prior, p)
    assert pvals.min() * pvals.size > 0.01, pvals  # Bonferroni over the 2p + 2 coordinates


def test_geweke_check_catches_a_wrong_conditional():
    theta, prior, p = _geweke(n_obs_shift=4.0)
    pvals = _geweke_pvalues(theta, prior, p)
    assert pvals.min() * pvals.size < 1e-3, pvals


def test_blocks_do_not_change_the_chain_and_loops_agree(loop):  # noqa: F811
    target = Horseshoe()
    sampler = HorseshoeGibbs()
    sampler.warm_up(target)
    s1 = sampler.init(target, None, np.random.default_rng(3))
    s1, whole = sampler.advance(s1, 60)
    s2 = sampler.init(target, None, np.random.default_rng(3))
    parts = []
    for n in (1, 19, 40):
        s2, blk = sampler.advance(s2, n)
        parts.append(blk.samples)
    np.testing.assert_array_equal(whole.samples, np.concatenate(parts))
    assert whole.accepted.all() and np.all(whole.accept_prob == 1.0)
    assert s1.logp == pytest.approx(target._log_density(s1.x))
    # a sweep evaluates no density; the state's log π is evaluated once at the start and once per block
    assert target.n_density == (1 + 1) + (1 + 3)


def test_gibbs_chain_is_the_same_compiled_and_in_python(monkeypatch):
    target = Horseshoe()
    chains = []
    for flag in ("1", "0"):
        monkeypatch.setenv("CKAM_BENCH_JIT", flag)
        sampler = HorseshoeGibbs()
        state = sampler.init(target, None, np.random.default_rng(5))
        chains.append(sampler.advance(state, 30)[1].samples)
    np.testing.assert_allclose(chains[0], chains[1], rtol=1e-9, atol=1e-12)


def test_gibbs_declines_targets_without_regression_statistics():
    skipped, why = HorseshoeGibbs().skip(gauss2d_corr())
    assert skipped and "regression_statistics" in why
    with pytest.raises(ValueError, match="horseshoe regression posteriors only"):
        HorseshoeGibbs().init(gauss2d_corr(), None, np.random.default_rng(0))


def _cli(*args):
    import sys

    return clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", *args], capture_output=True, text=True)


def test_gibbs_declines_other_targets_from_the_cli(tmp_path):
    out = _cli("sampler=horseshoe_gibbs", "target=gmm2d", f"hydra.run.dir={tmp_path / 'run'}")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "horseshoe_gibbs" in lines[0] and "gmm2d" in lines[0]
    assert not (tmp_path / "run").exists()


def test_gibbs_run_on_horseshoe_is_scored_against_the_shipped_reference(tmp_path):
    import pandas as pd

    out = _cli("sampler=horseshoe_gibbs", "target=horseshoe", "budget.max_iterations=20000", "progress=false",
               f"hydra.run.dir={tmp_path / 'run'}")
    assert out.returncode == 0, out.stderr
    last = pd.read_parquet(tmp_path / "run" / "trace.parquet").iloc[-1]
    assert last["iterations"] == 20000 and last["acceptance"] == 1.0
    assert 0 < last["n_density"] < 20000  # the state's log π, once per block
    assert last["mean_error"] < 0.5  # 42 coordinates against the reference (MC error ~0.1 here)
