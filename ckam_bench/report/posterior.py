"""The posterior under the model's names: one table per target, one block per sampler.

For every configuration group of a target (:meth:`ckam_bench.report.aggregate.Results.groups`,
the seeds as chains, aligned on collected iterations: :func:`ckam_bench.interop.to_datatree`)
the table holds, per variable, arviz-stats' summary (:func:`arviz_stats.summary`): mean, sd,
the 5 % and 95 % quantiles (equal-tailed 90 % interval), bulk and tail ESS and the
rank-normalised split R-hat over the seeds (n/a with one seed). The variables are the model's
own (a PyMC target stores them on the constrained scale in ``samples.parquet``: ``mu``,
``tau``, ``theta[3]``), else the target's coordinates ``x[0] … x[d-1]``.

**Reference and z.** Where a reference of the model's variables exists — for a suite model
on its shipped data, posteriordb's reference draws, or for a high-dimensional one the stored
draws of the reference the harness certified for its target, mapped to the constrained scale
(:func:`ckam_bench.posteriordb.models.reference_values`, the free variables) — the table adds the reference mean and sd and z = (mean − reference mean) / √(MCSE² + SE²), the MCSE of the
mean (arviz-stats, over the seeds) combined with the reference mean's standard error
(reference sd / √(reference draws)): |z| much above 3 says the sampler's mean is off by more
than both Monte Carlo errors. Deterministics have no reference (blank); a suite posterior
without a reference has blank reference columns and a note saying why; a table in which no
variable has a reference (a user's model) has no reference columns.

The blocks come in the ranking's order (:class:`ckam_bench.report.ranking.Order`, the same
``rank_by``), so the first block is the ranking's first row.

At most :data:`MAX_ROWS` variables per block (the first ones; a note says how many were left
out).

**Seeds without draws.** A block uses the seeds of its configuration that stored draws
(:func:`seeds_with_draws`): a seed whose ``samples.parquet`` is missing, unreadable or empty is
left out with a note naming it, never the whole block (R-hat then needs two of the remaining
seeds). A run that collected no sample at all is not loaded (it is no result); a note names it.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ckam_bench.report.aggregate import Group, Results
from ckam_bench.report.ranking import Order
from ckam_bench.report.tables import Table, statistic

MAX_ROWS = 40
HEADER = ["sampler", "variable", "mean", "sd", "5 %", "95 %", "ESS bulk", "ESS tail", "R-hat",
          "reference mean", "reference sd", "z"]


def _number(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return "∞" if math.isinf(value) else statistic(float(value))


@lru_cache(maxsize=None)
def _suite_draws(name: str) -> dict[str, np.ndarray]:
    from ckam_bench.posteriordb.models import reference_values

    out = {}
    for var, draws in reference_values(name).items():
        draws = np.asarray(draws, float)
        if draws.ndim == 1:
            out[var] = draws
            continue
        for index in np.ndindex(*draws.shape[1:]):
            out[f"{var}[{','.join(map(str, index))}]"] = draws[(slice(None), *index)]
    return out


def _suite(group: Group) -> str | None:
    target = ((group.runs[0].config or {}).get("target") or {})
    if target.get("data") is not None:
        return None
    try:
        from ckam_bench.posteriordb import suite_name

        return suite_name(target.get("model"))
    except Exception:
        return None


def reference_draws(group: Group) -> dict[str, np.ndarray]:
    """The reference draws of the group's model variables (column name -> 1-D draws), {} when
    there is none (module docstring)."""
    name = _suite(group)
    if name is None:
        return {}
    try:
        return _suite_draws(name)
    except Exception:  # no PyMC here, a damaged reference: no reference
        return {}


def reference_of(group: Group) -> tuple[dict[str, tuple[float, float]], str]:
    """(variable -> (reference mean, sd), where it comes from) for a group, ({}, "") when none."""
    draws = reference_draws(group)
    if not draws:
        return {}, ""
    name = _suite(group)
    return ({k: (float(v.mean()), float(v.std()), len(v)) for k, v in draws.items()},
            _source(name))


def _source(name: str) -> str:
    from ckam_bench.posteriordb import HARNESS, registered
    from ckam_bench.posteriordb.subset import reference_status

    posterior = registered().get(name)
    if posterior is not None and posterior.reference_source == HARNESS:
        return f"the reference the harness certified for {name} ({reference_status(name).path.name})"
    return f"posteriordb's reference draws of {name}"


def _missing(group: Group) -> str | None:
    """A note when the group's model is a suite posterior without a reference, else None."""
    from ckam_bench.posteriordb import registered
    from ckam_bench.posteriordb.subset import reference_status

    name = _suite(group)
    if name is None or name not in registered():
        return None
    try:
        status = reference_status(name)
    except Exception as exc:  # its model cannot be built here: no reference
        return f"no reference for {name} ({type(exc).__name__}: {exc})"
    return None if status.found else f"no reference for {name} ({status.reason})"


def _has_draws(run) -> bool:
    """Whether the run stored at least one draw (a readable, non-empty ``samples.parquet``)."""
    import pyarrow.parquet as pq

    from ckam_bench.engine import store

    if not run.has_samples:
        return False
    try:
        return pq.read_metadata(run.path / store.SAMPLES).num_rows > 0
    except Exception:  # unreadable: no draws to use
        return False


def seeds_with_draws(group: Group) -> tuple[list, list[int]]:
    """(the group's runs that stored draws, the seeds of those that did not)."""
    runs, missing = [], []
    for run in group.runs:
        (runs if _has_draws(run) else missing).append(run)
    return runs, sorted(r.seed for r in missing)


def leading_elements(post, names: list[str], rows: int):
    """``post`` (a posterior Dataset) cut to the first ``rows`` elements of ``names`` in order
    (variables in turn, each in C order), and the names it keeps. A variable cut inside keeps
    whole slices along its first dimension, so what is kept is a prefix of the whole that may
    run past ``rows``: the table shows ``rows`` of it. (The summary of a 389-coordinate
    posterior computed on the 40 rows shown, not on all 389.)"""
    kept, left, cut = [], rows, {}
    for name in names:
        if left <= 0:
            break
        var = post[name]
        dims = [d for d in var.dims if d not in ("chain", "draw")]
        size = int(np.prod([var.sizes[d] for d in dims]))
        if size > left:
            cut[dims[0]] = -(-left // (size // var.sizes[dims[0]]))
        kept.append(name)
        left -= size
    return post[kept].isel({d: slice(0, k) for d, k in cut.items()}), kept


def group_summary(group: Group, rows: int | None = None):
    """arviz-stats' summary of the group's model variables (or x), the seeds that stored draws
    as chains (:func:`seeds_with_draws`), and the number of elements in all; (None, 0) when no
    seed stored any. ``rows``: the summary of the first ``rows`` elements only
    (:func:`leading_elements`)."""
    import arviz_stats as azs

    from ckam_bench.interop import named_variables, to_datatree

    runs, _ = seeds_with_draws(group)
    if not runs:
        return None, 0
    dt = to_datatree(runs, stats=False)
    names = list(dt.posterior.attrs.get("model_variables") or []) or ["x"]
    post = dt.posterior.to_dataset()
    total = sum(int(np.prod([post[n].sizes[d] for d in post[n].dims if d not in ("chain", "draw")]))
                for n in names)
    if rows is not None:
        post, names = leading_elements(post, names, rows)
    summary = azs.summary(post, var_names=names, ci_prob=0.9, ci_kind="eti", round_to="none")
    if names != ["x"]:  # the stored names ("L[0,1]"), in arviz's order (variables, C order)
        stored = named_variables(runs[0].samples().head(1))
        labels = [c for name in names for c in stored[name][1]]
        if len(labels) >= len(summary):  # the summary's elements are a prefix of them
            summary.index = labels[:len(summary)]
    return summary, total


def posterior_table(results: Results, target: str, rank_by: str | None = None) -> Table | None:
    """The per-variable table of ``target`` (module docstring), its blocks in the ranking's
    order (``rank_by`` as in :func:`~ckam_bench.report.ranking.ranking_table`), the reference
    columns only when some variable has a reference; None without stored samples."""
    rows, keys, notes, sources = [], [], [], set()
    named = False
    for group in Order(results.groups(target), rank_by).ordered:
        used, without = seeds_with_draws(group)
        if without:
            seeds = ", ".join(map(str, without))
            kept = ", ".join(str(r.seed) for r in used)
            notes.append(f"{group.label}: seed(s) {seeds} stored no draws (samples.parquet "
                         "missing, unreadable or empty) and are left out"
                         + (f": the block is over seed(s) {kept}" if used else
                            ": no block"))
        try:
            summary, total = group_summary(group, MAX_ROWS)
        except Exception as exc:  # seeds whose stored samples do not line up
            notes.append(f"{group.label}: no summary ({type(exc).__name__}: {exc})")
            continue
        if summary is None:
            continue
        reference, source = reference_of(group)
        if source:
            sources.add(source)
        elif (missing := _missing(group)) and missing not in notes:
            notes.append(missing)
        one_seed = len(used) < 2
        names = list(summary.index)[:MAX_ROWS]
        named = named or not all(n.startswith("x[") for n in names)
        if total > MAX_ROWS:
            notes.append(f"{group.label}: the first {MAX_ROWS} of {total} variables shown")
        for var in names:
            s = summary.loc[var]
            ref = reference.get(var)
            se = math.hypot(s["mcse_mean"], ref[1] / math.sqrt(ref[2])) if ref else 0.0
            z = (s["mean"] - ref[0]) / se if ref is not None and se > 0 else math.nan
            rhat = "n/a (one seed)" if one_seed else f"{s['r_hat']:.3f}"
            rows.append([group.label, var, _number(s["mean"]), _number(s["sd"]),
                         _number(s["eti90_lb"]), _number(s["eti90_ub"]),
                         _number(round(s["ess_bulk"])), _number(round(s["ess_tail"])), rhat,
                         _number(ref[0]) if ref else "", _number(ref[1]) if ref else "",
                         f"{z:+.2f}" if math.isfinite(z) else ""])
            keys.append([None, None, s["mean"], s["sd"], s["eti90_lb"], s["eti90_ub"],
                         s["ess_bulk"], s["ess_tail"], None if one_seed else s["r_hat"],
                         ref[0] if ref else None, ref[1] if ref else None,
                         abs(z) if math.isfinite(z) else None])
    if not rows:
        return None
    empty = [item for item in results.skipped_on(target) if item.flags]
    if empty:
        notes.append("not in this table (no sample collected, not ranked): "
                     + "; ".join(f"{item.label} ({item.path.name})" for item in empty))
    header = HEADER
    if not sources:  # no reference anywhere: no empty columns
        header = HEADER[:-3]
        rows, keys = [r[:-3] for r in rows], [k[:-3] for k in keys]
    scale = ("the model's variables on the constrained scale, under the model's names"
             if named else "the target's coordinates")
    notes = [f"{scale}; per configuration (one block per sampler), the seeds as chains aligned "
             "on collected iterations: mean, sd, 5 % and 95 % quantiles, bulk and tail ESS and "
             "rank-normalised split R-hat from arviz-stats (arviz's summary); computed on the "
             "stored draws (thinned to samples.parquet's capacity, over the seeds' common range "
             "of collected iterations), so its ESS is of those draws, not the whole-chain ESS "
             "the ranking uses"] + notes
    if sources:
        notes.append("reference: " + "; ".join(sorted(sources)) + "; z = (mean − reference "
                     "mean) / √(MCSE² + reference sd² / reference draws), the sampler's MCSE of "
                     "the mean over the seeds and the reference mean's standard error (|z| > 3: "
                     "off by more than both Monte Carlo errors); deterministics have no "
                     "reference")
    return Table(title=f"Posterior on {target}, per variable (the seeds of a configuration as "
                       "chains)", stem=f"posterior_{target}", header=header,
                 latex_header=header, rows=rows, notes=notes, sort_keys=keys)


def tables(results: Results, settings=None) -> list[Table]:
    """One posterior table per target with stored samples (``settings.rank_by``: the ranking's
    first key, which orders the blocks)."""
    rank_by = getattr(settings, "rank_by", None)
    return [table for target in results.targets
            if (table := posterior_table(results, target, rank_by)) is not None]


tables.wants_settings = True
