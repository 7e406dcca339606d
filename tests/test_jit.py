"""Compiled loops (numba) against the Python loops they mirror: the switch, the same chain for
the same seed on both paths, non-finite targets, warm-up, and the package without numba."""

from __future__ import annotations

import math
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

from ckam_bench import jit
from ckam_bench.kernels import Matern
from ckam_bench.samplers import adaptive, kameleon, random_walk
from ckam_bench.samplers.adaptive import AdaptiveMetropolis, GlobalAdaptiveMetropolis, RaoBlackwellisedAM
from ckam_bench.samplers.kameleon import KAM, CyclicalKAM
from ckam_bench.samplers.random_walk import RandomWalk
from ckam_bench.schedules import Constant, CyclicalCosine, NoiseDecay, PowerDecay, RobbinsMonro
from ckam_bench.targets import bimodal, gauss2d_corr, gmm2d, gmm32
from tests.samplers.invariance import NonFiniteHalfPlane, Tempered

needs_numba = pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")

TARGETS = {"bimodal": bimodal, "gmm2d": gmm2d, "gmm32": gmm32, "gauss2d_corr": gauss2d_corr}


def make_sampler(name: str, dim: int):
    """The cKAM-table samplers, with short cKAM cycles and a short KAM burn-in."""
    nu = 2.38 / math.sqrt(dim)
    kernel_args = dict(kernel=Matern(2.0, 4.0), step_size=2.0 * nu, subsample_size=20,
                       adaptation=RobbinsMonro(), subsample_prob=PowerDecay())
    return {
        "rw": lambda: RandomWalk(math.sqrt(15.0) if dim == 2 else nu),
        "am": lambda: AdaptiveMetropolis(nu, Constant(0.1)),
        "rbam": lambda: RaoBlackwellisedAM(Constant(0.1 if dim == 2 else 0.001)),
        "gam": lambda: GlobalAdaptiveMetropolis(nu, RobbinsMonro()),
        "ckam": lambda: CyclicalKAM(cycle=CyclicalCosine(300, 0.4), noise=NoiseDecay(horizon=300), **kernel_args),
        "kam": lambda: KAM(noise=NoiseDecay(horizon=600), burnin=200, **kernel_args),
    }[name]()


# Iterations compared, and the relative tolerance on states and diagnostics. Both paths
# evaluate the same formulas; they differ by rounding only (the compiled density sums in
# order where numpy/BLAS may use pairwise sums or FMA; AM, RBAM and GAM factor Σ_t with
# LAPACK in Python and ckam_bench.jit.cholesky_into when compiled). RW and cKAM (reset every
# cycle) keep those differences at 1e-12; the other adaptive samplers feed them back into
# their adaptation, which amplifies them (most while Σ_t is near-singular, e.g. GAM's
# Σ_1 = δδᵀ + ridge·I; KAM's step size through α), so they are compared at looser tolerances,
# while every accept decision must still agree.
ITERATIONS = {"rw": (3000, 1e-12), "am": (3000, 1e-6), "rbam": (3000, 1e-6), "gam": (3000, 1e-6),
              "ckam": (1200, 1e-12), "kam": (600, 1e-8)}


def run(monkeypatch, switch: str, make_target, make, n: int, seed: int = 4):
    """Warm up, init and advance a fresh sampler in two blocks; returns (target, state, block fields)."""
    monkeypatch.setenv(jit.ENV, switch)
    target, sampler = make_target(), make()
    sampler.warm_up(target)
    state = sampler.init(target, None, np.random.default_rng(seed))
    blocks = []
    for k in (n // 3, n - n // 3):
        state, block = sampler.advance(state, k)
        blocks.append(block)
    fields = {f: np.concatenate([getattr(b, f) for b in blocks])
              for f in ("samples", "accepted", "accept_prob", "phase", "step_size", "noise")}
    fields["n_nonfinite"] = sum(b.n_nonfinite for b in blocks)
    fields["n_jitter"] = sum(b.n_jitter for b in blocks)
    return target, state, fields


def assert_same_chain(compiled, python, rtol: float) -> None:
    (t_c, s_c, b_c), (t_p, s_p, b_p) = compiled, python
    assert t_c.n_density == t_p.n_density and (t_c.n_grad, t_p.n_grad) == (0, 0)
    np.testing.assert_array_equal(b_c["accepted"], b_p["accepted"])
    np.testing.assert_array_equal(b_c["phase"], b_p["phase"])
    assert (b_c["n_nonfinite"], b_c["n_jitter"]) == (b_p["n_nonfinite"], b_p["n_jitter"])
    scale = 1.0 + np.abs(b_p["samples"]).max()
    np.testing.assert_allclose(b_c["samples"], b_p["samples"], rtol=rtol, atol=rtol * scale)
    for field in ("accept_prob", "step_size", "noise"):
        np.testing.assert_allclose(b_c[field], b_p[field], rtol=rtol, atol=rtol, err_msg=field)
    np.testing.assert_allclose(s_c.x, s_p.x, rtol=rtol, atol=rtol * scale)
    assert s_c.logp == pytest.approx(s_p.logp, rel=rtol, abs=rtol)


# ------------------------------------------------------------------------------ the switch
@pytest.mark.parametrize("value, on", [(None, True), ("1", True), ("yes", True), ("0", False),
                                       ("false", False), (" OFF ", False), ("no", False)])
def test_switch(monkeypatch, value, on):
    if value is None:
        monkeypatch.delenv(jit.ENV, raising=False)
    else:
        monkeypatch.setenv(jit.ENV, value)
    assert jit.enabled() is (on and jit.AVAILABLE)
    target = gmm2d()
    assert (jit.compiled_log_density(target) is not None) is (on and jit.AVAILABLE)
    assert jit.compiled_log_density(Tempered(target, 0.5)) is None  # a target without jit_log_density


# ------------------------------------------------------------------------------ same chains
@needs_numba
@pytest.mark.parametrize("target_name", list(TARGETS))
@pytest.mark.parametrize("sampler_name", list(ITERATIONS))
def test_compiled_and_python_loops_give_the_same_chain(monkeypatch, sampler_name, target_name):
    make_target = TARGETS[target_name]
    dim = make_target().dim
    n, rtol = ITERATIONS[sampler_name]
    make = lambda: make_sampler(sampler_name, dim)  # noqa: E731
    compiled = run(monkeypatch, "1", make_target, make, n)
    python = run(monkeypatch, "0", make_target, make, n)
    assert_same_chain(compiled, python, rtol)
    assert compiled[2]["accepted"].any() and not compiled[2]["accepted"].all()


@needs_numba
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "+inf", "-inf"])
@pytest.mark.parametrize("sampler_name", ["rw", "am", "rbam", "gam", "ckam", "kam"])
def test_nonfinite_densities_behave_the_same_on_both_paths(monkeypatch, sampler_name, value):
    """NonFiniteHalfPlane has a compiled density: NaN / ±inf proposals are counted rejections on
    both paths, with the same chain."""
    make_target = lambda: NonFiniteHalfPlane(dim=2, value=value)  # noqa: E731
    make = lambda: make_sampler(sampler_name, 2)  # noqa: E731
    n, rtol = 1500 if sampler_name != "kam" else 600, ITERATIONS[sampler_name][1]
    compiled = run(monkeypatch, "1", make_target, make, n)
    python = run(monkeypatch, "0", make_target, make, n)
    assert_same_chain(compiled, python, rtol)
    _, _, fields = compiled
    assert fields["n_nonfinite"] > 20
    assert np.all(fields["samples"][:, 0] >= 0.0)
    assert np.sum(fields["accept_prob"] == 0.0) >= fields["n_nonfinite"]


@needs_numba
@pytest.mark.parametrize("sampler_name", ["rw", "gam", "ckam"])
def test_compiled_chain_does_not_depend_on_block_sizes(monkeypatch, sampler_name):
    monkeypatch.setenv(jit.ENV, "1")
    results = []
    for sizes in ([1000], [1, 299, 350, 350]):
        sampler, target = make_sampler(sampler_name, 2), bimodal()
        state = sampler.init(target, None, np.random.default_rng(8))
        blocks = []
        for n in sizes:
            state, block = sampler.advance(state, n)
            blocks.append(block)
        fields = [np.concatenate([getattr(b, f) for b in blocks]) for f in ("samples", "accepted", "accept_prob")]
        results.append((state, target.n_density, fields))
    (s1, c1, f1), (s2, c2, f2) = results
    for a, b in zip(f1, f2):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(s1.x, s2.x)
    assert s1.logp == s2.logp and c1 == c2 == 1001


# ------------------------------------------------------------------------------ warm-up
@needs_numba
@pytest.mark.parametrize("sampler_name", ["rw", "am", "ckam", "kam"])
def test_warm_up_compiles_without_touching_counters_or_the_run_generator(monkeypatch, sampler_name):
    monkeypatch.setenv(jit.ENV, "1")
    target, sampler = gmm32(dim=3), make_sampler(sampler_name, 3)
    rng = np.random.default_rng(0)
    sampler.warm_up(target)
    assert (target.n_density, target.n_grad) == (0, 0)
    state = sampler.init(target, None, rng)
    state, _ = sampler.advance(state, 400)
    generator_state, counts = rng.bit_generator.state, (target.n_density, target.n_grad)
    sampler.warm_up(target)
    assert rng.bit_generator.state == generator_state and (target.n_density, target.n_grad) == counts
    for kernel in (random_walk._rw_kernel, adaptive._adaptive_kernel):
        if kernel._dispatcher is not None:  # one signature, nothing compiled inside the runs
            assert len(kernel._dispatcher.signatures) == 1
    if sampler_name in ("kam", "ckam"):  # d > 2: the compiled Cholesky branch, compiled by warm_up
        compiled = len(kameleon._log_normal_cholesky.signatures)
        assert compiled >= 1
        sampler.advance(state, 200)
        assert len(kameleon._log_normal_cholesky.signatures) == compiled


@needs_numba
def test_no_warnings_when_compiling_a_new_target(monkeypatch):
    monkeypatch.setenv(jit.ENV, "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("rw", "gam", "ckam"):
            target, sampler = bimodal(weights=(0.3, 0.7)), make_sampler(name, 2)
            sampler.warm_up(target)
            state = sampler.init(target, None, np.random.default_rng(1))
            sampler.advance(state, 500)


# ------------------------------------------------------------------------------ without numba
CHAIN_DIGEST = """
import hashlib, sys
import numpy as np
{block_numba}
from ckam_bench import jit
from tests.test_jit import make_sampler
from ckam_bench.targets import bimodal
print(jit.AVAILABLE, jit.enabled())
for name in ("rw", "am", "rbam", "gam", "ckam", "kam"):
    sampler, target = make_sampler(name, 2), bimodal()
    sampler.warm_up(target)
    state, block = sampler.advance(sampler.init(target, None, np.random.default_rng(2)), 700)
    print(name, target.n_density, hashlib.sha256(block.samples.tobytes() + block.accept_prob.tobytes()).hexdigest())
"""


def chain_digests(block_numba: bool, env: dict) -> list[str]:
    code = CHAIN_DIGEST.format(block_numba="sys.modules['numba'] = None" if block_numba else "")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # what a new interpreter imports: a new interpreter (never tests/clirun.py's forks)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root,
                         check=True)
    return out.stdout.split()


def test_without_numba_the_python_loops_run_the_same_chain():
    """numba missing (its import blocked) runs what CKAM_BENCH_JIT=0 runs: the same chains,
    bit for bit, and the same counts."""
    env = {k: v for k, v in os.environ.items() if k != jit.ENV}
    without = chain_digests(True, env)
    switched_off = chain_digests(False, {**env, jit.ENV: "0"})
    assert without[:2] == ["False", "False"] and switched_off[:2] == [str(jit.AVAILABLE), "False"]
    assert without[2:] == switched_off[2:] and len(without) == 2 + 3 * 6


_HELPER = "from ckam_bench import jit\n\n\n@jit.helper\ndef value():\n    return {}\n"
_KERNEL = ("from ckam_bench import jit\nfrom pkg import helpers\n\n\n@jit.helper\n"
           "def kernel():\n    return helpers.value() + 0.0\n")
_RUN = """
import pathlib, sys
from ckam_bench import jit
from numba.core import caching
jit.PACKAGE = pathlib.Path(sys.argv[1]).resolve() / "pkg"  # the package whose source stamps the cache
jit.source_digest.cache_clear()
if sys.argv[2] == "numba":  # numba's own stamp only: the defining file's mtime and size
    caching.CacheImpl._locator_classes.remove(jit.PackageCacheLocator)
    caching.CacheImpl._locator_classes.remove(jit.PluginSourceLocator)
sys.path.insert(0, sys.argv[1])
from pkg import kernels
value = kernels.kernel()
print(sum(kernels.kernel.stats.cache_hits.values()), value)
"""


@needs_numba
@pytest.mark.parametrize("stamp", ["package", "numba"])
def test_a_cached_kernel_recompiles_when_a_helper_of_another_module_changes(tmp_path, stamp):
    """A kernel cached on disk calls a helper of another module; the helper changes (an update
    in place, e.g. ``git pull``) and the kernel's own file does not. numba's stamp alone keeps
    the kernel's stale code (the control); the package-source stamp recompiles it."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(_HELPER.format("1.0"))
    (package / "kernels.py").write_text(_KERNEL)
    script = tmp_path / "run.py"
    script.write_text(_RUN)

    env = {**{k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"},  # numba's cache beside the source
           jit.COMPILED_CACHE_ENV: str(tmp_path / "cache")}

    def value():
        done = subprocess.run([sys.executable, str(script), str(tmp_path), stamp], capture_output=True,
                              text=True, check=True, cwd=tmp_path, env=env)
        return float(done.stdout.split()[-1])

    assert value() == 1.0
    cached = (tmp_path / "cache").rglob("kernels.kernel-*.nbi") if stamp == "package" \
        else (package / "__pycache__").glob("kernels.kernel-*.nbi")
    assert list(cached)  # cached on disk
    (package / "helpers.py").write_text(_HELPER.format("22.0"))
    assert value() == (22.0 if stamp == "package" else 1.0)


@needs_numba
def test_a_fresh_copy_of_the_same_source_loads_the_compiled_cache(tmp_path):
    """The package's cache is keyed by content, not by place: the same source in another folder
    (a fresh clone, a reinstall), with new modification times, loads what the first compiled;
    an edit of a module above the compiled code (the engine, the report) keeps it too."""
    env = {**os.environ, jit.COMPILED_CACHE_ENV: str(tmp_path / "cache")}
    script = tmp_path / "run.py"
    script.write_text(_RUN)

    def hits_and_value(root):
        done = subprocess.run([sys.executable, str(script), str(root), "package"], capture_output=True,
                              text=True, check=True, cwd=root, env=env)
        return [float(v) for v in done.stdout.split()[-2:]]

    for clone in ("first", "second"):
        package = tmp_path / clone / "pkg"
        (package / "engine").mkdir(parents=True)
        for name, text in (("__init__.py", ""), ("helpers.py", _HELPER.format("3.0")), ("kernels.py", _KERNEL),
                           ("engine/__init__.py", ""), ("engine/runner.py", f"# {clone}\n")):
            (package / name).write_text(text)
    assert hits_and_value(tmp_path / "first") == [0.0, 3.0]  # compiled
    assert hits_and_value(tmp_path / "second") == [1.0, 3.0]  # loaded, though engine/runner.py differs
    (tmp_path / "second" / "pkg" / "helpers.py").write_text(_HELPER.format("4.0"))
    assert hits_and_value(tmp_path / "second") == [0.0, 4.0]  # a reachable edit recompiles


def test_the_floors_above_the_compiled_code_are_the_houses():
    """:data:`jit.ABOVE_THE_LOOPS` (left out of the cache's stamp) is exactly the floors from the
    engine up (tests/test_house.py, whose floors import downward only), and none of it compiles."""
    from tests.test_house import FLOORS

    above = [prefix for name, prefixes in FLOORS[[n for n, _ in FLOORS].index("engine"):] for prefix in prefixes]
    as_paths = {p.replace(".", "/") + ("" if (jit.PACKAGE / p.replace(".", "/")).is_dir() else ".py")
                for p in above if p} | {"__init__.py"}
    assert as_paths == set(jit.ABOVE_THE_LOOPS)
    for relative in jit.ABOVE_THE_LOOPS:
        path = jit.PACKAGE / relative
        for file in (path.rglob("*.py") if path.is_dir() else [path]):
            if relative == "__init__.py" and file != jit.PACKAGE / "__init__.py":
                continue
            text = file.read_text()
            for mark in ("@jit.helper", "@jit.kernel", "jit.Kernel(", "njit", "cfunc", "jit.helper(", "jit.kernel("):
                assert mark not in text, f"{file}: compiled code above the loops ({mark})"


@needs_numba
def test_the_package_kernels_are_stamped_with_the_package_source():
    from numba.core import caching

    from ckam_bench.samplers import nuts_adaptation

    kernel = next(iter(nuts_adaptation._KERNELS.values()))
    kernel.compile()
    locator = kernel._dispatcher._cache._impl.locator
    assert isinstance(locator, jit.PackageCacheLocator)
    assert locator.get_source_stamp() == jit.source_digest()
    assert pathlib.Path(locator.get_cache_path()).is_relative_to(jit.compiled_cache_dir())
    assert caching.CacheImpl._locator_classes.count(jit.PackageCacheLocator) == 1


_KEYED = """
import sys
import numba
from ckam_bench import jit

FACTOR = float(sys.argv[1])
inner = numba.njit(lambda v: v * FACTOR)
source = '''
def times(v):
    return inner(v)
'''
c = jit.keyed_cfunc(source, "times", {"inner": inner}, numba.types.float64(numba.types.float64), sys.argv[2])
print(c.cache_hits, c.ctypes(2.0))
"""


def test_a_keyed_cfunc_is_loaded_by_its_key(tmp_path):
    """keyed_cfunc's disk cache answers to the key its caller gives (for a PyMC model, pytensor's
    key of the graph): the same key loads the compiled function in a new process, another key
    compiles its own. The key is the caller's promise that it names everything the function
    reaches: here a changed callee under the same key would load the old code, which is why the
    PyMC target's key is pytensor's key of the compiled graph."""
    script = tmp_path / "keyed.py"
    script.write_text(_KEYED)
    env = {**os.environ, jit.COMPILED_CACHE_ENV: str(tmp_path / "cache")}

    def run(factor, key):
        done = subprocess.run([sys.executable, str(script), factor, key], capture_output=True,
                              text=True, check=True, env=env, cwd=tmp_path)
        hits, value = done.stdout.split()
        return int(hits), float(value)

    assert run("3", "a") == (0, 6.0)  # compiled
    assert run("3", "a") == (1, 6.0)  # loaded
    assert run("5", "b") == (0, 10.0)  # another key: compiled


def test_a_keyed_cfunc_numba_cannot_cache_is_compiled_in_memory(tmp_path, monkeypatch):
    """A function numba refuses to cache (here it reads a non-contiguous constant array, which
    numba embeds as a pointer: "dynamic globals") still compiles and runs, uncached, with numba's
    warning; it used to raise AttributeError from numba's warning (no ``_py_file`` on the
    locator), after a certification's route 1 had run 20 minutes (election88_full)."""
    import numba

    monkeypatch.setenv(jit.COMPILED_CACHE_ENV, str(tmp_path / "cache"))
    source = "def times(v):\n    return v * A.sum()\n"
    with pytest.warns(numba.NumbaWarning, match="Cannot cache compiled function"):
        c = jit.keyed_cfunc(source, "times", {"A": np.arange(12.0)[::3]}, numba.types.float64(numba.types.float64),
                            "non-contiguous")  # A = 0, 3, 6, 9, a strided view
    assert c.ctypes(2.0) == 36.0 and c.cache_hits == 0
