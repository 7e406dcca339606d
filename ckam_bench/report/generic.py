"""Figures for any target, built-in or a user's own, from stored runs only.

Every function here is called as ``f(results, settings, target) -> list[Drawn]`` (registry
:data:`GENERIC`) and raises :class:`~ckam_bench.report.drawing.NotSupported` with a one-line
reason when the runs cannot support it. Curves and histograms are drawn per configuration
group (:func:`ckam_bench.report.aggregate.group_runs`: full configuration, each seed once), so
a legend never merges budgets, presets or hyperparameters; every caption lists the groups with
their seed counts and what was kept apart or left out.

* :func:`metric_figures` — the numeric metric columns of the traces, titled in words
  (:mod:`ckam_bench.report.words`). Each *accuracy* column (b², KL, ESS and its rates, moment
  errors, MMD, MCSE; b², KL and ESS first) gets a figure against what it cost: sampler
  seconds, density evaluations and gradient evaluations, one panel per axis with data (a
  panel with nothing to draw, e.g. gradient evaluations when no sampler uses gradients, is
  left out, and the caption names a group absent from a panel). The *diagnostic* columns
  (acceptance, step size, iterations per second, a sampler's own columns, …) share one figure,
  one panel each against iterations, with one legend. Median over seeds and a band; b² gets
  the 0.01 accuracy line, MMD² the noise band of exact draws (:mod:`~ckam_bench.report.mmd_band`). Sections: "Accuracy against cost" and "Diagnostics"
  (:mod:`ckam_bench.report.sections`).
* :func:`marginal_figures` — a histogram of every coordinate per group (median over seeds of
  each seed's normalised histogram), against the truth the target offers: its exact marginal
  density, else a histogram of 20 000 exact draws, else its reference sample
  (:func:`ckam_bench.checks.reference.load_reference`), else none. 16 coordinates per figure.
* :func:`pair_figures` — 2-D projections of the stored samples, one row per group and one
  column per pair of coordinates (all pairs up to 4 coordinates; in higher dimension 4 chosen
  coordinates: the first, the last and two evenly between), over the target's density (2-D
  targets) or a histogram of exact draws or the reference sample.
* :func:`diagnostics_figure` — per group (its lowest seed), over iterations: step size, the
  acceptance rate in a moving window of recorded iterations (every iteration of a run's head,
  evenly thinned after it), the phase, and log π of the chain's state when the sampler records
  it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import combinations

import numpy as np
import pandas as pd
from matplotlib.ticker import NullLocator

from ckam_bench.report import mmd_band, sections, words
from ckam_bench.report.aggregate import Group, Results, grouping_notes
from ckam_bench.report.drawing import (
    Curves,
    Drawn,
    NotSupported,
    Settings,
    built_target,
    curve_data,
    draw_curves,
    label_colour,
    new_figure,
    panels,
    sampler_colours,
)

X_AXES = ("sampler_seconds", "iterations", "n_density", "n_grad")
COST_AXES = ("sampler_seconds", "n_density", "n_grad")
"""What an accuracy column is drawn against: what it cost."""
DIAGNOSTIC_AXIS = "iterations"
NOT_METRICS = {"checkpoint", "seed", "sampler_seconds", "sampler_wall_seconds",
               "sampler_cpu_seconds", "wall_seconds", "eval_seconds", "iterations",
               "n_collected", "n_density", "n_grad"}
THRESHOLD = 0.01
PER_FIGURE = 16
MAX_GROUPS = 8
EXACT_DRAWS = 20_000


def _stem(target: str, name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{target}_{name}")


def _groups(results: Results, target: str) -> list[Group]:
    groups = results.groups(target)
    if not groups:
        raise NotSupported(f"no runs on target {target}")
    return groups


def _group_text(groups: list[Group]) -> str:
    return "; ".join(f"{g.label} ({len(g.runs)} seed{'s' * (len(g.runs) != 1)})"
                     for g in groups)


def _notes(results: Results, target: str, groups: list[Group], shown: list[Group]) -> str:
    notes = grouping_notes(shown, results.skipped_on(target))
    hidden = [g.label for g in groups if g not in shown]
    if hidden:
        notes.append(f"not shown (more than {MAX_GROUPS} groups): {', '.join(hidden)}")
    return "".join(f" Note: {n}." for n in notes)


def metric_columns(frame: pd.DataFrame) -> list[str]:
    """Numeric trace columns with a finite value that are not labels, clocks or counters
    (all-zero counters such as ``n_jitter`` are left out)."""
    out = []
    for col in frame.columns:
        if col in NOT_METRICS or not pd.api.types.is_numeric_dtype(frame[col]) \
                or pd.api.types.is_bool_dtype(frame[col]):
            continue
        values = frame[col].to_numpy(float)
        finite = values[np.isfinite(values)]
        if finite.size and not (col.startswith("n_") and not finite.any()):
            out.append(col)
    return out


def x_axes(frame: pd.DataFrame, axes=X_AXES) -> list[str]:
    """The x axes of ``axes`` the traces support (a column with a positive value)."""
    return [x for x in axes if x in frame.columns
            and (pd.to_numeric(frame[x], errors="coerce") > 0).any()]


def _panel(frame: pd.DataFrame, col: str, settings: Settings, x: str) -> Curves | None:
    """What a panel of ``col`` against ``x`` would draw, or None when it would be empty."""
    if not x_axes(frame, (x,)):
        return None
    try:
        data = curve_data(frame, col, "group", replace(settings, x=x), True)
    except NotSupported:
        return None
    return data if data.parts else None


def _capital(text: str) -> str:
    """``text`` with a capital first letter, unless its first word is a symbol (b², ‖x‖)."""
    first = text.split(" ")[0].rstrip(",")
    return text[0].upper() + text[1:] if first.isascii() and text[:1].isalpha() else text


def _plain(ax) -> None:
    ax.xaxis.set_minor_locator(NullLocator())  # log minor ticks: most of the drawing
    ax.yaxis.set_minor_locator(NullLocator())  # time, little information


def _accuracy_figure(results: Results, settings: Settings, target: str, groups: list[Group],
                     frame: pd.DataFrame, col: str, palette: dict) -> Drawn | None:
    """``col`` against each cost axis with data (one panel each), or None."""
    cells = [(x, data) for x in COST_AXES if (data := _panel(frame, col, settings, x))]
    if not cells:
        return None
    words_ = words.metric(col)
    fig, axes = panels(len(cells), ncols=len(cells), width=3.6, height=3.0, sharex=False,
                       sharey=True)
    fullest = max(range(len(cells)), key=lambda i: len(cells[i][1].parts))
    valued = set(frame.loc[np.isfinite(pd.to_numeric(frame[col], errors="coerce")), "group"])
    never = [g.label for g in groups if g.label not in valued]
    missing = [f"{', '.join(never)}: no {words_.axis} in the traces"] if never else []
    band, no_band = (mmd_band.noise_band([r for g in groups for r in g.runs], col)
                     if mmd_band.is_mmd_column(col) else (None, ""))
    for i, (ax, (x, data)) in enumerate(zip(axes, cells)):
        draw_curves(ax, data, True, palette, legend=i == fullest)
        if col == "bias2":
            ax.axhline(THRESHOLD, color="black", lw=0.8, ls="--")
        if band is not None:
            _draw_band(ax, band)
        _plain(ax)
        label = replace(settings, x=x).x_label
        ax.set_xlabel(label)
        absent = [g.label for g in groups if g.label in valued and g.label not in data.parts]
        if absent:
            missing.append(f"{', '.join(absent)} against {label}: " + (
                f"no {label}" if x == "n_grad" else "too few runs with a value"))
    axes[0].set_ylabel(words_.axis)
    fig.suptitle(f"{_capital(words_.title)} on {target}")
    used = [replace(settings, x=x).x_label for x, _ in cells]
    extra = " The dashed line is the accuracy threshold b² = 0.01." if col == "bias2" else ""
    if band is not None:
        extra = (f" The grey band is the noise band, MMD² from {band.lo:.2g} to {band.hi:.2g}: "
                 f"{band.describe()}; a curve inside it "
                 f"cannot be told apart from {band.n} exact draws by MMD², an autocorrelated "
                 "chain sits above it until its points are nearly independent.")
    elif no_band:
        extra = f" No noise band: {no_band}."
    absent = f" Not drawn: {'; '.join(missing)}." if missing else ""
    caption = (f"Against {', '.join(used)}: median over "
               f"seeds and {settings.band_text} band per configuration group (drawn where at "
               f"least half of a group's runs have a value).{extra}{absent} Groups: "
               f"{_group_text(groups)}." + _notes(results, target, groups, groups))
    return Drawn(_stem(target, f"metric_{col}"), fig, caption, sections.ACCURACY,
                 f"{target}: {words_.title}")


def _draw_band(ax, band) -> None:
    """The MMD² noise band as a grey horizontal span behind the curves (on a log axis, from
    the axis' bottom when the band reaches 0 or below)."""
    lo = band.lo
    if ax.get_yscale() == "log" and lo <= 0:
        lo = min(ax.get_ylim()[0], band.hi / 10) if band.hi > 0 else None
    if lo is not None:
        ax.axhspan(lo, band.hi, color="0.75", alpha=0.5, lw=0, zorder=0)


def _diagnostic_figure(results: Results, settings: Settings, target: str,
                       groups: list[Group], frame: pd.DataFrame, columns: list[str],
                       palette: dict) -> Drawn | None:
    """Every diagnostic column against iterations, one panel each, or None."""
    cells = [(col, data) for col in columns
             if (data := _panel(frame, col, settings, DIAGNOSTIC_AXIS))]
    if not cells:
        return None
    ncols = min(4, len(cells))
    fig, axes = panels(len(cells), ncols=ncols, width=3.2, height=2.5, sharex=True)
    for ax, (col, data) in zip(axes, cells):
        draw_curves(ax, data, True, palette, legend=False)
        _plain(ax)
        ax.set_title(words.title(col), fontsize="small")
        ax.set_ylabel(words.metric(col).axis, fontsize="small")
    for ax in axes[-ncols:]:  # the lowest panel of each column
        ax.set_xlabel("iterations")
        ax.tick_params(labelbottom=True)
    handles = {}
    for ax in axes:
        for line in ax.get_lines():
            handles.setdefault(line.get_label(), line)
    # the legend under the figure's title, above the panels (a suptitle and a legend above
    # the panels would overlap): the title is the legend's
    fig.legend(list(handles.values()), list(handles), loc="outside upper center",
               ncols=min(4, len(handles)), fontsize="small", frameon=False,
               title=f"Sampler diagnostics on {target}", title_fontsize="large")
    caption = (f"Against iterations, one panel each: "
               f"{'; '.join(words.title(c) for c, _ in cells)}. Median over seeds and "
               f"{settings.band_text} band per configuration group (drawn where at least half "
               f"of a group's runs have a value). Groups: {_group_text(groups)}."
               + _notes(results, target, groups, groups))
    return Drawn(_stem(target, "metric_diagnostics"), fig, caption, sections.DIAGNOSTICS,
                 f"{target}: sampler diagnostics")


def metric_figures(results: Results, settings: Settings, target: str) -> list[Drawn]:
    """The accuracy columns against cost, one figure each (b², KL, ESS first), then one
    figure of every diagnostic column against iterations (see the module docstring)."""
    groups = _groups(results, target)
    frame = pd.concat([g.trace() for g in groups], ignore_index=True)
    if not x_axes(frame):
        raise NotSupported(f"the traces on {target} have no positive x-axis values")
    palette = sampler_colours(results)
    columns = words.order(metric_columns(frame))
    accuracy = [c for c in columns if words.metric(c).kind == words.ACCURACY]
    drawn = [_accuracy_figure(results, settings, target, groups, frame, col, palette)
             for col in accuracy]
    drawn.append(_diagnostic_figure(results, settings, target, groups, frame,
                                    [c for c in columns if c not in accuracy], palette))
    drawn = [d for d in drawn if d is not None]
    if not drawn:
        raise NotSupported(f"no metric column with finite values on {target}")
    return drawn


def _target(groups: list[Group]):
    try:
        return built_target([r for g in groups for r in g.runs])
    except NotSupported:
        return None


def _reference(tgt):
    """The target's reference sample (n, d), or None."""
    try:
        from ckam_bench.reference_lookup import load_reference
    except ImportError:
        return None
    try:
        ref = load_reference(tgt)
    except Exception:  # a damaged or foreign reference file must not stop the figure
        return None
    return None if ref is None else np.asarray(ref.samples, float)


def truth(tgt) -> tuple[str, np.ndarray | None]:
    """What the target offers to compare samples with: ("marginal", None) for exact
    marginals, ("exact draws", draws), ("reference sample", samples) or ("none", None)."""
    if tgt is None:
        return "none", None
    draws = None
    if tgt.has_exact_sampler:
        draws = tgt.sample(EXACT_DRAWS, np.random.default_rng(0))
    if tgt.has_marginals:
        return "marginal", draws
    if draws is not None:
        return "exact draws", draws
    ref = _reference(tgt)
    return ("reference sample", ref) if ref is not None else ("none", None)


def _group_samples(groups: list[Group], columns: list[str] | None = None
                   ) -> dict[str, list[np.ndarray]]:
    """Per group label, each seed's stored sample (n, d): the coordinates x0 … x{d-1}, or
    ``columns`` (the model's named variables) when given."""
    out = {}
    for g in groups:
        if columns:
            frames = [r.samples() for r in g.runs if r.has_samples]
            runs = [f[columns].to_numpy(float) for f in frames
                    if f is not None and len(f) and set(columns) <= set(f.columns)]
        else:
            runs = [s for s in (r.sample_array() for r in g.runs if r.has_samples)
                    if s is not None and len(s)]
        if runs:
            out[g.label] = runs
    return out


def model_columns(groups: list[Group]) -> list[str]:
    """The model's variables stored next to x0 … (a PyMC target: on the constrained scale,
    under the model's names, :func:`ckam_bench.interop.named_variables`), in the stored order;
    [] for a target without them."""
    from ckam_bench.interop import named_variables

    for g in groups:
        for run in g.runs:
            frame = run.samples() if run.has_samples else None
            if frame is not None and len(frame.columns):
                return [c for _, (_, cols) in named_variables(frame.head(1)).items() for c in cols]
    return []


def _named_truth(groups: list[Group], columns: list[str]) -> tuple[str, np.ndarray | None]:
    """The reference draws of the model's named variables, a column of NaN for a variable
    without one: ("reference sample", draws) or ("none", None)."""
    from ckam_bench.report.posterior import reference_draws

    draws = reference_draws(groups[0])
    if not any(c in draws for c in columns):
        return "none", None
    n = min(len(v) for v in draws.values())
    return "reference sample", np.column_stack([np.asarray(draws[c], float)[:n] if c in draws
                                                else np.full(n, np.nan) for c in columns])


def _range(tgt, j: int, arrays: list[np.ndarray]) -> tuple[float, float]:
    if tgt is not None and tgt.box is not None:
        lo, hi = tgt.box[j]
        return float(lo), float(hi)
    column = np.concatenate([a[:, j] for a in arrays])
    lo, hi = (float(v) for v in np.percentile(column[np.isfinite(column)], [0.5, 99.5]))
    return (lo, hi) if hi > lo else (lo - 0.5, lo + 0.5)


def marginal_figures(results: Results, settings: Settings, target: str,
                     bins: int = 60) -> list[Drawn]:
    """Histogram of every coordinate per group against the target's truth."""
    groups = _groups(results, target)
    columns = model_columns(groups[:MAX_GROUPS])
    samples = _group_samples(groups[:MAX_GROUPS], columns)
    if not samples:
        raise NotSupported(f"no stored samples on {target}")
    dim = next(iter(samples.values()))[0].shape[1]
    names = columns or [f"x{j}" for j in range(dim)]
    if columns:  # the model's variables: nothing to rebuild, the reference if there is one
        tgt = None
        kind, draws = _named_truth(groups, columns)
    else:
        tgt = _target(groups)
        kind, draws = truth(tgt)
    shown = [g for g in groups[:MAX_GROUPS] if g.label in samples]
    palette = sampler_colours(results)
    q_lo, q_hi = settings.band
    drawn = []
    for start in range(0, dim, PER_FIGURE):
        coords = list(range(start, min(dim, start + PER_FIGURE)))
        fig, axes = panels(len(coords), ncols=4, width=3.2, height=2.5, sharex=False)
        for ax, j in zip(axes, coords):
            pooled = [s for runs in samples.values() for s in runs]
            lo, hi = _range(tgt, j, pooled + ([draws] if draws is not None else []))
            edges = np.linspace(lo, hi, bins + 1)
            width = np.diff(edges)
            if kind == "marginal":
                xs = np.linspace(lo, hi, 400)
                ax.plot(xs, np.exp(tgt.marginal_logpdf(j, xs)), color="black", lw=1.0,
                        label="exact")
            elif draws is not None and np.isfinite(draws[:, j]).any():
                column = draws[np.isfinite(draws[:, j]), j]
                ref = np.histogram(column, edges)[0] / (len(column) * width)
                ax.stairs(ref, edges, color="0.6", fill=True, alpha=0.5, label=kind)
            for label, runs in samples.items():
                dens = np.array([np.histogram(s[:, j], edges)[0] / (len(s) * width)
                                 for s in runs])
                med, b_lo, b_hi = np.percentile(dens, [50.0, q_lo, q_hi], axis=0)
                c = palette[label]
                if len(runs) > 1:
                    ax.fill_between(edges, np.append(b_lo, b_lo[-1]), np.append(b_hi, b_hi[-1]),
                                    step="post", color=c, alpha=0.15, lw=0)
                ax.stairs(med, edges, color=c, lw=1.1, label=f"{label} (n={len(runs)})")
            ax.set_xlabel(names[j])
        axes[0].set_ylabel("density")
        axes[0].legend(fontsize="x-small", frameon=False)
        truth_text = {"marginal": "the exact marginal density (black)",
                      "exact draws": f"a histogram of {EXACT_DRAWS:,} exact draws (grey)",
                      "reference sample": "a histogram of the reference sample (grey)",
                      "none": "no truth (the target has no exact marginals, exact draws or "
                              "reference sample)"}[kind]
        what = (f"the model's variables {names[coords[0]]}–{names[coords[-1]]} (constrained "
                "scale, the model's names) on" if columns else
                f"coordinates x{coords[0]}–x{coords[-1]} of the {dim}-D")
        if columns and kind == "reference sample":
            truth_text = "a histogram of posteriordb's reference draws (grey; none for a deterministic)"
        caption = (f"Marginals of {what} {target} "
                   f"target: each group's sample histogram ({bins} bins; median over seeds of "
                   f"each seed's normalised histogram, {settings.band_text} band) against "
                   f"{truth_text}. Groups: {_group_text(shown)}."
                   + _notes(results, target, groups, shown))
        part = f"_{start // PER_FIGURE + 1}" if dim > PER_FIGURE else ""
        drawn.append(Drawn(_stem(target, f"marginals{part}"), fig, caption, sections.SAMPLES,
                           f"{target}: marginals {names[coords[0]]}–{names[coords[-1]]}"))
    return drawn


def chosen_coordinates(dim: int, k: int = 4) -> list[int]:
    """All coordinates up to ``k``; else the first, the last and evenly spaced ones between."""
    if dim <= k:
        return list(range(dim))
    return sorted({int(round(v)) for v in np.linspace(0, dim - 1, k)})


def pair_figures(results: Results, settings: Settings, target: str,
                 points: int = 3000, resolution: int = 120) -> list[Drawn]:
    """2-D projections of the samples per group over the target's density or its draws."""
    groups = _groups(results, target)
    columns = model_columns(groups[:MAX_GROUPS])
    samples = _group_samples(groups[:MAX_GROUPS], columns)
    if not samples:
        raise NotSupported(f"no stored samples on {target}")
    dim = next(iter(samples.values()))[0].shape[1]
    if dim < 2:
        raise NotSupported(f"target {target} is 1-D: no pairs")
    names = columns or [f"x{j}" for j in range(dim)]
    if columns:  # the model's variables: its scalars first (mu, tau), then chosen elements
        scalars = [j for j, c in enumerate(columns) if "[" not in c][:4]
        rest = [j for j in range(dim) if j not in scalars]
        extra = [rest[i] for i in chosen_coordinates(len(rest), 4 - len(scalars))] if rest and len(scalars) < 4 else []
        coords = sorted(scalars + extra)
        tgt = None
        kind, draws = _named_truth(groups, columns)
    else:
        coords = chosen_coordinates(dim)
        tgt = _target(groups)
        kind, draws = truth(tgt)
    pairs = list(combinations(coords, 2))
    shown = [g for g in groups[:MAX_GROUPS] if g.label in samples]
    if len(pairs) == 1:  # one pair (2-D): the groups side by side
        fig, axes = panels(len(shown), ncols=4, width=3.2, height=3.0, sharex=False)
        axes = axes.reshape(len(shown), 1)
    else:
        fig, axes = panels(len(shown) * len(pairs), ncols=len(pairs), width=2.9, height=2.7,
                            sharex=False)
        axes = axes.reshape(len(shown), len(pairs))
    pooled = [s for runs in samples.values() for s in runs]
    backgrounds = []
    for j, k in pairs:
        (a_lo, a_hi) = _range(tgt, j, pooled)
        (b_lo, b_hi) = _range(tgt, k, pooled)
        image = None
        if dim == 2 and tgt is not None:
            ga, gb = np.meshgrid(np.linspace(a_lo, a_hi, resolution),
                                 np.linspace(b_lo, b_hi, resolution))
            logp = tgt._log_density_batch(np.column_stack([ga.ravel(), gb.ravel()]))
            logp = np.where(np.isfinite(logp), logp, -np.inf)
            image = np.exp(logp - np.max(logp)).reshape(ga.shape)
        elif draws is not None and np.isfinite(draws[:, [j, k]]).all(axis=1).any():
            both = np.isfinite(draws[:, [j, k]]).all(axis=1)
            image = np.histogram2d(draws[both, k], draws[both, j], resolution,
                                   [[b_lo, b_hi], [a_lo, a_hi]])[0]
        backgrounds.append(((a_lo, a_hi, b_lo, b_hi), image))
    rng = np.random.default_rng(0)
    for row, group in zip(axes, shown):
        runs = samples[group.label]
        stacked = np.concatenate(runs)
        take = stacked[rng.choice(len(stacked), min(points, len(stacked)), replace=False)]
        c = label_colour(results, group.label)
        for ax, (j, k), (extent, image) in zip(row, pairs, backgrounds):
            if image is not None:
                ax.imshow(image, origin="lower", extent=extent, cmap="Greys", aspect="auto",
                          interpolation="nearest", alpha=0.6)
            ax.scatter(take[:, j], take[:, k], s=2, color=c, alpha=0.4, lw=0)
            ax.set_xlim(extent[0], extent[1])
            ax.set_ylim(extent[2], extent[3])
            ax.set_xlabel(names[j])
            ax.set_ylabel(names[k])
        row[0].set_title(f"{group.label} (n={len(runs)})", fontsize="small", loc="left")
    background = ("the target's density (grey)" if dim == 2 and tgt is not None else
                  f"a 2-D histogram of {kind} (grey)" if draws is not None else "no background "
                  "(the target offers no density plot, exact draws or reference sample)")
    which = ("" if dim <= 4 else
             f" Of {dim} {'variables' if columns else 'coordinates'} only "
             f"{', '.join(names[c] for c in coords)} are shown.")
    if columns:
        which += " The model's variables on the constrained scale, under the model's names."
    caption = (f"Pairwise projections of the stored samples on {target} (up to {points:,} "
               f"points per group, pooled over seeds) over {background}.{which} Groups: "
               f"{_group_text(shown)}." + _notes(results, target, groups, shown))
    return [Drawn(_stem(target, "pairs"), fig, caption, sections.SAMPLES, f"{target}: pairs")]


DIAGNOSTIC_ROWS = {"step_size": "step size", "acceptance": "acceptance", "phase": "phase",
                   "logp": "log π"}


def _diagnostic_series(diag: pd.DataFrame, name: str, window: int):
    """(iterations, values) of one row of :func:`diagnostics_figure` for one run, or None
    when the run recorded nothing finite for it."""
    it = diag["iteration"].to_numpy()
    if name == "acceptance":
        if "accepted" not in diag or not len(diag):
            return None
        y = pd.Series(diag["accepted"].to_numpy(float)).rolling(
            window, min_periods=1, center=True).mean().to_numpy()
    elif name in diag:
        y = diag[name].to_numpy(float)
    else:
        return None
    return (it, y) if np.isfinite(y).any() else None


def diagnostics_figure(results: Results, settings: Settings, target: str,
                       window: int = 200) -> list[Drawn]:
    """Step size, windowed acceptance, phase and log π over iterations, per group."""
    groups = [g for g in _groups(results, target)[:MAX_GROUPS]
              if any(r.has_diagnostics for r in g.runs)]
    if not groups:
        raise NotSupported(f"no run on {target} has diagnostics")
    shown = []
    for g in groups:
        run = min((r for r in g.runs if r.has_diagnostics), key=lambda r: r.seed)
        diag = run.diagnostics()
        if diag is not None and not diag.empty:
            shown.append((g, run, diag))
    if not shown:
        raise NotSupported(f"the diagnostics on {target} hold no iterations")
    series = {(col, name): _diagnostic_series(diag, name, window)
              for col, (_, _, diag) in enumerate(shown) for name in DIAGNOSTIC_ROWS}
    rows = [name for name in DIAGNOSTIC_ROWS  # a row no group has data for is left out
            if any(series[col, name] is not None for col in range(len(shown)))]
    fig = new_figure(3.4 * len(shown), 2.0 * len(rows) + 0.6)
    axes = np.asarray(fig.subplots(len(rows), len(shown), sharex="col", squeeze=False))
    labelled = set()
    for col, (g, run, diag) in enumerate(shown):
        c = label_colour(results, g.label)
        visible = []
        for row, name in enumerate(rows):
            ax = axes[row, col]
            if series[col, name] is None:  # nothing to draw: the panel is left out
                ax.set_visible(False)
                continue
            it, y = series[col, name]
            if name == "phase":
                ax.step(it, y, where="post", color=c, lw=0.8)
                names = (diag[["phase", "phase_name"]].drop_duplicates()
                         if "phase_name" in diag else None)
                if names is not None:
                    ax.set_yticks(names["phase"].to_numpy(float), names["phase_name"].tolist(),
                                  fontsize="x-small")
            else:
                ax.plot(it, y, color=c, lw=0.8)
            if name not in labelled:  # the row's label on its first panel
                ax.set_ylabel(DIAGNOSTIC_ROWS[name])
                labelled.add(name)
            visible.append(ax)
        if visible:
            visible[0].set_title(f"{g.label}, seed {run.seed}", fontsize="small", loc="left")
            visible[-1].set_xlabel("iteration")
            visible[-1].tick_params(labelbottom=True)
    caption = (f"Per-iteration diagnostics on {target}, one column per configuration group "
               f"(its lowest seed): step size, acceptance rate in a centred moving window of "
               f"{window} recorded iterations, the sampler's phase"
               + (", and log π of the chain's state" if "logp" in rows else "")
               + " (a panel a sampler recorded nothing for is left out)"
               + ". Every iteration of the head of a run is recorded, later ones thinned "
               "evenly (diagnostics.parquet)." + _notes(results, target, groups,
                                                        [g for g, _, _ in shown]))
    return [Drawn(_stem(target, "diagnostics"), fig, caption, sections.DIAGNOSTICS,
                  f"{target}: diagnostics over iterations")]


GENERIC = {
    "metrics": metric_figures,
    "marginals": marginal_figures,
    "pairs": pair_figures,
    "diagnostics": diagnostics_figure,
}


def generic_figures(results: Results, settings: Settings, target: str):
    """Every generic figure on ``target``: yields ``(name, list[Drawn] | NotSupported)``."""
    for name, draw in GENERIC.items():
        try:
            yield name, draw(results, settings, target)
        except NotSupported as why:
            yield name, why

