"""Old module paths keep working: ``ckam_bench.runner`` is ``ckam_bench.engine.runner`` (and so
on for every module grouped into :mod:`ckam_bench.engine`, :mod:`ckam_bench.commands` and
:mod:`ckam_bench.checks`), with a DeprecationWarning. A user's plugin, script or stored config
(``_target_: ckam_bench.cli.OutputFolderCheck`` in a run's ``.hydra/hydra.yaml``) written for
the flat layout still imports; ``python -m ckam_bench.cli`` still runs. The new module object
is the old one (one module, one state), not a copy.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {f"ckam_bench.{name}": f"ckam_bench.{package}.{name}" for package, names in {
    "engine": ("runner", "budget", "tally", "runstatus", "snapshot", "rundir", "store",
               "provenance", "outputs"),
    "commands": ("cli", "entry", "discovery", "overrides", "validate", "config", "plugins",
                 "sweeps", "slurm"),
    "checks": ("stationarity", "sbc", "reference"),
}.items() for name in names}


_OWN_SPECS: dict = {}  # new name -> its spec, while the import system handles the old name


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name and gives the module under its new name."""

    def find_spec(self, name, path=None, target=None):
        new = MOVED.get(name)
        return importlib.util.spec_from_loader(name, self, origin=new) if new else None

    def create_module(self, spec):
        warnings.warn(f"{spec.name} is now {spec.origin} (the old name still works)",
                      DeprecationWarning, stacklevel=3)
        module = importlib.import_module(spec.origin)
        _OWN_SPECS[spec.origin] = module.__spec__  # the import system sets the old one's next
        return module

    def exec_module(self, module):
        """The module ran under its new name already: it gets its own spec back (else
        ``python -m`` or ``importlib.reload`` of the new name would find the old one's)."""
        module.__spec__ = _OWN_SPECS.pop(module.__name__, module.__spec__)

    def get_code(self, name):
        """``python -m ckam_bench.cli``: the code of the new module, run as ``__main__``."""
        new = MOVED[name]
        return importlib.util.find_spec(new).loader.get_code(new)


def install() -> None:
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())
