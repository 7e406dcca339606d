r"""The listing of every posteriordb posterior that ckam-bench ships
(``ckam_bench/posteriordb/database.json``), built from a posteriordb git mirror, and the docs table
made from it (issue 45 §4). A maintainer's step; nothing is downloaded at run time.

    python scripts/posteriordb_database.py build GIT_DIR [--commit COMMIT]
        # GIT_DIR: a git directory or checkout of github.com/stan-dev/posteriordb; reads
        # posterior_database/posteriors/*.json of COMMIT (default: the suite's POSTERIORDB_COMMIT)
        # and writes ckam_bench/posteriordb/database.json
    python scripts/posteriordb_database.py docs      # rewrite the table in docs/posteriordb.md
    python scripts/posteriordb_database.py --check   # exit 1 when docs/posteriordb.md's table differs

Each posterior keeps its name, model and data names, posteriordb's reference posterior name
(``reference_posterior_name``, or null), keywords, dimension (the sum of its ``dimensions``,
a list entry counting the product of its shape; posteriordb's own count of the posterior's
parameters) and whether posteriordb's reference draws are in the mirror
(``draws/draws/<reference>.json.zip`` listed in the tree and its blob present: ``"present"``;
listed but the blob absent from the mirror: ``"missing"``; no reference: null).

posteriordb's commits after the mirror's (v1.0, 2025-04-29) add references to posteriors of
v1.0 that had none (:data:`LATER_REFERENCES`). Those commits are not in the mirror; they were
read with the search tool's ``read_file`` of github.com/stan-dev/posteriordb (the reference's
``summary_statistics/mean_value/info/<name>.info.json``, whose ``added_date`` is given here, and
the listing of ``reference_posteriors/draws/draws/<name>.json.zip``). The script records them
as they were read and checks that the mirror's commit has no reference for them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "ckam_bench" / "posteriordb" / "database.json"
DOCS = ROOT / "docs" / "posteriordb.md"
REPOSITORY = "github.com/stan-dev/posteriordb"
PDB = "posterior_database"

# posterior name -> (added_date of its reference, commit of the mean_value info file read,
# commit at which draws/draws/<name>.json.zip was listed after v1.0, or None when not seen)
LATER_REFERENCES: dict[str, tuple[str, str, str | None]] = {
    "M0_data-M0_model": ("2026-03-06", "1c5bca5358d1d2c64e689edc38ab780663dd4876",
                         "31f650665813620cc7dc4438966541f5bc9edaea"),
    "Rate_1_data-Rate_1_model": ("2025-05-19", "92d844f67ead9280159019bdbb4dcce22be75c34",
                                 "6769d183c3232f81d928f7f95b54ac751f360c07"),
    "Rate_2_data-Rate_2_model": ("2025-08-29", "6769d183c3232f81d928f7f95b54ac751f360c07",
                                 "a04dde583217b8e47f2f06f9761c7866629b8f68"),
    "Rate_3_data-Rate_3_model": ("2025-05-19", "6769d183c3232f81d928f7f95b54ac751f360c07",
                                 "6769d183c3232f81d928f7f95b54ac751f360c07"),
    "Rate_4_data-Rate_4_model": ("2026-03-06", "31f650665813620cc7dc4438966541f5bc9edaea",
                                 "36e086dfaeb535cb3cac4dce668ab07515e00a54"),
    "Rate_5_data-Rate_5_model": ("2025-08-29", "6769d183c3232f81d928f7f95b54ac751f360c07",
                                 "101b9b0bcdd79a1dd4a43b46ec95250a6eac5e09"),
    # its draws file is listed only at 12e66d8 (2020, in the mirror's history, gone by v1.0)
    "dogs-dogs": ("2025-08-22", "6769d183c3232f81d928f7f95b54ac751f360c07", None),
    "dogs-dogs_hierarchical": ("2025-05-19", "5545a1dd07ae297c36edecbcd82aa49097b4c385",
                               "ae18b6d3e0ec42907cb6f3ced2aa15c5b54c8f13"),
    "nes_logit_data-nes_logit_model": ("2025-08-22", "6769d183c3232f81d928f7f95b54ac751f360c07",
                                       "e3c936ad3956797eacba53898c4879ee0eb40531"),
    "radon_all-radon_pooled": ("2025-08-29", "6769d183c3232f81d928f7f95b54ac751f360c07",
                               "a04dde583217b8e47f2f06f9761c7866629b8f68"),
    "radon_mn-radon_pooled": ("2025-08-29", "6769d183c3232f81d928f7f95b54ac751f360c07",
                              "1a1edf4276995b3f8d517c030e75d1f59d4df677"),
    "sesame_data-sesame_one_pred_a": ("2026-03-06", "1ca8c9370194bbd1f3c6b17a01ea962ede83ea8f",
                                      "31f650665813620cc7dc4438966541f5bc9edaea"),
    "wells_data-wells_dist": ("2025-08-22", "c2a4eb596861c29a9285970d28ad2475a299e0cf",
                              "fbee0436f59eda9151bbd244c773a732742b6143"),
    "wells_data-wells_dist100_model": ("2025-08-22", "6769d183c3232f81d928f7f95b54ac751f360c07",
                                       "081972050318e4f788b992f15356b183a3f623bb"),
    "wells_data-wells_dist100ars_model": ("2026-03-06", "31f650665813620cc7dc4438966541f5bc9edaea",
                                          "31f650665813620cc7dc4438966541f5bc9edaea"),
    "wells_data-wells_interaction_c_model": ("2026-03-06", "1c5bca5358d1d2c64e689edc38ab780663dd4876",
                                             "153ad5cbfdb9e401acd2d8645b0853082d0b93fb"),
}


def _git(git_dir: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True, check=check)


def _dimension(dimensions: dict) -> int:
    total = 0
    for value in dimensions.values():
        if isinstance(value, list):
            size = 1
            for n in value:
                size *= int(n)
            total += size
        else:
            total += int(value)
    return total


def build(git_dir: str, commit: str) -> dict:
    """The listing of posteriordb at ``commit`` of the git directory ``git_dir``."""
    commit = _git(git_dir, "rev-parse", f"{commit}^{{commit}}").stdout.strip()
    date = _git(git_dir, "show", "-s", "--format=%cs", commit).stdout.strip()
    tree = {}
    for line in _git(git_dir, "ls-tree", "-r", commit, PDB).stdout.splitlines():
        meta, path = line.split("\t", 1)
        tree[path] = meta.split()[2]
    licence = _git(git_dir, "show", f"{commit}:LICENCE.md").stdout.splitlines()
    if not licence or licence[0].strip() != "BSD 3-Clause License":
        raise ValueError(f"LICENCE.md at {commit} is not the BSD 3-Clause licence: read it again")
    notice = next(line.strip() for line in licence if line.startswith("Copyright"))
    rows = []
    prefix = f"{PDB}/posteriors/"
    for path in sorted(p for p in tree if p.startswith(prefix) and p.endswith(".json")):
        info = json.loads(_git(git_dir, "show", f"{commit}:{path}").stdout)
        name = info["name"]
        if path != f"{prefix}{name}.json":
            raise ValueError(f"{path}: its name is {name!r}")
        reference = info.get("reference_posterior_name")
        draws = None
        if reference:
            blob = tree.get(f"{PDB}/reference_posteriors/draws/draws/{reference}.json.zip")
            present = blob is not None and _git(git_dir, "cat-file", "-e", blob, check=False).returncode == 0
            draws = "present" if present else "missing"
        row = {"name": name, "model": info["model_name"], "data": info["data_name"],
               "reference": reference, "keywords": list(info.get("keywords") or []),
               "dim": _dimension(info.get("dimensions") or {}),
               "draws": draws}
        for kind, where in (("Stan program", f"{PDB}/models/stan/{row['model']}.stan"),
                            ("data", f"{PDB}/data/data/{row['data']}.json.zip")):
            if where not in tree:  # none at v1.0; the status would have to say so
                raise ValueError(f"{name}: no {kind} ({where}) at {commit}")
        later = LATER_REFERENCES.get(name)
        if later:
            if reference:
                raise ValueError(f"{name}: LATER_REFERENCES, but it has a reference at {commit}")
            added, summaries, later_draws = later
            row["later"] = {"added": added, "summaries": summaries, "draws": later_draws}
        rows.append(row)
    unknown = set(LATER_REFERENCES) - {r["name"] for r in rows}
    if unknown:
        raise ValueError(f"LATER_REFERENCES names posteriors not at {commit}: {sorted(unknown)}")
    return {
        "source": {"repository": REPOSITORY, "commit": commit, "date": date,
                   "files": f"{PDB}/posteriors/*.json, and the reference draws' presence in "
                            f"{PDB}/reference_posteriors/draws/draws/",
                   "licence": f"BSD-3-Clause (LICENCE.md at {commit[:7]}: {notice})",
                   "generated_by": "scripts/posteriordb_database.py build"},
        "later_references": {
            "note": "references posteriordb added after this commit to posteriors of it that had "
                    "none: added is the reference's added_date, summaries the commit of its "
                    "summary_statistics/mean_value/info file, draws the commit at which its "
                    "draws/draws file was listed after v1.0 (null: not seen); read from "
                    f"{REPOSITORY}'s later commits, not in the mirror",
            "commits": sorted({c for v in LATER_REFERENCES.values() for c in v[1:] if c})},
        "posteriors": rows,
    }


def write(listing: dict, path: Path = OUT) -> None:
    """One posterior per line (readable diffs), compact separators."""
    head = {k: v for k, v in listing.items() if k != "posteriors"}
    lines = [json.dumps(row, separators=(",", ":"), ensure_ascii=False) for row in listing["posteriors"]]
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    text += ',\n "posteriors": [\n' + ",\n".join(lines) + "\n ]\n}\n"
    json.loads(text)  # well formed
    path.write_text(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", choices=("build", "docs"), default=None)
    parser.add_argument("git_dir", nargs="?")
    parser.add_argument("--commit", default=None)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from ckam_bench.posteriordb import POSTERIORDB_COMMIT, database

    if args.what == "build":
        if not args.git_dir:
            parser.error("build needs GIT_DIR")
        listing = build(args.git_dir, args.commit or POSTERIORDB_COMMIT)
        write(listing)
        print(f"{OUT.relative_to(ROOT)}: {len(listing['posteriors'])} posteriors, "
              f"{OUT.stat().st_size} bytes")
        return 0
    text = DOCS.read_text()
    new = database.replace_docs_table(text)
    if args.check:
        if new != text:
            print(f"{DOCS.relative_to(ROOT)}: the database table differs; run "
                  "python scripts/posteriordb_database.py docs", file=sys.stderr)
            return 1
        return 0
    if args.what == "docs":
        DOCS.write_text(new)
        print(f"{DOCS.relative_to(ROOT)}: table written")
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
