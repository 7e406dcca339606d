"""Command-line entry point ``ckam-bench`` (a Hydra app).

``ckam-bench sampler=ckam target=bimodal`` composes ``conf/config.yaml`` with the overrides,
builds the target, sampler and metrics with ``hydra.utils.instantiate``, runs them under
the budget (:class:`ckam_bench.runner.Runner`) and stores the run in Hydra's output folder.
``ckam-bench -m sampler=rw,ckam seed=0,1`` sweeps (Hydra multirun).

Re-running into an existing run folder (same ``hydra.run.dir``, or the same
``hydra.sweep.dir`` for a sweep) continues it: a run already complete for the same resolved
config (same :func:`config_hash`) is skipped, an interrupted or killed one resumes from its
last checkpoint, and a folder holding a run of another config is refused. A folder in use by
a live process (see :class:`ckam_bench.store.RunLock`) is never written to.

Exit codes: 0 finished (complete, stopped by its caps, skipped as already complete, or
skipped because another process holds its folder); 2 invalid configuration (nothing is
sampled and no new output folder is left behind); 130 interrupted (Ctrl-C / SIGTERM, after a
final checkpoint); 1 any other failure (the run folder's status says ``failed``).
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import shutil
import sys
import uuid
from pathlib import Path

import hydra
import numpy as np
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

import ckam_bench
from ckam_bench import store
from ckam_bench.runner import Budget, Runner, checkpoint_times
from ckam_bench.samplers.base import StartPointError, check_start
from ckam_bench.targets.base import CapabilityError
from ckam_bench.validate import ConfigError, check_config

# Keys that do not change what a run computes (left out of the config hash).
COSMETIC_KEYS = ("hydra", "progress")


def config_hash(cfg: DictConfig) -> str:
    """sha256 of the resolved run config (Hydra's settings and the progress bar excluded)."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    for key in COSMETIC_KEYS:
        plain.pop(key, None)
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()


def versions() -> dict:
    import pandas
    import scipy

    return {
        "ckam_bench": ckam_bench.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "pandas": pandas.__version__,
        "hydra": hydra.__version__,
        "platform": platform.platform(),
    }


def _build(cfg: DictConfig, key: str, path: str | None = None, **kwargs):
    """Instantiate ``cfg[key]``; a constructor's ValueError becomes a ConfigError whose
    message starts with the full key of the failing node (e.g. ``sampler.cycle.beta``)."""
    try:
        return instantiate(cfg[key], **kwargs)
    except InstantiationException as exc:
        cause = exc.__cause__ or exc
        if isinstance(cause, CapabilityError):
            raise cause from None
        found = re.search(r"full_key: (\S+)", str(exc))
        node = found.group(1) if found else (path or key)
        message = str(cause)
        first = message.split(" ", 1)[0]
        if re.fullmatch(r"[a-z_]+", first) and not node.endswith(first):
            message = f"{node}.{message}"
        else:
            message = f"{node}: {message}"
        raise ConfigError(message) from exc


def build(cfg: DictConfig, labels: dict, out_dir) -> Runner:
    """Build every object of a run from its config; raise ConfigError on bad input."""
    check_config(cfg)
    target = _build(cfg, "target")
    sampler = _build(cfg, "sampler")
    skip, why = sampler.skip(target)
    if skip:
        raise ConfigError(f"sampler: {labels['sampler']} cannot run on {target.name}: {why}")
    metrics, unsupported = {}, {}
    for name, node in cfg.metrics.items():
        if isinstance(node, DictConfig) and "_target_" in node:
            try:
                metrics[name] = _build(cfg.metrics, name, path=f"metrics.{name}", target=target)
            except CapabilityError as exc:  # e.g. KL needs a box and exact marginals
                unsupported[name] = str(exc)
    try:
        budget = Budget(float(cfg.budget.seconds), cfg.budget.max_iterations,
                        cfg.budget.wall_seconds)
        times = checkpoint_times(budget.seconds, cfg.checkpoint.first, cfg.checkpoint.per_decade,
                                 cfg.checkpoint.every)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    x0 = None if cfg.start is None else np.asarray(OmegaConf.to_container(cfg.start), float)
    try:
        check_start(target, x0)
    except StartPointError as exc:
        raise ConfigError(f"start: {exc}") from exc
    target.reset_counters()
    if target.noisy:  # density estimates draw from their own stream of the run's seed
        target.bind_rng(np.random.default_rng([int(cfg.seed), 1]))
    kernel = getattr(sampler, "kernel", None)
    labels = {**labels, "kernel": labels.get("kernel") if kernel is not None else "none"}
    return Runner(
        sampler, target, metrics, budget, out_dir, np.random.default_rng(int(cfg.seed)),
        labels, x0=x0, checkpoints=times, progress=cfg.progress,
        block_seconds=cfg.block_seconds,
        samples_capacity=cfg.metrics.samples_capacity,
        diagnostics_capacity=cfg.metrics.diagnostics_capacity,
        diagnostics_head=cfg.metrics.diagnostics_head,
        max_overhead=cfg.checkpoint.max_overhead,
        status_extra={"config_hash": config_hash(cfg), "versions": versions(),
                      "sampler_info": sampler.describe(),
                      "metrics_unsupported": unsupported,
                      "metrics_info": {name: m.describe() for name, m in metrics.items()
                                       if hasattr(m, "describe")}},
    )


def _labels(cfg: DictConfig) -> dict:
    choices = HydraConfig.get().runtime.choices
    return {
        "run_id": uuid.uuid4().hex[:12],
        "sampler": choices.get("sampler"),
        "target": choices.get("target"),
        "kernel": choices.get("kernel"),
        "seed": int(cfg.seed),
    }


def _summary(status: dict, out_dir: str, latest: dict) -> str:
    t = status["totals"]
    rate = t["iterations"] / t["sampler_seconds"] if t["sampler_seconds"] else float("nan")
    kl = f", KL {latest['kl']:.4g}" if "kl" in latest else ""
    return (f"{status['state']} ({status['reason']}): {status['sampler']} on {status['target']}, "
            f"{t['iterations']} iterations in {t['sampler_seconds']:.2f} s of sampler time "
            f"({rate:,.0f} it/s){kl} -> {out_dir}")


def _previous(out_dir: Path, digest: str):
    """What an earlier run left in ``out_dir``: None (fresh), "complete" or resume data."""
    status_file = out_dir / store.STATUS
    if not status_file.exists():
        return None
    try:
        status = json.loads(status_file.read_text())
    except (OSError, ValueError):
        status = {}
    if status.get("config_hash") not in (None, digest):
        raise ConfigError(
            f"hydra.run.dir: {out_dir} holds a run of a different configuration; "
            "choose another folder (or delete that one) to start a new run")
    if status.get("state") == "complete":
        return "complete"
    try:
        return store.read_resume(out_dir / store.RESUME)
    except (OSError, ValueError, KeyError):
        return None  # killed before its first checkpoint, or damaged: start afresh


_COMPOSED = False  # set once Hydra has composed the config (see main)


class OutputFolderCheck(Callback):
    """Hydra callback (``hydra.callbacks`` in conf/config.yaml): make sure the run or sweep
    folder can be created before Hydra tries, so a bad path is one sentence, not a traceback."""

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        HydraConfig.instance().set_config(config)  # the folder name uses ${hydra:runtime...}
        self._check(config.hydra.run.dir)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        HydraConfig.instance().set_config(config)
        self._check(config.hydra.sweep.dir)

    @staticmethod
    def _check(folder) -> None:
        global _COMPOSED
        _COMPOSED = True
        try:
            Path(str(folder)).mkdir(parents=True, exist_ok=True)
            probe = Path(str(folder)) / f".write-test-{uuid.uuid4().hex}"
            probe.touch()
            probe.unlink()
        except OSError as exc:
            print(f"ckam-bench: cannot create or write the output folder {folder}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            sys.exit(1)


@hydra.main(version_base="1.3", config_path="pkg://ckam_bench.conf", config_name="config")
def _app(cfg: DictConfig) -> None:
    global _COMPOSED
    _COMPOSED = True
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    fresh = not (out_dir / store.STATUS).exists()
    try:
        runner = build(cfg, _labels(cfg), out_dir)
        previous = _previous(out_dir, config_hash(cfg))
    except ConfigError as exc:
        if fresh:
            shutil.rmtree(out_dir, ignore_errors=True)
        print(f"ckam-bench: invalid configuration: {exc}", file=sys.stderr)
        sys.exit(2)
    if previous == "complete":
        print(f"ckam-bench: already complete for this config, skipped: {out_dir}", file=sys.stderr)
        return
    try:
        lock = store.RunLock(out_dir).acquire()
    except store.FolderBusy as exc:
        print(f"ckam-bench: skipped: {exc}", file=sys.stderr)
        return
    try:
        if previous is not None:
            print(f"ckam-bench: resuming from checkpoint {len(previous[1]['rows'])} "
                  f"({previous[1]['iterations']} iterations): {out_dir}", file=sys.stderr)
        status = runner.run(resume=previous, lock=lock)
    except OSError as exc:
        print(f"ckam-bench: cannot write the run folder {out_dir}: {exc}", file=sys.stderr)
        sys.exit(1)
    finally:
        lock.release()
    print(_summary(status, out_dir, runner.latest), file=sys.stderr)
    if status["state"] == "interrupted":
        sys.exit(130)


def main() -> None:
    """Console entry point. Hydra's own composition errors (an unknown group option or key)
    exit with 1 before the task runs; they are configuration errors, so exit with 2."""
    try:
        _app()
    except SystemExit as exc:
        if exc.code == 1 and not _COMPOSED:
            sys.exit(2)
        raise


if __name__ == "__main__":
    main()
