"""End of a sweep: render its report and print where it is, with the ranking per target.

:class:`SweepReport` is a Hydra callback (``hydra.callbacks.sweep_report`` in
``conf/config.yaml``). When a multirun ends — all jobs done, with the local, joblib or
submitit (SLURM) launcher alike, since its ``on_multirun_end`` runs in the submitting process
— it loads the runs under the sweep folder, writes ``SWEEP_DIR/report/`` with
:func:`ckam_bench.report.cli.build_report` (tables, ``report.md``, ``report.html`` with the
run inventory and validity marks; with ``figures=true`` also the generic figures of every
target) and prints the HTML report's path, each target's ranking table and the command that
renders every figure. A sweep whose runs are those the existing report shows (e.g. a re-run
whose jobs were all already complete or refused) leaves the report as it is, so such a sweep
changes nothing on disk. Any failure is reported in one line and never changes the sweep's
exit status.

Settings (``hydra.callbacks.sweep_report.*``): ``figures`` (default false: the figures take
tens of seconds per target, more than a short sweep itself), ``folder`` (the report's
sub-folder of the sweep folder), ``rank_by`` (the ranking's first key, as
``ckam-bench-figures --rank-by``; null: the default). The posteriordb suite tables rank the
sweep's suite runs with the shipped baselines (``--baselines auto``,
:mod:`ckam_bench.report.baselines`).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class SweepReport(Callback):
    """Hydra callback: the report of a sweep, rendered when the sweep ends."""

    def __init__(self, figures: bool = False, folder: str = "report", rank_by: str | None = None):
        from ckam_bench.report.ranking import RANK_KEYS

        self.figures = bool(figures)
        self.folder = str(folder)
        if rank_by is not None and rank_by not in RANK_KEYS:
            raise ValueError(f"hydra.callbacks.sweep_report.rank_by must be one of "
                             f"{', '.join(RANK_KEYS)}, got {rank_by!r}")
        self.rank_by = rank_by

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        try:
            self.report(Path(str(config.hydra.sweep.dir)))
        except Exception as exc:  # the sweep's own result must not depend on its report
            first = str(exc).splitlines()[0] if str(exc) else ""
            print(f"ckam-bench: no sweep report ({type(exc).__name__}: {first})",
                  file=sys.stderr)

    def report(self, sweep_dir: Path):
        """Build the report of the runs under ``sweep_dir``; returns it (None: no runs)."""
        # arviz-base logs its plotting-backend choice at INFO on import; Hydra's logging would
        # print it between the sweep's lines
        logging.getLogger("arviz").setLevel(logging.WARNING)
        from ckam_bench.report import generic, html, ranking
        from ckam_bench.report.aggregate import load_results
        from ckam_bench.report.cli import Report, build_report
        from ckam_bench.report.drawing import Settings

        results = load_results(sweep_dir)
        if not results.runs:
            print(f"ckam-bench: sweep report: no complete run under {sweep_dir}",
                  file=sys.stderr)
            return None
        settings = Settings(rank_by=self.rank_by)
        out = sweep_dir / self.folder
        page = out / "report.html"
        if page.exists() and html.fingerprint_meta(results) in page.read_text(errors="replace"):
            report = Report(results, rankings=ranking.ranking_tables(results, settings),
                            markdown=out / "report.md", html=page)
        else:
            kinds = list(generic.GENERIC) if self.figures else []
            report = build_report(results, out, settings, kinds=kinds, formats=("png",),
                                  log=lambda line: None, baselines="auto")
        lines = [f"ckam-bench: sweep report: {report.html}",
                 f"  ({len(results.runs)} runs in {len(results.groups())} configuration groups"
                 f"{f', {len(results.skipped)} skipped' if results.skipped else ''}; "
                 f"markdown: {report.markdown})",
                 f"  every figure: ckam-bench-figures {sweep_dir} --out {sweep_dir / 'figures'}",
                 ""]
        lines += [table.markdown() for table in report.rankings]
        print("\n".join(lines), flush=True)
        return report
