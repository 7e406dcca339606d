"""The ``ckam-bench`` console script: ``--help``, ``--version`` and ``list`` answer without
importing the harness (Hydra's app, numba kernels, pandas), so they start fast; everything else
goes to :func:`ckam_bench.cli.main`."""

from __future__ import annotations

import sys


def answer_without_harness(argv: list[str]) -> bool:
    """Handle ``--help``, ``--version`` and ``list [GROUP ...]``; False for anything else."""
    if argv[:1] not in (["--help"], ["-h"], ["--version"], ["list"]):
        return False
    from ckam_bench import discovery

    if argv[:1] == ["list"]:
        sys.exit(discovery.list_command(argv[1:]))
    if argv[:1] == ["--version"]:
        discovery.print_version()
    else:
        discovery.print_help()
    return True


def main() -> None:
    if answer_without_harness(sys.argv[1:]):
        return
    from ckam_bench import cli

    cli.main()


if __name__ == "__main__":
    main()
