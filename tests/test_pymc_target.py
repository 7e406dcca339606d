"""target=pymc: a PyMC model's unconstrained log density, its transforms and Jacobians, its
gradient, the compiled functions, the stored constrained values, data swapping, bad input, the
missing extra, and the command end to end."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("pymc")  # the [pymc] extra; CI installs it, so this never skips there

from ckam_bench import jit
from ckam_bench.engine import store  # noqa: E402
from ckam_bench.targets.pymc import ModelError, PyMCModel, load_model  # noqa: E402
from tests import clirun

MODELS = Path(__file__).resolve().parent / "pymc_models.py"


def spec(name: str) -> str:
    return f"{MODELS}:{name}"


def hierarchical_logp(x):
    mu, log_tau, theta = x[0], x[1], x[2:]
    tau = np.exp(log_tau)
    y = np.array([1.2, -0.4, 2.5, 0.3])
    return (stats.norm.logpdf(mu) + stats.halfnorm.logpdf(tau) + log_tau
            + stats.norm.logpdf(theta, mu, tau).sum() + stats.norm.logpdf(y, theta, 1.0).sum())


# name -> (hand-written log density on the unconstrained scale, back-transform of x)
HAND = {
    "halfnormal": (lambda x: stats.halfnorm.logpdf(np.exp(x[0]), scale=2.0) + x[0],
                   lambda x: {"s": np.exp(x[0])}),
    "exponential": (lambda x: stats.expon.logpdf(np.exp(x[0]), scale=0.5) + x[0],
                    lambda x: {"lam": np.exp(x[0])}),
    "beta": (lambda x: (stats.beta.logpdf(1 / (1 + np.exp(-x[0])), 2.0, 3.0)
                        + np.log(1 / (1 + np.exp(-x[0]))) + np.log(1 / (1 + np.exp(x[0])))),
             lambda x: {"p": 1 / (1 + np.exp(-x[0]))}),
    "hierarchical": (hierarchical_logp,
                     lambda x: {"mu": x[0], "tau": np.exp(x[1]),
                                **{f"theta[{j}]": x[2 + j] for j in range(4)}}),
}


@pytest.fixture(scope="module")
def targets():
    return {name: PyMCModel(spec(name)) for name in [*HAND, "mixed"]}


def _points(dim, k=4, seed=0):
    return np.random.default_rng(seed).normal(scale=1.2, size=(k, dim))


@pytest.mark.parametrize("name", list(HAND))
def test_transforms_and_jacobians_against_hand_written_densities(targets, name):
    t = targets[name]
    density, back = HAND[name]
    offsets = []
    for x in _points(t.dim):
        offsets.append(t._log_density(x) - density(x))
        constrained = t.constrain(x[None])
        for key, value in back(x).items():
            assert constrained[key][0] == pytest.approx(value, rel=1e-12)
    # equal up to one constant: PyMC's normalising constants are rounded (HalfNormal's is 2e-9,
    # Beta(2, 3)'s 2e-8 off scipy's), which no sampler sees
    assert np.ptp(offsets) < 1e-10 and abs(offsets[0]) < 1e-6


@pytest.mark.parametrize("name", [*HAND, "mixed"])
def test_gradient_against_finite_differences(targets, name):
    t = targets[name]
    h = 1e-6
    for x in _points(t.dim, seed=1):
        logp, grad = t.log_density_and_grad_uncounted(x)
        assert logp == pytest.approx(t._log_density(x), rel=1e-12)
        fd = np.array([(t._log_density(x + h * e) - t._log_density(x - h * e)) / (2 * h)
                       for e in np.eye(t.dim)])
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_compiled_functions_match_and_count_nothing(targets):
    t = targets["mixed"]
    if not jit.enabled():
        pytest.skip("compiled loops switched off (CKAM_BENCH_JIT=0)")
    f, fg = jit.compiled_log_density(t), jit.compiled_log_density_and_grad(t)
    grad = np.empty(t.dim)
    for x in _points(t.dim, seed=2):
        logp, want = t.log_density_and_grad_uncounted(x)
        assert f(x) == pytest.approx(logp, rel=1e-12)
        assert fg(x, grad) == pytest.approx(logp, rel=1e-12)
        np.testing.assert_allclose(grad, want, rtol=1e-12)
    assert t.n_density == 0 and t.n_grad == 0
    assert not t.has_hessian and t.has_gradient


def test_layout_names_start_and_model_initial_point(targets):
    t = targets["mixed"]
    assert t.dim == 6
    assert t.coordinates == ["a", "s_log__", "p_logodds__[0]", "p_logodds__[1]",
                             "w_simplex__[0]", "w_simplex__[1]"]
    assert t.stored_names == ["a", "s", "p[0]", "p[1]", "w[0]", "w[1]", "w[2]", "two_a"]
    assert sorted(t.data_names) == ["k", "x", "yd"]
    model = load_model(spec("mixed"))
    point = model.initial_point(0)
    assert t._log_density(t.start) == pytest.approx(float(model.compile_logp()(point)), rel=1e-12)
    w = t.constrain(_points(t.dim, k=3))
    np.testing.assert_allclose(w["w[0]"] + w["w[1]"] + w["w[2]"], 1.0)
    np.testing.assert_allclose(w["two_a"], 2 * w["a"])


def test_prior_start_is_seeded():
    a = PyMCModel(spec("hierarchical"), init="prior", init_seed=4)
    b = PyMCModel(spec("hierarchical"), init="prior", init_seed=4)
    c = PyMCModel(spec("hierarchical"), init="prior", init_seed=5)
    np.testing.assert_array_equal(a.start, b.start)
    assert not np.array_equal(a.start, c.start)
    assert np.all(PyMCModel(spec("hierarchical")).start == 0.0)


def test_data_swap_without_recompiling(tmp_path):
    base = PyMCModel(spec("hierarchical"))
    other_y = np.array([0.0, 3.0, -1.0, 2.0])
    np.savez(tmp_path / "d.npz", y=other_y)
    swapped = PyMCModel(spec("hierarchical"), data=str(tmp_path / "d.npz"))
    x = _points(base.dim, k=1, seed=3)[0]
    theta = x[2:]
    shift = (stats.norm.logpdf(other_y, theta, 1).sum() - stats.norm.logpdf(base_y(), theta, 1).sum())
    assert swapped._log_density(x) - base._log_density(x) == pytest.approx(shift, rel=1e-10)
    assert swapped.reference_id() != base.reference_id()
    if jit.enabled():  # two live targets of one model, compiled: each reads its own data
        fa, fb = jit.compiled_log_density(base), jit.compiled_log_density(swapped)
        assert fa(x) == pytest.approx(base._log_density(x), rel=1e-12)
        assert fb(x) == pytest.approx(swapped._log_density(x), rel=1e-12)
        swapped.set_data({"y": base_y()})  # in place: the compiled function sees it
        assert fb(x) == pytest.approx(fa(x), rel=1e-12)


def base_y():
    return np.array([1.2, -0.4, 2.5, 0.3])


def test_integer_observations_and_pm_data(targets):
    t = PyMCModel(spec("mixed"))
    x = _points(t.dim, k=1, seed=4)[0]
    before = t._log_density(x)
    t.set_data({"k": np.array([5, 0])})
    p0 = 1 / (1 + np.exp(-x[2]))
    want = (stats.poisson.logpmf([5, 0], 10 * p0).sum() - stats.poisson.logpmf([3, 4], 10 * p0).sum())
    assert t._log_density(x) - before == pytest.approx(want, rel=1e-10)
    with pytest.raises(ModelError, match=r"^data must give 'k' finite values of dtype int64"):
        t.set_data({"k": np.array([0.5, 1.0])})
    with pytest.raises(ModelError, match=r"^data must give 'k' the shape \(2,\)"):
        t.set_data({"k": np.array([1, 2, 3])})
    with pytest.raises(ModelError, match=r"^data names 'nope', not observed data"):
        t.set_data({"nope": np.zeros(2)})


@pytest.mark.parametrize("model, message", [
    ("garbage", "model must be PACKAGE.MODULE:FUNCTION"),
    ("no/such/file.py:model", "model names no Python file"),
    ("no_such_module_xyz:model", "model cannot import module 'no_such_module_xyz'"),
    (f"{MODELS}:absent", "names a function 'absent' that"),
    (f"{MODELS}:not_a_model", "model must return a pymc.Model: "),
    (f"{MODELS}:discrete", "model has discrete free variables (n)"),
    (f"{MODELS}:halfnormol", f"did you mean '{MODELS}:halfnormal'?"),
    ("ckam_bench.posteriordb.models:eight_school_noncentered",
     "did you mean 'ckam_bench.posteriordb.models:eight_schools_noncentered'"),
])
def test_bad_model_values(model, message):
    with pytest.raises(ModelError) as info:
        PyMCModel(model)
    assert message in str(info.value)


def test_bad_settings():
    with pytest.raises(ModelError, match="^init must be one of"):
        PyMCModel(spec("beta"), init="mode")
    with pytest.raises(ModelError, match="^dim must be 1"):
        PyMCModel(spec("beta"), dim=3)
    with pytest.raises(ModelError, match="^var_names holds 'q', not free variables"):
        PyMCModel(spec("beta"), var_names=["q"])


def test_dotted_module_form(tmp_path, monkeypatch):
    (tmp_path / "my_models_for_ckam.py").write_text(MODELS.read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    t = PyMCModel("my_models_for_ckam:exponential")
    assert t.name == "pymc_my_models_for_ckam_exponential" and t.dim == 1


# ---------------------------------------------------------------------------- command line
def ckam_bench(*args, cwd, env=None, prelude="pass"):
    code = (f"import sys; {prelude}; sys.argv = ['ckam-bench', *sys.argv[1:]]; "
            "from ckam_bench import cli; cli.main()")
    return clirun.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                      text=True, timeout=900,
                      env={**os.environ, "HYDRA_FULL_ERROR": "0", **(env or {})})


def test_missing_extra_is_one_line_exit_2(tmp_path):
    out = tmp_path / "run"
    proc = ckam_bench("target=pymc", f"target.model={spec('beta')}", f"hydra.run.dir={out}",
                      cwd=tmp_path, prelude="sys.modules['pymc'] = None")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("ckam-bench: invalid configuration: target.model needs PyMC")
    assert 'pip install "ckam-bench[pymc]"' in lines[0]
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("override, key", [
    ("target.model=nonsense", "target.model"),
    (f"target.model={MODELS}:absent", "target.model"),
    ("target.model=null", "target.model"),
    (f"target.model={MODELS}:beta target.data=/no/such.npz", "target.data"),
    (f"target.model={MODELS}:beta target.init=mode", "target.init"),
])
def test_bad_values_name_the_key_and_create_nothing(tmp_path, override, key):
    out = tmp_path / "run"
    proc = ckam_bench("target=pymc", *override.split(), f"hydra.run.dir={out}", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"invalid configuration: {key}" in lines[0], proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_cli_small_run_stores_both_scales(tmp_path):
    out = tmp_path / "run"
    proc = ckam_bench("target=pymc", f"target.model={spec('hierarchical')}", "sampler=mala",
                      "sampler.burn_in=200", "budget.max_iterations=2000", "budget.seconds=60",
                      "checkpoint.on=iterations", "checkpoint.first=500", f"hydra.run.dir={out}",
                      cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = store.load_run(out)
    assert run.status["state"] == "complete" and run.status["target"] == "pymc_pymc_models_hierarchical"
    assert run.status["dim"] == 6 and run.trace.n_grad.iloc[-1] >= 2000
    cols = set(run.samples.columns)
    assert {f"x{j}" for j in range(6)} | {"mu", "tau", "theta[0]", "theta[3]"} <= cols
    np.testing.assert_allclose(run.samples["tau"], np.exp(run.samples["x1"]), rtol=1e-12)


# the samplers that decline a PyMC model (no Hessian, no certified reference) and why
DECLINE = {"gadmala_exact": "needs the Hessian", "horseshoe_gibbs": "horseshoe",
           "nuts_reference_diag": "needs the target's certified reference",
           "nuts_reference_dense": "needs the target's certified reference"}


@pytest.mark.parametrize("sampler", ["gadmala_exact", "nuts_reference_dense"])
def test_a_sampler_that_cannot_run_declines_in_one_line(tmp_path, sampler):
    proc = ckam_bench("target=pymc", f"target.model={spec('beta')}", f"sampler={sampler}",
                      f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and DECLINE[sampler] in lines[0], lines
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_every_sampler_on_a_pymc_model_in_one_sweep(tmp_path):
    conf = Path(__file__).resolve().parents[1] / "conf" / "sampler"
    samplers = sorted(p.stem for p in conf.glob("*.yaml") if p.stem not in DECLINE)
    sweep = tmp_path / "sweep"
    proc = ckam_bench("-m", "target=pymc", f"target.model={spec('hierarchical')}",
                      f"sampler={','.join(samplers)}", "budget.seconds=2",
                      f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = [store.load_run(p) for p in store.find_runs(sweep)]
    assert sorted(r.status["sampler"] for r in runs) == sorted(samplers)
    for run in runs:
        if run.status["state"] == "empty":  # 2 s ended inside a burn-in (KAMH's 5 000: 3 207 done on CI;
            # nutpie_flow's 500, where nutpie fits its flow in JAX: 261 done at load 8)
            assert run.status["reason"] == "budget" and run.status["flags"] == ["no_samples"], run.status
            assert run.status["sampler"] in ("kam", "ckam", "kamh", "nutpie_flow"), run.status
            assert re.search(r"iterations \(\d+ in (burnin|burn_in|exploration)\)",
                             run.status["flag_notes"]["no_samples"])
            continue
        assert run.status["state"] == "complete", run.status
        assert {"mu", "tau", "theta[3]"} <= set(run.samples.columns)
    assert (sweep / "report" / "report.html").exists()


@pytest.mark.slow
def test_python_loops_use_pytensors_c_backend(tmp_path):
    """CKAM_BENCH_JIT=0: the same density through pytensor's default backend, no numba."""
    code = (f"import numpy as np; from ckam_bench.targets.pymc import PyMCModel; "
            f"t = PyMCModel({spec('hierarchical')!r}); x = np.linspace(-1, 1, 6); "
            "l, g = t.log_density_and_grad_uncounted(x); print(repr(l), list(g))")
    proc = clirun.run([sys.executable, "-c", code], capture_output=True, text=True,
                      timeout=900, env={**os.environ, "CKAM_BENCH_JIT": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    logp = float(proc.stdout.split()[0])
    assert logp == pytest.approx(hierarchical_logp(np.linspace(-1, 1, 6)), rel=1e-10)


@pytest.mark.slow
def test_reference_command_on_a_pymc_model(tmp_path):
    # 4 x 20 000 NUTS draws of a 1-D model give a bulk and tail ESS near 14 000: certified under
    # posteriordb's own thresholds (a looser ess_min would store a provisional file and exit 3)
    cache = tmp_path / "cache"
    proc = clirun.run(
        [sys.executable, "-m", "ckam_bench.checks.reference", "target=pymc",
         f"target.model={spec('halfnormal')}", "sampler=nuts", "chains=4", "burn_in=500",
         "iterations=20000", "ess_min=10000", f"out={cache}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "HYDRA_FULL_ERROR": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    cert = json.loads(next(cache.glob("pymc_pymc_models_halfnormal-*.json")).read_text())
    # log s for s ~ HalfNormal(2): E[log s] = log 2 - (gamma + log 2) / 2
    mean = np.load(next(cache.glob("pymc_pymc_models_halfnormal-*.npz")))["mean"][0]
    assert mean == pytest.approx(np.log(2.0) - (np.euler_gamma + np.log(2.0)) / 2, abs=0.05)
    assert cert["target"]["model"].endswith("pymc_models.py:halfnormal")


def test_the_declining_samplers_are_exactly_those_the_sweep_leaves_out():
    """Keeps the slow every-sampler sweep honest: a new sampler that cannot run on a PyMC model
    is named in DECLINE (with its reason), never found by a failing slow test."""
    from hydra import compose, initialize_config_module
    from hydra.utils import instantiate

    conf = Path(__file__).resolve().parents[1] / "conf" / "sampler"
    target = PyMCModel(spec("hierarchical"))
    declined = {}
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        for name in sorted(p.stem for p in conf.glob("*.yaml")):
            sampler = instantiate(compose("config", overrides=[f"sampler={name}"]).sampler)
            skip, why = sampler.skip(target)
            if skip:
                declined[name] = why
    assert set(declined) == set(DECLINE), declined
    assert all(DECLINE[name] in why for name, why in declined.items()), declined


_LOAD_TWICE = """
import subprocess
import sys
import numpy as np
from ckam_bench import jit
from ckam_bench.targets import pymc as P
from ckam_bench.targets import pymc_compiled
loaded = []
_load = pymc_compiled.load_functions
def load(key, count):
    found = _load(key, count)
    loaded.append(int(found is not None))
    return found
pymc_compiled.load_functions = load
target = P.PyMCModel(sys.argv[1])
f, g = jit.compiled_log_density(target), jit.compiled_log_density_and_grad(target)
x = np.linspace(-0.5, 0.5, target.dim)
out = np.empty(target.dim)
(made,) = pymc_compiled._C_FUNCTIONS.values()
print(made["c_logp"].cache_hits, made["c_both"].cache_hits, loaded[0], repr(f(x)), repr(g(x, out)),
      repr(out.sum()), repr(sum(v.sum() for v in target.constrain(x[None, :]).values())))
"""

_CONSTANT_MODELS = """
import numpy as np
import pymc as pm


def _model(scale):
    covariate = np.array([0.5, 1.0, 1.5, 2.0]) * scale  # a plain numpy constant of the graph
    with pm.Model() as model:
        b = pm.Normal("b")
        s = pm.HalfNormal("s")
        pm.Normal("y", b * covariate, s, observed=[0.4, 1.1, 1.4, 2.2])
    return model


def one():
    return _model(1.0)


def two():
    return _model(2.0)
"""


@pytest.mark.slow  # seven new processes, each importing PyMC: ~45 s
def test_a_models_compiled_density_is_loaded_from_the_disk_cache_by_the_next_process(tmp_path):
    """pytensor's compiled functions and the C-callables around their code are compiled once per
    machine and loaded by every later process (issue 44 §2), keyed by the graph (pytensor's key
    for the C-callables, :func:`~ckam_bench.targets.pymc_compiled.graph_sha256` for pytensor's
    functions): a model differing only in a constant compiles its own, the loaded functions give
    the freshly compiled ones' values bit for bit, and a damaged cache file is set aside (never
    trusted, never deleted) and compiled afresh."""
    script = tmp_path / "load.py"
    script.write_text(_LOAD_TWICE)
    (tmp_path / "constants.py").write_text(_CONSTANT_MODELS)
    env = {**os.environ, jit.COMPILED_CACHE_ENV: str(tmp_path / "cache")}

    def run(model):
        done = subprocess.run([sys.executable, str(script), model], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        hits_logp, hits_both, loaded, *values = done.stdout.split()
        return (int(hits_logp), int(hits_both), int(loaded)), values

    first = run(f"{tmp_path / 'constants.py'}:one")
    assert first[0] == (0, 0, 0)  # compiled
    assert run(f"{tmp_path / 'constants.py'}:one") == ((1, 1, 1), first[1])  # loaded, the same values
    other = run(f"{tmp_path / 'constants.py'}:two")
    assert other[0] == (0, 0, 0) and other[1] != first[1]  # another constant: its own code
    assert list((tmp_path / "cache").rglob("*.nbc"))
    stored = sorted((tmp_path / "cache").rglob("*.pkl"))
    assert len(stored) == 2
    for path in stored:
        path.write_bytes(b"not a pickle")
    assert run(f"{tmp_path / 'constants.py'}:one") == ((1, 1, 0), first[1])  # set aside, compiled
    assert run(f"{tmp_path / 'constants.py'}:two") == ((1, 1, 0), other[1])
    assert len(list((tmp_path / "cache").rglob("*.pkl.damaged-*"))) == 2
    assert run(f"{tmp_path / 'constants.py'}:one") == ((1, 1, 1), first[1])  # stored again


def test_the_graph_key_is_the_same_in_every_process_and_follows_every_constant():
    """The key of pytensor's compiled functions comes from bytes: the same graph built twice
    (in one process, auto-named variables differing) has one key; another constant, another
    op or a random generator in the graph (no bytes: not cached) does not."""
    import pytensor.tensor as pt

    from ckam_bench.targets import pymc_compiled

    def graph(scale, op=pt.exp):
        x = pt.vector("x", shape=(3,))
        return [x], [op(x * np.array([1.0, 2.0, 3.0]) * scale).sum()]

    key = pymc_compiled.graph_sha256(*graph(1.0), "NUMBA")
    assert key == pymc_compiled.graph_sha256(*graph(1.0), "NUMBA")
    assert key != pymc_compiled.graph_sha256(*graph(1.0 + 1e-15), "NUMBA")
    assert key != pymc_compiled.graph_sha256(*graph(1.0, pt.log), "NUMBA")
    assert key != pymc_compiled.graph_sha256(*graph(1.0), "NUMBA True")
    x = pt.vector("x", shape=(3,))
    draw = pt.random.normal(0.0, 1.0, size=3)
    assert pymc_compiled.graph_sha256([x], [(x + draw).sum()], "NUMBA") is None
