"""Command-line overrides checked before Hydra runs anything: one line per mistake.

Hydra answers an unknown option (``sampler=ckma``) with the whole list of options, an unknown
key (``budget.second=5``) with a hint to add it with ``+``, and accepts ``+budget.second=5``
silently — a typo that then does nothing. :func:`problem` checks every override of a command
line against the composed config and returns one sentence naming the key (with the closest
existing name) or ``None``:

* ``GROUP=OPTION`` (also swept, ``GROUP=A,B``; ``GROUP@PKG=OPTION``): OPTION must exist on the
  config search path, plugins and ``hydra.searchpath=[...]`` from the command line included;
* ``KEY=VALUE``, ``+KEY=VALUE`` and ``++KEY=VALUE`` outside ``hydra.``: KEY must exist in the
  config composed with the command line's group choices (for a sweep, in every swept
  combination). A harness config lists every key its code takes, so adding one is
  always a typo.
"""

from __future__ import annotations

import difflib
import itertools

from omegaconf import DictConfig, ListConfig

MAX_COMPOSITIONS = 24  # swept group combinations tried when looking a key up


def _suggest(word: str, candidates) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" — did you mean '{close[0]}'?" if close else ""


def _keys(node, prefix: str = "") -> list[str]:
    out = []
    if isinstance(node, DictConfig):
        for k in node.keys():
            full = f"{prefix}{k}"
            out.append(full)
            try:
                child = node._get_node(k)
            except Exception:
                continue
            if isinstance(child, DictConfig):
                out.extend(_keys(child, full + "."))
    return out


def _exists(cfg: DictConfig, key: str) -> bool:
    node = cfg
    for part in key.split("."):
        if isinstance(node, DictConfig):
            if part not in node:
                return False
            node = node._get_node(part)
        elif isinstance(node, ListConfig):
            return part.isdigit() and int(part) < len(node)
        else:
            return False
    return True


def _values(override) -> list[str]:
    """The options an override chooses (a choice sweep gives several; others give none)."""
    if override.is_sweep_override():
        try:
            return [str(v) for v in override.sweep_string_iterator()]
        except Exception:  # range()/interval() sweeps: values, not options
            return []
    value = override.value()
    return [str(value)] if isinstance(value, (str, int, float)) else []


FLAGS = ("-m", "--multirun", "-r", "--run", "--resolve")
"""Hydra's options that take no argument."""


def flags_first(argv: list[str]) -> list[str]:
    """``argv`` with Hydra's argument-less options moved before the overrides, so that
    ``ckam-bench experiment=posteriordb -m sampler=nuts,mala`` sweeps like ``ckam-bench -m
    experiment=posteriordb sampler=nuts,mala`` (argparse stops reading overrides at an
    option and would refuse the ones after it)."""
    flags = [a for a in argv if a in FLAGS]
    return flags + [a for a in argv if a not in FLAGS]


def problem(args: list[str], config_name: str = "config",
            config_module: str = "ckam_bench.conf", command: str = "ckam-bench") -> str | None:
    """One sentence about the first override of ``args`` that names nothing, else ``None``."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    tokens = [a for a in args if not a.startswith("-")]
    try:
        overrides = OverridesParser.create().parse_overrides(tokens)
    except HydraException as exc:
        return f"cannot read the command line: {str(exc).splitlines()[0]}"
    searchpath = [o.input_line for o in overrides if o.key_or_group == "hydra.searchpath"]
    if any(o.key_or_group == "experiment" and "posteriordb" in _values(o) for o in overrides):
        from ckam_bench.posteriordb import PYMC_EXTRA, pymc_installed

        if not pymc_installed():  # its sweep's resolver would fail inside Hydra: said here
            return (f"experiment=posteriordb runs PyMC models (target=pymc), and PyMC is not "
                    f'installed: pip install "{PYMC_EXTRA}"')
    for o in overrides:  # read by a resolver while Hydra expands the sweep: checked here
        if o.key_or_group == "posteriordb.subset" and not (o.is_delete() or o.is_sweep_override()):
            from ckam_bench.posteriordb.subset import SubsetError, select

            try:
                select(o.value())
            except SubsetError as exc:
                return str(exc)
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module, version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        repo = loader.repository
        groups, keys = [], []
        for o in overrides:
            name = o.key_or_group
            if name.startswith("hydra.") or name.startswith("hydra/") or o.is_delete():
                continue
            if "." not in name and repo.group_exists(name):
                groups.append(o)
            else:
                keys.append(o)
        choices = {}
        for o in groups:
            options = loader.get_group_options(o.key_or_group, config_name=config_name,
                                               overrides=searchpath)
            values = _values(o)
            for value in values:
                if value not in options and value != "null":
                    return (f"unknown {o.key_or_group} '{value}'{_suggest(value, options)} "
                            f"({command} list {o.key_or_group} shows every option)")
            if values:
                choices[o.input_line.split("=", 1)[0]] = values
        if not keys:
            return None
        names = list(choices)
        combos = itertools.islice(itertools.product(*(choices[n] for n in names)),
                                  MAX_COMPOSITIONS)
        composed = []
        for combo in combos:
            chosen = [f"{n.lstrip('+~')}={v}" for n, v in zip(names, combo)]
            try:
                composed.append((chosen, compose(config_name, overrides=chosen + searchpath)))
            except Exception:  # Hydra says it when the job runs; nothing to add here
                continue
        if not composed:
            return None
        for o in keys:
            key = o.key_or_group
            lacking = [chosen for chosen, cfg in composed if not _exists(cfg, key)]
            if not lacking:
                continue
            if len(lacking) < len(composed):
                return (f"key '{key}' does not exist with {' '.join(lacking[0])}: sweep the "
                        "samplers that take it separately")
            composed_cfgs = [cfg for _, cfg in composed]
            known = sorted({k for cfg in composed_cfgs for k in _keys(cfg)
                            if not k.startswith("hydra")})
            parent = key.rsplit(".", 1)[0] if "." in key else ""
            siblings = [k for k in known if k.rsplit(".", 1)[0] == parent] if parent else \
                [k for k in known if "." not in k]
            return (f"unknown key '{key}'{_suggest(key, siblings or known)}"
                    + (" (keys cannot be added with '+': every key a run takes is in its config)"
                       if o.is_add() or o.is_force_add() else ""))
        return _swept_group_key(keys, groups, config_name, searchpath)
    return None


def _swept_group_key(keys, groups, config_name: str, searchpath: list[str]) -> str | None:
    """A sweep composes its primary config (the sweep folder's) with the swept groups at their
    defaults, where a plain ``KEY=VALUE`` into a swept group (``sampler=nutpie,nutpie_lowrank
    sampler.burn_in=250``) may name no key, and Hydra then fails with a trace of its own. Its
    force-add form ``++KEY=VALUE`` sets the key in every job and adds it to the primary config
    only: said in one line."""
    from hydra import compose

    swept = {o.key_or_group: o for o in groups if o.is_sweep_override()}
    plain = [o for o in keys if not (o.is_add() or o.is_force_add())
             and o.key_or_group.split(".", 1)[0] in swept]
    if not plain:
        return None
    fixed = [o.input_line for o in groups if not o.is_sweep_override()]
    try:
        primary = compose(config_name, overrides=fixed + searchpath)
    except Exception:  # Hydra says it when the sweep starts
        return None
    for o in plain:
        if not _exists(primary, o.key_or_group):
            group = swept[o.key_or_group.split(".", 1)[0]]
            return (f"key '{o.key_or_group}' is set in the swept group {group.input_line}, and a sweep "
                    f"first composes its config with that group's default, which has no such key: write "
                    f"++{o.input_line} (it sets the key in every job)")
    return None

