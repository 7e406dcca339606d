"""MALA, HMC-k and NUTS: invariance from exact draws, counting, the two loops, bad input; the
Gaussian targets' gradients and Hessians against finite differences."""

import numpy as np
import pytest

from ckam_bench import jit
from ckam_bench.samplers.hamiltonian import HMC, MALA
from ckam_bench.samplers.nuts import NUTS
from ckam_bench.targets.base import Target
from ckam_bench.targets.gaussians import gauss2d_corr, gp51, neal100
from tests.samplers.invariance import check_moments, run_chains

TARGETS = {"gauss2d_corr": gauss2d_corr, "neal100": neal100, "gp51": gp51}


def _fd_grad(f, x, h=1e-6):
    g = np.empty_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        g[j] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_gaussian_gradient_and_hessian_finite_differences(name):
    target = TARGETS[name]()
    rng = np.random.default_rng(3)
    for x in target.sample(3, rng) + 0.1 * rng.standard_normal((3, target.dim)):
        g = target._grad_log_density(x)
        np.testing.assert_allclose(g, _fd_grad(target._log_density, x), rtol=1e-5, atol=1e-4 * np.abs(g).max())
        H = target._hessian_log_density(x)
        fd = np.stack([_fd_grad(lambda z: target._grad_log_density(z)[i], x) for i in range(target.dim)])
        np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-6 * np.abs(H).max())
        if jit.AVAILABLE:
            out, hess = np.empty(target.dim), np.empty((target.dim, target.dim))
            assert np.isclose(target.jit_log_density_and_grad()(x, out), target._log_density(x), rtol=1e-12)
            np.testing.assert_allclose(out, g, rtol=1e-10, atol=1e-12 * np.abs(g).max())
            target.jit_hessian_log_density()(x, hess)
            np.testing.assert_allclose(hess, H, rtol=1e-12)


SAMPLERS = {
    "mala": lambda: MALA(burn_in=1000),
    "hmc": lambda: HMC(n_leapfrog=10, burn_in=500),
    "nuts": lambda: NUTS(burn_in=300),
}
ITERATIONS = {"mala": 15000, "hmc": 2000, "nuts": 2500}


FAST = [("mala", "gauss2d_corr"), ("hmc", "gauss2d_corr"), ("nuts", "gauss2d_corr"), ("nuts", "gp51")]


@pytest.mark.parametrize("sampler, target_name", FAST + [
    pytest.param(*pair, marks=pytest.mark.slow) for pair in [("hmc", "neal100"), ("hmc", "gp51"), ("nuts", "neal100")]])
def test_invariance_from_exact_draws(sampler, target_name):
    """Chains started at exact draws adapt during burn-in, then keep π (compiled loops). MALA on
    neal100/gp51: the slow test below (isotropic MALA mixes slowly there)."""
    target = TARGETS[target_name]()
    # identity-metric HMC-10 with a fixed path length resonates on neal100: its ε settles near
    # the smallest scale, and a path of 10ε turns coordinate 4 (sd 0.05) by close to π, x → −x,
    # so x² barely moves (variance ESS 9.5 in 4 × 2 000 iterations, 15.6 in 4 × 20 000) while
    # its mean mixes well. The chain is still π-invariant: it needs the longer run and wider
    # intervals (the intervals use the ESS, so a low ESS widens them honestly).
    iterations = 20000 if (sampler, target_name) == ("hmc", "neal100") else ITERATIONS[sampler]
    samples, _ = run_chains(SAMPLERS[sampler], target, 4, iterations, seed=11)
    check_moments(samples, target.mean, target.variance, min_ess=10 if sampler == "hmc" else 50)


@pytest.mark.slow
@pytest.mark.parametrize("target_name", ["neal100", "gp51"])
def test_mala_invariance_long(target_name):
    """Isotropic MALA's σ settles at neal100's smallest scale (≈ 0.018), so a coordinate of scale
    s needs ~(s/σ)² iterations per independent draw (the paper's Table 1: min ESS 2.9 of 20 000);
    on neal100 the check uses the coordinates with s ≤ 0.4, where 40 000 iterations give a
    trustworthy ESS (for s near 1 the split-chain ESS of four barely-moving chains overstates
    the information and the interval would be meaningless)."""
    target = TARGETS[target_name]()
    samples, _ = run_chains(lambda: MALA(burn_in=2000), target, 4, 40000, seed=5, block=10000)
    keep = slice(0, 40) if target_name == "neal100" else slice(None)
    check_moments(samples[..., keep], target.mean[keep], target.variance[keep], min_ess=8)


SAME_CHAIN = {  # (sampler, target). HMC/NUTS at fixed stable steps: dual averaging's early steps
    # reach unstable leapfrog sizes, where the rounding differences of the compiled and numpy
    # gradients (last bits) grow exponentially along the trajectory and flip decisions.
    "mala": (lambda: MALA(burn_in=60), gp51),
    "hmc_fixed": (lambda: HMC(n_leapfrog=4, step_size=0.03, burn_in=0), gp51),
    "nuts_fixed": (lambda: NUTS(step_size=0.03, burn_in=0, max_depth=6), gp51),
}


@pytest.mark.parametrize("sampler", sorted(SAME_CHAIN))
def test_both_loops_make_the_same_chain(sampler, monkeypatch):
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    make, make_target = SAME_CHAIN[sampler]
    chains = {}
    for switch in ("1", "0"):
        monkeypatch.setenv(jit.ENV, switch)
        target = make_target()
        s = make()
        state = s.init(target, target.sample(1, np.random.default_rng(0))[0], np.random.default_rng(1))
        blocks = []
        for n in (50, 37, 33):
            state, b = s.advance(state, n)
            blocks.append(b)
        chains[switch] = (np.concatenate([b.accepted for b in blocks]), np.concatenate([b.samples for b in blocks]),
                          target.n_density, target.n_grad)
    np.testing.assert_array_equal(chains["1"][0], chains["0"][0])
    np.testing.assert_allclose(chains["1"][1], chains["0"][1], rtol=1e-7, atol=1e-9)
    assert chains["1"][2:] == chains["0"][2:]


def test_block_split_does_not_change_the_chain():
    target = neal100()
    out = []
    for sizes in ((400,), (150, 250)):
        s = NUTS(burn_in=200)
        state = s.init(target, None, np.random.default_rng(4))
        for n in sizes:
            state, _ = s.advance(state, n)
        out.append(state.x)
    np.testing.assert_array_equal(out[0], out[1])


def test_gradient_counts_and_phases():
    target = gauss2d_corr()
    s = HMC(n_leapfrog=7, burn_in=0)
    state = s.init(target, None, np.random.default_rng(0))
    assert (target.n_density, target.n_grad) == (1, 1)
    state, block = s.advance(state, 100)
    assert target.n_grad == 1 + 7 * 100 and target.n_density == target.n_grad
    assert block.samples.shape == (100, 2) and np.all(block.phase == 1)
    s = MALA(burn_in=30)
    target.reset_counters()
    state = s.init(target, None, np.random.default_rng(0))
    state, block = s.advance(state, 50)
    assert target.n_grad == 51
    assert block.samples.shape == (20, 2)
    np.testing.assert_array_equal(block.phase, [0] * 30 + [1] * 20)
    assert np.all(np.isfinite(block.logp))
    # logp column: the log density of the chain's state
    last = block.samples[-1]
    assert np.isclose(block.logp[-1], target._log_density(last))


def test_nuts_learns_the_diagonal_metric():
    target = neal100()
    s = NUTS(burn_in=1000)
    state = s.init(target, None, np.random.default_rng(2))
    state, _ = s.advance(state, 1000)
    ratio = state.inv_metric / target.variance
    assert 0.5 < np.median(ratio) < 2.0
    assert s.describe()["window_ends"] == [99, 149, 249, 449, 949]


@pytest.mark.parametrize("make, message", [
    (lambda: HMC(n_leapfrog=0), "n_leapfrog must be"),
    (lambda: HMC(step_size=-1), "step_size must be"),
    (lambda: MALA(burn_in=-1), "burn_in must be"),
    (lambda: MALA(target_accept=1.5), "target_accept must be"),
    (lambda: NUTS(max_depth=40), "max_depth must be"),
    (lambda: NUTS(kappa=0.2), "kappa must be"),
])
def test_bad_settings(make, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        make()


@pytest.mark.slow
def test_nuts_against_exact_moments_and_long_mala_on_gp51():
    target = gp51()
    nuts, _ = run_chains(lambda: NUTS(burn_in=500), target, 4, 5500, seed=21, block=1000)
    check_moments(nuts, target.mean, target.variance)
    mala, _ = run_chains(lambda: MALA(burn_in=5000), target, 4, 100000, seed=22, block=20000)
    # NUTS and a long MALA run agree on every variance within their joint Monte-Carlo error
    from tests.samplers.invariance import _ess

    check_moments(mala, target.mean, target.variance, min_ess=10)
    v_n, v_m = nuts.var(axis=(0, 1)), mala.var(axis=(0, 1))
    se = np.sqrt(2 * v_n**2 / _ess((nuts - target.mean) ** 2) + 2 * v_m**2 / _ess((mala - target.mean) ** 2))
    assert np.all(np.abs(v_n - v_m) < 4.5 * se)


def test_compiled_vector_helpers_do_numbas_array_arithmetic():
    """The compiled loops of the leapfrog step and the kinetic energy give bit for bit what
    numba's array expressions gave (so compiled chains did not change)."""
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    import numba

    from ckam_bench.samplers import hamiltonian as h

    @numba.njit
    def with_loops(f, x, p, g, eps, minv):
        lp = h._leapfrog(f, x, p, g, eps, minv)
        return lp, h._kinetic(p, minv)

    @numba.njit
    def with_arrays(f, x, p, g, eps, minv):
        p += (0.5 * eps) * g
        x += eps * (minv * p)
        lp = f(x, g)
        p += (0.5 * eps) * g
        return lp, 0.5 * np.sum(minv * p * p)

    rng = np.random.default_rng(0)
    for d in (1, 7, 10, 16, 26, 100):
        f = jit.compiled_log_density_and_grad(neal100() if d == 100 else _gauss(d))
        for _ in range(20):
            x, p, g = (rng.standard_normal(d) for _ in range(3))
            minv, eps = rng.uniform(0.1, 3.0, d), rng.uniform(-0.5, 0.5)
            a = [v.copy() for v in (x, p, g)]
            b = [v.copy() for v in (x, p, g)]
            out_a = with_loops(f, *a, eps, minv)
            out_b = with_arrays(f, *b, eps, minv)
            for va, vb in zip(a, b):
                np.testing.assert_array_equal(va, vb)
            assert out_a[1] == out_b[1]
            # log π itself at the same x: the density's BLAS call may round the last bit
            # differently with the arrays' alignment (seen once in a full run: 4e-15 apart)
            np.testing.assert_allclose(out_a[0], out_b[0], rtol=1e-13)


def test_uturn_criterion_is_the_same_in_python_and_compiled_code():
    """The U-turn criterion on rows of the tree's work array, p♯_a·ρ ≤ 0 or p♯_b·ρ ≤ 0 with
    ρ = rho + extra − rho0, sums its dot products in index order in Python and compiled code
    alike, so both decide the same even where a dot product is within rounding of 0 (momenta
    made orthogonal to ρ); and it is the criterion computed directly."""
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    import numba

    from ckam_bench.samplers import nuts_metric
    from ckam_bench.samplers import nuts_tree as n

    @numba.njit
    def compiled(work, minv):
        return n._turns(work, 0, 1, 2, 4, 3, minv)

    rng = np.random.default_rng(0)
    near_zero = 0
    for d in (1, 3, 10, 33, 200):
        for trial in range(60):
            work = rng.standard_normal((5, d))
            minv = rng.uniform(0.1, 3.0, d) if trial % 3 else nuts_metric.pack(rng.uniform(0.5, 2.0, d))
            w = minv if minv.ndim == 1 else np.ones(d)
            if trial % 2:
                work[4] = 0.0  # no extra momentum: the row of zeros
            r = (work[2] + work[4]) - work[3]
            if trial % 4 == 0 and d > 1:  # p♯_a ⟂ ρ up to rounding
                v = w * r
                work[0] -= (work[0] @ v) / (v @ v) * v
                near_zero += abs(w * work[0] @ r) < 1e-12
            expected = not ((w * work[0]) @ r > 0.0 and (w * work[1]) @ r > 0.0)
            python = n._turns(work, 0, 1, 2, 4, 3, minv)
            assert compiled(work, minv) == python
            if abs((w * work[0]) @ r) > 1e-9 and abs((w * work[1]) @ r) > 1e-9:
                assert python == expected
    assert near_zero > 50


def _gauss(d):
    from ckam_bench.targets.gaussians import Gaussian

    return Gaussian(np.zeros(d), np.diag(np.linspace(0.5, 2.0, d) ** 2), d)


class _CountingGenerator:
    """A Generator's ``random`` that counts the uniforms drawn (the Python loop's only use)."""

    def __init__(self, seed):
        self.generator, self.sizes = np.random.default_rng(seed), []

    def random(self, size=None):
        self.sizes.append(1 if size is None else size)
        return self.generator.random(size)


def _nuts_draws(switch, monkeypatch, max_depth, seed=3):
    """Run NUTS on gauss2d_corr in two blocks; (uniforms drawn, blocks, state, the sizes of the
    Python loop's draws). The compiled loop's count: the position of its generator's state
    within the stream of the same seed, equal to the Python loop's counted one."""
    monkeypatch.setenv(jit.ENV, switch)
    target = gauss2d_corr()
    s = NUTS(step_size=0.3, burn_in=0, max_depth=max_depth)
    rng = _CountingGenerator(seed) if switch == "0" else np.random.default_rng(seed)
    state = s.init(target, None, rng)
    state, b1 = s.advance(state, 30)
    state, b2 = s.advance(state, 7)
    if switch == "0":
        return sum(rng.sizes), (b1, b2), state, rng.sizes
    reference = np.random.default_rng(seed)
    n = 0
    while reference.bit_generator.state != rng.bit_generator.state:
        reference.random()
        n += 1
        assert n < 37 * (2 + 2 * max_depth + 2**max_depth)
    return n, (b1, b2), state, None


@pytest.mark.parametrize("switch", ["1", "0"])
def test_nuts_draws_only_the_uniforms_its_trees_use(switch, monkeypatch):
    """NUTS draws from the sampler's own generator (compiled: inside the loop, sharing its
    state) d uniforms for the momentum, then per doubling its direction, a draw per leaf and one
    for the merge, none where the probability is 1. At max_depth = 1 the single leaf is the
    proposal and it is kept with probability min(1, e^(H₀ − H)) = the acceptance statistic, so
    an iteration draws d + 1 uniforms, + 1 when that statistic is below 1."""
    if switch == "1" and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    n, blocks, state, _ = _nuts_draws(switch, monkeypatch, max_depth=1)
    accept_prob = np.concatenate([b.accept_prob for b in blocks])
    assert not any(b.divergent.any() for b in blocks)
    assert 0 < np.sum(accept_prob < 1.0) < 37
    assert n == 37 * (2 + 1) + np.sum(accept_prob < 1.0)
    # deeper trees: the Python loop's counted draws (d normals first in every iteration), which
    # the compiled loop matches draw for draw; fewer than the 2^max_depth leaves a tree may reach
    python, _, _, sizes = _nuts_draws("0", monkeypatch, max_depth=5)
    assert [k for k in sizes if k != 1] == [2] * 37
    assert 37 * 3 < python < 37 * (2 + 2 * 5 + 2**5) // 2
    if switch == "1":
        assert _nuts_draws("1", monkeypatch, max_depth=5)[0] == python


def test_python_vector_helpers_give_the_array_expressions_bit_for_bit():
    """The Python loops' helpers (fewer temporaries, no separate finiteness check) return
    exactly what the plain numpy expressions (the compiled kernels' arithmetic) return, also
    for non-finite gradients; so a plain-numpy target's chain is unchanged."""
    from ckam_bench.samplers import hamiltonian as h

    rng = np.random.default_rng(3)
    with np.errstate(over="ignore"):  # v·v overflows: the entries are checked one by one
        assert h._all_finite(np.array([1e200, 1.0])) and not h._all_finite(np.array([1e200, np.inf]))

    def f(x, g):
        g[:] = -x
        return -0.5 * float(x @ x)

    for d in (1, 3, 10, 33):
        for k in range(30):
            x, g, gy, eps, p = (rng.standard_normal(d) for _ in range(5))
            sigma, step, minv = rng.uniform(0.01, 2.0), rng.uniform(-0.5, 0.5), rng.uniform(0.1, 3.0, d)
            if k % 5 == 1:
                gy[rng.integers(d)] = [np.inf, -np.inf, np.nan][k % 3]
            logp_y = [-3.0, np.inf, np.nan][k % 7 // 5] if k % 7 >= 5 else rng.normal()
            np.testing.assert_array_equal(h._mala_proposal(x, g, eps, sigma),
                                          h._mala_proposal_arrays(x, g, eps, sigma))
            assert h._mala_log_ratio(logp_y, -1.0, eps, g, gy, sigma) == \
                h._mala_log_ratio_arrays(logp_y, -1.0, eps, g, gy, sigma)
            assert h._all_finite(gy) == h._all_finite_loop(gy)
            a, b = [v.copy() for v in (x, p, g)], [v.copy() for v in (x, p, g)]
            lp = h._leapfrog(f, *a, step, minv)
            b[1] += (0.5 * step) * b[2]
            b[0] += step * (minv * b[1])
            assert lp == f(b[0], b[2])
            b[1] += (0.5 * step) * b[2]
            for va, vb in zip(a, b):
                np.testing.assert_array_equal(va, vb)


class PlainGaussian(Target):
    """A user's numpy target (no compiled density): N(0, Σ), Σ_ij = 0.5^|i−j| scaled; its
    gradient is NaN where |x₀| > ``tail`` (non-finite proposals on the way)."""

    name = "plain"

    def __init__(self, dim=10, tail=2.2):
        super().__init__(dim)
        self.tail = tail
        self.precision = np.linalg.inv(0.5 ** np.abs(np.subtract.outer(np.arange(dim), np.arange(dim))))

    def _log_density(self, x):
        return float(-0.5 * x @ (self.precision @ x))

    def _grad_log_density(self, x):
        g = -(self.precision @ x)
        if abs(x[0]) > self.tail:
            g[-1] = np.nan
        return g


def test_numpy_sum_is_np_sum_bit_for_bit():
    """The compiled steps' kinetic energy sums as numpy does (pairwise, eight accumulators)."""
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")

    rng = np.random.default_rng(5)
    for n in [*range(300), 383, 1000, 1031, 8192, 8200, 20011]:
        v = rng.standard_normal(n) * rng.exponential(size=n) * 10.0 ** rng.integers(-3, 4)
        assert jit.numpy_sum(v) == np.sum(v)
    assert str(jit.numpy_sum(np.array([-0.0]))) == str(np.sum(np.array([-0.0])))


def _random_state(rng, d, k):
    """Vectors for one step, with a non-finite log density or gradient entry now and then."""
    x, g, y, gy = (rng.standard_normal(d) for _ in range(4))
    if k % 5 == 1:
        gy[rng.integers(d)] = [np.inf, -np.inf, np.nan][k % 3]
    logp_y = [np.nan, -np.inf, np.inf][k % 3] if k % 7 == 6 else -0.5 * float(y @ y)
    return x, g, y, gy, logp_y


def _same(a, b):
    assert type(a) is type(b) or np.asarray(a).dtype == np.asarray(b).dtype
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("d", [1, 3, 10, 33])
def test_compiled_steps_are_the_python_steps_bit_for_bit(d):
    """A plain-numpy target's Python loop calls, between evaluations, the compiled MALA iteration
    and HMC join: they return and write exactly what the Python functions (numpy) do, from
    burn-in to sampling, non-finite log densities and gradients included."""
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    from ckam_bench.adaptation import dual_averaging
    from ckam_bench.samplers import hamiltonian as h

    rng = np.random.default_rng(d)
    for k in range(40):
        x, g, y, gy, logp_y = _random_state(rng, d, k)
        z, log_u = rng.standard_normal((3, d)), np.log(rng.uniform(size=3))
        i, t0, burn_in = k % 3, 5, [0, 6, 100][k % 3]
        s = np.array([-1.0, rng.normal(-1.0, 1.0), 0.0, 0.0])
        mala = [(i, logp_y, y.copy(), gy.copy(), x.copy(), g.copy(), s.copy(), t0, burn_in, z, log_u,
                 np.array([0.574, 1.0, 0.6]), np.zeros((3, d)), np.zeros(3, dtype=bool), np.zeros((3, 3)))
                for _ in range(2)]
        _same(h._MALA_ITERATION(*mala[0]), h._mala_iteration(*mala[1]))
        w = np.vstack([x, g, y, z[i], gy, rng.uniform(0.5, 2.0, d)])
        s = np.array([-1.0, rng.uniform(0.01, 1.0), rng.normal(), k % 4, 0.0, 0.0, 0.0])
        da = dual_averaging.init(0.3)
        hmc = [(logp_y, i, w.copy(), s.copy(), da.copy(), t0, burn_in, 1 + k % 4, z, log_u,
                np.array([0.65, 0.05, 10.0, 0.75]), np.zeros((3, d)), np.zeros(3, dtype=bool), np.zeros((3, 3)))
               for _ in range(2)]
        _same(h._HMC_JOIN(*hmc[0]), h._hmc_join(*hmc[1]))
        for args in (mala, hmc):
            for a, b in zip(*args):
                _same(a, b)


@pytest.mark.parametrize("make", [lambda: MALA(burn_in=150), lambda: HMC(n_leapfrog=5, burn_in=150),
                                  lambda: NUTS(burn_in=150, max_depth=6)], ids=["mala", "hmc", "nuts"])
@pytest.mark.parametrize("d", [3, 10])
def test_plain_numpy_target_chain_is_the_array_expressions_chain(make, d, monkeypatch):
    """On a target with no compiled density (the Python loops), the chain with the compiled
    steps between evaluations and the chain with the Python helpers (CKAM_BENCH_JIT=0) are bit
    for bit the chain with the plain array expressions and the counted API, in uneven blocks,
    non-finite gradients included."""
    from ckam_bench.samplers import hamiltonian as h
    from ckam_bench.samplers import nuts as nuts_module

    def leapfrog_arrays(f, x, p, g, eps, minv):
        p += (0.5 * eps) * g
        x += eps * (minv * p)
        logp = f(x, g)
        p += (0.5 * eps) * g
        return logp

    def counted_api(target):
        def density_and_grad(x, grad_out):
            logp, grad = target.log_density_and_grad(x)
            grad_out[:] = grad
            return logp
        return density_and_grad

    chains = []
    for switch, arrays in (("1", False), ("0", False), ("0", True)):
        monkeypatch.setenv(jit.ENV, switch)
        if arrays:
            monkeypatch.setattr(h, "_mala_proposal", h._mala_proposal_arrays)
            monkeypatch.setattr(h, "_mala_log_ratio", h._mala_log_ratio_arrays)
            monkeypatch.setattr(h, "_all_finite", h._all_finite_loop)
            monkeypatch.setattr(h, "_leapfrog", leapfrog_arrays)
            monkeypatch.setattr(nuts_module, "_leapfrog", leapfrog_arrays)
            monkeypatch.setattr(h, "counted_density_and_grad", counted_api)
            monkeypatch.setattr(nuts_module, "_all_finite", h._all_finite_loop)
        target, s = PlainGaussian(d), make()
        s.warm_up(target)
        state = s.init(target, None, np.random.default_rng(2))
        assert s._compiled is None and s._compiled_steps == (switch == "1" and jit.AVAILABLE)
        blocks = []
        for n in (1, 120, 89, 140):
            state, b = s.advance(state, n)
            blocks.append(b)
        chains.append((np.concatenate([b.samples for b in blocks]), np.concatenate([b.logp for b in blocks]),
                       np.concatenate([b.accept_prob for b in blocks]), np.concatenate([b.step_size for b in blocks]),
                       sum(b.n_nonfinite for b in blocks), state.x, state.grad, target.n_density, target.n_grad,
                       np.concatenate([b.divergent if b.divergent is not None else np.zeros(b.n, bool)
                                       for b in blocks]), str(s.rng.bit_generator.state)))
    for a, b, c in zip(*chains):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_compiled_steps_draw_the_generators_stream():
    """NUTS's compiled steps draw through the generator's bit generator (next_double at its
    state's address): the uniforms Generator.random() gives, interleaved with Python's draws."""
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    import numba

    from ckam_bench.samplers import nuts as nuts_module

    uniform = numba.njit(lambda rng: nuts_module._uniform(rng))
    for make in (np.random.PCG64, np.random.Philox, np.random.SFC64):
        rng, reference = np.random.Generator(make(9)), np.random.Generator(make(9))
        tree_rng = nuts_module._tree_rng(rng)
        drawn = [uniform(tree_rng) if k % 3 else rng.random() for k in range(30)] + list(rng.random(5))
        assert drawn == [reference.random() for _ in range(30)] + list(reference.random(5))


def _stan_first_turn(ps, across=True):
    """Brute force, Stan ≥ 2.26 by its definition: the first leaf of a subtree built leaf by leaf
    (momenta ``ps``, identity metric) at which a complete binary subtree ending there turns: its
    ends over its ρ, and from 4 leaves its halves' ends across (left's first with right's first
    over ρ_left + p_right_first; left's last with right's last over ρ_right + p_left_last);
    ``across=False``: Stan before 2.26, without the checks across halves."""
    def turns(a, b, rho):
        return not (a @ rho > 0.0 and b @ rho > 0.0)

    for i in range(len(ps)):
        size = 2
        while (i + 1) % size == 0:
            lo, mid = i + 1 - size, i + 1 - size // 2
            if turns(ps[lo], ps[i], ps[lo:i + 1].sum(0)):
                return i
            if across and size >= 4 and (turns(ps[lo], ps[mid], ps[lo:mid].sum(0) + ps[mid])
                              or turns(ps[mid - 1], ps[i], ps[mid:i + 1].sum(0) + ps[mid - 1])):
                return i
            size *= 2
    return None


@pytest.mark.parametrize("switch", ["1", "0"])
def test_subtree_checks_are_stans_with_the_checks_across_halves(switch, monkeypatch):
    """The leaf-by-leaf bookkeeping (momentum and partial ρ at each open subtree's first leaf, the
    last leaf of each complete one) stops at the leaf the recursive definition stops at, on
    momenta that rotate at random rates (turns at every depth, many only across halves)."""
    if switch == "1" and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setenv(jit.ENV, switch)
    from ckam_bench.samplers import nuts_tree as n

    def drive(work, ps, depth, minv):
        """The leaf loop's bookkeeping: the first leaf at which a subtree turns (−1: none)."""
        for leaf in range(ps.shape[0]):
            for j in range(ps.shape[1]):
                work[n._PE, j] = ps[leaf, j]
            n._open_subtrees(work, leaf, depth)
            n._add_row(work, n._RHO_SUB, n._PE)
            if n._subtrees_turn(work, leaf, depth, minv):
                return leaf
        return -1

    if switch == "1":
        import numba

        drive = numba.njit(drive)
    rng = np.random.default_rng(3)
    depth, d = 6, 3
    found = {"late": 0, "across only": 0}
    for _ in range(400):
        rate = rng.uniform(0.02, 1.2)
        t = np.arange(1 << depth)
        ps = np.stack([np.cos(rate * t), np.sin(rate * t), 0.3 * rng.standard_normal(t.size)], 1)
        work = n._nuts_work(depth, d)
        work[n._RHO_SUB] = work[n._ZERO] = 0.0
        stop = drive(work, ps, depth, np.ones(d))
        stop = None if stop < 0 else stop
        expected = _stan_first_turn(ps)
        assert stop == expected
        found["late"] += expected is None or expected >= 15
        found["across only"] += _stan_first_turn(ps, across=False) != expected
    assert found["late"] > 20 and found["across only"] > 20, found


def test_nuts_sees_a_trajectory_circling_an_isotropic_gaussian():
    """On N(0, I₁₀) at ε = 0.8 (what a whitening metric makes of a posterior) the orbit's period
    is ≈ 8 steps; without the checks across halves 39 % of the trees ran to depth 7 (56
    gradients per transition on average). With them every tree stops by depth 3."""
    from ckam_bench.samplers import nuts as n

    from ckam_bench.targets.gaussians import Gaussian

    d = 10
    target = Gaussian(np.zeros(d), np.eye(d), d)
    f = jit.compiled_log_density_and_grad(target) if jit.AVAILABLE else target.log_density_and_grad
    rng = np.random.default_rng(0)
    x = rng.standard_normal(d)
    g = -x.copy()
    logp = -0.5 * x @ x
    work, depths, steps = n._nuts_work(10, d), [], 0
    for _ in range(500):
        logp, _, n_lf, divergent, depth, _, _ = n._nuts_transition(f, x, logp, g, rng.standard_normal(d), np.ones(d),
                                                                    0.8, rng, 10, work)
        depths.append(depth)
        steps += n_lf
        assert not divergent
    assert max(depths) <= 3
    assert steps / 500 < 8
