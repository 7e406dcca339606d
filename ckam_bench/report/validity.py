"""Validity figures and tables: the stationarity check's outputs and the KL floor.

* :func:`figure_check` — one check (``ckam-bench-check``): the moment z-scores of every
  coordinate against time with their null band (±1.96 and the Bonferroni band of the
  verdict), and for mixtures the share of chains in each mode with its invariant band
  (reference share ± 1.96 binomial s.e.), else the KS distances with their 5 % critical value.
* :func:`find_checks` — the check folders under a results folder, identified by their marker
  (``.ckam-output.json`` written by ``ckam-bench-check``, listing ``check.json`` and
  ``tests.csv`` with their content), never by file names alone.
* :func:`figure_drift` — the checks stored under a results folder, on one mixture target:
  share of the chains in each mode against the cycle (iterations / cycle length when the
  sampler has cycles), one line per sampler, with the invariant band. Published cKAM against
  its finite-adaptation variant on the bimodal target is the drift figure of issue 9.
* :func:`name_checks` — each check named by its full configuration (sampler, preset and every
  setting of its sampler config, overrides included: ``rw [step_size=0.5]``), never by the
  sampler's name alone, and its kernel read from its sampler config (none for a sampler
  without one, whatever kernel the config group had chosen).
* :func:`verdict_table` — one row per stored check (check by its configuration, target,
  kernel — "–" without one —, adaptation, verdict — a failed one marked ⚠ FAIL —, α, chains,
  times, number of tests, smallest Holm-adjusted p, worst test, largest |z| of the moments and
  the mode share at the last time, seed, folder).
* :func:`render_validity` — all of it for ``ckam-bench-figures``: the report's Validity
  section (:class:`ValiditySection`, in ``report.md`` and ``report.html``).
* :func:`draw_kl_floor` — on a KL figure, the KL of n exact draws (median over repeats,
  :func:`ckam_bench.metrics.kl.kl_floor`) at each sampler's number of collected states, dashed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from ckam_bench.engine import outputs
from ckam_bench.report.aggregate import FLAG_MARK, _tag, flatten
from ckam_bench.report.drawing import Drawn, Rendered
from ckam_bench.report.tables import Table, kernel_text

CHECK_COMMAND = "ckam-bench-check"  # the marker's command (ckam_bench.checks.stationarity.COMMAND)
CHECK_FILE = "check.json"
TESTS_FILE = "tests.csv"
CSV = "validity_verdicts.csv"


@dataclass
class StoredChecks:
    """The check folders found under a results folder: used, and not used with the reason."""

    checks: list[dict] = field(default_factory=list)
    problems: list[tuple[Path, str]] = field(default_factory=list)


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


def find_checks(root) -> StoredChecks:
    """The outputs of ``ckam-bench-check`` under ``root`` (searched recursively), identified
    by their own marker (:data:`ckam_bench.engine.outputs.MARKER` naming :data:`CHECK_COMMAND`), not
    by their file names: a check is used when its marker lists ``check.json`` (published last,
    so the check finished) and ``tests.csv`` with their current content. A check folder that
    does not qualify (unfinished, edited since, unreadable) is listed with the reason."""
    found = StoredChecks()
    for marker_path in sorted(Path(root).rglob(outputs.MARKER)):
        folder = marker_path.parent
        try:
            marker = json.loads(marker_path.read_text())
        except (OSError, ValueError):
            continue  # not identifiable: not known to be a check
        if not isinstance(marker, dict) or marker.get("command") != CHECK_COMMAND:
            continue  # another command's folder (a report, a reference)
        files = marker.get("files") if isinstance(marker.get("files"), dict) else {}
        problem = None
        for name in (CHECK_FILE, TESTS_FILE):
            path = folder / name
            if not path.is_file():
                problem = f"no {name}: the check did not finish"
            elif outputs.sha256(path) not in (files.get(name) or ()):
                problem = f"{name} is not the file {CHECK_COMMAND} wrote (changed since)"
            if problem:
                break
        if problem is None:
            try:
                info = json.loads((folder / CHECK_FILE).read_text())
                tests = pd.read_csv(folder / TESTS_FILE)
                if not isinstance(info, dict) or "verdict" not in info:
                    raise ValueError("no verdict")
            except (OSError, ValueError) as exc:
                problem = f"unreadable ({type(exc).__name__})"
        if problem is None:
            png = folder / "stationarity.png"
            own = png.is_file() and outputs.sha256(png) in (files.get(png.name) or ())
            found.checks.append({"info": info, "tests": tests, "path": folder,
                                 "figure": png if own else None})
        else:
            found.problems.append((folder, problem))
    name_checks(found.checks)
    return found


def check_kernel(info: dict) -> str | None:
    """The kernel of a check's sampler as configured (``kernel (l=…, s=…)``), or None for a
    sampler without one (``check.json``'s ``kernel`` is the config group's choice, set even
    for a sampler that uses no kernel: the sampler's own config says whether it has one)."""
    config = info.get("config")
    if not isinstance(config, dict) or config.get("kernel") is None:
        return None
    node = config["kernel"]
    return kernel_text(node) if isinstance(node, dict) else str(node)


def check_settings(info: dict) -> dict:
    """A check's full configuration as flat ``{key: value}``: sampler, target, preset and every
    leaf of its sampler config (overrides included), without the check's own settings."""
    flat = {"choice.sampler": info.get("sampler"), "choice.target": info.get("target"),
            "preset": info.get("experiment") or "default"}
    config = info.get("config")
    if isinstance(config, dict):
        flat.update(flatten(config, "sampler."))
    return flat


def name_checks(checks: list[dict]) -> None:
    """Give each check (``find_checks``'s dicts) its ``name``, ``kernel`` and ``config_key``:
    the name is the sampler (with its preset), plus the settings in which it differs from the
    other checks of that sampler on that target (``rw [step_size=0.5]``; a kernel by its
    name), so two checks of one sampler with other overrides never share a name; the key is a
    short hash of the full configuration (:func:`check_settings`)."""
    for c in checks:
        settings = check_settings(c["info"])
        c["settings"], c["kernel"] = settings, check_kernel(c["info"])
        c["config_key"] = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str)
                                         .encode()).hexdigest()[:12]
    for c in checks:
        info = c["info"]
        same = [o for o in checks if o["info"].get("sampler") == info.get("sampler")
                and o["info"].get("target") == info.get("target")]
        keys = sorted({k for o in same for k in o["settings"]})
        differ = [k for k in keys if k != "preset" and len({json.dumps(
            o["settings"].get(k), sort_keys=True, default=str) for o in same}) > 1]
        if any(k.startswith("sampler.kernel.") for k in differ):
            differ = [k for k in differ if not k.startswith("sampler.kernel.")]
            tags = [c["kernel"] or "no kernel"]
        else:
            tags = []
        tags += [_tag(k, c["settings"].get(k, "unset")) for k in differ]
        if len(tags) > 3:
            tags = tags[:3] + [f"+{len(tags) - 3} more"]
        base = str(info.get("sampler") or info.get("label") or "check")
        preset = info.get("experiment")
        if preset and preset != "default":
            base += f" [{preset}]"
        if info.get("sampler") is None:  # a check written without its sampler: its label
            base = str(info.get("label", base))
        c["name"] = f"{base} [{', '.join(tags)}]" if tags else base
    seen: dict[str, int] = {}
    for c in checks:  # same configuration twice (another seed, other check settings)
        seen[c["name"]] = seen.get(c["name"], 0) + 1
        if seen[c["name"]] > 1:
            c["name"] += f" #{seen[c['name']]}"


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
        label = f"{c.get('name', info.get('label'))} ({info.get('adaptation') or 'none'})"
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


VERDICT_COLUMNS = (
    # (check.json key, header, LaTeX header, how the cell is written)
    ("label", "check", "check", str),
    ("target", "target", "target", str),
    ("kernel", "kernel", "kernel", str),
    ("adaptation", "adaptation", "adaptation", str),
    ("verdict", "verdict", "verdict", lambda v: "pass" if v == "pass" else f"{FLAG_MARK} {v}"),
    ("alpha", "α", r"$\alpha$", "{:g}".format),
    ("n_chains", "chains", "chains", str),
    ("times", "times", "times", str),
    ("n_tests", "tests", "tests", str),
    ("min_p_holm", "min Holm p", "min Holm $p$", "{:.3g}".format),
    ("worst_test", "worst test", "worst test", str),
    ("max_abs_z_mean_last", "max abs z, mean (last)", "max $|z|$, mean (last)", "{:.3g}".format),
    ("max_abs_z_second_last", "max abs z, E[(x−μ)²] (last)",
     r"max $|z|$, $E[(x-\mu)^2]$ (last)", "{:.3g}".format),
    ("occupancy_last", "mode share (last)", "mode share (last)", str),
    ("seed", "seed", "seed", str),
)


def _row(check: dict) -> dict:
    """A check's values as the table shows them: ``check.json``'s, with its full-configuration
    name as ``label`` and its sampler's kernel (None without one) as ``kernel``."""
    return {**check["info"], "label": check.get("name", check["info"].get("label")),
            "kernel": check.get("kernel")}


def verdict_frame(checks: list[dict]) -> pd.DataFrame:
    """One row per stored check, the values as ``check.json`` holds them (``label``: the
    check's name by its full configuration, ``kernel``: empty for a sampler without one), its
    configuration key and folder."""
    keys = ["sampler", "experiment", *(key for key, *_ in VERDICT_COLUMNS)]
    rows = [{**{k: _row(c).get(k) for k in keys}, "config_key": c.get("config_key"),
             "folder": str(c["path"])} for c in checks]
    return pd.DataFrame(rows, columns=[*keys, "config_key", "folder"])


def verdict_table(checks: list[dict], root) -> Table:
    """The verdict table of the report: one row per check, a failed one marked ⚠ FAIL."""
    rows, sort_keys = [], []
    for c in checks:
        info, row, keys = _row(c), [], []
        for key, _, _, text in VERDICT_COLUMNS:
            value = info.get(key)
            try:
                row.append(("–" if key == "kernel" else "") if value is None else text(value))
            except (TypeError, ValueError):  # a value of another type than expected
                row.append(str(value))
            keys.append(float(value) if isinstance(value, (int, float))
                        and not isinstance(value, bool) else None)
        rows.append(row + [os.path.relpath(c["path"], root)])
        sort_keys.append(keys + [None])
    header = [h for _, h, _, _ in VERDICT_COLUMNS] + ["folder"]
    latex_header = [h for _, _, h, _ in VERDICT_COLUMNS] + ["folder"]
    failed = sum(c["info"].get("verdict") != "pass" for c in checks)
    notes = [f"{len(checks)} check(s) stored under the results folder by {CHECK_COMMAND}, "
             f"{failed} failed; a check passes when no Holm-adjusted p-value (every test at "
             "every time) is below α"]
    return Table(title="Stationarity checks", stem="validity_verdicts", header=header,
                 latex_header=latex_header, rows=rows, notes=notes, sort_keys=sort_keys)


@dataclass
class ValiditySection:
    """What the report shows of the checks stored under its results folder."""

    checks: list[dict]
    problems: list[tuple[Path, str]]
    figures: list[Rendered]
    table: Table

    @property
    def failed(self) -> list[dict]:
        return [c for c in self.checks if c["info"].get("verdict") != "pass"]

    def summary(self) -> str:
        """One sentence: how many checks, which failed."""
        if not self.failed:
            return f"All {len(self.checks)} stored stationarity check(s) pass."
        names = "; ".join(f"{c.get('name', c['info'].get('label'))} on "
                          f"{c['info'].get('target')}" for c in self.failed)
        return (f"{FLAG_MARK} {len(self.failed)} of {len(self.checks)} stored stationarity "
                f"check(s) FAIL: {names} — their chains do not stay distributed as π.")

    def markdown(self, out_dir) -> list[str]:
        """The report.md lines of the section."""
        lines = ["## Validity (stationarity checks)", "", self.summary(), ""]
        for fig in self.figures:
            png = next((p for p in fig.paths if p.suffix == ".png"), None)
            if png is not None:
                lines += [f"![{fig.title}]({os.path.relpath(png, out_dir)})", ""]
            lines += [f"*{fig.title}. {fig.caption}*", ""]
        lines += [self.table.markdown(), f"(CSV: [{CSV}]({CSV}); LaTeX: "
                  f"[{self.table.stem}.tex]({self.table.stem}.tex))", ""]
        if self.problems:
            lines += ["Check folders not used:", ""]
            lines += [f"- `{path}`: {why}" for path, why in self.problems]
            lines.append("")
        return lines


def render_validity(results_root, out_dir, formats=("png",)) -> ValiditySection | None:
    """The Validity section of the checks stored under ``results_root`` (for
    ``ckam-bench-figures``): the drift figure per mixture target and the verdict table
    (markdown, LaTeX and ``validity_verdicts.csv``) written to ``out_dir``; None when no
    check folder is there."""
    found = find_checks(results_root)
    if not found.checks and not found.problems:
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rendered = []
    for target in sorted({str(c["info"].get("target")) for c in found.checks}):
        try:
            fig, caption = figure_drift(found.checks, target)
        except ValueError:  # no mode occupancy on this target
            continue
        rendered.append(Drawn(f"validity_drift_{target}", fig, caption, "Validity",
                              f"Mode occupancy drift on {target}").save(out, formats))
    table = verdict_table(found.checks, results_root)
    table.write(out)
    verdict_frame(found.checks).to_csv(out / CSV, index=False)
    return ValiditySection(found.checks, found.problems, rendered, table)


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
