"""Run folders on disk: the file layout, and loading runs back into pandas.

(Everything that writes, replaces or removes files lives in :mod:`ckam_bench.engine.rundir`.)

A run folder (Hydra's run or sweep-job directory) holds

* ``.ckam-run.json`` — the marker that makes the folder this run's (its config hash);
* ``.hydra/`` — the config snapshot (``config.yaml``, ``overrides.yaml``, ``hydra.yaml``);
* ``trace.parquet`` — one tidy row per checkpoint (see :mod:`ckam_bench.engine.runner`);
* ``samples.parquet`` — a bounded, thinned sample of the collected states
  (``index`` = position in the collected chain, then ``x0 … x{d-1}``);
* ``diagnostics.parquet`` — per-iteration diagnostics (``iteration, phase, accepted,
  accept_prob, step_size, noise``): every iteration of the first ``diagnostics_head``
  iterations, then a thinned record;
* ``status.json`` — complete / empty / interrupted / failed / running, timing totals, versions, seed;
* ``resume.npz`` (and ``resume.prev.npz``, the checkpoint before) — everything needed to
  continue the run from its last checkpoint (sampler state, random generator states, clock,
  counters, metric accumulators, bounded stores, the trace rows so far, the config hash), as
  plain numpy arrays plus one JSON string: loaded with ``allow_pickle=False``, never unpickled;
* ``.lock`` — flock-ed while a process runs in the folder.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

TRACE = "trace.parquet"
SAMPLES = "samples.parquet"
DIAGNOSTICS = "diagnostics.parquet"
STATUS = "status.json"
RESUME = "resume.npz"
MARKER = ".ckam-run.json"
LOOPS = ("compiled", "python")
# A name used in file names of figures and tables (a target, a sampler): no path separators
SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def json_default(obj):
    """JSON encoder for numpy scalars and arrays."""
    if isinstance(obj, np.ndarray) and obj.ndim > 0:  # list columns from Sampler.trace_columns
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot store {type(obj).__name__} in JSON")


# ---------------------------------------------------------------------------- resume files
def flatten_state(obj, prefix: str = "") -> dict[str, np.ndarray]:
    """Flatten a (nested) state dataclass of arrays and numbers into ``{dotted.name: array}``."""
    if is_dataclass(obj):
        out = {}
        for f in fields(obj):
            out.update(flatten_state(getattr(obj, f.name), f"{prefix}{f.name}."))
        return out
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out.update(flatten_state(v, f"{prefix}{k}."))
        return out
    value = np.asarray(obj)
    if value.dtype == object:
        raise TypeError(f"state field {prefix[:-1]!r} is not numeric ({type(obj).__name__})")
    return {prefix[:-1]: value}


def restore_state(template, arrays: dict, prefix: str = ""):
    """Inverse of :func:`flatten_state`: a copy of ``template`` with the stored values."""
    if is_dataclass(template):
        values = {f.name: restore_state(getattr(template, f.name), arrays, f"{prefix}{f.name}.")
                  for f in fields(template)}
        return replace(template, **values)
    if isinstance(template, dict):
        return {k: restore_state(v, arrays, f"{prefix}{k}.") for k, v in template.items()}
    value = arrays[prefix[:-1]]
    if isinstance(template, np.ndarray):
        return np.array(value, dtype=value.dtype)
    if isinstance(template, (bool, np.bool_)):
        return bool(value)
    if isinstance(template, (int, np.integer)):
        return int(value)
    return float(value)


# Keys every resume header holds (checked before a resume state is trusted).
RESUME_KEYS = ("rng", "clock", "wall", "iterations", "n_collected", "n_density", "n_grad",
               "next_ck", "rows", "config_hash")


def read_resume(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    """Read a file written by :func:`ckam_bench.engine.rundir.write_resume` (``allow_pickle=False``;
    every array is read in full, so a truncated or corrupted file raises here)."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files if k != "__meta__"}
        meta = json.loads(str(data["__meta__"]))
    return arrays, meta


@dataclass
class Run:
    """A run folder read back from disk."""

    path: Path
    status: dict
    trace: pd.DataFrame
    samples: pd.DataFrame | None
    diagnostics: pd.DataFrame | None
    config: dict | None

    @property
    def run_id(self) -> str:
        return self.status.get("run_id", self.path.name)


def load_run(path: str | Path, with_samples: bool = True) -> Run:
    """Read one run folder. Missing optional files come back as None."""
    from omegaconf import OmegaConf

    path = Path(path)
    with open(path / STATUS) as fh:
        status = json.load(fh)
    trace = pd.read_parquet(path / TRACE) if (path / TRACE).exists() else pd.DataFrame()

    def optional(name):
        return pd.read_parquet(path / name) if with_samples and (path / name).exists() else None

    cfg_file = path / ".hydra" / "config.yaml"
    config = OmegaConf.to_container(OmegaConf.create(load_yaml(cfg_file))) if cfg_file.exists() else None
    return Run(path, status, trace, optional(SAMPLES), optional(DIAGNOSTICS), config)


_YAML_LOADER: list = []


def load_yaml(path: str | Path):
    """A YAML file as OmegaConf's ``OmegaConf.load`` reads it (its number resolver, no
    timestamps, duplicate keys refused), as plain containers, with libyaml's parser when
    PyYAML has it (a report reads two files per run: 20 ms each in pure Python)."""
    import yaml
    from omegaconf._utils import get_yaml_loader

    if not _YAML_LOADER:
        omegaconf_loader = get_yaml_loader()

        class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            yaml_implicit_resolvers = omegaconf_loader.yaml_implicit_resolvers

            def construct_mapping(self, node, deep=False):
                keys = set()
                for key_node, _ in node.value:
                    if key_node.tag == yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
                        if key_node.value in keys:
                            raise yaml.constructor.ConstructorError(
                                "while constructing a mapping", node.start_mark,
                                f"found duplicate key {key_node.value}", key_node.start_mark)
                        keys.add(key_node.value)
                return super().construct_mapping(node, deep=deep)

        _YAML_LOADER.append(Loader)
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_YAML_LOADER[0])


def find_runs(root: str | Path) -> list[Path]:
    """Every run folder (a folder holding ``status.json``) under ``root``, sorted."""
    root = Path(root)
    if (root / STATUS).exists():
        return [root]
    return sorted(p.parent for p in root.rglob(STATUS))


def load_traces(root: str | Path, states: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Concatenate the traces of every run under ``root`` (one row per checkpoint).

    Adds a ``status`` column; ``states`` keeps only runs in those states
    (e.g. ``("complete",)``). Unreadable runs are skipped with a warning.
    """
    import warnings

    frames = []
    for path in find_runs(root):
        try:
            run = load_run(path, with_samples=False)
        except Exception as exc:  # a damaged run must not hide the others
            warnings.warn(f"skipping unreadable run {path}: {exc}", stacklevel=2)
            continue
        if states is not None and run.status.get("state") not in states:
            continue
        frames.append(run.trace.assign(status=run.status.get("state"), path=str(path)))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


# ---------------------------------------------------------------------------- identity
def config_digest(plain: dict, loops: str) -> str:
    """sha256 of a resolved run config (Hydra's settings and the progress bar left out) and
    the loop mode: the config hash of a run (:func:`ckam_bench.commands.cli.config_hash`)."""
    plain = {k: v for k, v in plain.items() if k not in ("hydra", "progress")}
    budget = plain.get("budget")
    if isinstance(budget, dict) and not (budget.get("early_stop") or {}).get("enabled"):
        # off, it changes nothing: the hash a run had before budget.early_stop existed
        plain["budget"] = {k: v for k, v in budget.items() if k != "early_stop"}
    plain["__loops__"] = loops
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()


def without_inactive(flat: dict) -> dict:
    """Flat settings (``{dotted.key: value}``) without those of an option that is off: the
    ``budget.early_stop.*`` keys when ``budget.early_stop.enabled`` is not true, as
    :func:`config_digest` leaves them out, so a run made before the key existed and one made
    with it off are one configuration."""
    if flat.get("budget.early_stop.enabled") is True or isinstance(flat.get("budget.early_stop"), dict):
        return flat  # on (a status.json records the rule itself, and null when off)
    return {k: v for k, v in flat.items()
            if not (k == "budget.early_stop" or k.startswith("budget.early_stop."))}


IDENTITY_KEY = "target_identity"
"""The ``status.json`` key (and run marker key) of a run's :func:`target_identity`."""


def target_identity(target) -> dict[str, str]:
    """What identifies a run's target beyond its config text: the ``*sha256`` entries of its
    ``describe()``, each the sha256 of bytes (a PyMC model's ``source_sha256``, the bytes of the
    file that defines it, and ``data_sha256``, every array its density reads; a data target's
    ``data_sha256``, its file's bytes; ``parameters_sha256`` of parameters given as arrays),
    sorted by key. The config names a model or data *file*; an edited file keeps the config's
    text and so its hash, but changes this. ``{}`` for a target whose description has none
    (its settings are all in the config). Never a floating-point result; reading the digests
    compiles nothing (the target is built already for the run). A ``describe()`` that raises
    or returns no dict raises ``PluginError`` naming the class."""
    from ckam_bench.targets.base import PluginError

    cls = type(target)
    try:
        described = target.describe()
    except Exception as exc:  # a plugin's describe(): one line naming it, not a traceback
        raise PluginError(f"{cls.__module__}.{cls.__qualname__}.describe() raised "
                          f"{type(exc).__name__}: {exc}".splitlines()[0]) from None
    if not isinstance(described, dict):
        raise PluginError(f"{cls.__module__}.{cls.__qualname__}.describe() must return a dict, "
                          f"got {type(described).__name__}")
    return {str(k): str(v) for k, v in sorted(described.items(), key=lambda kv: str(kv[0]))
            if str(k).endswith("sha256") and isinstance(v, str)}


def identity_settings(status: dict) -> dict:
    """The parts of a stored run's identity that its config file does not hold, as flat
    settings (the report's :attr:`ckam_bench.report.aggregate.StoredRun.settings`): the loop mode
    (``loops``: compiled or Python, part of the config hash) and each :func:`target_identity`
    digest as ``target_identity.<key>``, so runs of an edited model or data file never pool
    with the runs before the edit. Runs that recorded neither give ``{}``."""
    flat = {}
    loops = (status.get("provenance") or {}).get("loops")
    if loops is not None:
        flat["loops"] = loops
    identity = status.get(IDENTITY_KEY)
    if isinstance(identity, dict):
        flat.update({f"{IDENTITY_KEY}.{k}": v for k, v in sorted(identity.items())})
    return flat


def status_problem(status: dict) -> str | None:
    """Why a ``status.json`` cannot describe a run (None when it can): its target and sampler
    must be names usable in file names, its seed an integer >= 0."""
    for key in ("target", "sampler"):
        value = status.get(key)
        if not (isinstance(value, str) and SAFE_NAME.match(value)):
            return f"status.json: {key} {value!r} is not a valid name"
    seed = status.get("seed")
    if not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
        return f"status.json: seed {seed!r} is not an integer >= 0"
    kernel = status.get("kernel")
    if kernel is not None and not (isinstance(kernel, str) and SAFE_NAME.match(kernel)):
        return f"status.json: kernel {kernel!r} is not a valid name"
    return None


def identity_problem(folder, status: dict, config) -> str | None:
    """Why a run folder's files disagree with its own identity (None when they agree).

    Every identity the folder holds must name the same run: the marker's config hash, the
    status's ``config_hash``, the hash in each parquet file's metadata, and the hash of the
    config snapshot (``.hydra/config.yaml``, resolved: ``config``), whose seed must also be
    the status's. Folders from before these records (none of them present) pass.
    """
    import pyarrow.parquet as pq

    folder = Path(folder)
    found = {}
    marker = folder / MARKER
    if marker.exists():
        try:
            found["the run marker"] = json.loads(marker.read_text())["config_hash"]
        except (OSError, ValueError, KeyError, TypeError):
            return f"{MARKER} is damaged: the folder cannot be identified"
    if status.get("config_hash") is not None:
        found["status.json"] = status["config_hash"]
    for name in (TRACE, SAMPLES, DIAGNOSTICS):
        if (folder / name).exists():
            try:
                value = (pq.read_schema(folder / name).metadata or {}).get(
                    b"ckam_bench.config_hash")
            except Exception:  # damage is reported by the loader itself
                continue
            if value is not None:
                found[name] = value.decode(errors="replace")
    if len(set(found.values())) > 1:
        names = sorted(found, key=lambda k: list(found).index(k))
        first = names[0]
        other = next(n for n in names if found[n] != found[first])
        return (f"its files belong to different runs: {other} has config hash "
                f"{found[other][:12]}, {first} {found[first][:12]} (a file copied from "
                "another run?)")
    if isinstance(config, dict) and found:
        theirs = next(iter(found.values()))
        if theirs not in {config_digest(config, loops) for loops in LOOPS}:
            return (f".hydra/config.yaml is not the config of this run (its hash is not "
                    f"{theirs[:12]}): the snapshot or the run's files come from another run")
    if isinstance(config, dict) and "seed" in config and config["seed"] != status.get("seed"):
        return f"status.json seed {status.get('seed')!r} is not the config's {config['seed']!r}"
    return None


def x_columns(names) -> list[str]:
    """The unconstrained coordinates ``x0 … x{d-1}`` among a samples table's column names, in
    order."""
    return sorted((c for c in names if c.startswith("x") and c[1:].isdigit()), key=lambda c: int(c[1:]))


def unconstrained_columns(path) -> list[str]:
    """``index`` and ``x0 … x{d-1}`` of a ``samples.parquet``, from its schema (a PyMC run
    stores its named variables too: reading these only reads half)."""
    import pyarrow.parquet as pq

    names = pq.read_schema(path).names
    return ["index"] * ("index" in names) + x_columns(names)
