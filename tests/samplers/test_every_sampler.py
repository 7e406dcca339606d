"""Contracts every sampler config in conf/sampler/*.yaml keeps, on both loops (compiled and
Python) where a sampler has both:

* its chain does not depend on how the runner splits the iterations into blocks (one block
  against several uneven ones, cut at the end of burn-in / adaptation too): same states up to
  round-off;
* every evaluation it makes is counted: a target that counts each call of its density,
  gradient and Hessian primitives independently agrees with the sampler's counters
  (``n_density``, ``n_grad``, ``n_hessian``) on the Python loops, and the compiled loops (which
  call the target's compiled functions, out of the wrapper's reach) report the same counters
  as the Python loops for the same seed.

Each config runs with shortened burn-in / adaptation lengths, so that 400 iterations cross
every phase change."""

import functools
from importlib import resources

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from hydra.utils import instantiate
from omegaconf import OmegaConf

from ckam_bench.targets.base import Target

N = 400
SPLITS = ((N,), (1, 58, 1, 20, 83, 237))  # cuts at 60 (burn-in) and 80 (adaptation)
SHORT = {"burn_in": 60, "burnin": 60, "adapt_iterations": 80, "bank_size": 20, "scout_warmup": 30,
         "subsample_size": 20, "history_size": 200, "rate.until": 70, "cycle.cycle_length": 100,
         "init_buffer": 15, "term_buffer": 10, "base_window": 10, "max_depth": 6, "warmup": 80,
         "refit_every": 20, "num_steps": 400}
TARGETS = ("gauss2d_corr", "horseshoe")  # the first each sampler accepts


def sampler_names():
    root = resources.files("ckam_bench.conf") / "sampler"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


@functools.lru_cache(maxsize=None)  # composed once per worker: the block and count tests share it
def _config(name: str, target: str):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=[f"sampler={name}", f"target={target}"])
        overrides = [f"sampler.{key}={value}" for key, value in SHORT.items()
                     if OmegaConf.select(cfg.sampler, key) is not None]
        return compose("config", overrides=[f"sampler={name}", f"target={target}", *overrides])


def build(name: str):
    """(sampler factory, target factory) for config ``name`` on the first target it accepts (the
    reference-metric NUTS: gauss2d_corr bringing a reference of exact draws)."""
    if name.startswith("nuts_reference"):
        from tests.samplers.test_nuts_fisher import _with_reference

        cfg = _config(name, TARGETS[0])
        return (lambda: instantiate(cfg.sampler)), (lambda: _with_reference(instantiate(cfg.target))[0])
    for target_name in TARGETS:
        cfg = _config(name, target_name)
        target = instantiate(cfg.target)
        if not instantiate(cfg.sampler).skip(target)[0]:
            return (lambda: instantiate(cfg.sampler)), (lambda: instantiate(cfg.target))
    raise AssertionError(f"sampler {name} accepts none of {TARGETS}")


class Counting(Target):
    """A target that forwards to ``inner`` and counts each call of its primitives itself.

    It has no compiled functions, so samplers run their Python loops on it. Capabilities the
    inner target lacks stay missing (the class is built per inner target)."""

    def __new__(cls, inner):
        methods = {}
        if inner.has_gradient:
            methods["_grad_log_density"] = cls._grad
        if inner.has_hessian:
            methods["_hessian_log_density"] = cls._hessian
        return Target.__new__(type(cls.__name__, (cls,), methods))

    def __init__(self, inner):
        Target.__init__(self, inner.dim, inner.start, inner.box)
        self.inner, self.name, self.noisy = inner, inner.name, inner.noisy
        self.calls = {"density": 0, "grad": 0, "hessian": 0}

    def __getattr__(self, key):  # e.g. regression_statistics; never the jit_* factories
        if key.startswith("jit_") or key == "inner":
            raise AttributeError(key)
        return getattr(self.inner, key)

    def describe(self):  # the same distribution: the inner target's settings and reference id
        return self.inner.describe()

    def ckam_reference(self):
        return self.inner.ckam_reference()

    def _log_density(self, x):
        self.calls["density"] += 1
        return self.inner._log_density(x)

    def _log_density_batch(self, X):
        self.calls["density"] += np.asarray(X).shape[0]
        return self.inner._log_density_batch(X)

    def _grad(self, x):
        self.calls["grad"] += 1
        return self.inner._grad_log_density(x)

    def _hessian(self, x):
        self.calls["hessian"] += 1
        return self.inner._hessian_log_density(x)


def run(make_sampler, target, sizes, seed=5):
    sampler = make_sampler()
    sampler.warm_up(target)
    if isinstance(target, Counting):  # warm_up's evaluations (compiling a density) are not the sampler's
        target.calls = dict.fromkeys(target.calls, 0)
    state = sampler.init(target, None, np.random.default_rng(seed))
    samples, accepted = [], []
    for k in sizes:
        state, block = sampler.advance(state, k)
        assert block.n == k
        samples.append(block.samples)
        accepted.append(block.accepted)
    return state, np.concatenate(samples), np.concatenate(accepted)


def counters(target) -> dict:
    return {"density": target.n_density, "grad": target.n_grad, "hessian": target.n_hessian}


JAX_PEERS = ("blackjax_nuts", "numpyro_nuts", "mams", "mclmc", "blackjax_nuts_lowrank", "blackjax_nuts_fisher",
             "blackjax_gist", "nutpie_flow")
"""Their evaluations never pass through the target's primitives (a JAX density; nutpie_flow's
flow adapter calls one too): tests/samplers/test_peers.py counts them against the libraries'
own leapfrog counts."""


SLOW_BLOCKS = ("nutpie_flow",)
"""Its flow fit compiles and trains in JAX at every run (~13-21 s a test): the slow tier."""


def loops(names):
    """(name, loop) pairs: both loops, except for the JAX peers, whose XLA-compiled blocks do
    not read ``CKAM_BENCH_JIT`` (one run covers them; JAX_PEERS)."""
    return [pytest.param(name, loop, marks=pytest.mark.slow if name in SLOW_BLOCKS else [])
            for name in names for loop in ("compiled", "python")
            if not (name in JAX_PEERS and loop == "python")]


@pytest.mark.parametrize(("name", "loop"), loops(sampler_names()))
def test_chain_does_not_depend_on_block_sizes(name, loop, monkeypatch):
    monkeypatch.setenv("CKAM_BENCH_JIT", "1" if loop == "compiled" else "0")
    make_sampler, make_target = build(name)
    (s1, x1, a1), (s2, x2, a2) = (run(make_sampler, make_target(), sizes) for sizes in SPLITS)
    assert x1.shape[0] > 0, f"{name} collected nothing in {N} iterations"
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_allclose(x1, x2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s1.x, s2.x, rtol=1e-10, atol=1e-12)


def evaluating_compiled(target):
    """``target`` whose Python density and gradient return what its compiled
    density-and-gradient returns (the one function NUTS's compiled loops call), so that both
    loops see the same numbers. NUTS's dual averaging, and the metric nutpie's schedule
    recomputes after every draw, amplify the last-bit differences between a target's numpy and
    compiled arithmetic until, by chance, a tree decides differently within 400 iterations
    (NUTS on gauss2d_corr: seed 6 of seeds 0–7; nuts_fisher_stan: seeds 4 and 5); with the same
    numbers the two loops make the same chain (d = 2: to the bit), for every seed."""
    from ckam_bench import jit

    make = getattr(target, "jit_log_density_and_grad", None)
    fn = make() if make is not None and jit.AVAILABLE else None
    if fn is None:
        return target

    def grad(x):
        out = np.empty(target.dim)
        fn(np.ascontiguousarray(x, dtype=float), out)
        return out

    target._log_density = lambda x: fn(np.ascontiguousarray(x, dtype=float), np.empty(target.dim))
    target._grad_log_density = grad
    return target


@pytest.mark.parametrize("name", [n for n in sampler_names() if n not in JAX_PEERS])
def test_every_evaluation_is_counted(name, monkeypatch):
    from ckam_bench.samplers.nuts import NUTS

    make_sampler, make_target = build(name)
    same_numbers = isinstance(make_sampler(), NUTS)
    monkeypatch.setenv("CKAM_BENCH_JIT", "0")
    wrapped = Counting(evaluating_compiled(make_target()) if same_numbers else make_target())
    assert not make_sampler().skip(wrapped)[0], name
    run(make_sampler, wrapped, SPLITS[1])
    assert wrapped.calls == counters(wrapped), name
    python = evaluating_compiled(make_target()) if same_numbers else make_target()
    run(make_sampler, python, SPLITS[1])
    assert counters(python) == wrapped.calls
    monkeypatch.setenv("CKAM_BENCH_JIT", "1")
    compiled = make_target()
    run(make_sampler, compiled, SPLITS[1])
    assert counters(compiled) == counters(python), f"{name}: compiled and Python loops count differently"
