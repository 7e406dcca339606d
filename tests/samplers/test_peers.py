"""Peer samplers (nutpie, NumPyro NUTS, BlackJAX NUTS): JAX densities against the targets'
numpy densities, gradient accounting against the libraries' own counts, budgets, resume (and
nutpie's clean restart), the missing-extra error, declining targets, stationarity."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ckam_bench.engine import store
from ckam_bench.engine.runner import Budget, Runner
from ckam_bench.samplers import nutpie_flow, peers
from ckam_bench.targets.banana import Banana
from ckam_bench.targets.gaussians import gauss2d_corr, gp51, neal100
from ckam_bench.targets.logistic import LogisticRegression
from ckam_bench.targets.mixtures import bimodal, gmm2d, gmm32
from tests.samplers.invariance import assert_stationary, check_moments, run_chains
from tests import clirun

jax = pytest.importorskip("jax")  # the optional extra; CI installs it (.ci/run), so this never skips there

SAMPLERS = {"numpyro_nuts": peers.NumPyroNUTS, "blackjax_nuts": peers.BlackJAXNUTS, "nutpie": peers.Nutpie}
JAX_SAMPLERS = ("numpyro_nuts", "blackjax_nuts")
TARGETS = {"gauss2d_corr": gauss2d_corr, "neal100": neal100, "gp51": gp51, "gmm2d": gmm2d,
           "bimodal": bimodal, "gmm32": gmm32, "banana": lambda: Banana(b=0.1, v=100.0, dim=8),
           "logistic_german": lambda: LogisticRegression("german"),
           "logistic_ripley": lambda: LogisticRegression("ripley")}
GAUSS = gauss2d_corr()  # one instance for the runs below: the JAX peers compile once per target instance


# ---------------------------------------------------------------------------- JAX densities
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_jax_density_and_gradient_equal_the_targets(name):
    target = TARGETS[name]()
    f = target.jax_log_density()
    assert target.has_jax_density and f is not None
    value_and_grad = jax.jit(jax.value_and_grad(f))
    rng = np.random.default_rng(0)
    spread = np.sqrt(target.variance) if target.variance is not None else np.ones(target.dim) * 0.3
    for x in [target.start, *(target.start + spread * rng.standard_normal((4, target.dim)))]:
        value, grad = value_and_grad(np.asarray(x, float))
        assert float(value) == pytest.approx(target._log_density(x), rel=1e-10, abs=1e-10)
        expected = target._grad_log_density(x)
        np.testing.assert_allclose(np.asarray(grad), expected, rtol=1e-10,
                                   atol=1e-10 * max(1.0, np.abs(expected).max()))


@pytest.mark.parametrize("model", ["halfnormal", "beta", "hierarchical", "gamma_poisson"])
def test_pymc_targets_have_a_jax_density_through_pytensor(model):
    """Every PyMC target has a JAX density (pytensor's JAX backend), equal to its compiled one."""
    pytest.importorskip("pymc")  # the pymc extra; CI installs it
    from ckam_bench.targets.pymc import PyMCModel

    target = PyMCModel(f"tests.pymc_models:{model}")
    assert target.has_jax_density
    value_and_grad = jax.jit(jax.value_and_grad(target.jax_log_density()))
    rng = np.random.default_rng(1)
    for x in [target.start, *(target.start + 0.3 * rng.standard_normal((3, target.dim)))]:
        value, grad = value_and_grad(np.asarray(x, float))
        assert float(value) == pytest.approx(target._log_density(x), rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(np.asarray(grad), target._grad_log_density(x), rtol=1e-9,
                                   atol=1e-10)
    sampler = peers.NumPyroNUTS(burn_in=50)  # and a JAX peer runs on it
    state = sampler.init(target, None, np.random.default_rng(0))
    state, block = sampler.advance(state, 100)
    assert block.n == 100 and np.all(np.isfinite(block.samples))


JAX_DEVICES = """
import os, sys
os.environ.pop("XLA_FLAGS", None)
from ckam_bench.targets.pymc import PyMCModel
import numpy as np
f = PyMCModel("tests.pymc_models:hierarchical").jax_log_density()
import jax
f(np.zeros(len(PyMCModel("tests.pymc_models:hierarchical").start)))
print(len(jax.devices("cpu")), os.environ.get("XLA_FLAGS"))
"""


def test_a_pymc_models_jax_density_leaves_jax_one_cpu_device():
    """Importing PyMC's JAX bridge sets XLA_FLAGS to 100 host devices; the harness's import must
    not: with 100 devices a JAX peer's compiled loop hops between ~200 threads and its CPU time
    per gradient varies 1-7x from run to run of the same executable."""
    pytest.importorskip("pymc")
    proc = clirun.run([sys.executable, "-c", JAX_DEVICES], capture_output=True, text=True,
                      timeout=300, cwd=Path(__file__).parents[2])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1", "None"], proc.stdout


def test_targets_without_a_jax_density_are_declined():
    from ckam_bench.targets.flower import Flower

    target = Flower()
    assert not target.has_jax_density and target.jax_log_density() is None
    for name in JAX_SAMPLERS:
        skip, why = SAMPLERS[name]().skip(target)
        assert skip and "JAX log density" in why and "flower" in why
    assert not peers.Nutpie().skip(target)[0]  # nutpie only needs a gradient
    skip, why = peers.Nutpie(mass_matrix="flow").skip(target)  # its flow adapter needs JAX's
    assert skip and "JAX log density" in why and "flower" in why


OWN_OP_MODEL = """
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op


class Square(Op):  # a model's own Op, computed by numpy (as an ODE solver would be)
    def make_node(self, x):
        x = pt.as_tensor(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = np.asarray(inputs[0] ** 2)

    def grad(self, inputs, grads):
        return [2 * inputs[0] * grads[0]]


class ConvertedSquare(Square):  # the same with a JAX conversion registered by its author
    pass


def register():
    from pytensor.link.jax.dispatch import jax_funcify

    @jax_funcify.register(ConvertedSquare)
    def _square(op, **kwargs):
        return lambda x: x**2


def own(op=Square):
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, shape=2)
        pm.Potential("p", -0.5 * op()(x).sum())
    return model


def converted():
    register()
    return own(ConvertedSquare)
"""


def test_pymc_models_with_an_op_jax_cannot_convert_are_declined(tmp_path):
    """A PyMC model with an Op of its own that pytensor's JAX backend cannot convert (the suite's
    ODE models: one_comp_mm_elim_abs) has no JAX density: the JAX peers decline it with one line
    naming the Op, instead of failing in their warm-up; with a conversion registered, they run."""
    pytest.importorskip("pymc")
    from ckam_bench.targets.pymc import PyMCModel

    path = tmp_path / "own_op.py"
    path.write_text(OWN_OP_MODEL)
    target = PyMCModel(f"{path}:own")
    assert not target.has_jax_density
    for name in JAX_SAMPLERS:
        skip, why = SAMPLERS[name]().skip(target)
        assert skip and "its Op Square has no JAX conversion" in why and "\n" not in why, why
    assert not peers.Nutpie().skip(target)[0]  # nutpie only needs a gradient
    converted = PyMCModel(f"{path}:converted")
    assert converted.has_jax_density
    value = jax.jit(converted.jax_log_density())(np.array([1.0, 2.0]))
    assert float(value) == pytest.approx(converted._log_density(np.array([1.0, 2.0])), rel=1e-12)


# ---------------------------------------------------------------------------- accounting
class _CountedGaussian(type(gauss2d_corr())):
    """gauss2d_corr whose JAX density counts its own evaluations (a host callback per call)."""

    def jax_log_density(self):
        f, counter = super().jax_log_density(), self.counter

        def counted(x):
            jax.debug.callback(lambda: counter.append(1))
            return f(x)

        return counted


def _counted_target():
    base = gauss2d_corr()
    target = _CountedGaussian.__new__(_CountedGaussian)
    target.__dict__.update(base.__dict__)
    target.counter = []
    return target


@pytest.mark.parametrize("name", JAX_SAMPLERS)
def test_jax_gradient_count_equals_the_evaluations_the_library_made(name):
    """The harness counts 1 + Σ leapfrog steps from the library's statistics; the density itself
    counts the evaluations the library really made (warm-up included): they are equal."""
    target = _counted_target()
    sampler = SAMPLERS[name](burn_in=150)
    sampler.warm_up(target)
    target.counter.clear()  # compilation traces the density, it evaluates nothing
    state = sampler.init(target, None, np.random.default_rng(1))
    for n in (100, 123):
        state, block = sampler.advance(state, n)
    assert target.n_grad == target.n_density - 1 == len(target.counter) > 223  # + the harness's start check
    assert state.t == 223 and block.samples.shape == (73, 2) and np.all(np.isfinite(block.logp))


def _nutpie_steps(sampler) -> int:
    """Σ n_steps over every draw in nutpie's own trace (warm-up included), once the last draw
    handed to the harness is in it (nutpie records a draw just after expanding it)."""
    for _ in range(100):
        trace = sampler._background.inspect()
        steps = np.concatenate([trace.warmup_sample_stats.n_steps.values.ravel(),
                                trace.sample_stats.n_steps.values.ravel()])
        steps = steps[np.isfinite(steps)] if steps.dtype.kind == "f" else steps
        if steps.size == sampler._gate.done:
            return int(steps.sum())
        time.sleep(0.05)
    raise AssertionError(f"nutpie's trace holds {steps.size} draws, the harness got {sampler._gate.done}")


def test_nutpie_gradient_count_is_its_leapfrog_steps_plus_its_start():
    """nutpie's evaluations are counted as its density calls: its own Σ n_steps plus a fixed
    number at the start (the start point and its initial step-size search), the same after 300
    or 600 draws."""
    extra = []
    for n in (300, 600):
        target = gauss2d_corr()
        sampler = peers.Nutpie(burn_in=200)
        state = sampler.init(target, np.array([0.5, -0.3]), np.random.default_rng(4))
        state, block = sampler.advance(state, n)
        assert block.n == n and block.samples.shape == (n - 200, 2)
        assert target.n_density == target.n_grad + 1  # + the harness's check of the start
        extra.append(target.n_grad - _nutpie_steps(sampler))
    assert extra[0] == extra[1] and 0 < extra[0] < 50


def test_nutpie_low_rank_mass_matrix():
    """sampler=nutpie_lowrank: nutpie's low-rank modified mass matrix. On gp51 (a Gaussian with
    strongly correlated neighbours) it needs far fewer gradients per draw than the diagonal one
    (evaluation counts, which no load distorts); the counts stay nutpie's own."""
    per_draw = {}
    for mass_matrix in ("diag", "low_rank"):
        target = gp51()
        sampler = peers.Nutpie(burn_in=300, mass_matrix=mass_matrix)
        sampler.warm_up(target)
        state = sampler.init(target, np.asarray(target.start, float), np.random.default_rng(5))
        state, block = sampler.advance(state, 800)
        assert sampler.describe()["mass_matrix"] == mass_matrix
        assert target.n_grad - _nutpie_steps(sampler) < 50  # nutpie's Σ n_steps + its start
        per_draw[mass_matrix] = _nutpie_steps(sampler) / 800
    assert per_draw["low_rank"] < 0.5 * per_draw["diag"], per_draw
    with pytest.raises(ValueError, match="mass_matrix must be one of diag, low_rank, flow"):
        peers.Nutpie(mass_matrix="dense")


def test_nutpie_adaptation_keywords_of_each_release():
    """nutpie.sample's keyword for each mass matrix: ``adaptation=`` from 0.16.9, the booleans
    before (0.16.8, the Python 3.11 line)."""
    def new(model, adaptation="diag"):
        pass

    def old(model, low_rank_modified_mass_matrix=False, transform_adapt=False):
        pass

    for sample, expect in ((new, {"flow": {"adaptation": "flow"}, "diag": {"adaptation": "diag"}}),
                           (old, {"flow": {"transform_adapt": True},
                                  "low_rank": {"low_rank_modified_mass_matrix": True}})):
        for mass_matrix, keywords in expect.items():
            assert peers.nutpie_adaptation(type("nutpie", (), {"sample": staticmethod(sample)}), mass_matrix) \
                == keywords


@pytest.mark.slow  # nutpie fits its flow in JAX on the CPU: ~15-25 CPU-s a chain here
def test_nutpie_flow_counts_every_gradient_and_keeps_pi():
    """sampler=nutpie_flow: nutpie's normalizing-flow adaptation. Every gradient nutpie takes
    goes through the flow adapter's JAX density and is counted there (nutpie's own Σ n_steps plus
    its start), each draw's log density is the target's, the flow learns the correlation of
    gauss2d_corr (ρ = 0.99: far fewer gradients a draw than the diagonal metric), and chains
    started at exact draws keep its moments through warm-up and after."""
    target = gauss2d_corr()
    per_draw = {}
    for mass_matrix in ("diag", "flow"):
        target = gauss2d_corr()
        sampler = peers.Nutpie(burn_in=1000, mass_matrix=mass_matrix)
        sampler.warm_up(target)
        state = sampler.init(target, np.array([0.3, -0.2]), np.random.default_rng(5))
        state, block = sampler.advance(state, 1500)
        assert target.n_grad - _nutpie_steps(sampler) in range(1, 50)  # nutpie's Σ n_steps + its start
        per_draw[mass_matrix] = _nutpie_steps(sampler) / 1500
    assert sampler.describe()["density"] == nutpie_flow.LABEL and sampler.describe()["flowjax"]
    np.testing.assert_allclose(block.logp[-50:], [target._log_density(x) for x in block.samples[-50:]], rtol=1e-9)
    assert per_draw["flow"] < 0.5 * per_draw["diag"], per_draw
    samples, _ = run_chains(lambda: peers.Nutpie(burn_in=1000, mass_matrix="flow"), GAUSS, 3, 2000, seed=7)
    check_moments(samples, GAUSS.mean, GAUSS.variance)


def _native_run(target, n=600, burn_in=200):
    sampler = peers.Nutpie(burn_in=burn_in)
    sampler.warm_up(target)
    state = sampler.init(target, np.asarray(target.start, float) + 0.1, np.random.default_rng(4))
    state, block = sampler.advance(state, n)
    return sampler, state, block


def test_nutpie_calls_the_compiled_density_without_python(monkeypatch):
    """A target with a compiled density is handed to nutpie as a C callback: nutpie's
    from_pyfunc (a Python call per evaluation) is never used, the counts stay exact and each
    draw's log density is the target's there."""
    import nutpie.compiled_pyfunc

    def refuse(*args, **kwargs):
        raise AssertionError("from_pyfunc: a Python call per density evaluation")

    monkeypatch.setattr(nutpie.compiled_pyfunc, "from_pyfunc", refuse)
    target = LogisticRegression("ripley")
    sampler, state, block = _native_run(target)
    assert sampler.describe()["density"] == peers.HARNESS_COMPILED
    assert target.n_density == target.n_grad + 1 and target.n_grad - _nutpie_steps(sampler) in range(1, 50)
    np.testing.assert_allclose(block.logp[-50:], [target._log_density(x) for x in block.samples[-50:]],
                               rtol=1e-12)
    assert state.logp == block.logp[-1] and block.n_nonfinite == 0


def test_nutpie_falls_back_to_a_python_callback_without_a_compiled_density(monkeypatch):
    monkeypatch.setenv("CKAM_BENCH_JIT", "0")
    target = gauss2d_corr()
    sampler, state, block = _native_run(target)
    assert sampler.describe()["density"] == peers.PYTHON_CALLBACK
    assert target.n_density == target.n_grad + 1 and target.n_grad - _nutpie_steps(sampler) in range(1, 50)
    assert np.all(np.isfinite(block.logp))


@pytest.mark.slow  # nutpie compiles the PyMC model with numba (several seconds)
def test_nutpie_runs_a_pymc_model_through_its_own_numba_compilation(monkeypatch):
    """A PyMC target runs on nutpie's compile_pymc_model(backend="numba") logp, counted exactly;
    a target whose data differ from the model's compiled ones, or a model nutpie cannot compile,
    runs on the harness's compiled density (and says why)."""
    pytest.importorskip("pymc")
    import nutpie
    import nutpie.compiled_pyfunc

    from ckam_bench.targets.pymc import PyMCModel

    monkeypatch.setattr(nutpie.compiled_pyfunc, "from_pyfunc", None)
    target = PyMCModel("tests.pymc_models:hierarchical")
    sampler, state, block = _native_run(target)
    assert sampler.describe()["density"] == peers.NUTPIE_NUMBA
    assert target.n_density == target.n_grad + 1 and target.n_grad - _nutpie_steps(sampler) in range(1, 50)
    np.testing.assert_allclose(block.logp[-20:], [target._log_density(x) for x in block.samples[-20:]],
                               rtol=1e-10)
    other = PyMCModel("tests.pymc_models:hierarchical")
    other.buffer[:] += 1.0  # other data than the model nutpie compiled
    sampler, _, _ = _native_run(other, n=50, burn_in=20)
    assert sampler.describe()["density"] == peers.HARNESS_COMPILED and sampler.describe()["density_note"]

    def refuse(*args, **kwargs):
        raise NotImplementedError("an op numba cannot compile")

    monkeypatch.setattr(peers, "_NUTPIE_MODELS", {})
    monkeypatch.setattr(nutpie, "compile_pymc_model", refuse)
    sampler, _, block = _native_run(PyMCModel("tests.pymc_models:hierarchical"), n=50, burn_in=20)
    assert sampler.describe()["density"] == peers.HARNESS_COMPILED and block.n == 50
    assert "could not compile" in sampler.describe()["density_note"]


@pytest.mark.slow  # compiles mesquite twice (nutpie's and the harness's numba) and times both
def test_nutpie_per_gradient_cost_is_nutpies_own():
    """CPU per gradient in the harness against nutpie as its users run a PyMC model
    (compile_pymc_model(backend="numba") + sample), side by side: the Python-callback bridge
    cost 3.4-6x; the goal is 1.1x, tested with room for a loaded machine."""
    pytest.importorskip("pymc")
    import nutpie

    from ckam_bench.targets.pymc import PyMCModel

    target = PyMCModel("ckam_bench.posteriordb.models:mesquite")
    sampler = peers.Nutpie(burn_in=300)
    sampler.warm_up(target)
    compiled = next(v for k, v in peers._NUTPIE_MODELS.items() if k[0] == target.spec)
    ratios = []
    for _ in range(3):  # the smallest ratio: a pair that other processes did not disturb
        c0 = time.process_time()
        trace = nutpie.sample(compiled, draws=2700, tune=300, chains=1, cores=1, seed=1, progress_bar=False)
        direct = (time.process_time() - c0) / int(trace.warmup_sample_stats.n_steps.sum()
                                                   + trace.sample_stats.n_steps.sum())
        target.reset_counters()
        state = sampler.init(target, None, np.random.default_rng(0))
        c0 = time.process_time()
        sampler.advance(state, 3000)
        harness = (time.process_time() - c0) / target.n_grad
        ratios.append(harness / direct)
    assert sampler.describe()["density"] == peers.NUTPIE_NUMBA
    assert min(ratios) < 1.5, ratios


FIRST_RUN = """
import json, sys, tempfile
from pathlib import Path
import numpy as np, pandas as pd
from ckam_bench.engine import store
from ckam_bench.engine.runner import Budget, Runner
from ckam_bench.samplers import nutpie_flow, peers
from ckam_bench.targets.gaussians import gauss2d_corr
make = {"nutpie": peers.Nutpie, "numpyro_nuts": peers.NumPyroNUTS, "blackjax_nuts": peers.BlackJAXNUTS}[sys.argv[1]]
out = []
with tempfile.TemporaryDirectory() as tmp:
    for i in range(2):
        target, folder = gauss2d_corr(), Path(tmp) / str(i)
        labels = {"run_id": "r", "target": target.name, "sampler": sys.argv[1], "kernel": "none", "seed": 0}
        Runner(make(burn_in=100), target, {}, Budget(600, max_iterations=400, clock="cpu"), folder,
               np.random.default_rng(i), labels, x0=np.array([0.4, -0.3]), checkpoints=np.array([200.0, 400.0]),
               progress=False, checkpoint_unit="iterations", status_extra={"config_hash": "t"}).run()
        trace = pd.read_parquet(folder / store.TRACE)
        out.append(float(trace[trace.iterations > 0].sampler_cpu_seconds.iloc[0]))
print(json.dumps(out))
"""


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n == "nutpie" else pytest.mark.slow)
                                  for n in sorted(SAMPLERS)])
def test_first_run_in_a_process_costs_what_a_second_run_costs(name):
    """Imports and compilation happen in the untimed warm_up: the first run in a fresh process
    reaches its first checkpoint at the sampler CPU time of a second run (importing nutpie on
    the clock cost 1.4 CPU-s)."""
    proc = clirun.run([sys.executable, "-c", FIRST_RUN, name], capture_output=True, text=True,
                      timeout=600, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == 0, proc.stderr
    first, second = json.loads(proc.stdout.strip().splitlines()[-1])
    assert first < second + 0.4, (first, second)


def test_blocks_do_not_change_the_chain():
    for name in SAMPLERS:
        out = []
        for sizes in ((700,), (13, 600, 87)):
            target = GAUSS
            target.reset_counters()
            sampler = SAMPLERS[name](burn_in=300)
            state = sampler.init(target, np.array([0.3, 0.2]), np.random.default_rng(5))
            for n in sizes:
                state, _ = sampler.advance(state, n)
            out.append((state.x, target.n_grad))
        np.testing.assert_array_equal(out[0][0], out[1][0])
        assert out[0][1] == out[1][1]


# ---------------------------------------------------------------------------- runner: budgets, resume
def _run(folder, sampler, budget, checkpoints=None, unit="seconds"):
    target = GAUSS
    target.reset_counters()
    labels = {"run_id": "r", "target": target.name, "sampler": sampler.name, "kernel": "none", "seed": 0}
    runner = Runner(sampler, target, {}, budget, folder, np.random.default_rng(0), labels,
                    checkpoints=checkpoints, progress=False, checkpoint_unit=unit,
                    status_extra={"config_hash": "test"})
    return runner.run()


@pytest.mark.slow  # JAX compilation and runs of a few seconds each
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_budgets_in_iterations_gradients_and_cpu_seconds(name, tmp_path):
    make = SAMPLERS[name]
    status = _run(tmp_path / "it", make(burn_in=100), Budget(600, max_iterations=777))
    assert status["reason"] == "max_iterations" and status["totals"]["iterations"] == 777
    assert status["totals"]["n_collected"] == 677
    status = _run(tmp_path / "grad", make(burn_in=100), Budget(600, max_grad=20_000))
    n_grad = status["totals"]["n_grad"]
    assert status["reason"] == "max_grad" and 20_000 <= n_grad < 22_000
    status = _run(tmp_path / "cpu", make(burn_in=100), Budget(1.0, clock="cpu"))
    totals = status["totals"]
    assert status["reason"] == "budget" and 1.0 <= totals["sampler_cpu_seconds"] < 1.5
    assert totals["iterations"] > 100
    # the library's threads' CPU time is on the clock (XLA and nutpie sample off the caller's thread)
    trace = pd.read_parquet(tmp_path / "cpu" / store.TRACE)
    assert trace.sampler_cpu_seconds.is_monotonic_increasing


def _interrupt_after(sampler, iterations):
    advance = sampler.advance

    def stop(state, n):
        if state.t >= iterations:
            raise KeyboardInterrupt
        return advance(state, n)

    sampler.advance = stop
    return sampler


@pytest.mark.slow  # JAX compilation and runs of a few seconds each
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_killed_run_resumes_with_the_uninterrupted_result(name, tmp_path):
    """JAX peers continue from the checkpoint (library state, adaptation state and PRNG key are
    in the resume state); nutpie cannot save its chain and restarts the run cleanly: either way
    the finished run equals an uninterrupted one row for row and draw for draw."""
    make = SAMPLERS[name]
    budget, cks = Budget(600, max_iterations=900), np.array([100.0, 250, 400, 600, 750])
    _run(tmp_path / "full", make(burn_in=200), budget, cks, "iterations")
    status = _run(tmp_path / "run", _interrupt_after(make(burn_in=200), 450), budget, cks, "iterations")
    assert status["state"] == "interrupted" and (tmp_path / "run" / store.RESUME).exists()
    status = _run(tmp_path / "run", make(burn_in=200), budget, cks, "iterations")
    assert status["state"] == "complete"
    assert ("restarted" in status) == (name == "nutpie")
    cols = ["checkpoint", "iterations", "n_collected", "n_density", "n_grad", "acceptance"]
    full = pd.read_parquet(tmp_path / "full" / store.TRACE)[cols]
    resumed = pd.read_parquet(tmp_path / "run" / store.TRACE)[cols]
    pd.testing.assert_frame_equal(full, resumed)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "full" / store.SAMPLES),
                                  pd.read_parquet(tmp_path / "run" / store.SAMPLES))


# ---------------------------------------------------------------------------- missing extra, CLI
@pytest.mark.parametrize("name, module", [("numpyro_nuts", "numpyro"), ("blackjax_nuts", "blackjax"),
                                          ("nutpie", "nutpie"), ("numpyro_nuts", "jax"), ("mams", "blackjax"),
                                          ("mclmc", "jax"), ("blackjax_nuts_lowrank", "blackjax")])
def test_missing_extra_is_one_line_and_exit_2(name, module, tmp_path):
    run = tmp_path / "run"
    script = (f"import sys; sys.modules[{module!r}] = None; "
              f"sys.argv = ['ckam-bench', 'sampler={name}', 'target=gauss2d_corr', 'hydra.run.dir={run}']; "
              f"from ckam_bench.commands.cli import main; main()")
    proc = clirun.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                      env={**os.environ, "PYTHONPATH": os.getcwd()}, timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and 'pip install "ckam-bench[peers]"' in lines[0], proc.stderr
    assert not run.exists()


@pytest.mark.slow  # JAX compilation and runs of a few seconds each
def test_cli_run_records_library_versions(tmp_path):
    run = tmp_path / "run"
    proc = clirun.run(["ckam-bench", "sampler=blackjax_nuts", "target=gauss2d_corr", "budget.seconds=1",
                           "sampler.burn_in=100", f"hydra.run.dir={run}"], capture_output=True, text=True,
                      cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    status = json.loads((run / "status.json").read_text())
    assert status["sampler_info"]["library"].startswith("blackjax ")
    versions = status["provenance"]["versions"]
    assert all(versions[k] for k in ("jax", "blackjax", "numpyro", "nutpie"))
    assert status["totals"]["warmup_seconds"] > 0  # compilation: before the clock, reported apart


# ---------------------------------------------------------------------------- stationarity
@pytest.mark.slow
@pytest.mark.parametrize("target_name", ["gauss2d_corr", "gmm2d"])
@pytest.mark.parametrize("name", [*sorted(SAMPLERS), "nutpie_lowrank"])
def test_stationary_from_exact_draws(name, target_name):
    """Chains started at exact draws keep π through warm-up and after (finite adaptation)."""
    target = {"gauss2d_corr": gauss2d_corr, "gmm2d": gmm2d}[target_name]()
    make = (lambda: peers.Nutpie(burn_in=300, mass_matrix="low_rank")) if name == "nutpie_lowrank" \
        else (lambda: SAMPLERS[name](burn_in=300))
    assert_stationary(make, target, n_chains=60, times=[300, 1300], seed=11)


@pytest.mark.slow  # two JAX peers compiled for four targets (7 s)
def test_a_sweep_releases_what_jax_compiled_for_finished_runs():
    """A sweep runs its jobs in one process; XLA keeps each executable in memory maps of its own,
    and a sweep of the JAX peers over the posteriordb suite reached the kernel's limit
    (vm.max_map_count) after ~70 posteriors and crashed. With release_compiled() before each
    job (the command line's), the maps stay flat from one target to the next."""
    def maps():
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)

    counts = []
    for _ in range(4):
        target = gauss2d_corr()  # a new target per job, as a sweep builds them
        for cls in (peers.NumPyroNUTS, peers.BlackJAXNUTS):
            sampler = cls(burn_in=20)
            sampler.warm_up(target)
            state = sampler.init(target, np.asarray(target.start, float), np.random.default_rng(0))
            sampler.advance(state, 30)
        del target, sampler, state
        peers.release_compiled()
        counts.append(maps())
    assert counts[-1] - counts[1] < 50, counts  # without the release: ~+750 per target here


def test_jax_programs_are_cached_on_disk_unless_the_user_chose_a_cache():
    """The JAX peers compile through JAX's persistent cache in ckam-bench's compiled cache; a
    cache folder the user set for JAX (JAX_COMPILATION_CACHE_DIR) is kept."""
    import sys

    code = ("from ckam_bench.samplers.peers import _jax; "
            "print(_jax().config.jax_compilation_cache_dir)")
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    ours = clirun.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                      env={**env, "CKAM_BENCH_COMPILED_CACHE": "/tmp/ckam-cache-test"})
    assert ours.stdout.split()[-1] == "/tmp/ckam-cache-test/jax"
    theirs = clirun.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                        env={**env, "JAX_COMPILATION_CACHE_DIR": "/tmp/their-jax-cache"})
    assert theirs.stdout.split()[-1] == "/tmp/their-jax-cache"
