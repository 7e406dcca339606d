"""Does stopping once the answer is known change the answer? The rank-agreement table of
``budget.early_stop`` (issue 44 §3), from full-budget suite runs.

A run stopped by the rule holds exactly the rows its full-budget run of the same seed has up to
the stopping checkpoint (``tests/test_runner.py::test_an_early_stopped_run_is_the_full_runs_prefix``),
so applying :meth:`ckam_bench.engine.budget.EarlyStop.decide` to a full-budget trace, prefix by
prefix, gives what the early-stopped run would have reported. For every posterior of the
suite runs under ``FOLDER`` (``experiment=posteriordb budget.early_stop.enabled=false``), this
ranks the configurations (sampler settings) by the suite's primary count key, the median over
seeds of the evaluations to b² < 0.01 for good (gradient evaluations for a gradient sampler,
density evaluations else: :func:`ckam_bench.report.posteriordb_suite.run_evaluations`; ∞ last;
equal medians share a rank), once on the full traces and once on the traces cut where the rule
stops, and prints per posterior whether the order and the winner agree, Kendall's τ between the
two rankings, and the evaluations spent with and without the rule; then the totals: posteriors
with the same order, runs whose cost to b² < 0.01 changed (b² rose above 0.01 again after the
stop: the rule's error), evaluations saved.

    python scripts/early_stop_agreement.py outputs/multirun/…      # the default rule (×4, ESS 100)
    python scripts/early_stop_agreement.py FOLDER --multiple 2 4 8 # several multiples side by side
    python scripts/early_stop_agreement.py FOLDER --futility 3 10  # and futility margins (its error)
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
from scipy import stats


def truncated(trace, rule, unit: str, limit: float | None):
    """The rows the run would have had under ``rule`` and whether it stopped as futile: up to
    the first checkpoint at which it decides to stop (every row when it never does)."""
    order = "checkpoint" if "checkpoint" in trace.columns else "sampler_seconds"
    trace = trace.sort_values(order, kind="stable").reset_index(drop=True)
    rows = trace.to_dict("records")
    for k in range(1, len(rows) + 1):
        decided = rule.decide(rows[:k], unit, limit)
        if decided is not None:
            return trace.iloc[:k], decided["kind"] == "futile"
    return trace, False


def run_costs(results, rule):
    """Per (posterior, configuration label): [(seed, full cost, early cost, evaluations full,
    evaluations early)]."""
    from ckam_bench.report.posteriordb_suite import _posterior, config_key, suite_labels
    from ckam_bench.report.ranking import cost_to_accuracy

    configs, per = {}, {}
    for group in results.groups():
        names = {_posterior(r) for r in group.runs}
        if len(names) != 1 or None in names:
            continue
        configs.setdefault(config_key(group), group)
        per.setdefault(names.pop(), []).append(group)
    labels = suite_labels(configs)
    out = {}
    for name, groups in per.items():
        for group in groups:
            rows = []
            for run in group.runs:
                trace = run.trace
                column = ("n_grad" if "n_grad" in trace and float(trace["n_grad"].iloc[-1]) > 0
                          else "n_density")
                unit = run.status.get("checkpoint_unit", "density")
                budget = run.status.get("budget", {})
                limit = {"density": budget.get("max_density"), "grad": budget.get("max_grad"),
                         "iterations": budget.get("max_iterations"),
                         "seconds": budget.get("seconds")}[unit]
                cut, futile = truncated(trace, rule, unit, limit)
                full_cost = cost_to_accuracy(trace, costs=(column,))[column]
                early_cost = math.inf if futile else cost_to_accuracy(cut, costs=(column,))[column]
                if run.flags:  # flagged by the runner: ∞, as the suite ranks it
                    full_cost = early_cost = math.inf
                rows.append((run.seed, full_cost, early_cost, float(trace["n_density"].iloc[-1]),
                             float(cut["n_density"].iloc[-1]), futile))
            out[(name, labels[config_key(group)])] = rows
    return out


def ranks(values: dict) -> dict:
    """Competition ranks (1, 2, 2, 4) of ``values`` (label -> cost; NaN and ∞ last, tied)."""
    keyed = {k: (v if np.isfinite(v) else math.inf) for k, v in values.items()}
    return {k: 1 + sum(w < v for w in keyed.values()) for k, v in keyed.items()}


def table(costs: dict) -> tuple[list[list[str]], dict]:
    posteriors = sorted({name for name, _ in costs})
    body, totals = [], {"same_order": 0, "same_winner": 0, "posteriors": 0, "runs": 0,
                        "changed": [], "full": 0.0, "early": 0.0, "futile": 0, "futile_wrong": 0}
    for name in posteriors:
        labels = sorted(label for n, label in costs if n == name)
        full = {lab: float(np.median([r[1] for r in costs[(name, lab)]])) for lab in labels}
        early = {lab: float(np.median([r[2] for r in costs[(name, lab)]])) for lab in labels}
        rf, re = ranks(full), ranks(early)
        same = rf == re
        winners_f = sorted(lab for lab in labels if rf[lab] == 1)
        winners_e = sorted(lab for lab in labels if re[lab] == 1)
        if len(labels) > 1 and len(set(rf.values())) > 1 and len(set(re.values())) > 1:
            tau = stats.kendalltau([rf[lab] for lab in labels], [re[lab] for lab in labels]).statistic
            tau_text = f"{tau:.2f}"
        else:
            tau_text = "–"
        spent_f = sum(r[3] for lab in labels for r in costs[(name, lab)])
        spent_e = sum(r[4] for lab in labels for r in costs[(name, lab)])
        for lab in labels:
            for seed, cf, ce, _, _, futile in costs[(name, lab)]:
                totals["runs"] += 1
                totals["futile"] += futile
                totals["futile_wrong"] += futile and math.isfinite(cf)
                if not (cf == ce or (math.isnan(cf) and math.isnan(ce))):
                    totals["changed"].append(f"{name} {lab} seed {seed}: {cf:,.0f} -> {ce:,.0f}")
        totals["posteriors"] += 1
        totals["same_order"] += same
        totals["same_winner"] += winners_f == winners_e
        totals["full"] += spent_f
        totals["early"] += spent_e
        body.append([name, str(len(labels)), ", ".join(winners_f), "yes" if same else "no",
                     "yes" if winners_f == winners_e else "no", tau_text, f"{spent_f:,.0f}",
                     f"{spent_e:,.0f}", f"{1 - spent_e / spent_f:.0%}" if spent_f else "–"])
    return body, totals


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="a folder of full-budget experiment=posteriordb runs")
    parser.add_argument("--multiple", type=float, nargs="+", default=[4.0])
    parser.add_argument("--min-ess", type=float, default=100.0)
    parser.add_argument("--threshold", type=float, default=0.01)
    parser.add_argument("--futility", type=float, nargs="+", default=[None],
                        help="futility margins F to try (default: none)")
    args = parser.parse_args(argv)
    from ckam_bench.engine.budget import EarlyStop
    from ckam_bench.report.aggregate import load_results

    results = load_results(args.folder)
    stopped = [r for r in results.runs if r.status.get("stopped_early")]
    if stopped:
        print(f"{args.folder}: {len(stopped)} runs were stopped early already; the agreement "
              "needs full-budget runs (budget.early_stop.enabled=false)", file=sys.stderr)
        return 2
    for multiple, futility in [(m, f) for m in args.multiple for f in args.futility]:
        rule = EarlyStop("bias2", args.threshold, multiple, args.min_ess, futility)
        body, totals = table(run_costs(results, rule))
        print(f"\n### multiple {multiple:g} (b² < {args.threshold:g} held from c to {multiple:g}c, "
              f"min ESS ≥ {args.min_ess:g}), futility {futility if futility is None else f'{futility:g}'}, "
              f"{len(results.runs)} runs\n")
        header = ["posterior", "configurations", "winner (full budget)", "same order",
                  "same winner", "Kendall τ", "evaluations (full)", "evaluations (rule)", "saved"]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in body:
            print("| " + " | ".join(row) + " |")
        n = totals["posteriors"]
        print(f"\nsame order on {totals['same_order']} of {n} posteriors, same winner on "
              f"{totals['same_winner']} of {n}; {len(totals['changed'])} of {totals['runs']} runs "
              f"change their cost to b² < {args.threshold:g} (b² above it again after the stop); "
              f"evaluations {totals['full']:,.0f} -> {totals['early']:,.0f} "
              f"({1 - totals['early'] / max(totals['full'], 1):.0%} saved)")
        if futility is not None:
            print(f"{totals['futile']} runs stopped as futile, {totals['futile_wrong']} of them "
                  f"wrongly (b² < {args.threshold:g} for good by the end of the full budget)")
        for line in totals["changed"]:
            print(f"  changed: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
