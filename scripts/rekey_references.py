#!/usr/bin/env python
r"""Re-key certified references after a change of how reference ids are computed.

A reference is stored as ``<reference id>.npz`` (+ ``<reference id>.json``), the id being the
target's name and a hash of its ``describe()`` (docs/data.md). When the definition of an id
changes but the distribution does not (issue 43 §2: a PyMC target's ``data_sha256`` now hashes
every array its log density reads, not only its observed data), the references are the same
draws of the same distribution under a new name. This script renames them: for each certified
reference of a folder it rebuilds the target its certificate describes (``target=pymc
target.model=<model>`` for a PyMC model, else the config ``target=<name>``) and calls
:func:`ckam_bench.checks.reference.rekey_reference`, which copies the draws unchanged, writes
the new id, the new ``describe()``, ``previous_reference_id`` and the note into the certificate,
and refuses (nothing changed) a reference whose certificate describes another target or whose
log π at the probe points is not the rebuilt target's.

    python scripts/rekey_references.py                       # the shipped references
    python scripts/rekey_references.py ~/.cache/ckam-bench/references --dry-run

Prints one line per reference (``old -> new``, ``unchanged`` or ``refused: why``); exits 1 when
one was refused, else 0. Running it again changes nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import warnings
from pathlib import Path

import numpy as np

NOTE = ("{date}: the id's data_sha256 now hashes every array the log density reads (observed "
        "and pm.Data arrays, the model graph's constants such as index arrays), not only the "
        "observed data (issue 43 §2; same distribution, same draws)")


def build_target(described: dict):
    """The target a certificate's ``target`` (its ``describe()``) names, built from the package's
    configs: a PyMC model by its ``model``, any other by its config name."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.utils import instantiate

    if "model" in described:
        overrides = ["target=pymc", f"target.model={described['model']}"]
    else:
        overrides = [f"target={described['name']}"]
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="ckam_bench.conf", version_base=None):
        return instantiate(compose(config_name="config", overrides=overrides).target)


def main(argv=None) -> int:
    from ckam_bench.checks.reference import SHIPPED, rekey_reference

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, default=[SHIPPED],
                        help="folders of references (default: the shipped ones)")
    parser.add_argument("--dry-run", action="store_true", help="print the new ids, change nothing")
    parser.add_argument("--note", default=None, help="the certificates' 'rekeyed' note")
    args = parser.parse_args(argv)
    note = args.note or NOTE.format(date=datetime.date.today().isoformat())
    warnings.simplefilter("ignore")  # pytensor's BLAS notice; the lines below say what happened
    refused = 0
    for folder in args.folders:
        for path in sorted(Path(folder).expanduser().glob("*.npz")):
            if path.name.endswith(".provisional.npz"):
                continue
            try:
                with np.load(path, allow_pickle=False) as f:
                    certificate = json.loads(str(f["certificate"]))
                target = build_target(certificate["target"])
                new = target.reference_id()
                if new == certificate["reference_id"]:
                    print(f"{path.name}: unchanged")
                elif args.dry_run:
                    print(f"{path.stem} -> {new} (dry run)")
                else:
                    print(f"{path.stem} -> {rekey_reference(path, target, note).stem}")
            except Exception as exc:  # one line per reference, never a traceback
                refused += 1
                print(f"{path.name}: refused: {type(exc).__name__}: {exc}")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
