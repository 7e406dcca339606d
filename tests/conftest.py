"""Session-wide test settings.

``CKAM_BENCH_TEST_BUDGET`` (seconds, unset by default): once the session has run that long,
every test not yet started is skipped with a reason saying so. CI (``.ci/run``) sets it for
the slow tests from the time its 90 minutes leave ("slow tests while time allows"); the skips
and their count appear in pytest's summary, so a cut run is never mistaken for a full one.
"""

import os
import sys
import time

import pytest

_START = time.monotonic()

# Bytecode caches. The suite imports ~300 modules that pytest rewrites (its assertion rewriter)
# and starts ~200 command processes that import the package; with PYTHONDONTWRITEBYTECODE set
# (as on the CI image) every one of them compiles from source each time: ~9 s of each worker's
# collection, ~0.3 s of each command. The test session writes the caches (git-ignored
# __pycache__/ folders) for itself and for the commands it starts.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_runtest_setup(item):
    budget = os.environ.get("CKAM_BENCH_TEST_BUDGET")
    if budget and time.monotonic() - _START > float(budget):
        pytest.skip(f"CI time budget: the session's {float(budget):.0f} s are used up")
