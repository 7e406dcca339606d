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
"""

from __future__ import annotations

import numpy as np

from ckam_bench import jit

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
_C_FUNCTIONS: dict = {}


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
    small regression). Kept for the process, per model."""
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
