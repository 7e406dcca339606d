"""The Python API: one run from a notebook or a script, with the command line's promises.

    import ckam_bench

    result = ckam_bench.run(sampler="nuts", target="gauss2d_corr", budget={"seconds": 2}, seed=1)
    result.status["state"], result.trace[["sampler_seconds", "kl"]], result.samples

:func:`run` composes the same config as ``ckam-bench`` (``conf/config.yaml`` and the same
overrides), validates it the same way (:class:`ConfigError` names the key; nothing is created),
claims the same kind of run folder (a folder of a complete run with the same config is
skipped, an interrupted one resumes, anything else is refused with :class:`FolderRefused`) and
writes the same files, so ``ckam-bench-figures`` reads API runs and CLI runs alike. It returns a
:class:`RunResult` read back from the folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ckam_bench.engine.rundir import FolderBusy, FolderRefused
from ckam_bench.commands.validate import ConfigError

__all__ = ["ConfigError", "FolderBusy", "FolderRefused", "RunResult", "run"]


@dataclass
class RunResult:
    """A run folder as the API returns it."""

    folder: Path
    """the run folder (``status.json``, ``trace.parquet``, ``samples.parquet``, ``.hydra/``)."""
    status: dict
    """``status.json``: state (complete, empty, interrupted, failed), flags, totals, labels."""
    trace: pd.DataFrame
    """one row per checkpoint: sampler seconds, evaluation counts and every metric."""
    samples: pd.DataFrame | None
    """the stored (thinned) samples, one column per coordinate or model variable element."""

    @property
    def flags(self) -> list[str]:
        """The run's health flags (a stuck chain, non-finite proposals, divergences …)."""
        return list(self.status.get("flags") or [])

    def to_datatree(self):
        """The run as an ``xarray.DataTree`` (arviz's layout; :func:`ckam_bench.interop.to_datatree`)."""
        from ckam_bench.interop import to_datatree

        return to_datatree(self.folder)


def _override_strings(groups: dict, args: tuple, settings: dict) -> list[str]:
    """``key=value`` strings: group choices, raw override strings, then settings flattened to
    dotted keys (``budget={"seconds": 2}`` and ``budget__seconds=2`` are ``budget.seconds=2``)."""
    out = [f"{k}={v}" for k, v in groups.items() if v is not None]
    for arg in args:
        if not isinstance(arg, str) or "=" not in arg:
            raise ConfigError(f"overrides: positional arguments are KEY=VALUE strings, got {arg!r}")
        out.append(arg)

    def flat(prefix: str, value):
        if isinstance(value, dict) and value:
            for k, v in value.items():
                yield from flat(f"{prefix}.{k}", v)
        else:
            yield prefix, value

    for key, value in settings.items():
        for name, leaf in flat(key.replace("__", "."), value):
            out.append(f"{name}={_value(leaf)}")
    return out


def _value(value) -> str:
    """A Python value as Hydra's override grammar writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(v) for v in value) + "]"
    return str(value)


def _compose(overrides: list[str]):
    """The composed config with Hydra's node (for ``hydra.run.dir`` and the choices)."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from ckam_bench.commands import overrides as checks

    mistake = checks.problem(overrides)
    if mistake:
        raise ConfigError(mistake)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module("ckam_bench.conf", version_base="1.3"):
            return compose("config", overrides=overrides, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(str(exc).splitlines()[0]) from None
    finally:
        GlobalHydra.instance().clear()


def run(sampler: str | None = None, target: str | None = None, *overrides: str,
        run_dir: str | Path | None = None, **settings) -> RunResult:
    """Run ``sampler`` on ``target`` as ``ckam-bench sampler=… target=… OVERRIDES`` does.

    sampler, target : config names (``ckam-bench list``); None keeps the config's default.
    overrides : Hydra override strings, e.g. ``"budget.seconds=2"``, ``"kernel=gaussian"``.
    run_dir : the run folder (the command line's ``hydra.run.dir``); default
        ``outputs/runs/<date>/<time>_<sampler>_<target>_s<seed>_<id>`` under the current folder.
    settings : more overrides as keywords: ``seed=1``, ``budget={"seconds": 2}`` or
        ``budget__seconds=2``, ``experiment="gad_neal"``, ``target__model="pkg.mod:fn"``.

    Raises :class:`ConfigError` (invalid configuration: nothing created), :class:`FolderRefused`
    (the folder holds something else: untouched) or :class:`FolderBusy` (another process runs
    it). A run that fails raises the sampler's exception after its status says ``failed``.
    An interrupted run (Ctrl-C) comes back with ``status["state"] == "interrupted"``; the same
    call with the same ``run_dir`` resumes it.
    """
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict, read_write

    from ckam_bench.commands import cli

    strings = _override_strings({"sampler": sampler, "target": target}, overrides, settings)
    if run_dir is not None:
        strings.append(f"hydra.run.dir={Path(run_dir).expanduser().resolve()}")
    full = _compose(strings)
    hydra_config = HydraConfig.instance()
    previous = hydra_config.cfg  # Hydra's global config: set for this run only
    try:
        hydra_config.set_config(full)  # ${hydra:runtime.choices...} in the folder name
        out_dir = Path(str(full.hydra.run.dir)).expanduser().resolve()
        with read_write(full.hydra.runtime), open_dict(full):
            full.hydra.runtime.output_dir = str(out_dir)
        hydra_config.set_config(full)
        cfg = full.copy()
        with open_dict(cfg):
            del cfg["hydra"]
        runner, folder = cli.prepare(cfg, HydraConfig.get(), out_dir)
        cli.run_claimed(runner, folder, out_dir)
    finally:
        hydra_config.cfg = previous
    return load(out_dir)


def load(folder: str | Path) -> RunResult:
    """A stored run folder as a :class:`RunResult` (any run, made by the API or the CLI)."""
    from ckam_bench.engine import store

    stored = store.load_run(folder)
    return RunResult(Path(folder), stored.status, stored.trace, stored.samples)

