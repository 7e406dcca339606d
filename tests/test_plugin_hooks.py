"""The harness calls a user's target only through documented, namespaced hooks (``ckam_*``)
and checks what they return; an exception anywhere in a run leaves it ``failed``, never
``running`` (issue 29 §5)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ckam_bench.engine import store
from ckam_bench.engine.runner import Budget, Runner
from ckam_bench.checks.stationarity import mode_labels
from ckam_bench.targets.base import PluginError, constrained_columns, label_of, mixture_of
from tests.legacy_plugin import PlainRandomWalk, StanStyleGaussian
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]


def _runner(tmp_path, target, sampler=None, metrics=None, budget=None):
    labels = {"run_id": "r1", "target": "t", "sampler": "plain_rw", "kernel": "none", "seed": 0}
    return Runner(sampler or PlainRandomWalk(1.5), target, metrics or {},
                  budget or Budget(seconds=60, max_iterations=3000), tmp_path,
                  np.random.default_rng(0), labels, progress=False, checkpoint_unit="iterations",
                  checkpoints=np.array([100.0, 1000.0]))


def test_a_stan_style_constrain_method_is_not_a_hook(tmp_path):
    """A method named ``constrain`` that returns an array (natural for a Stan-style target)
    crashed every run at its last checkpoint; it is an ordinary method now."""
    status = _runner(tmp_path, StanStyleGaussian()).run()
    assert status["state"] == "complete"
    samples = pd.read_parquet(tmp_path / store.SAMPLES)
    assert list(samples.columns) == ["index", "x0", "x1"]
    assert json.loads((tmp_path / store.STATUS).read_text())["state"] == "complete"


def test_ordinary_attributes_named_like_old_hooks_are_ignored():
    target = StanStyleGaussian()
    assert mixture_of(target) is None and mode_labels(target, np.zeros((3, 2))) is None
    assert label_of(target, "stan_style") == "stan_style"


class _BadColumns(StanStyleGaussian):
    def ckam_constrained(self, X):
        return np.exp(X)  # not a dict


def test_a_malformed_hook_result_is_one_line_naming_the_plugin():
    with pytest.raises(PluginError, match=r"_BadColumns\.ckam_constrained must return a dict"):
        constrained_columns(_BadColumns(), np.zeros((4, 2)))

    class ShortColumn(StanStyleGaussian):
        def ckam_constrained(self, X):
            return {"sigma": np.ones(len(X) - 1)}

    with pytest.raises(PluginError, match=r"ShortColumn\.ckam_constrained must return column "
                                          r"'sigma' as an array of shape \(4,\)"):
        constrained_columns(ShortColumn(), np.zeros((4, 2)))

    class Clash(StanStyleGaussian):
        def ckam_constrained(self, X):
            return {"x0": np.ones(len(X))}

    with pytest.raises(PluginError, match="column name 'x0'"):
        constrained_columns(Clash(), np.zeros((4, 2)))

    class GoodColumns(StanStyleGaussian):
        def ckam_constrained(self, X):
            return {"sigma": np.exp(X[:, 1])}

    np.testing.assert_allclose(constrained_columns(GoodColumns(), np.ones((3, 2)))["sigma"], np.e)


def test_a_failing_hook_at_a_checkpoint_marks_the_run_failed(tmp_path):
    """The exception comes from the checkpoint's own store: the run is ``failed`` with the
    reason (and the traceback) in status.json, not ``running`` for ever."""
    with pytest.raises(PluginError):
        _runner(tmp_path, _BadColumns()).run()
    status = json.loads((tmp_path / store.STATUS).read_text())
    assert status["state"] == "failed"
    assert "_BadColumns.ckam_constrained must return a dict" in status["reason"]
    assert "Traceback" in status["error"]


class _FailingMetric:
    def __init__(self, when: int):
        self.calls, self.when = 0, when

    def update(self, samples):
        pass

    def compute(self, buffer):
        self.calls += 1
        if self.calls >= self.when:
            raise RuntimeError("metric exploded")
        return {"m": 1.0}

    def describe(self):
        return {}


@pytest.mark.parametrize("when", [1, 3])  # the first checkpoint, the final one
def test_a_failing_metric_marks_the_run_failed(tmp_path, when):
    with pytest.raises(RuntimeError, match="metric exploded"):
        _runner(tmp_path, StanStyleGaussian(), metrics={"m": _FailingMetric(when)}).run()
    status = json.loads((tmp_path / store.STATUS).read_text())
    assert status["state"] == "failed" and "metric exploded" in status["reason"]


def _cli(tmp_path, *overrides):
    args = [sys.executable, "-m", "ckam_bench.commands.cli", f"hydra.run.dir={tmp_path}",
            f"hydra.searchpath=[file://{ROOT / 'tests' / 'legacy_conf'}]", "budget.seconds=1",
            "progress=false", *overrides]
    return clirun.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_last_releases_plugin_runs_from_the_command_line(tmp_path):
    """A target and a sampler written to the contract as documented a release ago, found
    through ``hydra.searchpath``: the run completes and says so."""
    out = _cli(tmp_path / "run", "target=stan_style", "sampler=plain_rw")
    assert out.returncode == 0, out.stderr[-3000:]
    status = json.loads((tmp_path / "run" / store.STATUS).read_text())
    assert status["state"] == "complete" and status["target"] == "stan_style"
    assert any(line.startswith("complete") for line in out.stderr.splitlines())


def _cli_with_own_config(tmp_path, group, name, cls, other):
    """ckam-bench with ``group=name``, a YAML of this module's class ``cls`` found through
    ``hydra.searchpath``, and ``other`` for the other group; the run folder is ``tmp_path/run``."""
    conf = tmp_path / "conf" / group
    conf.mkdir(parents=True)
    (conf / f"{name}.yaml").write_text(f"_target_: tests.test_plugin_hooks.{cls}\n")
    args = [sys.executable, "-m", "ckam_bench.commands.cli", f"hydra.run.dir={tmp_path / 'run'}",
            f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "budget.seconds=1",
            "progress=false", f"{group}={name}", other]
    return clirun.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_run_that_fails_says_so_in_one_line(tmp_path):
    out = _cli_with_own_config(tmp_path, "target", "bad_columns", "_BadColumns", "sampler=rw")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("failed (PluginError:") and "ckam_constrained" in last
    assert json.loads((tmp_path / "run" / store.STATUS).read_text())["state"] == "failed"


def test_a_target_can_bring_its_own_reference():
    """``ckam_reference``: the reference a target brings (posteriordb's draws for a suite model,
    or a plugin's own) is used when none is shipped or cached, and checked like any hook."""
    from ckam_bench.reference_lookup import Reference, load_reference

    class OwnReference(StanStyleGaussian):
        def __init__(self, value):
            super().__init__()
            self.value = value

        def reference_id(self):
            return "own_reference-0123456789"

        def ckam_reference(self):
            return self.value

    rng = np.random.default_rng(3)
    draws = rng.standard_normal((400, 2))
    good = Reference(samples=draws, chain=np.repeat(np.arange(4), 100), mean=draws.mean(0),
                     second_moment=(draws**2).mean(0), variance=draws.var(0),
                     fourth_moment=(draws**4).mean(0), mcse_mean=np.full(2, 0.05),
                     certificate={"certified": True}, path=None)
    assert load_reference(OwnReference(good)) is good
    assert load_reference(OwnReference(None)) is None
    with pytest.raises(PluginError, match=r"OwnReference\.ckam_reference must return a "):
        load_reference(OwnReference({"mean": [0, 0]}))
    bad = Reference(**{**good.__dict__, "samples": draws[:, :1], "mean": draws.mean(0)[:1]})
    with pytest.raises(PluginError, match=r"not \(draws, 2\)"):
        load_reference(OwnReference(bad))


class _LongBlocks(PlainRandomWalk):
    ckam_block_seconds = 0.3


def test_a_sampler_asks_for_longer_blocks_and_the_runner_takes_the_larger(tmp_path):
    assert _runner(tmp_path / "a", StanStyleGaussian(), _LongBlocks(1.5)).block_seconds == 0.3
    assert _runner(tmp_path / "b", StanStyleGaussian()).block_seconds == 0.02  # the contract's default
    from ckam_bench.samplers.peers import BlackJAXNUTS, NumPyroNUTS

    assert NumPyroNUTS.ckam_block_seconds == BlackJAXNUTS.ckam_block_seconds == 0.25


@pytest.mark.parametrize("value", ["fast", -1.0, float("nan"), 1e9, True])
def test_a_malformed_block_seconds_is_one_line_naming_the_plugin(tmp_path, value):
    sampler = PlainRandomWalk(1.5)
    sampler.ckam_block_seconds = value
    with pytest.raises(PluginError, match=r"^tests\.legacy_plugin\.PlainRandomWalk\.ckam_block_seconds must"):
        _runner(tmp_path, StanStyleGaussian(), sampler)
    assert not any(tmp_path.iterdir())


def test_a_malformed_block_seconds_from_the_command_line_exits_2_creating_nothing(tmp_path):
    out = _cli_with_own_config(tmp_path, "sampler", "bad_blocks", "_BadBlocks", "target=gauss2d_corr")
    assert out.returncode == 2, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "ckam_block_seconds" in lines[0], lines
    assert not (tmp_path / "run").exists()


class _BadBlocks(PlainRandomWalk):
    ckam_block_seconds = "long"


def test_a_failing_final_write_marks_the_run_failed(tmp_path, monkeypatch):
    """An exception in the run's last write (the final checkpoint's stores) leaves the run
    ``failed`` with the reason in status.json, never ``running``."""
    from ckam_bench.engine import rundir

    original = rundir.RunFolder.write_checkpoint

    def write_checkpoint(self, **kwargs):
        if kwargs.get("complete"):
            raise OSError("the disk went away at the final write")
        return original(self, **kwargs)

    monkeypatch.setattr(rundir.RunFolder, "write_checkpoint", write_checkpoint)
    with pytest.raises(OSError, match="disk went away"):
        _runner(tmp_path, StanStyleGaussian()).run()
    status = json.loads((tmp_path / store.STATUS).read_text())
    assert status["state"] == "failed" and "disk went away" in status["reason"]


def test_every_hook_the_harness_calls_is_documented():
    """docs/extending.md's contract lists every ``ckam_`` hook of the Target and Sampler bases."""
    import inspect

    from ckam_bench.samplers.base import Sampler
    from ckam_bench.targets.base import Target

    hooks = {name for cls in (Target, Sampler) for name, _ in inspect.getmembers(cls)
             if name.startswith("ckam_")}
    assert {"ckam_constrained", "ckam_reference", "ckam_block_seconds"} <= hooks
    doc = (ROOT / "docs" / "extending.md").read_text()
    assert not [h for h in sorted(hooks) if f"`{h}" not in doc]
