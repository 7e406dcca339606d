"""Command-line entry point ``ckam-bench-figures``: figures, tables and a report from stored runs.

    ckam-bench-figures RESULTS_DIR --out OUT_DIR [--figures 1,3,10] [--targets bimodal,gmm2d]
        [--x sampler_seconds|iterations|n_density|n_grad|wall_seconds] [--band 10,90]
        [--formats png,pdf] [--include-incomplete]

Loads every run under RESULTS_DIR (:func:`ckam_bench.report.aggregate.load_results`), renders
each requested figure the runs support (:mod:`ckam_bench.report.figures`; the others get a
one-line note), writes the tables (:mod:`ckam_bench.report.tables`) as markdown and LaTeX, and
``OUT_DIR/report.md`` embedding every PNG with its caption, every table, the figures that
were not rendered and the runs that were skipped (one line each: path and reason).

Exit codes: 0 done (even if some figures or runs were skipped); 1 no usable run under
RESULTS_DIR; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from ckam_bench.report import figures, tables, validity
from ckam_bench.report.aggregate import Results, load_results

X_CHOICES = ("sampler_seconds", "iterations", "n_density", "n_grad", "wall_seconds")
FORMATS = ("png", "pdf", "svg")


def _int_list(text: str) -> list[int]:
    if text.strip().lower() == "all":
        return sorted(figures.FIGURES)
    try:
        numbers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated figure numbers, got {text!r}")
    unknown = sorted(set(numbers) - set(figures.FIGURES))
    if unknown or not numbers:
        raise argparse.ArgumentTypeError(
            f"figures must be among {min(figures.FIGURES)}–{max(figures.FIGURES)}, got {text!r}")
    return sorted(set(numbers))


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names")
    return names


def _band(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two percentiles LO,HI, got {text!r}")
    if not 0.0 <= lo < hi <= 100.0:
        raise argparse.ArgumentTypeError(f"need 0 <= LO < HI <= 100, got {text!r}")
    return lo, hi


def _formats(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(f.lower() for f in _names(text)))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown format(s) {', '.join(unknown)}; "
                                         f"choose from {', '.join(FORMATS)}")
    return formats


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ckam-bench-figures",
        description="Render the cKAM paper's figures and tables from stored ckam-bench runs.")
    p.add_argument("results", type=Path, help="folder holding run folders (searched recursively)")
    p.add_argument("--out", type=Path, required=True, help="output folder (created)")
    p.add_argument("--figures", type=_int_list, default=sorted(figures.FIGURES),
                   help="comma-separated figure numbers (1-14) or 'all' (default: all)")
    p.add_argument("--targets", type=_names, default=None,
                   help="comma-separated targets to use (default: every target)")
    p.add_argument("--x", choices=X_CHOICES, default="sampler_seconds",
                   help="x-axis of the metric-vs-x figures (default: sampler_seconds)")
    p.add_argument("--band", type=_band, default=(10.0, 90.0),
                   help="percentiles of the band over seeds (default: 10,90)")
    p.add_argument("--formats", type=_formats, default=("png", "pdf"),
                   help="figure formats (default: png,pdf)")
    p.add_argument("--include-incomplete", action="store_true",
                   help="use interrupted/failed runs up to their last checkpoint")
    return p


def _unwritable(out: Path) -> str | None:
    """Why figures cannot be written into ``out`` (None when they can); checked before any
    figure is drawn, so a read-only folder is one line, not a traceback after the work."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".ckam-write-test-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _unwritable(out: Path) -> str | None:
    """Why figures cannot be written into ``out`` (None when they can); checked before any
    figure is drawn, so a read-only folder is one line, not a traceback after the work."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".ckam-write-test-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.results.is_dir():
        print(f"ckam-bench-figures: {args.results} is not a folder", file=sys.stderr)
        return 2
    problem = _unwritable(args.out)
    if problem:
        print(f"ckam-bench-figures: cannot write to {args.out}: {problem}", file=sys.stderr)
        return 1
    problem = _unwritable(args.out)
    if problem:
        print(f"ckam-bench-figures: cannot write to {args.out}: {problem}", file=sys.stderr)
        return 1
    results = load_results(args.results, include_incomplete=args.include_incomplete,
                           targets=args.targets)
    for item in results.skipped:
        print(f"skipped {item}")
    if not results.runs:
        which = f" of target(s) {', '.join(args.targets)}" if args.targets else ""
        found = f" ({len(results.skipped)} skipped, see above)" if results.skipped else ""
        print(f"ckam-bench-figures: no usable runs{which} under {args.results}{found}",
              file=sys.stderr)
        return 1
    print(f"loaded {len(results.runs)} runs from {args.results}")
    settings = figures.Settings(x=args.x, band=args.band)
    rendered, notes = [], []
    for number in args.figures:
        try:
            fig = figures.render(number, results, args.out, settings, args.formats)
        except figures.NotSupported as why:
            notes.append((number, str(why)))
            print(f"figure {number}: skipped ({why})")
            continue
        except Exception as exc:  # one broken figure must not stop the others
            reason = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            notes.append((number, reason))
            print(f"figure {number}: {reason}")
            continue
        rendered.append(fig)
        print(f"figure {number}: " + ", ".join(str(p) for p in fig.paths))
    written = []
    for table in tables.all_tables(results):
        table.write(args.out)
        written.append(table)
        print(f"table: {args.out / table.stem}.md, .tex")
    report = write_report(args.out, results, rendered, notes, written, settings)
    validity.append_to_report(report, args.results, args.out, args.formats)
    print(f"report: {report}")
    return 0


def write_report(out_dir: Path, results: Results, rendered: list, notes: list,
                 written: list, settings: figures.Settings) -> Path:
    """Write ``OUT_DIR/report.md`` (figures by relative path, tables inline, skip notes)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# ckam-bench report", "",
             f"Runs from `{results.root}`: {len(results.runs)} used, "
             f"{len(results.skipped)} skipped or partly used. x-axis: {settings.x_label}; "
             f"bands: {settings.band_text} over seeds.", "",
             "## Runs", "", "| target | sampler | kernel | runs | seeds | states |",
             "|---|---|---|---|---|---|"]
    samplers = figures.sampler_order(r.sampler for r in results.runs)
    order = {name: i for i, name in enumerate(samplers)}
    groups = {(r.target, r.sampler, r.kernel) for r in results.runs}
    for target, sampler, kernel in sorted(groups, key=lambda g: (g[0], order[g[1]], g[2])):
        runs = results.select(target, sampler, kernel)
        seeds = ", ".join(str(s) for s in sorted({r.seed for r in runs}))
        states = ", ".join(f"{k} {v}" for k, v in sorted(Counter(r.state for r in runs).items()))
        lines.append(f"| {target} | {sampler} | {kernel} | {len(runs)} | {seeds} | {states} |")
    lines += ["", "## Figures", ""]
    for fig in rendered:
        names = {p.suffix[1:]: os.path.relpath(p, out) for p in fig.paths}
        caption = f"Figure {fig.number}. {fig.caption}"
        if "png" in names:
            lines.append(f"![Figure {fig.number}]({names['png']})")
            lines.append("")
        links = " · ".join(f"[{fmt.upper()}]({path})" for fmt, path in names.items())
        lines += [f"*{caption}* ({links})", ""]
    if not rendered:
        lines += ["No figure could be rendered from these runs.", ""]
    lines += ["## Tables", ""]
    for table in written:
        lines += [table.markdown(), f"(LaTeX: [{table.stem}.tex]({table.stem}.tex))", ""]
    if notes:
        lines += ["## Figures not rendered", ""]
        lines += [f"- Figure {number}: {why}" for number, why in notes]
        lines.append("")
    if results.skipped:
        lines += ["## Skipped runs", ""]
        lines += [f"- `{item.path}`: {item.reason}" for item in results.skipped]
        lines.append("")
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


if __name__ == "__main__":
    sys.exit(main())
