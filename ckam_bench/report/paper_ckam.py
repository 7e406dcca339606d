"""The cKAM paper's Figures 1–14, drawn from stored runs only.

One function per kind of figure (``figure_step_size``, ``figure_kl_all``, …), called as
``f(results, settings, **fixed) -> (Figure, caption)`` through the registry :data:`FIGURES`
(number → file stem, function, fixed arguments such as the target), each raising
:class:`NotSupported` (with a one-line reason) when the runs cannot support the figure;
:func:`render` saves a figure in each requested format (what figures share, e.g.
:class:`Settings` and the colours, is in :mod:`~ckam_bench.report.drawing`).

=====  ====================================================================================
Fig.   content (target)
=====  ====================================================================================
1      step size ν_t over the first 10 cycles of cKAM and KAM's over the same iterations
       (diagnostics of one seed; bimodal, else the first target with cKAM runs)
2/5    target density on its box (bimodal / gmm2d), rebuilt from a stored config
8      gmm32: joint density of dimensions 2 and 7 (1-based; columns x1, x6) and their marginals
3/6/9  symmetric KL against the x-axis, every sampler (bimodal / gmm2d / gmm32)
4/7    KL of the longest cKAM runs (largest budget), linear x-axis (bimodal / gmm2d)
10/14  histogram of the first coordinate per sampler against the exact marginal
       (bimodal / gmm2d)
11     ESS (min over coordinates, else median) against the x-axis (bimodal)
12     2-D histogram of the samples, one panel per sampler (bimodal)
13     cKAM's KL with each kernel (bimodal)
=====  ====================================================================================

Curves over seeds: median line and a band of percentiles (default 10–90 %) on a common grid
(:func:`ckam_bench.report.aggregate.aggregate`), drawn where at least half of a group's runs
are still running; the x-axis is logarithmic except in Figs 4/7, the y-axis whenever the values
span at least a decade. Histograms over seeds: each run's normalised histogram, then the median
(Figs 10/14, with band) or mean (Fig 12) over runs, so every seed weighs the same. The
all-sampler figures compare like with like (:func:`comparison_groups`): one configuration
group per sampler (every seed once), a sampler run with several kernels is shown with its
Matérn runs (else its most frequent kernel), and runs with a budget other than the one most
runs share (e.g. the long cKAM runs of Figs 4/7) are left out; each caption names what it
left out and why.
Every sampler keeps one colour in every figure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ckam_bench.report import sections, validity
from ckam_bench.report.aggregate import Group, Results, StoredRun, sampler_order
from ckam_bench.report.drawing import (KERNEL_COLOURS, Drawn, NotSupported, Rendered, Settings,
                                       built_target, colour, curves, label_colour, new_figure,
                                       panels, run_colour)


# ---------------------------------------------------------------------------- selection
def _target_runs(results: Results, target: str) -> list[StoredRun]:
    runs = results.select(target=target)
    if not runs:
        raise NotSupported(f"no runs on target {target}")
    return runs


def _preferred_kernel(runs: list[StoredRun]) -> str:
    kernels = Counter(r.kernel for r in runs)
    return "matern" if "matern" in kernels else kernels.most_common(1)[0][0]


def _modal_budget(runs) -> float:
    """The budget most runs (or groups' runs) share (the smallest of equally common ones)."""
    counts = Counter(r.budget_seconds for r in runs)
    return min(counts, key=lambda b: (-counts[b], b))


def comparison_groups(results: Results, target: str) -> dict[str, Group]:
    """One configuration group per sampler on ``target``, comparing like with like.

    One kernel per sampler (Matérn when it was run, else its most frequent one) and one
    budget: the budget most runs on the target share, else the sampler's most common one
    (so longer runs, e.g. for Figs 4/7, do not enter the all-sampler figures); of the groups
    left (e.g. two presets), the one with most seeds. Each seed counts once
    (:func:`ckam_bench.report.aggregate.group_runs`).
    """
    groups = results.groups(target)
    if not groups:
        raise NotSupported(f"no runs on target {target}")
    sweep_budget = _modal_budget([r for g in groups for r in g.runs])
    chosen = {}
    for name in sampler_order(g.sampler for g in groups):
        mine = [g for g in groups if g.sampler == name]
        kernel = _preferred_kernel([r for g in mine for r in g.runs])
        same_kernel = [g for g in mine if g.kernel == kernel]
        budget = (sweep_budget if any(g.budget_seconds == sweep_budget for g in same_kernel)
                  else _modal_budget([r for g in same_kernel for r in g.runs]))
        same = [g for g in same_kernel if g.budget_seconds == budget]
        chosen[name] = max(same, key=lambda g: len(g.runs))
    return chosen


def comparison_runs(results: Results, target: str) -> dict[str, list[StoredRun]]:
    """The runs of :func:`comparison_groups`, per sampler."""
    return {name: g.runs for name, g in comparison_groups(results, target).items()}


def comparison_colours(results: Results, target: str) -> dict[str, str]:
    """Per sampler, the report's colour of its comparison group's label
    (:func:`ckam_bench.report.drawing.sampler_colours`)."""
    return {name: label_colour(results, g.label)
            for name, g in comparison_groups(results, target).items()}


def left_out(results: Results, target: str, shown: list[Group]) -> str:
    """A caption sentence naming what a figure of ``shown`` groups leaves out on ``target``
    and why: other configurations, duplicated seeds, skipped runs ('' when nothing)."""
    keys = {g.key for g in shown}
    others = [g for g in results.groups(target) if g.key not in keys]
    parts = []
    if others:
        parts.append("other configurations " + ", ".join(
            f"{g.label} ({len(g.runs)} run{'s' * (len(g.runs) != 1)})" for g in others))
    dup = sum(len(g.duplicates) for g in shown)
    if dup:
        parts.append(f"{dup} repeated run(s) of a seed already shown")
    skipped = results.skipped_on(target)
    if skipped:
        parts.append(f"{len(skipped)} incomplete or unreadable run(s) (listed in the report)")
    return (" Left out: " + "; ".join(parts) + ".") if parts else ""


def _with_metric(runs: list[StoredRun], y: str) -> pd.DataFrame:
    """The traces of ``runs`` that have at least one finite ``y``."""
    frames = [r.trace for r in runs
              if y in r.trace.columns
              and np.isfinite(pd.to_numeric(r.trace[y], errors="coerce")).any()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _box(target, j: int, samples: list[np.ndarray] | None = None) -> tuple[float, float]:
    """The target's box along coordinate j, else the 0.5–99.5 % range of the samples."""
    if target is not None and target.box is not None:
        lo, hi = target.box[j]
        return float(lo), float(hi)
    columns = [s[:, j] for s in samples or [] if len(s)]
    if not columns:
        raise NotSupported("no box and no samples to choose a plotting range from")
    lo, hi = (float(v) for v in np.percentile(np.concatenate(columns), [0.5, 99.5]))
    return (lo, hi) if hi > lo else (lo - 0.5, lo + 0.5)


def _seed_text(counts: dict[str, int], keys=()) -> str:
    """'rw 5, ckam 5' plus '; none with data: kam' for ``keys`` missing from ``counts``."""
    text = ", ".join(f"{k} {v}" for k, v in counts.items())
    missing = [k for k in keys if k not in counts]
    return text + (f"; none with data: {', '.join(missing)}" if missing else "")


def _comparison_note(results: Results, target: str, what: str, counts: dict[str, int],
                     by_sampler: dict) -> str:
    """The end of an all-sampler caption: runs (or seeds) per sampler, what was left out."""
    return (f" {what} per sampler: {_seed_text(counts, by_sampler)}."
            + left_out(results, target, list(comparison_groups(results, target).values())))


def _metric_vs_x(target: str, y: str, ylabel: str, settings: Settings,
                 runs_by_key: dict[str, list[StoredRun]], key: str, palette: dict,
                 log_x: bool = True) -> tuple[Figure, dict[str, int]]:
    runs = [r for group in runs_by_key.values() for r in group]
    frame = _with_metric(runs, y)
    if frame.empty:
        raise NotSupported(f"no finite {y} in the traces of the runs on {target}")
    if settings.x not in frame.columns:
        raise NotSupported(f"the traces have no column {settings.x}")
    fig = new_figure()
    ax = fig.add_subplot()
    counts = curves(ax, frame, y, key, settings, log_x, palette)
    if y == "kl":
        validity.draw_kl_floor(ax, frame, runs, settings.x, key, palette, colour)
    ax.set_xlabel(settings.x_label)
    ax.set_ylabel(ylabel)
    ax.set_title(target)
    return fig, counts


# ---------------------------------------------------------------------------- figures
def figure_step_size(results: Results, settings: Settings, cycles: int = 10):
    """Fig. 1: ν_t over cKAM's first ``cycles`` cycles and KAM's over the same iterations."""
    with_ckam = [t for t in ("bimodal", *results.targets)
                 if any(r.has_diagnostics for r in results.select(target=t, sampler="ckam"))]
    if not with_ckam:
        raise NotSupported("no cKAM run with diagnostics")
    target = with_ckam[0]
    ckam_runs = [r for r in results.select(target=target, sampler="ckam") if r.has_diagnostics]
    kernel = _preferred_kernel(ckam_runs)
    ckam_runs = [r for r in ckam_runs if r.kernel == kernel]
    kam_runs = [r for r in results.select(target=target, sampler="kam", kernel=kernel)
                if r.has_diagnostics]
    seeds = sorted({r.seed for r in ckam_runs} & {r.seed for r in kam_runs}) or sorted(
        r.seed for r in ckam_runs)
    seed = seeds[0]
    ckam = max((r for r in ckam_runs if r.seed == seed),
               key=lambda r: float(r.trace["iterations"].iloc[-1]))
    length = _cycle_length(ckam)
    horizon = cycles * length
    fig = new_figure(7.0, 3.8)
    ax = fig.add_subplot()
    shown, last = [], 0
    for run in [ckam, *[r for r in kam_runs if r.seed == seed][:1]]:
        diag = run.diagnostics()
        diag = diag[diag["iteration"] < horizon]
        if diag.empty:
            continue
        ax.plot(diag["iteration"], diag["step_size"], color=run_colour(results, run), lw=0.9,
                label=run.sampler)
        shown.append(run.sampler)
        last = max(last, int(diag["iteration"].max()) + 1)
    if "ckam" not in shown:
        raise NotSupported(f"the cKAM diagnostics on {target} hold no iterations")
    cycles = min(cycles, math.ceil(last / length))
    horizon = min(horizon, last)
    for k in range(1, cycles):
        ax.axvline(k * length, color="0.8", lw=0.6, zorder=0)
    ax.set_xlim(0, horizon)
    ax.set_xlabel("iteration")
    ax.set_ylabel("step size ν")
    ax.set_title(f"{target}, seed {seed}, kernel {kernel}")
    ax.legend(fontsize="small", frameon=False)
    missing = "" if "kam" in shown else " (no KAM run with the same seed and kernel)"
    caption = (f"Step size ν_t over the first {cycles} cycles of cKAM (cycle length {length}; "
               f"grey lines mark cycle starts) and KAM's step size over the same {horizon} "
               f"iterations{missing}; {target}, seed {seed}, {kernel} kernel.")
    return fig, caption


def _cycle_length(run: StoredRun) -> int:
    """The cycle length from the run's config, else 1000 (cKAM's 2-D setting)."""
    cycle = ((run.config or {}).get("sampler") or {}).get("cycle")
    if isinstance(cycle, dict) and isinstance(cycle.get("cycle_length"), (int, float)):
        return int(cycle["cycle_length"])
    return 1000


def figure_density(results: Results, settings: Settings, target: str, resolution: int = 300):
    """Figs. 2/5: the density of a 2-D target on its box."""
    tgt = built_target(_target_runs(results, target))
    if tgt.dim != 2:
        raise NotSupported(f"target {target} has dimension {tgt.dim}, not 2")
    (x_lo, x_hi), (y_lo, y_hi) = _box(tgt, 0), _box(tgt, 1)
    xs, ys = np.linspace(x_lo, x_hi, resolution), np.linspace(y_lo, y_hi, resolution)
    gx, gy = np.meshgrid(xs, ys)
    logp = tgt._log_density_batch(np.column_stack([gx.ravel(), gy.ravel()]))
    density = np.exp(logp - np.max(logp)).reshape(gx.shape)
    fig = new_figure(7.0, 5.6 * (y_hi - y_lo) / (x_hi - x_lo) + 0.9)
    ax = fig.add_subplot()
    image = ax.imshow(density, origin="lower", extent=(x_lo, x_hi, y_lo, y_hi), cmap="viridis",
                      interpolation="nearest")
    fig.colorbar(image, ax=ax, label="density / max density", shrink=0.9)
    ax.set_xlabel("x0")
    ax.set_ylabel("x1")
    ax.set_title(target)
    caption = (f"Density of the {target} target on its box [{x_lo:g}, {x_hi:g}] × "
               f"[{y_lo:g}, {y_hi:g}] (relative to its maximum), rebuilt from a stored config.")
    return fig, caption


def figure_gmm32_dims(results: Results, settings: Settings, target: str = "gmm32",
                      dims: tuple[int, int] = (2, 7), resolution: int = 300):
    """Fig. 8: joint density of two coordinates (1-based ``dims``) and their marginals."""
    tgt = built_target(_target_runs(results, target))
    if tgt.dim < max(dims):
        raise NotSupported(f"target {target} has dimension {tgt.dim} < {max(dims)}")
    if not tgt.has_marginals:
        raise NotSupported(f"target {target} has no exact marginals")
    j, k = (d - 1 for d in dims)
    (a_lo, a_hi), (b_lo, b_hi) = _box(tgt, j), _box(tgt, k)
    xs, ys = np.linspace(a_lo, a_hi, resolution), np.linspace(b_lo, b_hi, resolution)
    px, py = np.exp(tgt.marginal_logpdf(j, xs)), np.exp(tgt.marginal_logpdf(k, ys))
    fig = new_figure(12.0, 4.0)
    ax_joint, ax_a, ax_b = fig.subplots(1, 3, width_ratios=(1.2, 1, 1))
    ax_joint.imshow(np.outer(py, px), origin="lower", extent=(a_lo, a_hi, b_lo, b_hi),
                    cmap="viridis", interpolation="nearest")
    ax_joint.set_xlabel(f"dimension {dims[0]}")
    ax_joint.set_ylabel(f"dimension {dims[1]}")
    ax_joint.set_title("joint marginal density")
    for ax, grid, p, d in ((ax_a, xs, px, dims[0]), (ax_b, ys, py, dims[1])):
        ax.plot(grid, p, color="black", lw=1.2)
        ax.fill_between(grid, p, color="0.85")
        ax.set_xlabel(f"dimension {d}")
        ax.set_ylabel("density")
        ax.set_title(f"marginal of dimension {d}")
    caption = (f"Dimensions {dims[0]} and {dims[1]} (1-based; columns x{j}, x{k}) of the "
               f"{tgt.dim}-D {target} target: their joint marginal density (the coordinates are "
               f"independent, so it is the product of the exact 1-D marginals) and each "
               f"marginal, rebuilt from a stored config.")
    return fig, caption


def figure_kl_all(results: Results, settings: Settings, target: str):
    """Figs. 3/6/9: KL against the x-axis for every sampler on ``target``."""
    by_sampler = comparison_runs(results, target)
    fig, counts = _metric_vs_x(target, "kl", "symmetric KL", settings, by_sampler,
                               "sampler", comparison_colours(results, target))
    caption = (f"Symmetric KL divergence against {settings.x_label} on {target}, every sampler: "
               f"median over seeds and {settings.band_text} band (log x-axis)."
               + _comparison_note(results, target, "Runs", counts, by_sampler))
    return fig, caption


def figure_kl_long_ckam(results: Results, settings: Settings, target: str):
    """Figs. 4/7: KL of the cKAM runs with the largest budget on ``target`` (linear x)."""
    groups = [g for g in results.groups(target) if g.sampler == "ckam"]
    if not groups:
        raise NotSupported(f"no cKAM runs on {target}")
    kernel = _preferred_kernel([r for g in groups for r in g.runs])
    groups = [g for g in groups if g.kernel == kernel]
    longest = max(g.budget_seconds for g in groups)
    group = max((g for g in groups if g.budget_seconds >= 0.99 * longest),
                key=lambda g: len(g.runs))
    runs = group.runs
    fig, counts = _metric_vs_x(target, "kl", "symmetric KL", settings,
                               {"ckam": runs}, "sampler",
                               {"ckam": label_colour(results, group.label)}, log_x=False)
    caption = (f"Symmetric KL divergence of the longest cKAM runs on {target} (budget "
               f"{longest:g} s of sampler time, {counts.get('ckam', 0)} seeds) against "
               f"{settings.x_label}: median and {settings.band_text} band."
               + left_out(results, target, [group]))
    return fig, caption


def figure_ess(results: Results, settings: Settings, target: str = "bimodal"):
    """Fig. 11: ESS (min over coordinates; median when no min is stored) against the x-axis."""
    by_sampler = comparison_runs(results, target)
    runs = [r for group in by_sampler.values() for r in group]
    y = "ess_min" if not _with_metric(runs, "ess_min").empty else "ess_median"
    name = "minimum" if y == "ess_min" else "median"
    fig, counts = _metric_vs_x(target, y, f"ESS ({name} over coordinates)", settings,
                               by_sampler, "sampler", comparison_colours(results, target))
    caption = (f"Effective sample size ({name} over coordinates, bulk ESS) against "
               f"{settings.x_label} on {target}: median over seeds and {settings.band_text} "
               f"band." + _comparison_note(results, target, "Runs", counts, by_sampler))
    return fig, caption


def figure_kernels(results: Results, settings: Settings, target: str = "bimodal"):
    """Fig. 13: cKAM's KL against the x-axis with each kernel."""
    groups = [g for g in results.groups(target) if g.sampler == "ckam"]
    budget = _modal_budget([r for g in groups for r in g.runs]) if groups else None
    kernel_groups: dict[str, Group] = {}
    for kernel in sorted({g.kernel for g in groups}):
        mine = [g for g in groups if g.kernel == kernel]
        mine = [g for g in mine if g.budget_seconds == budget] or mine
        kernel_groups[kernel] = max(mine, key=lambda g: len(g.runs))
    by_kernel = {k: g.runs for k, g in kernel_groups.items()}
    if len(by_kernel) < 2:
        found = ", ".join(sorted(by_kernel)) or "none"
        raise NotSupported(f"needs cKAM runs on {target} with at least two kernels "
                           f"(found: {found})")
    fig, counts = _metric_vs_x(target, "kl", "symmetric KL", settings, by_kernel,
                               "kernel", KERNEL_COLOURS)
    caption = (f"Symmetric KL divergence of cKAM on {target} with each kernel against "
               f"{settings.x_label}: median over seeds and {settings.band_text} band. "
               f"Runs per kernel: {_seed_text(counts, by_kernel)}."
               + left_out(results, target, list(kernel_groups.values())))
    return fig, caption


def _stored_samples(results: Results, target: str):
    """The comparison runs of ``target`` by sampler, and their non-empty stored samples."""
    by_sampler = comparison_runs(results, target)
    samples = {name: [s for s in map(StoredRun.sample_array, runs) if s is not None and len(s)]
               for name, runs in by_sampler.items()}
    samples = {k: v for k, v in samples.items() if v}
    if not samples:
        raise NotSupported(f"no stored samples on {target}")
    return by_sampler, samples


def figure_marginal(results: Results, settings: Settings, target: str, j: int = 0,
                    bins: int = 80):
    """Figs. 10/14: histogram of coordinate ``j`` per sampler against the exact marginal."""
    by_sampler, samples = _stored_samples(results, target)
    tgt = _try_target(by_sampler)
    lo, hi = _box(tgt, j, [s for group in samples.values() for s in group])
    edges = np.linspace(lo, hi, bins + 1)
    width = np.diff(edges)
    xs = np.linspace(lo, hi, 600)
    exact = np.exp(tgt.marginal_logpdf(j, xs)) if tgt is not None and tgt.has_marginals else None
    fig, axes = panels(len(samples), sharey=True)
    q_lo, q_hi = settings.band
    palette = comparison_colours(results, target)
    for ax, (name, runs) in zip(axes, samples.items()):
        dens = np.array([np.histogram(s[:, j], edges)[0] / (len(s) * width) for s in runs])
        med, band_lo, band_hi = np.percentile(dens, [50.0, q_lo, q_hi], axis=0)
        c = colour(name, palette)
        if len(runs) > 1:
            ax.fill_between(edges, np.append(band_lo, band_lo[-1]),
                            np.append(band_hi, band_hi[-1]), step="post", color=c, alpha=0.25,
                            lw=0)
        ax.stairs(med, edges, color=c, lw=1.2, label=f"{name} (n={len(runs)})")
        if exact is not None:
            ax.plot(xs, exact, color="black", lw=1.0, label="exact")
        ax.set_title(name)
        ax.set_xlabel(f"x{j}")
        ax.legend(fontsize="x-small", frameon=False)
    axes[0].set_ylabel("density")
    truth = "the exact marginal (black)" if exact is not None else "no exact marginal available"
    caption = (f"Marginal of coordinate x{j} on {target}: each sampler's sample histogram "
               f"({bins} bins on [{lo:g}, {hi:g}]; median over seeds, {settings.band_text} "
               f"band) against {truth}."
               + _comparison_note(results, target, "Seeds",
                                  {k: len(v) for k, v in samples.items()}, by_sampler))
    return fig, caption


def figure_density_per_sampler(results: Results, settings: Settings, target: str = "bimodal",
                               bins: int = 100):
    """Fig. 12: 2-D histogram of the collected samples, one panel per sampler."""
    by_sampler, samples = _stored_samples(results, target)
    dims = {s.shape[1] for group in samples.values() for s in group}
    if dims != {2}:
        raise NotSupported(f"samples on {target} are not 2-D (dimension {sorted(dims)})")
    tgt = _try_target(by_sampler)
    pooled = [s for group in samples.values() for s in group]
    (x_lo, x_hi), (y_lo, y_hi) = _box(tgt, 0, pooled), _box(tgt, 1, pooled)
    ex, ey = np.linspace(x_lo, x_hi, bins + 1), np.linspace(y_lo, y_hi, bins + 1)
    contour = None
    if tgt is not None:
        mx, my = 0.5 * (ex[1:] + ex[:-1]), 0.5 * (ey[1:] + ey[:-1])
        gx, gy = np.meshgrid(mx, my)
        logp = tgt._log_density_batch(np.column_stack([gx.ravel(), gy.ravel()]))
        contour = (mx, my, np.exp(logp - logp.max()).reshape(gx.shape))
    fig, axes = panels(len(samples), width=3.6, height=2.9, sharey=True)
    area = np.diff(ex)[:, None] * np.diff(ey)[None, :]
    for ax, (name, runs) in zip(axes, samples.items()):
        dens = np.mean([np.histogram2d(s[:, 0], s[:, 1], [ex, ey])[0] / (len(s) * area)
                        for s in runs], axis=0)
        ax.imshow(dens.T, origin="lower", extent=(x_lo, x_hi, y_lo, y_hi), cmap="magma",
                  interpolation="nearest", aspect="auto")
        if contour is not None:
            ax.contour(*contour, levels=[0.01, 0.1, 0.5], colors="white", linewidths=0.5,
                       alpha=0.7)
        ax.set_title(f"{name} (n={len(runs)})")
        ax.set_xlabel("x0")
    axes[0].set_ylabel("x1")
    truth = (" White contours: the target density at 1 %, 10 % and 50 % of its maximum."
             if contour is not None else "")
    caption = (f"Density (2-D histogram, {bins} × {bins} bins, mean over seeds of each seed's "
               f"normalised histogram) of the samples collected by each sampler on {target}."
               f"{truth}"
               + _comparison_note(results, target, "Seeds",
                                  {k: len(v) for k, v in samples.items()}, by_sampler))
    return fig, caption


def _try_target(by_sampler: dict[str, list[StoredRun]]):
    """The rebuilt target, or None when no stored config builds it."""
    try:
        return built_target([r for runs in by_sampler.values() for r in runs])
    except NotSupported:
        return None


# ---------------------------------------------------------------------------- registry
SECTION = sections.PAPERS["ckam"].section
@dataclass(frozen=True)
class FigureSpec:
    """A paper figure: its number, file stem and drawing function (with fixed arguments)."""

    number: int
    stem: str
    draw: Callable[..., tuple[Figure, str]]
    kwargs: tuple = ()

    def __call__(self, results: Results, settings: Settings):
        return self.draw(results, settings, **dict(self.kwargs))


FIGURES = {
    spec.number: spec for spec in (
        FigureSpec(1, "fig01_step_size", figure_step_size),
        FigureSpec(2, "fig02_density_bimodal", figure_density, (("target", "bimodal"),)),
        FigureSpec(3, "fig03_kl_bimodal", figure_kl_all, (("target", "bimodal"),)),
        FigureSpec(4, "fig04_kl_ckam_long_bimodal", figure_kl_long_ckam,
                   (("target", "bimodal"),)),
        FigureSpec(5, "fig05_density_gmm2d", figure_density, (("target", "gmm2d"),)),
        FigureSpec(6, "fig06_kl_gmm2d", figure_kl_all, (("target", "gmm2d"),)),
        FigureSpec(7, "fig07_kl_ckam_long_gmm2d", figure_kl_long_ckam, (("target", "gmm2d"),)),
        FigureSpec(8, "fig08_dims_gmm32", figure_gmm32_dims, (("target", "gmm32"),)),
        FigureSpec(9, "fig09_kl_gmm32", figure_kl_all, (("target", "gmm32"),)),
        FigureSpec(10, "fig10_marginal_bimodal", figure_marginal, (("target", "bimodal"),)),
        FigureSpec(11, "fig11_ess_bimodal", figure_ess, (("target", "bimodal"),)),
        FigureSpec(12, "fig12_samples_bimodal", figure_density_per_sampler,
                   (("target", "bimodal"),)),
        FigureSpec(13, "fig13_kernels_bimodal", figure_kernels, (("target", "bimodal"),)),
        FigureSpec(14, "fig14_marginal_gmm2d", figure_marginal, (("target", "gmm2d"),)),
    )
}


def render(number: int, results: Results, out_dir: str | Path, settings: Settings = Settings(),
           formats: tuple[str, ...] = ("png", "pdf")) -> Rendered:
    """Draw figure ``number`` and save it as ``OUT_DIR/<stem>.<format>`` for each format.

    Raises :class:`NotSupported` when the runs cannot support the figure.
    """
    spec = FIGURES[number]
    fig, caption = spec(results, settings)
    saved = Drawn(spec.stem, fig, caption, SECTION, f"Figure {number}").save(out_dir, formats)
    return Rendered(number, saved.paths, caption, saved.section, saved.title)


def supported(results: Results) -> list[int]:
    """The figures worth drawing for ``results``: none unless the paper is in the runs
    (:data:`ckam_bench.report.sections.PAPERS`: a cKAM-paper sampler on one of its targets, or
    one of its presets), then every figure on a target with such a run (Fig. 1 on any)."""
    paper = sections.PAPERS["ckam"]
    targets = set(paper.targets_used(results))
    return [n for n, spec in sorted(FIGURES.items())
            if targets and dict(spec.kwargs).get("target", next(iter(targets))) in targets]
