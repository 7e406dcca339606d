r"""The posteriordb suite report: samplers ranked per posterior and over the suite.

Runs of ``experiment=posteriordb`` (a ``target=pymc`` target whose ``target.model`` is a model
of :data:`ckam_bench.posteriordb.SUITE`) are grouped per posterior and sampler configuration
(:meth:`ckam_bench.report.aggregate.Results.groups`). Per run:

* **evaluations to accuracy**: the run's gradient evaluations (its density evaluations when it
  evaluated no gradient) at the first checkpoint from which the standardised squared bias
  :math:`b^2` of E[x] and E[x²] against posteriordb's reference stays below 0.01
  (:func:`ckam_bench.report.ranking.cost_to_accuracy`); ∞ when the last checkpoint is not
  below, with the reason: ``stuck`` or ``diverging`` (non-finite proposals or state) when the
  runner flagged the run, else ``out of budget``;
* **pass/fail** against the reference, on the unconstrained coordinates: the run's stored
  draws (``samples.parquet``, without the first ``metrics.moments.discard`` fraction, as
  for b²) have every mean within 0.1 reference sd of the reference mean and
  every sd within 10 % of the reference sd.

Per posterior, the groups are ranked by the median over seeds of the evaluations to accuracy
(∞ last); a group passes when every seed passes. Over the suite, the samplers are ranked by the
number of posteriors passed, then by the mean of their per-posterior ranks.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ckam_bench.report.aggregate import Results, StoredRun
from ckam_bench.report.ranking import MARK, NON_DIMINISHING_NOTE, cost_to_accuracy
from ckam_bench.report.tables import Table

MEAN_TOL, SD_TOL = 0.1, 0.1


def _posterior(run: StoredRun) -> str | None:
    from ckam_bench.posteriordb import suite_name

    target = (run.config or {}).get("target") or {}
    if target.get("data") is not None:
        return None
    return suite_name(target.get("model"))


@lru_cache(maxsize=None)
def _reference_moments(name: str) -> tuple[np.ndarray, np.ndarray]:
    from ckam_bench.posteriordb.models import unconstrained_reference

    _, u = unconstrained_reference(name)
    return u.mean(axis=0), u.std(axis=0)


def run_evaluations(run: StoredRun) -> tuple[float, str]:
    """(evaluations to b² < 0.01, reason when ∞ else "")."""
    trace = run.trace
    column = "n_grad" if "n_grad" in trace and float(trace["n_grad"].iloc[-1]) > 0 else "n_density"
    value = cost_to_accuracy(trace, costs=(column,))[column]
    if not math.isinf(value):
        return value, ""
    flags = run.flags
    if "stuck" in flags:
        return value, "stuck"
    if any(name.startswith("nonfinite") for name in flags):
        return value, "diverging"
    return value, "out of budget"


def run_passes(run: StoredRun, name: str) -> bool | None:
    """Means within 0.1 reference sd and sds within 10 % on every coordinate; None without
    stored draws."""
    samples = run.samples()
    if samples is None or samples.empty:
        return None
    x = samples[[c for c in samples.columns if c.startswith("x") and c[1:].isdigit()]].to_numpy(float)
    moments = ((run.config or {}).get("metrics") or {}).get("moments") or {}
    x = x[int(len(x) * float(moments.get("discard", 0.0) or 0.0)):]  # the warm-up, as b² leaves it out
    mean, sd = _reference_moments(name)
    if x.shape[1] != mean.size:
        return None
    ok_mean = np.abs(x.mean(axis=0) - mean) <= MEAN_TOL * sd
    ok_sd = np.abs(x.std(axis=0) - sd) <= SD_TOL * sd
    return bool(np.all(ok_mean & ok_sd))


def _text(value: float) -> str:
    return "∞" if math.isinf(value) else ("n/a" if math.isnan(value) else f"{value:.3g}")


def marked_note(marked: bool) -> list[str]:
    """The note for configurations marked non-diminishing (none when there are none)."""
    return [NON_DIMINISHING_NOTE] if marked else []


def tables(results: Results) -> list[Table]:
    """One ranking table per suite posterior and one over the suite (none without suite runs)."""
    per_posterior: dict[str, list[tuple]] = {}
    marked = False
    for group in results.groups():
        names = {_posterior(r) for r in group.runs}
        if len(names) != 1 or None in names:
            continue
        name = names.pop()
        evaluations = [run_evaluations(r) for r in group.runs]
        values = [v for v, _ in evaluations]
        reasons = sorted({why for _, why in evaluations if why})
        passes = [run_passes(r, name) for r in group.runs]
        median = float(np.median(values)) if values else math.nan
        label = group.label or group.sampler
        if group.non_diminishing:
            label, marked = f"{label} {MARK}", True
        per_posterior.setdefault(name, []).append((label, median, reasons, passes))
    out, ranks, passed = [], {}, {}
    for name in sorted(per_posterior):
        # a configuration that fails against the reference ranks below every one that passes,
        # however early its b² dipped below 0.01
        rows = sorted(per_posterior[name],
                      key=lambda r: (not all(p is True for p in r[3]), math.isnan(r[1]), r[1]))
        body, keys = [], []
        for rank, (label, median, reasons, passes) in enumerate(rows, start=1):
            verdict = ("n/a" if any(p is None for p in passes)
                       else "pass" if all(passes) else f"fail ({passes.count(False)}/{len(passes)} seeds)")
            why = f" ({', '.join(reasons)})" if math.isinf(median) and reasons else ""
            body.append([str(rank), label, _text(median) + why, verdict])
            keys.append([rank, None, median if math.isfinite(median) else None, None])
            ranks.setdefault(label, []).append(rank)
            passed[label] = passed.get(label, 0) + (verdict == "pass")
        out.append(Table(
            title=f"posteriordb {name}: evaluations until b² < 0.01 (median over seeds)",
            stem=f"posteriordb_{name}", header=["rank", "sampler", "evaluations to b²<0.01", "vs reference"],
            latex_header=["rank", "sampler", "evaluations", "vs reference"], rows=body, sort_keys=keys,
            notes=["evaluations are gradient evaluations for samplers that use gradients, density "
                   "evaluations otherwise; pass: every seed's means within 0.1 reference sd and sds "
                   "within 10 % of posteriordb's reference on every unconstrained coordinate; "
                   "ranked passing first, then by evaluations"] + marked_note(marked)))
    if ranks:
        order = sorted(ranks, key=lambda s: (-passed[s], float(np.mean(ranks[s]))))
        out.append(Table(
            title="posteriordb suite: samplers over all posteriors",
            stem="posteriordb_suite", header=["sampler", "posteriors passed", "mean rank", "posteriors run"],
            latex_header=["sampler", "passed", "mean rank", "run"],
            rows=[[s, str(passed[s]), f"{np.mean(ranks[s]):.2f}", str(len(ranks[s]))] for s in order],
            notes=marked_note(marked)))
    return out
