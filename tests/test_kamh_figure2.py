"""KAMH paper Figure 2: the contour math (the covariance is the sampler's own proposal
covariance, checked against its density and against its draws) and the figure from a tiny
stored run."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from scipy.stats import chi2, multivariate_normal

from ckam_bench.kernels import Gaussian
from ckam_bench.report import paper_kamh
from ckam_bench.samplers.kameleon import KAM, centred_gradients, proposal_covariance
from ckam_bench.schedules import Constant, RobbinsMonro
from ckam_bench.targets.banana import Banana
from ckam_bench.targets.base import Target
from tests import clirun


def banana_subsample(d=3, m=60, seed=0):
    return Banana(d, 0.1, 10.0).sample(m, np.random.default_rng(seed))


def explicit_covariance(kernel, x, Z, nu, gamma):
    """γ²I + ν² M H Mᵀ with the explicit centring matrix H (the paper's formula)."""
    kern = kernel.fit(Z)
    M = 2.0 * kern.gradients(x, Z).T
    H = np.eye(len(Z)) - np.ones((len(Z), len(Z))) / len(Z)
    return gamma**2 * np.eye(len(x)) + nu**2 * M @ H @ M.T


@pytest.mark.parametrize("d", [2, 3])
def test_proposal_covariance_is_the_samplers_density(d):
    Z = banana_subsample(d)
    kernel = Gaussian(median_heuristic=True)
    sampler = KAM(kernel, step_size=1.0, subsample_size=60, adaptation=RobbinsMonro(),
                  noise=Constant(0.2), subsample_prob=Constant(1.0))
    rng = np.random.default_rng(1)
    for x in Z[:3] + 0.3:
        C = proposal_covariance(kernel, x, Z, 1.7, 0.2)
        np.testing.assert_allclose(C, explicit_covariance(kernel, x, Z, 1.7, 0.2), rtol=1e-10, atol=1e-12)
        for y in x + rng.normal(size=(3, d)):
            assert sampler.log_proposal_density(y, x, Z, 1.7, 0.2) == pytest.approx(
                multivariate_normal(x, C).logpdf(y), rel=1e-10)
    assert np.allclose(proposal_covariance(kernel, Z[0], Z[:1], 1.7, 0.2), 0.04 * np.eye(d))


class Recorder(Target):
    """Finite only at its start: every proposal is recorded and rejected, so the chain stays
    at x and its proposals are i.i.d. draws from q(·|x)."""

    name = "recorder"

    def __init__(self, x):
        super().__init__(len(x), start=x)
        self.proposals = []

    def _log_density(self, y):
        if np.array_equal(y, self.start):
            return 0.0
        self.proposals.append(np.array(y))
        return -math.inf


def test_sampler_draws_have_the_contour_covariance():
    """The KAM loop's proposals at a fixed state (z frozen, ν not adapted) have the covariance
    Figure 2 draws: whitened by it they are N(0, I), and 95 % fall inside the 95 % contour."""
    d, n = 3, 6000
    Z = banana_subsample(d)
    x = Z[5] + np.array([0.5, -0.3, 0.2])
    kernel = Gaussian(median_heuristic=True)
    sampler = KAM(kernel, step_size=1.3, subsample_size=len(Z), adaptation=RobbinsMonro(until=0),
                  noise=Constant(0.2), subsample_prob=Constant(0.0))
    target = Recorder(x)
    state = sampler.init(target, x, np.random.default_rng(7))
    state.z[:] = Z
    state.n_sub = len(Z)
    state.grads[:], state.gram[:] = centred_gradients(kernel.fit(Z), x, Z)
    state, block = sampler.advance(state, n)
    assert np.allclose(block.step_size, 1.3) and not block.accepted.any()
    delta = np.array(target.proposals) - x
    assert delta.shape == (n, d)
    C = proposal_covariance(kernel, x, Z, 1.3, 0.2)
    W = np.linalg.solve(np.linalg.cholesky(C), delta.T).T
    assert np.abs(W.mean(0)).max() < 4 / math.sqrt(n)
    assert np.abs(np.cov(W.T) - np.eye(d)).max() < 0.08
    # the (x0, x1) contour: the marginal of the proposal on the first two coordinates
    inside = np.einsum("ij,jk,ik->i", delta[:, :2], np.linalg.inv(C[:2, :2]), delta[:, :2]) <= chi2.ppf(0.95, 2)
    assert abs(inside.mean() - 0.95) < 0.01
    ring = paper_kamh.contour(x, C) - x[:2]
    q = np.einsum("ij,jk,ik->i", ring, np.linalg.inv(C[:2, :2]), ring)
    np.testing.assert_allclose(q, chi2.ppf(0.95, 2), rtol=1e-10)


@pytest.mark.slow
def test_figure2_from_a_stored_run(tmp_path):
    run = tmp_path / "run"
    clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", "experiment=kamh_banana_moderate", "sampler=kamh",
                    "budget.max_iterations=600", "burnin=200", "progress=false", f"hydra.run.dir={run}"],
               check=True, capture_output=True)
    out = tmp_path / "figures"
    done = clirun.run([sys.executable, "-m", "ckam_bench.report.cli", str(run), "--out", str(out),
                           "--figures", "none", "--generic", "none", "--formats", "png"],
                      check=True, capture_output=True, text=True)
    assert (out / "kamh_fig2_banana_moderate.png").stat().st_size > 10_000
    assert "Figure 2" in done.stdout
    from ckam_bench.report.aggregate import load_results

    (stored,) = load_results(run).runs
    kernel, Z, nu, gamma, target = paper_kamh.proposal_setup(stored)
    assert Z.shape == (400, 8) and nu > 0 and gamma == pytest.approx(0.2)
    assert kernel.median_heuristic and target.name == "banana_moderate"
