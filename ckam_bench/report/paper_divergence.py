"""The divergence-minimisation paper's tables and figures (Dharamshi, Ngo & Rosenthal) from stored runs.

* Tables 1–4 (:func:`divergence_table`) — one row per sampler on double_banana (Table 1),
  basis4 (2), banana_bunch (3), horseshoe (4): acceptance (%), Ê[X] (Table 1), the mean error
  ‖Ê[X] − E[X]‖, the second-moment error ‖Ê[X²] − E[X²]‖ (Table 3), the coefficient distance
  ‖Ê[β] − β_true‖ (Table 4, the paper's d(E[X], Ê[X]) there; Table 4 adds the mean and
  second-moment errors against the certified reference), ESJD (a per-step mean, where the
  paper's formula is a sum), and the tempering samplers' mean swap acceptance; mean ± sd over
  seeds of each run's last checkpoint. The moment columns are the trace columns of
  :mod:`ckam_bench.metrics.moments` (N/A in runs made without it).
* Figures 7/8 and 12 (:func:`figure_scatter`) — stored (thinned) samples of the first seed of
  each sampler over the target's density contours; 3-D targets as the x–y, x–z, y–z projections.
* Figure 9 (:func:`figure_traces`) — each coordinate of basis4 against the iteration, per
  sampler (the modes at −10, 0 and 10 along every axis).

:func:`render` draws whatever the runs support and is what ``ckam-bench-figures`` calls.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ckam_bench.report import sections
from ckam_bench.report.aggregate import Results, StoredRun, final_rows, sampler_order
from ckam_bench.report.drawing import Drawn, run_colour
from ckam_bench.report.tables import NA, Table, mean_sd, statistic

PAPER_TABLES = {"double_banana": 1, "basis4": 2, "banana_bunch": 3, "horseshoe": 4}
SCATTER_FIGURES = {"double_banana": "7–8", "banana_bunch": "12"}
_COLUMNS = {
    # (trace column, header, scale)
    "acceptance": ("acceptance", "Accept (%)", 100.0),
    "mean_estimate": ("mean_estimate", "Ê[X]", 1.0),
    "mean_error": ("mean_error", "d(E[X], Ê[X])", 1.0),
    "second_moment_error": ("second_moment_error", "d(E[X²], Ê[X²])", 1.0),
    "coefficient_error": ("coefficient_error", "d(β, Ê[β])", 1.0),
    "esjd": ("esjd", "ESJD (mean)", 1.0),
    "swap_acceptance_mean": ("swap_acceptance_mean", "swap accept (%)", 100.0),
}
TABLE_COLUMNS = {
    1: ("acceptance", "mean_estimate", "mean_error", "esjd", "swap_acceptance_mean"),
    2: ("acceptance", "mean_error", "esjd", "swap_acceptance_mean"),
    3: ("acceptance", "mean_error", "second_moment_error", "esjd", "swap_acceptance_mean"),
    4: ("acceptance", "coefficient_error", "mean_error", "second_moment_error", "esjd", "swap_acceptance_mean"),
}
NOTES = {
    4: ["d(β, Ê[β]) is the paper's distance to the data-generating coefficients, which the data dominate "
        "(least squares is 0.12 from them); d(E[X], Ê[X]) and d(E[X²], Ê[X²]) are over all 42 coordinates "
        "against the certified reference sample (exact Gibbs, shipped), N/A for runs made without it"],
}


ORDER = ("rw", "arwm", "pt2", "pt", "pt10", "mala", "dm", "dm_finite", "scout", "scout_finite")
"""The paper's row order; other samplers follow in the report's usual order."""


def _by_sampler(results: Results, target: str) -> dict[str, list[StoredRun]]:
    runs = results.select(target=target)
    present = {r.sampler for r in runs}
    names = [n for n in ORDER if n in present] + [n for n in sampler_order(present) if n not in ORDER]
    return {name: [r for r in runs if r.sampler == name] for name in names}


def _vector_mean(values) -> str:
    """The mean over seeds of a list column (Ê[X] per run), as '[a, b, …]'."""
    rows = [np.asarray(v, float) for v in values if v is not None and np.size(v)]
    if not rows or len({r.shape for r in rows}) != 1:
        return NA
    return "[" + ", ".join(statistic(v) for v in np.mean(rows, axis=0)) + "]"


def divergence_table(results: Results, target: str) -> Table:
    """The paper's table for ``target`` (Tables 1–4; the Table 2 columns for other targets)."""
    number = PAPER_TABLES.get(target)
    keys = TABLE_COLUMNS[number or 2]
    rows = []
    for name, runs in _by_sampler(results, target).items():
        last = final_rows(pd.concat([r.trace for r in runs], ignore_index=True))
        cells = []
        for key in keys:
            column, _, scale = _COLUMNS[key]
            if column not in last.columns:
                cells.append(NA)
            elif key == "mean_estimate":
                cells.append(_vector_mean(last[column]))
            else:
                cells.append(mean_sd(pd.to_numeric(last[column], errors="coerce") * scale))
        rows.append([name, *cells, str(last["run_id"].nunique())])
    title = (f"Table {number} (divergence-minimisation paper)" if number else "Divergence-minimisation columns")
    header = ["sampler", *(_COLUMNS[k][1] for k in keys), "seeds"]
    return Table(title=f"{title}: {target}, last checkpoint, mean ± sd over seeds", stem=f"dm_table_{target}",
                 header=header, latex_header=header, rows=rows, notes=list(NOTES.get(number, [])))


def _first_seed(runs: list[StoredRun]) -> StoredRun:
    return min(runs, key=lambda r: r.seed)


def _contour(ax, target, i: int, j: int, lo_hi) -> None:
    """Density contours of a 2-D target (skipped for other dimensions)."""
    if target is None or target.dim != 2:
        return
    (x0, x1), (y0, y1) = lo_hi
    gx, gy = np.meshgrid(np.linspace(x0, x1, 200), np.linspace(y0, y1, 200))
    logp = target._log_density_batch(np.column_stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
    ax.contour(gx, gy, np.exp(logp - logp.max()), levels=[0.001, 0.01, 0.05, 0.2, 0.5, 0.8], colors="0.6",
               linewidths=0.6)


def figure_scatter(results: Results, target: str):
    """Stored samples of each sampler's first seed, with the density contours (2-D) or as the
    three coordinate-pair projections (3-D). Returns (figure, caption) or None without samples."""
    by_sampler = {k: _first_seed(v) for k, v in _by_sampler(results, target).items()}
    samples = {k: s for k, s in ((k, r.sample_array()) for k, r in by_sampler.items()) if s is not None}
    if not samples:
        return None
    built = None
    try:
        built = next(iter(by_sampler.values())).build_target()
    except Exception:  # a stale config only loses the contours
        built = None
    dim = next(iter(samples.values())).shape[1]
    pairs = [(0, 1)] if dim == 2 else [(0, 1), (0, 2), (1, 2)]
    n = len(samples)
    ncols = 4 if len(pairs) == 1 else len(pairs)
    nrows = math.ceil(n / ncols) if len(pairs) == 1 else n
    fig = Figure(figsize=(3.0 * ncols, 2.7 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    box = built.box if built is not None and built.box is not None else None
    for k, (name, x) in enumerate(samples.items()):
        for p, (i, j) in enumerate(pairs):
            ax = axes[k // ncols, k % ncols] if len(pairs) == 1 else axes[k, p]
            lims = ((box[i][0], box[i][1]), (box[j][0], box[j][1])) if box is not None else None
            if lims is not None:
                _contour(ax, built, i, j, lims)
                ax.set_xlim(*lims[0])
                ax.set_ylim(*lims[1])
            ax.scatter(x[:, i], x[:, j], s=1, alpha=0.3, color=run_colour(results, by_sampler[name]),
                       rasterized=True)
            ax.set_title(f"{name} (seed {by_sampler[name].seed})", fontsize=8)
            ax.set_xlabel(f"x{i + 1}", fontsize=7)
            ax.set_ylabel(f"x{j + 1}", fontsize=7)
    if len(pairs) == 1:
        for k in range(n, nrows * ncols):
            axes[k // ncols, k % ncols].set_visible(False)
    caption = (f"Samples on {target} (the paper's Figure {SCATTER_FIGURES.get(target, '–')}): the stored, evenly "
               f"thinned collected states of each sampler's first seed"
               + (", projected on each pair of axes." if dim > 2 else ", over the target's density contours."))
    return fig, caption


def figure_traces(results: Results, target: str = "basis4"):
    """Each coordinate against the iteration for each sampler's first seed (the paper's Fig 9)."""
    by_sampler = {k: _first_seed(v) for k, v in _by_sampler(results, target).items()}
    frames = {k: r.samples() for k, r in by_sampler.items()}
    frames = {k: f for k, f in frames.items() if f is not None and not f.empty}
    if not frames:
        return None
    dim = sum(1 for c in next(iter(frames.values())).columns if c.startswith("x") and c[1:].isdigit())
    fig = Figure(figsize=(2.6 * len(frames), 1.4 * dim), layout="constrained")
    axes = fig.subplots(dim, len(frames), squeeze=False, sharey=True)
    for c, (name, frame) in enumerate(frames.items()):
        for j in range(dim):
            ax = axes[j, c]
            ax.plot(frame["index"], frame[f"x{j}"], lw=0.3, color=run_colour(results, by_sampler[name]))
            for level in (-10, 0, 10):
                ax.axhline(level, color="0.8", lw=0.5, zorder=0)
            if j == 0:
                ax.set_title(f"{name} (seed {by_sampler[name].seed})", fontsize=8)
            if c == 0:
                ax.set_ylabel(f"x{j + 1}", fontsize=7)
    caption = (f"Traces of every coordinate on {target} (the paper's Figure 9): the stored, evenly thinned "
               f"collected states of each sampler's first seed against their index; a sampler that moves "
               f"between all eight modes reaches −10, 0 and 10 in every coordinate.")
    return fig, caption


SECTION = sections.PAPERS["divergence"].section


def tables(results: Results) -> list[Table]:
    """Tables 1–4 for the paper's targets present in ``results``."""
    used = sections.PAPERS["divergence"].targets_used(results)
    return [divergence_table(results, t) for t in PAPER_TABLES if t in used]


def figures(results: Results, settings=None) -> list[Drawn]:
    """Scatter figures (Figs 7, 8, 12) and the basis4 trace plot (Fig. 9) the runs support."""
    used = sections.PAPERS["divergence"].targets_used(results)
    targets = [t for t in PAPER_TABLES if t in used]
    drawings = [(f"dm_scatter_{t}", f"Fig. {SCATTER_FIGURES[t]}: {t}",
                 lambda t=t: figure_scatter(results, t)) for t in targets if t in SCATTER_FIGURES]
    if "basis4" in targets:
        drawings.append(("dm_traces_basis4", "Fig. 9: basis4 traces",
                         lambda: figure_traces(results, "basis4")))
    out = []
    for stem, title, draw in drawings:
        drawn = draw()
        if drawn is not None:
            fig, caption = drawn
            out.append(Drawn(stem, fig, caption, SECTION, title))
    return out
