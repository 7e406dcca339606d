"""The public surface (docs/contract.md), frozen.

:data:`FROZEN` is the list every plugin package and user script may rely on. The list is kept
here as data, and docs/contract.md must list exactly these names. Every name is checked for
what it promises:

- the entry-point groups are read;
- the hooks exist on the base classes, or the engine calls them;
- the import paths import, the old ones too, as the same module;
- a plugin's config keys compose;
- a real short in-process run of a plugin found through the entry point writes every file,
  ``status.json`` key and parquet column.

Renaming or removing a name without an alias fails these tests. Add a name only with its
entry on the page.

The last tests install ``tests/fixtures/old_contract_plugin``, a package written to the first
documented plugin contract and never edited, the documented way (pip, entry point). They run
it from the command line: a single run, a sweep, the report, ``ckam-bench-check`` and
``ckam-bench-sbc``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import warnings
from dataclasses import fields
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "contract.md"
OLD_PLUGIN = ROOT / "tests" / "fixtures" / "old_contract_plugin"
MODELS = ROOT / "tests" / "pymc_models.py"

FROZEN = {
    "entry_point_groups": ["ckam_bench.plugins"],
    "entry_point_groups_old": ["ckam_bench.commands.plugins"],
    "target_init_params": ["dim", "start", "box"],
    "target_members": ["_log_density", "_log_density_batch", "_grad_log_density",
                       "_hessian_log_density", "sample", "marginal_logpdf", "marginal_cdf",
                       "mean", "variance", "jit_log_density", "jit_log_density_and_grad",
                       "jax_log_density", "name", "noisy", "describe"],
    "target_hooks": ["ckam_constrained", "ckam_mixture", "ckam_fourth_moment",
                     "ckam_quantile_statistic", "ckam_true_coefficients", "ckam_label",
                     "ckam_reference"],
    "target_calls": ["log_density", "log_density_batch", "grad_log_density",
                     "log_density_and_grad", "hessian_log_density", "dim", "start", "box", "rng",
                     "n_density", "n_grad"],
    "sampler_members": ["init", "advance", "warm_up", "describe", "trace_columns", "skip",
                        "phases", "kernel", "multi_chain", "resumable", "name"],
    "sampler_hooks": ["ckam_block_seconds", "ckam_divergent"],
    "block_fields": ["samples", "accepted", "accept_prob", "phase", "step_size", "noise",
                     "n_nonfinite", "n_jitter", "logp", "divergent"],
    "chain_state_fields": ["x", "logp", "t"],
    "block_recorder": ["accepted", "accept_prob", "phase", "step_size", "noise", "logp",
                       "samples", "n_collected", "n_nonfinite", "n_jitter", "collect", "block"],
    "config_groups": ["sampler", "target", "kernel", "schedule", "experiment"],
    "config_keys": ["_target_", "defaults"],
    "config_interpolations": ["kernel", "target.dim"],
    "config_resolvers": ["optimal_scale"],
    "imports": [
        "ckam_bench.run", "ckam_bench.api.run", "ckam_bench.api.load", "ckam_bench.api.RunResult",
        "ckam_bench.api.ConfigError", "ckam_bench.api.FolderRefused", "ckam_bench.api.FolderBusy",
        "ckam_bench.targets.base.Target", "ckam_bench.targets.base.CapabilityError",
        "ckam_bench.targets.base.PluginError", "ckam_bench.targets.base.check_target",
        "ckam_bench.samplers.base.Sampler", "ckam_bench.samplers.base.ChainState",
        "ckam_bench.samplers.base.Block", "ckam_bench.samplers.base.BlockRecorder",
        "ckam_bench.samplers.base.check_start", "ckam_bench.samplers.base.accept_prob",
        "ckam_bench.samplers.base.StartPointError", "ckam_bench.engine.runner.Runner",
        "ckam_bench.engine.runner.run_labels", "ckam_bench.engine.budget.Budget",
        "ckam_bench.engine.store.load_run", "ckam_bench.engine.store.load_traces",
        "ckam_bench.report.load_results", "ckam_bench.report.aggregate",
        "ckam_bench.interop.to_datatree", "ckam_bench.checks.stationarity.check_stationarity",
        "ckam_bench.reference_lookup.load_reference", "ckam_bench.reference_lookup.Reference",
        "ckam_bench.data.content_sha256", "ckam_bench.data.array_sha256", "ckam_bench.jit.helper",
        "ckam_bench.jit.kernel", "ckam_bench.posteriordb.SUITE"],
    "imports_old": [
        "ckam_bench.runner", "ckam_bench.budget", "ckam_bench.tally", "ckam_bench.runstatus",
        "ckam_bench.snapshot", "ckam_bench.rundir", "ckam_bench.store", "ckam_bench.provenance",
        "ckam_bench.outputs", "ckam_bench.cli", "ckam_bench.entry", "ckam_bench.discovery",
        "ckam_bench.overrides", "ckam_bench.validate", "ckam_bench.config", "ckam_bench.plugins",
        "ckam_bench.sweeps", "ckam_bench.slurm", "ckam_bench.stationarity", "ckam_bench.sbc",
        "ckam_bench.reference"],
    "commands": ["ckam-bench", "ckam-bench-figures", "ckam-bench-check", "ckam-bench-reference",
                 "ckam-bench-sbc", "ckam-bench-baselines"],
    "check_exit_codes": [0, 1, 2],
    "run_files": ["trace.parquet", "samples.parquet", "diagnostics.parquet", "status.json",
                  ".hydra/config.yaml", ".hydra/overrides.yaml", ".hydra/hydra.yaml", ".lock"],
    "run_files_unfinished": ["resume.npz"],
    "status_keys": [
        "state", "reason", "flags", "flag_notes", "run_id", "target", "sampler", "kernel", "seed",
        "phases", "dim", "started", "updated", "checkpoint_unit", "budget.seconds",
        "budget.clock", "budget.max_iterations", "budget.max_density", "budget.max_grad",
        "budget.wall_seconds", "budget.wall_excludes_warmup", "budget.early_stop", "stopped_early",
        "totals.sampler_seconds",
        "totals.wall_seconds",
        "totals.warmup_seconds", "totals.iterations", "totals.n_collected", "totals.n_density",
        "totals.n_grad", "totals.n_nonfinite", "totals.n_divergent", "totals.checkpoints",
        "contended", "cpu_share", "short_chain", "ess_floor", "config_hash", "target_identity",
        "provenance.loops", "provenance.loops_note", "provenance.threads", "provenance.versions",
        "provenance.git_commit", "provenance.git_dirty", "sampler_info.adaptation",
        "metrics_info.moments.discard", "metrics_unsupported"],
    "status_states": ["running", "complete", "empty", "interrupted", "failed"],
    "status_flags": ["stuck", "nonfinite_proposals", "nonfinite_state", "divergent", "no_samples"],
    "trace_columns": [
        "run_id", "target", "sampler", "kernel", "seed", "checkpoint", "sampler_seconds",
        "sampler_wall_seconds", "sampler_cpu_seconds", "wall_seconds", "eval_seconds",
        "iterations", "n_collected", "n_density", "n_grad", "n_nonfinite", "n_jitter",
        "acceptance", "acceptance_<phase>", "n_divergent", "divergent_<phase>", "step_size",
        "noise", "iters_per_second", "kl", "kl_outside", "ess_min", "ess_median", "ess_max",
        "mcse_max", "ess_min_stored", "mean_error", "second_moment_error", "bias2",
        "moments_discarded", "mmd2", "ess_per_second", "ess_per_density", "ess_per_grad"],
    "samples_columns": ["index", "x<j>"],
    "diagnostics_columns": ["iteration", "phase", "phase_name", "accepted", "accept_prob",
                            "step_size", "noise", "logp"],
}

# How the checks below cover every frozen name: these target members and sampler hooks have
# no default on the base class; the engine looks them up by name (checked by calling it).
LOOKED_UP = {"jit_log_density", "jit_log_density_and_grad", "ckam_divergent"}
# Called in the short run of test_a_plugin_found_through_the_entry_point_writes_the_surface
CALLED_IN_A_RUN = {
    "target": {"_log_density", "_log_density_batch", "_grad_log_density", "sample", "mean",
               "variance", "ckam_constrained", "ckam_fourth_moment",
               "ckam_quantile_statistic", "ckam_true_coefficients", "ckam_label"},
    "sampler": {"init", "advance", "warm_up", "describe", "trace_columns", "skip",
                "ckam_divergent"},
}


# ---------------------------------------------------------------------------- the page
def page_block() -> dict:
    text = PAGE.read_text()
    head = "## The list, machine-readable"
    assert head in text, f"docs/contract.md: no section {head!r}"
    blocks = re.findall(r"```yaml\n(.*?)```", text.split(head, 1)[1], flags=re.S)
    assert len(blocks) == 1, "docs/contract.md: one yaml block under the machine-readable list"
    return yaml.safe_load(blocks[0])


def test_the_page_lists_exactly_the_frozen_names():
    assert page_block() == FROZEN


def test_the_page_explains_every_frozen_name():
    """Every name appears in the page's prose, in backticks, as itself or as a call."""
    prose = PAGE.read_text().split("## The list, machine-readable", 1)[0]
    quoted = set(re.findall(r"`([^`\n]+)`", prose))
    missing = []
    for key, names in FROZEN.items():
        for name in names:
            if key == "config_interpolations":
                ok = f"${{{name}}}" in quoted
            elif key == "config_resolvers":
                ok = any(q.startswith(f"${{{name}:") for q in quoted)
            else:
                name = str(name)  # an exit code is a number
                ok = name in quoted or any(q.startswith(f"{name}(") for q in quoted)
            if not ok:
                missing.append(f"{key}: {name}")
    assert not missing, f"docs/contract.md does not explain: {missing}"


def test_the_extending_page_links_the_contract_and_names_the_group():
    text = (ROOT / "docs" / "extending.md").read_text()
    assert "(contract.md)" in text
    assert '[project.entry-points."ckam_bench.plugins"]' in text
    nav = (ROOT / "mkdocs.yml").read_text()
    assert re.search(r"^\s+- .+: contract\.md$", nav, flags=re.M)


# ---------------------------------------------------------------------------- names exist
def resolve(path: str):
    """The object a dotted path names: the longest importable module, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(path)


@pytest.mark.parametrize("path", FROZEN["imports"])
def test_documented_import_paths_import(path):
    assert resolve(path) is not None


@pytest.mark.parametrize("old", FROZEN["imports_old"])
def test_old_module_paths_are_the_same_modules(old, monkeypatch):
    """A flat-layout path imports, with a DeprecationWarning naming the new one, as the very
    module of the new path (one module, one state)."""
    from ckam_bench import _moved

    monkeypatch.delitem(sys.modules, old, raising=False)  # imported afresh, as in a new process
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    new = module.__name__
    assert new != old and new.startswith("ckam_bench.") and new.endswith(old.rsplit(".", 1)[1])
    assert module is importlib.import_module(new) is importlib.import_module(_moved.MOVED[old])
    assert module.__spec__.name == new  # its own spec: `python -m` and reload of the new name work
    assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message) for w in caught)


def test_python_dash_m_of_an_old_command_module_still_runs(monkeypatch):
    """``python -m ckam_bench.cli``: the old name has code to run as ``__main__`` (found as in a
    fresh process, where the old name is not imported yet)."""
    monkeypatch.delitem(sys.modules, "ckam_bench.cli", raising=False)
    spec = importlib.util.find_spec("ckam_bench.cli")
    assert spec is not None and spec.loader.get_code("ckam_bench.cli") is not None


def test_the_commands_are_installed():
    scripts = {ep.name: ep for ep in metadata.distribution("ckam-bench").entry_points
               if ep.group == "console_scripts"}
    for command in FROZEN["commands"]:
        assert command in scripts, command
        assert callable(scripts[command].load())


def test_target_members_and_hooks_have_their_defaults():
    from ckam_bench.targets.base import Target

    params = list(inspect.signature(Target.__init__).parameters)[1:]
    assert params[:3] == FROZEN["target_init_params"]
    for name in FROZEN["target_members"] + FROZEN["target_hooks"]:
        if name not in LOOKED_UP:
            assert hasattr(Target, name), f"Target.{name}"
    for name in FROZEN["target_hooks"]:  # a hook's default does nothing
        default = getattr(Target, name)
        assert callable(default) and default(Target(1), *([np.zeros((1, 1))] if name in (
            "ckam_constrained", "ckam_quantile_statistic") else [])) is None, name
    target = Target(2)
    for name in FROZEN["target_calls"]:
        assert hasattr(target, name), f"Target().{name}"


def test_sampler_members_block_and_state_fields():
    from ckam_bench.samplers.base import Block, BlockRecorder, ChainState, Sampler

    for name in FROZEN["sampler_members"] + FROZEN["sampler_hooks"]:
        if name not in LOOKED_UP:
            assert hasattr(Sampler, name), f"Sampler.{name}"
    assert set(FROZEN["block_fields"]) <= {f.name for f in fields(Block)}
    assert set(FROZEN["chain_state_fields"]) <= {f.name for f in fields(ChainState)}
    recorder = BlockRecorder(3, 2)
    for name in FROZEN["block_recorder"]:
        assert hasattr(recorder, name), f"BlockRecorder.{name}"
    # The first contract's Block: seven fields by keyword, the others take their defaults.
    n = 3
    block = Block(samples=np.zeros((n, 2)), accepted=np.ones(n, bool), accept_prob=np.ones(n),
                  phase=np.zeros(n, np.int8), step_size=np.ones(n), noise=np.full(n, np.nan),
                  n_nonfinite=0)
    assert block.n == n and block.divergent is None and block.logp is None


class _Sentinel(Exception):
    pass


def test_hooks_a_short_run_does_not_reach_are_called_by_their_consumers():
    """The engine calls these by name (a renamed call site ignores a plugin's hook silently)."""
    from ckam_bench import jit, reference_lookup
    from ckam_bench.checks.stationarity import mode_labels
    from ckam_bench.engine.runner import sampler_block_seconds, sampler_divergences
    from ckam_bench.samplers.base import Block, ChainState, Sampler
    from ckam_bench.targets.base import Target

    described = []

    class Mixture(Target):
        def _log_density(self, x):
            return -0.5 * float(x @ x)

        def describe(self):
            described.append(True)
            return super().describe()

        def _hessian_log_density(self, x):
            return -np.eye(self.dim)

        def marginal_logpdf(self, j, x):
            return -0.5 * np.asarray(x) ** 2

        def marginal_cdf(self, j, x):
            return np.asarray(x) * 0 + 0.5

        def jax_log_density(self):
            return lambda x: -0.5 * x @ x

        def ckam_mixture(self):
            return np.array([0.5, 0.5]), np.array([[-3.0, 0.0], [3.0, 0.0]]), np.ones((2, 2))

        def ckam_reference(self):
            raise _Sentinel("ckam_reference")

        def jit_log_density(self):
            raise _Sentinel("jit_log_density")

        def jit_log_density_and_grad(self):
            raise _Sentinel("jit_log_density_and_grad")

    target = Mixture(2)
    labels = mode_labels(target, np.array([[-3.0, 0.0], [3.1, 0.0]]))
    assert list(labels) == [0, 1]
    with pytest.raises(_Sentinel):  # the id from describe(), no reference of it, the target's own
        reference_lookup.load_reference(target)
    assert described
    if jit.enabled():
        with pytest.raises(_Sentinel, match="jit_log_density$"):
            jit.compiled_log_density(target)
        with pytest.raises(_Sentinel, match="jit_log_density_and_grad"):
            jit.compiled_log_density_and_grad(target)
    assert target.has_hessian and target.has_marginals and target.has_jax_density
    target.hessian_log_density(np.zeros(2))
    assert target.n_hessian == 1
    assert Target.noisy is False and callable(Target.bind_rng)

    class Blocky(Sampler):
        ckam_block_seconds = 0.05

        def ckam_divergent(self, state, n):
            return np.arange(n) == 1

    assert sampler_block_seconds(Blocky()) == 0.05
    n = 3
    block = Block(samples=np.zeros((n, 2)), accepted=np.ones(n, bool), accept_prob=np.ones(n),
                  phase=np.zeros(n, np.int8), step_size=np.ones(n), noise=np.ones(n))
    chain = ChainState(x=np.zeros(2), logp=0.0)
    assert list(sampler_divergences(Blocky(), chain, block).divergent) == [False, True, False]


def fake_dist(site: Path, name: str, group: str, module: str) -> None:
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{group}]\n{name} = {module}\n")


def test_every_entry_point_group_is_read(tmp_path, monkeypatch, capsys):
    from ckam_bench.commands import plugins

    monkeypatch.setattr(plugins, "_noted", set())
    groups = FROZEN["entry_point_groups"] + FROZEN["entry_point_groups_old"]
    for i, group in enumerate(groups):
        fake_dist(tmp_path, f"ckb_group{i}", group, f"ckb_group{i}_pkg.conf")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = plugins.config_modules()
    for i in range(len(groups)):
        assert f"ckb_group{i}_pkg.conf" in found
    notes = capsys.readouterr().err.splitlines()
    assert len(notes) == len(FROZEN["entry_point_groups_old"])
    assert all(FROZEN["entry_point_groups"][0] in line for line in notes)


# ---------------------------------------------------------------------------- a real run
SPY = '''\
"""A plugin that defines every hook and records which ones the harness calls."""

import numpy as np

from ckam_bench.samplers.base import BlockRecorder, ChainState, Sampler, accept_prob, check_start
from ckam_bench.targets.base import Target

CALLS = set()  # ("target" or "sampler", member name)


def spy(fn):
    def wrapped(self, *args):
        CALLS.add(("target" if isinstance(self, Target) else "sampler", fn.__name__))
        return fn(self, *args)
    wrapped.__name__ = fn.__name__
    return wrapped


class SpyGauss(Target):
    """N(0, I) with the members and hooks a short run reaches."""

    def __init__(self, dim=2, scale=1.0):
        super().__init__(dim, start=np.ones(dim), box=[[-6.0, 6.0]] * dim)
        self.scale = float(scale)

    @spy
    def _log_density(self, x):
        return -0.5 * float(x @ x)

    @spy
    def _log_density_batch(self, X):
        return -0.5 * np.sum(np.asarray(X) ** 2, axis=1)

    @spy
    def _grad_log_density(self, x):
        return -np.asarray(x, float)

    @spy
    def sample(self, n, rng):
        return rng.standard_normal((n, self.dim))

    @property
    def mean(self):
        CALLS.add(("target", "mean"))
        return np.zeros(self.dim)

    @property
    def variance(self):
        CALLS.add(("target", "variance"))
        return np.ones(self.dim)

    @spy
    def describe(self):
        return {**super().describe(), "scale": self.scale}

    @spy
    def ckam_constrained(self, X):
        return {"radius": np.sqrt(np.sum(X ** 2, axis=1))}

    @spy
    def ckam_fourth_moment(self):
        return np.full(self.dim, 3.0)

    @spy
    def ckam_quantile_statistic(self, X):
        return 1.0 - np.exp(-0.5 * np.sum(X ** 2, axis=1))  # chi-square(2) cdf

    @spy
    def ckam_true_coefficients(self):
        return np.zeros(1), slice(0, 1)

    @spy
    def ckam_label(self):
        return "ckb_spy_label"


class SpyKernel:
    """A plugin kernel (the sampler only records it)."""

    def __init__(self, lengthscale=1.0):
        self.lengthscale = lengthscale


class SpySchedule:
    """A plugin schedule: a constant rate."""

    def __init__(self, value=0.5):
        self.value = value

    def __call__(self, t):
        return self.value


class SpyRW(Sampler):
    """Random-walk Metropolis with a burn-in phase; every member and hook recorded."""

    phases = ("burn_in", "sampling")

    def __init__(self, step_size=1.0, rate=None, kernel=None, burn_in=100):
        self.step_size, self.rate, self.kernel, self.burn_in = step_size, rate, kernel, burn_in

    @spy
    def warm_up(self, target):
        pass

    @spy
    def describe(self):
        return {"adaptation": "none", "kernel": type(self.kernel).__name__,
                "rate": type(self.rate).__name__, "step_size": self.step_size}

    @spy
    def skip(self, target):
        return False, ""

    @spy
    def init(self, target, x0, rng):
        self.target, self.rng = target, rng
        x, logp = check_start(target, x0)
        return ChainState(x=x, logp=logp, t=0)

    @spy
    def advance(self, state, n):
        rec = BlockRecorder(n, self.target.dim)
        x, logp, t = state.x, state.logp, state.t
        steps = self.step_size * self.rng.standard_normal((n, self.target.dim))
        log_u = np.log(self.rng.random(n))
        for i in range(n):
            y = x + steps[i]
            logp_y = self.target.log_density(y)
            rec.accept_prob[i] = accept_prob(logp_y - logp)
            if log_u[i] < logp_y - logp:
                x, logp = y, logp_y
                rec.accepted[i] = True
            rec.phase[i] = int(t + i >= self.burn_in)
            rec.step_size[i] = self.step_size
            rec.logp[i] = logp
            if t + i >= self.burn_in:
                rec.collect(x)
        return ChainState(x=x, logp=logp, t=t + n), rec.block()

    @spy
    def trace_columns(self, state):
        return {"spy_step": self.step_size}

    @spy
    def ckam_divergent(self, state, n):
        return np.zeros(n, dtype=bool)
'''

SPY_CONF = {
    "sampler/ckb_spy_rw.yaml": """\
        # Spy random walk (tests/test_contract.py).
        defaults:
          - /schedule@rate: ckb_spy_rate
          - _self_

        _target_: ckb_spy.SpyRW
        kernel: ${kernel}
        step_size: ${optimal_scale:${target.dim},1.0}
        """,
    "target/ckb_spy_gauss.yaml": """\
        # Spy Gaussian (tests/test_contract.py).
        _target_: ckb_spy.SpyGauss
        scale: 1.0
        """,
    "kernel/ckb_spy_kernel.yaml": """\
        # Spy kernel (tests/test_contract.py).
        _target_: ckb_spy.SpyKernel
        lengthscale: 2.0
        """,
    "schedule/ckb_spy_rate.yaml": """\
        # Spy schedule (tests/test_contract.py).
        _target_: ckb_spy.SpySchedule
        value: 0.5
        """,
    "experiment/ckb_spy_exp.yaml": """\
        # @package _global_
        # Spy experiment (tests/test_contract.py).
        defaults:
          - override /sampler: ckb_spy_rw
          - override /target: ckb_spy_gauss
          - override /kernel: ckb_spy_kernel

        budget:
          max_iterations: 1500
        """,
}


@pytest.fixture
def spy_plugin(tmp_path, monkeypatch):
    """The spy plugin, installed as a distribution with an entry point of the frozen group."""
    site = tmp_path / "site"
    pkg = site / "ckb_spy"
    for name, text in SPY_CONF.items():
        (pkg / "conf" / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / "conf" / name).write_text(textwrap.dedent(text))
    (pkg / "__init__.py").write_text(SPY)
    (pkg / "conf" / "__init__.py").write_text("")
    fake_dist(site, "ckb_spy", FROZEN["entry_point_groups"][0], "ckb_spy.conf")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("ckb_spy", None)
    yield pkg
    sys.modules.pop("ckb_spy", None)


def test_a_plugins_config_uses_every_frozen_key(spy_plugin):
    texts = {name: (spy_plugin / "conf" / name).read_text() for name in SPY_CONF}
    assert {name.split("/")[0] for name in texts} == set(FROZEN["config_groups"])
    everything = "\n".join(texts.values())
    for key in FROZEN["config_keys"]:
        assert re.search(rf"^{key}:", everything, flags=re.M), key
    for name in FROZEN["config_interpolations"]:
        assert f"${{{name}}}" in everything, name
    for name in FROZEN["config_resolvers"]:
        assert f"${{{name}:" in everything, name


def test_a_plugins_options_are_listed_with_their_comment(spy_plugin):
    """``ckam-bench list``: each option of the plugin's groups, described by its leading comment."""
    import io

    from ckam_bench.commands import discovery

    buffer = io.StringIO()
    discovery.print_list(["sampler", "kernel", "schedule", "experiment"], out=buffer)
    out = buffer.getvalue()
    for name in SPY_CONF:
        if name.startswith("target/"):
            continue  # listing targets builds every built-in one (slow); the run builds this one
        option = Path(name).stem
        line = next((ln for ln in out.splitlines() if ln.split()[:1] == [option]), None)
        assert line is not None and "Spy " in line, (option, line)


def expand(names: list[str], phases: list[str], dim: int) -> list[str]:
    out = []
    for name in names:
        if "<phase>" in name:
            out += [name.replace("<phase>", p) for p in phases]
        elif "<j>" in name:
            out += [name.replace("<j>", str(j)) for j in range(dim)]
        else:
            out.append(name)
    return out


def dotted(status: dict, key: str) -> bool:
    node = status
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_a_plugin_found_through_the_entry_point_writes_the_surface(spy_plugin, tmp_path):
    """One short run of the spy plugin (experiment, kernel, schedule, sampler and target from the
    plugin's config package): the hooks are called, and every frozen file, ``status.json`` key
    and parquet column is written."""
    import ckam_bench
    from ckam_bench.commands.config import optimal_scale

    folder = tmp_path / "run"
    result = ckam_bench.run(experiment="ckb_spy_exp", run_dir=folder, progress=False)
    spy = sys.modules["ckb_spy"]
    status = result.status
    assert status["state"] == "complete", status.get("reason")
    assert status["sampler"] == "ckb_spy_rw" and status["kernel"] == "ckb_spy_kernel"
    assert status["target"] == "ckb_spy_label"  # ckam_label
    info = status["sampler_info"]
    assert info["kernel"] == "SpyKernel" and info["rate"] == "SpySchedule"
    assert info["step_size"] == pytest.approx(optimal_scale(2, 1.0))
    expected = {(kind, name) for kind, names in CALLED_IN_A_RUN.items() for name in names}
    assert expected <= spy.CALLS, f"never called: {sorted(expected - spy.CALLS)}"

    for name in FROZEN["run_files"]:
        assert (folder / name).is_file(), name
    missing = [k for k in FROZEN["status_keys"] if not dotted(status, k)]
    assert not missing, f"status.json lacks {missing}"
    phases, dim = status["phases"], status["dim"]
    assert phases == ["burn_in", "sampling"] and dim == 2
    trace = pd.read_parquet(folder / "trace.parquet")
    missing = set(expand(FROZEN["trace_columns"], phases, dim)) - set(trace.columns)
    assert not missing, f"trace.parquet lacks {sorted(missing)}"
    assert "spy_step" in trace.columns  # the sampler's trace_columns
    samples = pd.read_parquet(folder / "samples.parquet")
    assert list(samples.columns) == expand(FROZEN["samples_columns"], phases, dim) + ["radius"]
    diagnostics = pd.read_parquet(folder / "diagnostics.parquet")
    missing = set(FROZEN["diagnostics_columns"]) - set(diagnostics.columns)
    assert not missing, f"diagnostics.parquet lacks {sorted(missing)}"


def test_an_empty_run_has_the_frozen_state_and_flag(spy_plugin, tmp_path):
    """A run of the plugin stopped before its burn-in ends collects nothing: the frozen state
    ``empty`` and flag ``no_samples``, ``short_chain`` null (no ESS)."""
    import ckam_bench

    result = ckam_bench.run(experiment="ckb_spy_exp", run_dir=tmp_path / "empty", progress=False,
                            budget={"max_iterations": 50})
    status = result.status
    assert status["state"] == "empty" and status["state"] in FROZEN["status_states"]
    assert status["flags"] == ["no_samples"] and status["flags"][0] in FROZEN["status_flags"]
    assert status["short_chain"] is None and status["ess_floor"] == 100
    assert status["budget"]["wall_excludes_warmup"] is True and status["target_identity"] == {}


def test_every_frozen_state_and_flag_is_one_the_engine_writes():
    """Each state and flag name is written by the engine under that name (a renamed one would
    leave scripts that test for it silently false)."""
    engine = ROOT / "ckam_bench" / "engine"
    code = "".join((engine / name).read_text() for name in ("runner.py", "runstatus.py", "tally.py"))
    for name in FROZEN["status_states"] + FROZEN["status_flags"]:
        assert f'"{name}"' in code, name
    from ckam_bench.engine import runstatus
    from ckam_bench.engine.tally import WARNINGS

    assert set(runstatus.ENDED) <= set(FROZEN["status_states"]) and "divergent" in WARNINGS


def test_the_check_exit_codes(tmp_path):
    """``ckam-bench-check``: 0 pass, 1 FAIL, 2 bad input (one line, nothing created); the FAIL
    run itself is tests/test_stationarity.py's. Run as a user runs it, in a process of its own."""
    import subprocess

    from ckam_bench.checks import stationarity

    assert [stationarity.EXIT_PASS, stationarity.EXIT_FAIL, stationarity.EXIT_CONFIG] == \
        FROZEN["check_exit_codes"]
    assert [stationarity.verdict_code(v) for v in ("pass", "FAIL")] == FROZEN["check_exit_codes"][:2]
    done = clirun.run([sys.executable, "-c", "from ckam_bench.checks.stationarity import main; main()", "target=gauss2d_corr",
                           "seed=-1", f"hydra.run.dir={tmp_path / 'check'}"], capture_output=True, text=True,
                      cwd=tmp_path)
    assert done.returncode == FROZEN["check_exit_codes"][2], done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_unfinished_run_keeps_its_resume_state(tmp_path):
    """A run that stops before its end (here: the sampler fails after the first checkpoint)
    leaves the frozen resume file beside its status."""
    from ckam_bench.engine.runner import Budget, Runner
    from tests.legacy_plugin import PlainRandomWalk, StanStyleGaussian

    class Failing(PlainRandomWalk):
        def advance(self, state, n):
            if state.t >= 200:
                raise RuntimeError("sampler failed")
            return super().advance(state, n)

    labels = {"run_id": "r1", "target": "t", "sampler": "s", "kernel": "none", "seed": 0}
    runner = Runner(Failing(1.5), StanStyleGaussian(), {}, Budget(seconds=60, max_iterations=3000),
                    tmp_path, np.random.default_rng(0), labels, progress=False,
                    checkpoint_unit="iterations", checkpoints=np.array([100.0, 1000.0]))
    with pytest.raises(RuntimeError, match="sampler failed"):
        runner.run()
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["state"] == "failed"
    for name in FROZEN["run_files_unfinished"]:
        assert (tmp_path / name).is_file(), name


# ---------------------------------------------------------------------------- the old plugin
def command(name: str) -> list[str]:
    """A console script of this environment (the documented commands)."""
    script = Path(sys.executable).parent / name
    return [str(script)] if script.exists() else [shutil.which(name) or name]


@pytest.fixture(scope="session")
def old_plugin_site(tmp_path_factory):
    """``pip install`` of the never-edited old-contract plugin (a copy: a build writes into its
    source folder) into a folder of its own, put on PYTHONPATH by :func:`cli`: found through its
    ``ckam_bench.plugins`` entry point, never installed into the shared environment."""
    from tests.test_plugins import build_plugin

    site = build_plugin(tmp_path_factory.mktemp("old_contract_plugin"), OLD_PLUGIN)
    yield site
    shutil.rmtree(site, ignore_errors=True)


def cli(args: list[str], cwd: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0",
           "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return clirun.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


def fixture_digests() -> dict[str, str]:
    """sha256 of each file of the old-contract plugin (newlines normalised), by relative path."""
    out = {}
    for path in sorted(OLD_PLUGIN.rglob("*")):
        skip = {"__pycache__", "build"}  # what Python or an in-place build may add
        if path.is_file() and not skip & set(path.parts) and ".egg-info" not in path.as_posix():
            data = path.read_bytes().replace(b"\r\n", b"\n")
            out[path.relative_to(OLD_PLUGIN).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


# The old-contract plugin as it was written. Never update these digests: a plugin that must
# change to keep running is a broken contract; fix ckam-bench instead.
OLD_PLUGIN_DIGESTS = {
    "README.md": "fd14f6c60580e2df963d5a078ade4cca537b7beb007bf9bcbe00a6b0ad7a7078",
    "ckb_old_contract/__init__.py": "067e7137bd8155dd324d19848ba6cf5a6728e86142bd449c3025738e96b039cf",
    "ckb_old_contract/conf/__init__.py": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "ckb_old_contract/conf/sampler/independence.yaml":
        "b5bf015a70a72915a5b8b184c6c57d2ecf640e6dc0cced5cf6d8b2d8484726de",
    "ckb_old_contract/conf/target/wide_gauss.yaml":
        "92cbfc2d9b816b5992607a7f85ea1ee43ddbe402d7fa85a61b72ea48e1a90ee5",
    "pyproject.toml": "e5f241dd1c605732b1894e3ff46d3f989c35ca36108ee8a9183d7e40e743a9f5",
}


def test_the_old_contract_plugin_is_never_edited():
    """The fixture is the first documented contract, byte for byte."""
    assert fixture_digests() == OLD_PLUGIN_DIGESTS


def test_the_old_contract_plugin_runs_from_the_command_line(old_plugin_site, tmp_path):
    """Installed by pip, found through its entry point: ``ckam-bench sampler=independence
    target=wide_gauss`` runs it to completion, with no note about the group."""
    proc = cli([*command("ckam-bench"), "sampler=independence", "target=wide_gauss",
                "budget.max_iterations=2000", "progress=false", f"hydra.run.dir={tmp_path / 'one'}"],
               tmp_path, old_plugin_site)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "note: plugin package" not in proc.stderr
    status = json.loads((tmp_path / "one" / "status.json").read_text())
    assert status["state"] == "complete" and status["sampler"] == "independence"
    assert status["target"] == "wide_gauss" and status["totals"]["iterations"] == 2000
    assert status["sampler_info"]["adaptation"] == "none"  # the plugin's own describe()


@pytest.mark.slow
def test_the_old_contract_plugin_sweeps_reports_checks_and_calibrates(old_plugin_site, tmp_path):
    """A sweep, ``ckam-bench-figures`` on it, ``ckam-bench-check`` and ``ckam-bench-sbc`` (with a
    PyMC model as target), each with the smallest settings that still give a verdict."""
    site, work = old_plugin_site, tmp_path
    sweep = work / "sweep"
    proc = cli([*command("ckam-bench"), "-m", "sampler=independence", "target=wide_gauss",
                "seed=0,1", "budget.max_iterations=2000", "progress=false",
                f"hydra.sweep.dir={sweep}"], work, site)
    assert proc.returncode == 0, proc.stderr[-3000:]
    folders = sorted(p for p in sweep.iterdir() if (p / "status.json").is_file())
    assert [json.loads((f / "status.json").read_text())["state"] for f in folders] == ["complete"] * 2

    out = work / "report"
    proc = cli([*command("ckam-bench-figures"), str(sweep), "--out", str(out),
                "--generic", "marginals,diagnostics", "--formats", "png"], work, site)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| wide_gauss | independence | none | 2 | 0, 1 | complete 2 |" in (out / "report.md").read_text()
    assert any(row.startswith("| independence |")
               for row in (out / "results_wide_gauss.md").read_text().splitlines())
    assert (out / "report.html").is_file() and (out / "wide_gauss_marginals.png").is_file()

    check = work / "check"
    proc = cli([*command("ckam-bench-check"), "sampler=independence", "target=wide_gauss",
                "check.n_chains=20", "check.times=[50,100]", f"hydra.run.dir={check}"], work, site)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "independence on wide_gauss: pass" in proc.stdout
    assert (check / "verdict.md").is_file()

    pytest.importorskip("pymc")  # the [pymc] extra; CI installs it
    proc = cli([*command("ckam-bench-sbc"), "sampler=independence", "target=pymc",
                f"target.model={MODELS}:normal_mean", "sbc.simulations=2", "sbc.draws=9",
                "sbc.bins=2", "budget.max_iterations=1000", "progress=false"], work, site)
    # 2 simulations in 2 bins: the smallest p-value is 0.157 > alpha, so the verdict is pass
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "SBC PASS: independence on" in proc.stdout
    verdict = next((work / "outputs" / "sbc").rglob("verdict.json"))
    assert json.loads(verdict.read_text())["sampler"] == "independence"
