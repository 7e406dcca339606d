"""Checks on a composed config before anything is built, sampled or written.

Hydra already rejects unknown group options (listing the valid ones) and unknown keys. This
module adds what the constructors cannot say well by themselves:

* every number in the config is finite (``sampler.step_size=inf`` names its key);
* every argument of an object built from the config (``_target_`` nodes: target, sampler,
  kernel, schedules, metrics) has the type its constructor's annotation asks for, so
  ``sampler.step_size=abc`` is reported as ``sampler.step_size: expected a number, got 'abc'``
  rather than as a conversion error deep inside the sampler;
* the run-level keys (``seed``, ``start``, ``budget``, ``checkpoint``, ``progress``,
  ``block_seconds``, store capacities) have sensible values.

Range checks that belong to an object (β ∈ (0, 1), step sizes > 0, Matérn smoothness > 1, …)
stay in its constructor; :func:`ckam_bench.commands.cli.build` reports them with the full key of the
node that failed.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
import os
import re
import types
import typing

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException


class ConfigError(ValueError):
    """The composed configuration cannot be run; the message names the key."""


# Limits on values that size memory, files or counters: checked before anything is built.
MAX_SEED = 2**63 - 1  # seeds are stored as int64 in the trace
MAX_ROWS = 10_000_000  # rows of a bounded store (samples, diagnostics)
MAX_COUNT = 2**62  # iteration and evaluation caps
MAX_SECONDS = 1.0e8  # about three years: budgets, caps, checkpoint spacing
BLOCK_SECONDS = (1.0e-4, 3600.0)  # a block of iterations: from 0.1 ms to an hour
# ckam-bench-check: chains, fresh reference draws, tested times, and the total iterations
# (chains x last tested time) that a check may run (about three hours at a million per second)
CHECK_CHAINS = (10, 100_000)
CHECK_REFERENCE = (100, 10_000_000)
CHECK_MAX_TIMES = 1_000
CHECK_MAX_ITERATIONS = 10**10


def resolved(cfg: DictConfig) -> dict:
    """The config as plain containers, every interpolation resolved; a resolver that fails
    (unknown resolver, missing environment variable, …) is a ConfigError naming the key."""
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:
        cause = exc  # a resolver's own ConfigError (e.g. ${pymc_dim:}) names its key: keep it
        while cause is not None and not isinstance(cause, ConfigError):
            cause = cause.__cause__ or cause.__context__
        if cause is not None:
            raise cause from None
        key = getattr(exc, "full_key", None) or "config"
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{key}: cannot resolve the value: {reason}") from None


def check_config(cfg: DictConfig) -> None:
    """Raise :class:`ConfigError` for the first problem found in ``cfg``."""
    plain = resolved(cfg)
    plain.pop("hydra", None)
    _check_run_keys(plain)  # first: their messages give the allowed range
    if "check" in plain:
        check_check_keys(plain)
    check_objects(plain)


def check_objects(plain: dict) -> None:
    """Every number finite, every constructor argument of the right type (``plain``: the
    resolved config, e.g. from :func:`resolved`)."""
    _check_finite(plain, "")
    for key in ("target", "sampler", "metrics"):
        _check_types(plain.get(key), key)


def _check_finite(node, path: str) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            _check_finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _check_finite(v, f"{path}[{i}]")
    elif isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"{path}: must be a finite number, got {node}")


def _resolve(target: str):
    module, _, name = target.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"cannot import {target!r}: {exc}") from exc


def _accepts(hint, value) -> bool | None:
    """Whether ``value`` fits a simple annotation; None when the hint is not checked."""
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        results = [_accepts(h, value) for h in typing.get_args(hint)]
        if value is None and type(None) in typing.get_args(hint):
            return True
        checked = [r for r in results if r is not None]
        return any(checked) if checked else None
    return None


_EXPECTED = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _check_types(node, path: str) -> None:
    if isinstance(node, list):
        for i, v in enumerate(node):
            _check_types(v, f"{path}[{i}]")
        return
    if not isinstance(node, dict):
        return
    for k, v in node.items():
        if isinstance(v, (dict, list)):
            _check_types(v, f"{path}.{k}")
    if "_target_" not in node:
        return
    func = _resolve(node["_target_"])
    try:
        hints = typing.get_type_hints(func.__init__ if inspect.isclass(func) else func)
        params = inspect.signature(func).parameters
    except (TypeError, ValueError, NameError):
        return
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for k, v in node.items():
        if k.startswith("_"):
            continue
        if k not in params and not takes_kwargs:
            valid = ", ".join(p for p in params if p not in ("self", "target"))
            raise ConfigError(f"{path}.{k}: unknown key for {node['_target_']} (valid: {valid})")
        hint = hints.get(k)
        if hint is None or isinstance(v, (dict, list)):
            continue
        if _accepts(hint, v) is False:
            want = _EXPECTED.get(hint, getattr(hint, "__name__", str(hint)))
            for h in typing.get_args(hint):
                want = _EXPECTED.get(h, want) if h is not type(None) else want
            raise ConfigError(f"{path}.{k}: expected {want}, got {v!r}")


def _get(plain: dict, key: str):
    node = plain
    for p in key.split("."):
        node = node.get(p) if isinstance(node, dict) else None
    return node


def _positive_number(plain: dict, key: str, allow_none: bool = False,
                     limit: float | None = None) -> None:
    node = _get(plain, key)
    if node is None and allow_none:
        return
    if not (isinstance(node, numbers.Real) and not isinstance(node, bool) and node > 0):
        rule = f" and <= {limit:g}" if limit is not None else ""
        raise ConfigError(f"{key}: must be a number > 0{rule}, got {node!r}")
    if limit is not None and node > limit:
        raise ConfigError(f"{key}: must be at most {limit:g}, got {node!r}")


def _positive_int(plain: dict, key: str, allow_none: bool = False,
                  limit: int | None = None) -> None:
    node = _get(plain, key)
    if node is None and allow_none:
        return
    if not (isinstance(node, int) and not isinstance(node, bool) and node >= 1):
        rule = f" and <= {limit:,}" if limit is not None else ""
        raise ConfigError(f"{key}: must be an integer >= 1{rule}, got {node!r}")
    if limit is not None and node > limit:
        raise ConfigError(f"{key}: must be at most {limit:,}, got {node:,}")


def _check_run_keys(plain: dict) -> None:
    check_seed(plain)
    start = plain.get("start")
    if start is not None and not (
        isinstance(start, list) and all(isinstance(v, numbers.Real) for v in start)
    ):
        raise ConfigError(f"start: must be null or a list of numbers, got {start!r}")
    _positive_number(plain, "budget.seconds", limit=MAX_SECONDS)
    for key in ("max_iterations", "max_density", "max_grad"):
        _positive_int(plain, f"budget.{key}", allow_none=True, limit=MAX_COUNT)
    _positive_number(plain, "budget.wall_seconds", allow_none=True, limit=MAX_SECONDS)
    if _get(plain, "budget.clock") not in ("wall", "cpu"):
        raise ConfigError(f"budget.clock: must be wall or cpu, got {_get(plain, 'budget.clock')!r}")
    _check_early_stop(plain)
    _positive_number(plain, "checkpoint.first", limit=MAX_COUNT)
    _positive_int(plain, "checkpoint.per_decade", allow_none=True, limit=1000)
    _positive_number(plain, "checkpoint.every", allow_none=True, limit=MAX_COUNT)
    _positive_number(plain, "checkpoint.max_overhead", allow_none=True)
    lo, hi = BLOCK_SECONDS
    block = plain.get("block_seconds")
    if not (isinstance(block, numbers.Real) and not isinstance(block, bool) and lo <= block <= hi):
        raise ConfigError(f"block_seconds: must be a number in [{lo:g}, {hi:g}], got {block!r}")
    _positive_int(plain, "threads", limit=os.cpu_count() or 1)
    for key in ("samples_capacity", "diagnostics_capacity", "diagnostics_head"):
        _positive_int(plain, f"metrics.{key}", limit=MAX_ROWS)
    if plain.get("progress") not in ("auto", True, False):
        raise ConfigError(f"progress: must be auto, true or false, got {plain.get('progress')!r}")



def _check_early_stop(plain: dict) -> None:
    """``budget.early_stop`` (:class:`ckam_bench.engine.budget.EarlyStop`): enabled a boolean;
    metric a trace column's name; threshold > 0; multiple >= 1; min_ess >= 0; futility null
    or > 0."""
    node = _get(plain, "budget.early_stop")
    if node is None:
        return
    if not isinstance(node, dict):
        raise ConfigError(f"budget.early_stop: must be a mapping (enabled, metric, threshold, "
                          f"multiple, min_ess), got {node!r}")
    if not isinstance(node.get("enabled"), bool):
        raise ConfigError(f"budget.early_stop.enabled: must be true or false, got {node.get('enabled')!r}")
    metric = node.get("metric")
    if not (isinstance(metric, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", metric)):
        raise ConfigError(f"budget.early_stop.metric: must be a trace column's name, got {metric!r}")
    _positive_number(plain, "budget.early_stop.threshold", limit=MAX_COUNT)
    multiple = node.get("multiple")
    if not (isinstance(multiple, numbers.Real) and not isinstance(multiple, bool)
            and math.isfinite(multiple) and 1 <= multiple <= MAX_COUNT):
        raise ConfigError(f"budget.early_stop.multiple: must be a number in [1, {MAX_COUNT:,}], got {multiple!r}")
    ess = node.get("min_ess")
    if not (isinstance(ess, numbers.Real) and not isinstance(ess, bool) and math.isfinite(ess)
            and 0 <= ess <= MAX_COUNT):
        raise ConfigError(f"budget.early_stop.min_ess: must be a number in [0, {MAX_COUNT:,}], got {ess!r}")
    _positive_number(plain, "budget.early_stop.futility", allow_none=True, limit=MAX_COUNT)


def check_runs_per_job(value) -> int:
    """``hydra.launcher.runs_per_job`` of ``hydra/launcher=slurm`` (runs per SLURM array
    element, :mod:`ckam_bench.commands.slurm_groups`): an integer >= 1."""
    _positive_int({"hydra": {"launcher": {"runs_per_job": value}}}, "hydra.launcher.runs_per_job")
    return value


def check_seed(plain: dict) -> None:
    seed = plain.get("seed")
    if not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
        raise ConfigError(f"seed: must be an integer >= 0 (at most 2**63 - 1), got {seed!r}")
    if seed > MAX_SEED:
        raise ConfigError(f"seed: must be at most 2**63 - 1, got {seed}")


def int_in(plain: dict, key: str, lo: int, hi: int, allow_none: bool = False):
    """``plain[key]`` as an integer in [lo, hi] (a ConfigError naming the key otherwise)."""
    node = _get(plain, key)
    if node is None and allow_none:
        return None
    if not (isinstance(node, int) and not isinstance(node, bool) and lo <= node <= hi):
        raise ConfigError(f"{key}: must be an integer in [{lo:,}, {hi:,}], got {node!r}")
    return node


def check_check_keys(plain: dict) -> None:
    """ckam-bench-check's keys (``check.*``)."""
    n_chains = int_in(plain, "check.n_chains", *CHECK_CHAINS)
    int_in(plain, "check.n_reference", *CHECK_REFERENCE)
    alpha = _get(plain, "check.alpha")
    if not (isinstance(alpha, numbers.Real) and not isinstance(alpha, bool) and 0 < alpha < 1):
        raise ConfigError(f"check.alpha: must be a number in (0, 1), got {alpha!r}")
    times = _get(plain, "check.times")
    if times is not None:
        check_times(times, n_chains)


def check_times(times, n_chains: int) -> None:
    """The iteration counts of ckam-bench-check (``check.times``): 1 to 1000 increasing
    integers >= 1, the chains times the last one at most CHECK_MAX_ITERATIONS."""
    rule = (f"a list of 1 to {CHECK_MAX_TIMES} increasing integers >= 1, check.n_chains x the "
            f"last at most {CHECK_MAX_ITERATIONS:.0e}")
    if not (isinstance(times, list) and 1 <= len(times) <= CHECK_MAX_TIMES and all(
            isinstance(t, int) and not isinstance(t, bool) for t in times)):
        raise ConfigError(f"check.times: must be {rule}, got {times!r}")
    if times[0] < 1 or any(b <= a for a, b in zip(times, times[1:])) \
            or n_chains * times[-1] > CHECK_MAX_ITERATIONS:
        raise ConfigError(f"check.times: must be {rule}, got {times!r}")


def condense_hydra_error(text: str) -> str:
    """Hydra's multi-line report of a composition error (unknown key, unknown group option)
    as one line: its sentences joined, the available options listed inline."""
    out, options, skip = [], [], False
    for line in text.splitlines():
        if not line.strip() or line.startswith("Set the environment variable HYDRA_FULL_ERROR"):
            continue
        if line.startswith("Config search path"):
            skip = True
            continue
        if line[:1] in ("\t", " "):
            if not skip and line.strip().startswith(("full_key:", "object_type")):
                continue
            if not skip:
                options.append(line.strip())
            continue
        skip = False
        out.append(line.strip().rstrip(".:"))
    message = "; ".join(out) or "the command line could not be parsed"
    if options:
        message += " (" + ", ".join(options) + ")"
    return message


def one_line_hydra_errors(app, prog: str, started: list) -> None:
    """Run the Hydra ``app``; an error Hydra reports before the task starts (``started``
    still empty: an unknown key, an unknown group option, a malformed override) is printed as
    one line naming it, exit 2. Once the task runs, its output passes through unchanged."""
    import contextlib
    import io
    import sys

    from ckam_bench.commands.overrides import flags_first
    from ckam_bench.commands.sweeps import PROGRAM

    PROGRAM.append(prog)
    sys.argv[1:] = flags_first(sys.argv[1:])
    real = sys.stderr

    class Held(io.TextIOBase):
        held: list = []

        def write(self, text):
            if started:
                self.release()
                return real.write(text)
            self.held.append(text)
            return len(text)

        def release(self):
            if self.held:
                real.write("".join(self.held))
                self.held.clear()

        def flush(self):
            real.flush()

    held = Held()
    try:
        with contextlib.redirect_stderr(held):
            app()
    except SystemExit as exc:
        if not started and exc.code not in (0, None):
            text = "".join(held.held)
            if text.startswith(f"{prog}: "):  # our own line (a refused sweep folder)
                real.write(text)
                raise
            print(f"{prog}: invalid configuration: {condense_hydra_error(text)}", file=real)
            sys.exit(2)
        held.release()
        raise
    held.release()
