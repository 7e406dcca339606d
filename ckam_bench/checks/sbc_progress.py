"""The output of ``ckam-bench-sbc``'s sweep, made concise (:class:`SweepProgress`): one progress
line instead of Hydra's launch line (its overrides with ``${seed}`` escaped) and the end line of
every run, with errors and failed, interrupted or flagged runs printed as they come."""

from __future__ import annotations

import re
import sys

LAUNCH_LINE = re.compile(r"\]\[HYDRA\] (Launching |\t#\d+ : |Joblib\.Parallel|Submitit )")
"""Hydra's launch lines: one per job, its overrides with ``${seed}`` escaped as ``$\\{seed\\}``."""
RUN_LINE = re.compile(r"^(?P<state>complete|interrupted|failed) \([^)]*\)(?P<flagged> FLAGGED)?")
"""A run's end line (:func:`ckam_bench.commands.cli.summary`)."""
SKIPPED_LINE = "already complete for this config, skipped"


class SweepProgress:
    """What the sweep of simulations prints, made concise for ``out`` (stderr).

    Dropped: Hydra's launch lines and the end line of each run that completed unflagged, with
    its indented notes. Counted: those runs, runs skipped as already complete, flagged,
    failed and interrupted runs, in one progress line ``ckam-bench-sbc: 37/100 simulations
    finished (2 failed)`` — rewritten in place on a terminal, else printed at every tenth of
    the simulations. Kept: everything else (a failed, interrupted or flagged run's end line,
    errors, tracebacks, warnings)."""

    def __init__(self, n: int, out=None, tty: bool | None = None):
        self.n, self.out = n, out if out is not None else sys.stderr
        self.tty = self.out.isatty() if tty is None else tty
        self.counts = {"finished": 0, "already complete": 0, "flagged": 0, "failed": 0,
                       "interrupted": 0}
        self.quiet_notes = False  # the indented lines after a dropped end line
        self.shown = ""  # the progress line on the terminal, rewritten in place

    def feed(self, line: str) -> None:
        text = line.rstrip("\r\n")
        if LAUNCH_LINE.search(text):
            return
        if text.startswith("  ") and self.quiet_notes:
            return
        self.quiet_notes = False
        found = RUN_LINE.match(text)
        if SKIPPED_LINE in text:
            self._count("already complete")
        elif found:
            state = found["state"]
            kind = "flagged" if state == "complete" and found["flagged"] else state
            self.quiet_notes = kind == "complete"
            if kind != "complete":
                self._write(text)
            self._count(None if kind == "complete" else kind)
        elif text.strip():
            self._write(text)

    @property
    def done(self) -> int:
        """Simulations finished one way or another (a flagged run counts once, as finished)."""
        return sum(v for k, v in self.counts.items() if k != "flagged")

    def line(self) -> str:
        """The progress line."""
        parts = [f"{v} {k}" for k, v in self.counts.items() if v and k != "finished"]
        return (f"ckam-bench-sbc: {self.done}/{self.n} simulations finished"
                + (f" ({', '.join(parts)})" if parts else ""))

    def close(self) -> None:
        if self.tty and self.shown:
            self.out.write("\n")
            self.out.flush()
            self.shown = ""

    def _count(self, kind: str | None) -> None:
        """One more simulation of ``kind`` (None: completed unflagged), and the progress line."""
        self.counts["finished" if kind in (None, "flagged") else kind] += 1
        if kind == "flagged":
            self.counts["flagged"] += 1
        if self.tty:
            self.shown = self.line()
            self.out.write(f"\r{self.shown}\033[K")
        elif self.done == self.n or self.done % max(1, self.n // 10) == 0:
            self.out.write(self.line() + "\n")
        self.out.flush()

    def _write(self, text: str) -> None:
        if self.tty and self.shown:
            text = f"\r\033[K{text}\n{self.shown}"
        else:
            text += "\n"
        self.out.write(text)
        self.out.flush()
