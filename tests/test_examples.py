"""The shipped examples (examples/): an own target and an own sampler, run end to end from the
command line the quick way (PYTHONPATH + hydra.searchpath), checked against the target
contract, the closed forms they claim and the stationarity check. Installing them as a plugin
package is tests/test_plugins.py (slow)."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ckam_bench.targets.base import Target, check_target
from tests.samplers.invariance import assert_stationary

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "plugin_package"
CONF = PLUGIN / "my_plugin" / "conf"

sys.path.insert(0, str(PLUGIN))
from my_plugin import AdaptiveBarker, Banana3, Barker  # noqa: E402
from tests import clirun


def ckam_bench(*args, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), str(ROOT)])}
    return clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", *args,
                           f"hydra.searchpath=[file://{CONF}]"], cwd=cwd, capture_output=True,
                      text=True, timeout=600, env=env)


@pytest.mark.parametrize("sampler", ["barker", "adaptive_barker", "am", "nuts"])
def test_own_target_and_sampler_run_from_the_command_line(tmp_path, sampler):
    run = tmp_path / "run"
    proc = ckam_bench(f"sampler={sampler}", "target=banana3", "budget.max_iterations=3000",
                      "progress=false", f"hydra.run.dir={run}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "complete" and status["target"] == "banana3"
    trace = pd.read_parquet(run / "trace.parquet")
    # mean / variance unlock the moment errors; no marginals, so no KL (and it says why)
    assert {"mean_error", "second_moment_error", "bias2", "ess_min"} <= set(trace.columns)
    assert "kl" not in trace.columns and "banana3" in status["metrics_unsupported"]["kl"]


def test_banana3_closed_forms():
    target = Banana3(b=0.2, v=3.0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3))
    for xi in x:  # gradient against central finite differences
        h = 1e-6
        fd = [(target._log_density(xi + h * e) - target._log_density(xi - h * e)) / (2 * h)
              for e in np.eye(3)]
        np.testing.assert_allclose(target._grad_log_density(xi), fd, rtol=1e-6, atol=1e-7)
    compiled = target.jit_log_density()
    for xi in x:  # the compiled density is the same function
        assert compiled(np.ascontiguousarray(xi)) == pytest.approx(target._log_density(xi),
                                                                   rel=1e-12)
    draws = target.sample(400_000, rng)  # exact draws against the stated moments
    se_mean = np.sqrt(target.variance / len(draws))
    assert np.all(np.abs(draws.mean(0) - target.mean) < 5 * se_mean)
    np.testing.assert_allclose(draws.var(0), target.variance, rtol=0.03)
    # the density of the draws: log π differences agree with the change of variables
    y = draws[:3].copy()
    y[:, 1] += target.b * (y[:, 0] ** 2 - target.v)
    logq = -0.5 * (y[:, 0] ** 2 / target.v + y[:, 1] ** 2 + y[:, 2] ** 2)
    logp = np.array([target._log_density(d) for d in draws[:3]])
    np.testing.assert_allclose(logp - logp[0], logq - logq[0], atol=1e-10)


def test_barker_keeps_the_banana_stationary():
    assert_stationary(lambda: Barker(step_size=0.9), Banana3(b=0.1, v=4.0), n_chains=100,
                      times=(200, 1000))


def test_adaptive_barker_keeps_the_banana_stationary_and_adapts_in_burn_in_only():
    """The adaptive example's contract: chains from exact draws stay π-distributed through and
    after a burn-in that moves σ; burn-in states are not collected, σ is fixed afterwards."""
    target = Banana3(b=0.1, v=4.0)
    assert_stationary(lambda: AdaptiveBarker(step_size=3.0, burn_in=300), target, n_chains=100,
                      times=(200, 1000))
    sampler = AdaptiveBarker(step_size=3.0, burn_in=300)
    state = sampler.init(target, None, np.random.default_rng(0))
    state, block = sampler.advance(state, 1000)
    assert block.samples.shape == (700, 3) and list(np.bincount(block.phase)) == [300, 700]
    assert np.all(block.step_size[300:] == block.step_size[300]) and block.step_size[300] < 3.0
    assert 0.4 < block.accepted[300:].mean() < 0.75
    assert sampler.describe() == {"adaptation": "finite", "burn_in": 300}


class _NoDensity(Target):
    def __init__(self):
        super().__init__(2)


class _BadGradient(Target):
    def __init__(self):
        super().__init__(2)

    def _log_density(self, x):
        return -0.5 * float(x @ x)

    def _grad_log_density(self, x):
        return -np.asarray(x)[:1]


class _BadDraws(_BadGradient):
    def _grad_log_density(self, x):
        return -np.asarray(x, float)

    def sample(self, n, rng):
        return rng.standard_normal((n, 3))


@pytest.mark.parametrize("target, words", [
    (_NoDensity(), ["target 'mine'", "_log_density"]),
    (_BadGradient(), ["target 'mine'", "_grad_log_density", "(1,)", "(2,)"]),
    (_BadDraws(), ["target 'mine'", "sample(n, rng)", "(n, 2)"]),
    (object(), ["target 'mine'", "Target"]),
])
def test_the_target_contract_names_the_target_and_the_member(target, words):
    with pytest.raises(ValueError) as info:
        check_target(target, "mine")
    for word in words:
        assert word in str(info.value)


def test_a_target_without_a_name_takes_its_config_name():
    fine = Banana3()
    check_target(fine, "other")
    assert fine.name == "banana3"  # a class's own name is kept
    plain = type("Plain", (Target,), {"_log_density": lambda self, x: 0.0})(2)
    check_target(plain, "my_plain")
    assert plain.name == "my_plain"


def test_a_broken_own_target_is_one_line_from_the_command_line(tmp_path):
    conf = tmp_path / "conf" / "target"
    conf.mkdir(parents=True)
    (tmp_path / "broken_target.py").write_text(
        "from ckam_bench.targets.base import Target\n"
        "class Broken(Target):\n    def __init__(self):\n        super().__init__(2)\n")
    (conf / "broken.yaml").write_text("_target_: broken_target.Broken\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", "target=broken", "sampler=rw",
                           f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
                           f"hydra.run.dir={tmp_path / 'run'}"], cwd=tmp_path,
                      capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "target 'broken'" in proc.stderr and "_log_density" in proc.stderr
    assert not (tmp_path / "run").exists()
