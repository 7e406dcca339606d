r"""Baselines that travel: stored suite runs of the peers, shipped as one compact file and ranked
with a user's runs in the posteriordb suite tables (issue 44 §1; docs/posteriordb.md,
"Baselines").

Evaluation counts (gradient and density evaluations until b² < 0.01) do not depend on the
machine, so the suite runs of the peers (nutpie, NumPyro, BlackJAX, MAMS, the harness's NUTS)
can be run once and shipped. :func:`pack` reads every suite run under a results folder
(:func:`ckam_bench.report.aggregate.load_results`; a suite run is one whose
:func:`ckam_bench.report.posteriordb_suite._posterior` is not None) and writes one parquet file
(zstd): one row per run and checkpoint with only the machine-independent columns the suite
tables and the ranking read (:data:`TRACE_COLUMNS`; ``sampler_seconds`` is kept for the record
but depends on the machine, and :func:`load` does not rank on it), and per run its posterior,
seed, sampler, label, full settings, state, flags, ``stopped_early`` and its pass/fail verdict
against the reference (:func:`ckam_bench.report.posteriordb_suite.run_passes`, computed when
packing because the draws are not shipped), plus the R-hat and MCSE across its group's seeds
(the report's "seeds disagree" check needs the draws too). The **stamp** (provenance) is the
file's key-value metadata (``ckam_bench.baselines``, JSON): installed versions of
:data:`PACKAGES`, the git commit, posteriordb's commit and each posterior's reference id
(:func:`reference_id`: posteriordb's reference name, or the harness's certified reference id,
plus the sha256 of the reference file's bytes), the budget (:func:`budget_of`), the command that
made the runs, the creation time, seeds, samplers, posteriors and the CPU-hours of the runs
(sampler CPU seconds plus warm-up seconds, from each status' totals).

:func:`load` gives the runs back as :class:`BaselineRun` (a
:class:`~ckam_bench.report.aggregate.StoredRun` with ``status["baseline"] = True``, its stored
settings and a config rebuilt from them); :func:`mismatches` lists, one line each, what differs
between the stamp and the user's situation (an installed peer version, the budget of the
user's suite runs, a reference id), and :func:`attach` puts the baselines on a
:class:`~ckam_bench.report.aggregate.Results` for the suite tables
(``ckam-bench-figures --baselines auto|none|PATH``).

Command line (:mod:`ckam_bench.report.baselines_cli`)::

    ckam-bench-baselines pack FOLDER OUT --command "ckam-bench -m ..." [--add [--replace SAMPLER]]
    ckam-bench-baselines show FILE
    ckam-bench-baselines missing FILE      # the sweep that makes the posteriors FILE lacks
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from ckam_bench.engine import provenance
from ckam_bench.report.aggregate import Group, Results, StoredRun, group_runs, load_results
from ckam_bench.report.posteriordb_suite import LABEL, MISMATCH_MARK, _posterior, is_baseline, run_passes

SHIPPED = Path(__file__).resolve().parent.parent / "posteriordb" / "baselines" / "baselines.parquet"
"""The shipped baselines (package data); absent until they are made (docs/posteriordb.md,
"Regenerating them")."""
STAMP_KEY = b"ckam_bench.baselines"
FORMAT = 1
PACKAGES = ("ckam-bench", "nutpie", "numpyro", "blackjax", "jax", "pymc", "pytensor", "numba", "walnutpie")
"""Installed versions recorded in the stamp and compared with the user's."""
TRACE_COLUMNS = ("checkpoint", "iterations", "n_collected", "n_density", "n_grad", "bias2",
                 "mean_error", "second_moment_error", "ess_min", "ess_per_grad",
                 "ess_per_density", "kl", "n_divergent", "moments_discarded", "sampler_seconds")
"""Per checkpoint: the machine-independent columns the suite tables and ranking read
(``kl``, ``n_divergent``, ``moments_discarded`` when the runs have them), and
``sampler_seconds``, kept for the record though it depends on the machine."""
MACHINE_DEPENDENT = ("sampler_seconds",)
STATUS_KEYS = ("reason", "kernel", "dim", "budget", "checkpoint_unit", "sampler_info",
               "target_identity", "metrics_info", "provenance")
"""The parts of a run's status kept (``provenance`` trimmed to ``loops``)."""
LIBRARY_PACKAGES = {"nutpie": ("nutpie",), "numpyro": ("numpyro", "jax"),
                    "blackjax": ("blackjax", "jax"), "walnutpie": ("walnutpie",)}
"""A peer's library (``sampler_info.library``) -> the packages its runs depend on beyond those
every run depends on (ckam-bench computes the metrics; pymc, pytensor and numba the model)."""
COMMON_PACKAGES = ("ckam-bench", "pymc", "pytensor", "numba")
BUDGET_KEYS = ("max_density", "max_grad", "checkpoint.on", "checkpoint.first",
               "checkpoint.per_decade", "early_stop")


class BaselinesError(ValueError):
    """Bad input, named by the argument it came from (``argument``)."""

    def __init__(self, argument: str, message: str):
        super().__init__(f"{argument}: {message}")
        self.argument = argument


# ---------------------------------------------------------------------------- the stamp
def installed_versions() -> dict[str, str | None]:
    """Installed version of each of :data:`PACKAGES` (None: not installed)."""
    return provenance.package_versions(PACKAGES)


def _git_commit() -> str | None:
    """The commit of the checkout ckam_bench is imported from, None when not a git checkout."""
    return provenance.source()["git_commit"]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@lru_cache(maxsize=None)
def _file_id(path: Path, _mtime_ns: int, _size: int) -> str:
    return _sha256(path)[:16]


def reference_id(name: str) -> str | None:
    """The id of suite posterior ``name``'s reference as it is here: ``posteriordb:<reference
    name>@<sha256 of the shipped npz>`` for posteriordb's draws, ``harness:<reference id>@<sha256
    of the certified file>`` for a reference the harness certified
    (:func:`ckam_bench.posteriordb.subset.reference_status`); None without one. From the file's
    bytes, never from floating-point results."""
    from ckam_bench.posteriordb import POSTERIORDB, registered
    from ckam_bench.posteriordb.subset import reference_status

    if name not in registered():
        return None
    status = reference_status(name)
    if not status.found:
        return None
    stat = status.path.stat()
    digest = _file_id(status.path, stat.st_mtime_ns, stat.st_size)
    label = registered()[name].reference if status.source == POSTERIORDB else status.path.stem
    return f"{status.source}:{label}@sha256:{digest}"


def budget_of(run: StoredRun) -> dict:
    """The budget a suite run ran under (:data:`BUDGET_KEYS`): evaluation caps and early-stop
    rule from its status' ``budget``, the checkpoint schedule from its config."""
    budget = run.status.get("budget") or {}
    checkpoint = (run.config or {}).get("checkpoint") or {}
    return {"max_density": budget.get("max_density"), "max_grad": budget.get("max_grad"),
            "checkpoint.on": checkpoint.get("on"), "checkpoint.first": checkpoint.get("first"),
            "checkpoint.per_decade": checkpoint.get("per_decade"),
            "early_stop": budget.get("early_stop")}


def _cpu_seconds(run: StoredRun) -> float:
    totals = run.status.get("totals") or {}
    return sum(float(totals.get(k) or 0.0) for k in ("sampler_cpu_seconds", "warmup_seconds"))


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


# ---------------------------------------------------------------------------- pack
def _suite_runs(results: Results) -> list[tuple[StoredRun, str]]:

    return [(run, name) for run in results.runs if (name := _posterior(run)) is not None]


def pack(results_folder, out_file, command: str, add: bool = False, replace: str | None = None) -> dict:
    """Write the suite runs under ``results_folder`` to ``out_file`` (module docstring);
    returns the stamp. A group (posterior × sampler configuration) is packed whole or not at
    all: one with fewer seeds than the others (a sweep stopped part-way) is left out and listed
    in the stamp's ``left_out``. ``add`` merges the groups into the existing baselines file
    ``out_file`` (a suite regenerated in parts: :func:`missing`): groups already there are kept
    as they are, the budget and the installed versions must be the file's, and each part's
    command, commit, time and CPU-hours are kept in the stamp's ``parts``. ``replace`` (with
    ``add``) names a sampler whose runs in ``out_file`` are dropped and made again from the
    folder (a configuration re-run after a fix): the folder must hold whole groups of it on
    every posterior the file had it on; the part records the sampler, the runs it dropped and
    their CPU-hours (from their last ``sampler_seconds``), which the stamp's total leaves out.
    Raises
    :class:`BaselinesError` when there is no suite run, the runs have several budgets, or
    ``out_file`` exists and is not a baselines file (never overwritten)."""
    from ckam_bench.report import ranking

    folder, out = Path(results_folder), Path(out_file)
    if not folder.is_dir():
        raise BaselinesError("FOLDER", f"{folder} is not a folder")
    if out.is_dir():
        raise BaselinesError("OUT", f"{out} is a folder")
    old_stamp, old = None, None
    if add and not out.is_file():
        raise BaselinesError("--add", f"{out} does not exist: pack the first part without --add")
    if replace is not None and not add:
        raise BaselinesError("--replace", "replaces a sampler's runs in an existing file: use it with --add")
    if out.exists():
        try:
            old_stamp = read_stamp(out)
        except BaselinesError:
            raise BaselinesError("OUT", f"{out} exists and is not a baselines file: not "
                                        "overwritten") from None
    if not str(command).strip():
        raise BaselinesError("--command", "empty")
    if add:
        _check_versions(old_stamp)
    results = load_results(folder)
    suite = _suite_runs(results)
    if not suite:
        raise BaselinesError("FOLDER", f"no complete posteriordb suite run under {folder}")
    budgets = {_json(budget_of(run)) for run, _ in suite}
    if add:
        budgets.add(_json(old_stamp.get("budget")))
    if len(budgets) > 1:
        raise BaselinesError("FOLDER", f"the suite runs under {folder} have {len(budgets)} "
                                       "budgets" + (f" with {out}'s" if add else "")
                                       + "; pack one budget at a time")
    in_suite = {run.run_id for run, _ in suite}
    groups = [g for g in results.groups() if {r.run_id for r in g.runs} <= in_suite]
    names_of = {run.run_id: name for run, name in suite}
    whole = set(old_stamp["seeds"]) if add else set().union(*(g.seeds for g in groups))
    old_runs = load(out)[0] if add else []
    dropped = [run for run in old_runs if run.sampler == replace]
    if replace is not None:
        if not dropped:
            raise BaselinesError("--replace", f"{out} has no run of sampler {replace!r}")
        def configurations(pairs):  # posterior -> how many configurations of the sampler
            counts = {}
            for name, key in set(pairs):
                counts[name] = counts.get(name, 0) + 1
            return counts

        have = configurations((_posterior(run), run.config_key) for run in dropped)
        new = configurations((names_of[g.runs[0].run_id], g.key) for g in groups
                             if g.runs[0].sampler == replace and set(g.seeds) == whole)
        lost = sorted(name for name, k in have.items() if new.get(name, 0) < k)
        if lost:
            raise BaselinesError("--replace", f"{folder} has fewer whole groups of {replace} than "
                                              f"{out} on {len(lost)} posteriors: {', '.join(lost[:5])}")
        old_runs = [run for run in old_runs if run.sampler != replace]
    present = {run.config_key for run in old_runs}
    # labels over every group the file will hold, so a part's labels are the whole file's
    label_of = {g.key: g.label for g in group_runs(
        old_runs + [r for g in groups if g.key not in present for r in g.runs])}
    labels, diagnostics, left_out, kept_old = {}, {}, [], 0
    for group in groups:
        name = names_of[group.runs[0].run_id]
        if group.key in present:
            kept_old += 1
            continue
        if set(group.seeds) != whole:
            left_out.append(f"{name} {group.label}: seeds {', '.join(map(str, group.seeds))} "
                            f"of {', '.join(map(str, sorted(whole)))} (a group is packed whole)")
            continue
        seeds = ranking.group_diagnostics(group)  # R-hat, MCSE across seeds: needs the draws
        for run in group.runs:
            labels[run.run_id] = label_of[group.key]
            diagnostics[run.run_id] = (seeds["rhat"], seeds["mcse"], group.seeds)
    if add:
        old = pd.read_parquet(out)
        old = old[old["sampler"] != replace] if replace is not None else old
        old["label"] = old["run_id"].map({r.run_id: label_of[r.config_key] for r in old_runs})
    if not labels:
        raise BaselinesError("FOLDER", f"no whole group to pack under {folder}"
                             + (f" that {out} lacks" if add else "")
                             + (f" ({len(left_out)} incomplete)" if left_out else ""))
    frames = []
    for run, name in suite:
        if run.run_id not in labels:  # a seed run twice: the group kept another folder
            continue
        trace = run.trace
        frame = pd.DataFrame({c: pd.to_numeric(trace[c], errors="coerce") if c in trace
                              else np.nan for c in TRACE_COLUMNS})
        status = {k: run.status.get(k) for k in STATUS_KEYS if k in run.status}
        status["provenance"] = {"loops": (run.status.get("provenance") or {}).get("loops")}
        moments = ((status.get("metrics_info") or {}).get("moments") or {})
        status["metrics_info"] = {"moments": {k: moments[k] for k in ("truth", "reference_id",
                                                                      "discard") if k in moments}}
        rhat, mcse, seeds = diagnostics[run.run_id]
        passes = run_passes(run, name)
        run_columns = {
            "run_id": run.run_id, "posterior": name, "model": run.config["target"]["model"],
            "target": run.target, "sampler": run.sampler, "seed": run.seed,
            "label": labels[run.run_id], "settings": _json(run.settings), "state": run.state,
            "flags": json.dumps({k: (run.status.get("flag_notes") or {}).get(k, k)
                                 for k in run.status.get("flags") or ()}),
            "stopped_early": _json(run.status.get("stopped_early")),
            "passes": "n/a" if passes is None else ("pass" if passes else "fail"),
            "seeds_rhat": rhat, "seeds_mcse": mcse, "group_seeds": json.dumps(seeds),
            "status": _json(status)}
        for key, value in run_columns.items():
            frame[key] = value
        frames.append(frame)
    table = pd.concat(([old] if add else []) + frames, ignore_index=True)
    optional = ("kl", "n_divergent", "moments_discarded")  # kept when some run has them
    table = table[[c for c in table.columns if c not in TRACE_COLUMNS]
                  + [c for c in TRACE_COLUMNS if c not in optional or table[c].notna().any()]]
    runs = [run for run, _ in suite if run.run_id in labels]
    names = sorted({names_of[run.run_id] for run in runs})
    commits = sorted({c for run in runs if (c := (run.status.get("provenance") or {}).get("git_commit"))})
    part = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": str(command),
            "git_commit": commits[0] if len(commits) == 1 else (commits or _git_commit()),
            "posteriors": names, "runs": len(runs),
            "cpu_hours": sum(_cpu_seconds(run) for run in runs) / 3600.0,
            "left_out": [f"{item.path.name}: {item.reason}" for item in results.skipped] + left_out,
            "groups_already_there": kept_old}
    if replace is not None:  # the CPU the dropped runs had cost, from their last sampler_seconds
        rows = pd.read_parquet(out, columns=["run_id", "sampler", "sampler_seconds"])
        rows = rows[rows["sampler"] == replace]
        spent = float(pd.to_numeric(rows["sampler_seconds"], errors="coerce").groupby(rows["run_id"]).max().sum())
        part["replaced"] = {"sampler": replace, "runs": len(dropped), "cpu_hours": spent / 3600.0}
    parts = (old_stamp.get("parts") or [_first_part(old_stamp)] if add else []) + [part]
    everything = sorted(set(table["posterior"]))
    stamp = {
        "format": FORMAT,
        "created": part["created"],
        "command": parts[0]["command"],
        "versions": installed_versions(),
        "git_commit": part["git_commit"] if len(parts) == 1 else [p["git_commit"] for p in parts],
        "posteriordb_commit": _posteriordb_commit(),
        "references": {**(old_stamp.get("references") or {} if add else {}),
                       **{name: reference_id(name) for name in names}},
        "budget": json.loads(budgets.pop()),
        "seeds": sorted(whole),
        "samplers": sorted(set(table["sampler"])),
        "configurations": sorted(set(table["label"])),
        "posteriors": everything,
        "runs": int(table["run_id"].nunique()),
        "cpu_hours": sum(p["cpu_hours"] - (p.get("replaced") or {}).get("cpu_hours", 0.0) for p in parts),
        "machine_dependent": list(MACHINE_DEPENDENT),
        "left_out": part["left_out"],
        "parts": parts,
    }
    _write(table, stamp, out)
    return stamp


def _first_part(stamp: dict) -> dict:
    """A stamp written before ``parts`` existed, as its one part."""
    return {k: stamp.get(k) for k in ("created", "command", "git_commit", "posteriors", "runs",
                                      "cpu_hours", "left_out")}


def _check_versions(stamp: dict) -> None:
    """``--add``: the installed versions must be the file's (its stamp states one set)."""
    here = installed_versions()
    for name, made in (stamp.get("versions") or {}).items():
        if here.get(name) != made:
            raise BaselinesError("--add", f"the baselines were made with {name} {made}, "
                                          f"{name} {here.get(name)} is installed: pack into a "
                                          "new file")


def missing(path) -> list[str]:
    """The suite's posteriors (:func:`ckam_bench.posteriordb.subset.suite`) that baselines file
    ``path`` has no runs of, in the suite's order: what a sweep regenerating the rest runs
    (``posteriordb.subset=[...]``)."""
    from ckam_bench.posteriordb.subset import suite

    stamp = read_stamp(path)
    have = set(stamp.get("posteriors") or ())
    return [p.name for p in suite() if p.name not in have]


def _posteriordb_commit() -> str:
    from ckam_bench.posteriordb import POSTERIORDB_COMMIT

    return POSTERIORDB_COMMIT


def _write(frame: pd.DataFrame, stamp: dict, out: Path) -> None:
    """Write ``frame`` with ``stamp`` in its metadata to ``out`` atomically (a temporary file
    in the same folder, then a rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           STAMP_KEY: json.dumps(stamp).encode()})
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.{os.getpid()}.tmp"
    try:
        pq.write_table(table, tmp, compression="zstd", compression_level=9)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()


# ---------------------------------------------------------------------------- load
@dataclass
class BaselineRun(StoredRun):
    """A stored run read from a baselines file: no draws, no diagnostics; its settings are the
    ones stored (``status["baseline"]`` is True; ``status["passes"]`` the verdict packed)."""

    stored_settings: dict = field(default_factory=dict)

    @property
    def settings(self) -> dict:
        return dict(self.stored_settings)


def _unflatten(flat: dict) -> dict:
    """The nested config of flat settings (group choices, loop mode and target identity left out)."""
    out: dict = {}
    for key, value in flat.items():
        if key.startswith(("choice.", "target_identity.")) or key in ("preset", "loops"):
            continue
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def read_stamp(path) -> dict:
    """The stamp of baselines file ``path``; :class:`BaselinesError` when it is not one."""
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_schema(path).metadata or {}
    except Exception as exc:  # not parquet, truncated, unreadable
        raise BaselinesError("baselines", f"{path} is not a parquet file ({exc})".splitlines()[0]) from None
    if STAMP_KEY not in metadata:
        raise BaselinesError("baselines", f"{path} is not a ckam-bench baselines file (no stamp)")
    return json.loads(metadata[STAMP_KEY])


def load(path) -> tuple[list[BaselineRun], dict]:
    """(runs, stamp) of baselines file ``path`` (module docstring): each run a
    :class:`BaselineRun` whose trace holds the packed columns, ``sampler_seconds`` (machine
    dependent) moved to ``packed_sampler_seconds`` and left NaN so nothing ranks on it."""
    path = Path(path)
    stamp = read_stamp(path)
    frame = pd.read_parquet(path)
    # Column work on the whole file at once, then one slice per run (a run's rows contiguous,
    # in the file's order of runs, by checkpoint): a suite's baselines are thousands of runs.
    codes, run_ids = pd.factorize(frame["run_id"])
    frame = frame.assign(_run=codes).sort_values(["_run", "checkpoint"], kind="stable")
    codes = frame["_run"].to_numpy()
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], len(frame)]
    firsts = frame.iloc[starts]
    cols = [c for c in TRACE_COLUMNS if c in frame.columns and c != "sampler_seconds"]
    traces = frame[cols].reset_index(drop=True)
    traces["packed_sampler_seconds"] = frame["sampler_seconds"].to_numpy()
    traces["sampler_seconds"] = np.nan  # machine-dependent: baseline rows rank on counts only
    runs, per_run = [], {k: [] for k in ("run_id", "target", "sampler", "kernel", "seed",
                                          "experiment", "state", "path")}
    for first in firsts.itertuples(index=False):
        status = json.loads(first.status)
        flags = json.loads(first.flags)
        passes = {"pass": True, "fail": False}.get(first.passes)
        status.update({"run_id": first.run_id, "state": first.state, "target": first.target,
                       "sampler": first.sampler, "seed": int(first.seed),
                       "flags": list(flags), "flag_notes": flags,
                       "stopped_early": json.loads(first.stopped_early),
                       "baseline": True, "passes": passes, "posterior": first.posterior,
                       "label": first.label,
                       "seeds_diagnostics": {"rhat": float(first.seeds_rhat),
                                             "mcse": float(first.seeds_mcse),
                                             "seeds": json.loads(first.group_seeds)}})
        settings = json.loads(first.settings)
        run = BaselineRun(path / f"{first.posterior}/{first.sampler}/seed{int(first.seed)}",
                          status, _unflatten(settings),
                          {"experiment": settings.get("preset"), "sampler": first.sampler,
                           "target": "pymc"}, None, has_samples=False, has_diagnostics=False,
                          stored_settings=settings)
        for key, values in per_run.items():
            values.append(str(run.path) if key == "path" else getattr(run, key))
        runs.append(run)
    lengths = ends - starts
    for key, values in per_run.items():
        traces[key] = np.repeat(np.array(values, dtype=object if key != "seed" else np.int64),
                                lengths)
    for run, start, end in zip(runs, starts, ends):
        run.trace = traces.iloc[start:end].reset_index(drop=True)
    return runs, stamp


# ---------------------------------------------------------------------------- mismatches
@dataclass(frozen=True)
class Difference:
    """One way the stamp differs from here: its line, and the baseline runs it concerns
    (``packages``: runs depending on one of them; ``posterior``: runs of it; neither: all)."""

    text: str
    packages: tuple[str, ...] = ()
    posterior: str | None = None

    def applies(self, run: StoredRun) -> bool:
        if self.posterior is not None:
            return (run.status.get("posterior") or _posterior_of(run)) == self.posterior
        return not self.packages or bool(set(self.packages) & set(run_packages(run)))


def _posterior_of(run) -> str | None:

    return _posterior(run)


def run_packages(run: StoredRun) -> tuple[str, ...]:
    """The packages of :data:`PACKAGES` a run's values depend on."""
    library = str((run.status.get("sampler_info") or {}).get("library") or "").split(" ")[0]
    return COMMON_PACKAGES + LIBRARY_PACKAGES.get(library.lower(), ())


def _budget_text(budget: dict, keys) -> str:
    def value(v):
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} {value(x)}" for k, x in v.items()) + "}"
        return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)

    return ", ".join(f"{k}={value(budget.get(k))}" for k in keys)


def differences(stamp: dict, runs) -> list[Difference]:
    """What differs between ``stamp`` and here, given the user's ``runs`` (their suite runs
    count): installed versions, their budget, their posteriors' reference ids."""

    out = []
    here = installed_versions()
    for name, made in (stamp.get("versions") or {}).items():
        now = here.get(name)
        if made is not None and now is not None and now != made:
            out.append(Difference(f"baselines stamp: {name} {now} is installed, the baselines were "
                                  f"made with {name} {made}: their rows that depend on it are "
                                  f"marked {MISMATCH_MARK}", (name,)))
    suite = [(run, name) for run in runs if not is_baseline(run)
             and (name := _posterior(run)) is not None]
    made = stamp.get("budget") or {}
    budgets = {_json(budget_of(run)): budget_of(run) for run, _ in suite}
    differing = [k for k in BUDGET_KEYS if any(_json(b.get(k)) != _json(made.get(k))
                                               for b in budgets.values())]
    if differing:
        yours = " | ".join(_budget_text(b, differing) for b in budgets.values())
        out.append(Difference(f"baselines stamp: the baselines ran {_budget_text(made, differing)}, "
                              f"your suite runs {yours}: every baseline row is marked "
                              f"{MISMATCH_MARK} (a cost measured under another budget or "
                              "checkpoint schedule is not comparable)"))
    references = stamp.get("references") or {}
    for name in sorted({name for _, name in suite} & set(references)):
        now = reference_id(name)
        if now != references[name]:
            out.append(Difference(f"baselines stamp: the reference of {name} is {now or 'missing'} "
                                  f"here, the baselines were measured against {references[name]}: "
                                  f"their rows on it are marked {MISMATCH_MARK}",
                                  posterior=name))
    return out


def mismatches(stamp: dict, runs) -> list[str]:
    """One line per difference between ``stamp`` and the user's situation (:func:`differences`):
    an installed version differing from the stamp's (a package not installed here is no
    difference: the baselines stand in for it), a budget or checkpoint schedule of the user's
    suite runs differing from the stamp's, a reference id differing from this suite's."""
    return [d.text for d in differences(stamp, runs)]


# ---------------------------------------------------------------------------- the report
@dataclass
class Attached:
    """Baselines attached to a :class:`~ckam_bench.report.aggregate.Results` (``results.baselines``)
    for the suite tables: their runs on the posteriors the results hold, the stamp, the
    differences, and a note when there are none to use."""

    path: Path | None
    runs: list[BaselineRun] = field(default_factory=list)
    stamp: dict = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)
    note: str = ""

    def groups(self) -> list[Group]:
        """The baseline runs grouped by configuration (never with a user's run), each group's
        seed diagnostics the packed ones."""
        groups = group_runs(self.runs)
        for group in groups:
            group.key = f"baseline:{group.key}"  # the ranking keys its values by group key
            stored = [r.status.get("seeds_diagnostics") or {} for r in group.runs]
            if stored and all(s.get("seeds") == group.seeds for s in stored):
                group._seed_diagnostics = {"rhat": stored[0]["rhat"], "mcse": stored[0]["mcse"]}
        return groups

    def marked(self, group) -> list[Difference]:
        """The differences that concern a baseline group's runs."""
        if not is_baseline(group):
            return []
        return [d for d in self.differences if any(d.applies(r) for r in group.runs)]

    def describe(self) -> str:
        """One note: what the baseline rows are."""
        s = self.stamp
        return (f"{LABEL}: stored suite runs of {self.path} (made {s.get('created')} by "
                f"`{s.get('command')}`; ckam-bench {(s.get('versions') or {}).get('ckam-bench')}, "
                f"seeds {', '.join(map(str, s.get('seeds') or []))}), on the posteriors of these "
                "results only; they carry evaluation counts and the pass/fail verdict computed "
                "when packed, no seconds, and are never merged with a run here")


def choose(choice) -> Path | None:
    """The baselines file ``--baselines`` names: ``none`` → None, ``auto`` → the shipped file
    (None when absent), else the path."""
    if choice is None or str(choice) == "none":
        return None
    if str(choice) == "auto":
        return SHIPPED if SHIPPED.is_file() else None
    return Path(choice)


def attach(results: Results, choice="auto") -> Attached | None:
    """Load the baselines ``choice`` names (:func:`choose`) onto ``results.baselines`` for the
    suite tables, keeping the runs on posteriors the results hold suite runs of; returns it
    (None: none asked for, or no suite run). ``auto`` with no shipped file gives an
    :class:`Attached` whose note says none are shipped yet; an unreadable shipped file, a note
    saying so. A named file that cannot be read raises :class:`BaselinesError`."""

    names = {n for run in results.runs if (n := _posterior(run)) is not None}
    if not names or choice is None or str(choice) == "none":
        results.baselines = None
        return None
    path = choose(choice)
    if path is None:
        attached = Attached(None, note=f"no baselines are shipped yet ({SHIPPED.name} is absent "
                                       "from ckam_bench/posteriordb/baselines/): only the runs of "
                                       "these results are ranked")
    else:
        try:
            runs, stamp = load(path)
        except BaselinesError:
            if str(choice) != "auto":
                raise
            attached = Attached(path, note=f"the shipped baselines {path} cannot be read: not used")
        else:
            kept = [r for r in runs if r.status.get("posterior") in names]
            attached = Attached(path, kept, stamp, differences(stamp, results.runs))
            lacking = sorted(names - {r.status.get("posterior") for r in kept})
            if not kept:
                attached.note = (f"the baselines {path} hold none of these posteriors "
                                 f"({len(stamp.get('posteriors') or [])} posteriors): not used")
            elif lacking:
                attached.note = (f"the baselines hold {len(names) - len(lacking)} of the "
                                 f"{len(names)} posteriors of these results; no baseline rows "
                                 f"for {', '.join(lacking[:8])}"
                                 + (f" and {len(lacking) - 8} more" if len(lacking) > 8 else "")
                                 + " (`ckam-bench-baselines missing` prints the sweep that "
                                   "makes them)")
    results.baselines = attached
    return attached
