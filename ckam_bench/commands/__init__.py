"""The command line: ``ckam-bench`` and what every command shares.

* :mod:`~ckam_bench.commands.entry` — the ``ckam-bench`` console script;
* :mod:`~ckam_bench.commands.cli` — the Hydra app: compose, validate, build, claim, run;
* :mod:`~ckam_bench.commands.discovery` — ``--help``, ``--version``, ``ckam-bench list``;
* :mod:`~ckam_bench.commands.overrides` — one line for a mistaken override, before Hydra runs;
* :mod:`~ckam_bench.commands.validate` — config checks before anything is built;
* :mod:`~ckam_bench.commands.config` — the OmegaConf resolvers of the configs;
* :mod:`~ckam_bench.commands.plugins` — out-of-tree samplers and targets (entry points);
* :mod:`~ckam_bench.commands.sweeps` — sweep folders; :mod:`~ckam_bench.commands.slurm` —
  SLURM without accounting; :mod:`~ckam_bench.commands.slurm_groups` — k runs per SLURM array
  element (``hydra.launcher.runs_per_job``).

It builds on :mod:`ckam_bench.engine`; the checks' commands (:mod:`ckam_bench.checks`) build on
it, never the other way round.
"""
