r"""Optional compiled inner loops (numba): availability, the on/off switch, shared helpers.

A sampler runs its per-iteration loop as a numba-compiled *kernel* when all of these hold:

* numba imports (a dependency, but every sampler also works without it);
* the switch is on: the environment variable ``CKAM_BENCH_JIT`` is unset, or set to anything
  but ``0``, ``false``, ``no`` or ``off`` (``CKAM_BENCH_JIT=0`` forces the Python loops; it is
  read when a sampler binds to a target, in ``init`` and ``warm_up``);
* the target has ``jit_log_density()``, returning a compiled ``f(x: float64[::1]) -> float64``
  with exactly the math of its ``_log_density`` (uncounted; NaN and ±inf come out the same).

Otherwise the sampler runs its Python loop, the reference the kernel mirrors line by line.
(KAM's loop stays in Python either way; with numba and the switch on it calls compiled
helpers.) With the switch off, no numba code runs at all.
Both consume the same pre-drawn random numbers in the same order and count one density
evaluation per proposal, so a seed gives the same chain on either path up to the rounding of
the density (in practice the same accept decisions).

Kernels receive the log density as a first-class function (numba ``FunctionType`` of
signature ``float64(float64[::1])``, :data:`DENSITY`), so each kernel is compiled once, for
one explicit signature, whatever target it runs on, and cached on disk (``cache=True``;
numba falls back to another cache folder, or to compiling in memory, when the package folder
is not writable). :func:`compiled_log_density` hands samplers a :class:`CompiledDensity`: the
target's compiled function plus a C-callable copy (``numba.cfunc``) whose address numba
passes to a kernel in a few µs (passing the jitted function itself costs ~100 µs per call,
which would dominate short blocks). A target's density is compiled once per process for each
set of parameter values (:func:`bind_density`; ~0.2 s for the C copy, and ~0.1 s more for the
jitted function when Python code calls it). Samplers compile in ``warm_up``, before the
sampler clock starts; a kernel called without a warm-up compiles at its first call.

Which loop ran: every call of a compiled kernel (:class:`Kernel`) adds one to
:data:`KERNEL_CALLS` (:func:`ran_compiled`; samplers whose compiled loops are not a
:class:`Kernel` call it themselves), so the runner can tell, per block, whether a compiled loop
ran and record it in ``status.json`` (``provenance.loops``: compiled, python or mixed).

The disk cache is keyed by content, not by place (:class:`PackageCacheLocator`). The package's
compiled functions are cached in :func:`compiled_cache_dir` (``~/.cache/ckam-bench/compiled``
by default), stamped with :func:`source_digest`: the SHA-256 of every ``.py`` file that compiled
code can reach (every floor below the engine, :data:`ABOVE_THE_LOOPS`). A fresh clone or a
reinstall of the same source loads them; an edit that compiled code can reach, in any module,
recompiles them once; an edit of the engine, the commands or the report keeps them. (numba's own
key, the defining file's modification time and size, changes with every clone and misses a
changed helper in another module that a cached kernel inlined or called: found after a ``git
pull``, a kernel kept the old code of a reverted fix.) A plugin's function compiled through
:func:`helper`/:func:`kernel` is cached where numba puts it, stamped with the source of its own
top-level package as well (:class:`PluginSourceLocator`).
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import pathlib

import numpy as np

from ckam_bench.caches import MODELS_KEPT, Recent

try:
    import numba
    from numba import types
    from numba.extending import typeof_impl
except ImportError:  # numba is optional: every sampler falls back to its Python loop
    numba = None

__all__ = ["AVAILABLE", "source_digest", "ENV", "KERNEL_CALLS", "ran_compiled", "enabled", "compiled_log_density", "CompiledDensity", "bind_density",
           "kernel", "helper", "log_uniform", "cholesky_into", "compiled_log_density_and_grad", "compiled_hessian",
           "bind_density_and_grad", "gradient_kernel", "jitable", "as_pointer", "numpy_sum", "as_enabled", "record_accept", "keyed_cfunc"]

AVAILABLE = numba is not None
ENV = "CKAM_BENCH_JIT"

if AVAILABLE:
    import warnings

    from numba.core.errors import NumbaIRAssumptionWarning

    # numba's SSA pass re-checks variable scopes after IR inlining and, for helpers inlined with
    # ``inline="always"`` that hold a loop or a short-circuit (the NUTS tree's), reports their
    # renamed variables as "not in scope": a pedantic self-check of numba's, not about the code
    # (the compiled chains equal the Python loops' bit for bit, tests/samplers/test_nuts_fisher.py)
    warnings.filterwarnings("ignore", category=NumbaIRAssumptionWarning)

_OFF = {"0", "false", "no", "off"}

if AVAILABLE:
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def as_pointer(typingctx, address):
        """An integer address as a void pointer, inside compiled code (for ``numba.carray``
        over a buffer that compiled code reads without receiving it as an argument)."""

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], cgutils.voidptr_t)

        return types.voidptr(types.intp), codegen

    F8, B1 = types.float64, types.boolean
    A1, A2 = types.float64[::1], types.float64[:, ::1]
    DENSITY_SIGNATURE = types.float64(A1)
    DENSITY = types.FunctionType(DENSITY_SIGNATURE)
    """Type of a compiled log density: float64(float64[::1])."""
    _Protocol = types.WrapperAddressProtocol
else:
    F8 = B1 = A1 = A2 = DENSITY_SIGNATURE = DENSITY = as_pointer = None
    _Protocol = object


KERNEL_CALLS = 0
"""Calls of compiled loops in this process so far (see :func:`ran_compiled`)."""


def ran_compiled() -> None:
    """Record that a compiled loop ran (called by :class:`Kernel` on every call)."""
    global KERNEL_CALLS
    KERNEL_CALLS += 1


def enabled() -> bool:
    """True when numba is importable and ``CKAM_BENCH_JIT`` does not switch compiled loops off."""
    return AVAILABLE and os.environ.get(ENV, "1").strip().lower() not in _OFF


def as_enabled(fn):
    """``fn`` (a :func:`helper`) compiled when :func:`enabled`, else its plain Python function
    (what a Python loop calls per iteration, read at the time of the call)."""
    return fn if enabled() else getattr(fn, "py_func", fn)


class CompiledDensity(_Protocol):
    """A target's compiled log density, for kernels (numba's wrapper address protocol: the
    address of its ``numba.cfunc`` copy) and for Python code (calling it calls the jitted
    function)."""

    def __init__(self, jitted):
        self.jitted = jitted
        self._cfunc = numba.cfunc(DENSITY_SIGNATURE)(jitted.py_func)

    def __wrapper_address__(self) -> int:
        return self._cfunc.address

    def signature(self):
        return DENSITY_SIGNATURE

    def __call__(self, x) -> float:
        return self.jitted(x)


if AVAILABLE:

    @typeof_impl.register(CompiledDensity)
    def _typeof_compiled_density(value, context):
        return DENSITY


_WRAPPED = Recent(2 * MODELS_KEPT)  # jitted (or (wrapper, jitted)) -> its C-callable copy, the last few


def compiled_log_density(target) -> CompiledDensity | None:
    """The target's compiled log density when compiled loops are to be used, else None."""
    if not enabled():
        return None
    make = getattr(target, "jit_log_density", None)
    if make is None:
        return None
    jitted = make()
    wrapped = _WRAPPED.get(jitted)
    if wrapped is None:
        wrapped = _WRAPPED[jitted] = CompiledDensity(jitted)
    return wrapped


PACKAGE = pathlib.Path(__file__).resolve().parent

ABOVE_THE_LOOPS = ("engine", "commands", "report", "checks", "posteriordb/build.py", "interop.py",
                   "api.py", "_moved.py", "__init__.py")
"""The modules (paths under the package) of the floors above the compiled code (docs/layout.md:
engine, commands, report, checks, the facade). No compiled function lives in them, and no
module below imports them (tests/test_house.py, tests/test_jit.py), so they cannot change what
a compiled function does, and editing them keeps the compiled cache."""


def _tree_digest(root: pathlib.Path, skip=()) -> str:
    """SHA-256 of every ``.py`` file under ``root`` (but those under a ``skip`` path): its path
    and bytes, in path order."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if any(relative == s or relative.startswith(s + "/") for s in skip):
            continue
        digest.update(relative.encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def source_digest() -> str:
    """SHA-256 of the package's Python source that compiled code can reach: every ``.py`` file
    of the floors from the helpers up to the posteriordb suite (all but :data:`ABOVE_THE_LOOPS`),
    its path and bytes, in path order (computed once per process, a few ms)."""
    return _tree_digest(PACKAGE, ABOVE_THE_LOOPS)


@functools.cache
def _plugin_digest(root: pathlib.Path) -> str:
    return _tree_digest(root)


def _plugin_root(py_file) -> pathlib.Path | None:
    """The top-level package folder of a plugin's source file (the highest folder above it that
    holds an ``__init__.py``), whose source stamps the plugin's cached functions as this
    package's stamps its own; None for a module outside a package (numba's stamp of the file
    covers it) or for this package's own files."""
    try:
        path = pathlib.Path(py_file).resolve()
    except (OSError, TypeError, ValueError):
        return None
    if path.is_relative_to(PACKAGE) or not (path.parent / "__init__.py").is_file():
        return None
    root = path.parent
    while (root.parent / "__init__.py").is_file():
        root = root.parent
    return root


_STAMPED: set = set()
"""Plain functions compiled through :func:`_njit` (a plugin's helpers and kernels included)."""


def _inside(py_file) -> bool:
    try:
        return pathlib.Path(py_file).resolve().is_relative_to(PACKAGE)
    except (OSError, ValueError, TypeError):
        return False


def _stamped(py_func, py_file) -> bool:
    return _inside(py_file) or py_func in _STAMPED


COMPILED_CACHE_ENV = "CKAM_BENCH_COMPILED_CACHE"


def compiled_cache_dir() -> pathlib.Path:
    """Where the package's compiled functions are cached: ``$CKAM_BENCH_COMPILED_CACHE``, else
    ``$NUMBA_CACHE_DIR/ckam-bench``, else ``~/.cache/ckam-bench/compiled``; below it, one folder
    per numba version."""
    env = os.environ.get(COMPILED_CACHE_ENV)
    if env:
        root = pathlib.Path(env).expanduser()
    elif os.environ.get("NUMBA_CACHE_DIR"):
        root = pathlib.Path(os.environ["NUMBA_CACHE_DIR"]).expanduser() / "ckam-bench"
    else:
        root = pathlib.Path.home() / ".cache" / "ckam-bench" / "compiled"
    return root / f"numba-{numba.__version__ if AVAILABLE else 'none'}"


if AVAILABLE:
    from numba.core import caching as _caching

    class PackageCacheLocator(_caching._CacheLocator):
        """The package's own compiled functions, cached by content, not by place: in
        :func:`compiled_cache_dir` under the function's folder within the package, stamped with
        :func:`source_digest` alone. So a fresh clone, a reinstall or another checkout of the
        same source loads them instead of compiling again, and any change to the source that
        compiled code can reach (a helper of another module included) recompiles once. (numba's
        own stamp, the file's modification time and size, changes with every clone and misses
        a changed helper in another module.) numba keys the entries within by signature and
        CPU, and names them after the module, function and line."""

        def __init__(self, py_func, py_file):
            relative = pathlib.Path(py_file).resolve().relative_to(PACKAGE)
            self._path = compiled_cache_dir() / "ckam_bench" / relative.parent
            self._lineno = py_func.__code__.co_firstlineno

        def get_cache_path(self):
            return str(self._path)

        def get_source_stamp(self):
            return source_digest()

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            if not _inside(py_file):
                return None
            self = cls(py_func, py_file)
            try:
                self.ensure_cache_path()
            except OSError:  # not writable: numba's own locators take over (PluginSourceLocator)
                return None
            return self

    class PluginSourceLocator(_caching._CacheLocator):
        """numba's first suitable cache locator, its freshness stamp extended with the digest of
        the plugin package's source (:func:`_plugin_digest`) for a plugin's functions compiled
        through :func:`helper`/:func:`kernel`, and with :func:`source_digest` for this package's
        functions where :class:`PackageCacheLocator` cannot write. A stale index reads as
        empty, so numba recompiles and overwrites it."""

        def __init__(self, inner, plugin_root=None):
            self._inner = inner
            self._plugin_root = plugin_root

        def ensure_cache_path(self):
            self._inner.ensure_cache_path()

        def get_cache_path(self):
            return self._inner.get_cache_path()

        def get_source_stamp(self):
            if self._plugin_root is None:
                return self._inner.get_source_stamp(), source_digest()
            return self._inner.get_source_stamp(), source_digest(), _plugin_digest(self._plugin_root)

        def get_disambiguator(self):
            return self._inner.get_disambiguator()

        @classmethod
        def from_function(cls, py_func, py_file):
            if not _stamped(py_func, py_file):
                return None
            for other in _caching.CacheImpl._locator_classes:
                if other not in (cls, PackageCacheLocator):
                    inner = other.from_function(py_func, py_file)
                    if inner is not None:
                        return cls(inner, _plugin_root(py_file))
            return None

    for _locator in (PluginSourceLocator, PackageCacheLocator):  # PackageCacheLocator first
        if _locator not in _caching.CacheImpl._locator_classes:
            _caching.CacheImpl._locator_classes.insert(0, _locator)


_KEYED: dict = {}
"""The function :func:`keyed_cfunc` is compiling: the plain function's id -> (function, key)."""

if AVAILABLE:

    class KeyedCacheLocator(_caching._CacheLocator):
        """A C-callable compiled from generated source (:func:`keyed_cfunc`), cached in
        :func:`compiled_cache_dir` ``/keyed`` under the key its caller gives: the SHA-256 of
        every code the function can reach (for a PyMC model, pytensor's key of the compiled
        graph, constants included, and the library versions). numba then loads it in any
        process that builds the same key instead of compiling it again."""

        def __init__(self, key):
            self._key = key
            self._py_file = "<ckam-bench keyed cfunc>"  # where numba's "cannot cache" warning points

        def get_cache_path(self):
            return str(compiled_cache_dir() / "keyed")

        def get_source_stamp(self):
            return self._key

        def get_disambiguator(self):
            return self._key[:32]

        @classmethod
        def from_function(cls, py_func, py_file):
            entry = _KEYED.get(id(py_func))
            if entry is None or entry[0] is not py_func:
                return None
            self = cls(entry[1])
            try:
                self.ensure_cache_path()
            except OSError:  # not writable: compiled in memory (keyed_cfunc)
                return None
            return self

    _caching.CacheImpl._locator_classes.insert(0, KeyedCacheLocator)


def keyed_cfunc(source: str, name: str, env: dict, signature, key: str | None):
    """``numba.cfunc(signature)`` of the function ``name`` defined by ``source`` with the
    globals ``env``, loaded from the disk cache when a function of the same ``key`` was
    compiled before (:class:`KeyedCacheLocator`). ``key`` must change whenever anything the
    function can reach changes (its source and every function in ``env``); None compiles it
    in memory."""
    namespace = {**env, "__name__": __name__}  # numba rebuilds a cached function's globals from it
    exec(compile(source, f"<ckam-bench keyed {name}>", "exec"), namespace)
    fn = namespace[name]
    if key is None:
        return numba.cfunc(signature)(fn)
    key = hashlib.sha256(f"{key}\0{source}\0{signature}".encode()).hexdigest()
    _KEYED[id(fn)] = (fn, key)
    try:  # a cfunc is compiled (or loaded) here, when it is made: its locator is not asked later
        return numba.cfunc(signature, cache=True)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available" (not writable)
        return numba.cfunc(signature)(fn)
    finally:
        del _KEYED[id(fn)]


def _njit(fn, **options):
    """numba.njit with the disk cache when a cache folder is available, else without."""
    _STAMPED.add(fn)
    try:
        return numba.njit(cache=True, **options)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(**options)(fn)


def helper(fn):
    """Decorator for a compiled helper called from kernels (the plain function without numba)."""
    return _njit(fn) if AVAILABLE else fn


class Kernel:
    """A compiled inner loop: ``fn(log_density, *args)`` for one explicit signature.

    ``compile()`` compiles it (or loads it from the disk cache) for ``(DENSITY, *arg_types)``
    and forbids any other specialisation, so arguments of another type are an error instead of
    a silent recompilation inside the timed loop. Calling it compiles first if needed.
    """

    def __init__(self, fn, arg_types: tuple, first: tuple | None = None):
        self.py_func = fn
        self.signature = (*((DENSITY,) if first is None else first), *arg_types)
        self._dispatcher = None

    def compile(self) -> None:
        if self._dispatcher is None:
            dispatcher = _njit(self.py_func)
            dispatcher.compile(self.signature)
            dispatcher.disable_compile()
            self._dispatcher = dispatcher

    def __call__(self, *args):
        if self._dispatcher is None:
            self.compile()
        ran_compiled()
        return self._dispatcher(*args)


def kernel(*arg_types):
    """Decorator: a :class:`Kernel` whose first argument is a compiled log density and whose
    other arguments have the numba types ``arg_types`` (e.g. ``A1, F8, A2``). Without numba
    it returns the plain function (never called: samplers then run their Python loops)."""

    def wrap(fn):
        return Kernel(fn, arg_types) if AVAILABLE else fn

    return wrap


_DENSITIES: dict = {}


def bind_density(fn, *params):
    """The compiled density ``x ↦ fn(x, params)``, ``fn`` a :func:`helper` and ``params`` a
    target's parameters (arrays and floats, frozen into the compiled function as constants).

    Memoised on the parameter values, so targets with equal parameters (the same factory
    called twice) share one compiled function. Returns None without numba.
    """
    if not AVAILABLE:
        return None
    key = (fn, tuple((np.asarray(p).dtype.str, np.shape(p), np.asarray(p).tobytes()) for p in params))
    compiled = _DENSITIES.get(key)
    if compiled is None:

        def log_density(x):
            return fn(x, params)

        compiled = numba.njit(log_density)  # compiled at its first call from Python, if any
        _DENSITIES[key] = compiled
    return compiled


@helper
def acceptance(r):
    """min(1, e^r) for a log acceptance ratio r; 0 for a non-finite r (NaN or −∞: a rejection
    with probability 0, so step-size adaptation shrinks after it)."""
    if r == r and r > -math.inf:
        return 1.0 if r >= 0.0 else math.exp(r)
    return 0.0


@helper
def record_accept(r, log_u, i, s, slot, accepted, records):
    """One iteration's accept step in a compiled step: α = :func:`acceptance` (r) into
    ``records[0, i]``, a NaN or −∞ r counted in ``s[slot]``, the decision log u_i < r into
    ``accepted[i]``; returns (α, accepted)."""
    alpha = acceptance(r)
    if not r > -math.inf:  # NaN or −∞
        s[slot] += 1.0
    accept = log_u[i] < r
    accepted[i] = accept
    records[0, i] = alpha
    return alpha, accept


@helper
def log_uniform(z):
    """log Φ(z) for a standard normal z: a log-uniform, for samplers that pre-draw all their
    random numbers as one normal block; stable in the lower tail."""
    if z > -5.0:
        return math.log(0.5 * math.erfc(-z / math.sqrt(2.0)))
    # asymptotic series of log Φ for z → −∞ (relative error < 1e-7 at z = −5)
    z2 = z * z
    return -0.5 * z2 - math.log(-z) - 0.5 * math.log(2.0 * math.pi) + math.log(
        1.0 - 1.0 / z2 + 3.0 / (z2 * z2) - 15.0 / (z2 * z2 * z2))


@helper
def cholesky_into(a, shift, tol, out):
    """Lower Cholesky factor of ``a + shift·I`` into ``out`` (upper triangle zeroed), reading
    the lower triangle of ``a``; False as soon as a pivot L_jj² is not > 0 (NaN included) or is
    ≤ tol·(a_jj + shift). tol = 0 is LAPACK ``dpotrf``'s success rule."""
    d = a.shape[0]
    for j in range(d):
        s = a[j, j] + shift
        for k in range(j):
            s -= out[j, k] * out[j, k]
        if not s > 0.0 or s <= tol * (a[j, j] + shift):
            return False
        pivot = math.sqrt(s)
        out[j, j] = pivot
        for i in range(j):
            out[i, j] = 0.0
        for i in range(j + 1, d):
            s = a[i, j]
            for k in range(j):
                s -= out[i, k] * out[j, k]
            out[i, j] = s / pivot
    return True



# ---------------------------------------------------------------------------- gradients
# Gradient-based samplers receive the log density *and* its gradient in one compiled call,
# ``f(x: float64[::1], grad_out: float64[::1]) -> float64`` (writes ∇ log π(x) into
# ``grad_out``, returns log π(x)), from a target's ``jit_log_density_and_grad()``; and, for
# gadMALA exact, the Hessian ``h(x: float64[::1], hess_out: float64[:, ::1]) -> float64``
# (writes ∇² log π(x); the return value is not used) from ``jit_hessian_log_density()``. Both follow
# exactly the math of the target's uncounted ``_log_density``/``_grad_log_density``/
# ``_hessian_log_density`` and are passed to kernels like the density above.
if AVAILABLE:
    DENSITY_GRAD_SIGNATURE = types.float64(A1, A1)
    DENSITY_GRAD = types.FunctionType(DENSITY_GRAD_SIGNATURE)
    HESSIAN_SIGNATURE = types.float64(A1, A2)
    HESSIAN = types.FunctionType(HESSIAN_SIGNATURE)
else:
    DENSITY_GRAD_SIGNATURE = DENSITY_GRAD = HESSIAN_SIGNATURE = HESSIAN = None


class CompiledDensityGrad(CompiledDensity):
    """A target's compiled ``f(x, grad_out) -> log π(x)`` (see :class:`CompiledDensity`)."""

    def __init__(self, jitted):
        self.jitted = jitted
        self._cfunc = numba.cfunc(DENSITY_GRAD_SIGNATURE)(jitted.py_func)

    def signature(self):
        return DENSITY_GRAD_SIGNATURE

    def __call__(self, x, out) -> float:
        return self.jitted(x, out)


class CompiledHessian(CompiledDensity):
    """A target's compiled ``h(x, hess_out)`` writing ∇² log π(x) (see :class:`CompiledDensity`)."""

    def __init__(self, jitted):
        self.jitted = jitted
        self._cfunc = numba.cfunc(HESSIAN_SIGNATURE)(jitted.py_func)

    def signature(self):
        return HESSIAN_SIGNATURE

    def __call__(self, x, out) -> float:
        return self.jitted(x, out)


if AVAILABLE:

    @typeof_impl.register(CompiledDensityGrad)
    def _typeof_compiled_density_grad(value, context):
        return DENSITY_GRAD

    @typeof_impl.register(CompiledHessian)
    def _typeof_compiled_hessian(value, context):
        return HESSIAN


def _compiled(target, method: str, wrapper):
    if not enabled():
        return None
    make = getattr(target, method, None)
    if make is None:
        return None
    jitted = make()
    if jitted is None:
        return None
    wrapped = _WRAPPED.get((wrapper, jitted))
    if wrapped is None:
        wrapped = _WRAPPED[(wrapper, jitted)] = wrapper(jitted)
    return wrapped


def compiled_log_density_and_grad(target) -> CompiledDensityGrad | None:
    """The target's compiled density-and-gradient when compiled loops are to be used, else None."""
    return _compiled(target, "jit_log_density_and_grad", CompiledDensityGrad)


def compiled_hessian(target) -> CompiledHessian | None:
    """The target's compiled Hessian when compiled loops are to be used, else None."""
    return _compiled(target, "jit_hessian_log_density", CompiledHessian)


def bind_density_and_grad(fn, *params):
    """Like :func:`bind_density` for ``fn(x, out, params)`` (a density-and-gradient or a
    Hessian helper): the compiled ``(x, out) ↦ fn(x, out, params)``. None without numba."""
    if not AVAILABLE:
        return None
    key = (fn, tuple((np.asarray(p).dtype.str, np.shape(p), np.asarray(p).tobytes()) for p in params))
    compiled = _DENSITIES.get(key)
    if compiled is None:

        def with_output(x, out):
            return fn(x, out, params)

        compiled = numba.njit(with_output)
        _DENSITIES[key] = compiled
    return compiled


def gradient_kernel(*arg_types, hessian: bool = False):
    """Decorator: a :class:`Kernel` whose first argument is a compiled density-and-gradient
    (:data:`DENSITY_GRAD`), followed by a compiled Hessian when ``hessian``, then arguments of
    the numba types ``arg_types``. Without numba it returns the plain function."""

    def wrap(fn):
        if not AVAILABLE:
            return fn
        first = (DENSITY_GRAD, HESSIAN) if hessian else (DENSITY_GRAD,)
        return Kernel(fn, arg_types, first)

    return wrap


def jitable(fn=None, *, inline: bool = False):
    """Decorator for a helper shared by a kernel and its Python loop: compiled into kernels
    that call it (``numba.extending.register_jitable``), a plain Python function when Python
    calls it (so the Python loops run no numba code). ``@jitable(inline=True)`` inlines it into
    its callers at numba's IR level: an array view passed to a compiled call costs a reference
    count taken and dropped (~7 ns), which inlining lets numba prune (the NUTS tree's helpers,
    called several times per leapfrog step on rows of one work array)."""
    if fn is None:
        return functools.partial(jitable, inline=inline)
    if not AVAILABLE:
        return fn
    from numba.extending import register_jitable

    return register_jitable(inline="always")(fn) if inline else register_jitable(fn)


@helper
def numpy_sum(v):
    """np.sum(v) term for term in compiled code: numpy's pairwise summation (halves of a
    multiple of 8 terms down to blocks of ≤ 128, each summed by eight interleaved accumulators,
    or in order under 8 terms), here with an explicit stack instead of recursion."""
    los, ns, halves = np.zeros(64, np.int64), np.zeros(64, np.int64), np.zeros(64, np.int64)
    partial = np.zeros(64)  # sums of finished left halves
    top, total, lo, n = 0, 0.0, 0, v.shape[0]
    while True:
        while n > 128:  # descend into the left half, remembering the right one
            half = n // 2 - (n // 2) % 8
            los[top], ns[top], halves[top] = lo + half, n - half, 0
            top += 1
            n = half
        if n < 8:
            total = 0.0
            for j in range(lo, lo + n):
                total += v[j]
        else:
            r = v[lo:lo + 8].copy()
            end = lo + n - n % 8
            for j in range(lo + 8, end, 8):
                for k in range(8):
                    r[k] += v[j + k]
            total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
            for j in range(end, lo + n):
                total += v[j]
        while top > 0 and halves[top - 1] == 1:  # a right half done: left + right
            top -= 1
            total = partial[top] + total
        if top == 0:
            return 0.0 + total
        partial[top - 1], halves[top - 1] = total, 1  # a left half done: on to its right half
        lo, n = los[top - 1], ns[top - 1]
