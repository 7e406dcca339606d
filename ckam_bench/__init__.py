"""ckam-bench: a budgeted benchmarking harness for adaptive MCMC samplers."""

from ckam_bench.config import register_resolvers

__version__ = "0.1.0"

register_resolvers()
