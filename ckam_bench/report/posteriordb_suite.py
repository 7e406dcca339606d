r"""The posteriordb suite report: samplers ranked per posterior and over the suite.

Runs of ``experiment=posteriordb`` (a ``target=pymc`` target whose ``target.model`` is a model
of a posterior of :func:`ckam_bench.posteriordb.registered`) are grouped per posterior and
sampler configuration (:meth:`ckam_bench.report.aggregate.Results.groups`). The reference of a
posterior is posteriordb's draws, or for a high-dimensional one (``reference_source``
``"harness"``) the reference the harness certified for its target
(:func:`ckam_bench.posteriordb.subset.reference_status`); a posterior without one is reported
"no reference", never passed. Per run:

* **evaluations to accuracy** (:func:`run_evaluations`; the tables show gradient and density
  evaluations apart): the run's gradient evaluations (its density evaluations when it
  evaluated no gradient) at the first checkpoint from which the standardised squared bias
  :math:`b^2` of E[x] and E[x²] against the reference stays below 0.01
  (:func:`ckam_bench.report.ranking.cost_to_accuracy`); ∞ when the last checkpoint is not
  below, with the reason: ``stuck`` or ``diverging`` (non-finite proposals or state) when the
  runner flagged the run, else ``out of budget``;
* **pass/fail** against the reference, on the unconstrained coordinates: the run's stored
  draws (``samples.parquet``) after the warm-up b² leaves out — the stored draws whose
  collected index is at least :func:`ckam_bench.metrics.moments.discarded_count` of the run's
  ``metrics.moments.discard`` (an integer: a count; a float: a fraction) and its collected
  samples at the last checkpoint, the function the moment errors use — have every mean within
  0.1 reference sd of the reference mean and every sd within 10 % of the reference sd. A seed
  that stored no draws is left out of its group's verdict, which is over the other seeds and
  names the one left out (``pass (seed 1 stored no draws, left out)``); with no seed left it is
  ``n/a``.

**Rows are keyed by configuration**, not by the per-target label: a configuration is its full
settings (:attr:`ckam_bench.report.aggregate.StoredRun.settings`) without the target's own keys
(``target.*``, ``choice.target``, and ``loops``: compiled or Python, which the target decides), so one configuration run on several posteriors is one row
of the suite table and two configurations are never merged; each is labelled by its sampler and
the settings that tell it apart from the suite's other configurations of that sampler.

Per posterior, the groups are ranked by **the per-target ranking's rule**
(:class:`ckam_bench.report.ranking.Order`: one rule, so this table and ``ranking_<target>``
name the same winner): flagged by the runner last, then flagged by the report's checks —
failing the reference is one (:func:`reference_check`, registered in
:data:`ckam_bench.report.ranking.GROUP_CHECKS`) — then seconds to b² < 0.01 (censored at the
first checkpoint: a tie), final KL, b², min ESS/s; equal values share a rank. The table shows
gradient evaluations, density evaluations and seconds to b² < 0.01 in their own columns (a
gradient-free sampler's gradient column is "–"), the final b², pass/fail and the deciding key.
A group passes when every seed passes. Over the suite, the configurations are ranked by the
number of posteriors passed, then by the mean of their per-posterior ranks (equal: a shared
rank), with the number of posteriors on which each ranks first, all counted on the posteriors
every configuration ran on (a configuration run on more posteriors, or baselines covering
fewer, would otherwise win by coverage); a note says what each did beyond them.

**Baselines** (:mod:`ckam_bench.report.baselines`, on ``results.baselines``): stored suite runs
of the peers join both tables on the posteriors the results hold, labelled "(baseline)", never
merged with a run here, their pass/fail the verdict stored with them. They have no seconds, so
with them the tables rank on density evaluations to b² < 0.01 (:data:`EVALUATION_KEY`; ties
without the keys in seconds) unless ``rank_by`` names a key in seconds, and a note says that
rankings by CPU time need local peer runs; a row whose stamp differs from here is marked
"≠ stamp", with one note line per difference.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from ckam_bench.engine import store
from ckam_bench.report.aggregate import FLAG_MARK, Results, StoredRun, _tag, differing_keys
from ckam_bench.report import ranking
from ckam_bench.report.ranking import cost_to_accuracy, rank_order
from ckam_bench.report.stops import early_stop_note
from ckam_bench.report.tables import Table

MEAN_TOL, SD_TOL = 0.1, 0.1
TARGET_KEYS = ("target.", "choice.target", "loops", "target_identity.", "posteriordb.")
"""Settings that belong to the target, not the configuration (``loops``: whether the target had
a compiled density; ``target_identity.*``: its model and data files by their bytes;
``posteriordb.*``: which posteriors the sweep chose)."""
SECONDS_KEYS = ("to_acc_sampler_seconds", "ess_per_second")
"""Ranking keys in seconds: baseline rows (:mod:`ckam_bench.report.baselines`) have none."""
EVALUATION_KEY = "to_acc_n_density"
"""The suite tables' first key when baseline rows are ranked and no ``rank_by`` is given: density
evaluations to b² < 0.01 (every sampler's evaluations count there, a gradient is a density
evaluation too), machine-independent."""

LABEL = "(baseline)"
"""The label of a baseline row (:mod:`ckam_bench.report.baselines`)."""
MISMATCH_MARK = "≠ stamp"
"""Appended to a baseline row whose stamp differs from here (:func:`ckam_bench.report.baselines.mismatches`)."""


def is_baseline(item) -> bool:
    """Whether a run, or any run of a group, came from a baselines file."""
    runs = getattr(item, "runs", None)
    if runs is not None:
        return any(is_baseline(r) for r in runs)
    return bool((getattr(item, "status", None) or {}).get("baseline"))


def _posterior(run: StoredRun) -> str | None:
    from ckam_bench.posteriordb import suite_name

    target = (run.config or {}).get("target") or {}
    if target.get("data") is not None:
        return None
    return suite_name(target.get("model"))


def reference_missing(name: str) -> str | None:
    """Why posterior ``name`` has no reference (:func:`ckam_bench.posteriordb.subset.reference_status`),
    None when it has one (or is no registered posterior)."""
    from ckam_bench.posteriordb import registered
    from ckam_bench.posteriordb.subset import reference_status

    if name not in registered():
        return None
    status = reference_status(name)
    return None if status.found else status.reason


def _reference_moments(name: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(mean, sd) per unconstrained coordinate of the posterior's reference; None without one."""
    from ckam_bench.posteriordb.subset import reference_status

    status = reference_status(name)
    return _moments(name, status.source, status.path) if status.found else None


@lru_cache(maxsize=None)
def _moments(name: str, source: str, path) -> tuple[np.ndarray, np.ndarray]:
    from ckam_bench.posteriordb import POSTERIORDB

    if source == POSTERIORDB:
        from ckam_bench.posteriordb.models import unconstrained_reference

        _, u = unconstrained_reference(name)
        return u.mean(axis=0), u.std(axis=0)
    from ckam_bench.reference_lookup import read_reference

    reference = read_reference(path)  # moments of every draw of the certified chains
    return reference.mean, np.sqrt(reference.variance)


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


def discard_setting(run: StoredRun):
    """The run's ``metrics.moments.discard`` (status ``metrics_info``, else the stored config,
    else the metric's default)."""
    from ckam_bench.metrics.moments import DISCARD

    info = ((run.status.get("metrics_info") or {}).get("moments") or {})
    if "discard" in info:
        return info["discard"]
    node = ((run.config or {}).get("metrics") or {}).get("moments") or {}
    value = node.get("discard", DISCARD) if isinstance(node, dict) else DISCARD
    return DISCARD if value is None else value


def kept_draws(run: StoredRun, samples) -> np.ndarray:
    """The stored draws (n, d) after the warm-up b² left out at the run's last checkpoint
    (module docstring): those whose collected index is ≥ m = discarded_count(discard, n)."""
    from ckam_bench.metrics.moments import discarded_count

    cols = store.x_columns(samples.columns)
    x = samples[cols].to_numpy(float)
    index = samples["index"].to_numpy(np.int64) if "index" in samples else np.arange(len(x))
    trace = run.trace
    n = (float(trace["n_collected"].iloc[-1]) if "n_collected" in trace
         else float(index.max() + 1) if index.size else 0.0)
    return x[index >= discarded_count(discard_setting(run), int(n))]


def run_passes(run: StoredRun, name: str) -> bool | None:
    """Means within 0.1 reference sd and sds within 10 % on every coordinate; None without
    stored draws or without a reference. A baseline run's verdict is the one packed with it
    (its draws are not shipped)."""
    if run.status.get("baseline"):
        return run.status.get("passes")
    known = getattr(run, "_passes", {})
    if name not in known:  # the report asks for each run more than once
        known[name] = _passes(run, name)
        run._passes = known
    return known[name]


def _passes(run: StoredRun, name: str) -> bool | None:
    """:func:`run_passes` computed."""
    moments = _reference_moments(name)
    if moments is None:
        return None
    samples = run.samples(unconstrained=True)
    if samples is None or samples.empty:
        return None
    x = kept_draws(run, samples)
    mean, sd = moments
    if x.shape[1] != mean.size:
        return None
    if x.shape[0] == 0:
        return False
    ok_mean = np.abs(x.mean(axis=0) - mean) <= MEAN_TOL * sd
    ok_sd = np.abs(x.std(axis=0) - sd) <= SD_TOL * sd
    return bool(np.all(ok_mean & ok_sd))


def _final_bias2(run) -> float:
    trace = getattr(run, "trace", None)
    if trace is None or "bias2" not in trace:
        return math.nan
    return float(trace["bias2"].iloc[-1])


def _text(value: float) -> str:
    return "∞" if math.isinf(value) else ("n/a" if math.isnan(value) else f"{value:.3g}")


def marked_note(groups) -> list[str]:
    """The notes for configurations marked non-diminishing or biased (none when there are none)."""
    return ranking.validity_notes(groups)


def config_key(group) -> str:
    """The configuration of a group without its target's keys (module docstring)."""
    prefix = "baseline:" if is_baseline(group) else ""  # never merged with a run here
    settings = getattr(group, "settings", None)
    if settings is None:
        return f"{prefix}label:{group.label or group.sampler}"
    kept = {k: v for k, v in settings.items() if not k.startswith(TARGET_KEYS)}
    return prefix + json.dumps(kept, sort_keys=True, default=str)


def suite_labels(configs: dict) -> dict[str, str]:
    """A label per configuration key (``configs``: key → a group of it): its sampler plus the
    settings in which it differs from the suite's other configurations of that sampler."""
    labels = {}
    for key, group in configs.items():
        settings = getattr(group, "settings", None)
        if settings is None:
            labels[key] = group.label or group.sampler
            continue
        same = [SimpleNamespace(settings={k: v for k, v in g.settings.items()
                                          if not k.startswith(TARGET_KEYS)})
                for g in configs.values()
                if g.sampler == group.sampler and getattr(g, "settings", None) is not None]
        keys = differing_keys(same)
        tags = [_tag(k, settings.get(k, "unset")) for k in keys[:3]]
        tags += [f"+{len(keys) - 3} more"] if len(keys) > 3 else []
        labels[key] = f"{group.sampler} [{', '.join(tags)}]" if tags else group.sampler
    for key, group in configs.items():
        if is_baseline(group):
            labels[key] += f" {LABEL}"
    seen: dict[str, int] = {}
    for key in sorted(labels):
        seen[labels[key]] = seen.get(labels[key], 0) + 1
        if seen[labels[key]] > 1:
            labels[key] = f"{labels[key]} #{seen[labels[key]]}"
    return labels


def reference_check(group) -> str | None:
    """The report flag of a suite group that fails its posterior's reference (a sentence), else
    None (registered in :data:`ckam_bench.report.ranking.GROUP_CHECKS`, so the per-target
    ranking and the suite's tables rank it alike); None without a reference."""
    names = {_posterior(r) for r in group.runs}
    if len(names) != 1 or None in names:
        return None
    name = names.pop()
    if reference_missing(name) is not None:
        return None
    passes = [p for p in (run_passes(r, name) for r in group.runs) if p is not None]
    failed = passes.count(False)
    if not failed:
        return None
    return (f"fails the reference on {failed}/{len(passes)} seeds (a mean more than "
            f"{MEAN_TOL:g} reference sd off or an sd more than {SD_TOL:.0%} off)")


ranking.GROUP_CHECKS["fails the reference"] = reference_check


def _verdict(passes, missing=None, seeds=None) -> str:
    """``pass``, ``fail (k/n seeds)``, ``n/a`` (no seed stored draws) or ``no reference``, over
    the seeds whose ``passes`` is known (None: the seed stored no draws; ``seeds`` names them)."""
    if missing is not None:
        return "no reference"
    known = [p for p in passes if p is not None]
    if not known:
        return "n/a"
    text = "pass" if all(known) else f"fail ({known.count(False)}/{len(known)} seeds)"
    left = [str(s) for s, p in zip(seeds or [], passes) if p is None]
    if len(known) < len(passes):
        which = f"seed(s) {', '.join(left)}" if left else f"{len(passes) - len(known)} seed(s)"
        text += f" ({which} stored no draws, left out)"
    return text


def _cost_cell(values, censored, reasons):
    text, sort = ranking.cell(values, censored)
    if sort is not None and math.isinf(sort) and reasons:
        text += f" ({', '.join(reasons)})"
    return text, sort


CPU_NOTE = ("rankings by CPU time need local peer runs: baseline rows have evaluation counts "
            "only")


def _baseline_notes(groups, rank_by, marked) -> list[str]:
    """The notes of a table with baseline rows: how they are ranked, and the stamp's
    differences that mark rows of it (``marked``: group key -> differences)."""
    if rank_by in SECONDS_KEYS:
        notes = [f"{CPU_NOTE} (ranked on {ranking.HEADERS[rank_by]}: the baseline rows have "
                 "none and rank after every row that has it)"]
    else:
        notes = [f"{LABEL} rows are stored runs (the suite table's notes say whose); ranked on "
                 f"{ranking.HEADERS[rank_by]}, ties without the keys in seconds; {CPU_NOTE}"]
    return notes + list(dict.fromkeys(d.text for g in groups for d in marked.get(g.key, ())))


def _compared_posteriors(ranks: dict) -> tuple[set, dict]:
    """The posteriors every configuration ran on, and, per configuration, those the suite table
    counts it on: the common ones, or, when no posterior is common to all, those it ran on."""
    common = set.intersection(*(set(per) for per in ranks.values()))
    return common, {k: (common or set(per)) for k, per in ranks.items()}


def _coverage_note(ranks: dict, passed: dict, common: set, labels: dict) -> str:
    """What the suite table compares on, and what each configuration did beyond it."""
    everywhere = set.union(*(set(per) for per in ranks.values()))
    if common == everywhere:
        return f"every configuration ran on the same {len(common)} posteriors"
    if not common:
        return ("no posterior is common to every configuration: each is counted on whichever "
                "posteriors it ran on, which favours those run on more")
    beyond = []
    for k, per in ranks.items():
        more = set(per) - common
        if more:
            beyond.append(f"{labels[k]} on {len(more)} more (passed {sum(passed[k][n] for n in more)})")
    return (f"compared on the {len(common)} posteriors every configuration ran on, of "
            f"{len(everywhere)} in these results; beyond them: " + "; ".join(beyond))


def tables(results: Results, settings=None) -> list[Table]:
    """One ranking table per suite posterior and one over the suite (none without suite runs).
    With baselines on ``results.baselines`` (:func:`ckam_bench.report.baselines.attach`), their
    groups are ranked with the runs here, labelled "(baseline)", and by default on density
    evaluations to b² < 0.01 (:data:`EVALUATION_KEY`): they have no seconds."""
    attached = getattr(results, "baselines", None)
    extra = attached.groups() if attached is not None and attached.runs else []
    rank_by = getattr(settings, "rank_by", None)
    if extra and rank_by is None:
        rank_by = EVALUATION_KEY
    # baseline rows have no seconds: with them, ties never go to a key in seconds
    ties_without = SECONDS_KEYS if extra and rank_by not in SECONDS_KEYS else ()
    stamp_marks = {g.key: attached.marked(g) for g in extra}
    per_posterior: dict[str, list] = {}
    configs: dict[str, object] = {}
    marked_configs: set[str] = set()
    for group in results.groups() + extra:
        names = {_posterior(r) for r in group.runs}
        if len(names) != 1 or None in names:
            continue
        per_posterior.setdefault(names.pop(), []).append(group)
        configs.setdefault(config_key(group), group)
        if stamp_marks.get(group.key):
            marked_configs.add(config_key(group))
    labels = suite_labels(configs)
    def row_label(group):  # a baseline row whose stamp differs from here is marked
        mark = f" {MISMATCH_MARK}" if stamp_marks.get(group.key) else ""
        return labels[config_key(group)] + mark

    marked = list(configs.values())
    out, ranks, passed = [], {}, {}
    for name in sorted(per_posterior):
        groups = per_posterior[name]
        missing = reference_missing(name)
        order = ranking.Order(groups, rank_by, ties_without=ties_without)
        verdict, top_note = order.top_two(label=row_label)
        body, keys = [], []
        for i, (rank, group) in enumerate(zip(order.ranks, order.ordered)):
            key = config_key(group)
            values = order.values[group.key]
            evaluations = [run_evaluations(r) for r in group.runs]
            reasons = sorted({why for _, why in evaluations if why})
            passes = [run_passes(r, name) for r in group.runs]
            label = " ".join(filter(None, (row_label(group), ranking.validity_mark(group),
                                           group.flag_text(),
                                           ranking.report_flag_text(group, order.checks))))
            grads = _cost_cell(values["to_acc_n_grad"], values["censored"], reasons)
            if all(ranking._gradient_free(r.trace) for r in group.runs):
                grads = (ranking.NOT_APPLICABLE, None)
            dens = _cost_cell(values["to_acc_n_density"], values["censored"], reasons)
            secs = _cost_cell(values["to_acc_sampler_seconds"], values["censored"], reasons)
            if group.key in stamp_marks:  # a baseline row: no seconds (machine-dependent)
                secs = (ranking.NA, None)
            b2 = ranking.cell(values["bias2"])
            decided = order.decided[i]
            if i == 0 and verdict and decided != "tie":
                decided = f"{decided} ({verdict})"
            verdict_text = _verdict(passes, missing, [r.seed for r in group.runs])
            body.append([str(rank), label, str(len(group.runs)), grads[0], dens[0], secs[0], b2[0],
                         verdict_text, decided])
            keys.append([rank, None, len(group.runs), grads[1], dens[1], secs[1], b2[1], None, None])
            ranks.setdefault(key, {})[name] = rank
            passed.setdefault(key, {})[name] = verdict_text.startswith("pass")
        primary = ranking.HEADERS.get(order.primary, "n/a")
        notes = [f"ranked by the per-target ranking's rule (ranking_<target>): a configuration "
                 f"flagged by the runner or by the report's checks (failing the posterior's "
                 f"reference is one: {MEAN_TOL:g} reference sd on a mean, {SD_TOL:.0%} on an sd, "
                 f"after the warm-up b² leaves out, on every unconstrained coordinate) ranks "
                 f"last, then {primary}, ties to "
                 + ", ".join(ranking.HEADERS[k] for k in order.order_keys[1:])
                 + "; equal values share a rank",
                 "gradient and density evaluations until b² < 0.01 are counted apart (a "
                 "gradient-free sampler's gradient column is '–'); '≤ v': already below at the "
                 "first checkpoint (censored)"]
        notes += [top_note] if top_note else []
        if any(g.key in stamp_marks for g in groups):
            notes += _baseline_notes(groups, rank_by, stamp_marks)
        early = early_stop_note(groups)
        notes += [early] if early else []
        if missing is not None:
            notes.append(f"no reference for {name} ({missing}): b² and pass/fail are not "
                         "computed, 'no reference' is never a pass")
        checked = [(g, order.checks[g.key]) for g in groups if order.checks[g.key]]
        if checked:
            notes.append(f"{FLAG_MARK} " + "; ".join(
                f"{row_label(g)}: " + "; ".join(found.values()) for g, found in checked))
        out.append(Table(
            title=f"posteriordb {name}: ranking (last checkpoint; median [10 %, 90 %] over seeds)",
            stem=f"posteriordb_{name}",
            header=["rank", "sampler", "seeds", "grad evals to b²<0.01",
                    "density evals to b²<0.01", "s to b²<0.01", "final b²", "vs reference",
                    "decided by"],
            latex_header=["rank", "sampler", "seeds", "grad evals", "density evals", "seconds",
                          "b²", "vs reference", "decided by"],
            rows=body, sort_keys=keys, notes=notes + marked_note(marked)))
    if ranks:
        common, compared = _compared_posteriors(ranks)
        summary = {k: (sum(passed[k][n] for n in compared[k]),
                       float(np.mean([ranks[k][n] for n in compared[k]])),
                       sum(ranks[k][n] == 1 for n in compared[k])) for k in ranks}
        order, suite_ranks = rank_order(list(ranks), lambda k: (-summary[k][0], summary[k][1]),
                                        name=lambda k: labels[k])
        marks = {k: " ".join(filter(None, (MISMATCH_MARK if k in marked_configs else "",
                                           ranking.validity_mark(configs[k])))) for k in ranks}
        suite_notes = [_coverage_note(ranks, passed, common, labels)]
        if attached is not None:
            suite_notes += [attached.note] if attached.note else []
            if extra:
                suite_notes.append(attached.describe())
                suite_notes += _baseline_notes(extra, rank_by, stamp_marks)[:1]
                suite_notes += [d.text for d in attached.differences]
        out.append(Table(
            title="posteriordb suite: sampler configurations over all posteriors",
            stem="posteriordb_suite",
            header=["rank", "sampler", "posteriors passed", "mean rank", "posteriors run",
                    "ranked first"],
            latex_header=["rank", "sampler", "passed", "mean rank", "run", "first"],
            rows=[[str(r), f"{labels[k]} {marks[k]}".rstrip(), str(summary[k][0]),
                   f"{summary[k][1]:.2f}", str(len(ranks[k])), str(summary[k][2])]
                  for r, k in zip(suite_ranks, order)],
            notes=["one row per sampler configuration (its settings without the target's); "
                   "ranked by posteriors passed, then by the mean of its per-posterior ranks "
                   "(each the per-target ranking's rank, so 'ranked first' counts the posteriors "
                   "on which it is the per-target winner), all three counted on the posteriors "
                   "every configuration ran on ('posteriors run' counts all); equal values share "
                   "a rank"] + suite_notes + marked_note(marked)))
    return out


tables.wants_settings = True
