"""Command-line entry point ``ckam-bench-figures``: figures, tables and a report from stored runs.

    ckam-bench-figures RESULTS_DIR --out OUT_DIR [--figures 1,3,10|all|none]
        [--generic metrics,marginals,pairs,diagnostics|all|none] [--targets bimodal,gmm2d]
        [--x sampler_seconds|iterations|n_density|n_grad|wall_seconds] [--band 10,90]
        [--formats png,pdf] [--rank-by KEY] [--include-incomplete] [--baselines auto|none|PATH]

Loads every run under RESULTS_DIR (:func:`ckam_bench.report.aggregate.load_results`), renders
the cKAM paper's figures (:mod:`ckam_bench.report.paper_ckam`; by default those the runs
support when they hold the paper's samplers on its targets, else none and no note; with
``--figures`` each one asked for, or a one-line note why not), the generic figures of every
target (:mod:`ckam_bench.report.generic`) and the figures of every source in
:data:`FIGURE_SOURCES` (a paper's source only when its runs are there,
:data:`ckam_bench.report.sections.PAPERS`; a figure that cannot be drawn gets a one-line
note), writes the tables of
:data:`TABLE_SOURCES` (hyperparameters as run, results, the ranking per target) as markdown and
LaTeX, ``OUT_DIR/report.md`` (PNGs by relative path) and the self-contained
``OUT_DIR/report.html`` (:mod:`ckam_bench.report.html`: figures embedded, sortable tables,
run inventory, validity marks, what was skipped and why). When outputs of ``ckam-bench-check``
are stored under RESULTS_DIR (identified by their marker, :func:`validity.find_checks`), both
reports get a Validity section listing each check and its verdict
(:func:`ckam_bench.report.validity.render_validity`). :func:`build_report` does all of
it and is what the end-of-sweep callback (:mod:`ckam_bench.report.callback`) calls.
``--baselines`` adds stored peer runs to the posteriordb suite tables
(:mod:`ckam_bench.report.baselines`): ``auto`` (default) the shipped file when the results hold
suite runs (a note when none is shipped yet), ``none`` no baselines, or a baselines file.

Other modules add figures or tables with one line each (no other change here)::

    FIGURE_SOURCES["kamh"] = paper_kamh.figures   # f(results, settings) -> list[Drawn]
    TABLE_SOURCES["kamh"] = paper_kamh.tables     # f(results) -> list[Table]

A figure source raises :class:`~ckam_bench.report.drawing.NotSupported` (one-line reason)
when the runs cannot support it.

Everything is drawn into a private staging folder inside OUT_DIR and published at once through
:mod:`ckam_bench.engine.outputs`: OUT_DIR must be new, empty or an earlier report of the same
RESULTS_DIR, and a file in it is replaced only when this command wrote it (and it is
unchanged); a failure (a full disk) leaves OUT_DIR as it was.

Exit codes: 0 done (even if some figures or runs were skipped); 1 no usable run and no
stationarity check under RESULTS_DIR, or OUT_DIR cannot be written; 2 bad arguments or a
refused OUT_DIR.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ckam_bench.engine.outputs import OutputFolder
from ckam_bench.report import (baselines, generic, html, paper_ckam, paper_divergence,
                               paper_gradient, paper_kamh, posterior, posteriordb_suite, ranking,
                               sections, tables, validity)
from ckam_bench.report.aggregate import Results, load_results
from ckam_bench.report.drawing import NotSupported, Settings
from ckam_bench.engine.rundir import FolderRefused

COMMAND = "ckam-bench-figures"
X_CHOICES = ("sampler_seconds", "iterations", "n_density", "n_grad", "wall_seconds")
FORMATS = ("png", "pdf", "svg")

# Sources of figures and tables beyond the paper's numbered figures and the generic ones.
FIGURE_SOURCES: dict[str, Callable] = {}
TABLE_SOURCES: dict[str, Callable] = {"tables": tables.all_tables,
                                      "ranking": ranking.ranking_tables}
FIGURE_SOURCES["gradient"] = paper_gradient.figures  # Titsias & Dellaportas: Figs 2-6
TABLE_SOURCES["gradient"] = paper_gradient.tables  # Titsias & Dellaportas: Tables 1-7
FIGURE_SOURCES["divergence"] = paper_divergence.figures  # Dharamshi et al.: Figs 7-9, 12
TABLE_SOURCES["divergence"] = paper_divergence.tables  # Dharamshi et al.: Tables 1-4
FIGURE_SOURCES["kamh"] = paper_kamh.figures  # Sejdinovic et al.: Figs 2, 4, 5
TABLE_SOURCES["kamh"] = paper_kamh.tables  # Sejdinovic et al.: Figure 5 numbers
TABLE_SOURCES["posteriordb"] = posteriordb_suite.tables  # the posteriordb suite's ranking
TABLE_SOURCES["posterior"] = posterior.tables  # per variable, under the model's names
TABLE_SECTIONS = {  # the report section of a source's tables (default: Tables)
    **{name: paper.section for name, paper in sections.PAPERS.items()},
    "ranking": sections.RANKING, "posteriordb": sections.RANKING,
    "posterior": sections.POSTERIOR}


def _int_list(text: str) -> list[int]:
    if text.strip().lower() == "all":
        return sorted(paper_ckam.FIGURES)
    if text.strip().lower() == "none":
        return []
    try:
        numbers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated figure numbers, got {text!r}")
    unknown = sorted(set(numbers) - set(paper_ckam.FIGURES))
    if unknown or not numbers:
        raise argparse.ArgumentTypeError(
            f"figures must be among {min(paper_ckam.FIGURES)}–{max(paper_ckam.FIGURES)}, "
            f"got {text!r}")
    return sorted(set(numbers))


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names")
    return names


def _generic(text: str) -> list[str]:
    if text.strip().lower() in ("all", "none"):
        return list(generic.GENERIC) if text.strip().lower() == "all" else []
    names = _names(text)
    unknown = [n for n in names if n not in generic.GENERIC]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown generic figure(s) {', '.join(unknown)}; "
                                         f"choose from {', '.join(generic.GENERIC)}")
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


def _baselines(text: str):
    if text.strip().lower() in ("auto", "none"):
        return text.strip().lower()
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"expected auto, none or a baselines file, got {text!r} "
                                         "(no such file)")
    return path


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported in one line naming it (no usage block)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: invalid argument: {message} (see --help)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="ckam-bench-figures",
        description="Figures, tables, a ranking and a self-contained HTML report from stored "
                    "ckam-bench runs.")
    p.add_argument("results", type=Path, help="folder holding run folders (searched recursively)")
    p.add_argument("--out", type=Path, required=True, help="output folder (created)")
    p.add_argument("--figures", type=_int_list, default=None,
                   help="the cKAM paper's figures: comma-separated numbers (1-14), 'all' or "
                        "'none' (default: those the runs support when they include the "
                        "paper's samplers on its targets, else none)")
    p.add_argument("--generic", type=_generic, default=list(generic.GENERIC),
                   help="figures for every target: comma-separated among "
                        f"{', '.join(generic.GENERIC)}, 'all' (default) or 'none'")
    p.add_argument("--targets", type=_names, default=None,
                   help="comma-separated targets to use (default: every target)")
    p.add_argument("--x", choices=X_CHOICES, default="sampler_seconds",
                   help="x-axis of the paper's metric-vs-x figures (default: sampler_seconds; "
                        "the generic figures show every axis)")
    p.add_argument("--band", type=_band, default=(10.0, 90.0),
                   help="percentiles of the band over seeds (default: 10,90)")
    p.add_argument("--formats", type=_formats, default=("png", "pdf"),
                   help="figure formats (default: png,pdf; the HTML report embeds the PNGs, so "
                        "png is always written)")
    p.add_argument("--rank-by", choices=ranking.RANK_KEYS, default=None, metavar="KEY",
                   help="the ranking's first key, one of " + ", ".join(ranking.RANK_KEYS)
                        + " (default: to_acc_sampler_seconds, else kl, else ess_per_second; "
                          "ties go to the next key)")
    p.add_argument("--include-incomplete", action="store_true",
                   help="use interrupted/failed runs up to their last checkpoint")
    p.add_argument("--baselines", type=_baselines, default="auto", metavar="auto|none|PATH",
                   help="stored peer runs ranked with the posteriordb suite runs: 'auto' (default: "
                        "the shipped baselines when the results hold suite runs), 'none', or a "
                        "baselines file (python -m ckam_bench.report.baselines pack)")
    return p


@dataclass
class Report:
    """What :func:`build_report` wrote."""

    results: Results
    rendered: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    rankings: list = field(default_factory=list)
    markdown: Path | None = None
    html: Path | None = None
    validity: validity.ValiditySection | None = None


def _one_line(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"failed: {type(exc).__name__}: {text}"


def build_report(results: Results, out: Path, settings: Settings = Settings(),
                 paper: list[int] | None = (), kinds: list[str] = tuple(generic.GENERIC),
                 formats: tuple[str, ...] = ("png",), log=print, baselines="auto") -> Report:
    """Render figures and tables from ``results`` into ``out`` and write both reports.

    ``paper``: the cKAM paper's figure numbers (each drawn or noted as not supported), None
    for those the runs support (:func:`ckam_bench.report.paper_ckam.supported`: none unless
    the paper's samplers ran on its targets, so a user who ran none of them reads no
    "figure N: skipped" line); ``kinds``: the generic figures (names of
    :data:`ckam_bench.report.generic.GENERIC`) drawn for every target; every source of
    :data:`FIGURE_SOURCES` and :data:`TABLE_SOURCES` is used, except a paper's
    (:data:`ckam_bench.report.sections.PAPERS`, by source name) when none of its runs are
    there. ``log`` gets one line per figure, table and note. A figure that fails is noted,
    never fatal. ``baselines`` (``auto``, ``none`` or a file;
    :func:`ckam_bench.report.baselines.attach`) is used unless ``results.baselines`` is
    already set.
    """
    if not hasattr(results, "baselines"):
        from ckam_bench.report.baselines import attach

        attach(results, baselines)
    folder = out if isinstance(out, OutputFolder) else OutputFolder.inspect(
        out, COMMAND, results_identity(results))
    final = folder.path
    out = folder.staging()  # everything is drawn here, then published at once
    try:
        report = _render(results, out, settings, paper, kinds, formats,
                         lambda line: log(line.replace(str(out), str(final))))
        folder.publish(last=("report.md", "report.html"))
    except BaseException:
        folder.discard()
        raise
    report.rendered = [replace(fig, paths=[final / Path(p).relative_to(out) for p in fig.paths])
                       for fig in report.rendered]  # the published paths
    report.markdown, report.html = final / "report.md", final / "report.html"
    return report


def results_identity(results: Results) -> str:
    """The identity of a report folder: the results folder it reports on."""
    return str(Path(results.root).resolve())


def _render(results, out, settings, paper, kinds, formats, log) -> Report:
    formats = tuple(dict.fromkeys(("png", *formats)))
    report = Report(results)

    def note(name, why):
        report.notes.append((name, why))
        log(f"{name[0].lower()}{name[1:]}: skipped ({why})")

    if paper is None:  # the cKAM paper's figures the runs support, silently none without it
        paper = paper_ckam.supported(results)
    for number in paper:
        try:
            fig = paper_ckam.render(number, results, out, settings, formats)
        except NotSupported as why:
            note(f"Figure {number}", str(why))
            continue
        except Exception as exc:  # one broken figure must not stop the others
            note(f"Figure {number}", _one_line(exc))
            continue
        report.rendered.append(fig)
        log(f"figure {number}: " + ", ".join(str(p) for p in fig.paths))
    sources = {f"{target}: {kind}": (lambda r, s, t=target, k=kind: generic.GENERIC[k](r, s, t))
               for target in results.targets for kind in kinds}
    sources.update({name: source for name, source in FIGURE_SOURCES.items()
                    if name not in sections.PAPERS or sections.PAPERS[name].present(results)})
    for name, source in sources.items():
        try:
            drawn = source(results, settings)
        except NotSupported as why:
            note(name, str(why))
            continue
        except Exception as exc:  # one broken source must not stop the others
            note(name, _one_line(exc))
            continue
        for item in drawn:
            fig = item.save(out, formats)
            report.rendered.append(fig)
            log(f"figure {fig.title}: {fig.paths[0]}")
    for name, source in TABLE_SOURCES.items():
        if name in sections.PAPERS and not sections.PAPERS[name].present(results):
            continue  # a paper none of whose runs are here: no section, no note
        try:
            made = (source(results, settings) if getattr(source, "wants_settings", False)
                    else source(results))
        except Exception as exc:  # one broken table must not stop the report
            note(f"tables {name}", _one_line(exc))
            continue
        for table in made:
            if not table.section:
                table.section = TABLE_SECTIONS.get(name, "")
            table.write(out)
            (report.rankings if name == "ranking" else report.tables).append(table)
            log(f"table: {out / table.stem}.md, .tex")
    try:  # the stationarity checks stored under the results folder (ckam-bench-check)
        report.validity = validity.render_validity(results.root, out, formats)
    except Exception as exc:  # a broken check must not stop the report
        note("Validity section", _one_line(exc))
    if report.validity is not None:
        log(f"validity: {len(report.validity.checks)} stationarity check(s), "
            f"{len(report.validity.failed)} failed: {out / report.validity.table.stem}.md")
    report.markdown = write_report(out, results, report.rendered, report.notes,
                                   report.rankings + report.tables, settings, report.validity)
    report.html = html.write_html(out, results, report.rendered, report.notes, report.tables,
                                  report.rankings, settings, report.validity)
    return report


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.results.is_dir():
        print(f"ckam-bench-figures: {args.results} is not a folder", file=sys.stderr)
        return 2
    try:  # a folder that is not this report's is refused before any work
        folder = OutputFolder.inspect(args.out, COMMAND, str(args.results.resolve()))
    except (FolderRefused, OSError) as exc:
        print(f"ckam-bench-figures: refused: --out: {exc}", file=sys.stderr)
        return 2
    try:
        folder.open()
    except OSError as exc:
        folder.discard()
        print(f"ckam-bench-figures: cannot write to {args.out}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    results = load_results(args.results, include_incomplete=args.include_incomplete,
                           targets=args.targets)
    for item in results.skipped:
        print(f"skipped {item}")
    if not results.runs:
        checks = validity.find_checks(args.results).checks
        if not checks:
            which = f" of target(s) {', '.join(args.targets)}" if args.targets else ""
            found = f" ({len(results.skipped)} skipped, see above)" if results.skipped else ""
            print(f"ckam-bench-figures: no usable runs{which} and no stationarity check under "
                  f"{args.results}{found}", file=sys.stderr)
            folder.discard()
            return 1
        print(f"no usable runs under {args.results}: the report shows its {len(checks)} "
              "stationarity check(s)")
    else:
        print(f"loaded {len(results.runs)} runs in {len(results.groups())} configuration "
              f"groups from {args.results}")
    for run in results.runs:  # a sampler that went wrong says so (status.json flags)
        for name, note in {**run.flags, **run.warnings}.items():
            print(f"FLAGGED {run.path}: {name}: {note}")
    try:
        attached = baselines.attach(results, args.baselines)
    except baselines.BaselinesError as exc:
        folder.discard()
        print(f"ckam-bench-figures: invalid argument: --baselines: {str(exc).split(': ', 1)[1]}",
              file=sys.stderr)
        return 2
    if attached is not None and attached.runs:
        print(f"baselines: {len(attached.runs)} stored runs of {attached.path} on the suite's "
              "posteriors here")
    for line in ([attached.note] if attached is not None and attached.note else []) + [
            d.text for d in (attached.differences if attached is not None else [])]:
        print(line)
    settings = Settings(x=args.x, band=args.band, rank_by=args.rank_by)
    try:
        report = build_report(results, folder, settings, args.figures, args.generic,
                              args.formats)
    except FolderRefused as exc:
        print(f"ckam-bench-figures: refused: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. a full disk: the staged files are gone, OUT unchanged
        folder.discard()
        print(f"ckam-bench-figures: cannot write to {args.out}: {exc.strerror or exc}; "
              "nothing in it was changed", file=sys.stderr)
        return 1
    print(f"report: {report.markdown}")
    print(f"html report: {report.html}")
    return 0


def write_report(out_dir: Path, results: Results, rendered: list, notes: list,
                 written: list, settings: Settings,
                 checks: validity.ValiditySection | None = None) -> Path:
    """Write ``OUT_DIR/report.md`` in the order of ``report.html``
    (:mod:`ckam_bench.report.sections`): the ranking, then each section's figures (by relative
    path) and tables, the other tables, the configuration groups, the Validity section when
    ``checks`` holds stored stationarity checks, and what was skipped."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# ckam-bench report", "",
             f"Runs from `{results.root}`: {len(results.runs)} used, "
             f"{len(results.skipped)} skipped or partly used. x-axis: {settings.x_label}; "
             f"bands: {settings.band_text} over seeds. The self-contained version of this "
             "report (figures embedded, sortable tables, run inventory) is report.html.", ""]
    rankings = [t for t in written if t.section == sections.RANKING
                and t.stem.startswith("ranking_")]
    layout = html.report_sections(rendered, [t for t in written if t not in rankings])
    lines += [f"## {sections.RANKING}", ""]
    for table in rankings:
        lines += [table.markdown(), f"(LaTeX: [{table.stem}.tex]({table.stem}.tex))", ""]
    if not rankings:
        lines += ["No ranking.", ""]
    for section, (figures, tables_) in layout.items():
        if section != sections.RANKING:
            lines += [f"## {section}", ""]
        for fig in figures:
            names = {p.suffix[1:]: os.path.relpath(p, out) for p in fig.paths}
            title = f"Figure {fig.number}" if fig.number is not None else fig.title
            if "png" in names:
                lines.append(f"![{title}]({names['png']})")
                lines.append("")
            links = " · ".join(f"[{fmt.upper()}]({path})" for fmt, path in names.items())
            lines += [f"*{title}. {fig.caption}* ({links})", ""]
        for table in tables_:
            lines += [table.markdown(), f"(LaTeX: [{table.stem}.tex]({table.stem}.tex))", ""]
    if not rendered:
        lines += ["No figure could be rendered from these runs.", ""]
    lines += ["## Runs", "", "One row per configuration group (full configuration, each seed "
              "once).", "", "| target | sampler | kernel | runs | seeds | states |",
              "|---|---|---|---|---|---|"]
    for group in results.groups():
        runs = group.runs + [d for d, _ in group.duplicates]
        seeds = ", ".join(str(s) for s in group.seeds)
        dup = f" ({len(group.duplicates)} duplicate(s) left out)" if group.duplicates else ""
        states = ", ".join(f"{k} {v}" for k, v in sorted(Counter(r.state for r in runs).items()))
        lines.append(f"| {group.target} | {group.label} | {group.kernel} | {len(runs)} | "
                     f"{seeds}{dup} | {states} |")
    lines.append("")
    if checks is not None:
        lines += checks.markdown(out)
    if notes:
        lines += ["## Figures not rendered", ""]
        lines += [f"- {name}: {why}" for name, why in notes]
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
