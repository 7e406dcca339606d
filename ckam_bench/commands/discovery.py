"""What ckam-bench offers, from the command line: ``--help``, ``list`` and ``--version``.

``ckam-bench list`` reads the config groups on Hydra's search path (so out-of-tree plugins
appear with the built-in options) and prints every sampler, target, kernel, schedule and
experiment with a one-line description — the YAML's leading comment, else the first line of
its class's docstring — and what it can do: a target's dimension, gradient, exact draws and
noisy (pseudo-marginal) density; a sampler's need for a gradient (or for specific targets)
and whether it runs several chains. An entry that cannot be built is listed with its error
instead of stopping the list; one that needs an optional extra which is not installed (the
peer samplers, PyMC models, the posteriordb suite on the README's base install) says which:
``needs ckam-bench[peers]``.
"""

from __future__ import annotations

import inspect
import os
import re
import sys

GROUPS = ("sampler", "target", "kernel", "schedule", "experiment", "budget", "checkpoint",
          "metrics")
LISTS = (*GROUPS, "posteriordb")
"""What ``ckam-bench list`` shows: the config groups, then the posteriordb suite's posteriors
(each a ``target=pymc target.model=...`` run)."""

HELP = """\
ckam-bench {version} — budgeted benchmarks of adaptive MCMC samplers

Usage
  ckam-bench [GROUP=OPTION ...] [KEY=VALUE ...]      one run (Hydra overrides)
  ckam-bench -m GROUP=A,B KEY=1,2 ...                 a sweep (every combination)
  ckam-bench list [GROUP ...]                         every option of every config group
                                                      (or of the named ones), with what it can do;
                                                      list posteriordb: the suite's posteriors
  ckam-bench list posteriordb --all                   all of posteriordb's posteriors, each in the
                                                      suite (and whose reference) or why not yet
  ckam-bench --cfg job [overrides]                    print the composed run config
  ckam-bench --version | --help | --hydra-help

Config groups (ckam-bench list shows every option)
  sampler=rw|am|rbam|gam|kam|ckam|mala|hmc|nuts|...  the sampler and its hyperparameters
  target=bimodal|gmm2d|gmm32|logistic_german|...     the distribution
  kernel=matern|gaussian|linear                       the kernel of kam / ckam
  experiment=paper_bimodal|gad_neal|...               a paper's settings for every sampler
  budget.seconds=30 budget.clock=wall|cpu             sampler-time budget and its clock
  budget.max_iterations|max_density|max_grad=N        budgets in counted units
  checkpoint.on=seconds|iterations|density|grad       the axis checkpoints are placed on
  seed=0  start=[x,...]  progress=auto|true|false
  hydra.run.dir=DIR  hydra.sweep.dir=DIR              where runs are written (a run's folder again resumes it)
  hydra/launcher=joblib|slurm                         run a sweep on local cores or SLURM

Examples
  ckam-bench sampler=ckam target=bimodal budget.seconds=60
  ckam-bench -m sampler=rw,am,gam,kam,ckam target=gmm2d seed=0,1,2,3,4
  ckam-bench -m experiment=paper_bimodal sampler=rw,am,rbam,gam,kam,ckam seed=0,1,2,3,4

Other commands
  ckam-bench-figures RESULTS --out DIR     figures, tables, ranking and an HTML report
  ckam-bench-check sampler=... target=...  stationarity check (chains started from pi)
  ckam-bench-reference target=...          certified reference sample of a target
  ckam-bench-sbc sampler=... target=pymc target.model=...
                                           simulation-based calibration on a PyMC model
Each command's --help shows its keys, exit codes and documentation page.

Exit codes: 0 done or skipped, 1 failure while running, 2 invalid configuration or refused
folder, 130 interrupted (its last line is the command that resumes it: the same overrides with
hydra.run.dir= its folder; for a job of a sweep, the sweep's own -m command with its
hydra.sweep.dir=, which also runs the jobs that never started).
"""


def version() -> str:
    """The installed distribution's version (pyproject.toml), without importing the package."""
    from importlib import metadata

    try:
        return metadata.version("ckam-bench")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "0+unknown"


def print_help() -> None:
    print(HELP.format(version=version()), end="")


def print_version() -> None:
    print(f"ckam-bench {version()}")


# The other Hydra commands: what they do, how to call them, their exit codes, their page.
COMMANDS = {
    "ckam-bench-check": (
        "check", "the stationarity check: chains started from exact draws of the target must "
        "stay distributed as the target",
        ["ckam-bench-check sampler=S target=T [check.KEY=VALUE ...] [KEY=VALUE ...]",
         "ckam-bench-check -m sampler=A,B target=T ...       one check per combination"],
        "0 pass, 1 FAIL (or a failure while running; the verdict is printed and written to "
        "check.json; a check already done exits with its stored verdict's code), 2 invalid "
        "configuration or refused folder; a sweep exits with its highest code",
        "docs/validity.md", "hydra.run.dir / hydra.sweep.dir choose the folders; --hydra-help "
        "shows Hydra's flags"),
    "ckam-bench-reference": (
        "reference", "a certified reference sample of a target (posteriordb's criteria: "
        "split R-hat < 1.01, bulk and tail ESS >= 10 000)",
        ["ckam-bench-reference target=T [sampler=S] [KEY=VALUE ...]",
         "ckam-bench-reference -m target=T chain=0,1,2,3 ...  one chain per job, then",
         "ckam-bench-reference target=T combine=true            certify the stored chains"],
        "0 certified and stored (or one chain stored), 2 invalid configuration or refused "
        "folder, 3 not certified: nothing stored when a criterion fails; with looser "
        "thresholds than posteriordb's (rhat_max > 1.01 or ess_min < 10 000) a sample that "
        "meets them is stored as <id>.provisional.npz, never used as a reference, and the "
        "exit code is 3 too",
        "docs/validity.md", "out= chooses the reference folder (default: the user cache); "
        "--hydra-help shows Hydra's flags"),
    "ckam-bench-sbc": (
        "sbc", "simulation-based calibration of a sampler on a PyMC model",
        ["ckam-bench-sbc sampler=S target=pymc target.model=FILE.py:NAME [sbc.KEY=VALUE ...]"],
        "0 calibrated (pass), 1 not calibrated (FAIL) or a failure, 2 invalid configuration, a "
        "prior that cannot be drawn exactly or refused folder, 3 incomplete (simulations missing, "
        "no verdict), 130 interrupted (the resume command is printed)",
        "docs/sbc.md", "a new folder under outputs/sbc/; sbc.dir=FOLDER resumes an existing SBC; "
        "hydra/launcher=joblib|slurm runs the simulations in parallel"),
}


def _own_keys(config_name: str) -> list[str]:
    """The command's own keys with their defaults and comments: the lines of its root YAML
    after the defaults list and before the ``hydra:`` block."""
    from importlib import resources

    text = resources.files("ckam_bench.conf").joinpath(f"{config_name}.yaml").read_text()
    lines, keep = [], False
    for line in text.splitlines():
        if line.startswith("hydra:"):
            break
        if keep and line.strip():
            lines.append(line)
        if line.strip() == "- _self_":
            keep = True
    return lines


def command_help(prog: str, argv: list[str]) -> bool:
    """``--help`` / ``--version`` of ``ckam-bench-check``, ``-reference`` and ``-sbc``
    (printed without starting Hydra); False for anything else."""
    if argv[:1] == ["--version"]:
        print(f"{prog} (ckam-bench {version()})")
        return True
    if argv[:1] not in (["--help"], ["-h"]):
        return False
    config, what, usage, codes, page, folders = COMMANDS[prog]
    print(f"{prog} — {what}\n\nUsage")
    print("\n".join(f"  {line}" for line in usage))
    print(f"\nIts own keys (defaults, conf/{config}.yaml)")
    print("\n".join(f"  {line}" for line in _own_keys(config)))
    print("\nEvery group and key of ckam-bench applies too (ckam-bench --help, ckam-bench list);"
          f"\n{folders}.\n\nExit codes: {codes}.\nDocumentation: {page}")
    return True


def _first_line(text: str | None) -> str:
    return next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")


def _yaml_places(sources=()) -> list[tuple[str, str]]:
    """Where YAMLs are read from: the shipped and plugin config packages, then the config
    repository's ``sources`` (file paths), in search-path order."""
    from ckam_bench.commands.plugins import config_modules

    places = [("pkg", m) for m in ("ckam_bench.conf", *config_modules())]
    return places + [(s.scheme(), s.path) for s in sources if s.scheme() == "file"]


def _yaml_comment(group: str, name: str, places) -> str:
    """The leading comment of a shipped, plugin or search-path YAML (the config's own
    description); ``places``: :func:`_yaml_places`."""
    from importlib import resources
    from pathlib import Path

    text = None
    for scheme, where in places:
        try:
            base = resources.files(where) if scheme == "pkg" else Path(where)
            text = (base / group / f"{name}.yaml").read_text()
            break
        except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError, OSError):
            continue
    if text is None:
        return ""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("# ").rstrip())
    summary = re.sub(r"@package \S+\s*", "", " ".join(lines)).strip()
    first = re.split(r"(?<=[a-z0-9)])\. (?=[A-Z])", summary, maxsplit=1)[0]
    return first if len(first) <= 110 else first[:109].rsplit(" ", 1)[0] + " …"


def _describe(node) -> str:
    from hydra.utils import get_object

    target = node.get("_target_") if hasattr(node, "get") else None
    if not target:
        return ""
    try:
        return _first_line(inspect.getdoc(get_object(target)))
    except Exception:  # an entry that cannot be imported is still listed
        return ""


def _flat_targets():
    """Two one-dimensional standard normals: one without a gradient (samplers that need one
    decline it) and one with a gradient and a Hessian (only samplers made for specific targets
    decline it)."""
    import numpy as np

    from ckam_bench.targets.base import Target

    class Flat(Target):
        name = "no-gradient"

        def _log_density(self, x):
            return -0.5 * float(x @ x)

    class Smooth(Flat):
        name = "standard-normal"

        def _grad_log_density(self, x):
            return -np.asarray(x, float)

        def _hessian_log_density(self, x):
            return -np.eye(1)

    return Flat(1), Smooth(1)


def needs_extra(exc) -> str:
    """The optional extra an error asks for, from the one form every missing-extra message of
    the harness has (``pip install "ckam-bench[EXTRA]"``), as ``needs ckam-bench[EXTRA]``; ""
    for any other error."""
    found = re.search(r"ckam-bench\[(\w+)\]", str(exc))
    return f"needs ckam-bench[{found[1]}]" if found else ""


def _needs_pymc() -> str:
    """``needs ckam-bench[pymc]`` when PyMC is not installed (asked without importing it)."""
    from ckam_bench.posteriordb import PYMC_EXTRA, pymc_installed

    return "" if pymc_installed() else f"needs {PYMC_EXTRA}"


def _is_pymc_target(node) -> bool:
    return hasattr(node, "get") and node.get("_target_") == "ckam_bench.targets.pymc.PyMCModel"


def _experiment_needs(repo, name: str) -> str:
    """What an experiment needs that is not installed: PyMC when it runs ``target=pymc``."""
    loaded = repo.load_config(f"experiment/{name}")
    for entry in (loaded.defaults_list or []) if loaded is not None else []:
        group = str(getattr(entry, "group", "") or "").lstrip("/")
        value = getattr(entry, "value", None)
        if group == "target" and isinstance(value, str):
            target = repo.load_config(f"target/{value}")
            if target is not None and _is_pymc_target(target.config):
                return _needs_pymc()
    return ""


def _target_caps(node) -> str:
    from hydra.utils import instantiate

    t = instantiate(node)
    caps = [f"d={t.dim}", "gradient" if t.has_gradient else "no gradient"]
    if t.has_exact_sampler:
        caps.append("exact draws")
    if t.noisy:
        caps.append("noisy")
    return ", ".join(caps)


def _sampler_caps(cfg) -> str:
    from hydra.utils import instantiate

    s = instantiate(cfg.sampler)
    flat, smooth = _flat_targets()
    if not s.skip(flat)[0]:
        caps = ["gradient-free"]
    else:
        caps = ["specific targets only" if s.skip(smooth)[0] else "needs a gradient"]
    if getattr(s, "multi_chain", False):
        caps.append("multi-chain")
    if getattr(s, "kernel", None) is not None:
        caps.append("kernel")
    adaptation = s.describe().get("adaptation")
    if adaptation:
        caps.append(f"adaptation: {adaptation}")
    return ", ".join(caps)


class _NeedsHydra(Exception):
    """A group config whose defaults list :func:`group_node` does not resolve itself."""


def group_node(repo, group: str, name: str, _seen=()):
    """The config ``group/name`` as Hydra composes it into its group's package, read from the
    repository without composing the whole primary config (~0.1 s each). Resolves the two
    forms of defaults list entries the group configs use — another option of the same group
    (``- pt``: inheritance) and ``- /GROUP@KEY: OPTION`` (a config of another group placed
    under KEY) — merged in list order with ``_self_``; anything else (a ``@package`` header,
    ``optional``/``override``, interpolated or missing ``_self_``) raises :class:`_NeedsHydra`,
    and the caller composes. ``tests/test_discovery.py`` holds every shipped sampler and
    kernel to Hydra's own composition."""
    from hydra.core.default_element import ConfigDefault, GroupDefault
    from omegaconf import OmegaConf

    loaded = repo.load_config(f"{group}/{name}")
    if loaded is None or loaded.header.get("package") is not None or (group, name) in _seen:
        raise _NeedsHydra(f"{group}/{name}")
    node = OmegaConf.create(OmegaConf.to_container(loaded.config, resolve=False))
    defaults = list(loaded.defaults_list or [])
    if not defaults:
        return node
    seen = (*_seen, (group, name))
    merged = OmegaConf.create({})
    for entry in defaults:
        plain = not entry.optional and not entry.deleted and entry.package is None
        if type(entry) is ConfigDefault and entry.path == "_self_" and plain:
            merged.merge_with(node)
            node = None
        elif type(entry) is ConfigDefault and re.fullmatch(r"\w+", entry.path) and plain:
            merged.merge_with(group_node(repo, group, entry.path, seen))
        elif (type(entry) is GroupDefault and not entry.optional and not entry.deleted and not entry.override
              and re.fullmatch(r"/\w+", entry.group) and isinstance(entry.value, str)
              and re.fullmatch(r"\w+", entry.value) and re.fullmatch(r"\w+", entry.package or "")):
            merged.merge_with({entry.package: group_node(repo, entry.group[1:], entry.value, seen)})
        else:
            raise _NeedsHydra(f"{group}/{name}: defaults entry {entry}")
    if node is not None:  # no _self_ in the list
        raise _NeedsHydra(f"{group}/{name}: no _self_")
    return merged


def _with_option(base, repo, group: str, name: str, overrides):
    """The primary config with ``group=name``: ``base`` (composed once) with the option's node
    put in its place (:func:`group_node`), else composed by Hydra."""
    from hydra import compose
    from omegaconf import open_dict

    try:
        if base is None:
            raise _NeedsHydra("no base config")
        node = group_node(repo, group, name)
    except _NeedsHydra:
        extra = ["sampler=kam"] if group == "kernel" else []
        return compose("config", overrides=[*extra, f"{group}={name}", *overrides])
    with open_dict(base):
        base[group] = node
    return base


def entries(group: str, overrides=()) -> list[tuple[str, str, str]]:
    """(option, description, capabilities) for every option of a config group; ``overrides``
    may carry ``hydra.searchpath=[...]`` (options found there are listed too)."""
    from hydra import compose
    from hydra.core.global_hydra import GlobalHydra

    loader = GlobalHydra.instance().config_loader()
    rows = []
    # The repository with the command line's search path (target configs have no defaults
    # list: they are read from it, not composed).
    _, repo = loader._parse_overrides_and_create_caching_repo("config", list(overrides))
    # config_name: the primary config's hydra.searchpath (installed plugins) is searched too.
    searchpath = [o for o in overrides if o.startswith("hydra.searchpath=")]
    base = None
    if group in ("sampler", "kernel"):
        try:  # composed once; each option's node is put in its place (_with_option)
            base = compose("config", overrides=["sampler=kam", *searchpath])
        except Exception:  # each option is composed by Hydra, and its row shows the error
            base = None
    places = _yaml_places(repo.get_sources())
    for name in loader.get_group_options(group, config_name="config", overrides=searchpath):
        desc, caps = _yaml_comment(group, name, places), ""
        try:
            if group == "target":
                node = repo.load_config(f"target/{name}").config
                node.pop("defaults", None)
                desc = desc or _describe(node)
                caps = _target_caps(node) if node.get("model", "") is not None else (
                    "any PyMC model: target.model=PACKAGE.MODULE:FUNCTION or FILE.py:FUNCTION; "
                    "ckam-bench list posteriordb lists the suite's")
                if _is_pymc_target(node) and _needs_pymc():
                    caps = f"{caps}; {_needs_pymc()}"
            elif group == "experiment":
                caps = _experiment_needs(repo, name)
            elif group == "sampler":
                cfg = _with_option(base, repo, group, name, searchpath)
                desc = desc or _describe(cfg[group])
                caps = _sampler_caps(cfg)
            elif group == "kernel":
                cfg = _with_option(base, repo, group, name, searchpath)
                desc = desc or _describe(cfg.kernel)
        except Exception as exc:  # show the problem in its row, go on with the others
            caps = needs_extra(exc) or \
                f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        rows.append((name, desc, caps))
    return rows


def _posteriordb_row(posterior) -> tuple[str, str, str]:
    """(name, note, capabilities: dims, character, whose reference it is, the command, and
    ``needs ckam-bench[pymc]`` when PyMC is not installed: every posterior is a PyMC model)."""
    from ckam_bench.posteriordb.subset import reference_status

    p = posterior
    caps = (f"d={p.dim}, {p.character}, {reference_status(p.name).describe()}; "
            f"target=pymc target.model={p.model}")
    needs = _needs_pymc()
    return p.name, p.note, f"{caps}; {needs}" if needs else caps


def posteriordb_rows(overrides=()) -> list[tuple[str, str, str]]:
    """A row (:func:`_posteriordb_row`) for every posterior of the suite, or of the
    ``posteriordb.subset=[...]`` among ``overrides``."""
    from ckam_bench.posteriordb.subset import select

    return [_posteriordb_row(p) for p in select(_subset(overrides))]


def posteriordb_unreferenced(overrides=()) -> list[tuple[str, str, str]]:
    """The registered posteriors without a reference (never run by default), each with why;
    none when ``overrides`` choose a subset (that list shows what the subset chooses). One whose
    reference cannot be looked for here (PyMC not installed) is listed with the suite, marked."""
    from ckam_bench.posteriordb import registered
    from ckam_bench.posteriordb.subset import reference_status

    if _subset(overrides) is not None:
        return []
    return [_posteriordb_row(p) for p in registered().values()
            if not (status := reference_status(p.name)).found and not status.needs]


def _subset(overrides):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    subset = None
    for o in OverridesParser.create().parse_overrides(list(overrides)):
        if o.key_or_group == "posteriordb.subset":
            subset = o.value()
    return subset


def _print_rows(title: str, rows, out) -> None:
    print(f"{title} ({len(rows)})", file=out)
    width = max((len(r[0]) for r in rows), default=0)
    for name, desc, caps in rows:
        tail = f"  [{caps}]" if caps else ""
        print(f"  {name:<{width}}  {desc}{tail}", file=out)
    print(file=out)


def print_list(groups=LISTS, out=sys.stdout, overrides=()) -> None:
    import warnings

    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GlobalHydra.instance().clear()
        with initialize_config_module("ckam_bench.conf", version_base="1.3"):
            for group in groups:
                rows = (posteriordb_rows(overrides) if group == "posteriordb"
                        else entries(group, [o for o in overrides if not o.startswith("posteriordb.")]))
                _print_rows(group, rows, out)
                unreferenced = posteriordb_unreferenced(overrides) if group == "posteriordb" else []
                if unreferenced:
                    _print_rows("posteriordb without a reference, not run by default", unreferenced, out)


def print_database(out=None) -> None:
    """``ckam-bench list posteriordb --all``: every posterior of posteriordb, by status in the
    suite (:mod:`ckam_bench.posteriordb.database`), then the count per status (to ``out``,
    default the current ``sys.stdout``)."""
    from ckam_bench.posteriordb import database

    out = sys.stdout if out is None else out
    for title, rows in database.sections():
        _print_rows(title, rows, out)
    print(f"posteriordb: {database.summary()}", file=out)


def _database_refusal(groups, overrides) -> str:
    """Why ``--all`` cannot be read on this command line ("" when it can)."""
    if groups != ["posteriordb"]:
        return "--all lists all of posteriordb's posteriors: ckam-bench list posteriordb --all"
    if any(o.startswith("posteriordb.") for o in overrides):
        return "--all lists every posterior of posteriordb and takes no posteriordb.subset"
    return ""


def list_command(args: list[str]) -> int:
    """``ckam-bench list [GROUP ...] [hydra.searchpath=[...]]`` and ``ckam-bench list
    posteriordb --all``: 0, or 2 for an unknown group or flag."""
    flags = [a for a in args if a.startswith("--")]
    args = [a for a in args if not a.startswith("--")]
    overrides = [a for a in args if "=" in a]
    groups = [a for a in args if "=" not in a] or list(LISTS)
    if flags:
        why = (f"unknown flag '{[f for f in flags if f != '--all'][0]}' (list takes --all, with posteriordb)"
               if set(flags) != {"--all"} else _database_refusal(groups, overrides))
        if why:
            print(f"ckam-bench: {why}", file=sys.stderr)
            return 2
        try:
            print_database()
            sys.stdout.flush()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    for group in groups:
        if group not in LISTS:
            import difflib

            close = difflib.get_close_matches(group, LISTS, n=1)
            hint = f" — did you mean '{close[0]}'?" if close else ""
            print(f"ckam-bench: unknown config group '{group}'{hint} "
                  f"(groups: {', '.join(LISTS)})", file=sys.stderr)
            return 2
    from ckam_bench.posteriordb.subset import SubsetError

    try:
        print_list(groups, overrides=overrides)
        sys.stdout.flush()
    except BrokenPipeError:  # `ckam-bench list | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except SubsetError as exc:
        print(f"ckam-bench: {exc}", file=sys.stderr)
        return 2
    return 0


def answer_without_harness(argv: list[str]) -> bool:
    """Handle ``--help``, ``--version`` and ``list [GROUP ...]``; False for anything else."""
    if argv[:1] not in (["--help"], ["-h"], ["--version"], ["list"]):
        return False
    if argv[:1] == ["list"]:
        sys.exit(list_command(argv[1:]))
    if argv[:1] == ["--version"]:
        print_version()
    else:
        print_help()
    return True
