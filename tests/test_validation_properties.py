"""Property-based tests of the validation layer: every generated bad value is a ConfigError
that names its key (never another exception, never an allocation), and from the CLI exit 2
with nothing created."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckam_bench.cli import build
from ckam_bench.validate import MAX_ROWS, ConfigError

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
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=["sampler=rw", "target=gmm2d", "progress=false",
                                           override])
    return build(cfg, LABELS, "unused")


def _assert_named(key: str, value) -> None:
    override = f"{key}={_fmt(value)}"
    with pytest.raises(ConfigError) as err:
        runner = _build(override)
        # a huge value that is legal for its key must still be bounded by a related check
        raise AssertionError(f"{override} accepted: {runner}")
    assert key.split(".")[-1] in str(err.value), (override, str(err.value))


SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
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


@settings(max_examples=6, deadline=None, derandomize=True)
@given(key=st.sampled_from(POSITIVE + COUNTS + ["seed"]), value=st.sampled_from(
    ["-1", "0", "nan", "abc", "1e300", "99999999999999999999999"]))
def test_cli_exit_2_and_no_folder(tmp_path_factory, key, value):
    if (key, value) in {("seed", "0"), ("sampler.step_size", "1e300"),
                        ("budget.max_iterations", "1e300")}:
        value = "-1"
    cwd = tmp_path_factory.mktemp("cli")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "ckam_bench.cli", "sampler=rw", f"{key}={value}",
                           f"hydra.run.dir={cwd}/run"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert list(cwd.iterdir()) == []
