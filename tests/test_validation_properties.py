"""Property-based tests of the validation layer: every generated bad value is a ConfigError
that names its key (never another exception, never an allocation), and from the CLI exit 2
with nothing created — for every key of ckam-bench, ckam-bench-check, ckam-bench-reference
and ckam-bench-figures."""

import math
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckam_bench.commands.cli import build
from ckam_bench.commands.validate import MAX_ROWS, ConfigError
from tests import clirun
from tests.composing import compose_with

ROOT = Path(__file__).resolve().parents[1]
LABELS = {"run_id": "t", "sampler": "s", "target": "t", "kernel": "k", "seed": 0}

POSITIVE = ["budget.seconds", "budget.wall_seconds", "checkpoint.first", "checkpoint.every",
            "block_seconds", "sampler.step_size"]
COUNTS = ["budget.max_iterations", "metrics.samples_capacity", "metrics.diagnostics_head",
          "metrics.diagnostics_capacity", "checkpoint.per_decade"]

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8).filter(
    lambda w: w not in ("true", "false", "null", "nan", "inf", "e"))
bad_positive = st.one_of(
    st.floats(max_value=0.0, allow_nan=False, allow_infinity=False),
    st.sampled_from(["nan", "inf", "-inf", "1e309"]),
    st.floats(min_value=1e13, max_value=1e300),
    words,
)
bad_count = st.one_of(
    st.integers(max_value=0),
    st.integers(min_value=2**62 + 1, max_value=2**70),
    st.integers(min_value=MAX_ROWS + 1, max_value=2**61).map(lambda n: n),
    st.floats(min_value=0.5, max_value=1e6).filter(lambda f: not float(f).is_integer()),
    words,
)


def _fmt(value) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def _build(override: str):
    cfg = compose_with("config", ["sampler=rw", "target=gmm2d"], "progress=false", override)
    return build(cfg, LABELS, "unused")


def _assert_named(key: str, value) -> None:
    override = f"{key}={_fmt(value)}"
    with pytest.raises(ConfigError) as err:
        runner = _build(override)
        # a huge value that is legal for its key must still be bounded by a related check
        raise AssertionError(f"{override} accepted: {runner}")
    assert key.split(".")[-1] in str(err.value), (override, str(err.value))


SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(key=st.sampled_from(POSITIVE), value=bad_positive)
def test_bad_positive_numbers_name_their_key(key, value):
    if key in ("checkpoint.first", "checkpoint.every") and isinstance(value, float) \
            and 1e13 <= value <= 2**62:
        value = -value  # legal (if absurd) spacings: test their negatives
    if key == "sampler.step_size" and isinstance(value, float) and value >= 1e13:
        value = 0.0  # a huge step size is legal (every proposal is rejected)
    _assert_named(key, value)


@SETTINGS
@given(key=st.sampled_from(COUNTS), value=bad_count)
def test_bad_counts_name_their_key(key, value):
    if key in ("budget.max_iterations",) and isinstance(value, int) and 1 <= value <= 2**62:
        value = -value  # large iteration caps are legal
    if key == "checkpoint.per_decade" and isinstance(value, int) and 1 <= value <= 1000:
        value = 0
    _assert_named(key, value)


@SETTINGS
@given(value=st.one_of(st.integers(max_value=-1), st.integers(min_value=2**63), words))
def test_bad_seeds_name_their_key(value):
    _assert_named("seed", value)


@settings(max_examples=3, deadline=None, derandomize=True)
@given(key=st.sampled_from(POSITIVE + COUNTS + ["seed"]), value=st.sampled_from(
    ["-1", "0", "nan", "abc", "1e300", "99999999999999999999999"]))
def test_cli_exit_2_and_no_folder(tmp_path_factory, key, value):
    if (key, value) in {("seed", "0"), ("sampler.step_size", "1e300"),
                        ("budget.max_iterations", "1e300")}:
        value = "-1"
    cwd = tmp_path_factory.mktemp("cli")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", "sampler=rw", f"{key}={value}",
                           f"hydra.run.dir={cwd}/run"], cwd=cwd, env=env, capture_output=True,
                      text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert list(cwd.iterdir()) == []


# ---------------------------------------------------------------------------- every key of
# ckam-bench-check, ckam-bench-reference and ckam-bench-figures (issue 25)
from ckam_bench.checks import reference  # noqa: E402
from ckam_bench.report import cli as figures_cli  # noqa: E402
from ckam_bench.commands.validate import (BLOCK_SECONDS, CHECK_CHAINS, CHECK_REFERENCE,  # noqa: E402
                                 check_config)

nonfinite = st.sampled_from(["nan", "inf", "-inf", "1e309"])
non_integer = st.floats(min_value=-1e6, max_value=1e6).filter(lambda f: not float(f).is_integer())


def bad_int(lo, hi):
    """Integers outside [lo, hi], non-integers, non-finite values and words."""
    return st.one_of(st.integers(max_value=lo - 1), st.integers(min_value=hi + 1, max_value=2**80),
                     non_integer, nonfinite, words)


def bad_number(lo, hi, lo_open=True):
    below = st.floats(max_value=lo, allow_nan=False, allow_infinity=False)
    if not lo_open:
        below = below.filter(lambda f: f < lo)
    return st.one_of(below, st.floats(min_value=hi, max_value=1e300).filter(lambda f: f > hi),
                     nonfinite, words)


COMPOSED = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def _check_named(override: str, key: str) -> None:
    cfg = compose_with("check", ["sampler=rw", "target=gauss2d_corr"], override)
    with pytest.raises(ConfigError) as err:
        check_config(cfg)
        raise AssertionError(f"{override} accepted")
    assert str(err.value).startswith(key), (override, str(err.value))


CHECK_KEYS = {"check.n_chains": bad_int(*CHECK_CHAINS),
              "check.n_reference": bad_int(*CHECK_REFERENCE),
              "check.alpha": bad_number(0.0, 1.0).filter(lambda v: v != 1.0),
              "block_seconds": bad_number(*BLOCK_SECONDS).filter(
                  lambda v: not (isinstance(v, float) and BLOCK_SECONDS[0] <= v <= BLOCK_SECONDS[1])),
              "seed": st.one_of(st.integers(max_value=-1), st.integers(min_value=2**63),
                                nonfinite, non_integer, words)}


@COMPOSED
@given(data=st.data(), key=st.sampled_from(sorted(CHECK_KEYS)))
def test_check_keys_name_their_key(data, key):
    _check_named(f"{key}={_fmt(data.draw(CHECK_KEYS[key]))}", key)


bad_times = st.one_of(
    st.lists(st.integers(min_value=1, max_value=10**6), min_size=2, max_size=5).filter(
        lambda t: any(b <= a for a, b in zip(t, t[1:]))),  # not increasing
    st.lists(st.integers(max_value=0), min_size=1, max_size=3),  # not >= 1
    st.lists(st.integers(min_value=10**9, max_value=2**70), min_size=1, max_size=1),  # too long
    st.lists(st.floats(min_value=1.5, max_value=1e20), min_size=1, max_size=3),  # not integers
    st.lists(nonfinite, min_size=1, max_size=2),
    st.just([]),
)


@COMPOSED
@given(times=bad_times)
def test_check_times_name_their_key(times):
    text = "[" + ",".join(t if isinstance(t, str) else _fmt(t) for t in times) + "]"
    _check_named(f"check.times={text}", "check.times")


REFERENCE_KEYS = {
    "chains": bad_int(4, reference.MAX_CHAINS), "burn_in": bad_int(0, reference.MAX_CHAIN_DRAWS),
    "iterations": bad_int(100, reference.MAX_CHAIN_DRAWS - 100_000),
    "max_draws": bad_int(100, reference.MAX_HELD), "stored_draws": bad_int(1, reference.MAX_STORED),
    "seed": bad_int(0, 2**63 - 1), "chain": bad_int(0, 3),
    "start_spread": bad_number(0.0, reference.MAX_SPREAD),
    "rhat_max": bad_number(*reference.RHAT_RANGE),
    "ess_min": bad_number(*reference.ESS_RANGE, lo_open=False),
}


@COMPOSED
@given(data=st.data(), key=st.sampled_from(sorted(REFERENCE_KEYS)))
def test_reference_keys_name_their_key(data, key):
    value = data.draw(REFERENCE_KEYS[key])
    cfg = compose_with("reference", ["target=gauss2d_corr"], f"{key}={_fmt(value)}")
    with pytest.raises(ConfigError) as err:
        reference.validate_config(cfg)
        raise AssertionError(f"{key}={value} accepted")
    assert str(err.value).startswith(key), (key, value, str(err.value))


FIGURES_OPTIONS = {
    "--figures": st.one_of(words.filter(lambda w: w not in ("all", "none")),
                           st.integers(min_value=15, max_value=10**6).map(str),
                           st.integers(max_value=0).map(str)),
    "--generic": words.filter(lambda w: w not in ("all", "none", "metrics", "marginals",
                                                  "pairs", "diagnostics")),
    "--x": words.filter(lambda w: w not in figures_cli.X_CHOICES),
    "--band": st.one_of(words, st.tuples(st.floats(min_value=-1e6, max_value=1e6),
                                         st.floats(min_value=-1e6, max_value=1e6)).filter(
        lambda b: not 0 <= b[0] < b[1] <= 100).map(lambda b: f"{b[0]!r},{b[1]!r}")),
    "--formats": words.filter(lambda w: w not in figures_cli.FORMATS),
}


@SETTINGS
@given(data=st.data(), option=st.sampled_from(sorted(FIGURES_OPTIONS)))
def test_figures_options_name_their_key(data, option):
    import contextlib
    import io

    value = data.draw(FIGURES_OPTIONS[option])
    buffer = io.StringIO()
    with pytest.raises(SystemExit) as exc, contextlib.redirect_stderr(buffer):
        figures_cli.parser().parse_args(["runs", "--out", "out", option, value])
    err = buffer.getvalue()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and option in err, err


@pytest.mark.parametrize("name,choices,value", [
    ("config", ["sampler=rw", "target=gmm2d"], "budget.seconds=nan"),
    ("config", ["sampler=rw", "target=gmm2d"], "seed=99999999999999999999999"),
    ("config", ["sampler=rw", "target=gmm2d"], "sampler.step_size=abc"),
    ("check", ["sampler=rw", "target=gauss2d_corr"], "check.times=[3,2,1e309]"),
    ("reference", ["target=gauss2d_corr"], "chains=-1"),
])
def test_compose_with_is_compose(name, choices, value):
    """The helper these properties use gives what Hydra's compose gives for the same overrides."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        composed = compose(name, overrides=[*choices, value])
    assert OmegaConf.to_yaml(compose_with(name, choices, value)) == OmegaConf.to_yaml(composed)
