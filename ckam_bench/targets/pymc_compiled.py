"""A PyMC model's density as compiled code the samplers' loops call, and its disk cache.

pytensor compiles the model's log density and gradient with its numba backend and caches that
code on disk under its own key of the graph (constants included). Calling those jitted
functions from another compiled function makes numba link and optimise the whole graph's code
again (3–4 s for a small regression), in every process. So the harness wraps each in a
C-callable ``c_logp(x, n, data, m)`` / ``c_both(x, n, data, m, grad_out)`` compiled once per
machine and loaded from the disk cache by every later process (:func:`ckam_bench.jit.keyed_cfunc`,
keyed by pytensor's key of the graph and the library versions; a graph pytensor gives no key
compiles in memory), and each target gets two small njit-ed wrappers ``f(x)`` and
``f(x, grad_out)`` that call them by address with the target's data buffer (~0.1 s to compile).

pytensor's own compilation of the graphs (its rewrites: 0.3 s for a small regression, 2.4 s for
an HMM) is cached on disk too: the compiled functions are pickled under a key of the graph
(:func:`graph_sha256`: every node's op and inputs, every constant's bytes, the library versions)
and loaded by the next process on the same graph (0.05–0.7 s). A pickle runs code when loaded:
the cache is the user's own folder (:func:`ckam_bench.jit.compiled_cache_dir`), as numba's is.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ckam_bench import jit
from ckam_bench.caches import Recent

if jit.AVAILABLE:
    import ctypes

    import numba
    from numba import types as _nt

    _C_SIGNATURES = {"c_logp": _nt.float64(_nt.voidptr, _nt.intp, _nt.voidptr, _nt.intp),
                     "c_both": _nt.float64(_nt.voidptr, _nt.intp, _nt.voidptr, _nt.intp, _nt.voidptr)}
    _C_TYPES = {"c_logp": ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.c_ssize_t,
                                           ctypes.c_void_p, ctypes.c_ssize_t),
                "c_both": ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.c_ssize_t,
                                           ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_void_p)}

_C_SOURCE = {
    "c_logp": """
def c_logp(x_ptr, n, data_ptr, m):
    return inner(carray(x_ptr, (n,), float64), carray(data_ptr, (m,), float64))[0][()]
""",
    "c_both": """
def c_both(x_ptr, n, data_ptr, m, grad_ptr):
    logp, grad = inner(carray(x_ptr, (n,), float64), carray(data_ptr, (m,), float64))
    carray(grad_ptr, (n,), float64)[:] = grad
    return logp[()]
"""}
_C_FUNCTIONS = Recent()
"""(spec, stored names) -> {name: numba cfunc}, for the last few models."""


def graph_key(fn) -> str | None:
    """pytensor's own cache key of a function compiled in NUMBA mode: the SHA-256 of its
    rewritten graph, constants included (the key under which pytensor caches the graph's numba
    code on disk); None when pytensor has none (an op without a key) or does not say."""
    try:
        from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS

        key = CACHED_SRC_FUNCTIONS.get(fn.vm.jit_fn.py_func)
    except (ImportError, AttributeError, TypeError):
        return None
    if key is None:
        return None
    import pytensor

    return f"{key}\0pytensor {pytensor.__version__}\0numba {numba.__version__}"


def c_functions(key: tuple, logp_fn, both_fn) -> dict:
    """C-callable ``c_logp(x, n, data, m)`` and ``c_both(x, n, data, m, grad_out)`` around
    pytensor's jitted functions: compiled once per machine and loaded from the disk cache by
    every later process (:func:`ckam_bench.jit.keyed_cfunc`, keyed by pytensor's key of each
    graph), since compiling them links and optimises the whole graph's code again (3–4 s for a
    small regression). Kept for the last few models (:mod:`ckam_bench.caches`); each user holds
    the dict it got."""
    made = _C_FUNCTIONS.get(key)
    if made is None:
        made = {}
        for name, fn in (("c_logp", logp_fn), ("c_both", both_fn)):
            env = {"inner": fn.vm.jit_fn, "carray": numba.carray, "float64": np.float64}
            made[name] = jit.keyed_cfunc(_C_SOURCE[name], name, env, _C_SIGNATURES[name], graph_key(fn))
        _C_FUNCTIONS[key] = made
    return made


def compile_wrappers(c_functions: dict, buffer: np.ndarray):
    """njit-ed ``f(x) -> log π(x)`` and ``f(x, grad_out) -> log π(x)`` calling the model's
    C-callables (:func:`c_functions`) by address with the target's data buffer, read through
    its address (the buffer belongs to the target, which keeps it alive and fixed in place).
    Small: they compile in ~0.1 s, as they call the graph's code rather than compile it in."""
    c_logp = _C_TYPES["c_logp"](c_functions["c_logp"].address)
    c_both = _C_TYPES["c_both"](c_functions["c_both"].address)
    address, n = buffer.ctypes.data, buffer.shape[0]
    as_pointer = jit.as_pointer

    def log_density(x):
        x = np.ascontiguousarray(x)
        return c_logp(as_pointer(x.ctypes.data), x.shape[0], as_pointer(address), n)

    def log_density_and_grad(x, grad_out):
        x = np.ascontiguousarray(x)
        return c_both(as_pointer(x.ctypes.data), x.shape[0], as_pointer(address), n,
                      as_pointer(grad_out.ctypes.data))

    return numba.njit(log_density), numba.njit(log_density_and_grad)


# ---------------------------------------------------------------------------- pytensor's functions
_LIBRARIES = ("pytensor", "pymc", "numpy", "scipy", "numba", "builtins", "copyreg", "collections",
              "functools", "operator", "_codecs", "__builtin__")


def graph_sha256(inputs: list, outputs: list, settings: str) -> str | None:
    """A key of the graph from ``inputs`` to ``outputs``, from bytes alone and the same in every
    process: each node in topological order as its op's class, the SHA-256 of the op's pickle
    (its every property) and where its inputs come from (an input's position, an earlier
    node's output, or a constant's or shared value's dtype, shape and bytes), with ``settings``
    and the library versions. An op whose pickle names a function or class outside the
    libraries (a model's own Op, ``as_op``) adds the SHA-256 of that module's source file.
    None when the graph holds something without bytes (an object constant, a random
    generator, a free variable): such a graph is not cached."""
    import hashlib
    import pickle
    import pickletools
    import sys

    import pytensor
    import pymc
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import io_toposort

    from ckam_bench.data import content_sha256

    where = {id(v): f"in{k}" for k, v in enumerate(inputs)}

    def source(v) -> str | None:
        if id(v) in where:
            return where[id(v)]
        if isinstance(v, (Constant, SharedVariable)):
            value = np.asarray(v.data if isinstance(v, Constant) else v.get_value(borrow=True))
            if value.dtype.hasobject:
                return None
            text = (f"{type(v).__name__} {v.type} {value.dtype.str} {value.shape} "
                    f"{hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}")
            where[id(v)] = text
            return text
        return None  # a free variable: not an input, no value

    modules: set[str] = set()
    digest = hashlib.sha256(f"{settings}\0pytensor {pytensor.__version__}\0pymc {pymc.__version__}"
                            f"\0numpy {np.__version__}\0python {sys.version}".encode())
    for k, node in enumerate(io_toposort(inputs, outputs)):
        sources = [source(v) for v in node.inputs]
        if None in sources:
            return None
        try:
            op = pickle.dumps(node.op, protocol=2)
        except Exception:  # an op that does not pickle cannot be loaded either
            return None
        for opcode, arg, _ in pickletools.genops(op):
            if opcode.name == "GLOBAL" and str(arg).split(" ")[0].split(".")[0] not in _LIBRARIES:
                modules.add(str(arg).split(" ")[0])
        digest.update(repr((type(node.op).__module__, type(node.op).__qualname__,
                            hashlib.sha256(op).hexdigest(), sources,
                            [str(o.type) for o in node.outputs])).encode())
        for j, out in enumerate(node.outputs):
            where[id(out)] = f"n{k}.{j}"
    for name in sorted(modules):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path is None:
            return None
        digest.update(f"{name} {content_sha256(path)}".encode())
    for out in outputs:
        if source(out) is None and id(out) not in where:
            return None
    return digest.hexdigest()


def _functions_path(key: str):
    return jit.compiled_cache_dir() / "pytensor" / f"{key}.pkl"


def load_functions(key: str | None, count: int):
    """The ``count`` pytensor functions stored under ``key`` (:func:`store_functions`), or None
    (none stored, or no key). A file that cannot be read as such is set aside (renamed
    ``<name>.damaged-<time>``, never deleted) and None returned: the caller compiles afresh."""
    import pickle
    import time

    try:
        from pytensor.compile.executor import Function  # pytensor 3
    except ImportError:  # pytensor 2.38
        from pytensor.compile.function.types import Function

    if key is None:
        return None
    path = _functions_path(key)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        functions = pickle.loads(data)
        if not (isinstance(functions, tuple) and len(functions) == count
                and all(isinstance(f, Function) for f in functions)):
            raise ValueError("not the functions stored")
        return functions
    except Exception:  # a truncated or foreign file, or one of another library's making
        try:
            path.rename(path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}"))
        except OSError:
            pass
        return None


def store_functions(key: str | None, functions: tuple) -> None:
    """Store compiled pytensor functions under ``key`` (written atomically; a cache folder that
    cannot be written is no error: the next process compiles them again)."""
    import pickle

    from ckam_bench.files import atomic_write

    if key is None:
        return
    path = _functions_path(key)
    try:
        data = pickle.dumps(functions, protocol=pickle.HIGHEST_PROTOCOL)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))
    except Exception:  # an unwritable cache, a function that does not pickle
        pass
