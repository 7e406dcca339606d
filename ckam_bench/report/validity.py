"""Validity figures and tables: the stationarity check's outputs and the KL floor.

* :func:`figure_check` — one check (``ckam-bench-check``): the moment z-scores of every
  coordinate against time with their null band (±1.96 and the Bonferroni band of the
  verdict), and for mixtures the share of chains in each mode with its invariant band
  (reference share ± 1.96 binomial s.e.), else the KS distances with their 5 % critical value.
* :func:`figure_drift` — the checks stored under a results folder, on one mixture target:
  share of the chains in each mode against the cycle (iterations / cycle length when the
  sampler has cycles), one line per sampler, with the invariant band. Published cKAM against
  its finite-adaptation variant on the bimodal target is the drift figure of issue 9.
* :func:`verdict_table` — one row per stored check (sampler, preset, target, adaptation,
  verdict, worst test, occupancy).
* :func:`draw_kl_floor` — on a KL figure, the KL of n exact draws (median over repeats,
  :func:`ckam_bench.metrics.kl.kl_floor`) at each sampler's number of collected states, dashed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

CHECK_FILE = "check.json"
TESTS_FILE = "tests.csv"
DPI = 150


def _z_band(alpha: float, n_tests: int) -> float:
    return float(stats.norm.isf(alpha / (2 * max(n_tests, 1))))


def _x(times, cycle_length) -> tuple[np.ndarray, str]:
    times = np.asarray(times, float)
    if cycle_length:
        return times / float(cycle_length), "cycles (iterations / cycle length)"
    return times, "iterations"


def _parse_list(value):
    if isinstance(value, str):
        return json.loads(value)
    return value


def figure_check(tests: pd.DataFrame, info: dict) -> tuple[Figure, str]:
    """Statistic against time with its null band for one check (see the module docstring)."""
    alpha, n_tests = float(info["alpha"]), int(info["n_tests"])
    times = sorted(tests["time"].unique())
    xs, xlabel = _x(times, info.get("cycle_length"))
    x_map = dict(zip(times, xs))
    occ = tests[tests["test"] == "occupancy"]
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    dims = sorted({int(t.split("[")[1][:-1]) for t in tests["test"] if t.startswith("mean[")})
    shown = dims[:8]
    for kind, style in (("mean", "-"), ("second", "--")):
        for j in shown:
            part = tests[tests["test"] == f"{kind}[{j}]"].sort_values("time")
            ax1.plot([x_map[t] for t in part["time"]], part["statistic"], style, marker="o", ms=3,
                     label=f"{kind} x{j}" if len(shown) <= 4 else None)
    z_bonf = _z_band(alpha, n_tests)
    ax1.axhspan(-1.96, 1.96, color="0.85", label="±1.96")
    ax1.axhline(z_bonf, color="0.4", lw=0.8, ls=":", label=f"±{z_bonf:.2f} (level {alpha:g}, {n_tests} tests)")
    ax1.axhline(-z_bonf, color="0.4", lw=0.8, ls=":")
    ax1.set_xscale("log")
    ax1.set_xlabel(xlabel)
    ax1.set_ylabel("z-score (mean: solid, E[(x-μ)²]: dashed)")
    ax1.legend(fontsize="x-small", frameon=False)
    if len(occ):
        occ = occ.sort_values("time")
        share = np.array([_parse_list(v) for v in occ["share"]], float)
        ref = np.asarray(_parse_list(occ.iloc[0]["reference_share"]), float)
        n = int(occ.iloc[0]["n_labels"])
        xo = [x_map[t] for t in occ["time"]]
        for k in range(share.shape[1]):
            line, = ax2.plot(xo, share[:, k], marker="o", ms=3, label=f"mode {k}")
            half = 1.96 * math.sqrt(ref[k] * (1 - ref[k]) / n)
            ax2.axhspan(ref[k] - half, ref[k] + half, color=line.get_color(), alpha=0.15)
        ax2.set_ylabel("share of chains in the mode")
        ax2.set_title("mode occupancy (band: π ± 1.96 s.e.)", fontsize="small")
    else:
        crit = 1.358 * math.sqrt(1 / info["n_chains"] + 1 / info["n_reference"])
        for j in shown:
            part = tests[tests["test"] == f"ks[{j}]"].sort_values("time")
            ax2.plot([x_map[t] for t in part["time"]], part["statistic"], marker="o", ms=3, label=f"x{j}")
        ax2.axhspan(0, crit, color="0.85", label="5 % critical value")
        ax2.set_ylabel("KS distance to exact draws")
    ax2.set_xscale("log")
    ax2.set_xlabel(xlabel)
    ax2.legend(fontsize="x-small", frameon=False)
    verdict = "passes" if info["verdict"] == "pass" else "FAILS"
    title = f"{info.get('label', info.get('sampler', ''))} on {info.get('target', '')}: {verdict}"
    fig.suptitle(title, fontsize="medium")
    caption = (f"Stationarity check: {info['n_chains']} chains started from exact draws of π, "
               f"tested at {len(xs)} times against {info['n_reference']} fresh exact draws; "
               f"verdict at family-wise level {alpha:g} (Holm over {n_tests} tests): {verdict}, "
               f"smallest adjusted p = {info['min_p_holm']:.2g} ({info['worst_test']}).")
    return fig, caption


def load_checks(root) -> list[dict]:
    """Every check folder under ``root`` (a ``check.json`` beside a ``tests.csv``)."""
    checks = []
    for path in sorted(Path(root).rglob(CHECK_FILE)):
        tests_path = path.parent / TESTS_FILE
        if not tests_path.exists():
            continue
        try:
            info = json.loads(path.read_text())
            tests = pd.read_csv(tests_path)
        except (OSError, ValueError):
            continue
        checks.append({"info": info, "tests": tests, "path": path.parent})
    return checks


def figure_drift(checks: list[dict], target: str = "bimodal") -> tuple[Figure, str]:
    """Share of chains in each mode per cycle, one line per check on ``target``."""
    chosen = [c for c in checks if c["info"].get("target") == target
              and (c["tests"]["test"] == "occupancy").any()]
    if not chosen:
        raise ValueError(f"no stored stationarity check with mode occupancy on {target}")
    cyclic = [c for c in chosen if c["info"].get("cycle_length")]
    chosen = cyclic or chosen  # the cyclic samplers (cKAM's drift per cycle) when there are any
    first = chosen[0]["tests"]
    n_modes = len(_parse_list(first[first["test"] == "occupancy"].iloc[0]["share"]))
    fig = Figure(figsize=(4.2 * n_modes, 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, n_modes, sharey=True))
    lines = []
    for c in chosen:
        info, occ = c["info"], c["tests"][c["tests"]["test"] == "occupancy"].sort_values("time")
        share = np.array([_parse_list(v) for v in occ["share"]], float)
        xs, xlabel = _x(occ["time"], info.get("cycle_length") if cyclic else None)
        label = f"{info.get('label', info.get('sampler'))} ({info.get('adaptation') or 'none'})"
        for k, ax in enumerate(axes):
            ax.plot(xs, share[:, k], marker="o", ms=3, label=label)
            ax.set_xlabel(xlabel)
        lines.append(f"{label}: {info['verdict']}")
    occ = first[first["test"] == "occupancy"]
    ref = np.asarray(_parse_list(occ.iloc[0]["reference_share"]), float)
    n = int(occ.iloc[0]["n_labels"])
    for k, ax in enumerate(axes):
        half = 1.96 * math.sqrt(ref[k] * (1 - ref[k]) / n)
        ax.axhspan(ref[k] - half, ref[k] + half, color="0.85", label="invariant band (π ± 1.96 s.e.)")
        ax.axhline(ref[k], color="0.4", lw=0.8)
        ax.set_title(f"mode {k}", fontsize="small")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("share of chains")
    axes[-1].legend(fontsize="x-small", frameon=False)
    caption = (f"Drift of the mode occupancy on {target}: chains started from exact draws of π "
               f"(at a cycle start); share of chains in each mode at each tested time, with the "
               f"band a π-invariant sampler stays in (95 %, {n} chains). "
               + "; ".join(lines) + ".")
    return fig, caption


def verdict_table(checks: list[dict]) -> pd.DataFrame:
    """One row per stored check."""
    keys = ("label", "sampler", "experiment", "target", "adaptation", "verdict", "n_chains", "times",
            "min_p_holm", "worst_test", "occupancy_last", "max_abs_z_mean_last",
            "max_abs_z_second_last", "seed")
    rows = [{k: c["info"].get(k) for k in keys} for c in checks]
    return pd.DataFrame(rows, columns=list(keys))


def render_validity(results_root, out_dir, formats=("png", "pdf")) -> tuple[list, str | None]:
    """The drift figure per mixture target and the verdict table of the checks stored under
    ``results_root`` (for ``ckam-bench-figures``): ``(rendered, markdown)``; empty when there
    are no checks. ``rendered`` holds ``(stem, paths, caption)`` tuples."""
    checks = load_checks(results_root)
    if not checks:
        return [], None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rendered = []
    for target in sorted({c["info"].get("target") for c in checks if c["info"].get("target")}):
        try:
            fig, caption = figure_drift(checks, target)
        except ValueError:
            continue
        stem = f"validity_drift_{target}"
        paths = []
        for fmt in formats:
            path = out / f"{stem}.{fmt}"
            fig.savefig(path, dpi=DPI, format=fmt)
            paths.append(path)
        rendered.append((stem, paths, caption))
    table = verdict_table(checks)
    table.to_csv(out / "validity_verdicts.csv", index=False)
    return rendered, markdown(table)


def markdown(table: pd.DataFrame) -> str:
    """A pipe table (numbers to 3 significant digits)."""
    def cell(v):
        return f"{v:.3g}" if isinstance(v, float) else ("" if v is None else str(v))
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def draw_kl_floor(ax, frame: pd.DataFrame, runs, x: str, key: str, palette: dict, colour) -> None:
    """Dashed KL floor (KL of n exact draws, median over repeats) at each group's median
    number of collected states along ``x``; nothing when the target cannot be rebuilt or the
    traces have no ``n_collected``."""
    from ckam_bench.metrics.kl import kl_floor

    if "n_collected" not in frame.columns or x not in frame.columns:
        return
    target, kl_cfg = None, {}
    for run in runs:
        try:
            target = run.build_target()
            kl_cfg = (run.config or {}).get("metrics", {}).get("kl", {}) or {}
            break
        except Exception:  # a run whose config no longer builds: try the next one
            continue
    if target is None:
        return
    bins, pseudocount = int(kl_cfg.get("bins", 50)), float(kl_cfg.get("pseudocount", 0.5))
    data = frame[[x, "n_collected", key, "run_id"]].dropna()
    data = data[(data[x] > 0) & (data["n_collected"] > 0)]
    if data.empty:
        return
    n_all = data["n_collected"].to_numpy(float)
    n_grid = np.unique(np.geomspace(n_all.min(), n_all.max(), 30).astype(np.int64))
    floor = kl_floor(target, n_grid, repeats=7, bins=bins, pseudocount=pseudocount)
    labelled = False
    for name, part in data.groupby(key):
        grid = np.geomspace(part[x].min(), part[x].max(), 60)
        per_run = [np.interp(grid, r[x].to_numpy(float), r["n_collected"].to_numpy(float),
                             left=np.nan, right=np.nan)
                   for _, r in part.sort_values(x).groupby("run_id") if len(r) >= 2]
        if not per_run:
            continue
        n_med = np.nanmedian(np.vstack(per_run), axis=0)
        ok = np.isfinite(n_med) & (n_med >= 1)
        values = np.interp(np.log(n_med[ok]), np.log(floor["n"].to_numpy(float)), floor["median"])
        ax.plot(grid[ok], values, ls="--", lw=0.9, color=colour(name, palette), alpha=0.7,
                label=None if labelled else "KL of n exact draws (dashed)")
        labelled = True
    ax.legend(fontsize="small", frameon=False)


def append_to_report(report: Path, results_root, out_dir, formats=("png", "pdf")) -> None:
    """Append a "Validity" section (drift figures and the verdict table of the stationarity
    checks stored under ``results_root``) to ``report``; nothing when there are none."""
    rendered, table = render_validity(results_root, out_dir, formats)
    if table is None:
        return
    out = Path(out_dir)
    lines = ["", "## Validity (stationarity checks)", ""]
    for stem, paths, caption in rendered:
        png = [p for p in paths if p.suffix == ".png"]
        if png:
            lines += [f"![{stem}]({png[0].relative_to(out)})", ""]
        lines += [f"*{caption}*", ""]
    lines += [table, "", "(CSV: [validity_verdicts.csv](validity_verdicts.csv))", ""]
    with open(report, "a") as fh:
        fh.write("\n".join(lines))
