"""ckam-bench: a budgeted benchmarking harness for adaptive MCMC samplers.

Its layers (docs/layout.md), each importing only those below it: :mod:`ckam_bench.checks` (the
checks and their commands) on :mod:`ckam_bench.commands` (the command line) on
:mod:`ckam_bench.engine` (the run engine) on the samplers, targets, metrics and their helpers;
:mod:`ckam_bench.report` reads what the engine stores.
"""

from ckam_bench import _moved
from ckam_bench.commands.config import register_resolvers
from ckam_bench.commands.discovery import version as _version

__version__ = _version()

_moved.install()  # the flat layout's module paths keep working (ckam_bench/_moved.py)
register_resolvers()


def run(*args, **kwargs):
    """One run from Python, as the command line runs it: :func:`ckam_bench.api.run`."""
    from ckam_bench.api import run as _run

    return _run(*args, **kwargs)
