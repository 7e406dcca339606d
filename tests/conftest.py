"""Session-wide test settings.

``CKAM_BENCH_TEST_BUDGET`` (seconds, unset by default): once the session has run that long,
every test not yet started is skipped with a reason saying so. CI (``.ci/run``) sets it for
the slow tests from the time its 90 minutes leave ("slow tests while time allows"); the skips
and their count appear in pytest's summary, so a cut run is never mistaken for a full one.
"""

import os
import time

import pytest

_START = time.monotonic()


def pytest_runtest_setup(item):
    budget = os.environ.get("CKAM_BENCH_TEST_BUDGET")
    if budget and time.monotonic() - _START > float(budget):
        pytest.skip(f"CI time budget: the session's {float(budget):.0f} s are used up")
