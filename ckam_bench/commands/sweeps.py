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

Ctrl-C stops a joblib sweep (:func:`run_sweep_job`). Left alone, the sweep's process met it with
a KeyboardInterrupt, upon which joblib killed the workers (SIGKILL) while their jobs wrote their
final checkpoint; and a job that returned normally after it (one stopped while it was being
built) let joblib start the next ones. Now, while the launcher runs, the sweep's process only
notes a Ctrl-C, in an event it shares with its workers; a job whose run it stopped reports that
to the sweep (:class:`SweepStopped`), a job queued after it does not start, and joblib, told to
stop dispatching by that report, lets the running jobs end with their final checkpoint
(``interrupted``) instead of killing them. The sweep then exits with 130 and one line: the
command that resumes it.
"""

from __future__ import annotations

import contextlib
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
SWEEP_COMMAND_ENV = "CKAM_BENCH_SWEEP_COMMAND"  # the sweep's command, set by cli.OutputFolderCheck
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


def _worker_start(sweep_pid: int, stop=None) -> None:
    """loky's initializer of each worker of a joblib sweep: watch the sweep's process; reuse
    a job shape's composition (:func:`reuse_compositions`); note a Ctrl-C in ``stop``, the
    sweep's event (:func:`run_sweep_job`)."""
    watch_parent(sweep_pid)
    reuse_compositions()
    if stop is not None:
        _STOP["event"] = stop
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, _worker_interrupt)
        if hasattr(signal, "pthread_sigmask"):  # blocked while it started (_graceful)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


# ------------------------------------------------------------------ Ctrl-C of a joblib sweep
# event: the sweep's stop event (shared with its workers); stopped: this process saw a stop;
# job: a job runs in this process; execute: hydra-joblib-launcher's own execute_job;
# previous: the sweep's SIGINT handler before _catch_sigint
_STOP: dict = {}


class SweepStopped(Exception):
    """A job of a joblib sweep that Ctrl-C stopped: its run ended ``interrupted``, or it did not
    start. Raised in the worker, so that joblib stops dispatching."""


def _stopping() -> bool:
    event = _STOP.get("event")
    return bool(_STOP.get("stopped")) or (event is not None and event.is_set())


def _stop_all() -> None:
    """Note a stop here and in the sweep's event: no job of the sweep starts from now on."""
    _STOP["stopped"] = True
    event = _STOP.get("event")
    if event is not None:
        event.set()


def _worker_interrupt(signum, frame) -> None:
    """A worker's SIGINT handler outside a run (a run has its own: it stops after its block and
    writes a final checkpoint): an idle worker only notes it (it does not die, and no job it
    gets starts); a job being built is stopped, at the first one only."""
    first = not _STOP.get("stopped")
    _stop_all()
    if first and _STOP.get("job"):
        raise KeyboardInterrupt


def _sweep_interrupt(signum, frame) -> None:
    """The sweep's SIGINT handler while its jobs run: note it, raise nothing (the workers, in
    the same process group, got the Ctrl-C too and stop their runs themselves)."""
    _stop_all()


def run_sweep_job(*args, **kwargs):
    """hydra-joblib-launcher's ``execute_job`` (run in a worker) that reports a stop to the
    sweep: a job queued after a Ctrl-C does not start (no folder is made), and a job that ended
    with or after one — ``interrupted`` (exit status 130), stopped while it was built, or even
    complete — raises :class:`SweepStopped`, upon which joblib dispatches nothing more."""
    from hydra_plugins.hydra_joblib_launcher import _core

    execute = _core.execute_job
    if execute is run_sweep_job:
        execute = _STOP["execute"]
    if _stopping():
        raise SweepStopped("not started: the sweep was interrupted")
    _STOP["job"] = True
    try:
        ret = execute(*args, **kwargs)
    except KeyboardInterrupt:
        _stop_all()
        raise SweepStopped("interrupted") from None
    except SystemExit as exc:
        if exc.code != 130:
            raise
        _stop_all()
        raise SweepStopped("interrupted") from None
    finally:
        _STOP["job"] = False
    if _stopping():
        raise SweepStopped("ended as the sweep was interrupted")
    return ret


@contextlib.contextmanager
def _sigint_blocked():
    """SIGINT blocked in this (main) thread: the worker processes loky starts meanwhile
    inherit the block, so that a Ctrl-C while they import reaches them only once
    :func:`_worker_start` handles it (no traceback, no dead worker). A Ctrl-C meanwhile
    waits for the unblock; it is not lost."""
    if threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _graceful(loky):
    """joblib's loky backend, except that once the sweep is stopping, joblib's abort (which
    follows the first :class:`SweepStopped`) lets the running jobs write their final checkpoint
    and the queued ones see the stop, rather than killing the workers (SIGKILL); and workers
    start with SIGINT blocked (:func:`_sigint_blocked`)."""

    class GracefulLoky(loky):
        def configure(self, *args, **kwargs):
            with _sigint_blocked():
                return super().configure(*args, **kwargs)

        def submit(self, *args, **kwargs):
            with _sigint_blocked():
                return super().submit(*args, **kwargs)

        def abort_everything(self, ensure_ready=True):
            if not _stopping():
                return super().abort_everything(ensure_ready=ensure_ready)
            self._workers.terminate(kill_workers=False)  # waits for them
            self._workers = None
            if ensure_ready:
                self.configure(n_jobs=self.parallel.n_jobs, parallel=self.parallel)

    return GracefulLoky


def _stoppable_launch(full):
    """``JoblibLauncher.launch`` with the sweep's SIGINT handler (:func:`_sweep_interrupt`)
    while its jobs run; a stopped sweep ends with one line and exit status 130."""

    @functools.wraps(full)
    def launch(self, job_overrides, initial_job_idx):
        if "event" not in _STOP:  # not a sweep ParentWatch prepared (on_multirun_start)
            return full(self, job_overrides, initial_job_idx)
        try:
            if not _stopping():  # a Ctrl-C while the sweep's jobs were checked: none starts
                runs = full(self, job_overrides, initial_job_idx)
                if not _stopping():
                    return runs
        except BaseException as exc:  # a SweepStopped, or what a stop left (a worker died)
            if not (_stopping() or isinstance(exc, SweepStopped)):
                raise
        finally:
            _restore_sigint()
        _end_stopped(self.config)

    return launch


def _catch_sigint() -> None:
    """From the start of a joblib sweep to the end of its jobs, a Ctrl-C is noted, not raised
    (:func:`_sweep_interrupt`); not where SIGINT is ignored (a background job)."""
    if threading.current_thread() is threading.main_thread() and "previous" not in _STOP:
        previous = signal.getsignal(signal.SIGINT)
        if previous is not signal.SIG_IGN:
            _STOP["previous"] = previous
            signal.signal(signal.SIGINT, _sweep_interrupt)


def _restore_sigint() -> None:
    if "previous" in _STOP and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _STOP.pop("previous"))


def _end_stopped(config) -> None:
    """A stopped sweep's end: ckam-bench's end-of-sweep bookkeeping (its job notes; the sweep
    folder put back as it was when no job ran), one line, exit status 130."""
    cli = sys.modules.get("ckam_bench.commands.cli")
    if cli is not None and cli._SWEEP.get("token"):
        try:
            cli.OutputFolderCheck().on_multirun_end(config)
        except Exception:  # noqa: BLE001 - bookkeeping only: the runs are on disk
            pass
    command = os.environ.get(SWEEP_COMMAND_ENV)
    again = f"resume it with: {command}" if command else "run the same command again to resume it"
    sys.stderr.write(f"{program()}: sweep interrupted: no job started after it, the running "
                     f"ones stopped with a final checkpoint; {again}\n")
    sys.stderr.flush()
    raise SystemExit(130)


class ParentWatch(Callback):
    """Hydra callback: jobs of a sweep that run in worker processes end with the sweep."""

    def __init__(self):
        self._loky = None

    def on_multirun_start(self, config, **kwargs) -> None:
        os.environ[SWEEP_PID_ENV] = str(os.getpid())
        target = str(OmegaConf.select(config, "hydra.launcher._target_", default="") or "")
        if target.endswith("JoblibLauncher"):
            # the launcher asks joblib for backend="loky": its workers run _worker_start first
            from hydra_plugins.hydra_joblib_launcher import _core, joblib_launcher
            from joblib import parallel, register_parallel_backend
            from joblib.externals.loky.backend.context import get_context

            self._loky = parallel.BACKENDS["loky"]
            _STOP.clear()
            _STOP["event"] = get_context("loky").Event()
            register_parallel_backend("loky", functools.partial(
                _graceful(self._loky), initializer=_worker_start,
                initargs=(os.getpid(), _STOP["event"])))
            if _core.execute_job is not run_sweep_job:
                _STOP["execute"] = _core.execute_job
                _core.execute_job = run_sweep_job
            launch = joblib_launcher.JoblibLauncher.launch
            if getattr(launch, "__wrapped__", None) is None:
                joblib_launcher.JoblibLauncher.launch = _stoppable_launch(launch)
            _catch_sigint()

    def on_multirun_end(self, config, **kwargs) -> None:
        if self._loky is not None:
            from joblib import register_parallel_backend

            register_parallel_backend("loky", self._loky)
            self._loky = None
            _restore_sigint()
            _STOP.pop("event", None)

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


_SHAPES: dict = {}  # this process's composed configs, one per job shape (reuse_compositions)


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
        first = _SHAPES.get(key)
        parsed = OverridesParser.create().parse_overrides(list(sweep_overrides))
        if first is None or len(first[0]) != len(parsed):
            cfg = full(self, master_config, sweep_overrides)
            _SHAPES[key] = (list(sweep_overrides), copy.deepcopy(cfg))
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
