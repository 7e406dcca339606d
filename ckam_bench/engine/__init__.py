"""The run engine: one sampler on one target under a budget, and the run folder it leaves.

* :mod:`~ckam_bench.engine.runner` — :class:`Runner`, the budget loop (block by block,
  checkpoints on the sampler clock);
* :mod:`~ckam_bench.engine.budget` — the budget, the checkpoint schedule, the sampler clock;
* :mod:`~ckam_bench.engine.tally` — a run's totals, bounded stores and health flags;
* :mod:`~ckam_bench.engine.runstatus` — a checkpoint's trace row and ``status.json``;
* :mod:`~ckam_bench.engine.snapshot` — the resume state taken at every checkpoint;
* :mod:`~ckam_bench.engine.rundir` — the one module that creates, replaces or sets aside files
  (claims, locks, atomic writes, verified resume state);
* :mod:`~ckam_bench.engine.outputs` — the other commands' output folders (checks, references);
* :mod:`~ckam_bench.engine.store` — file names and loaders of run folders;
* :mod:`~ckam_bench.engine.provenance` — versions, commit, CPU and load in ``status.json``.

It imports samplers, targets and metrics, never the commands above it.
"""
