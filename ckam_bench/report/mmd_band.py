"""The noise band of an MMD² figure: where the estimate for exact draws of the target falls.

An MMD² estimate against one fixed reference sample scatters, for a correct sample, around a
value set by that reference, not around 0 (:mod:`ckam_bench.metrics.mmd`). The accuracy figure
of an MMD² column (:func:`ckam_bench.report.generic.metric_figures`) draws the band of
:meth:`ckam_bench.metrics.mmd.MMD.noise_band`, computed here once per target from the stored
runs:

* the runs' MMD settings: the entry of their stored config's ``metrics`` whose ``_target_`` is
  :class:`~ckam_bench.metrics.mmd.MMD` and whose column is the one drawn; every run with a
  value must have the same settings;
* the metric rebuilt with them on the target rebuilt from a stored config; what it describes
  (reference, bandwidth) must equal what the runs recorded (``status.json``
  ``metrics_info.<name>``), so the band belongs to the reference the runs were measured against;
* n: the fewest chain points a run's last estimate used (the sample store's rows, capped at
  ``max_points``): the widest band of the runs.

When any of this fails, there is no band and a sentence says why (the figure's caption
carries it).
"""

from __future__ import annotations

import numpy as np

from ckam_bench.engine import store
from ckam_bench.metrics.mmd import MMD, NoiseBand
from ckam_bench.report.aggregate import StoredRun

MMD_TARGET = "ckam_bench.metrics.mmd.MMD"


def is_mmd_column(column: str) -> bool:
    """Whether ``column`` is an MMD² column of :class:`~ckam_bench.metrics.mmd.MMD`."""
    return column == "mmd2" or column.startswith("mmd2_")


def _settings(run: StoredRun, column: str) -> tuple[str, dict] | None:
    """The run's (metric name, MMD keyword arguments) that write ``column``, or None."""
    metrics = (run.config or {}).get("metrics") or {}
    for name, node in metrics.items():
        if not isinstance(node, dict) or node.get("_target_") != MMD_TARGET:
            continue
        kwargs = {k: v for k, v in node.items() if k != "_target_"}
        kernel = kwargs.get("kernel", "gaussian")
        if (f"mmd2_{kernel}" if kwargs.get("column_suffix") else "mmd2") == column:
            return name, kwargs
    return None


def _stored_rows(run: StoredRun) -> int:
    """Rows of the run's sample store at its last checkpoint (its ``samples.parquet``), else
    the samples it collected."""
    path = run.path / store.SAMPLES
    if run.has_samples and path.exists():
        import pyarrow.parquet as pq

        try:
            return int(pq.ParquetFile(path).metadata.num_rows)
        except Exception:  # noqa: BLE001 - a damaged file: fall back to the trace
            pass
    return int(run.trace["n_collected"].iloc[-1])


def noise_band(runs: list[StoredRun], column: str) -> tuple[NoiseBand | None, str]:
    """The noise band for ``column`` over ``runs`` (one target), or (None, why)."""
    valued = [r for r in runs if column in r.trace.columns
              and np.isfinite(np.asarray(r.trace[column], float)).any()]
    if not valued:
        return None, f"no run has a value of {column}"
    found = [_settings(r, column) for r in valued]
    if any(f is None for f in found):
        return None, "a run's stored config does not say how its MMD² was measured"
    if any(f != found[0] for f in found[1:]):
        return None, "the runs measured MMD² with different settings"
    name, kwargs = found[0]
    target, problem = None, "no stored config rebuilds the target"
    for run in valued:
        try:
            target = run.build_target()
            break
        except Exception as exc:  # noqa: BLE001 - a stale config: say so in the caption
            problem = f"the target cannot be rebuilt ({type(exc).__name__}: {exc})".splitlines()[0]
    if target is None:
        return None, problem
    try:
        metric = MMD(target, **kwargs)
    except Exception as exc:  # noqa: BLE001 - e.g. the reference sample is gone
        return None, f"the reference cannot be rebuilt ({type(exc).__name__}: {exc})".splitlines()[0]
    recorded = [(r.status.get("metrics_info") or {}).get(name) for r in valued]
    if any(info is not None and info != _json(metric.describe()) for info in recorded):
        return None, "the reference differs from the one the runs were measured against"
    n = min(metric.points(_stored_rows(r)) for r in valued)
    if n < 2:
        return None, "a run used fewer than 2 points"
    try:
        return metric.noise_band(n), ""
    except ValueError as exc:
        return None, str(exc)


def _json(info: dict) -> dict:
    """``info`` as ``status.json`` stores it (numbers through JSON)."""
    import json

    return json.loads(json.dumps(info, default=str))
