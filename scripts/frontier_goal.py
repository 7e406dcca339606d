#!/usr/bin/env python
"""Issue 46 §3's gradient goal, per posterior, from stored suite runs: our adaptive NUTS
against the best peer configuration for each posterior.

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


def seed_value(run, posterior: str) -> tuple[float, str]:
    """(one seed's gradients to b² < 0.01, why it is voided or ""): ∞ for a run the runner
    flagged (stuck, non-finite) or whose draws fail the posterior's reference (the suite's
    pass/fail), whatever its trace says — a cost to accuracy counts only for a right answer, the
    rule by which the suite ranks such groups last. Divergence warnings leave the value."""
    from ckam_bench.report.posteriordb_suite import run_evaluations, run_passes

    value = run_evaluations(run)[0]
    if run.flags:
        return math.inf, "flagged"
    if run_passes(run, posterior) is False:
        return math.inf, "fails"
    return value, ""


def medians(runs, voided: dict | None = None) -> dict:
    """{(posterior, configuration): (median over seeds of :func:`seed_value`, seeds)};
    ``voided`` collects {(posterior, configuration): [reason per voided seed whose trace
    crosses]}."""
    from ckam_bench.report.posteriordb_suite import run_evaluations

    values: dict = {}
    for run in runs:
        if (key := _key(run)) is not None:
            value, why = seed_value(run, key[0])
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


def _count(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:,.0f}"


def _ratio_text(value: float) -> str:
    return "–" if math.isnan(value) else ("∞" if math.isinf(value) else f"{value:.2f}")


def report(rows: list[dict], ours: str, what: str, voided: dict | None = None) -> list[str]:
    lines = [f"Gradients to b² < 0.01 for good, median over seeds, {ours} against the best peer "
             f"configuration of each posterior ({what}; {len(rows)} posteriors)", "",
             f"| posterior | {ours} | best peer | its gradients | ratio |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['posterior']} | {_count(r['ours'])} | {r['best_peer']} | {_count(r['best'])} "
                     f"| {_ratio_text(r['ratio'])} |")
    finite = [r["ratio"] for r in rows if not math.isnan(r["ratio"])]
    both_never = [r["posterior"] for r in rows if math.isnan(r["ratio"])]
    above = [r for r in rows if not math.isnan(r["ratio"]) and r["ratio"] > GOAL_WORST]
    lines.append("")
    if finite:
        median, worst = float(np.median(finite)), max(finite)
        met = median <= GOAL_MEDIAN and not above
        lines.append(f"{ours} / best peer gradients: median {median:.2f}, worst {_ratio_text(worst)} over "
                     f"{len(finite)} posteriors, above {GOAL_WORST} on {len(above)} (goal: median ≤ {GOAL_MEDIAN}, "
                     f"none above {GOAL_WORST}): {'met' if met else 'not met'}")
        level = sum(1.0 / LEVEL <= v <= LEVEL for v in finite)
        ahead = sum(v < 1.0 / LEVEL for v in finite)
        lines.append(f"at the best peer's checkpoint (a ratio within {LEVEL}× of 1) on {level} of {len(finite)}, "
                     f"ahead on {ahead}, behind on {len(finite) - level - ahead}")
    if finite and "ess_ratio" in rows[0]:
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


def write_csv(rows: list[dict], path: str) -> None:
    import pandas as pd

    from ckam_bench.files import atomic_write

    frame = pd.DataFrame(rows, columns=["posterior", "ours", "seeds", "best_peer", "best", "ratio", "ess_ratio",
                                        "warmup_share"])
    for column in ("ratio", "ess_ratio", "warmup_share"):  # as printed: 2 decimals
        frame[column] = [_ratio_text(v).replace("∞", "inf").replace("–", "") for v in frame[column]]
    for column in ("ours", "best"):  # exact counts (medians of five: a count), ∞ as inf
        frame[column] = ["inf" if math.isinf(v) else f"{v:.0f}" for v in frame[column]]
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=None, help="a baselines file or a sweep folder (default: the shipped baselines)")
    ap.add_argument("--ours", default=OURS, help="our configuration's label (default: %(default)s)")
    ap.add_argument("--peers", default=None, help="comma-separated peer samplers (default: every other configuration)")
    ap.add_argument("--ours-runs", default=None, metavar="FOLDER", nargs="+",
                    help="sweep folders whose runs are ours (one configuration; of a sweep of several "
                         "samplers, the runs of sampler --ours), against --runs' peers")
    ap.add_argument("--csv", default=None, help="also write the per-posterior table here")
    args = ap.parse_args(argv)
    for flag, value in [("--runs", args.runs)] + [("--ours-runs", v) for v in args.ours_runs or ()]:
        if value is not None and not Path(value).exists():
            ap.exit(2, f"{ap.prog}: {flag}: no such file or folder: {value}\n")
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
    rows = table(medians(runs, voided), args.ours, args.peers.split(",") if args.peers else None, efficiency(runs))
    if not rows:
        ap.exit(2, f"{ap.prog}: no posterior has runs of {args.ours} and of a peer in {what}\n")
    print("\n".join(report(rows, args.ours, what, voided)))
    if args.csv:
        write_csv(rows, args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
