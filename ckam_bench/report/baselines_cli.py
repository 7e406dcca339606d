"""``ckam-bench-baselines``: pack stored posteriordb suite runs into a baselines file (in
parts: ``--add``), show one, or print the sweep that makes the posteriors a file lacks
(:mod:`ckam_bench.report.baselines`; docs/posteriordb.md, "Baselines").

    ckam-bench-baselines pack FOLDER OUT --command "ckam-bench -m ..." [--add [--replace SAMPLER]]
    ckam-bench-baselines show FILE
    ckam-bench-baselines missing FILE
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from ckam_bench.report.baselines import (BaselineRun, BaselinesError, load, missing, pack,
                                         read_stamp)


def coverage(runs: list[BaselineRun]) -> list[str]:
    """Lines: posteriors × samplers × seeds, and per sampler what is missing."""
    posteriors = sorted({r.status["posterior"] for r in runs})
    configurations = sorted({r.status["label"] for r in runs})
    seeds = sorted({r.seed for r in runs})
    full = len(posteriors) * len(configurations) * len(seeds)
    lines = [f"coverage: {len(posteriors)} posteriors × {len(configurations)} sampler "
             f"configurations × {len(seeds)} seeds = {full} runs, {len(runs)} present"]
    for label in configurations:
        mine = [r for r in runs if r.status["label"] == label]
        missing = len(posteriors) * len(seeds) - len(mine)
        passed = sum(r.status.get("passes") is True for r in mine)
        lines.append(f"  {label}: {len({r.status['posterior'] for r in mine})} posteriors, "
                     f"{len(mine)} runs, {passed} pass the reference"
                     + (f", {missing} missing" if missing else ""))
    return lines


def show(path) -> list[str]:
    """The lines ``show`` prints: the stamp, then the coverage."""
    runs, stamp = load(path)
    lines = [f"baselines {path}"]
    for key, value in stamp.items():
        if key == "cpu_hours":
            value = f"{value:.3g}"
        elif isinstance(value, (dict, list)):
            value = json.dumps(value, sort_keys=True)
        lines.append(f"  {key}: {value}")
    return lines + coverage(runs)


class _Parser(argparse.ArgumentParser):
    """argparse, a bad argument in one line naming it (exit 2)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: invalid argument: {message} (see --help)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ckam-bench-baselines",
                description="Pack stored posteriordb suite runs into a baselines file, or show one.")
    sub = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    packing = sub.add_parser("pack", help="write the suite runs under FOLDER to OUT")
    packing.add_argument("folder", type=Path, metavar="FOLDER", help="results folder (searched recursively)")
    packing.add_argument("out", type=Path, metavar="OUT", help="the baselines parquet file to write")
    packing.add_argument("--command", required=True,
                         help="the command that made the runs (recorded in the stamp)")
    packing.add_argument("--add", action="store_true",
                         help="merge into the existing OUT: a suite regenerated in parts (the "
                              "groups OUT has are kept; budget and versions must be OUT's)")
    packing.add_argument("--replace", metavar="SAMPLER",
                         help="with --add: drop OUT's runs of SAMPLER and pack them again from "
                              "FOLDER (a configuration re-run after a fix)")
    lacking = sub.add_parser("missing", help="print the sweep that makes the suite posteriors "
                                             "FILE has no runs of")
    lacking.add_argument("file", type=Path, metavar="FILE")
    showing = sub.add_parser("show", help="print a baselines file's stamp and coverage")
    showing.add_argument("file", type=Path, metavar="FILE")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    prog = "ckam-bench-baselines"
    try:
        if args.action == "pack":
            stamp = pack(args.folder, args.out, args.command, add=args.add, replace=args.replace)
            part = stamp["parts"][-1]
            print(f"baselines: {stamp['runs']} runs ({len(stamp['posteriors'])} posteriors × "
                  f"{len(stamp['configurations'])} sampler configurations × "
                  f"{len(stamp['seeds'])} seeds, "
                  f"{stamp['cpu_hours']:.3g} CPU-hours) -> {args.out}"
                  + (f"; this part {part['runs']} runs, {part['cpu_hours']:.3g} CPU-hours, "
                     f"{part['groups_already_there']} groups already there kept" if args.add else "")
                  + (f"; {part['replaced']['runs']} runs of {args.replace} replaced"
                     if "replaced" in part else "")
                  + (f"; {len(part['left_out'])} left out (show lists them)"
                     if part["left_out"] else ""))
        elif args.action == "missing":
            if not args.file.is_file():
                raise BaselinesError("FILE", f"{args.file} is not a file")
            stamp = read_stamp(args.file)
            names = missing(args.file)
            if not names:
                print(f"{args.file} has runs of every suite posterior")
            else:
                print(f"# {len(names)} suite posteriors have no runs in {args.file}; the "
                      "command that made it runs them with:")
                subset = f"'posteriordb.subset=[{','.join(names)}]'"
                command = re.sub(r"'?posteriordb\.subset=(\[[^]]*\]|\S*)'?\s*", "",
                                 str(stamp.get("command") or "ckam-bench -m experiment=posteriordb"))
                print(f"{command.strip()} {subset}")
        else:
            if not args.file.is_file():
                raise BaselinesError("FILE", f"{args.file} is not a file")
            try:
                print("\n".join(show(args.file)))
            except BaselinesError as exc:
                raise BaselinesError("FILE", str(exc).split(": ", 1)[1]) from None
    except BaselinesError as exc:
        print(f"{prog}: invalid argument: {exc}", file=sys.stderr)
        return 2
    return 0



if __name__ == "__main__":
    sys.exit(main())
