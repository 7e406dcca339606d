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
there). A NaN b² counts as not below. When k* is the first checkpoint (b² below the threshold
from ``checkpoint.first`` on) the cost is **censored**: only cost ≤ c_1 is known
(:func:`censored_at_first`); the table shows "≤ c_1", and censored costs tie with each other
(the next key decides) and rank ahead of any cost measured later. A group's median (and 10 % /
90 % quantile) is censored when it falls on censored seeds (:func:`summary`).

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
share a rank (1, 2, 2, 4). A NaN key sorts after every value. ``rank_by`` (``ckam-bench-figures --rank-by KEY``,
``hydra.callbacks.sweep_report.rank_by``) puts one key of :data:`COLUMNS` first, the others
follow in the order above. **A flagged group ranks below every unflagged one**, whatever its
values, and a runner-flagged one below one with only report flags (:class:`Order`,
:func:`rank_order`). A group whose sampler reports non-diminishing adaptation is marked "†".
The column "decided by" names the key on which a row differs from the row above (the first row:
from the second).

**The top two against the seed spread** (:func:`seed_spread_test`): on the key that decided
between the first two rows, a two-sided rank-sum test of their per-seed values (exact over all
splits, midranks for ties, censored costs tied), p < :data:`SIGNIFICANCE` = 0.05. When the
seed counts cannot reach p < 0.05 at all (3 and 3 seeds: smallest p = 2/20) the note says "too
few seeds to rank them"; with one seed per configuration a note says the order is that of
single runs.

**Warm-up.** The moment columns use the collected samples after the warm-up the run's
``metrics.moments.discard`` left out (:mod:`ckam_bench.metrics.moments`); a note states the
setting and how many samples that was at the runs' last checkpoints.

**Flagged runs.** A run the runner flagged (``status.json`` ``flags``: a stuck chain, every
proposal non-finite, a non-finite state; :meth:`ckam_bench.engine.runner.Runner.flags`) has no
trustworthy ESS or MCSE (a chain that never moves has zero variance, which would read as
perfect precision): its ESS per second and per gradient count as 0, its cost to accuracy (when
its trace has b²) as ∞, and the MCSE of its group as ∞; the group's label carries "⚠ <flags> (k/n seeds)" and a
note lists the runs and why. A run that collected no sample is not ranked at all (it is no
result; :mod:`ckam_bench.report.aggregate` skips it flagged ``no_samples``): a note names it, and
its group counts only the seeds that collected.

**Too short to trust.** A note names every run whose min ESS at its last checkpoint is below
:data:`ckam_bench.engine.runstatus.ESS_FLOOR` (100; :func:`ckam_bench.report.stops.short_chains`), as its end-of-run line
did; such a run is ranked as measured.

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
  an ESS overestimated several-fold.) Needs the trace columns ``bias2`` and ``ess_min``;
* ``divergent``: a run's transitions diverged after its warm-up (the runner's warning flag,
  :data:`ckam_bench.engine.tally.WARNINGS`): its trajectories left the region where the
  integrator is accurate, so its chain may not have explored there; the values stand.

Other modules add checks to :data:`GROUP_CHECKS` (the posteriordb suite: "fails the
reference"). A group with a report flag is marked like a runner-flagged one (⚠ and the flag in its label, a
note with the values) and ranks below every unflagged group; its values are shown as measured.
Percentiles interpolate linearly between order statistics; a range touching ∞ is ∞.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ckam_bench.engine.runstatus import ESS_FLOOR
from ckam_bench.report.aggregate import FLAG_MARK, Group, Results
from ckam_bench.report.stops import early_stop_note, short_chains
from ckam_bench.report.tables import NA, Table, statistic, table_notes

THRESHOLD = 0.01
COSTS = ("sampler_seconds", "n_density", "n_grad")
MARK = "†"
NON_DIMINISHING_NOTE = (f"{MARK} non-diminishing adaptation (a paper preset): the chain is "
                        "not guaranteed to target π")
BIASED_MARK = "‡"
BIASED_NOTE = (f"{BIASED_MARK} biased by design (e.g. unadjusted MCLMC: no Metropolis correction): its "
               "stationary law is not π; its b² shows by how much")


def biased(group: Group) -> bool:
    """True when a run's sampler declares itself not π-invariant (``sampler_info.exact``: False)."""
    return any((r.status.get("sampler_info") or {}).get("exact") is False for r in group.runs)


def validity_mark(group: Group) -> str:
    """† for non-diminishing adaptation, ‡ for a sampler biased by design, else ""."""
    return " ".join(filter(None, (MARK if group.non_diminishing else "", BIASED_MARK if biased(group) else "")))


def validity_notes(groups) -> list[str]:
    """The notes explaining the marks of :func:`validity_mark` present among ``groups``."""
    groups = list(groups)
    return ([NON_DIMINISHING_NOTE] if any(g.non_diminishing for g in groups) else []) + \
        ([BIASED_NOTE] if any(biased(g) for g in groups) else [])

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
GROUP_CHECKS: dict = {}
"""More report flags: name -> f(group) -> a sentence when the group fails the check, else None
(the posteriordb suite registers 'fails the reference'); a flagged group ranks last."""
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


def censored_at_first(trace: pd.DataFrame, column: str = "bias2",
                      threshold: float = THRESHOLD) -> bool:
    """Whether ``column`` is below ``threshold`` from the run's first checkpoint on: its cost
    to accuracy is then only known to be at most the first checkpoint's cost (censored)."""
    if column not in trace.columns:
        return False
    order = "checkpoint" if "checkpoint" in trace.columns else "sampler_seconds"
    y = pd.to_numeric(trace.sort_values(order, kind="stable")[column], errors="coerce")
    y = y.to_numpy(float)
    return bool(y.size and np.all(np.isfinite(y) & (y < threshold)))


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
    values["censored"] = censored_at_first(trace) and not flagged
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


CENSORED = "≤"
SIGNIFICANCE = 0.05


def summary(values, censored=None) -> tuple[list[float], list[bool]]:
    """Median, 10 % and 90 % quantiles over seeds (linear interpolation, ∞ where an ∞ is
    involved) and, per quantile, whether it falls on seeds whose cost is censored at the first
    checkpoint (then it is an upper bound: '≤'). Censored seeds come first in the order."""
    censored = [False] * len(values) if censored is None else list(censored)
    pairs = sorted(((float(v), bool(c)) for v, c in zip(values, censored) if not math.isnan(v)),
                   key=lambda p: (not p[1], p[0]))
    if not pairs:
        return [math.nan] * 3, [False] * 3
    v = [p[0] for p in pairs]
    n_cens = sum(p[1] for p in pairs)
    out, marks = [], []
    for q in (50.0, 10.0, 90.0):
        pos = q / 100.0 * (len(v) - 1)
        lo, hi = int(math.floor(pos)), int(math.ceil(pos))
        if math.isinf(v[hi]) or math.isinf(v[lo]):
            out.append(math.inf)
        else:
            out.append(float(v[lo] + (pos - lo) * (v[hi] - v[lo])))
        marks.append(hi < n_cens)
    return out, marks


def cell(values, censored=None) -> tuple[str, float | None]:
    """'median [p10, p90]' over seeds (the median alone when the range is a single value, e.g.
    for one seed) and the median as sort key; a quantile on censored seeds reads '≤ v'."""
    (med, lo, hi), (c_med, c_lo, c_hi) = summary(values, censored)
    if math.isnan(med):
        return NA, None

    def text(value, mark):
        return f"{CENSORED} {_text(value)}" if mark else _text(value)

    same = lo == hi and c_lo == c_hi
    body = text(med, c_med) if same else f"{text(med, c_med)} [{text(lo, c_lo)}, {text(hi, c_hi)}]"
    return body, med


def group_values(group: Group) -> dict[str, list[float]]:
    """Per ranking column, one value per seed of the group (plus ``censored``: per seed,
    whether its cost to accuracy is censored at the first checkpoint)."""
    per_run = [run_values(run.trace, flagged=bool(run.flags)) for run in group.runs]
    out = {key: [v[key] for v in per_run] for key, _, _ in COLUMNS}
    out["censored"] = [v["censored"] for v in per_run]
    return out


RANK_KEYS = tuple(key for key, _, _ in COLUMNS)
HEADERS = {key: header for key, header, _ in COLUMNS}
LOWER = {key: low for key, _, low in COLUMNS}
COST_KEYS = tuple(f"to_acc_{c}" for c in COSTS)


def _key_median(values: dict, key: str) -> tuple[float, bool]:
    """A group's median over seeds on ``key`` and whether it is censored (cost keys only)."""
    (med, _, _), (c_med, _, _) = summary(
        values[key], values["censored"] if key in COST_KEYS else None)
    return med, c_med


class Order:
    """The ranking of the groups of one target (module docstring): the groups in rank order,
    their ranks, the keys in the order they decide, per row the key that decided it, and the
    test of the top two against the seed-to-seed spread."""

    def __init__(self, groups: list[Group], rank_by: str | None = None, diagnostics: bool = True,
                 ties_without: tuple = ()):
        self.groups_in = groups
        self.values = {g.key: group_values(g) for g in groups}
        self.present = [c for c in COLUMNS
                        if any(not math.isnan(x) for g in groups for x in self.values[g.key][c[0]])]
        names = [c[0] for c in self.present]
        keyed = [key for key in PRIMARY if key in names]
        self.notes: list[str] = []
        self.passed_over: list[str] = []
        primary = None
        if rank_by is not None:
            if rank_by in names:
                primary = rank_by
            else:
                self.notes.append(f"not ranked on {HEADERS.get(rank_by, rank_by)} (rank_by): no run "
                                  "on this target has it; the default keys are used")
        if primary is None:
            def finite_somewhere(key):
                return any(math.isfinite(_key_median(self.values[g.key], key)[0]) for g in groups)

            primary = next((key for key in keyed if finite_somewhere(key)),
                           keyed[0] if keyed else None)
            self.passed_over = keyed[:keyed.index(primary)] if primary in keyed else []
        self.primary = primary
        self.order_keys = ([primary] + [k for k in TIE_KEYS if k != primary and k in names
                                        and k not in ties_without] if primary else [])
        self.checks = {g.key: report_flags(g) if diagnostics else {} for g in groups}
        self.ordered, self.ranks = rank_order(groups, self.rank_key, name=lambda g: g.label)
        keys = [self.rank_key(g) for g in self.ordered]
        self.decided = []
        for i in range(len(keys)):
            j = i - 1 if i > 0 else 1
            self.decided.append(self._difference(keys[i], keys[j]) if 0 <= j < len(keys) else "")

    def flagged(self, group: Group) -> int:
        """2: a run flagged by the runner; 1: flagged by the report's checks; 0: neither."""
        return 2 if group.flagged else 1 if self.checks[group.key] else 0

    def rank_key(self, group: Group):
        """(flag level, then per key: NaN last, censored costs tied ahead of any other value)."""
        parts = []
        for key in self.order_keys:
            med, censored = _key_median(self.values[group.key], key)
            if censored:
                parts.append((False, -math.inf))
            else:
                parts.append((math.isnan(med), 0.0 if math.isnan(med) else (med if LOWER[key] else -med)))
        return (self.flagged(group), *parts)

    def _difference(self, a, b) -> str:
        """The first key on which two rank keys differ ('' when equal on all)."""
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return "flags" if i == 0 else HEADERS[self.order_keys[i - 1]]
        return "tie"

    def seed_values(self, group: Group, key: str) -> list[float]:
        """Per seed, the value the rank-sum test compares (lower is better; censored costs
        tie at −∞)."""
        values = self.values[group.key]
        out = []
        for i, v in enumerate(values[key]):
            if math.isnan(v):
                continue
            if key in COST_KEYS and values["censored"][i]:
                out.append(-math.inf)
            else:
                out.append(v if LOWER[key] else -v)
        return out

    def top_two(self, label=lambda g: g.label) -> tuple[str, str]:
        """(a short verdict for the first row's 'decided by' cell, the note) on whether the
        first two rows differ by more than the seed-to-seed spread; ('', '') with one row."""
        if len(self.ordered) < 2:
            return "", ""
        a, b = self.ordered[0], self.ordered[1]
        how = self.decided[0]
        if how == "tie":
            return "tied", (f"top two: {label(a)} and {label(b)} are equal on every key and "
                            "share a rank")
        if how == "flags":
            return "", (f"top two: {label(b)} is flagged, {label(a)} is not: ranked by the flag, "
                        "whatever the spread of its values")
        key = next(k for k in self.order_keys if HEADERS[k] == how)
        return seed_spread_test(self.seed_values(a, key), self.seed_values(b, key),
                                f"{label(a)} vs {label(b)} on {how}")


def seed_spread_test(a: list[float], b: list[float], what: str) -> tuple[str, str]:
    """A two-sided rank-sum (Wilcoxon–Mann–Whitney) test of two groups' per-seed values: the
    exact permutation distribution of the rank sum (midranks for ties) when there are at most
    200 000 splits, else scipy's normal approximation. Returns (short verdict, note)."""
    from itertools import combinations

    from scipy.stats import mannwhitneyu, rankdata

    n1, n2 = len(a), len(b)
    if n1 < 2 and n2 < 2:
        return "one seed", (f"top two ({what}): one seed each, no seed-to-seed spread to compare "
                            "the difference with: the order is that of single runs")
    min_p = 2.0 / math.comb(n1 + n2, n1)
    if min_p > SIGNIFICANCE:
        return "too few seeds", (
            f"top two ({what}): too few seeds to rank them: with {n1} and {n2} seeds no ordering "
            f"of the values reaches p < {SIGNIFICANCE:g} in a two-sided rank-sum test (the "
            f"smallest p is {min_p:.2g}; 4 seeds each are enough)")
    x = np.asarray(a + b, float)
    if np.all(x == x[0]):
        p = 1.0
    elif math.comb(n1 + n2, n1) <= 200_000:
        r = rankdata(x)
        e = n1 * (n1 + n2 + 1) / 2.0
        w = abs(r[:n1].sum() - e)
        sums = np.array([r[list(c)].sum() for c in combinations(range(n1 + n2), n1)])
        p = float(np.mean(np.abs(sums - e) >= w - 1e-9))
    else:
        finite = np.where(np.isinf(x), np.sign(x) * 1e300, x)
        p = float(mannwhitneyu(finite[:n1], finite[n1:], alternative="two-sided").pvalue)
    if p < SIGNIFICANCE:
        return f"p = {p:.2g}", (f"top two ({what}): the difference is larger than the "
                                f"seed-to-seed spread (rank-sum test over {n1} and {n2} seeds, "
                                f"p = {p:.2g})")
    return f"p = {p:.2g}, within spread", (
        f"top two ({what}): the difference is within the seed-to-seed spread (rank-sum test over "
        f"{n1} and {n2} seeds, p = {p:.2g}): their order is not settled")


def ranking_table(results: Results, target: str, diagnostics: bool = True,
                  rank_by: str | None = None) -> Table:
    """The ranking of every configuration group on ``target`` (see the module docstring);
    ``rank_by``: the first key (a key of :data:`COLUMNS`), else the default order."""
    groups = results.groups(target)
    order = Order(groups, rank_by, diagnostics)
    values, present, checks = order.values, order.present, order.checks
    primary, passed_over = order.primary, order.passed_over
    gradient_free = {g.key for g in groups if all(_gradient_free(run.trace) for run in g.runs)}
    verdict, top_note = order.top_two()
    rows, keys = [], []
    for i, (rank, group) in enumerate(zip(order.ranks, order.ordered)):
        row = [str(rank), " ".join(filter(None, (group.label, validity_mark(group),
                                                 group.flag_text(), report_flag_text(group, checks)))),
               str(len(group.runs))]
        key_row = [float(rank), None, float(len(group.runs))]
        for key, _, _ in present:
            if key in GRADIENT_COLUMNS and group.key in gradient_free:
                row.append(NOT_APPLICABLE)  # a gradient-free sampler: no gradient cost at all
                key_row.append(None)
                continue
            censored = values[group.key]["censored"] if key in COST_KEYS else None
            text, sort = cell(values[group.key][key], censored)
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
        decided = order.decided[i]
        if i == 0 and verdict:
            decided = f"{decided} ({verdict})" if decided != "tied" else decided
        row.append(decided)
        key_row.append(None)
        rows.append(row)
        keys.append(key_row)
    header = ["rank", "sampler", "seeds", *(h for k, h, _ in present)]
    if diagnostics:
        header += ["R-hat", "MCSE"]
    header.append("decided by")
    notes = table_notes(results, target)
    if primary:
        better = "lower" if LOWER[primary] else "higher"
        how = "chosen with rank_by" if rank_by == primary else "the default first key"
        ties = ", ".join(HEADERS[k] for k in order.order_keys[1:])
        notes = [f"ranked on {HEADERS[primary]} ({better} is better; median over seeds; "
                 f"{how}); ties go to {ties or 'no other key'}; equal on every key: a shared "
                 "rank; 'decided by': the key on which a row differs from the row above (the "
                 "first row: from the second)"] + order.notes + notes
        for key in passed_over:
            notes.insert(1, f"not ranked on {HEADERS[key]}: every configuration is ∞ or N/A there")
    if any(any(values[g.key]["censored"]) for g in groups) and any(c[0] in COST_KEYS for c in present):
        notes.append(f"'{CENSORED} v': b² was below {THRESHOLD} already at the run's first "
                     "checkpoint (checkpoint.first), so its cost to accuracy is only known to "
                     f"be at most v (censored): censored costs tie with each other (the ranking "
                     "goes to the next key) and rank ahead of any cost measured after the first "
                     "checkpoint")
    if top_note:
        notes.append(top_note)
    if groups and all(len(g.runs) < 2 for g in groups):
        notes.append("one seed per configuration: too few seeds to rank against the "
                     "seed-to-seed spread at all; the order is that of single runs")
    notes.extend(validity_notes(groups))
    discarded = discard_note(groups)
    if discarded and any(c[0] in ("mean_error", "second_moment_error", "bias2") for c in present):
        notes.append(discarded)
    flagged = [(g, r) for g in groups for r in g.flagged]
    if flagged:
        notes.append(f"{FLAG_MARK} flagged by the runner (no ESS: counted as 0; MCSE and cost to "
                     "accuracy: ∞): " + "; ".join(
                         f"{g.label} seed {r.seed}: " + ", ".join(f"{k} ({v})" for k, v in r.flags.items())
                         for g, r in flagged))
    empty = [item for item in results.skipped_on(target) if item.flags]
    if empty:
        notes.append(f"{FLAG_MARK} not ranked, no sample collected (a re-run of the same "
                     "command redoes them): " + "; ".join(
                         f"{item.label} ({item.path.name})" for item in empty))
    early = early_stop_note(groups)
    if early:
        notes.append(early)
    short = short_chains(groups)
    if short:
        notes.append(f"{FLAG_MARK} too short to trust (min ESS at the last checkpoint below "
                     f"{ESS_FLOOR:g}, the ESS floor; its estimates carry Monte Carlo errors above "
                     "a tenth of a posterior sd, ranked as measured): " + "; ".join(
                         f"{label} seed {seed} ({ess:.3g})" for label, seed, ess in short))
    checked = [(g, checks[g.key]) for g in groups if checks[g.key]]
    if checked:
        notes.append(f"{FLAG_MARK} flagged by the report's checks (seeds that disagree: R-hat > "
                     f"{RHAT_LIMIT}; b² off: a final moment error more than {BIAS_SIGMAS:g} of the "
                     "run's own MCSEs; divergent: transitions diverged after the warm-up; ranked "
                     "below every unflagged configuration): " + "; ".join(
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
    for name, check in GROUP_CHECKS.items():
        try:
            found = check(group)
        except Exception:  # a check that cannot run (no reference here) flags nothing
            found = None
        if found:
            out[name] = found
            short.append(name)
    diverged = [(run.seed, run.warnings["divergent"]) for run in group.runs if "divergent" in run.warnings]
    if diverged:
        out["divergent"] = "divergent after the warm-up: " + "; ".join(
            f"{note} (seed {seed})" for seed, note in diverged)
        short.append(f"divergent ({len(diverged)}/{len(group.runs)} seeds)")
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


def ranking_tables(results: Results, settings=None) -> list[Table]:
    """One ranking table per target (``settings.rank_by``: the first key)."""
    rank_by = getattr(settings, "rank_by", None)
    return [ranking_table(results, target, rank_by=rank_by) for target in results.targets]


ranking_tables.wants_settings = True
