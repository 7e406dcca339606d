"""Parallel tempering: π-invariance of the β = 1 chain from exact draws (banana_dm, basis4),
moves between all eight basis4 modes, the neighbour-swap rule against a brute-force two-state
computation, per-pair swap acceptance, block-size independence, the Python loop (a plain numpy target's
compiled step = the kernel, bit for bit), bad input."""

import math

import numpy as np
import pytest

from ckam_bench import jit
from ckam_bench.samplers import tempering
from ckam_bench.samplers.tempering import ParallelTempering, _pt_python_loop, _pt_step
from ckam_bench.targets.base import Target
from ckam_bench.targets.divergence import banana_dm, basis4
from tests.samplers.invariance import NonFiniteHalfPlane, check_moments, run_chains
from tests.samplers.test_divergence import _modes_visited


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 5])
def test_invariance_banana(k):
    # The hot chains must start near their π^β (a long warm-up: π^0.1 of banana_dm spreads over
    # hundreds of units), else the swaps feed chain 1 with too-central states.
    target = banana_dm()
    samples, accepted = run_chains(lambda: ParallelTempering(k, step_size=2.0, warmup=30000), target, 128, 4000,
                                   seed=21, block=10000)
    check_moments(samples, target.mean, target.variance)


@pytest.mark.parametrize("k", [2, 5])
def test_invariance_basis4(k):
    target = basis4()
    samples, _ = run_chains(lambda: ParallelTempering(k, warmup=5000), target, 16, 5000, seed=22, block=10000)
    check_moments(samples, target.mean, target.variance)


def test_visits_all_basis4_modes():
    target = basis4()
    sampler = ParallelTempering(5)
    state = sampler.init(target, [10.0, 0, 0, 0], np.random.default_rng(3))
    state, block = sampler.advance(state, 40_000)
    assert len(_modes_visited(block.samples)) == 8
    rates = sampler.trace_columns(state)["swap_acceptance"]
    assert rates.shape == (4,) and np.all((rates > 0) & (rates <= 1))


class _TwoPoints(Target):
    """A density on R¹ used only at two points: log π = 0 at x = 0, −1.7 at x = 1 (−inf elsewhere)."""

    name = "two_points"

    def __init__(self):
        super().__init__(1)

    def _log_density(self, x):
        return {0.0: 0.0, 1.0: -1.7}.get(float(x[0]), -math.inf)


def test_swap_rule_against_two_state_brute_force():
    """Two chains (β = 1, τ) on two states whose RW moves always leave {0, 1} (rejected): only
    swaps act. The empirical transition frequencies of ``_pt_python_loop`` (``_pt_kernel``'s
    chain, tested below) between joint states must match the brute-force matrix whose
    stationary law is π(x₁) π^τ(x₂)."""
    target, tau = _TwoPoints(), 0.3
    betas = np.array([1.0, tau])
    rng = np.random.default_rng(0)
    logpi = np.array([0.0, -1.7])
    counts = np.zeros((4, 4))
    for start in range(4):
        i, j = divmod(start, 2)
        for _ in range(4000):
            X = np.array([[float(i)], [float(j)]])
            lp = logpi[[i, j]].copy()
            normals = rng.standard_normal((1, 2 * 2 + 2))
            normals[0, :2] = 0.5 + np.abs(normals[0, :2]) * 10  # steps that leave {0, 1}
            _pt_python_loop(target._log_density, X, lp, betas, np.ones(2), normals, _pt_step)
            counts[start, 2 * int(X[0, 0]) + int(X[1, 0])] += 1
    P_hat = counts / counts.sum(axis=1, keepdims=True)
    P = np.eye(4)
    for i, j in ((0, 1), (1, 0)):
        a = min(1.0, math.exp((1 - tau) * (logpi[j] - logpi[i])))
        P[2 * i + j, 2 * i + j] -= a
        P[2 * i + j, 2 * j + i] += a
    np.testing.assert_allclose(P_hat, P, atol=0.03)
    w = np.array([math.exp(logpi[i] + tau * logpi[j]) for i in range(2) for j in range(2)])
    w /= w.sum()
    np.testing.assert_allclose(w @ P, w, atol=1e-12)


def test_chain_does_not_depend_on_block_sizes_and_python_loop(monkeypatch):
    target = banana_dm()
    runs = []
    for flag, sizes in (("1", (700,)), ("1", (123, 577)), ("0", (350, 350))):
        monkeypatch.setenv("CKAM_BENCH_JIT", flag)
        sampler = ParallelTempering(3)
        state = sampler.init(target, [1.0, -2.0], np.random.default_rng(9))
        target.reset_counters()
        out = []
        for k in sizes:
            state, block = sampler.advance(state, k)
            out.append(block.samples)
        assert target.n_density == 3 * 700
        runs.append(np.concatenate(out))
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_allclose(runs[0], runs[2], rtol=1e-12)


class _PlainHalfPlane(NonFiniteHalfPlane):
    """NonFiniteHalfPlane as a user's numpy target (no compiled density: the Python loop runs),
    its density the compiled one called from Python, so both paths see the same bits."""

    jit_log_density = None

    def _log_density(self, x):
        return NonFiniteHalfPlane.jit_log_density(self)(x)


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "+inf", "-inf"])
@pytest.mark.parametrize("k", [2, 5])
def test_plain_target_python_loop_is_the_kernel_chain_bit_for_bit(monkeypatch, k, value):
    """A plain numpy target's Python loop with its compiled step (and with the step's Python
    function, CKAM_BENCH_JIT=0) makes the kernel's chain — and that of the kernel's source run
    as Python — bit for bit, over uneven blocks (37 + 200 + 63), the tempered chains' warm-up,
    the burn-in and non-finite densities (NaN, ±inf on x₀ < 0) included, with the same counts."""
    chains = []
    for path in ("kernel", "kernel source in Python", "compiled step", "python step"):
        monkeypatch.setenv(jit.ENV, "0" if path == "python step" else "1")
        with monkeypatch.context() as patch:
            if path == "kernel source in Python":
                patch.setattr(tempering, "_pt_kernel", tempering._pt_loop)
            target = NonFiniteHalfPlane(3, value) if path.startswith("kernel") else _PlainHalfPlane(3, value)
            sampler = ParallelTempering(k, step_size=1.5, warmup=50, burnin=20)
            sampler.warm_up(target)
            state = sampler.init(target, None, np.random.default_rng(11))
            assert (sampler._density is None) is path.endswith("step")
            assert (sampler._step is _pt_step) is (path != "python step")
            blocks = []
            for n in (37, 200, 63):
                calls = jit.KERNEL_CALLS
                state, block = sampler.advance(state, n)
                assert (jit.KERNEL_CALLS > calls) is (path == "kernel")
                blocks.append(block)
        fields = [np.concatenate([getattr(b, f) for b in blocks])
                  for f in ("samples", "accepted", "accept_prob", "phase", "logp")]
        chains.append((*fields, sum(b.n_nonfinite for b in blocks), state.x, state.logp, state.chains,
                       state.chain_logp, state.swaps_tried, state.swaps_accepted, target.n_density))
    first = chains[0]
    assert first[0].shape == (280, 3) and first[5] > 50 and first[1].any() and not first[1].all()
    assert first[-2].sum() > 0 and first[-3].sum() == 300  # swaps accepted, tried
    assert first[-1] == 1 + (k - 1) * 50 + k * 300  # evaluations: the start, the warm-up, the blocks
    for other in chains[1:]:
        for a, b in zip(first, other):
            np.testing.assert_array_equal(a, b)


def test_ladders_and_burnin():
    assert ParallelTempering(5, tau=0.1).betas.tolist() == pytest.approx([1.0, 0.775, 0.55, 0.325, 0.1])
    assert ParallelTempering(3, tau=0.01, ladder="geometric").betas.tolist() == pytest.approx([1.0, 0.1, 0.01])
    sampler = ParallelTempering(2, burnin=100)
    state = sampler.init(banana_dm(), None, np.random.default_rng(0))
    _, block = sampler.advance(state, 300)
    assert block.samples.shape == (200, 2)
    assert sampler.describe()["collects"] == "the beta = 1 chain only"


@pytest.mark.parametrize("kwargs, message", [
    ({"n_chains": 1}, "^n_chains must be"),
    ({"n_chains": 10**6}, "^n_chains must be"),
    ({"tau": 1.5}, "^tau must be"),
    ({"step_size": [1.0, 2.0]}, "^step_size must be"),
    ({"ladder": "cubic"}, "^ladder must be"),
    ({"burnin": -1}, "^burnin must be"),
    ({"warmup": -1}, "^warmup must be"),
])
def test_bad_arguments_name_the_key(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ParallelTempering(**kwargs)


@pytest.mark.parametrize("name", ["pt", "pt2", "pt10"])
def test_shipped_configs_pass_the_stationarity_check(name):
    """conf/sampler/pt.yaml, pt2.yaml, pt10.yaml as shipped: chains from exact draws of gmm2d
    stay distributed as π."""
    from hydra import compose, initialize_config_module
    from hydra.utils import instantiate

    from tests.samplers.invariance import assert_stationary

    with initialize_config_module(config_module="ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=[f"sampler={name}", "target=gmm2d"])
    assert_stationary(lambda: instantiate(cfg.sampler), instantiate(cfg.target), n_chains=40,
                      times=[500, 2000], seed=5)


@pytest.mark.parametrize("value", [-math.inf, math.nan], ids=["-inf", "nan"])
def test_healthy_pt_on_a_cut_target_is_not_flagged(value):
    """Issue 29 §3: pt10 on N(0, I) cut to x₀ ≥ 0 is healthy (cold-chain acceptance ~0.4, mean
    right) although its hot chains propose outside the half-space at most iterations: the
    health flags are about the collected chain, so only chain 1's non-finite proposals count
    (Block.n_nonfinite); every chain's are in the trace column n_nonfinite_all_chains."""
    from ckam_bench.engine.tally import Tally

    target = NonFiniteHalfPlane(2, value)
    sampler = ParallelTempering(10)
    state = sampler.init(target, None, np.random.default_rng(5))
    tally = Tally(sampler.phases, target.dim, 10_000, 1000, 100)
    samples = []
    for _ in range(6):
        state, block = sampler.advance(state, 1000)
        tally.record(block, state, compiled=True)
        samples.append(block.samples)
    all_chains = sampler.trace_columns(state)["n_nonfinite_all_chains"]
    assert all_chains > tally.iterations  # the situation the old count flagged
    assert 0 < tally.n_nonfinite < tally.iterations
    assert tally.flags() == {}
    x = np.concatenate(samples)
    assert 0.3 < tally.acceptance()["acceptance"] < 0.6
    assert abs(x[:, 0].mean() - math.sqrt(2 / math.pi)) < 0.1
