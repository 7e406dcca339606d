"""Sweep jobs in worker processes end when their sweep's process dies.

Hydra's joblib launcher (``hydra/launcher=joblib``, hydra-joblib-launcher on joblib's loky
backend) runs the jobs of a sweep in worker processes of the ``ckam-bench -m …`` process.
loky stops its workers when the executor shuts down, and an idle worker after
``idle_worker_timeout`` (300 s); but when the sweep's process is killed with SIGKILL it shuts
nothing down: its workers are re-parented and go on — running their job to its end, then idle
for minutes, a job queued in advance even starts.

:class:`ParentWatch`, a Hydra callback registered in ``conf/base.yaml`` and
``conf/reference.yaml``, starts one watchdog thread (:func:`watch_parent`) in every worker:
when a joblib sweep starts it registers joblib's ``loky`` backend (the one the launcher
hard-codes) with an ``initializer``, so loky's workers run :func:`_worker_start` first thing
and a worker still starting when the sweep dies ends too; a job that starts in a
direct child of the sweep's process of another pool starts it as well. The watchdog polls ``os.getppid()`` every
second: once it is no longer the sweep's process (which died, maybe while the worker was still
starting: the worker was re-parented), it sends the worker SIGTERM —
a running job ends as it does on Ctrl-C, with a final checkpoint (state ``interrupted``,
resumable by running the same sweep again) — and ends the process ``GRACE`` seconds later
whatever it is doing. Jobs of the basic launcher run in the sweep's own process and are not
watched; neither is a single run. A thread that polls is used rather than Linux's
``PR_SET_PDEATHSIG``, which fires when the *thread* that spawned the worker ends (loky spawns
from a management thread), not only when the process dies, and which other systems lack.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import time
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

SWEEP_PID_ENV = "CKAM_BENCH_SWEEP_PID"
POLL = 1.0
GRACE = 60.0  # seconds for a final checkpoint after SIGTERM
_WATCHING: list = []


def watch_parent(parent: int, poll: float = POLL, grace: float = GRACE) -> threading.Thread:
    """Start (once per process) a daemon thread that ends this process once its parent is no
    longer the process ``parent`` (it died, maybe before this job started): SIGTERM first,
    then ``os._exit(1)`` after ``grace`` seconds."""
    if _WATCHING:
        return _WATCHING[0]

    def watch():
        while os.getppid() == parent:
            time.sleep(poll)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace)
        os._exit(1)

    thread = threading.Thread(target=watch, name="ckam-parent-watch", daemon=True)
    thread.start()
    _WATCHING.append(thread)
    return thread


def _worker_start(sweep_pid: int) -> None:
    """loky's initializer of each worker of a joblib sweep: watch the sweep's process; reuse
    a job shape's composition (:func:`reuse_compositions`)."""
    watch_parent(sweep_pid)
    reuse_compositions()


class ParentWatch(Callback):
    """Hydra callback: jobs of a sweep that run in worker processes end with the sweep."""

    def __init__(self):
        self._loky = None

    def on_multirun_start(self, config, **kwargs) -> None:
        os.environ[SWEEP_PID_ENV] = str(os.getpid())
        target = str(OmegaConf.select(config, "hydra.launcher._target_", default="") or "")
        if target.endswith("JoblibLauncher"):
            # the launcher asks joblib for backend="loky": its workers run _worker_start first
            from joblib import parallel, register_parallel_backend

            self._loky = parallel.BACKENDS["loky"]
            register_parallel_backend("loky", functools.partial(
                self._loky, initializer=_worker_start, initargs=(os.getpid(),)))

    def on_multirun_end(self, config, **kwargs) -> None:
        if self._loky is not None:
            from joblib import register_parallel_backend

            register_parallel_backend("loky", self._loky)
            self._loky = None

    def on_job_start(self, config, **kwargs) -> None:
        sweep = os.environ.get(SWEEP_PID_ENV)  # a worker of another pool (e.g. backend=...)
        if sweep and sweep.isdigit() and int(sweep) != os.getpid() \
                and os.getppid() == int(sweep):
            watch_parent(int(sweep))


PROGRAM: list = []  # the running command's name, set by its entry point


def _job_shape(overrides, group_exists) -> tuple:
    """What decides whether a job's config composes: its config-group choices (they pick the
    defaults list, whose interpolations may only name group choices) and the keys it sets or
    adds, not the values it gives them (``seed=3``, ``target.model=…``)."""
    shape = []
    for text in overrides:
        name, sep, _ = text.partition("=")
        bare = name.lstrip("+~")
        grouped = bare.startswith("hydra/") or group_exists(bare)
        shape.append(text if not sep or grouped or name.startswith("~") else name)
    return tuple(sorted(shape))


def compose_each_shape_once() -> None:
    """Hydra's sweeper composes every job's config before it launches any, to fail early
    (``Sweeper.validate_batch_is_legal``), in the sweep's own process while the workers wait,
    and the launcher composes it again in the job: ~0.1 CPU-s twice per job. Jobs of the same
    shape (:func:`_job_shape`: a sweep's seeds, its posteriors) compose alike, so the early
    check here composes one job per shape. Installed by ``ckam-bench``'s entry point only; every
    job is still composed where it runs, and ckam-bench's own override check
    (:func:`ckam_bench.commands.overrides.problem`) has composed each combination of groups."""
    from hydra.plugins.sweeper import Sweeper

    full = Sweeper.validate_batch_is_legal
    if getattr(full, "__wrapped__", None) is not None:
        return

    @functools.wraps(full)
    def once_per_shape(self, batch):
        repository = self.hydra_context.config_loader.repository
        firsts = {}
        for overrides in batch:
            firsts.setdefault(_job_shape(overrides, repository.group_exists), overrides)
        return full(self, list(firsts.values()))

    Sweeper.validate_batch_is_legal = once_per_shape


_COMPOSED: dict = {}  # this process's composed configs, one per job shape (reuse_compositions)


def _reusable(parsed, group_exists) -> bool:
    """A job override whose value can be set on another job's composed config: a plain
    ``key=value`` of the task config (no ``+``/``++``/``~``, not Hydra's, not a config group)
    with a scalar value (a dict would be merged into the other job's, not set)."""
    value = parsed.value()
    return (parsed.type.name == "CHANGE" and not parsed.is_hydra_override()
            and not group_exists(parsed.key_or_group)
            and parsed.value_type is not None and parsed.value_type.name == "ELEMENT"
            and not isinstance(value, (dict, list)))


def reuse_compositions() -> None:
    """Each job of a sweep composes its config from the YAML files again (Hydra's
    ``ConfigLoaderImpl.load_sweep_config``: ~0.1–0.2 CPU-s, the largest part of a warm job's
    fixed cost). Jobs of one shape (:func:`_job_shape`) differ only in the values of keys they
    set, so after the first of a shape this process composes a job as the first job's composed
    config with the overrides that differ set on a copy, the task overrides and
    ``hydra.job.override_dirname`` renewed — Hydra's own steps, in its order. A job with an
    override that cannot be set that way (:func:`_reusable`) is composed in full. Installed in
    the sweep's process (the basic launcher's jobs) and in each joblib worker (loky's
    initializer); ``tests/test_sweeps.py`` checks the configs are those of a full composition."""
    import copy

    from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import open_dict

    full = ConfigLoaderImpl.load_sweep_config
    if getattr(full, "__wrapped__", None) is not None:
        return

    @functools.wraps(full)
    def load_sweep_config(self, master_config, sweep_overrides):
        hydra_overrides = tuple(OmegaConf.to_container(master_config.hydra.overrides.hydra))
        key = (str(master_config.hydra.job.config_name), hydra_overrides,
               _job_shape(sweep_overrides, self.repository.group_exists))
        first = _COMPOSED.get(key)
        parsed = OverridesParser.create().parse_overrides(list(sweep_overrides))
        if first is None or len(first[0]) != len(parsed):
            cfg = full(self, master_config, sweep_overrides)
            _COMPOSED[key] = (list(sweep_overrides), copy.deepcopy(cfg))
            return cfg
        texts, composed = first
        changed = [o for o, text in zip(parsed, texts) if o.input_line != text]
        if not all(_reusable(o, self.repository.group_exists) for o in changed):
            return full(self, master_config, sweep_overrides)
        cfg = copy.deepcopy(composed)
        ConfigLoaderImpl._apply_overrides_to_config(changed, cfg)
        task = [o for o in parsed if not o.is_hydra_override()]
        with open_dict(cfg.hydra):
            cfg.hydra.overrides.task = [o.input_line for o in task]
            dirname = cfg.hydra.job.config.override_dirname
            cfg.hydra.job.override_dirname = get_overrides_dirname(
                overrides=task, kv_sep=dirname.kv_sep, item_sep=dirname.item_sep,
                exclude_keys=dirname.exclude_keys)
        OmegaConf.copy_cache(from_config=master_config, to_config=cfg)
        return cfg

    ConfigLoaderImpl.load_sweep_config = load_sweep_config


def program() -> str:
    """The running command's name for its messages."""
    name = PROGRAM[-1] if PROGRAM else Path(sys.argv[0]).name
    return name if name.startswith("ckam-bench") else "ckam-bench"


def claim_sweep_folder(folder, config):
    """Claim a sweep's folder before Hydra writes its ``multirun.yaml`` there (the text
    Hydra saves; :func:`ckam_bench.engine.outputs.claim_sweep_folder`): a ``multirun.yaml`` that no
    ckam-bench sweep wrote is never replaced — one line, exit 2, nothing changed. Returns the
    folder's previous state (:class:`ckam_bench.engine.outputs.SweepState`)."""
    from ckam_bench.engine import outputs
    from ckam_bench.engine.rundir import FolderRefused

    prog = program()
    try:
        return outputs.claim_sweep_folder(folder, OmegaConf.to_yaml(config))
    except FolderRefused as exc:
        print(f"{prog}: refused: hydra.sweep.dir: {exc}", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:
        print(f"{prog}: cannot create or write the sweep folder {folder}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        sys.exit(1)


class SweepFolderClaim(Callback):
    """Hydra callback (``conf/reference.yaml``; ckam-bench and ckam-bench-check do the same in
    :class:`ckam_bench.commands.cli.OutputFolderCheck`): :func:`claim_sweep_folder` before a sweep."""

    def on_multirun_start(self, config, **kwargs) -> None:
        claim_sweep_folder(Path(str(config.hydra.sweep.dir)), config)
