"""Command-line entry point ``ckam-bench`` (a Hydra app).

``ckam-bench sampler=ckam target=bimodal`` composes ``conf/config.yaml`` with the overrides,
builds the target, sampler and metrics with ``hydra.utils.instantiate``, runs them under
the budget (:class:`ckam_bench.engine.runner.Runner`) and stores the run in Hydra's output folder.
``ckam-bench -m sampler=rw,ckam seed=0,1`` sweeps (Hydra multirun).

The run folder is claimed through :mod:`ckam_bench.engine.rundir` only after the whole config has
been validated and built: re-running into an existing run folder (same ``hydra.run.dir``, or
the same ``hydra.sweep.dir`` for a sweep) continues it — a run already complete for the same
resolved config (same :func:`config_hash`) is skipped, an interrupted or killed one resumes
from its last intact checkpoint — and a folder holding anything else is refused, untouched.
Hydra writes nothing itself (no ``.hydra/`` before the claim, no ``cli.log``).

The config hash covers the config's text; a model or data *file* it names (``target.model=
model.py:fn``, ``target.data=data.npz``) can change under the same text. So the built target's
identity (:func:`ckam_bench.engine.store.target_identity`: the sha256 of its source and data
bytes, read after the target is built, before anything is compiled or sampled) is recorded in
``status.json`` (``target_identity``), and a re-run into a folder whose run was made on another
model or data — one that would be skipped as complete or resumed — is refused (exit 2, one line
naming what changed; the stored run is left as it is): the changed model runs in a new folder.
In a sweep each job is checked so.

A run that ended without collecting a sample (state ``empty``, flag ``no_samples``) is no
result: re-running it redoes it from its first iteration instead of skipping it.

Exit codes: 0 finished (complete, stopped by its caps — also ``empty``, flagged on the end line —,
skipped as already complete, or
skipped because another process holds its folder); 2 invalid configuration or refused folder
(nothing is sampled, nothing on disk changes; a sweep runs its other jobs first and names the
refused ones); 130 interrupted (Ctrl-C / SIGTERM, after a final checkpoint; the last line is
the command that resumes it — for a job of a sweep, the sweep's own command with its
``hydra.sweep.dir``, which resumes that job and runs the jobs that never started); 1 any other
failure (the run folder's status says ``failed``).
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

import hydra
import numpy as np
from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict

from ckam_bench import jit
from ckam_bench.commands import discovery, overrides, sweeps
from ckam_bench.engine import outputs, provenance, rundir, runstatus, store
from ckam_bench.engine.budget import EarlyStop
from ckam_bench.engine.runner import UNITS, Budget, Runner, checkpoint_times, sampler_block_seconds
from ckam_bench.samplers.base import StartPointError, check_start
from ckam_bench.targets.base import CapabilityError, PluginError, check_target, label_of
from ckam_bench.commands.validate import ConfigError, check_config, resolved

def config_hash(cfg: DictConfig) -> str:
    """sha256 of everything that changes a run's chain or its speed: the resolved run config
    (Hydra's settings and the progress bar excluded) and the loop mode (compiled or Python),
    so a folder run in one mode is never taken as complete for the other
    (:func:`ckam_bench.engine.store.config_digest`, which the report uses to check a run folder)."""
    return store.config_digest(resolved(cfg), "compiled" if jit.enabled() else "python")


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


def complete_target_dim(cfg: DictConfig) -> None:
    """A target's YAML need not state its dimension: when ``target.dim`` is missing and the
    config refers to it (a sampler's default step size ``2.38/sqrt(d)``), the target is built
    once to read its ``dim`` and every interpolation of the config is resolved with it, in
    place (the stored config shows the values the run used; the target node stays as
    written)."""
    if "dim" in cfg.target or "target.dim}" not in OmegaConf.to_yaml(cfg, resolve=False):
        return
    dim = int(_build(cfg, "target").dim)
    with open_dict(cfg):
        cfg.target.dim = dim
        try:
            OmegaConf.resolve(cfg)
        finally:
            del cfg.target["dim"]


def _checked_target(cfg: DictConfig, label: str):
    """Build ``cfg.target`` and check it against the target contract (a ConfigError naming the
    target and the member that is missing or malformed)."""
    target = _build(cfg, "target")
    try:
        check_target(target, label)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return target


def build(cfg: DictConfig, labels: dict, out_dir) -> Runner:
    """Build every object of a run from its config; raise ConfigError on bad input. Writes
    nothing: the run folder is claimed afterwards (:mod:`ckam_bench.engine.rundir`)."""
    check_config(cfg)
    target = _checked_target(cfg, labels["target"])
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
    b, ck = cfg.budget, cfg.checkpoint
    try:
        budget = Budget(float(b.seconds), b.max_iterations, b.wall_seconds, b.max_density,
                        b.max_grad, b.clock)
        early = OmegaConf.to_container(b.early_stop) if b.get("early_stop") is not None else {}
        early_stop = EarlyStop(**{k: v for k, v in early.items() if k != "enabled"}) \
            if early.get("enabled") else None  # validated: check_config
        if ck.on not in UNITS:
            raise ValueError(f"checkpoint.on must be one of {', '.join(UNITS)}, got {ck.on!r}")
        limit = budget.limit(ck.on)
        if limit is None:
            key = {"iterations": "max_iterations", "density": "max_density", "grad": "max_grad"}
            raise ValueError(f"checkpoint.on={ck.on} needs a budget in {ck.on} "
                             f"(budget.{key[ck.on]}) to place its checkpoints")
        times = checkpoint_times(limit, ck.first, ck.per_decade, ck.every, unit=ck.on)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    if target.noisy:  # density estimates draw from their own stream of the run's seed
        target.bind_rng(np.random.default_rng([int(cfg.seed), 1]))
    x0 = None if cfg.start is None else np.asarray(OmegaConf.to_container(cfg.start), float)
    try:
        check_start(target, x0)
    except StartPointError as exc:
        raise ConfigError(f"start: {exc}") from exc
    target.reset_counters()
    kernel = getattr(sampler, "kernel", None)
    try:
        target_label = label_of(target, labels["target"])  # a PyMC model: its module and function
    except PluginError as exc:
        raise ConfigError(f"target: {exc}") from None
    labels = {**labels, "kernel": labels.get("kernel") if kernel is not None else "none",
              "target": target_label}
    try:
        sampler_block_seconds(sampler)
    except PluginError as exc:
        raise ConfigError(f"sampler: {exc}") from None
    try:
        identity = store.target_identity(target)  # bytes of its model and data files
    except PluginError as exc:
        raise ConfigError(f"target: {exc}") from None
    return Runner(
        sampler, target, metrics, budget, out_dir, np.random.default_rng(int(cfg.seed)),
        labels, x0=x0, checkpoints=times, progress=cfg.progress,
        block_seconds=cfg.block_seconds, threads=cfg.threads,
        samples_capacity=cfg.metrics.samples_capacity,
        diagnostics_capacity=cfg.metrics.diagnostics_capacity,
        diagnostics_head=cfg.metrics.diagnostics_head,
        max_overhead=cfg.checkpoint.max_overhead, checkpoint_unit=ck.on, early_stop=early_stop,
        status_extra={"config_hash": config_hash(cfg), store.IDENTITY_KEY: identity,
                      "provenance": provenance.collect(),
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


def _number(latest: dict, key: str) -> float | None:
    """A finite number of the latest trace row, else None."""
    try:
        value = float(latest[key])
    except (KeyError, TypeError, ValueError):
        return None
    return value if np.isfinite(value) else None


def summary(status: dict, out_dir: str, latest: dict) -> str:
    """The end-of-run line (state, flags, counts, KL and min ESS, folder) and its notes: one
    per flag, a contended CPU, and a complete run too short to trust (``short_chain``: min ESS
    below ``ess_floor``, :data:`ckam_bench.engine.runstatus.ESS_FLOOR`)."""
    t = status["totals"]
    rate = t["iterations"] / t["sampler_seconds"] if t["sampler_seconds"] else float("nan")
    kl, ess = _number(latest, "kl"), _number(latest, "ess_min")
    measured = (f", KL {kl:.4g}" if kl is not None else "") + \
        (f", min ESS {ess:.3g}" if ess is not None else "")
    flagged = "".join(f"\n  FLAGGED {name}: {note}" for name, note in
                      (status.get("flag_notes") or {}).items())
    short = ""
    if status.get("short_chain") and status["state"] == "complete":
        floor = status.get("ess_floor", runstatus.ESS_FLOOR)
        found = f"min ESS {ess:.3g}" if ess is not None else "the min ESS"
        short = (f"\n  note: too short to trust: {found} is below {floor:g} (the ESS floor), so "
                 "its estimates carry Monte Carlo errors above a tenth of a posterior sd; a "
                 "larger budget.seconds gives a longer chain")
    early = ""
    if status.get("stopped_early"):
        why, rule = status["stopped_early"], status["budget"]["early_stop"]
        unit = {"seconds": "sampler seconds", "iterations": "iterations",
                "density": "density evaluations", "grad": "gradient evaluations"}[why["unit"]]
        if why.get("kind") == "futile":
            early = (f"\n  note: stopped as futile (budget.early_stop.futility): {rule['metric']} "
                     f"{why['metric']:.3g} at {why['at']:,.6g} {unit}, min ESS {why['ess_min']:.3g}: "
                     f"falling at best as 1/cost it would still be {rule['futility']:g}x "
                     f"{rule['threshold']:g} at the end of the budget; its cost to "
                     f"{rule['metric']} < {rule['threshold']:g} counts as never")
        else:
            early = (f"\n  note: stopped early (budget.early_stop): {rule['metric']} < {rule['threshold']:g} "
                     f"from {why['first_below']:,.6g} {unit} on, still below at {why['at']:,.6g} "
                     f"(x{rule['multiple']:g}), min ESS {why['ess_min']:.3g}; its cost to "
                     f"{rule['metric']} < {rule['threshold']:g} is known, its final values are at the stop")
    return (f"{status['state']} ({status['reason']})"
            + (f" FLAGGED {', '.join(status['flags'])}" if status.get("flags") else "")
            + f": {status['sampler']} on {status['target']}, "
            f"{t['iterations']} iterations in {t['sampler_seconds']:.2f} s of sampler time "
            f"({rate:,.0f} it/s){measured} -> {out_dir}"
            + (f"\n  note: the sampler got {status['cpu_share']:.0%} of a core while its clock "
               "ran (another process competed for the CPU); budget.clock=cpu measures CPU time"
               if status.get("contended") else "")
            + short + early + flagged)


_COMPOSED = False  # set once Hydra has composed the config (see main)
_CREATED: list[Path] = []  # folders this invocation's run or sweep folder will newly create
_SWEEP: dict = {}  # the running sweep (main process): folder, token
_JOBS_STARTED = 0  # jobs started in this process (a sweep's launcher runs many in one)
SWEEP_TOKEN_ENV = "CKAM_BENCH_SWEEP_TOKEN"
SWEEP_START_ENV = "CKAM_BENCH_SWEEP_START"
SWEEP_COMMAND_ENV = sweeps.SWEEP_COMMAND_ENV  # read back by a stopped sweep's last line


class OutputFolderCheck(Callback):
    """Hydra callback (``hydra.callbacks`` in conf/config.yaml). Before Hydra creates the run
    or sweep folder: say in one sentence when it cannot be created, and remember which folders
    this invocation creates, so that a refused run removes them again (when still empty) and
    leaves the disk as it found it. At the end of a sweep: name the refused jobs."""

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        HydraConfig.instance().set_config(config)  # the folder name uses ${hydra:runtime...}
        self._check(config.hydra.run.dir)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        HydraConfig.instance().set_config(config)
        folder = Path(str(config.hydra.sweep.dir))
        self._check(folder)
        before = sweeps.claim_sweep_folder(folder, config)
        _SWEEP.update(folder=folder, token=uuid.uuid4().hex[:12], before=before)
        os.environ[SWEEP_TOKEN_ENV] = _SWEEP["token"]  # inherited by the sweep's job processes
        os.environ[SWEEP_START_ENV] = repr(time.time() - 1.0)
        os.environ[SWEEP_COMMAND_ENV] = sweep_command(config.hydra.overrides, folder)

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        notes = _job_notes(_SWEEP["folder"], _SWEEP["token"])
        records = []
        if notes.exists():
            for line in notes.read_text().splitlines():
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue
            notes.unlink()  # the sweep's own bookkeeping file, named by its token
        if not any(r.get("ran") for r in records):  # every job refused or already done
            outputs.restore_sweep_folder(_SWEEP["before"])
        rundir.remove_empty(_CREATED)
        _SWEEP["refused"] = [r for r in records if "why" in r]

    @staticmethod
    def _check(folder) -> None:
        global _COMPOSED
        _COMPOSED = True
        folder = Path(str(folder))
        _CREATED[:] = rundir.missing_ancestors(folder)
        existing = folder.parent if not folder.exists() else folder
        while not existing.exists():
            existing = existing.parent
        problem = None
        if folder.exists() and not folder.is_dir():
            problem = "it is a file"
        elif not existing.is_dir():
            problem = f"{existing} is a file"
        elif not os.access(existing, os.W_OK | os.X_OK):
            problem = f"{existing} is not writable"
        if problem:
            print(f"{sweeps.program()}: cannot create or write the output folder "
                  f"{folder}: {problem}", file=sys.stderr)
            sys.exit(1)


def _uses_kernel(sampler_node) -> bool:
    """Whether a sampler's (unresolved) config refers to the root ``kernel`` block."""
    text = OmegaConf.to_yaml(sampler_node, resolve=False) if sampler_node is not None else ""
    return "${kernel}" in text


def _check_unused_choices(runner: Runner, hc) -> None:
    """A kernel chosen on the command line for a sampler that has none is an error, not a
    setting silently ignored."""
    chosen = [o.split("=", 1)[0].lstrip("+~") for o in hc.overrides.task]
    if "kernel" in chosen and getattr(runner.sampler, "kernel", None) is None:
        raise ConfigError(f"kernel: sampler {hc.runtime.choices.get('sampler')} uses no kernel; "
                          "drop the kernel=... override")


def print_job_config(overrides: list[str]) -> None:
    """``ckam-bench --cfg job …``: the composed run config with only the blocks the run uses
    (no kernel block for a sampler without a kernel)."""
    from hydra import compose, initialize_config_module

    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    if not _uses_kernel(cfg.get("sampler")):
        cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "kernel"])
    print(OmegaConf.to_yaml(cfg), end="")


def _job_notes(sweep_dir: Path, token: str) -> Path:
    """The sweep's own bookkeeping file: one JSON line per job that was refused (``why``) or
    ran (``ran``), read and removed at the end of the sweep."""
    return Path(sweep_dir) / f".ckam-jobs-{token}.jsonl"


def note_sweep_job(out_dir: Path, **record) -> None:
    """In a sweep's job: add a line to the sweep's notes (:func:`_job_notes`)."""
    token = os.environ.get(SWEEP_TOKEN_ENV)
    if token and HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        with open(_job_notes(HydraConfig.get().sweep.dir, token), "a") as fh:
            fh.write(json.dumps({"folder": str(out_dir), **record}) + "\n")


def _undo_created(out_dir: Path, multirun: bool) -> None:
    """After a refusal: remove the empty folders this invocation created for the run."""
    if not multirun:
        rundir.remove_empty(_CREATED)
        return
    try:  # a sweep job's folder, created by Hydra in this job: still empty and new
        start = float(os.environ.get(SWEEP_START_ENV, "inf"))
        if not any(out_dir.iterdir()) and out_dir.stat().st_ctime >= start:
            rundir.remove_empty([out_dir])
    except (OSError, ValueError):
        pass


def _refuse(out_dir: Path, message: str, multirun: bool) -> None:
    """A run that cannot start: one line; a single run exits 2, a sweep job is noted for the
    sweep's final report and the sweep goes on."""
    print(f"ckam-bench: {message}", file=sys.stderr)
    if not multirun:
        sys.exit(2)
    note_sweep_job(out_dir, why=message)


def _snapshot(cfg: DictConfig) -> dict:
    """The config snapshot written into a newly claimed folder (what Hydra's ``.hydra/`` held)."""
    hydra_cfg = HydraConfig.instance().cfg
    return {
        ".hydra/config.yaml": OmegaConf.to_yaml(cfg),
        ".hydra/hydra.yaml": OmegaConf.to_yaml(hydra_cfg),
        ".hydra/overrides.yaml": OmegaConf.to_yaml(hydra_cfg.hydra.overrides.task),
    }


def prepare(cfg: DictConfig, hc, out_dir: Path) -> tuple[Runner, rundir.RunFolder]:
    """Validate and build a run from its composed config and claim its folder; raises
    ConfigError, :class:`rundir.FolderRefused` or :class:`rundir.FolderBusy` with nothing on
    disk changed (shared by the command line and :func:`ckam_bench.api.run`)."""
    complete_target_dim(cfg)
    check_config(cfg)  # before the labels read any value
    runner = build(cfg, _labels(cfg), out_dir)
    _check_unused_choices(runner, hc)
    folder = rundir.RunFolder.claim(out_dir, config_hash(cfg), _snapshot(cfg),
                                    identity=runner.status_extra[store.IDENTITY_KEY])
    return runner, folder


def run_claimed(runner: Runner, folder: rundir.RunFolder, out_dir: Path) -> dict | None:
    """Run (or resume) a claimed folder and release it; None when it was already complete.
    Says on stderr what it resumes or restarts."""
    try:
        for note in folder.notes:
            print(f"ckam-bench: {note}", file=sys.stderr)
        if folder.state == "complete":
            print(f"ckam-bench: already complete for this config, skipped: {out_dir}",
                  file=sys.stderr)
            return None
        note_sweep_job(out_dir, ran=True)
        if folder.state == "resume":
            r = folder.resume
            if runner.sampler.resumable:
                where = (f"checkpoint {r.checkpoint}" if r.checkpoint >= 0
                         else "a state saved before its first checkpoint")
                print(f"ckam-bench: resuming from {where} "
                      f"({r.meta['iterations']} iterations, {r.source}): {out_dir}", file=sys.stderr)
            else:
                print(f"ckam-bench: restarting from the first iteration: {runner.labels['sampler']} "
                      f"cannot save its chain's state (the stopped run's {r.meta['iterations']} "
                      f"iterations are replaced): {out_dir}", file=sys.stderr)
        runner.folder = folder
        status = runner.run()
    finally:
        folder.release()
    say_whole(summary(status, out_dir, runner.latest))
    return status


def say_whole(text: str) -> None:
    """``text`` and its newline on stderr in one write: a sweep's workers share the stream, and
    ``print`` writes a multi-line text's last newline apart, so another job's line could land
    between them and be merged into this one's last note (``ckam-bench-sbc`` counts end lines)."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


@hydra.main(version_base="1.3", config_path="pkg://ckam_bench.conf", config_name="config")
def _app(cfg: DictConfig) -> None:
    global _COMPOSED, _JOBS_STARTED
    _COMPOSED = True
    if _JOBS_STARTED:  # a sweep's earlier jobs in this process: their compiled JAX code
        from ckam_bench.samplers.peers import release_compiled

        release_compiled()  # a full garbage collection, paid from a second job on
    if _JOBS_STARTED < 2:
        # What the process holds at its first two jobs' start (the imports, then what the first
        # job left for the next: PyMC, a compiled model) stays: the garbage collector stops
        # traversing it (gc.freeze), so each later collection, the one above and those Python
        # starts during a run, costs ms rather than 0.15 s. Frozen twice at most: a later job's
        # leftovers are collected as usual.
        gc.freeze()
    _JOBS_STARTED += 1
    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    try:
        runner, folder = prepare(cfg, hc, out_dir)
    except ConfigError as exc:
        _undo_created(out_dir, multirun)
        return _refuse(out_dir, f"invalid configuration: {exc}", multirun)
    except rundir.FolderRefused as exc:
        _undo_created(out_dir, multirun)
        return _refuse(out_dir, f"refused: {exc}", multirun)
    except rundir.FolderBusy as exc:
        print(f"ckam-bench: skipped: {exc}", file=sys.stderr)
        return
    try:
        status = run_claimed(runner, folder, out_dir)
    except OSError as exc:
        print(f"ckam-bench: cannot write the run folder {out_dir}: {exc}", file=sys.stderr)
        sys.exit(1)
    except Exception as exc:  # the runner has marked the run failed (status.json: reason, error)
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        print(f"failed ({reason}): {runner.labels['sampler']} on {runner.labels['target']} "
              f"-> {out_dir} (the traceback is under 'error' in status.json)", file=sys.stderr)
        if multirun:
            raise  # the launcher reports the failed job
        sys.exit(1)
    if status is not None and status["state"] == "interrupted":
        print(f"ckam-bench: resume it with: {resume_command(hc, out_dir)}", file=sys.stderr)
        sys.exit(130)


_FOLDER_KEYS = ("hydra.run.dir=", "hydra.sweep.dir=", "hydra.mode=")


def _hydra_overrides(overrides) -> list[str]:
    """The ``hydra.*`` overrides of a command line (search path, launcher, …) without the
    folder and mode keys the resume command sets itself."""
    return [o for o in overrides.hydra if not o.startswith(_FOLDER_KEYS)]


def sweep_command(overrides, folder) -> str:
    """The command that runs a sweep again in its folder: ``ckam-bench -m``, the sweep's own
    overrides (``overrides``: Hydra's ``hydra.overrides`` at the start of the sweep, with the
    swept lists) and ``hydra.sweep.dir`` = ``folder`` (absolute). Re-run, it skips the complete
    jobs, resumes the interrupted ones and runs those that never started."""
    import shlex

    task = [o for o in overrides.task if not o.startswith(_FOLDER_KEYS)]
    return shlex.join(["ckam-bench", "-m", *_hydra_overrides(overrides), *task,
                       f"hydra.sweep.dir={os.path.abspath(folder)}"])


def resume_command(hc, out_dir) -> str:
    """The command that resumes an interrupted run. A single run: its overrides and
    ``hydra.run.dir`` = its folder. A job of a sweep: the sweep's command
    (:func:`sweep_command`, recorded when the sweep started), so that following it resumes
    this job *and* runs the sweep's jobs that never started."""
    import shlex

    if hc.mode == RunMode.MULTIRUN:
        recorded = os.environ.get(SWEEP_COMMAND_ENV)
        if recorded:
            return recorded
        # a job whose sweep's process did not record it: the sweep's overrides as Hydra saved them
        saved = Path(str(hc.sweep.dir)) / "multirun.yaml"
        try:
            return sweep_command(OmegaConf.load(saved).hydra.overrides, hc.sweep.dir)
        except Exception:  # noqa: BLE001 - no readable record: the job alone (below)
            pass
    task = [o for o in hc.overrides.task if not o.startswith(_FOLDER_KEYS)]
    return shlex.join(["ckam-bench", *_hydra_overrides(hc.overrides), *task,
                       f"hydra.run.dir={out_dir}"])


def main() -> None:
    """Console entry point. Hydra's own composition errors (an unknown group option or key)
    exit with 1 before the task runs; they are configuration errors, so exit with 2. A sweep
    with refused jobs exits with 2 after all its other jobs ran, naming the refused folders."""
    argv = sys.argv[1:] = overrides.flags_first(sys.argv[1:])
    if discovery.answer_without_harness(argv):
        return
    for flag in ("--cfg", "-c"):
        if flag in argv and argv[argv.index(flag) + 1:argv.index(flag) + 2] == ["job"]:
            i = argv.index(flag)
            rest = [a for a in argv[:i] + argv[i + 2:] if not a.startswith("-")]
            try:
                print_job_config(rest)
            except Exception as exc:  # Hydra's own message for a bad override
                print(f"ckam-bench: invalid configuration: {exc}".splitlines()[0], file=sys.stderr)
                sys.exit(2)
            return
    mistake = overrides.problem(argv)
    if mistake:
        print(f"ckam-bench: invalid configuration: {mistake}", file=sys.stderr)
        sys.exit(2)
    sweeps.compose_each_shape_once()
    sweeps.reuse_compositions()
    try:
        _app()
    except SystemExit as exc:
        if exc.code == 1 and not _COMPOSED:
            sys.exit(2)
        raise
    refused = _SWEEP.get("refused")
    if refused:
        print(f"ckam-bench: {len(refused)} job(s) of the sweep were refused and did not run:",
              file=sys.stderr)
        for note in refused:
            print(f"  {note['folder']}: {note['why']}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":  # run the imported module, where Hydra's callback keeps its state
    from ckam_bench.commands import cli

    cli.main()
