"""What every figure module of the report shares (``paper_*``, :mod:`~ckam_bench.report.generic`,
:mod:`~ckam_bench.report.cli`): the settings of a report, the report's colours, a figure drawn
(:class:`Drawn`) and saved (:class:`Rendered`), :class:`NotSupported`, and the drawing helpers
(median-and-band curves over seeds, panel grids, the target rebuilt from a stored config).

**Colours.** One palette, :data:`PALETTE`: twelve colours that differ from each other and
from a white background (none lighter than a contrast of 2:1 against white, so no sampler is
drawn in a near-invisible light grey). A report gives each configuration group *label*
(``"am"``, ``"am [rate.value=0.01]"``, :attr:`ckam_bench.report.aggregate.Group.label`) its
colour once, :func:`sampler_colours`: the labels in the report's order (samplers in the
paper's order, then by label) take the palette's colours in turn, so up to twelve groups get
twelve distinct colours and a label has the same colour in every figure of the report
(:func:`label_colour`, :func:`run_colour`). Beyond twelve the palette repeats.

Figures use matplotlib's object API (:class:`matplotlib.figure.Figure`, Agg/PDF canvases),
never pyplot, so no global state or display is involved.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ckam_bench.report.aggregate import StoredRun, aggregate, common_grid, sampler_order

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",  # matplotlib's tab10 …
    "#e377c2", "#17becf", "#bcbd22",  # … without its grey,
    "#555555", "#000080", "#a6761d",  # then dark grey, navy and ochre
)
KERNEL_COLOURS = {"matern": "#d62728", "gaussian": "#1f77b4", "linear": "#2ca02c"}
X_LABELS = {
    "sampler_seconds": "sampler time (s)",
    "wall_seconds": "wall-clock time (s)",
    "iterations": "iterations",
    "n_density": "density evaluations",
    "n_grad": "gradient evaluations",
}
DPI = 150


class NotSupported(Exception):
    """The stored runs cannot support a figure; the message says why (one line)."""


@dataclass(frozen=True)
class Settings:
    """What every figure shares: the x-axis column, the band percentiles, the grid size."""

    x: str = "sampler_seconds"
    band: tuple[float, float] = (10.0, 90.0)
    n_grid: int = 200
    rank_by: str | None = None  # the ranking's first key (ranking.RANK_KEYS); None: default

    @property
    def x_label(self) -> str:
        return X_LABELS.get(self.x, self.x)

    @property
    def band_text(self) -> str:
        lo, hi = self.band
        return f"{lo:g}–{hi:g} %"


@dataclass(frozen=True)
class Rendered:
    """A figure written to disk: the paper's ``number`` (None for other figures), its files,
    caption, and the report section and title it is shown under."""

    number: int | None
    paths: list[Path]
    caption: str
    section: str = "Paper figures"
    title: str = ""


@dataclass
class Drawn:
    """A drawn figure not yet saved: file stem, figure, caption, report section and title."""

    stem: str
    figure: Figure
    caption: str
    section: str
    title: str

    def save(self, out_dir: str | Path, formats: tuple[str, ...] = ("png",)) -> Rendered:
        """Write ``OUT_DIR/<stem>.<format>`` for each format, the titles first wrapped to fit
        (:func:`fit_titles`), so no title is clipped."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        fit_titles(self.figure)
        paths = []
        for fmt in formats:
            path = out / f"{self.stem}.{fmt}"
            self.figure.savefig(path, dpi=DPI, format=fmt)
            paths.append(path)
        return Rendered(None, paths, self.caption, self.section, self.title)


def _renderer(fig: Figure):
    if not hasattr(fig.canvas, "get_renderer"):  # a bare Figure: draw it with Agg
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def _wrap(text, width: float, renderer) -> bool:
    """Break the lines of a Text onto more lines until each is at most ``width`` pixels wide,
    between words, and inside a word too wide for a line of its own after its ``_``, ``-``,
    ``/`` or ``.`` (a long target name); True when it was changed."""
    original = text.get_text()
    if not original or text.get_window_extent(renderer).width <= width:
        return False
    pieces = []  # (piece, whether a space goes before it)
    for word in original.split():
        text.set_text(word)
        parts = ([part for part in re.split(r"(?<=[_\-/.])", word) if part]
                 if text.get_window_extent(renderer).width > width else [word])
        pieces += [(part, i == 0) for i, part in enumerate(parts)]
    lines = [pieces[0][0]]
    for piece, spaced in pieces[1:]:
        joined = f"{lines[-1]}{' ' if spaced else ''}{piece}"
        text.set_text(joined)
        if text.get_window_extent(renderer).width <= width:
            lines[-1] = joined
        else:
            lines.append(piece)
    text.set_text("\n".join(lines))
    return True


def _titles(fig: Figure, renderer) -> list[tuple]:
    """(text, the width in pixels it may take) of the figure's title and every visible axes'
    titles, at the figure's current layout."""
    out = []
    title = getattr(fig, "_suptitle", None)
    if title is not None and title.get_text():
        out.append((title, 0.96 * fig.bbox.width))
    out += [(legend.get_title(), 0.96 * fig.bbox.width) for legend in fig.legends
            if legend.get_title().get_text()]  # a figure legend's title (a figure's title)
    for ax in fig.axes:
        if ax.get_visible():
            width = max(ax.get_window_extent(renderer).width, 0.2 * fig.bbox.width)
            out += [(t, width) for t in (ax.title, ax._left_title, ax._right_title)
                    if t.get_text()]
    return out


def fit_titles(fig: Figure) -> None:
    """Wrap the figure's title (``suptitle``, or a figure legend's title) to the figure's width
    and each visible axes' titles to the axes' width, then lay the figure out again (a figure without a layout
    engine with ``tight_layout``), so that no title runs past the edge of the figure. A figure
    whose titles are all well inside their room before layout is left as it is (no draw)."""
    renderer = _renderer(fig)
    if all(text.get_window_extent(renderer).width <= 0.8 * width
           for text, width in _titles(fig, renderer)):
        return
    fig.draw_without_rendering()  # the laid-out axes widths
    changed = False
    for text, width in _titles(fig, renderer):
        changed |= _wrap(text, width, renderer)
    if changed and fig.get_layout_engine() is None:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # axes tight_layout cannot handle stay as they are
            fig.tight_layout()


def colour(name: str, palette: dict | None = None) -> str:
    """``palette[name]`` (a report's :func:`sampler_colours`, or :data:`KERNEL_COLOURS`);
    a name not in it gets a stable colour of :data:`PALETTE` (a hash of the name)."""
    if palette and name in palette:
        return palette[name]
    return PALETTE[zlib.crc32(name.encode()) % len(PALETTE)]


def sampler_colours(results) -> dict[str, str]:
    """The report's colour of every configuration group label (every target): the labels in
    the report's order take :data:`PALETTE`'s colours in turn (see the module docstring)."""
    groups = results.groups()
    order = {name: i for i, name in enumerate(sampler_order(g.sampler for g in groups))}
    labels = list(dict.fromkeys(g.label for g in sorted(groups, key=lambda g: (
        order[g.sampler], g.label))))
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels)}


def label_colour(results, label: str) -> str:
    """The report's colour of a configuration group label."""
    return colour(label, sampler_colours(results))


def run_colour(results, run) -> str:
    """The report's colour of the configuration group a run belongs to (its label's colour)."""
    for group in results.groups(run.target):
        if any(r is run for r in group.runs) or any(d is run for d, _ in group.duplicates):
            return label_colour(results, group.label)
    return colour(run.sampler)


def built_target(runs: list[StoredRun]):
    """The target rebuilt from the first run whose stored config builds it."""
    problems = []
    for run in runs:
        try:
            return run.build_target()
        except Exception as exc:  # a missing or stale config must not stop the figure
            problems.append(f"{type(exc).__name__}: {exc}")
    detail = f" ({problems[0].splitlines()[0]})" if problems else ""
    raise NotSupported(f"cannot rebuild the target from any stored config{detail}")


# ---------------------------------------------------------------------------- drawing helpers
def new_figure(width: float = 6.0, height: float = 4.0) -> Figure:
    """An empty figure with a constrained layout."""
    return Figure(figsize=(width, height), layout="constrained")


def panels(n: int, ncols: int = 3, width: float = 3.2, height: float = 2.7,
           sharex: bool = True, sharey: bool = False):
    """A figure with ``n`` axes on a grid of ``ncols`` columns (the spare cells hidden)."""
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    fig = new_figure(width * ncols, height * nrows)
    axes = np.atleast_1d(fig.subplots(nrows, ncols, sharex=sharex, sharey=sharey)).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


@dataclass
class Curves:
    """What a median-and-band panel draws: per value of the key (in the report's order) the
    aggregated ``x, median, lo, hi`` where at least half of its runs have a value (values with
    nothing to draw are left out), the run count of every value, and every aggregated value
    (it decides a logarithmic y-axis)."""

    parts: dict[str, pd.DataFrame]
    counts: dict[str, int]
    values: np.ndarray


def curve_data(frame: pd.DataFrame, y: str, key: str, settings: Settings,
               log_x: bool) -> Curves:
    """The median and band of ``y`` over seeds per value of ``key`` on a common grid of
    ``settings.x``; raises :class:`NotSupported` when the x values give no grid (e.g. the
    gradient evaluations of gradient-free samplers)."""
    finite = frame[np.isfinite(pd.to_numeric(frame[y], errors="coerce"))]
    try:
        grid = common_grid(finite, settings.x, n=settings.n_grid, log=log_x)
    except ValueError as exc:  # e.g. n_grad is 0 for gradient-free samplers
        raise NotSupported(str(exc)) from exc
    agg = aggregate(frame, settings.x, y, by=[key], band=settings.band, grid=grid)
    counts = frame.groupby(key)["run_id"].nunique().to_dict()
    counts = {name: counts[name] for name in sampler_order(counts)}
    parts = {}
    for name in counts:
        part = agg[agg[key] == name]
        part = part[part["n_seeds"] >= max(1, math.ceil(counts[name] / 2))]
        if not part.empty:
            parts[name] = part
    values = agg[["median", "lo", "hi"]].to_numpy(float)
    return Curves(parts, counts, values[np.isfinite(values)])


def draw_curves(ax, data: Curves, log_x: bool, palette: dict, legend: bool = True) -> None:
    """Draw :func:`curve_data`'s lines (steps) and bands on ``ax``."""
    for name, part in data.parts.items():
        c = colour(name, palette)
        ax.plot(part["x"], part["median"], color=c, lw=1.6, drawstyle="steps-post",
                label=f"{name} (n={data.counts[name]})")
        if data.counts[name] > 1:
            ax.fill_between(part["x"], part["lo"], part["hi"], color=c, alpha=0.2, lw=0,
                            step="post")
    if log_x:
        ax.set_xscale("log")
    values = data.values
    if values.size and values.min() > 0 and values.max() >= 10 * values.min():
        ax.set_yscale("log")  # only when the values span at least a decade
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(fontsize="small", frameon=False)


def curves(ax, frame: pd.DataFrame, y: str, key: str, settings: Settings, log_x: bool,
           palette: dict) -> dict[str, int]:
    """Median line and band of ``y`` per value of ``key``; returns the run count per value."""
    data = curve_data(frame, y, key, settings, log_x)
    draw_curves(ax, data, log_x, palette)
    return data.counts
