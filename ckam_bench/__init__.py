"""ckam-bench: a budgeted benchmarking harness for adaptive MCMC samplers.

Its layers (docs/layout.md), each importing only those below it: :mod:`ckam_bench.checks` (the
checks and their commands) on :mod:`ckam_bench.commands` (the command line) on
:mod:`ckam_bench.engine` (the run engine) on the samplers, targets, metrics and their helpers;
:mod:`ckam_bench.report` reads what the engine stores.
"""

import warnings

# ArviZ (imported by PyMC) warns once a day, at its first import, that it is being refactored:
# a multi-line FutureWarning on stderr that would break every one-line error of that day's
# first command (found on a fresh machine: `ckam-bench-sbc sbc.bins=7` printed six lines).
warnings.filterwarnings("ignore", message="\nArviZ is undergoing a major refactor", category=FutureWarning)

from ckam_bench import _moved  # noqa: E402
from ckam_bench.commands.config import register_resolvers  # noqa: E402
from ckam_bench.commands.discovery import version as _version  # noqa: E402

__version__ = _version()

_moved.install()  # the flat layout's module paths keep working (ckam_bench/_moved.py)
register_resolvers()


def run(*args, **kwargs):
    """One run from Python, as the command line runs it: :func:`ckam_bench.api.run`."""
    from ckam_bench.api import run as _run

    return _run(*args, **kwargs)
