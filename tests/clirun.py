"""``subprocess.run`` for the package's own commands, without paying the interpreter's start-up.

A command-line test runs ``ckam-bench …`` (or another console script of the package,
``python -m <module>``, ``python -c <code>``) as a new process: the exit code, the one-line
error, the files left on disk are what a user gets. Most of such a process is the ~1.2 s of
importing numpy, pandas, numba, Hydra and the package before the command's first line. Here a
*zygote* — an interpreter started once per test worker and environment, with the command-line
module, scipy.stats and PyMC already imported (:data:`PRELOAD`) and the default config
composed once — forks a child per command: the child sets the command's environment,
working folder, ``sys.argv`` and ``sys.path[0]`` as the interpreter would, points its standard
streams at files, runs the entry point, runs the ``atexit`` handlers and exits with the code
the interpreter would give (``SystemExit``'s code; 1 and the traceback on stderr for an
uncaught exception). The child is a real process: a crash, ``os._exit`` or a kill in it
touches neither the zygote nor the test.

Used only where that is exact; anything else is handed to :func:`subprocess.run` unchanged:
* a command other than the package's console scripts, ``python -m`` and ``python -c``;
* standard input, or any keyword beyond ``cwd``, ``env``, ``timeout``, ``capture_output``,
  ``text``, ``check``;
* an environment that differs from the zygote's in a variable read at import time (every
  variable except :data:`RUNTIME` and ``CKAM_BENCH_*``, which the package reads only when a
  command runs): a new zygote is started for it (:data:`MAX_ZYGOTES` per worker), so
  ``NUMBA_*``, ``OPENBLAS_NUM_THREADS`` or ``PYTHONPATH`` act as in a new process;
* a ``PYTHONPATH`` entry holding a ``sitecustomize`` or Hydra plugins (``hydra_plugins``), or
  a module the zygote imported from elsewhere;
* a zygote whose imports printed anything (a warning a real process would print every time).

``CKAM_BENCH_TEST_FORK=0`` turns it off (every command a new interpreter);
``CKAM_BENCH_TEST_FORK_LOG=<file>`` appends a line per command saying how it ran and its seconds (``fork``;
``nozyg``: no zygote for its environment; ``plain``: not a command of the package).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNTIME = frozenset({"PYTEST_CURRENT_TEST", "HYDRA_FULL_ERROR", "COLUMNS", "LINES"})
"""Variables no import reads (besides ``CKAM_BENCH_*``, read when a command runs)."""
IMPORT_TIME_CKAM = frozenset({"CKAM_BENCH_COMPILED_CACHE"})
"""The package variables that decide where numba's cache is registered: treated as import-time."""
MAX_ZYGOTES = 6
PRELOAD = ("ckam_bench.commands.cli", "scipy.stats")
"""Imported by the zygote (with ``pymc`` when installed): the command line, and what most
commands import next. Then it composes the default config once (:func:`_warm_hydra`); nothing a
command reads is cached but Hydra's plugin registry."""
_ZYGOTES: dict[tuple, "_Zygote | None"] = {}
_SEEN: dict[tuple, int] = {}
_KWARGS = {"cwd", "env", "timeout", "capture_output", "text", "check"}


@functools.lru_cache(maxsize=1)
def _console_scripts() -> dict[str, str]:
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group="console_scripts")
            if ep.dist is not None and ep.dist.name.replace("_", "-") == "ckam-bench"}


def _plan(args, env) -> dict | None:
    """What the child runs for ``args`` (kind, target, argv, path0), or None: not ours."""
    if isinstance(args, (str, bytes)) or not args:
        return None
    args = [os.fspath(a) for a in args]
    if args[0] == sys.executable and len(args) >= 3 and args[1] in ("-m", "-c"):
        if args[1] == "-m":
            return {"kind": "module", "target": args[2], "argv": [args[2], *args[3:]], "path0": None}
        return {"kind": "code", "target": args[2], "argv": ["-c", *args[3:]], "path0": ""}
    scripts = _console_scripts()
    name = Path(args[0]).name
    if name not in scripts:
        return None
    found = shutil.which(args[0], path=env.get("PATH"))
    bindir = Path(sys.executable).parent
    if found is None or Path(found).parent.resolve() != bindir.resolve():
        return None
    return {"kind": "entry", "target": scripts[name], "argv": [found, *args[1:]],
            "path0": str(Path(found).parent)}


def _key(env: dict) -> tuple:
    """The zygote an environment needs: its import-time variables (``PYTHONPATH`` apart: a child
    puts its entries on ``sys.path`` itself, :func:`_shadows`)."""
    return tuple(sorted((k, v) for k, v in env.items() if k not in RUNTIME and k != "PYTHONPATH"
                        and (not k.startswith("CKAM_BENCH_") or k in IMPORT_TIME_CKAM)))


def _python_path(env: dict, cwd: str) -> list[str]:
    """``PYTHONPATH``'s entries as the interpreter puts them on ``sys.path`` (absolute)."""
    return [os.path.abspath(os.path.join(cwd, e))
            for e in env.get("PYTHONPATH", "").split(os.pathsep) if e]


def _shadows(entries: list[str], loaded: dict[str, str | None]) -> bool:
    """Whether a ``PYTHONPATH`` entry holds a top-level module the zygote has imported from
    elsewhere (a new interpreter would import that one instead), or a ``sitecustomize``."""
    for entry in entries:
        try:
            names = {n.split(".")[0] for n in os.listdir(entry)}
        except OSError:
            continue
        if names & {"sitecustomize", "usercustomize"}:  # run at an interpreter's start only
            return True
        if "hydra_plugins" in names:  # the zygote's Hydra plugin registry lacks its plugins
            return True
        for name in names & loaded.keys():
            where = loaded[name]
            if where is None or not os.path.abspath(where).startswith(entry.rstrip(os.sep) + os.sep):
                return True
    return False


_BOOT = ("import importlib.util as u; s = u.spec_from_file_location('ckam_zygote', %r); "
         "m = u.module_from_spec(s); s.loader.exec_module(m); m.serve()" % __file__)
"""The zygote's command: this file as module ``ckam_zygote`` (not ``__main__``, so a warning
attributed past the command's own frames is filtered as in a new interpreter), ``sys.path[0]``
the empty entry ``python -c`` gives, which each child sets as its command would."""


class _Zygote:
    def __init__(self, env: dict):
        self.home = tempfile.mkdtemp(prefix="ckam-zygote-")  # its empty working folder
        self.log = open(os.path.join(self.home, "log"), "wb")
        self.proc = subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, env=env, cwd=self.home)
        line = self.proc.stdout.readline()
        printed = Path(self.log.name).read_bytes()
        try:
            self.loaded = json.loads(line)["loaded"]
        except (ValueError, KeyError):
            self.loaded = None
        if self.loaded is None or printed:
            self.close()
            raise RuntimeError(f"zygote not usable: {line[:200]!r} {printed[:200]!r}")

    def run(self, plan: dict, cwd: str, env: dict, timeout) -> tuple[int | None, bytes, bytes]:
        with tempfile.TemporaryDirectory(prefix="ckam-fork-") as tmp:
            out, err = Path(tmp, "out"), Path(tmp, "err")
            request = {**plan, "cwd": cwd, "env": env, "stdout": str(out), "stderr": str(err),
                       "timeout": timeout, "python_path": _python_path(env, cwd)}
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
            reply = self.proc.stdout.readline()
            if not reply:
                raise RuntimeError("zygote died")
            rc = json.loads(reply)["rc"]
            return rc, out.read_bytes(), err.read_bytes()

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.home, ignore_errors=True)


def _zygote(env: dict, cwd: str) -> _Zygote | None:
    """The zygote for ``env``, started at the second command that needs it (a zygote costs one
    command's imports, and more with PyMC), at the first for the tests' own environment, which
    most commands use; None: a new interpreter runs the command."""
    key = _key(env)
    _SEEN[key] = _SEEN.get(key, 0) + 1
    if key not in _ZYGOTES:
        first = 1 if key == _key(dict(os.environ)) else 2  # the tests' own environment: many
        if _SEEN[key] < first or sum(z is not None for z in _ZYGOTES.values()) >= MAX_ZYGOTES:
            return None
        try:
            _ZYGOTES[key] = _Zygote({k: v for k, v in env.items() if k != "PYTHONPATH"})
        except (OSError, RuntimeError):
            _ZYGOTES[key] = None
    zygote = _ZYGOTES[key]
    if zygote is not None and _shadows(_python_path(env, cwd), zygote.loaded):
        return None
    return zygote


@atexit.register
def _close_all():
    for zygote in _ZYGOTES.values():
        if zygote is not None:
            zygote.close()


def run(args, **kwargs) -> subprocess.CompletedProcess:
    """:func:`subprocess.run` (module docstring): same arguments, same result."""
    env = dict(kwargs.get("env") if kwargs.get("env") is not None else os.environ)
    plan = None if set(kwargs) - _KWARGS or os.environ.get("CKAM_BENCH_TEST_FORK") == "0" \
        else _plan(args, env)
    cwd = os.path.abspath(kwargs.get("cwd") or os.getcwd())
    zygote = _zygote(env, cwd) if plan is not None else None
    start = time.perf_counter()
    try:
        if zygote is None:
            return subprocess.run(args, **kwargs)
        rc, out, err = zygote.run(plan, cwd, env, kwargs.get("timeout"))
    finally:
        if os.environ.get("CKAM_BENCH_TEST_FORK_LOG"):
            with open(os.environ["CKAM_BENCH_TEST_FORK_LOG"], "a") as fh:
                fh.write(f"{'fork' if zygote else ('nozyg' if plan else 'plain')}\t"
                         f"{len(_ZYGOTES)}\t{time.perf_counter() - start:.3f}\t"
                         f"{os.environ.get('PYTEST_CURRENT_TEST', '')}\t{str(args)[:150]}\n")
    timeout = kwargs.get("timeout")
    if kwargs.get("text"):
        out, err = out.decode(errors="replace"), err.decode(errors="replace")
    if rc is None:
        raise subprocess.TimeoutExpired(args, timeout, output=out, stderr=err)
    if not kwargs.get("capture_output"):
        for stream, data in ((sys.stdout, out), (sys.stderr, err)):
            stream.write(data if isinstance(data, str) else data.decode(errors="replace"))
        out = err = None
    proc = subprocess.CompletedProcess(args, rc, out, err)
    if kwargs.get("check"):
        proc.check_returncode()
    return proc


# ------------------------------------------------------------------------------ the zygote
def _child(request: dict) -> None:
    """In the forked child: become the command (module docstring); never returns."""
    import traceback

    code = 1
    try:
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        os.closerange(3, 256)
        path0 = os.getcwd() if request["path0"] is None else request["path0"]
        rest = [p for p in sys.path[1:] if p not in request["python_path"]]
        sys.path[:] = [path0, *dict.fromkeys(request["python_path"]), *rest]
        sys.argv = list(request["argv"])
        code = 0
        kind, target = request["kind"], request["target"]
        if kind == "module":
            import runpy

            # as in a new interpreter, the module runs as __main__ without being imported first
            # (its own ``import`` of itself, if any, then imports it anew)
            sys.modules.pop(target, None)
            parent, _, child = target.rpartition(".")
            if parent and parent in sys.modules and hasattr(sys.modules[parent], child):
                delattr(sys.modules[parent], child)
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        elif kind == "code":
            import __main__

            exec(compile(target, "<string>", "exec"), __main__.__dict__)
        else:
            from importlib.metadata import EntryPoint

            # a console script's wrapper: sys.exit(main()), so main's return value is the code
            raise SystemExit(EntryPoint(name="", value=target, group="console_scripts").load()())
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException as exc:  # noqa: BLE001 - the interpreter's report, without this frame
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


def _warm_hydra() -> None:
    """Compose the default config once, as every command does first (0.3 s of each command):
    what stays is Hydra's plugin registry, found from the installed packages as a new
    interpreter finds it (a ``PYTHONPATH`` entry holding ``hydra_plugins`` gets a new
    interpreter, :func:`_shadows`), the launcher config the package registers, and the modules
    composing imports; the plugin module's once-per-process notes are forgotten."""
    from hydra import compose, initialize_config_module

    from ckam_bench.commands import plugins

    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        compose("config")
    plugins._noted.clear()


def serve() -> None:
    """The zygote: import the command line, then fork a child per request line on stdin."""
    import importlib
    import signal

    reply = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # an import that prints goes to the log the parent checks
    for name in PRELOAD:
        importlib.import_module(name)
    try:
        import pymc  # noqa: F401 - the [pymc] extra: 1.4 s of every PyMC command
    except ImportError:
        pass
    _warm_hydra()
    loaded = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())
              if "." not in name and module is not None}
    reply.write(json.dumps({"loaded": loaded}).encode() + b"\n")
    for line in sys.stdin.buffer:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            reply.close()
            _child(request)
        deadline = None if request["timeout"] is None else time.monotonic() + request["timeout"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                rc = os.waitstatus_to_exitcode(status)
                break
            if deadline is not None and time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                rc = None
                break
            time.sleep(0.002)
        reply.write(json.dumps({"rc": rc}).encode() + b"\n")

