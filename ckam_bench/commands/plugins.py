"""Out-of-tree samplers and targets (plugins), found through Python entry points.

A plugin is an installed Python package that declares, in its ``pyproject.toml``::

    [project.entry-points."ckam_bench.commands.plugins"]
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

ckam-bench's own Hydra plugin, the SLURM launcher of ``hydra/launcher=slurm``
(:mod:`ckam_bench.commands.slurm_groups`: ``runs_per_job`` runs per array element), is
registered the same way, by ckam-bench itself rather than by that scan: :func:`search_path`,
which Hydra calls (through ``${ckam_plugins:}``) before it composes anything, first calls
:func:`register_launcher`. (A ``hydra.searchpath=[...]`` given on the command line replaces
``${ckam_plugins:}``, and with it the plugins' configs and this launcher.)
"""

from __future__ import annotations

import warnings
from importlib import metadata

GROUP = "ckam_bench.commands.plugins"


def config_modules() -> list[str]:
    """The config packages of every installed plugin, sorted by entry-point name."""
    try:
        eps = metadata.entry_points(group=GROUP)
    except Exception as exc:  # broken metadata of another package must not stop ckam-bench
        warnings.warn(f"ckam-bench: could not read the {GROUP} entry points: {exc}")
        return []
    modules = {}
    for ep in eps:
        module = ep.value.split(":")[0].strip()
        if module:
            modules.setdefault(ep.name, module)
    return [modules[name] for name in sorted(modules)]


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
