r"""Cross-sampler ranking per target, and cost to accuracy.

**Cost to accuracy** (:func:`cost_to_accuracy`). With the standardised squared bias

.. math::
    b^2 = \max_{j,\ f \in \{x, x^2\}} \frac{(\hat E[f(X_j)] - E[f(X_j)])^2}{\mathrm{Var}[f(X_j)]}

in the trace (column ``bias2``, :mod:`ckam_bench.metrics.moments`), a run's cost to accuracy
in a cost column c (sampler seconds, density or gradient evaluations) is c at the first
checkpoint k* from which b² stays below the threshold (0.01) up to the run's last checkpoint:

.. math::
    k^* = \min\{k : b^2_{k'} < 0.01 \ \forall k' \ge k\}, \qquad \text{cost} = c_{k^*},

and ∞ when the last checkpoint is not below it (a sampler stuck in one mode never gets
there). A NaN b² counts as not below.

**Ranking** (:func:`ranking_table`): one row per configuration group on a target
(:func:`ckam_bench.report.aggregate.group_runs`: every seed once), each cell the median and
the 10–90 % range over the group's seeds of the run's last-checkpoint value: final symmetric
KL, min ESS per sampler second and per gradient evaluation, mean and second-moment error and
b² where the trace has them, the cost to accuracy in seconds, density and gradient
evaluations; R-hat and MCSE across the seeds (as chains) from arviz-stats
(:func:`ckam_bench.interop.seed_diagnostics`). Rows are ranked on the first of: seconds to
b² < 0.01 (lower is better), final KL (lower), min ESS per second (higher) that the runs
have and that is finite for some group; **ties** go to the next key, in the order seconds to
b² < 0.01, final KL, final b², min ESS/s (a group that never reaches b² < 0.01 is ∞ on the
first and is then ordered by its KL, b² and ESS, never by its name); groups equal on every key
share a rank (1, 2, 2, 4). A NaN key sorts after every value. **A flagged group ranks below
every unflagged one**, whatever its values (:func:`rank_order`). A group whose sampler reports
non-diminishing adaptation is marked "†".

**Warm-up.** The moment columns use the collected samples after the warm-up the run's
``metrics.moments.discard`` left out (:mod:`ckam_bench.metrics.moments`); a note states the
setting and how many samples that was at the runs' last checkpoints.

**Flagged runs.** A run the runner flagged (``status.json`` ``flags``: a stuck chain, every
proposal non-finite, a non-finite state; :meth:`ckam_bench.runner.Runner.flags`) has no
trustworthy ESS or MCSE (a chain that never moves has zero variance, which would read as
perfect precision): its ESS per second and per gradient count as 0, its cost to accuracy (when
its trace has b²) as ∞, and the MCSE of its group as ∞; the group's label carries "⚠ <flags> (k/n seeds)" and a
note lists the runs and why.

**Report flags** (:func:`report_flags`, from the stored runs, over a group's seeds):

* ``seeds disagree``: the rank-normalised split R-hat across the seeds (as chains) exceeds
  :data:`RHAT_LIMIT` = 1.01 (Vehtari et al. 2021): the seeds did not sample one distribution;
* ``b² off``: at a run's last checkpoint, its worst standardised moment error is more than
  :data:`BIAS_SIGMAS` = 10 of its own Monte Carlo standard errors. With n_eff = ess_min · k/n
  (the whole chain's smallest bulk ESS, scaled to the k of n collected samples b² keeps), the
  squared error of a mean in units of its MCSE is (m̂ − m)² / (Var X / n_eff) ≥ b²_j · n_eff,
  and it is ≈ χ²₁ for a correct sampler; the run is flagged when b² · n_eff > 10² = 100. (A
  χ²₁ exceeds 100 with probability 2·10⁻²³; taking the smallest ESS and applying it to the
  second moments too makes the rule lenient by the ratio of ESSs, and 10 MCSEs leaves room for
  an ESS overestimated several-fold.) Needs the trace columns ``bias2`` and ``ess_min``.

A group with a report flag is marked like a runner-flagged one (⚠ and the flag in its label, a
note with the values) and ranks below every unflagged group; its values are shown as measured.
Percentiles interpolate linearly between order statistics; a range touching ∞ is ∞.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ckam_bench.report.aggregate import FLAG_MARK, Group, Results
from ckam_bench.report.tables import NA, Table, statistic, table_notes

THRESHOLD = 0.01
COSTS = ("sampler_seconds", "n_density", "n_grad")
MARK = "†"
NON_DIMINISHING_NOTE = (f"{MARK} non-diminishing adaptation (a paper preset): the chain is "
                        "not guaranteed to target π")

# (key, header, lower is better)
COLUMNS = (
    ("kl", "final KL", True),
    ("ess_per_second", "min ESS/s", False),
    ("ess_per_grad", "min ESS/grad", False),
    ("mean_error", "mean error", True),
    ("second_moment_error", "2nd-moment error", True),
    ("bias2", "b²", True),
    ("to_acc_sampler_seconds", "s to b²<0.01", True),
    ("to_acc_n_density", "density evals to b²<0.01", True),
    ("to_acc_n_grad", "grad evals to b²<0.01", True),
)
PRIMARY = ("to_acc_sampler_seconds", "kl", "ess_per_second")
TIE_KEYS = ("to_acc_sampler_seconds", "kl", "bias2", "ess_per_second")
RHAT_LIMIT = 1.01
BIAS_SIGMAS = 10.0
GRADIENT_COLUMNS = ("ess_per_grad", "to_acc_n_grad")
NOT_APPLICABLE = "–"  # a gradient column of a sampler that evaluates no gradient


def _gradient_free(trace: pd.DataFrame) -> bool:
    """Whether a run evaluated no gradient (its gradient columns do not apply)."""
    grads = pd.to_numeric(trace.get("n_grad", pd.Series([0.0])), errors="coerce").fillna(0.0)
    return bool((grads == 0).all())


def cost_to_accuracy(trace: pd.DataFrame, column: str = "bias2", threshold: float = THRESHOLD,
                     costs=COSTS) -> dict[str, float]:
    """Each cost column's value at the first checkpoint from which ``column`` stays below
    ``threshold`` to the end of the run; ∞ when it does not end below; NaN when the trace has
    no finite ``column`` (see the module docstring)."""
    order = "checkpoint" if "checkpoint" in trace.columns else "sampler_seconds"
    trace = trace.sort_values(order, kind="stable")
    out = {c: float("nan") for c in costs}
    if column not in trace.columns:
        return out
    y = pd.to_numeric(trace[column], errors="coerce").to_numpy(float)
    if not np.isfinite(y).any():
        return out
    below = np.isfinite(y) & (y < threshold)
    if not below[-1]:
        return {c: math.inf for c in costs}
    k = len(below) - int(np.argmin(below[::-1])) if not below.all() else 0
    return {c: float(trace[c].iloc[k]) if c in trace.columns else float("nan") for c in costs}


def run_values(trace: pd.DataFrame, flagged: bool = False) -> dict[str, float]:
    """The ranking's values for one run: its last checkpoint plus the cost to accuracy (for a
    ``flagged`` run: no ESS, ∞ cost; see the module docstring)."""
    order = "checkpoint" if "checkpoint" in trace.columns else "sampler_seconds"
    last = trace.sort_values(order, kind="stable").iloc[-1]

    def get(name):
        value = pd.to_numeric(pd.Series([last.get(name, np.nan)]), errors="coerce").iloc[0]
        return float(value)

    values = {name: get(name) for name in ("kl", "mean_error", "second_moment_error", "bias2")}
    ess, seconds, grads = get("ess_min"), get("sampler_seconds"), get("n_grad")
    values["ess_per_second"] = get("ess_per_second") if "ess_per_second" in last else (
        ess / seconds if seconds > 0 else math.nan)
    values["ess_per_grad"] = ess / grads if grads > 0 else math.nan
    for cost, value in cost_to_accuracy(trace).items():
        values[f"to_acc_{cost}"] = value
    if flagged:
        values.update({"ess_per_second": 0.0, "ess_per_grad": 0.0})
        values.update({f"to_acc_{cost}": math.inf for cost in COSTS  # where it has one
                       if not math.isnan(values[f"to_acc_{cost}"])})
    return values


def quantiles(values, qs=(50.0, 10.0, 90.0)) -> list[float]:
    """Linear-interpolation percentiles of the non-NaN values; ∞ where an ∞ is involved."""
    v = np.sort(np.asarray([x for x in values if not math.isnan(x)], float))
    if v.size == 0:
        return [math.nan for _ in qs]
    out = []
    for q in qs:
        pos = q / 100.0 * (v.size - 1)
        lo, hi = int(math.floor(pos)), int(math.ceil(pos))
        if math.isinf(v[hi]) or math.isinf(v[lo]):
            out.append(math.inf)
        else:
            out.append(float(v[lo] + (pos - lo) * (v[hi] - v[lo])))
    return out


def _text(value: float) -> str:
    if math.isnan(value):
        return NA
    if math.isinf(value):
        return "∞"
    return statistic(value)


def cell(values) -> tuple[str, float | None]:
    """'median [p10, p90]' over seeds (the median alone when the range is a single value, e.g.
    for one seed) and the median as sort key."""
    med, lo, hi = quantiles(values)
    finite = [x for x in values if not math.isnan(x)]
    if not finite:
        return NA, None
    text = _text(med) if lo == hi else f"{_text(med)} [{_text(lo)}, {_text(hi)}]"
    return text, med


def group_values(group: Group) -> dict[str, list[float]]:
    """Per ranking column, one value per seed of the group."""
    per_run = [run_values(run.trace, flagged=bool(run.flags)) for run in group.runs]
    return {key: [v[key] for v in per_run] for key, _, _ in COLUMNS}


def ranking_table(results: Results, target: str, diagnostics: bool = True) -> Table:
    """The ranking of every configuration group on ``target`` (see the module docstring)."""
    groups = results.groups(target)
    values = {g.key: group_values(g) for g in groups}
    present = [c for c in COLUMNS
               if any(not math.isnan(x) for g in groups for x in values[g.key][c[0]])]
    lower = {key: low for key, _, low in COLUMNS}
    keyed = [key for key in PRIMARY if any(c[0] == key for c in present)]

    def finite_somewhere(key):
        return any(math.isfinite(quantiles(values[g.key][key])[0]) for g in groups)

    primary = next((key for key in keyed if finite_somewhere(key)), keyed[0] if keyed else None)
    passed_over = keyed[:keyed.index(primary)] if primary in keyed else []
    gradient_free = {g.key for g in groups if all(_gradient_free(run.trace) for run in g.runs)}

    order_keys = [primary] + [k for k in TIE_KEYS if k != primary
                              and any(c[0] == k for c in present)] if primary else []
    checks = {g.key: report_flags(g) if diagnostics else {} for g in groups}

    def rank_key(group):
        meds = [quantiles(values[group.key][key])[0] for key in order_keys]
        return (bool(group.flagged or checks[group.key]),
                *((math.isnan(m), 0.0 if math.isnan(m) else (m if lower[k] else -m))
                  for k, m in zip(order_keys, meds)))

    ordered, ranks = rank_order(groups, rank_key, name=lambda g: g.label)
    rows, keys = [], []
    for rank, group in zip(ranks, ordered):
        row = [str(rank), " ".join(filter(None, (group.label, MARK if group.non_diminishing else "",
                                                 group.flag_text(), report_flag_text(group, checks)))),
               str(len(group.runs))]
        key_row = [float(rank), None, float(len(group.runs))]
        for key, _, _ in present:
            if key in GRADIENT_COLUMNS and group.key in gradient_free:
                row.append(NOT_APPLICABLE)  # a gradient-free sampler: no gradient cost at all
                key_row.append(None)
                continue
            text, sort = cell(values[group.key][key])
            row.append(text)
            key_row.append(sort)
        if diagnostics:
            diag = dict(group_diagnostics(group))
            if group.flagged:  # a stuck chain's zero variance is no precision
                diag["mcse"] = math.inf
            for name in ("rhat", "mcse"):
                row.append(_text(diag[name]) if name == "mcse" or math.isnan(diag[name])
                           else f"{diag[name]:.3f}")
                key_row.append(None if math.isnan(diag[name]) else diag[name])
        rows.append(row)
        keys.append(key_row)
    header = ["rank", "sampler", "seeds", *(h for k, h, _ in present)]
    if diagnostics:
        header += ["R-hat", "MCSE"]
    notes = table_notes(results, target)
    if primary:
        better = "lower" if lower[primary] else "higher"
        name = next(h for k, h, _ in COLUMNS if k == primary)
        notes = [f"ranked on {name} ({better} is better; median over seeds)"] + notes
        for key in passed_over:
            skipped = next(h for k, h, _ in COLUMNS if k == key)
            notes.insert(1, f"not ranked on {skipped}: every configuration is ∞ or N/A there")
    if any(g.non_diminishing for g in groups):
        notes.append(NON_DIMINISHING_NOTE)
    discarded = discard_note(groups)
    if discarded and any(c[0] in ("mean_error", "second_moment_error", "bias2") for c in present):
        notes.append(discarded)
    flagged = [(g, r) for g in groups for r in g.flagged]
    if flagged:
        notes.append(f"{FLAG_MARK} flagged by the runner (no ESS: counted as 0; MCSE and cost to "
                     "accuracy: ∞): " + "; ".join(
                         f"{g.label} seed {r.seed}: " + ", ".join(f"{k} ({v})" for k, v in r.flags.items())
                         for g, r in flagged))
    checked = [(g, checks[g.key]) for g in groups if checks[g.key]]
    if checked:
        notes.append(f"{FLAG_MARK} flagged by the report's checks (seeds that disagree: R-hat > "
                     f"{RHAT_LIMIT}; b² off: a final moment error more than {BIAS_SIGMAS:g} of the "
                     "run's own MCSEs; ranked below every unflagged configuration): " + "; ".join(
                         f"{g.label}: " + "; ".join(v for v in found.values()) for g, found in checked))
    if any(g.flagged or checks[g.key] for g in groups):
        notes.append("a flagged configuration ranks below every unflagged one; ties go to the "
                     "next key (s to b²<0.01, final KL, b², min ESS/s) and equal values share "
                     "a rank")
    if diagnostics:
        notes.append("R-hat: largest rank-normalised split R-hat over coordinates, MCSE: "
                     "largest Monte Carlo standard error of the mean, both from arviz-stats "
                     "with the seeds as chains (N/A with fewer than two seeds)")
    return Table(title=f"Ranking on {target} (last checkpoint; median [10 %, 90 %] over seeds)",
                 stem=f"ranking_{target}", header=header, latex_header=header, rows=rows,
                 notes=notes, sort_keys=keys)


def rank_order(items, key, name=str):
    """``items`` sorted on ``key`` (then ``name``, for display only) and their ranks:
    1 + the number of items with a strictly smaller key, so equal keys share a rank
    (competition ranking: 1, 2, 2, 4)."""
    keyed = sorted(((key(item), name(item), i, item) for i, item in enumerate(items)),
                   key=lambda t: (t[0], t[1], t[2]))
    ranks, rank = [], 0
    for pos, (k, _, _, _) in enumerate(keyed):
        if pos == 0 or k != keyed[pos - 1][0]:
            rank = pos + 1
        ranks.append(rank)
    return [t[3] for t in keyed], ranks


def group_diagnostics(group: Group) -> dict[str, float]:
    """R-hat and MCSE across the group's seeds (:func:`ckam_bench.interop.seed_diagnostics`),
    NaN when they cannot be computed; cached on the group."""
    cached = getattr(group, "_seed_diagnostics", None)
    if cached is None:
        from ckam_bench.interop import seed_diagnostics

        try:
            cached = seed_diagnostics(group.runs)
        except Exception:  # runs whose stored samples disagree in shape: no R-hat
            cached = {"rhat": math.nan, "mcse": math.nan}
        group._seed_diagnostics = cached
    return cached


def bias_sigmas(trace: pd.DataFrame) -> float:
    """√(b² · n_eff) at a run's last checkpoint: its worst standardised moment error in units
    of its own MCSE (n_eff = ess_min · kept / collected; module docstring); NaN without
    ``bias2`` or ``ess_min``."""
    order = "checkpoint" if "checkpoint" in trace.columns else "sampler_seconds"
    last = trace.sort_values(order, kind="stable").iloc[-1]

    def get(name):
        return float(pd.to_numeric(pd.Series([last.get(name, np.nan)]), errors="coerce").iloc[0])

    b2, ess = get("bias2"), get("ess_min")
    collected, discarded = get("n_collected"), get("moments_discarded")
    kept = (collected - discarded) / collected if collected > 0 and math.isfinite(discarded) else 1.0
    if not (math.isfinite(b2) and math.isfinite(ess)) or ess <= 0:
        return math.nan
    return math.sqrt(max(b2, 0.0) * ess * max(kept, 0.0))


def report_flags(group: Group) -> dict[str, str]:
    """The report's flags of a group (module docstring), flag → sentence; cached."""
    cached = getattr(group, "_report_flags", None)
    if cached is not None:
        return cached
    out, short = {}, []
    rhat = group_diagnostics(group)["rhat"] if len(group.runs) > 1 else math.nan
    if math.isfinite(rhat) and rhat > RHAT_LIMIT:
        out["seeds disagree"] = (f"seeds disagree: R-hat {rhat:.3f} > {RHAT_LIMIT} across "
                                 f"{len(group.runs)} seeds")
        short.append(f"seeds disagree (R-hat {rhat:.3f})")
    off = [(run.seed, bias_sigmas(run.trace)) for run in group.runs]
    off = [(seed, z) for seed, z in off if z > BIAS_SIGMAS]
    if off:
        out["b² off"] = ("b² off the reference: final moment error of "
                         + ", ".join(f"{z:.3g} MCSEs (seed {seed})" for seed, z in off)
                         + f" > {BIAS_SIGMAS:g}")
        short.append(f"b² off ({len(off)}/{len(group.runs)} seeds)")
    group._report_flags, group._report_flag_short = out, ", ".join(short)
    return out


def report_flag_text(group: Group, checks: dict | None = None) -> str:
    """``"⚠ seeds disagree (R-hat 1.823), b² off (1/3 seeds)"`` for a group with report
    flags, else "" (``checks``: the flags already computed per group key)."""
    found = checks.get(group.key) if checks is not None else report_flags(group)
    if not found:
        return ""
    return f"{FLAG_MARK} {getattr(group, '_report_flag_short', '') or ', '.join(found)}"


def discard_note(groups: list[Group]) -> str:
    """What the moment errors left out (``metrics.moments.discard``; the trace column
    ``moments_discarded`` against ``n_collected`` at each run's last checkpoint), or ""."""
    settings, shares = set(), []
    for group in groups:
        for run in group.runs:
            info = ((run.status.get("metrics_info") or {}).get("moments") or {})
            last = run.trace.iloc[-1]
            if "moments_discarded" not in run.trace.columns or "discard" not in info:
                continue
            settings.add(info["discard"])
            if last.get("n_collected", 0) > 0:
                shares.append((float(last["moments_discarded"]), float(last["n_collected"])))
    if not settings:
        return ""
    text = ", ".join(f"{v:g} of the collected samples" if isinstance(v, float)
                     else f"the first {v} collected samples" for v in sorted(settings, key=str))
    note = f"mean error, 2nd-moment error and b² leave out the warm-up (metrics.moments.discard: {text})"
    if shares:
        counts = [d for d, _ in shares]
        fractions = [d / n for d, n in shares]
        note += (f": {statistic(min(counts))}–{statistic(max(counts))} samples per run at the "
                 f"last checkpoint ({min(fractions):.1%}–{max(fractions):.1%})")
    return note


def ranking_tables(results: Results) -> list[Table]:
    """One ranking table per target."""
    return [ranking_table(results, target) for target in results.targets]
