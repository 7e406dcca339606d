"""Out-of-tree samplers and targets (plugins), found through Python entry points.

A plugin is an installed Python package that declares, in its ``pyproject.toml``::

    [project.entry-points."ckam_bench.plugins"]
    my_samplers = "my_samplers.conf"

where ``my_samplers.conf`` is a package (a folder with an ``__init__.py``, its YAMLs shipped as
package data) laid out like ckam-bench's ``conf/``: ``sampler/<name>.yaml``,
``target/<name>.yaml`` (also ``kernel/``, ``schedule/``, ``experiment/``), each with a
``_target_`` naming the plugin's class. ``conf/config.yaml`` sets
``hydra.searchpath: ${ckam_plugins:}``, and this resolver returns ``pkg://<module>`` for every
such entry point, so ``ckam-bench sampler=<name>``, sweeps on any launcher and
``ckam-bench list`` see the plugin's options as soon as it is installed. ckam-bench's own
configs come first on Hydra's search path: a plugin adds options, it cannot replace a built-in
one of the same name. (Entry points are read from the installed metadata, which works for
editable installs too; Hydra's own ``hydra_plugins`` namespace scanning does not see
PEP 660 editable installs, which is why ckam-bench does not rely on it.)

The group is ``ckam_bench.plugins``, as documented when plugins were introduced; it is part of
the frozen public surface (docs/contract.md, tests/test_contract.py). For a while the group
was named ``ckam_bench.commands.plugins`` (after this module's move): packages registered under
that name are read too, after those of ``ckam_bench.plugins``, and each such package gets a
one-line note on stderr, once per process, saying which name to use.

ckam-bench's own Hydra plugin, the SLURM launcher of ``hydra/launcher=slurm``
(:mod:`ckam_bench.commands.slurm_groups`: ``runs_per_job`` runs per array element), is
registered the same way, by ckam-bench itself rather than by that scan: :func:`search_path`,
which Hydra calls (through ``${ckam_plugins:}``) before it composes anything, first calls
:func:`register_launcher`. (A ``hydra.searchpath=[...]`` given on the command line replaces
``${ckam_plugins:}``, and with it the plugins' configs and this launcher.)
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib import metadata

GROUP = "ckam_bench.plugins"
"""The entry-point group of plugin config packages (docs/contract.md)."""

OLD_GROUPS = ("ckam_bench.commands.plugins",)
"""Former names of :data:`GROUP`, still read, each package with a note (:func:`config_modules`)."""

_noted: set[tuple[str, str]] = set()  # (package, group) pairs already noted in this process


_READ: dict[str, tuple[tuple, list]] = {}  # group -> (the path's stamp, its entry points)


def _path_stamp() -> tuple:
    """Each ``sys.path`` folder with its modification time: installing or removing a
    distribution adds or removes a ``*.dist-info`` folder in one of them, which changes it."""
    stamp = []
    for entry in sys.path:
        try:
            stamp.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            stamp.append((entry, None))
    return tuple(stamp)


def _entry_points(group: str) -> list:
    """The group's entry points, read again only when :func:`_path_stamp` changed (reading every
    installed distribution's metadata costs ~14 ms, and Hydra asks before each composition)."""
    stamp = _path_stamp()
    known = _READ.get(group)
    if known is not None and known[0] == stamp:
        return list(known[1])
    try:
        found = list(metadata.entry_points(group=group))
    except Exception as exc:  # broken metadata of another package must not stop ckam-bench
        warnings.warn(f"ckam-bench: could not read the {group} entry points: {exc}")
        return []
    _READ[group] = (stamp, found)
    return list(found)


def _package(ep) -> str:
    """The distribution that declares ``ep`` (its entry-point name when unknown)."""
    dist = getattr(ep, "dist", None)
    return getattr(dist, "name", None) or ep.name


def _note_old_group(ep, group: str) -> None:
    """One line on stderr, once per process and package, naming the group to use."""
    key = (_package(ep), group)
    if key in _noted:
        return
    _noted.add(key)
    print(f"ckam-bench: note: plugin package {key[0]!r} registers its configs under the "
          f"entry-point group {group!r}; rename it to {GROUP!r} in its pyproject.toml "
          f"(the old name is still read)", file=sys.stderr)


def config_modules() -> list[str]:
    """The config packages of every installed plugin, sorted by entry-point name: the
    :data:`GROUP` entry points, and those of :data:`OLD_GROUPS` (after a :data:`GROUP` one of the
    same name; a package declared under both groups counts once, with no note)."""
    found: dict[tuple[str, int], str] = {}
    for order, group in enumerate((GROUP, *OLD_GROUPS)):
        for ep in _entry_points(group):
            module = ep.value.split(":")[0].strip()
            if not module or module in found.values():
                continue
            if order:
                _note_old_group(ep, group)
            found.setdefault((ep.name, order), module)
    return [found[key] for key in sorted(found)]


def register_launcher() -> None:
    """Make ``hydra/launcher=slurm`` composable and launchable (idempotent, cheap once Hydra
    is loaded): its config schema as ``hydra/launcher/submitit_slurm_groups`` in Hydra's
    ConfigStore, its class in Hydra's plugin registry under the ``hydra_plugins.`` name its
    ``_target_`` gives (Hydra instantiates launchers from that registry only)."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins
    from hydra.plugins.launcher import Launcher

    from ckam_bench.commands import slurm_groups

    ConfigStore.instance().store(group="hydra/launcher", name=slurm_groups.CONFIG_NAME,
                                 node=slurm_groups.SlurmGroupsConf, provider="ckam_bench")
    plugins = Plugins.instance()
    plugins.class_name_to_class[slurm_groups.TARGET] = slurm_groups.SlurmLauncher
    launchers = plugins.plugin_type_to_subclass_list.setdefault(Launcher, [])
    if slurm_groups.SlurmLauncher not in launchers:
        launchers.append(slurm_groups.SlurmLauncher)


def search_path() -> list[str]:
    """``hydra.searchpath`` entries (``pkg://<module>``) of the installed plugins
    (the ``${ckam_plugins:}`` resolver); registers ckam-bench's launcher first."""
    register_launcher()
    return [f"pkg://{module}" for module in config_modules()]
