"""Command-line entry point ``ckam-bench`` (a Hydra app).

``ckam-bench sampler=ckam target=bimodal`` composes ``conf/config.yaml`` with the overrides,
builds the target, sampler and metrics with ``hydra.utils.instantiate``, runs them under
the budget (:class:`ckam_bench.runner.Runner`) and stores the run in Hydra's output folder.
``ckam-bench -m sampler=rw,ckam seed=0,1`` sweeps (Hydra multirun).

Exit codes: 0 finished (complete, or stopped by its caps); 2 invalid configuration (nothing
is sampled and no output folder is left behind); 130 interrupted (Ctrl-C / SIGTERM, after a
final checkpoint); 1 any other failure (the run folder's status says ``failed``).
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import sys
import uuid
from pathlib import Path

import hydra
import numpy as np
from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

import ckam_bench
from ckam_bench import store
from ckam_bench.runner import Budget, Runner, checkpoint_times
from ckam_bench.samplers.base import StartPointError, check_start


class ConfigError(ValueError):
    """The composed configuration cannot be run; the message names the key."""


def config_hash(cfg: DictConfig) -> str:
    """sha256 of the resolved run config (Hydra's own settings excluded)."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
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


def _build(cfg: DictConfig, key: str, **kwargs):
    try:
        return instantiate(cfg[key], **kwargs)
    except InstantiationException as exc:
        cause = exc.__cause__ or exc
        raise ConfigError(f"{key}: {cause}") from exc


def build(cfg: DictConfig, labels: dict, out_dir) -> Runner:
    """Build every object of a run from its config; raise ConfigError on bad input."""
    target = _build(cfg, "target")
    sampler = _build(cfg, "sampler")
    skip, why = sampler.skip(target)
    if skip:
        raise ConfigError(f"sampler: {labels['sampler']} cannot run on {target.name}: {why}")
    metrics = {
        name: _build(cfg.metrics, name, target=target)
        for name, node in cfg.metrics.items()
        if isinstance(node, DictConfig) and "_target_" in node
    }
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
    kernel = getattr(sampler, "kernel", None)
    labels = {**labels, "kernel": labels.get("kernel") if kernel is not None else "none"}
    return Runner(
        sampler, target, metrics, budget, out_dir, np.random.default_rng(int(cfg.seed)),
        labels, x0=x0, checkpoints=times, progress=cfg.progress,
        block_seconds=cfg.block_seconds,
        samples_capacity=cfg.metrics.samples_capacity,
        diagnostics_capacity=cfg.metrics.diagnostics_capacity,
        diagnostics_head=cfg.metrics.diagnostics_head,
        status_extra={"config_hash": config_hash(cfg), "versions": versions()},
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


@hydra.main(version_base="1.3", config_path="pkg://ckam_bench.conf", config_name="config")
def _app(cfg: DictConfig) -> None:
    out_dir = HydraConfig.get().runtime.output_dir
    try:
        runner = build(cfg, _labels(cfg), out_dir)
    except ConfigError as exc:
        if not (Path(out_dir) / store.STATUS).exists():
            shutil.rmtree(out_dir, ignore_errors=True)
        print(f"ckam-bench: invalid configuration: {exc}", file=sys.stderr)
        sys.exit(2)
    status = runner.run()
    print(_summary(status, out_dir, runner.latest), file=sys.stderr)
    if status["state"] == "interrupted":
        sys.exit(130)


def main() -> None:
    _app()


if __name__ == "__main__":
    main()
