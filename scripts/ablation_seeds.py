#!/usr/bin/env python
"""One change to a sampler, seed by seed: the suite runs of a configuration before the change
(``BEFORE``, a sweep folder) against its runs after it (``AFTER``), on the posteriors and seeds
both ran.

Each cell is a seed's gradients to b² < 0.01 for good, as ``scripts/frontier_goal.py`` counts
them (``seed_value``: ∞ for a run the runner flagged or whose draws fail the posterior's
reference). Per posterior: the five-seed medians before and after and their ratio; then how
many posteriors moved by more than a checkpoint's spacing either way (``LEVEL``), the geometric
mean of the finite ratios, and the seeds voided before and after::

    python scripts/ablation_seeds.py conv conv_jitter05 --csv docs/tables/ablation_step_jitter.csv

Counts, which no load changes. ``--csv`` writes one row per posterior and seed. ``BEFORE`` may
also be such a CSV of an earlier ablation: its ``after`` arm (``--arm before`` for the other) is
then the runs before the change, so a shipped arm need not be run again::

    python scripts/ablation_seeds.py docs/tables/ablation_sampling_jitter03.csv conv_next
"""

from __future__ import annotations

import argparse
import importlib.util
import math
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _frontier():
    spec = importlib.util.spec_from_file_location("frontier_goal", HERE / "frontier_goal.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seeds(folder: str, fg) -> dict:
    """{(posterior, seed): (gradients to b² < 0.01 or ∞, why voided or "")} of a sweep folder."""
    from ckam_bench.report.aggregate import load_results

    cells = {}
    for run in load_results(folder).runs:
        if (key := fg._key(run)) is not None:
            cells[(key[0], int(run.status["seed"]))] = fg.seed_value(run, key[0])
    return cells


def seeds_from_csv(path: str, arm: str) -> dict:
    """The cells of one arm (``before`` or ``after``) of a CSV this script wrote."""
    import pandas as pd

    frame = pd.read_csv(path, dtype={f"{arm}_void": str}, keep_default_na=False)
    missing = {"posterior", "seed", arm, f"{arm}_void"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path}: not an ablation CSV of this script (no column {sorted(missing)[0]})")
    return {(row["posterior"], int(row["seed"])): (float(row[arm]), row[f"{arm}_void"])
            for _, row in frame.iterrows()}


def compare(before: dict, after: dict) -> list[dict]:
    """One row per (posterior, seed) both folders ran, sorted."""
    rows = []
    for posterior, seed in sorted(before.keys() & after.keys()):
        (b, why_b), (a, why_a) = before[(posterior, seed)], after[(posterior, seed)]
        rows.append({"posterior": posterior, "seed": seed, "before": b, "after": a,
                     "before_void": why_b, "after_void": why_a})
    return rows


def summary(rows: list[dict], fg) -> list[str]:
    """The per-posterior lines and the summary line; ``fg`` is frontier_goal.py (its ratio's ∞
    conventions and its checkpoint spacing LEVEL)."""
    level = fg.LEVEL
    by: dict = {}
    for row in rows:
        by.setdefault(row["posterior"], []).append(row)
    lines, ratios, up, down = [], [], [], []
    for posterior, group in by.items():
        b = float(np.median([r["before"] for r in group]))
        a = float(np.median([r["after"] for r in group]))
        ratio = fg.ratio(a, b)
        lines.append(f"{posterior}: {_count(b)} -> {_count(a)} ({len(group)} seeds; "
                     + " ".join(f"{r['seed']}:{_count(r['before'])}->{_count(r['after'])}" for r in group) + ")")
        if math.isfinite(ratio) and ratio > 0:
            ratios.append(ratio)
        if ratio > level:
            up.append(posterior)
        elif ratio < 1 / level:
            down.append(posterior)
    void_b = sum(bool(r["before_void"]) for r in rows)
    void_a = sum(bool(r["after_void"]) for r in rows)
    geo = math.exp(float(np.mean(np.log(ratios)))) if ratios else math.nan
    lines.append(f"{len(by)} posteriors, {len(rows)} seeds: fewer gradients (median, by more than {level}x) on "
                 f"{len(down)}, more on {len(up)}; geometric mean of the finite median ratios {geo:.2f}; "
                 f"seeds voided (flagged or failing the reference) {void_b} before, {void_a} after")
    return lines


def _count(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.0f}"


def write_csv(rows: list[dict], path: str) -> None:
    import pandas as pd

    from ckam_bench.files import atomic_write

    frame = pd.DataFrame(rows, columns=["posterior", "seed", "before", "after", "before_void", "after_void"])
    for column in ("before", "after"):
        frame[column] = [_count(v) for v in frame[column]]
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", help="the sweep folder of the runs before the change, or a CSV of an earlier ablation")
    ap.add_argument("after", help="the sweep folder of the runs after it")
    ap.add_argument("--arm", choices=("before", "after"), default="after",
                    help="the arm of a BEFORE CSV that is the runs before the change (default: after)")
    ap.add_argument("--csv", default=None, help="also write one row per posterior and seed here")
    args = ap.parse_args(argv)
    csv_before = args.before.endswith(".csv") and Path(args.before).is_file()
    for name, value in (("before", args.before), ("after", args.after)):
        if not (Path(value).is_dir() or (name == "before" and csv_before)):
            ap.exit(2, f"{ap.prog}: {name}: no such folder: {value}\n")
    fg = _frontier()
    try:
        before = seeds_from_csv(args.before, args.arm) if csv_before else seeds(args.before, fg)
    except ValueError as error:
        ap.exit(2, f"{ap.prog}: before: {error}\n")
    rows = compare(before, seeds(args.after, fg))
    if not rows:
        ap.exit(2, f"{ap.prog}: the two folders share no suite run (posterior and seed)\n")
    print("\n".join(summary(rows, fg)))
    if args.csv:
        write_csv(rows, args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
