"""The ``ckam-bench`` console script: ``--help``, ``--version`` and ``list`` are answered by
:mod:`ckam_bench.commands.discovery` without importing the harness (Hydra's app, numba kernels, pandas),
so they start fast; everything else goes to :func:`ckam_bench.commands.cli.main`."""

from __future__ import annotations

import sys


def main() -> None:
    from ckam_bench.commands import discovery

    if discovery.answer_without_harness(sys.argv[1:]):
        return
    from ckam_bench.commands import cli

    cli.main()


if __name__ == "__main__":
    main()
