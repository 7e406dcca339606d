"""Certified reference samples shipped with ckam-bench (built by ``ckam-bench-reference``;
see :mod:`ckam_bench.checks.reference`): ``<reference_id>.npz`` with its certificate, and the
certificate as ``<reference_id>.json``."""
