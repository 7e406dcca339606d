"""Shared statistical checks for samplers (BlackJAX-style: one loop, one moment check).

``run_chains`` runs independent chains that each start from one exact draw of the target, so
a correct sampler is in equilibrium from the first iteration and no burn-in is needed: any
drift of the moments is the sampler's fault. ``check_moments`` then compares the pooled
moments with the truth using intervals whose width comes from the bulk ESS of arviz-stats,
so the tests are tight for good samplers and still fail for wrong ones.

    samples, accepted = run_chains(lambda: RandomWalk(1.0), target, 8, 4000, seed=1)
    check_moments(samples, target.mean, target.variance)
    check_acceptance(accepted, 0.2, 0.6)

``assert_stationary`` is the stationarity check (:mod:`ckam_bench.checks.stationarity`) as a test:
K chains from exact draws, tested at several times against fresh exact draws; every sampler's
tests call it (``assert_not_stationary`` for a sampler known to drift, with a clear margin).

Two small targets for tests: :class:`Tempered` (a deliberately wrong target, π^power, whose
exact draws are those of π: a sampler run on it must FAIL the moment check against π) and
:class:`NonFiniteHalfPlane` (a standard normal whose log density is NaN/±inf on x₀ < 0; it
has a compiled density too, so the compiled loops meet non-finite values).

The ``loop`` fixture runs a test twice: on the compiled loops (numba; skipped without it) and
on the Python loops (``CKAM_BENCH_JIT=0``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from arviz_stats.base import array_stats

from ckam_bench import jit
from ckam_bench.checks.stationarity import check_stationarity
from ckam_bench.targets.base import Target


@pytest.fixture(params=["jit", "python"])
def loop(request, monkeypatch):
    """The sampler loop a test runs on: compiled (numba) or Python (``CKAM_BENCH_JIT=0``)."""
    if request.param == "jit" and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setenv(jit.ENV, "1" if request.param == "jit" else "0")
    return request.param


def run_chains(make_sampler, target, n_chains: int, n_iter: int, seed: int, block: int = 500):
    """Run ``n_chains`` chains of ``n_iter`` iterations each, started from exact draws.

    make_sampler : zero-argument factory; each chain gets its own sampler instance.
    target : a Target with an exact sampler (``target.sample``).
    seed : seeds one ``np.random.SeedSequence``; its spawned children give each chain its
        own Generator, and one more child draws the start points.
    block : iterations per ``advance`` call.

    Returns ``(samples, accepted)``: collected states, shape (chains, draws, d), every chain
    trimmed to the shortest chain's number of collected draws; and the per-iteration accept
    flags of all chains concatenated, shape (chains · n_iter,).
    """
    children = np.random.SeedSequence(seed).spawn(n_chains + 1)
    starts = target.sample(n_chains, np.random.default_rng(children[-1]))
    per_chain, flags = [], []
    for c in range(n_chains):
        sampler = make_sampler()
        state = sampler.init(target, starts[c], np.random.default_rng(children[c]))
        collected, done = [], 0
        while done < n_iter:
            state, out = sampler.advance(state, min(block, n_iter - done))
            collected.append(out.samples)
            flags.append(out.accepted)
            done += out.n
        per_chain.append(np.concatenate(collected, axis=0))
    draws = min(len(s) for s in per_chain)
    samples = np.stack([s[:draws] for s in per_chain])
    return samples, np.concatenate(flags)


def _ess(values: np.ndarray) -> np.ndarray:
    """Bulk ESS of each coordinate of a (chains, draws, d) array, shape (d,)."""
    return np.atleast_1d(
        array_stats.ess(np.moveaxis(values, -1, 0), chain_axis=1, draw_axis=2, method="bulk")
    )


def check_moments(samples: np.ndarray, mean, var, z: float = 4.5, min_ess: float = 50.0) -> None:
    """Assert that each coordinate's mean and variance agree with the truth.

    Mean: the pooled sample mean lies within z·sd/√ESS of the true mean (sd = √var, ESS the
    bulk ESS of the coordinate over the (chains, draws) array).
    Variance: the estimate v̂ = mean((x − μ)²) (μ the true mean) lies within z·se of the true
    variance, se = sd((x − μ)²)/√ESS((x − μ)²) with the empirical sd of (x − μ)².
    An ESS below ``min_ess`` fails too: the interval would be too wide to mean anything.
    """
    samples = np.asarray(samples, float)
    mean = np.broadcast_to(np.asarray(mean, float), samples.shape[-1:])
    var = np.broadcast_to(np.asarray(var, float), samples.shape[-1:])
    sq = (samples - mean) ** 2
    ess_x, ess_sq = _ess(samples), _ess(sq)
    m_hat = samples.mean(axis=(0, 1))
    v_hat = sq.mean(axis=(0, 1))
    sd_sq = sq.reshape(-1, samples.shape[-1]).std(axis=0, ddof=1)
    problems = []
    for j in range(samples.shape[-1]):
        for label, ess in (("mean", ess_x[j]), ("variance", ess_sq[j])):
            if not ess >= min_ess:
                problems.append(f"coordinate {j}: ESS for the {label} is {ess:.1f} < {min_ess}")
        half = z * np.sqrt(var[j] / ess_x[j])
        if not abs(m_hat[j] - mean[j]) <= half:
            problems.append(
                f"coordinate {j}: mean {m_hat[j]:.4f}, truth {mean[j]:.4f}, "
                f"interval [{mean[j] - half:.4f}, {mean[j] + half:.4f}], ESS {ess_x[j]:.0f}"
            )
        half = z * sd_sq[j] / np.sqrt(ess_sq[j])
        if not abs(v_hat[j] - var[j]) <= half:
            problems.append(
                f"coordinate {j}: variance {v_hat[j]:.4f}, truth {var[j]:.4f}, "
                f"interval [{var[j] - half:.4f}, {var[j] + half:.4f}], ESS {ess_sq[j]:.0f}"
            )
    assert not problems, "moment check failed:\n  " + "\n  ".join(problems)


def check_acceptance(accepted: np.ndarray, low: float, high: float) -> None:
    """Assert that the acceptance rate lies in [low, high]."""
    rate = float(np.mean(accepted))
    assert low <= rate <= high, f"acceptance rate {rate:.3f} outside [{low}, {high}]"


class Tempered(Target):
    """log density ``power · log π``, but exact draws, mean and variance of π itself.

    ``power = 0`` is a sampler whose acceptance ignores the target; ``power = 1/2`` samples
    π^(1/2), whose Gaussian variances are twice π's. Either must fail ``check_moments``.
    """

    name = "tempered"

    def __init__(self, target: Target, power: float):
        super().__init__(target.dim, target.start, target.box)
        self.base, self.power = target, float(power)

    def _log_density(self, x):
        return self.power * self.base._log_density(x)

    def sample(self, n, rng):
        return self.base.sample(n, rng)


class NonFiniteHalfPlane(Target):
    """N(0, I_d) restricted to x₀ ≥ 0, with log density ``value`` (NaN, +inf, −inf) on x₀ < 0.

    A correct sampler rejects every proposal with x₀ < 0, so its chain targets the truncated
    normal: coordinate 0 is half-normal (mean √(2/π), variance 1 − 2/π), the others N(0, 1).
    """

    name = "nonfinite_half_plane"

    def __init__(self, dim: int = 2, value: float = math.nan):
        super().__init__(dim, start=np.r_[1.0, np.zeros(dim - 1)])
        self.value = float(value)

    def _log_density(self, x):
        return -0.5 * float(x @ x) if x[0] >= 0.0 else self.value

    def jit_log_density(self):
        return jit.bind_density(_half_plane_log_density, self.value)

    def sample(self, n, rng):
        z = rng.standard_normal((n, self.dim))
        z[:, 0] = np.abs(z[:, 0])
        return z

    @property
    def mean(self):
        return np.r_[math.sqrt(2.0 / math.pi), np.zeros(self.dim - 1)]

    @property
    def variance(self):
        return np.r_[1.0 - 2.0 / math.pi, np.ones(self.dim - 1)]


@jit.helper
def _half_plane_log_density(x, params):
    """NonFiniteHalfPlane._log_density compiled."""
    if x[0] < 0.0:
        return params[0]
    norm2 = 0.0
    for j in range(x.shape[0]):
        norm2 += x[j] * x[j]
    return -0.5 * norm2


def assert_stationary(make_sampler, target, n_chains: int = 100, times=(1000, 5000), seed: int = 0,
                      alpha: float = 0.01, n_reference: int = 10_000):
    """Assert that chains started from exact draws stay distributed as π (the stationarity
    check of :mod:`ckam_bench.checks.stationarity`: KS, moment z-scores and mode occupancy at each
    time, Holm-adjusted at family-wise level ``alpha``). Returns the result."""
    result = check_stationarity(make_sampler, target, n_chains=n_chains, times=times, seed=seed,
                                alpha=alpha, n_reference=n_reference)
    if not result.passed:
        bad = result.tests[result.tests["reject"]]
        lines = [f"t={int(r.time)} {r.test}: statistic {r.statistic:.3f}, Holm p {r.p_holm:.2g}"
                 for r in bad.itertuples()]
        raise AssertionError("stationarity check failed:\n  " + "\n  ".join(lines))
    return result


def assert_not_stationary(make_sampler, target, n_chains: int, times, seed: int = 0,
                          alpha: float = 0.01, margin: float = 10.0):
    """Assert that the check rejects, with the smallest Holm-adjusted p-value at least
    ``margin`` times below ``alpha`` (a clear failure, not a borderline one). Returns the result."""
    result = check_stationarity(make_sampler, target, n_chains=n_chains, times=times, seed=seed,
                                alpha=alpha)
    assert result.min_p_holm < alpha / margin, (
        f"expected a clear failure (min Holm p < {alpha / margin:g}), got {result.min_p_holm:.3g} "
        f"({result.summary()['worst_test']})")
    return result


def cut_gaussian_targets(cut: float):
    """``(Plain, Compiled)``: target classes (``Plain(d)``) of one jitted log density,
    N(0, diag(1, 2, …)) cut at x_0 > ``cut`` (−inf there: non-finite proposals). ``Plain`` has
    no compiled density (a user's numpy target: the Python loops run), ``Compiled`` gives the
    same function as its compiled density (the kernels run), so the two agree exactly."""
    from ckam_bench import jit
    from ckam_bench.targets.base import Target

    @jit.numba.njit
    def density(x):
        if x[0] > cut:
            return -math.inf
        s = 0.0
        for k in range(x.shape[0]):
            s += x[k] * x[k] / (k + 1.0)
        return -0.5 * s

    class Plain(Target):
        name = "plain_cut_gaussian"

        def _log_density(self, x):
            return density(x)

    class Compiled(Plain):
        def jit_log_density(self):
            return density

    return Plain, Compiled
