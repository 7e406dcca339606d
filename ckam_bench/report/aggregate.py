r"""Stored runs back into memory, and seed aggregation on a common grid of the x-axis.

**Loading** (:func:`load_results`, the only I/O in this module) reads every run folder under a
results folder (a folder holding ``status.json`` or ``trace.parquet``) into a
:class:`StoredRun`: its status, its config snapshot (``.hydra/config.yaml``, resolved) and the
config-group choices Hydra made (``.hydra/hydra.yaml``: ``hydra.runtime.choices``), and its
trace. Samples and diagnostics are read on demand. A folder that cannot be used becomes a
:class:`Skipped` line (path and reason) instead of an error: a status that is not ckam-bench's,
a missing, empty or corrupt trace, a run id already loaded from another folder, or — unless
``include_incomplete`` — a run that did not finish (interrupted, failed or still running; with
the flag its trace is used up to its last checkpoint). A run that collected no sample (state
``empty``, or ``complete`` with ``n_collected`` 0 as older runs were marked) is never used: it
is skipped *flagged* ``no_samples`` (:attr:`Skipped.flags`), named by the ranking and the
report's Validity section. A damaged samples or diagnostics file leaves the run in use for its
trace, with a note.

**Grouping** (:func:`group_runs`): runs are grouped by their *full configuration* — every
leaf of the stored config except the seed (sampler and each hyperparameter, kernel, budget,
checkpoint schedule, target settings, start, metrics) plus the config-group choices (sampler,
target, preset) and the target's model and data files by their bytes (status.json's
``target_identity``) — so two runs share a group only when they differ in nothing but the seed.
Within a group each seed counts once: a seed run more than once keeps the run that went
furthest (most iterations, then the latest update) and the others are listed as duplicates.
Each group gets a label: its sampler name plus the settings that tell it apart from the other
groups of that sampler on its target (``"ckam [matern, 20 s]"``, ``"am [rate.value=0.01]"``),
so no legend merges budgets, kernels or presets.

**Aggregation** over seeds (pure functions of trace frames). Each run r has checkpoints
x_{r,1} < … < x_{r,K_r} with values y_{r,k}. On a grid g_1 < … < g_n (:func:`common_grid`:
``n`` points from the smallest to the largest x of all runs, geometric when ``log``) the run's
value is the step interpolant

    y_r(g) = y_{r,k(g)},   k(g) = max{k : x_{r,k} ≤ g},

defined only for x_{r,1} ≤ g ≤ x_{r,K_r}: before a run's first checkpoint nothing is known,
and after its last one the run has ended (NaN, left out). The grid also holds every run's last
x (x_{r,K_r} inside the grid's range), so each run's curve ends at its last checkpoint's value,
the value the tables show (a grid point between x_{r,K_r−1} and x_{r,K_r} shows y_{r,K_r−1};
without x_{r,K_r} in the grid the last value would appear only where a grid point happened to
equal it). At each grid point
(:func:`aggregate`) the finite values of the runs of a group give the median, the band
quantiles (numpy's default linear interpolation between order statistics, e.g. the 10 %
quantile of {1, 2, 3} is 1.2) and ``n_seeds``, the number of runs that contributed.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ckam_bench.engine import rundir, runstatus, store
from ckam_bench.engine.tally import WARNINGS
from ckam_bench.report.snapshot import STORED_RESOLVERS, _Config, _first_line, _resolved, _stored_values  # noqa: F401

RUN_KEYS = ("target", "sampler", "kernel", "seed")
IDENTITY_EXCLUDE = ("seed", "progress", "hydra")  # config keys that do not define a configuration
REQUIRED_TRACE = ("sampler_seconds", "iterations")
FLAG_MARK = "⚠"
SAMPLER_ORDER = ("rw", "am", "rbam", "gam", "kam", "ckam", "ckam_finite", "ckam_dim")


def sampler_order(names) -> list[str]:
    """The cKAM paper's order (rw am rbam gam kam ckam), then any other sampler alphabetically
    (the order of groups in every table and legend)."""
    names = set(names)
    return [s for s in SAMPLER_ORDER if s in names] + sorted(names - set(SAMPLER_ORDER))


# ---------------------------------------------------------------------------- loading
@dataclass
class Skipped:
    """A run folder (or file) that was not used, and why; for a run that went wrong (it
    collected nothing) its ``flags`` (``no_samples`` → sentence) and ``label`` (``rw seed 0``)."""

    path: Path
    reason: str
    target: str | None = None
    flags: dict = field(default_factory=dict)
    label: str = ""

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class StoredRun:
    """One usable run folder.

    ``config`` is the resolved composed config (a plain dict, None when the snapshot is
    missing), ``choices`` the option chosen in each config group (``{"sampler": "ckam",
    "target": "bimodal", "kernel": "matern", "experiment": None, …}``), ``trace`` one row per
    checkpoint with the label columns ``run_id, target, sampler, kernel, seed, experiment,
    state, path`` filled in from the status file.
    """

    path: Path
    status: dict
    config: dict | None
    choices: dict
    trace: pd.DataFrame
    has_samples: bool = True
    has_diagnostics: bool = True

    @property
    def run_id(self) -> str:
        return str(self.status.get("run_id") or self.path.name)

    @property
    def target(self) -> str:
        return str(self.status["target"])

    @property
    def sampler(self) -> str:
        return str(self.status["sampler"])

    @property
    def kernel(self) -> str:
        return str(self.status.get("kernel") or "none")

    @property
    def seed(self) -> int:
        return int(self.status.get("seed", -1))

    @property
    def experiment(self) -> str:
        return str(self.choices.get("experiment") or "none")

    @property
    def state(self) -> str:
        return str(self.status.get("state"))

    @property
    def sampler_seconds(self) -> float:
        """Sampler seconds at the last checkpoint."""
        return float(self.trace["sampler_seconds"].iloc[-1])

    @property
    def budget_seconds(self) -> float:
        """The configured budget (the last checkpoint's time when the status has none)."""
        budget = self.status.get("budget") or {}
        value = budget.get("seconds")
        return float(value) if value is not None else self.sampler_seconds

    @property
    def iterations(self) -> int:
        """Iterations at the last checkpoint."""
        return int(self.trace["iterations"].iloc[-1])

    @property
    def adaptation(self) -> str:
        """The sampler's kind of adaptation from ``status.json`` (``sampler_info``), or
        "unknown" for runs that did not record it."""
        info = self.status.get("sampler_info") or {}
        return str(info.get("adaptation") or "unknown")

    @property
    def flags(self) -> dict[str, str]:
        """The runner's flags that void this run's values (``status.json``: ``flags``,
        ``flag_notes``; a stuck chain, non-finite proposals or state): flag name → sentence,
        empty for a healthy run (see :meth:`ckam_bench.engine.runner.Runner.flags`)."""
        return {k: v for k, v in self._all_flags().items() if k not in WARNINGS}

    @property
    def warnings(self) -> dict[str, str]:
        """The runner's warning flags of this run (:data:`ckam_bench.engine.tally.WARNINGS`:
        divergences after the warm-up): its values stand, marked as suspect."""
        return {k: v for k, v in self._all_flags().items() if k in WARNINGS}

    def _all_flags(self) -> dict[str, str]:
        notes = self.status.get("flag_notes") or {}
        return {str(name): str(notes.get(name, name)) for name in self.status.get("flags") or ()}

    @property
    def settings(self) -> dict:
        """The run's full configuration as flat ``{dotted.key: value}``, seed left out.

        From the stored config when there is one (every leaf except ``seed``, ``progress`` and
        Hydra's own settings), plus the group choices ``choice.sampler``, ``choice.target``,
        ``choice.kernel``, ``preset``, the loop mode and the target's identity (model and data
        files by their bytes: :func:`ckam_bench.engine.store.identity_settings`); from
        ``status.json`` (sampler, kernel, budget) otherwise.
        """
        flat = {"choice.sampler": self.sampler, "choice.target": self.target,
                "choice.kernel": self.kernel, "preset": self.experiment,
                **store.identity_settings(self.status)}
        if self.config:
            node = {k: v for k, v in self.config.items() if k not in IDENTITY_EXCLUDE}
            flat.update(flatten(node))
        else:
            flat["kernel"] = self.kernel
            budget = self.status.get("budget") or {}
            flat.update({f"budget.{k}": v for k, v in budget.items()})
        return store.without_inactive(flat)

    @property
    def config_key(self) -> str:
        """A short hash of :attr:`settings`: equal for runs that differ only in the seed."""
        text = json.dumps(self.settings, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def samples(self, unconstrained: bool = False) -> pd.DataFrame | None:
        """The thinned collected states (``index, x0 … x{d-1}``, and a model's named variables
        unless ``unconstrained``), or None."""
        if not self.has_samples:
            return None
        path = self.path / store.SAMPLES  # (a PyMC run's x columns are half its file)
        return pd.read_parquet(path, columns=store.unconstrained_columns(path) if unconstrained else None)

    def sample_array(self) -> np.ndarray | None:
        """The stored states as an (n, d) array (columns x0 … x{d-1}), or None when none."""
        frame = self.samples(unconstrained=True)
        if frame is None or frame.empty:
            return None
        return frame[store.x_columns(frame.columns)].to_numpy(float)

    def diagnostics(self) -> pd.DataFrame | None:
        """Per-iteration diagnostics (``iteration, phase, …, step_size, noise``), or None."""
        if not self.has_diagnostics:
            return None
        return pd.read_parquet(self.path / store.DIAGNOSTICS)

    def build_target(self):
        """The run's target, rebuilt from its stored config with ``hydra.utils.instantiate``."""
        from hydra.utils import instantiate

        if not self.config or "target" not in self.config:
            raise ValueError(f"{self.path}: no stored target config")
        return instantiate(self.config["target"])


@dataclass
class Results:
    """Every usable run under a results folder, plus the ones that were skipped."""

    root: Path
    runs: list[StoredRun]
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def traces(self) -> pd.DataFrame:
        """All traces, one row per (run, checkpoint)."""
        if not self.runs:
            return pd.DataFrame(columns=["run_id", *RUN_KEYS])
        return pd.concat([r.trace for r in self.runs], ignore_index=True)

    def select(self, target: str | None = None, sampler: str | None = None,
               kernel: str | None = None) -> list[StoredRun]:
        """Runs matching every given label (None matches anything)."""
        return [r for r in self.runs
                if (target is None or r.target == target)
                and (sampler is None or r.sampler == sampler)
                and (kernel is None or r.kernel == kernel)]

    @property
    def targets(self) -> list[str]:
        return sorted({r.target for r in self.runs})

    def groups(self, target: str | None = None) -> list["Group"]:
        """The configuration groups (:func:`group_runs`) of every run, or of ``target``'s."""
        if not hasattr(self, "_groups"):
            self._groups = group_runs(self.runs)
        return [g for g in self._groups if target is None or g.target == target]

    def skipped_on(self, target: str) -> list[Skipped]:
        """Skipped runs whose status names ``target``."""
        return [s for s in self.skipped if s.target == target]


def load_results(root: str | Path, include_incomplete: bool = False,
                 targets: list[str] | None = None) -> Results:
    """Load every run under ``root`` (see the module docstring for what gets skipped).

    ``targets`` keeps only runs of those targets (others are left out silently). A run whose
    run id was already loaded from another folder (a copied folder) is skipped, so that no
    two folders are merged into one curve.
    """
    root = Path(root)
    folders = sorted({p.parent for name in (store.STATUS, store.TRACE) for p in root.rglob(name)})
    runs, skipped, seen = [], [], {}
    for folder in folders:
        result = _load_one(folder, include_incomplete, targets)
        if result is None:
            continue
        if isinstance(result, Skipped):
            skipped.append(result)
            continue
        run, notes = result
        if run.run_id in seen:
            skipped.append(Skipped(folder, f"duplicate run_id {run.run_id} "
                                           f"(already loaded from {seen[run.run_id]})",
                                   run.target))
            continue
        seen[run.run_id] = folder
        skipped.extend(notes)
        runs.append(run)
    return Results(root, runs, skipped)


def _parquet_ok(path: Path) -> str | None:
    """None when ``path`` has a readable parquet footer, else the reason."""
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(path)
    except Exception as exc:  # any damage: truncated, not parquet, unreadable
        return _first_line(exc)
    return None


def _load_one(folder: Path, include_incomplete: bool, targets: list[str] | None):
    """A (StoredRun, notes) pair, a Skipped, or None for a run of a target not asked for."""
    status_file = folder / store.STATUS
    if not status_file.exists():
        return Skipped(folder, "trace.parquet without status.json: not a run folder")
    try:
        status = json.loads(status_file.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Skipped(folder, f"status.json unreadable ({_first_line(exc)})")
    if not isinstance(status, dict) or not {"state", "target", "sampler"} <= set(status):
        return Skipped(folder, "status.json is not a ckam-bench run status "
                               "(needs state, target, sampler)")
    problem = store.status_problem(status)
    if problem:
        return Skipped(folder, problem)
    if targets is not None and status["target"] not in targets:
        return None
    target = str(status["target"])
    state = status["state"]
    if rundir.ended_empty(folder, status):  # collected nothing: no result, never used
        note = runstatus.stored_no_samples_note(status)
        label = f"{status['sampler']} seed {status['seed']}"
        return Skipped(folder, f"{FLAG_MARK} no_samples: {label}: {note}", target,
                       {"no_samples": note}, label)
    if state != "complete" and not include_incomplete:
        return Skipped(folder, f"run is {state}, not complete "
                               f"(--include-incomplete uses it up to its last checkpoint)", target)
    trace_file = folder / store.TRACE
    if not trace_file.exists():
        return Skipped(folder, "no trace.parquet", target)
    try:
        trace = pd.read_parquet(trace_file)
    except Exception as exc:  # corrupt parquet raises pyarrow's own error types
        return Skipped(folder, f"trace.parquet unreadable ({_first_line(exc)})", target)
    if trace.empty:
        return Skipped(folder, "trace.parquet has no checkpoints", target)
    missing = [c for c in REQUIRED_TRACE if c not in trace.columns]
    if missing:
        return Skipped(folder, f"trace.parquet lacks column(s) {', '.join(missing)}", target)
    if "n_collected" in trace.columns and not (pd.to_numeric(trace["n_collected"],
                                                             errors="coerce") > 0).any():
        return Skipped(folder, f"run is {state} and has collected no sample yet", target)
    notes = []
    config, choices = _load_hydra(folder, notes, status)
    unusable = [n for n in notes if n.reason.startswith(".hydra/config.yaml")]
    if unusable:
        return Skipped(folder, unusable[0].reason, target)
    problem = store.identity_problem(folder, status, config)
    unresolved = getattr(config, "unresolved", None) if problem else None
    if problem and unresolved and problem.startswith(".hydra/config.yaml is not the config"):
        key, (text, why) = next(iter(unresolved.items()))
        more = f" (and {len(unresolved) - 1} more)" if len(unresolved) > 1 else ""
        return Skipped(folder, f".hydra/config.yaml cannot be resolved from the run folder: "
                               f"{key} = {text} fails here ({why}){more}, so the run's config "
                               "hash cannot be checked", target)
    if problem:
        return Skipped(folder, problem, target)
    flags = {}
    for name, attr in ((store.SAMPLES, "has_samples"), (store.DIAGNOSTICS, "has_diagnostics")):
        path = folder / name
        problem = "missing" if not path.exists() else _parquet_ok(path)
        flags[attr] = problem is None
        if problem is not None and path.exists():
            notes.append(Skipped(folder, f"{name} unreadable ({problem}): "
                                         "run used for its trace only"))
    run = StoredRun(folder, status, config, choices, trace, **flags)
    sort_key = "checkpoint" if "checkpoint" in trace.columns else "sampler_seconds"
    run.trace = trace.sort_values(sort_key, kind="stable").reset_index(drop=True).assign(
        run_id=run.run_id, target=run.target, sampler=run.sampler, kernel=run.kernel,
        seed=run.seed, experiment=run.experiment, state=run.state, path=str(folder))
    return run, notes


def _load_hydra(folder: Path, notes: list, status: dict | None = None) -> tuple[dict | None, dict]:
    """The resolved config and the group choices from ``.hydra/`` (None / {} when absent),
    from the run folder alone (:mod:`ckam_bench.report.snapshot`); interpolations that still
    fail stay as text, listed in the result's ``unresolved`` (key -> (text, why))."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    config, choices = None, {}
    cfg_file = folder / ".hydra" / "config.yaml"
    if cfg_file.exists():
        try:
            cfg = OmegaConf.create(store.load_yaml(cfg_file))
            if not OmegaConf.is_dict(cfg):
                raise ValueError(f"not a mapping but a {type(cfg).__name__}")
            _stored_values(cfg, status)
            unresolved = {}
            try:
                config = _Config(OmegaConf.to_container(cfg, resolve=True))
            except OmegaConfBaseException:  # resolve what can be, key by key
                config = _Config({key: _resolved(cfg, key, unresolved, str(key)) for key in cfg})
            config.unresolved = unresolved
        except Exception as exc:  # YAML errors have several types
            notes.append(Skipped(folder, f".hydra/config.yaml unreadable ({_first_line(exc)}): "
                                         "the run cannot be identified"))
    hydra_file = folder / ".hydra" / "hydra.yaml"
    if hydra_file.exists():
        try:
            node = store.load_yaml(hydra_file)
            if not isinstance(node, dict):
                raise ValueError(f"not a mapping but a {type(node).__name__}")
            choices = dict(((node.get("hydra") or {}).get("runtime") or {}).get("choices") or {})
        except Exception as exc:  # YAML errors have several types
            notes.append(Skipped(folder, f".hydra/hydra.yaml unreadable ({_first_line(exc)})"))
    return config, choices


# ---------------------------------------------------------------------------- grouping
def flatten(node, prefix: str = "") -> dict:
    """A nested config (dicts and lists) as ``{dotted.key: leaf}``; lists stay whole leaves."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: node}


@dataclass
class Group:
    """Runs of one full configuration on one target, one run per seed.

    ``duplicates`` holds ``(dropped, kept)`` pairs: a seed run more than once counts once.
    ``label`` names the sampler plus what tells the group apart on its target.
    """

    target: str
    sampler: str
    key: str
    settings: dict
    runs: list[StoredRun]
    duplicates: list[tuple[StoredRun, StoredRun]] = field(default_factory=list)
    label: str = ""

    @property
    def seeds(self) -> list[int]:
        return sorted(r.seed for r in self.runs)

    @property
    def kernel(self) -> str:
        return self.runs[0].kernel

    @property
    def budget_seconds(self) -> float:
        return self.runs[0].budget_seconds

    @property
    def non_diminishing(self) -> bool:
        """True when the sampler reported non-diminishing adaptation (a paper preset that
        never stops adapting: its chains are at best approximately invariant)."""
        return any(r.adaptation == "non-diminishing" for r in self.runs)

    @property
    def flagged(self) -> list[StoredRun]:
        """The runs of the group the runner flagged (stuck chain, non-finite proposals or state)."""
        return [r for r in self.runs if r.flags]

    def flag_text(self) -> str:
        """``"⚠ stuck, nonfinite_proposals (2/3 seeds)"`` for a group with flagged runs, else ""."""
        flagged = self.flagged
        if not flagged:
            return ""
        names = list(dict.fromkeys(name for r in flagged for name in r.flags))
        return f"{FLAG_MARK} {', '.join(names)} ({len(flagged)}/{len(self.runs)} seeds)"

    def trace(self) -> pd.DataFrame:
        """The traces of the group's runs with a ``group`` column holding the label."""
        return pd.concat([r.trace for r in self.runs], ignore_index=True).assign(
            group=self.label)


def _furthest(runs: list[StoredRun]) -> StoredRun:
    return max(runs, key=lambda r: (r.iterations, str(r.status.get("updated") or ""),
                                    str(r.path)))


def _value_text(value) -> str:
    if isinstance(value, float) and value == round(value) and abs(value) < 1e6:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.4g}"
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def group_runs(runs: list[StoredRun]) -> list[Group]:
    """Group runs by target and full configuration (see the module docstring); sorted by
    target, then sampler in the paper's order, then label."""
    by_key: dict[tuple[str, str], list[StoredRun]] = {}
    for run in runs:
        by_key.setdefault((run.target, run.config_key), []).append(run)
    groups = []
    for (target, key), members in by_key.items():
        by_seed: dict[int, list[StoredRun]] = {}
        for run in members:
            by_seed.setdefault(run.seed, []).append(run)
        kept, duplicates = [], []
        for seed in sorted(by_seed):
            best = _furthest(by_seed[seed])
            kept.append(best)
            duplicates += [(r, best) for r in by_seed[seed] if r is not best]
        groups.append(Group(target, kept[0].sampler, key, kept[0].settings, kept, duplicates))
    for target in {g.target for g in groups}:
        _label(sorted((g for g in groups if g.target == target), key=lambda g: g.key))
    order = {name: i for i, name in enumerate(sampler_order(g.sampler for g in groups))}
    return sorted(groups, key=lambda g: (g.target, order[g.sampler], g.label))


def differing_keys(groups: list[Group], keys=None) -> list[str]:
    """The settings keys whose values are not the same in every group (sorted)."""
    keys = keys if keys is not None else sorted({k for g in groups for k in g.settings})
    return [k for k in keys
            if len({json.dumps(g.settings[k], sort_keys=True, default=str)
                    if k in g.settings else "<unset>" for g in groups}) > 1]


TAG_ORDER = ("choice.kernel", "budget.", "preset", "target.", "sampler.")


def _tag(key: str, value) -> str:
    """Short legend text for one setting: ``matern``, ``20 s``, ``paper_bimodal``, ``k=v``."""
    if key == "budget.seconds" and isinstance(value, (int, float)):
        return f"{value:g} s"
    if key in ("choice.kernel", "preset"):
        return str(value)
    return f"{key.removeprefix('sampler.')}={_value_text(value)}"


def _label(groups: list[Group], max_tags: int = 3) -> None:
    """Label each group: its sampler, plus the settings in which it differs from the other
    groups of the same sampler on the target (a kernel by its name, a budget in seconds, a
    preset by its name, other keys as ``key=value``); labels are unique."""
    for group in groups:
        same = [g for g in groups if g.sampler == group.sampler]
        keys = differing_keys(same)
        if "choice.kernel" in keys:  # the kernel's name stands for its parameters
            keys = [k for k in keys if not k.startswith(("kernel.", "sampler.kernel."))]
        keys.sort(key=lambda k: (next(i for i, p in enumerate(TAG_ORDER + ("",))
                                      if k.startswith(p)), k))
        tags = [_tag(k, group.settings.get(k, "unset")) for k in keys]
        if len(tags) > max_tags:
            tags = tags[:max_tags] + [f"+{len(tags) - max_tags} more"]
        group.label = f"{group.sampler} [{', '.join(tags)}]" if tags else group.sampler
        library = (group.runs[0].status.get("sampler_info") or {}).get("library")
        if library:  # a peer sampler (ckam_bench.samplers.peers): its library and version
            group.label += f" ({library})"
    seen: dict[str, int] = {}
    for group in groups:  # labels cut short can coincide: number them
        seen[group.label] = seen.get(group.label, 0) + 1
        if seen[group.label] > 1:
            group.label = f"{group.label} #{seen[group.label]}"


def grouping_notes(groups: list[Group], skipped: list[Skipped] = ()) -> list[str]:
    """What a figure or table of these groups leaves out or keeps apart, one sentence each:
    duplicated seeds, groups that differ in budget, runs that were skipped."""
    notes = []
    for g in groups:
        if g.duplicates:
            seeds = sorted({d.seed for d, _ in g.duplicates})
            notes.append(f"{g.label}: seed(s) {', '.join(map(str, seeds))} were run more than "
                         f"once; each counts once ({len(g.duplicates)} duplicate run(s) left "
                         "out, the furthest run kept)")
    budgets = [k for k in differing_keys(groups) if k.startswith("budget.")]
    if budgets:
        notes.append("mixed budgets (" + ", ".join(budgets) + ") are kept apart as separate "
                     "groups")
    if skipped:
        reasons = {}
        for item in skipped:
            reasons.setdefault(item.reason.split(" (")[0].split(":")[0], []).append(item)
        notes.append("left out: " + "; ".join(f"{len(v)} run(s): {k}" for k, v in
                                              sorted(reasons.items())))
    return notes


# ---------------------------------------------------------------------------- aggregation
def common_grid(traces: pd.DataFrame, x: str, n: int = 200, log: bool = True) -> np.ndarray:
    """``n`` points from the smallest to the largest finite value of column ``x``.

    Geometric spacing when ``log`` (non-positive values are ignored), linear otherwise. A
    single distinct value gives a one-point grid. Raises ValueError when there is no value.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    values = pd.to_numeric(traces[x], errors="coerce").to_numpy(float)
    values = values[np.isfinite(values)]
    if log:
        values = values[values > 0]
    if values.size == 0:
        kind = "positive finite" if log else "finite"
        raise ValueError(f"no {kind} values of {x!r} to build a grid on")
    lo, hi = float(values.min()), float(values.max())
    if lo == hi or n == 1:
        return np.array([hi])
    return np.geomspace(lo, hi, n) if log else np.linspace(lo, hi, n)


def step_values(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The value of the last checkpoint at or before each grid point (NaN outside [x₁, x_K]).

    ``x`` need not be sorted; of checkpoints at equal ``x`` the later one counts.
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    keep = np.isfinite(x)
    x, y = x[keep], y[keep]
    out = np.full(np.shape(grid), np.nan)
    if x.size == 0:
        return out
    k = np.searchsorted(x, grid, side="right") - 1
    inside = (k >= 0) & (grid <= x[-1])
    out[inside] = y[k[inside]]
    out[~np.isfinite(out)] = np.nan
    return out


def with_run_ends(grid: np.ndarray, traces: pd.DataFrame, x: str, unit: str = "run_id") -> np.ndarray:
    """``grid`` (sorted) plus the last finite ``x`` of every run (``unit``) that lies inside
    [grid₁, grid_n]: the step interpolant of a run shows its last value only at a grid point
    ≥ its last checkpoint, and the run has ended after it."""
    grid = np.sort(np.asarray(grid, float))
    if grid.size == 0 or x not in traces.columns or unit not in traces.columns:
        return grid
    xs = pd.to_numeric(traces[x], errors="coerce")
    ends = xs[np.isfinite(xs)].groupby(traces[unit]).max().to_numpy(float)
    ends = ends[(ends >= grid[0]) & (ends <= grid[-1])]
    return np.union1d(grid, ends)


def aggregate(traces: pd.DataFrame, x: str, y: str, by=("target", "sampler", "kernel"),
              band: tuple[float, float] = (10, 90), grid: np.ndarray | None = None,
              n: int = 200, log: bool = True, unit: str = "run_id") -> pd.DataFrame:
    """Median and band of ``y`` over the runs (``unit``) of each group, on a common grid.

    Returns a tidy frame with the ``by`` columns, ``x`` (the grid point), ``median``, ``lo``,
    ``hi`` (the ``band`` percentiles) and ``n_seeds`` (runs with a finite value there); grid
    points where no run of a group has a value are left out. ``grid`` defaults to
    :func:`common_grid` over all of ``traces`` (one grid shared by every group); every run's
    last x inside the grid's range is added to it (:func:`with_run_ends`), so no run's last
    checkpoint is dropped.
    """
    lo_q, hi_q = _check_band(band)
    by = list(by)
    columns = [*by, "x", "median", "lo", "hi", "n_seeds"]
    if grid is None:
        grid = common_grid(traces, x, n=n, log=log)
    grid = with_run_ends(np.asarray(grid, float), traces, x, unit)
    frames = []
    for keys, group in traces.groupby(by, sort=True, dropna=False):
        curves = np.array([step_values(run[x].to_numpy(float),
                                       pd.to_numeric(run[y], errors="coerce").to_numpy(float),
                                       grid)
                           for _, run in group.groupby(unit, sort=False)])
        count = np.isfinite(curves).sum(axis=0)
        have = count > 0
        if not have.any():
            continue
        q = np.nanpercentile(curves[:, have], [50.0, lo_q, hi_q], axis=0)
        keys = keys if isinstance(keys, tuple) else (keys,)
        frame = pd.DataFrame({"x": grid[have], "median": q[0], "lo": q[1], "hi": q[2],
                              "n_seeds": count[have]})
        for name, value in zip(by, keys):
            frame[name] = value
        frames.append(frame[columns])
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)


def final_rows(traces: pd.DataFrame, unit: str = "run_id") -> pd.DataFrame:
    """The last checkpoint of each run (by ``checkpoint``, else by sampler seconds)."""
    order = "checkpoint" if "checkpoint" in traces.columns else "sampler_seconds"
    ordered = traces.sort_values([unit, order], kind="stable")
    return ordered.groupby(unit, sort=False).tail(1).reset_index(drop=True)


def _check_band(band) -> tuple[float, float]:
    lo, hi = (float(b) for b in band)
    if not (0.0 <= lo < hi <= 100.0) or math.isnan(lo + hi):
        raise ValueError(f"band must be two percentiles 0 <= lo < hi <= 100, got {band}")
    return lo, hi
