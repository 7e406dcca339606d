"""Checkpoint metrics on the collected samples (SPEC §6), streaming where possible.

Protocol: the runner builds each entry of ``conf/metrics/*.yaml`` that has a ``_target_``
with ``hydra.utils.instantiate(node, target=target)``; then

* ``update(samples)`` — called with every block of newly collected samples, shape (k, d),
  k ≥ 0. Streaming metrics accumulate here, so a checkpoint never rescans the chain.
* ``compute(buffer)`` — called at each checkpoint with the run's :class:`ThinningBuffer` of
  collected samples; returns a flat dict of float trace columns.
* ``state_dict()`` / ``load_state_dict(state)`` — streaming state (numpy arrays and ints)
  for resuming a run.

Metrics:

* :class:`SymmetricKL` (``kl``, ``kl_outside``) — KL(p‖p̂) + KL(p̂‖p) between the target and
  the sample histogram: a 2-D grid, or the mean over coordinates of 1-D marginal KLs; counts
  updated per block. :func:`symmetric_kl` is the pure function on bin masses and counts.
* :class:`BulkESS` (``ess_min``, ``ess_median``, ``ess_max``) — bulk ESS per coordinate
  (the arviz-stats estimator, vectorised; tests hold it equal to arviz-stats) of the thinned samples in the buffer. :func:`ess_per_dim` is the pure function.

:class:`ThinningBuffer` is the bounded store (every stride-th row, the stride doubling when
full) the runner uses for samples and per-iteration diagnostics.
"""

from ckam_bench.metrics.buffer import ThinningBuffer
from ckam_bench.metrics.ess import BulkESS, ess_per_dim
from ckam_bench.metrics.kl import SymmetricKL, symmetric_kl

__all__ = ["BulkESS", "SymmetricKL", "ThinningBuffer", "ess_per_dim", "symmetric_kl"]
