"""Is a sampler correct, and against what? The checks and their commands.

* :mod:`~ckam_bench.checks.stationarity` — ``ckam-bench-check``: chains started from exact draws
  stay distributed as π;
* :mod:`~ckam_bench.checks.sbc` — ``ckam-bench-sbc``: simulation-based calibration on a PyMC model;
* :mod:`~ckam_bench.checks.reference` — ``ckam-bench-reference``: certified reference samples;
* :mod:`~ckam_bench.reference_lookup` — finding and reading them (ids from bytes).

Each command uses the shared command-line layer (:mod:`ckam_bench.commands`) and the engine.
"""
