"""ckam-bench: a budgeted benchmarking harness for adaptive MCMC samplers."""

from ckam_bench.config import register_resolvers
from ckam_bench.discovery import version as _version

__version__ = _version()

register_resolvers()


def run(*args, **kwargs):
    """One run from Python, as the command line runs it: :func:`ckam_bench.api.run`."""
    from ckam_bench.api import run as _run

    return _run(*args, **kwargs)
