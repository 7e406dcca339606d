#!/usr/bin/env python
"""Issue 46 §3's two goals, per posterior, from stored suite runs: our adaptive NUTS against
the best peer configuration for each posterior, in gradients and in CPU seconds.

For every posterior and sampler configuration: the gradients to b² < 0.01 for good
(:func:`ckam_bench.report.posteriordb_suite.run_evaluations`, what the suite ranks on; ∞ when
the run does not end below it), median over the seeds. Then, per posterior, the ratio of our
configuration's median (``--ours``, default ``nuts_lowrank``, the harness's best adaptive NUTS;
no oracle rows) to the smallest median among the peers' configurations (``--peers``, default:
every other configuration in the runs). A seed whose run the runner flagged or whose draws
fail the posterior's reference (the suite's pass/fail) counts as ∞ (:func:`seed_value`). The
goal: a median ratio over posteriors ≤ 0.8 and none above 1.5. A posterior where both never
get there is left out of the ratios (listed); ours finite and every peer ∞ counts as 0
(ahead), ours ∞ and a peer finite as ∞ (behind).

The runs are the shipped baselines by default (their evaluation counts do not depend on the
machine), or the suite runs stored under a sweep folder::

    python scripts/frontier_goal.py                              # the shipped baselines
    python scripts/frontier_goal.py --runs outputs/multirun/...  # a sweep's stored runs
    python scripts/frontier_goal.py --csv docs/tables/frontier_gradients.csv
    python scripts/frontier_goal.py --ours-runs outputs/multirun/mine --peers nutpie,nutpie_lowrank,numpyro_nuts,blackjax_nuts,mams

``--cost cpu``: the CPU seconds of sampler time (all threads) at the same crossing instead of
the gradients, the best peer being the one that needs the fewest seconds; the goal: ours ahead
(ratio < 1) on at least 90 % of the posteriors. Seconds depend on the machine and its load, so
this reads runs measured alone: a sweep folder, or a file packed from one (the baselines
format keeps a run's sampler seconds, CPU seconds when its budget's clock is ``cpu``)::

    python scripts/frontier_goal.py --cost cpu --runs docs/tables/cpu_alone_seed0.parquet \
        --peers nutpie,nutpie_lowrank,numpyro_nuts,blackjax_nuts,mams,walnutpie,blackjax_gist,blackjax_nuts_fisher \
        --csv docs/tables/frontier_cpu_seconds.csv    # --ours nuts_converged: frontier_cpu_converged.csv

``--ours-runs FOLDER [FOLDER …]``: the suite runs stored under the folders (one configuration:
a user's sweep, perhaps in parts) are "ours", against the baselines' peers (``--peers``) on the
posteriors both ran.

Prints the per-posterior table (markdown) and the goal's lines; ``--csv`` writes the table.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

OURS = "nuts_lowrank"
GOAL_MEDIAN, GOAL_WORST = 0.8, 1.5
GOAL_AHEAD = 0.9
"""The CPU-second goal: ours ahead of every peer on at least this share of the posteriors."""
LEVEL = 1.2
"""Ratios between 1/1.2 and 1.2 are the same checkpoint: checkpoints are 1.47× apart (6 per
decade), and the gradients at one differ a little between samplers (it falls at the end of a
block)."""


def load_runs(source: str | None):
    """The stored runs: the baselines file (default: the shipped one) or a sweep folder's."""
    from ckam_bench.report import baselines

    if source is None or Path(source).is_file():
        path = source or baselines.SHIPPED
        runs, _ = baselines.load(path)
        return runs, f"baselines {path}"
    from ckam_bench.report.aggregate import load_results

    return load_results(source).runs, f"runs under {source}"


def _key(run):
    from ckam_bench.report.posteriordb_suite import _posterior

    name = run.status.get("posterior") or _posterior(run)
    return None if name is None else (name, run.status.get("label") or run.choices.get("sampler") or run.sampler)


def cpu_to_accuracy(run) -> float:
    """CPU seconds of sampler time (all threads) at the checkpoint from which b² < 0.01 holds
    for good (∞: never; NaN: the run has no CPU seconds, e.g. a baselines run of a wall clock)."""
    from ckam_bench.report.ranking import cost_to_accuracy

    trace = run.trace
    if "sampler_cpu_seconds" not in trace and "packed_sampler_seconds" in trace \
            and ((run.status.get("budget") or {}).get("clock") == "cpu"):
        trace = trace.assign(sampler_cpu_seconds=trace["packed_sampler_seconds"])
    return cost_to_accuracy(trace, costs=("sampler_cpu_seconds",))["sampler_cpu_seconds"]


def seed_value(run, posterior: str, cost: str = "gradients") -> tuple[float, str]:
    """(one seed's gradients — or, ``cost="cpu"``, CPU seconds — to b² < 0.01, why it is voided
    or ""): ∞ for a run the runner
    flagged (stuck, non-finite) or whose draws fail the posterior's reference (the suite's
    pass/fail), whatever its trace says — a cost to accuracy counts only for a right answer, the
    rule by which the suite ranks such groups last. Divergence warnings leave the value."""
    from ckam_bench.report.posteriordb_suite import run_evaluations, run_passes

    value = run_evaluations(run)[0] if cost == "gradients" else cpu_to_accuracy(run)
    if run.flags:
        return math.inf, "flagged"
    if run_passes(run, posterior) is False:
        return math.inf, "fails"
    return value, ""


def medians(runs, voided: dict | None = None, cost: str = "gradients") -> dict:
    """{(posterior, configuration): (median over seeds of :func:`seed_value`, seeds)};
    ``voided`` collects {(posterior, configuration): [reason per voided seed whose trace
    crosses]}."""
    from ckam_bench.report.posteriordb_suite import run_evaluations

    values: dict = {}
    for run in runs:
        if (key := _key(run)) is not None:
            value, why = seed_value(run, key[0], cost)
            values.setdefault(key, []).append(value)
            if why and voided is not None and math.isfinite(run_evaluations(run)[0]):
                voided.setdefault(key, []).append(why)
    return {key: (float(np.median(v)), len(v)) for key, v in values.items()}


def warmup_share(run) -> float:
    """The share of a run's gradients to b² < 0.01 spent before its first collected draw,
    estimated from its checkpoints: the gradients at the first checkpoint with draws less those
    draws times the gradients per iteration after it (NaN: too few checkpoints with draws, or
    never below)."""
    from ckam_bench.report.posteriordb_suite import run_evaluations

    trace = run.trace.sort_values("checkpoint")
    kept = trace[trace["n_collected"] > 0]
    cost = run_evaluations(run)[0]
    if len(kept) < 2 or not math.isfinite(cost) or cost <= 0:
        return math.nan
    first, last = kept.iloc[0], kept.iloc[-1]
    per_iteration = (last["n_grad"] - first["n_grad"]) / max(last["iterations"] - first["iterations"], 1)
    return float((first["n_grad"] - first["n_collected"] * per_iteration) / cost)


def efficiency(runs) -> dict:
    """{(posterior, configuration): (median min ESS per 1000 gradients at the runs' ends, median
    warm-up share)} over the seeds: what the crossing's checkpoint does not show."""
    values: dict = {}
    for run in runs:
        if (key := _key(run)) is None:
            continue
        last = run.trace.sort_values("checkpoint").iloc[-1]
        grads = float(last["n_grad"])
        ess = 1000.0 * float(last["ess_min"]) / grads if grads > 0 else math.nan
        values.setdefault(key, []).append((ess, warmup_share(run)))
    return {key: tuple(float(np.nanmedian(column)) if np.isfinite(column).any() else math.nan
                       for column in np.array(v).T) for key, v in values.items()}


def ratio(ours: float, best: float) -> float:
    """ours / best with the ∞ conventions of the module docstring (NaN: both ∞)."""
    if math.isinf(ours) and math.isinf(best):
        return math.nan
    if math.isinf(best):
        return 0.0
    if math.isinf(ours):
        return math.inf
    return ours / best


def table(cells: dict, ours: str, peers: list[str] | None, more: dict | None = None) -> list[dict]:
    """One row per posterior that ours and at least one peer ran on (with ``more``, the
    :func:`efficiency` of the runs: ours over the best peer's min ESS per gradient, our warm-up
    share)."""
    rows = []
    for name in sorted({p for p, _ in cells}):
        mine = cells.get((name, ours))
        others = {c: v for (p, c), v in cells.items() if p == name and c != ours
                  and (peers is None or c.split(" ")[0] in peers)}
        if mine is None or not others:
            continue
        best_config = min(others, key=lambda c: (others[c][0], c))
        best = others[best_config][0]
        row = {"posterior": name, "ours": mine[0], "seeds": mine[1], "best_peer": best_config,
               "best": best, "ratio": ratio(mine[0], best)}
        if more is not None:
            (ess, share), (peer_ess, _) = more[(name, ours)], more[(name, best_config)]
            row["ess_ratio"] = ess / peer_ess if peer_ess > 0 else math.nan
            row["warmup_share"] = share
        rows.append(row)
    return rows


def _count(value: float, cost: str = "gradients") -> str:
    if math.isinf(value):
        return "∞"
    return f"{value:,.0f}" if cost == "gradients" else f"{value:.3f}"


def _ratio_text(value: float) -> str:
    return "–" if math.isnan(value) else ("∞" if math.isinf(value) else f"{value:.2f}")


UNIT = {"gradients": "gradients", "cpu": "CPU seconds"}


def cpu_causes(behind: list[dict]) -> list[str]:
    """Where the CPU rows not ahead lose (rows split by :func:`split_cpu`): ours never gets there
    with a right answer; behind in gradients (a checkpoint or more: gradients ratio > 1.2); or at
    the same checkpoint (within 1.2×) but dearer per gradient."""
    if not behind or "grads_ratio" not in behind[0]:
        return []
    never = sum(math.isinf(r["ratio"]) for r in behind)
    later = sum(math.isfinite(r["ratio"]) and r["grads_ratio"] > LEVEL for r in behind)
    return [f"of the {len(behind)} not ahead: {never} where ours never gets there with a right answer, {later} a "
            f"checkpoint or more behind in gradients, {len(behind) - never - later} at the same checkpoint (within "
            f"{LEVEL}×) but dearer per gradient"]


def goal_lines(rows: list[dict], ours: str, cost: str) -> list[str]:
    """The goal's verdict: in gradients, the median ratio ≤ 0.8 and none above 1.5; in CPU
    seconds, ahead (ratio < 1) on at least 90 % of the posteriors."""
    finite = [r["ratio"] for r in rows if not math.isnan(r["ratio"])]
    if not finite:
        return []
    median, worst = float(np.median(finite)), max(finite)
    if cost == "cpu":
        behind = [r for r in rows if not math.isnan(r["ratio"]) and r["ratio"] >= 1.0]
        share = 1.0 - len(behind) / len(finite)
        return [f"{ours} / best peer CPU seconds: median {median:.2f}, worst {_ratio_text(worst)} over {len(finite)} "
                f"posteriors; ahead (< 1) of every peer on {len(finite) - len(behind)} ({100 * share:.0f} %) "
                f"(goal: ≥ {100 * GOAL_AHEAD:.0f} %): {'met' if share >= GOAL_AHEAD else 'not met'}",
                f"within {LEVEL}× of the best peer on {sum(1.0 / LEVEL <= v <= LEVEL for v in finite)}",
                *cpu_causes(behind),
                "not ahead (CPU ratio = gradients ratio × CPU-per-gradient ratio, to the crossing): " + (", ".join(
                    f"{r['posterior']} ({_ratio_text(r['ratio'])} = {_ratio_text(r.get('grads_ratio', math.nan))} × "
                    f"{_ratio_text(r.get('per_grad_ratio', math.nan))}, {r['best_peer']})" for r in behind) or "none")]
    above = [r for r in rows if not math.isnan(r["ratio"]) and r["ratio"] > GOAL_WORST]
    met = median <= GOAL_MEDIAN and not above
    level = sum(1.0 / LEVEL <= v <= LEVEL for v in finite)
    ahead = sum(v < 1.0 / LEVEL for v in finite)
    lines = [f"{ours} / best peer gradients: median {median:.2f}, worst {_ratio_text(worst)} over "
             f"{len(finite)} posteriors, above {GOAL_WORST} on {len(above)} (goal: median ≤ {GOAL_MEDIAN}, "
             f"none above {GOAL_WORST}): {'met' if met else 'not met'}",
             f"at the best peer's checkpoint (a ratio within {LEVEL}× of 1) on {level} of {len(finite)}, "
             f"ahead on {ahead}, behind on {len(finite) - level - ahead}"]
    if "ess_ratio" in rows[0]:
        behind = [r["ess_ratio"] for r in rows if not math.isnan(r["ratio"]) and r["ratio"] > LEVEL]
        every = [r["ess_ratio"] for r in rows if not math.isnan(r["ratio"])]
        where = (f"{min(behind):.2f}–{max(behind):.2f}× on the {len(behind)} where it is behind" if behind
                 else "behind on none")
        lines.append(f"min ESS per gradient at the runs' ends, {ours} / best peer: median "
                     f"{np.nanmedian(every):.2f} over {len(every)} posteriors; {where}")
        shares = [r["warmup_share"] for r in rows if not math.isnan(r.get("warmup_share", math.nan))]
        lines.append(f"its warm-up's share of its gradients to b² < 0.01: median {np.median(shares):.2f} over "
                     f"{len(shares)} posteriors")
    if above:
        lines.append(f"above {GOAL_WORST}: " + ", ".join(
            f"{r['posterior']} ({_ratio_text(r['ratio'])}, {r['best_peer']})" for r in above))
    return lines


def report(rows: list[dict], ours: str, what: str, voided: dict | None = None, cost: str = "gradients") -> list[str]:
    unit = UNIT[cost]
    lines = [f"{unit[0].upper() + unit[1:]} to b² < 0.01 for good, median over seeds, {ours} against the best peer "
             f"configuration of each posterior ({what}; {len(rows)} posteriors)", "",
             f"| posterior | {ours} | best peer | its {unit} | ratio |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['posterior']} | {_count(r['ours'], cost)} | {r['best_peer']} | {_count(r['best'], cost)} "
                     f"| {_ratio_text(r['ratio'])} |")
    both_never = [r["posterior"] for r in rows if math.isnan(r["ratio"])]
    lines += ["", *goal_lines(rows, ours, cost)]
    if both_never:
        lines.append(f"left out, neither gets there (within the budget, with draws that pass): {', '.join(both_never)}")
    if voided:
        shown = {r["posterior"] for r in rows}
        reasons = [(c, why) for (p, c), whys in voided.items() if p in shown for why in whys]
        if reasons:
            mine = sum(c == ours for c, _ in reasons)
            fails = sum(why == "fails" for _, why in reasons)
            lines.append(f"counted as never although b² < 0.01 was reached: {len(reasons)} seeds ({fails} failing "
                         f"the reference, {len(reasons) - fails} flagged by the runner), {mine} of them {ours}'s")
    return lines


def split_cpu(rows: list[dict], gradients: dict, ours: str) -> None:
    """Per CPU row, its ratio's two factors: ``grads_ratio`` (ours over the best peer's median
    gradients to b² < 0.01) and ``per_grad_ratio`` (the CPU seconds per gradient up to there:
    the CPU ratio over the gradients ratio; NaN where either is not finite)."""
    for row in rows:
        mine, theirs = gradients.get((row["posterior"], ours)), gradients.get((row["posterior"], row["best_peer"]))
        row["grads_ratio"] = ratio(mine[0], theirs[0]) if mine and theirs else math.nan
        finite = math.isfinite(row["ratio"]) and math.isfinite(row["grads_ratio"]) and row["grads_ratio"] > 0
        row["per_grad_ratio"] = row["ratio"] / row["grads_ratio"] if finite else math.nan


def write_csv(rows: list[dict], path: str, cost: str = "gradients") -> None:
    import pandas as pd

    from ckam_bench.files import atomic_write

    extra = ["grads_ratio", "per_grad_ratio"] if cost == "cpu" else []
    frame = pd.DataFrame(rows, columns=["posterior", "ours", "seeds", "best_peer", "best", "ratio", "ess_ratio",
                                        "warmup_share", *extra])
    for column in ("ratio", "ess_ratio", "warmup_share", *extra):  # as printed: 2 decimals
        frame[column] = [_ratio_text(v).replace("∞", "inf").replace("–", "") for v in frame[column]]
    for column in ("ours", "best"):  # exact counts (medians of five: a count), seconds to the ms; ∞ as inf
        frame[column] = ["inf" if math.isinf(v) else (f"{v:.0f}" if cost == "gradients" else f"{v:.3f}")
                         for v in frame[column]]
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=None, help="a baselines file or a sweep folder (default: the shipped baselines)")
    ap.add_argument("--ours", default=OURS, help="our configuration's label (default: %(default)s)")
    ap.add_argument("--peers", default=None, help="comma-separated peer samplers (default: every other configuration)")
    ap.add_argument("--ours-runs", default=None, metavar="FOLDER", nargs="+",
                    help="sweep folders whose runs are ours (one configuration; of a sweep of several "
                         "samplers, the runs of sampler --ours), against --runs' peers")
    ap.add_argument("--cost", choices=sorted(UNIT), default="gradients",
                    help="what the ratios compare: gradients (default) or CPU seconds of sampler time")
    ap.add_argument("--csv", default=None, help="also write the per-posterior table here")
    args = ap.parse_args(argv)
    for flag, value in [("--runs", args.runs)] + [("--ours-runs", v) for v in args.ours_runs or ()]:
        if value is not None and not Path(value).exists():
            ap.exit(2, f"{ap.prog}: {flag}: no such file or folder: {value}\n")
    if args.cost == "cpu" and args.runs is None:
        ap.exit(2, f"{ap.prog}: --cost cpu needs --runs: the shipped baselines' seconds come from sweeps on a "
                   "loaded machine, not measured alone\n")
    runs, what = load_runs(args.runs)
    if args.ours_runs is not None:
        from ckam_bench.report.aggregate import load_results

        mine = [run for folder in args.ours_runs for run in load_results(folder).runs]
        if len({run.sampler for run in mine}) > 1:  # a sweep of several samplers: ours only
            mine = [run for run in mine if run.sampler == args.ours]
        for run in mine:  # one configuration: labelled as ours
            run.status["label"] = args.ours
        runs = [r for r in runs if _key(r) is None or _key(r)[1] != args.ours] + mine
        what += f", ours: the runs under {', '.join(args.ours_runs)}"
    voided: dict = {}
    cells = medians(runs, voided, args.cost)
    if args.cost == "cpu" and all(math.isnan(v) for v, _ in cells.values()):
        ap.exit(2, f"{ap.prog}: --cost cpu: no CPU seconds in {what} (runs of a CPU clock, measured alone)\n")
    rows = table(cells, args.ours, args.peers.split(",") if args.peers else None, efficiency(runs))
    if not rows:
        ap.exit(2, f"{ap.prog}: no posterior has runs of {args.ours} and of a peer in {what}\n")
    if args.cost == "cpu":
        split_cpu(rows, medians(runs), args.ours)
    print("\n".join(report(rows, args.ours, what, voided, args.cost)))
    if args.csv:
        write_csv(rows, args.csv, args.cost)
    return 0


if __name__ == "__main__":
    sys.exit(main())
