r"""nutpie driven at its native speed: the harness hands nutpie compiled C callbacks (numba
``cfunc``\ s), the way ``nutpie.compile_pymc_model(model, backend="numba")`` does, so nutpie's
Rust thread evaluates the density and hands over its draws without a Python call per
evaluation or per draw.

nutpie's numba path builds ``_lib.LogpFunc(address, user_data, keepalive)``,
``_lib.ExpandFunc(n_dim, n_expanded, address, user_data, keepalive)`` and
``_lib.PyMcModel(...)`` inside ``CompiledPyMCModel._make_model``; :class:`NativeModel` builds the
same objects around two cfuncs of ours:

* the **density** cfunc (nutpie's signature ``int64(uint64 dim, double* x, double* grad,
  double* logp, void* user_data)`` and return codes: 0 ok, 3 non-finite gradient, 4 non-finite
  log density) calls the *inner* density — nutpie's own compiled logp of a PyMC model (its
  cfunc, through its address and user data) or the target's compiled
  ``jit_log_density_and_grad`` — and counts every evaluation and every non-finite value in a
  small int64 array (the harness's ``n_density``/``n_grad`` are exactly nutpie's evaluations).
  It also keeps the points evaluated since the last draw and their values (the draw is one of
  them, or the previous draw), which gives each draw's log density without another evaluation.
  When every draw granted is done it waits — a blocking ``read`` of a pipe, no spinning and no
  polling — until the harness grants more (or closes the run).
* the **expansion** cfunc, called once per draw, copies the draw and its log density into a
  block buffer, counts it, and at the last draw granted wakes the harness (a byte down another
  pipe).

``advance(n)`` grants draws in chunks no larger than the buffer, blocks on the pipe until they
are done (``select`` with a timeout, so a chain that died is noticed) and copies them out:
exactly ``n`` draws, nutpie paused between blocks. Everything that compiles (nutpie's model, the
cfuncs) does so in the sampler's untimed ``warm_up``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
import os
import select

import numpy as np

from ckam_bench.caches import Recent

# int64 control words shared with nutpie's thread
QUOTA, DONE, EVALS, NONFINITE, CLOSING, POS, NPTS, OVERFLOW, FD_WAKE_HARNESS, FD_WAKE_NUTPIE = range(10)
N_CTL = 10
# the pointers of user_data (uint64): control words, last log density + scratch byte, block of
# draws, their log densities, evaluated points, their values, capacities, the inner user data
P_CTL, P_FCTL, P_DRAWS, P_LOGPS, P_PTS, P_VALS, P_CAP, P_PTS_CAP, P_INNER = range(9)
N_PTR = 9
CLOSED = 1
"""The density's return code once the run is closed: an error nutpie treats as recoverable, so
its chain keeps calling (each call returns at once) until the finalizer cancels the sampler,
which joins nutpie's thread; only then are the pipes closed. (−1 would make nuts-rs panic.)"""
SCRATCH_BYTES = 1 << 24
"""At most this many bytes of evaluated points are kept per draw (2^max_depth + 64 points, fewer
for a large dimension: a draw whose trajectory overflows it gets the log density NaN)."""

BLOCK_BYTES = 1 << 25
"""At most this many bytes of draws are handed over per chunk (4,096 draws, fewer above 1,024 dimensions)."""

_CFUNCS = Recent()
"""(kind, key) -> (density cfunc, expansion cfunc, inner object kept alive), for the last few
densities (the caller holds the cfuncs it got, and the object they call)."""


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    read, write = libc.read, libc.write
    for f in (read, write):
        f.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)
        f.restype = ctypes.c_ssize_t
    return read, write


def draw_settler():
    """njit ``settle(pts, vals, ctl, fctl, npts_i, overflow_i, dim, x, at) -> log π``: the log
    density of the draw ``x[at:at + dim]``, and the points kept since the last draw forgotten
    (``ctl[npts_i]``, ``ctl[overflow_i]`` reset). A draw is a point of its trajectory (the newest
    of the ``ctl[npts_i]`` points kept, rows of ``pts``, values ``vals``) or the last draw again
    (``fctl[0]``), so its log density is found without another evaluation; NaN when the points
    overflowed their store and it is not among them (nutpie's callbacks here, walnutpie's in
    :mod:`ckam_bench.samplers.walnuts`)."""
    import numba

    @numba.njit(inline="always")
    def settle(pts, vals, ctl, fctl, npts_i, overflow_i, dim, x, at):
        for j in range(ctl[npts_i] - 1, -1, -1):
            same = True
            for i in range(dim):
                if pts[j * dim + i] != x[at + i]:
                    same = False
                    break
            if same:
                fctl[0] = vals[j]
                break
        else:
            if ctl[overflow_i] != 0:
                fctl[0] = np.nan
        ctl[npts_i] = 0
        ctl[overflow_i] = 0
        return fctl[0]

    return settle


def _build(inner_call):
    """The density and expansion cfuncs around ``inner_call(dim, x, grad, logp, inner_user_data)
    -> code`` (an njit function)."""
    import numba
    from numba import carray, types

    from ckam_bench.jit import as_pointer

    libc_read, libc_write = _libc()
    settle = draw_settler()
    f8p = types.CPointer(types.float64)
    logp_sig = types.int64(types.uint64, f8p, f8p, f8p, types.voidptr)
    expand_sig = types.int64(types.uint64, types.uint64, f8p, f8p, types.voidptr)

    @numba.njit(inline="always")
    def wait_for_grant(ctl, byte):
        """nutpie's thread, every granted draw done: block on the pipe until a grant or the end;
        False once closing (the control words are re-read after every wake-up)."""
        while True:
            if ctl[CLOSING] != 0:
                return False
            if ctl[DONE] < ctl[QUOTA]:
                return True
            libc_read(ctl[FD_WAKE_NUTPIE], byte, 1)

    def density(dim, x_, grad_, logp_, user_data):
        ptr = carray(user_data, (N_PTR,), np.uint64)
        ctl = carray(as_pointer(ptr[P_CTL]), (N_CTL,), np.int64)
        if ctl[DONE] >= ctl[QUOTA] or ctl[CLOSING] != 0:
            if not wait_for_grant(ctl, as_pointer(ptr[P_FCTL] + 8)):
                return CLOSED
        ctl[EVALS] += 1
        code = inner_call(dim, x_, grad_, logp_, ptr[P_INNER])
        value = logp_[0]
        if not math.isfinite(value):  # nutpie ends the trajectory there (a divergence)
            ctl[NONFINITE] += 1
        dim = np.int64(dim)
        k, cap = ctl[NPTS], np.int64(ptr[P_PTS_CAP])
        if k < cap:
            pts = carray(as_pointer(ptr[P_PTS]), (cap * dim,), np.float64)
            vals = carray(as_pointer(ptr[P_VALS]), (cap,), np.float64)
            for i in range(dim):
                pts[k * dim + i] = x_[i]
            vals[k] = value
            ctl[NPTS] = k + 1
        else:
            ctl[OVERFLOW] = 1
        return code

    def expand(dim, n_expanded, x_, out_, user_data):
        ptr = carray(user_data, (N_PTR,), np.uint64)
        ctl = carray(as_pointer(ptr[P_CTL]), (N_CTL,), np.int64)
        if ctl[CLOSING] != 0:
            return 0
        fctl = carray(as_pointer(ptr[P_FCTL]), (2,), np.float64)
        dim, cap = np.int64(dim), np.int64(ptr[P_CAP])
        draws = carray(as_pointer(ptr[P_DRAWS]), (cap * dim,), np.float64)
        logps = carray(as_pointer(ptr[P_LOGPS]), (cap,), np.float64)
        pts_cap = np.int64(ptr[P_PTS_CAP])
        pts = carray(as_pointer(ptr[P_PTS]), (pts_cap * dim,), np.float64)
        vals = carray(as_pointer(ptr[P_VALS]), (pts_cap,), np.float64)
        pos = ctl[POS] % cap  # the harness grants at most cap draws at a time (a direct run wraps)
        for i in range(dim):
            draws[pos * dim + i] = x_[i]
        logps[pos] = settle(pts, vals, ctl, fctl, NPTS, OVERFLOW, dim, x_, 0)
        ctl[POS] = pos + 1
        ctl[DONE] += 1
        if ctl[DONE] >= ctl[QUOTA]:
            libc_write(ctl[FD_WAKE_HARNESS], as_pointer(ptr[P_FCTL] + 8), 1)
        return 0

    return numba.cfunc(logp_sig, nopython=True)(density), numba.cfunc(expand_sig, nopython=True)(expand)


def nutpie_pymc_cfuncs(compiled_model):
    """The cfuncs around nutpie's own compiled logp of a PyMC model
    (``nutpie.compile_pymc_model(model, backend="numba")``), called through its address."""
    key = ("nutpie", compiled_model.compiled_logp_func.address)
    if key not in _CFUNCS:
        import numba

        from ckam_bench.jit import as_pointer

        logp = compiled_model.compiled_logp_func.ctypes  # a ctypes function numba calls directly

        @numba.njit(inline="always")
        def call(dim, x_, grad_, logp_, inner_user_data):
            return logp(dim, x_, grad_, logp_, as_pointer(inner_user_data))

        _CFUNCS[key] = (*_build(call), compiled_model)
    return _CFUNCS[key][:2]


def harness_cfuncs(f):
    """The cfuncs around a target's compiled ``f(x, grad_out) -> log π(x)``."""
    key = ("harness", id(f))
    if key not in _CFUNCS:
        import numba
        from numba import carray

        @numba.njit(inline="always")
        def call(dim, x_, grad_, logp_, inner_user_data):
            x = carray(x_, (dim,))
            grad = carray(grad_, (dim,))
            try:
                value = f(x, grad)
            except Exception:  # noqa: BLE001 - nutpie's code for an error in the density
                logp_[0] = -np.inf
                return 1
            logp_[0] = value
            for i in range(dim):
                if not math.isfinite(grad[i]):
                    return 3
            if not math.isfinite(value):
                return 4
            return 0

        _CFUNCS[key] = (*_build(call), f)
    return _CFUNCS[key][:2]


class Gate:
    """The harness's side of the exchange: the shared control words and buffers, the pipes, and
    ``grant(n)``."""

    def __init__(self, dim: int, start_logp: float, max_depth: int, capacity: int = 4096,
                 inner_user_data: int = 0):
        self.dim = dim
        capacity = max(64, min(capacity, BLOCK_BYTES // (8 * dim)))
        self.capacity = capacity
        self.ctl = np.zeros(N_CTL, np.int64)
        self.fctl = np.array([start_logp, 0.0])
        self.draws = np.zeros((capacity, dim))
        self.logps = np.full(capacity, np.nan)
        pts_cap = max(64, min(2**max_depth + 64, SCRATCH_BYTES // (8 * dim)))
        self.pts = np.zeros((pts_cap, dim))
        self.vals = np.zeros(pts_cap)
        self.harness_r, self.harness_w = os.pipe()  # nutpie -> harness: the grant is done
        self.nutpie_r, self.nutpie_w = os.pipe()  # harness -> nutpie: more draws, or closing
        self.ctl[FD_WAKE_HARNESS], self.ctl[FD_WAKE_NUTPIE] = self.harness_w, self.nutpie_r
        self.user_data = np.array([self.ctl.ctypes.data, self.fctl.ctypes.data, self.draws.ctypes.data,
                                   self.logps.ctypes.data, self.pts.ctypes.data, self.vals.ctypes.data,
                                   capacity, pts_cap, inner_user_data], dtype=np.uint64)
        self.open = True

    @property
    def done(self) -> int:
        return int(self.ctl[DONE])

    def grant(self, n: int, finished):
        """Let ``n`` more draws happen and wait for them (``finished()`` true: the chain died).
        Returns the draws (n, d), their log densities, the density evaluations and the
        non-finite ones among them."""
        draws, logps, done = np.empty((n, self.dim)), np.empty(n), 0
        while done < n:
            m = min(self.capacity, n - done)
            self.ctl[POS] = 0
            self.ctl[QUOTA] += m
            os.write(self.nutpie_w, b"g")
            while self.ctl[DONE] < self.ctl[QUOTA]:
                ready, _, _ = select.select([self.harness_r], [], [], 0.2)
                if ready:
                    os.read(self.harness_r, 64)
                elif self.ctl[DONE] < self.ctl[QUOTA] and finished():
                    raise RuntimeError("nutpie's chain stopped")
            draws[done:done + m] = self.draws[:m]
            logps[done:done + m] = self.logps[:m]
            done += m
        evals, nonfinite = int(self.ctl[EVALS]), int(self.ctl[NONFINITE])
        self.ctl[EVALS] = self.ctl[NONFINITE] = 0
        return draws, logps, evals, nonfinite

    def close(self) -> None:
        """Stop granting: nutpie's next density call returns an error that ends its chain."""
        if self.ctl[CLOSING] == 0:
            self.ctl[CLOSING] = 1
            os.write(self.nutpie_w, b"c")

    def release(self) -> None:
        """Close the pipes (only once nutpie's thread has stopped: it may be reading one)."""
        if self.open:
            self.open = False
            for fd in (self.harness_r, self.harness_w, self.nutpie_r, self.nutpie_w):
                os.close(fd)


def native_model(n_dim: int, cfuncs, gate: Gate, start, keepalive):
    """A nutpie ``CompiledModel`` whose sampler runs our cfuncs (no expanded variables: the
    harness keeps the draws; nutpie keeps its statistics only)."""
    from nutpie import _lib
    from nutpie.sample import CompiledModel

    @dataclasses.dataclass(frozen=True)
    class NativeModel(CompiledModel):
        @property
        def n_dim(self):
            return n_dim

        @property
        def shapes(self):
            return {}

        @property
        def coords(self):
            return {}

        def _make_model(self, init_mean):
            keep = (gate, cfuncs, keepalive)
            address = gate.user_data.ctypes.data
            logp_fn = _lib.LogpFunc(cfuncs[0].address, address, keep)
            expand_fn = _lib.ExpandFunc(n_dim, 0, cfuncs[1].address, address, keep)
            variables = _lib.PyVariable.new_variables([], [], [], {}, {})
            return _lib.PyMcModel(logp_fn, expand_fn, variables, n_dim, {}, {}, start, None)

        def _make_sampler(self, settings, init_mean, cores, progress_type, *rest):
            # rest: (store,) up to nutpie 0.16.8; (extra_callback, extra_callback_rate, store)
            # from 0.16.9: handed on as nutpie's own CompiledPyMCModel._make_sampler does
            return _lib.PySampler.from_pymc(settings, cores, self._make_model(init_mean),
                                            progress_type, *rest)

    return NativeModel(dims={})


def finished(background) -> bool:
    """Whether nutpie's chain has stopped (its error, if it failed, is raised here)."""
    try:
        return background.is_finished
    except TimeoutError:  # nutpie's way of saying "still running"
        return False


def shutdown(gate, background) -> None:
    """Close the gate, cancel nutpie's sampler (it joins its thread) and release the pipes."""
    gate.close()
    try:
        background.cancel()
    except BaseException:  # noqa: BLE001 - nutpie reports a stopped chain's error again on cancel
        pass
    try:
        stopped = finished(background)
    except BaseException:  # noqa: BLE001 - a failed chain has stopped
        stopped = True
    if stopped and isinstance(gate, Gate):
        gate.release()


__all__ = ["Gate", "native_model", "nutpie_pymc_cfuncs", "harness_cfuncs", "finished", "shutdown"]
