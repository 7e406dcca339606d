r"""WALNUTS (within-orbit adaptive step-size NUTS) as a peer, through walnutpie 0.0.3.

walnutpie runs WALNUTS with nutpie-style warm-up adaptation. Its Python entry point
(``walnutpie.walnuts_pyfunc``) blocks until every draw is done and returns the draws only, so
the harness drives walnutpie's own C entry point (``walnutpie._ffi._ffi_sample_cfunc``, which
``walnuts_pyfunc`` calls) on a background thread, with a buffer of ours, and holds the chain
at an exact number of draws from inside the density callback:

* the output buffer is ours (one chain, ``burn_in + max_draws + 1`` rows, warm-up rows saved:
  row i is iteration i). walnutpie writes each draw into it as soon as the draw is done (it
  does; ``walnuts_pyfunc``'s own buffer would only be readable after the call returns). The
  rows the chain may write next are NaN-filled before they are granted, so a written row is a
  row whose first coordinate is no longer NaN. Rows already handed over are given back to the
  kernel (``madvise(MADV_DONTNEED)``), so a long run holds about one block of draws in memory.
* the density is a numba ``cfunc`` of walnutpie's signature ``int(size_t n, double* x,
  double* grad, double* logp, void* user_data)`` around the target's compiled
  ``jit_log_density_and_grad`` (or, for a target without one, a ctypes callback around its
  Python density). Before evaluating, it looks at the row after the last draw it has seen: a
  draw written since its last call is counted (every iteration of WALNUTS evaluates the
  density at least once, so a draw is seen at the first evaluation of the next iteration, before
  that evaluation is made or counted). Once the draws granted are done it wakes the harness (a
  byte down a pipe) and blocks on another pipe until ``advance`` grants more. Every evaluation
  it lets through is counted, so the harness's ``n_density``/``n_grad`` are exactly
  walnutpie's evaluations up to the last draw of each block. It also keeps the points
  evaluated since the last draw with their values: a draw is one of them or the previous
  draw, so its log density comes without another evaluation.
* closing: walnutpie offers no way to stop a chain early except its SIGINT handler, which
  sets a process-wide flag its controller checks (an error returned by the density is only a
  rejected step to walnutpie: the chain would go on to its last iteration, ~40 µs each). The
  harness sets that flag itself (found in the library's ELF symbol table: a private symbol of
  0.0.3, the pinned version), lets the blocked callback return an error, and joins the thread:
  walnutpie stops within a millisecond. The flag being process-wide, one walnutpie chain runs
  per process at a time: starting one closes any other still open.

Limitations, stated in the docs too: walnutpie reports neither per-draw step sizes nor
acceptance statistics (the block's acceptance is "the chain moved", its step size NaN);
its chain state lives on its thread, so a killed run restarts from its first iteration
(``resumable = False``); while walnutpie samples, its SIGINT handler replaces the process's
(a Ctrl-C ends walnutpie's chain; the harness then forwards the signal to its own handler and
ends the block with the draws done).
"""

from __future__ import annotations

import ctypes
import math
import os
import select
import signal
import struct
import threading
import weakref

import numpy as np

from ckam_bench import jit
from ckam_bench.caches import Recent
from ckam_bench.samplers.base import Block, Sampler, check_start
from ckam_bench.samplers.hamiltonian import check_burn_in, check_fraction
from ckam_bench.samplers.nutpie_native import draw_settler
from ckam_bench.samplers.peers import (HARNESS_COMPILED, PHASES, PeerState, _warm_start_check,
                                       check_installed, library_version, require)
from ckam_bench.targets.base import Target

PYTHON_DENSITY = "python callback (ctypes)"
"""describe()'s ``density`` of a target without a compiled density (or ``CKAM_BENCH_JIT=0``):
a Python call per evaluation."""

# int64 control words shared with walnutpie's chain thread
QUOTA, DONE, EVALS, NONFINITE, CLOSING, NPTS, OVERFLOW, FD_WAKE_HARNESS, FD_WAKE_CHAIN, ROWS = range(10)
N_CTL = 10
# the pointers of user_data (uint64): control words, last log density + scratch byte, the output
# buffer, the draws' log densities, evaluated points, their values, the points' capacity
P_CTL, P_FCTL, P_OUT, P_LOGPS, P_PTS, P_VALS, P_PTS_CAP = range(7)
N_PTR = 7
ERROR = 1
"""The density's error code (walnutpie's own trampoline returns 1 for an exception), returned
only once the harness closes the chain: walnutpie 0.0.3 rejects a step on it inside a
trajectory but ends the chain on it in its first step-size search. A failed or non-finite
evaluation returns code 0 with log density -inf and a zero gradient, which walnutpie rejects
everywhere (a NaN gradient would end its chain too)."""
SCRATCH_BYTES = 1 << 24
MAX_DOUBLINGS = 14
MAX_HALVINGS = 10
FLAG_SYMBOL = "_ZN8walnutpy9interruptL11interruptedE"
"""walnutpie 0.0.3's SIGINT flag (``walnutpy::interrupt::interrupted``, a static bool)."""
ANCHOR_SYMBOL = "walnutpie_separator_char"
"""An exported function of the same library: its address minus its symbol value is the base."""

_CFUNCS = Recent()
_OPEN: "weakref.WeakSet[_Chain]" = weakref.WeakSet()
_FLAG = []


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    read, write, madvise = libc.read, libc.write, libc.madvise
    for f in (read, write):
        f.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)
        f.restype = ctypes.c_ssize_t
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    madvise.restype = ctypes.c_int
    return read, write, madvise


def _elf_symbols(path: str, wanted: set) -> dict:
    """Values of the symbols ``wanted`` in an ELF64 little-endian shared library (.symtab and
    .dynsym)."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return {}
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    found = {}
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        strtab = sections[link][4]
        for at in range(offset, offset + size, entsize or 24):
            name_at, _, _, _, value, _ = struct.unpack_from("<IBBHQQ", data, at)
            start = strtab + name_at
            name = data[start:data.index(b"\0", start)].decode("ascii", "replace")
            if name in wanted:
                found[name] = value
    return found


def interrupt_flag():
    """walnutpie's process-wide interrupt flag as a ctypes bool (ValueError naming the version
    if this walnutpie has none where 0.0.3 has it)."""
    if not _FLAG:
        from walnutpie import _ffi

        symbols = _elf_symbols(_ffi._lib._name, {FLAG_SYMBOL, ANCHOR_SYMBOL})
        if set(symbols) != {FLAG_SYMBOL, ANCHOR_SYMBOL}:
            raise ValueError(f"walnutpie: no stop flag found in {_ffi._lib._name} "
                             f"({library_version('walnutpie')}); the harness supports walnutpie 0.0.3 on Linux")
        anchor = ctypes.cast(getattr(_ffi._lib, ANCHOR_SYMBOL), ctypes.c_void_p).value
        _FLAG.append(ctypes.c_bool.from_address(anchor - symbols[ANCHOR_SYMBOL] + symbols[FLAG_SYMBOL]))
    return _FLAG[0]


# ---------------------------------------------------------------------------- the density callbacks
def _build(inner_call):
    """walnutpie's density cfunc around ``inner_call(dim, x, grad, logp)`` (njit; it writes the
    log density, -inf for a failed evaluation, and the gradient)."""
    import numba
    from numba import carray, types

    from ckam_bench.jit import as_pointer

    libc_read, libc_write, _ = _libc()
    settle = draw_settler()
    f8p = types.CPointer(types.float64)
    sig = types.int32(types.uintp, f8p, f8p, f8p, types.voidptr)

    def density(n, x_, grad_, logp_, user_data):
        ptr = carray(user_data, (N_PTR,), np.uint64)
        ctl = carray(as_pointer(ptr[P_CTL]), (N_CTL,), np.int64)
        if ctl[CLOSING] != 0:
            return ERROR
        dim = np.int64(n)
        rows = ctl[ROWS]
        out = carray(as_pointer(ptr[P_OUT]), (rows * dim,), np.float64)
        logps = carray(as_pointer(ptr[P_LOGPS]), (rows,), np.float64)
        fctl = carray(as_pointer(ptr[P_FCTL]), (2,), np.float64)
        pts_cap = np.int64(ptr[P_PTS_CAP])
        pts = carray(as_pointer(ptr[P_PTS]), (pts_cap * dim,), np.float64)
        vals = carray(as_pointer(ptr[P_VALS]), (pts_cap,), np.float64)
        seen = False
        while ctl[DONE] < rows and not math.isnan(out[ctl[DONE] * dim]):  # a draw written since
            k = ctl[DONE]
            logps[k] = settle(pts, vals, ctl, fctl, NPTS, OVERFLOW, dim, out, k * dim)
            ctl[DONE] = k + 1
            seen = True
        if seen and ctl[DONE] >= ctl[QUOTA]:
            libc_write(ctl[FD_WAKE_HARNESS], as_pointer(ptr[P_FCTL] + 8), 1)
        while ctl[DONE] >= ctl[QUOTA]:  # every draw granted is done: wait for a grant
            if ctl[CLOSING] != 0:
                return ERROR
            libc_read(ctl[FD_WAKE_CHAIN], as_pointer(ptr[P_FCTL] + 8), 1)
        if ctl[CLOSING] != 0:
            return ERROR
        ctl[EVALS] += 1
        inner_call(dim, x_, grad_, logp_)
        value = logp_[0]
        if not math.isfinite(value):
            ctl[NONFINITE] += 1
        k = ctl[NPTS]
        if k < pts_cap:
            for i in range(dim):
                pts[k * dim + i] = x_[i]
            vals[k] = value
            ctl[NPTS] = k + 1
        else:
            ctl[OVERFLOW] = 1
        return 0

    return numba.cfunc(sig, nopython=True)(density)


def harness_cfunc(f):
    """The density cfunc around a target's compiled ``f(x, grad_out) -> log π(x)``: code 0; an
    exception or a non-finite value or gradient gives log density -inf (walnutpie rejects) and a
    zero gradient (a NaN gradient enters walnutpie's step-size search and ends its chain)."""
    key = ("harness", id(f))
    if key not in _CFUNCS:
        import numba
        from numba import carray

        @numba.njit(inline="always")
        def call(dim, x_, grad_, logp_):
            x = carray(x_, (dim,))
            grad = carray(grad_, (dim,))
            try:
                value = f(x, grad)
                ok = math.isfinite(value)
                for i in range(dim):
                    ok = ok and math.isfinite(grad[i])
            except Exception:  # noqa: BLE001 - an error in the density: -inf, walnutpie rejects
                ok = False
            if ok:
                logp_[0] = value
            else:  # -inf and a zero gradient: walnutpie rejects, and no NaN enters its state
                logp_[0] = -np.inf
                for i in range(dim):
                    grad[i] = 0.0

        _CFUNCS[key] = (_build(call), f)
    return _CFUNCS[key][0]


def _quiet_print():
    """walnutpie's message callback as a cfunc that drops the messages (a rejected evaluation
    prints one per call: a Python callback would cost a Python call each)."""
    if "print" not in _CFUNCS:
        import numba
        from numba import types
        from walnutpie._ffi import print_callback_type

        @numba.cfunc(types.void(types.voidptr, types.uintp, types.boolean), nopython=True)
        def quiet(message, size, is_error):
            return

        _CFUNCS["print"] = (print_callback_type(quiet.address), quiet)
    return _CFUNCS["print"][0]


class _PythonDensity:
    """The density as a ctypes callback around the target's Python density, with the same
    counting and gate as the compiled one (a Python call per evaluation)."""

    def __init__(self, target: Target):
        from walnutpie._ffi import logp_cfunc_type

        self.target = target
        self.chain = None

        def density(n, x_, grad_, logp_, user_data):
            return self.chain.python_density(int(n), x_, grad_, logp_)

        self.callback = logp_cfunc_type(density)


# ---------------------------------------------------------------------------- the chain
class _Chain:
    """One walnutpie chain on a background thread: the shared control words and buffers, the
    pipes, ``grant(n)`` and ``close()``."""

    def __init__(self, dim: int, start, start_logp: float, rows: int, max_doublings: int,
                 max_halvings: int, density, settings: dict, seed: int):
        for other in list(_OPEN):  # walnutpie's interrupt flag is process-wide
            other.close()
        self.dim, self.rows = dim, rows
        self.ctl = np.zeros(N_CTL, np.int64)
        self.ctl[ROWS] = rows
        self.fctl = np.array([start_logp, 0.0])
        self.out = np.zeros((1, rows, dim))  # calloc: pages are backed once written
        self.logps = np.zeros(rows)
        per_draw = 2 ** max_doublings * 2 ** max_halvings + 64
        pts_cap = max(64, min(per_draw, SCRATCH_BYTES // (8 * dim)))
        self.pts, self.vals = np.zeros((pts_cap, dim)), np.zeros(pts_cap)
        self.harness_r, self.harness_w = os.pipe()  # chain -> harness: the grant is done
        self.chain_r, self.chain_w = os.pipe()  # harness -> chain: more draws, or closing
        self.ctl[FD_WAKE_HARNESS], self.ctl[FD_WAKE_CHAIN] = self.harness_w, self.chain_r
        self.user_data = np.array([self.ctl.ctypes.data, self.fctl.ctypes.data, self.out.ctypes.data,
                                   self.logps.ctypes.data, self.pts.ctypes.data, self.vals.ctypes.data,
                                   pts_cap], dtype=np.uint64)
        self.taken = 0  # rows handed to the harness
        self.filled = 0  # rows NaN-filled so far
        self.released = 0  # bytes of the buffer given back to the kernel
        self.error: BaseException | None = None
        self.interrupted = False
        self.closed = False
        self._madvise = _libc()[2]
        self._python = None
        if isinstance(density, _PythonDensity):
            density.chain = self
            self._python = density
            callback = density.callback
        else:
            callback = density.ctypes
        self._fill(1)
        flag = interrupt_flag()
        flag.value = False
        from walnutpie._ffi import _ffi_sample_cfunc

        quiet = _quiet_print()
        inits = np.ascontiguousarray(np.asarray(start, float).reshape(1, dim))
        lengths, step = np.zeros(2, np.int32), np.zeros(1)
        self.step = step
        args = (callback, self.user_data.ctypes.data, dim, inits, 1, seed, 1, 2.0, None,
                settings["burn_in"], settings["burn_in"], rows - settings["burn_in"],
                rows - settings["burn_in"], max_doublings, max_halvings, 1, 0.5, 0.1, 1.0, 1.01, 4.0,
                1e-5, 15.0, 1.0, settings["target_accept"], 0.05, 0.8, 0.9, 1e-4, 0.5, True, self.out,
                self.out.size, lengths, step, None, 0, quiet)

        def run():
            try:
                _ffi_sample_cfunc(*args)
            except KeyboardInterrupt as exc:
                self.error = exc
                flag.value = False  # walnutpie's call is over: the flag is for the next chain
                if not self.ctl[CLOSING]:  # a Ctrl-C walnutpie's own handler caught: the harness's turn
                    self.interrupted = True
                    signal.raise_signal(signal.SIGINT)
            except BaseException as exc:  # noqa: BLE001 - reported by grant
                self.error = exc
            finally:
                try:
                    os.write(self.harness_w, b"e")
                except OSError:
                    pass

        self.thread = threading.Thread(target=run, name="walnutpie", daemon=True)
        _OPEN.add(self)
        self.thread.start()

    # the Python density's side of the gate (the compiled one does this in its cfunc)
    def python_density(self, dim, x_, grad_, logp_) -> int:
        ctl = self.ctl
        if ctl[CLOSING]:
            return ERROR
        seen = False
        while ctl[DONE] < self.rows and not math.isnan(self.out[0, ctl[DONE], 0]):
            k = int(ctl[DONE])
            draw = self.out[0, k]
            for j in range(int(ctl[NPTS]) - 1, -1, -1):
                if np.array_equal(self.pts[j], draw):
                    self.fctl[0] = self.vals[j]
                    break
            else:
                if ctl[OVERFLOW]:
                    self.fctl[0] = np.nan
            self.logps[k] = self.fctl[0]
            ctl[NPTS] = ctl[OVERFLOW] = 0
            ctl[DONE] = k + 1
            seen = True
        if seen and ctl[DONE] >= ctl[QUOTA]:
            os.write(self.harness_w, b"d")
        while ctl[DONE] >= ctl[QUOTA]:
            if ctl[CLOSING]:
                return ERROR
            os.read(self.chain_r, 1)
        if ctl[CLOSING]:
            return ERROR
        ctl[EVALS] += 1
        x = np.ctypeslib.as_array(x_, (dim,)).copy()
        target = self._python.target
        try:
            value, grad = _uncounted(target, x)
        except Exception:  # noqa: BLE001 - -inf: walnutpie rejects
            value, grad = -math.inf, np.full(dim, math.nan)
        if not (math.isfinite(value) and np.all(np.isfinite(grad))):
            # walnutpie rejects -inf (an error code can end its chain); a NaN gradient beside it
            # would enter its step-size search and end the chain ("macro_time must be in (0, inf)")
            value, grad = -math.inf, np.zeros(dim)
            ctl[NONFINITE] += 1
        logp_[0] = value
        np.ctypeslib.as_array(grad_, (dim,))[:] = grad
        k = int(ctl[NPTS])
        if k < self.pts.shape[0]:
            self.pts[k], self.vals[k] = x, value
            ctl[NPTS] = k + 1
        else:
            ctl[OVERFLOW] = 1
        return 0

    def _fill(self, upto: int) -> None:
        """NaN-fill the rows the chain may write next, up to ``upto`` (exclusive)."""
        upto = min(upto, self.rows)
        if upto > self.filled:
            self.out[0, self.filled:upto] = np.nan
            self.filled = upto

    def _release(self) -> None:
        """Give the pages of rows already handed over back to the kernel (read as zeros again;
        neither side reads them)."""
        page = 4096
        start = self.out.ctypes.data
        end_bytes = (start + self.taken * self.dim * 8) // page * page - start
        first = -(-(start + self.released) // page) * page
        if end_bytes - (first - start) >= (1 << 20):
            self._madvise(first, end_bytes - (first - start), 4)  # MADV_DONTNEED
            self.released = end_bytes

    def grant(self, n: int):
        """Let ``n`` more draws happen and wait for them. Returns the draws (m, d) with m = n
        (fewer only when a Ctrl-C ended walnutpie's chain), their log densities, the density
        evaluations and the rejected (non-finite or failed) ones among them."""
        if self.closed:
            raise RuntimeError("walnutpie's chain is closed")
        goal = self.taken + n
        if goal >= self.rows:
            raise RuntimeError("walnutpie ran out of rows")  # checked by the sampler first
        self._fill(goal + 1)
        self.ctl[QUOTA] = goal
        os.write(self.chain_w, b"g")
        while self.ctl[DONE] < goal:
            ready, _, _ = select.select([self.harness_r], [], [], 0.2)
            if ready:
                os.read(self.harness_r, 64)
            if self.ctl[DONE] < goal and not self.thread.is_alive():
                if self.interrupted:
                    goal = int(self.ctl[DONE])
                    break
                raise RuntimeError(f"walnutpie's chain stopped: {self.error!r}")
        draws = self.out[0, self.taken:goal].copy()
        logps = self.logps[self.taken:goal].copy()
        self.taken = goal
        self._release()
        evals, rejected = int(self.ctl[EVALS]), int(self.ctl[NONFINITE])
        self.ctl[EVALS] = self.ctl[NONFINITE] = 0
        return draws, logps, evals, rejected

    def close(self) -> None:
        """Stop walnutpie's chain (its interrupt flag), join its thread, close the pipes."""
        if self.closed:
            return
        self.closed = True
        _OPEN.discard(self)
        self.ctl[CLOSING] = 1
        flag = interrupt_flag()
        if self.thread.is_alive():
            flag.value = True
            os.write(self.chain_w, b"c")
            self.thread.join(10.0)
        flag.value = False
        if not self.thread.is_alive():
            for fd in (self.harness_r, self.harness_w, self.chain_r, self.chain_w):
                os.close(fd)


def _close(chain) -> None:
    chain.close()


# ---------------------------------------------------------------------------- the sampler
class Walnutpie(Sampler):
    """WALNUTS through walnutpie 0.0.3: NUTS whose step size adapts within each orbit (a macro
    step is split into 2^k micro steps while the energy error exceeds ``max_hamiltonian_error``,
    up to ``max_step_halvings`` halvings), with nutpie-style warm-up of a diagonal mass matrix
    and the step size during ``burn_in`` iterations (walnutpie's ``min_warmup_iter =
    max_warmup_iter``, so a run with a seed is reproducible; not collected).

    burn_in : warm-up iterations (default 1000, walnutpie's ``max_warmup_iter`` default: one
        chain has no cross-chain convergence test to stop it earlier).
    target_accept : walnutpie's ``step_accept_rate_target`` (default 0.8).
    max_trajectory_doublings, max_step_halvings : walnutpie's (defaults 5 and 5).
    max_draws : draws after warm-up walnutpie is started for (its output buffer has a row per
        iteration; rows handed over are returned to the kernel); a run needing more fails,
        saying so.

    The harness drives walnutpie's blocking call from a background thread and holds it at an
    exact number of draws from inside the density callback (module docstring): every
    evaluation is counted, a block is exactly ``n`` draws, and walnutpie is paused between
    blocks. Density: the target's compiled ``jit_log_density_and_grad`` as a numba cfunc (no
    Python call per evaluation), or a Python ctypes callback for a target without one
    (``describe()["density"]``). walnutpie gives no per-draw statistics: the block's acceptance is
    "the chain moved", its step size NaN; rejected evaluations (errors, non-finite values) count
    in ``n_nonfinite``. Not resumable (its state lives on its thread); one walnutpie chain per
    process at a time (its interrupt flag, the harness's way to stop it, is process-wide).
    """

    name = "walnutpie"
    phases = PHASES
    resumable = False

    def __init__(self, burn_in: int = 1000, target_accept: float = 0.8,
                 max_trajectory_doublings: int = 5, max_step_halvings: int = 5,
                 max_draws: int = 1_000_000):
        check_installed("walnutpie", "walnutpie")
        self.burn_in = check_burn_in(burn_in)
        self.target_accept = check_fraction("target_accept", target_accept)
        self.max_trajectory_doublings = _check_int("max_trajectory_doublings", max_trajectory_doublings,
                                                   1, MAX_DOUBLINGS)
        self.max_step_halvings = _check_int("max_step_halvings", max_step_halvings, 0, MAX_HALVINGS)
        self.max_draws = _check_int("max_draws", max_draws, 1, 10**8)
        if self.burn_in + self.max_draws + 1 > 2**31 - 1:
            raise ValueError("burn_in + max_draws must be below 2^31 - 1 (walnutpie counts in int)")
        self._finalizer, self._path = None, None

    def skip(self, target: Target) -> tuple[bool, str]:
        if not target.has_gradient:
            return True, f"{self.name} needs the gradient of the log density; target {target.name!r} has none"
        return False, ""

    # ------------------------------------------------------------------ untimed: imports, compilation
    def warm_up(self, target: Target) -> None:
        """Import walnutpie, find its interrupt flag and compile the density callback, before
        the sampler clock starts."""
        require("walnutpie", "walnutpie")
        interrupt_flag()  # imports walnutpie's library
        _quiet_print()
        if self._path is not None and self._path[0]() is target:
            return
        _warm_start_check(target)
        f = target.jit_log_density_and_grad() if jit.enabled() and hasattr(target, "jit_log_density_and_grad") else None
        if f is not None:
            f(np.array(target.start, float), np.empty(target.dim))  # compiles it
            self._path = (weakref.ref(target), HARNESS_COMPILED, harness_cfunc(f), f)
        else:
            self._path = (weakref.ref(target), PYTHON_DENSITY, None, None)

    def init(self, target: Target, x0, rng: np.random.Generator) -> PeerState:
        if self._finalizer is not None:
            self._finalizer()
        if self._path is None or self._path[0]() is not target:
            self.warm_up(target)
        x, logp = check_start(target, x0)  # the harness's own check of the start (one density)
        self.target = target
        density = self._path[2] if self._path[2] is not None else _PythonDensity(target)
        settings = {"burn_in": self.burn_in, "target_accept": self.target_accept}
        self._chain = _Chain(target.dim, x, float(logp), self.burn_in + self.max_draws + 1,
                             self.max_trajectory_doublings, self.max_step_halvings, density, settings,
                             int(rng.integers(2**32)))
        self._finalizer = weakref.finalize(self, _close, self._chain)
        return PeerState(x=x, logp=float(logp), t=0, library_state={})

    def advance(self, state: PeerState, n: int):
        if state.t + n > self.burn_in + self.max_draws:
            raise RuntimeError(f"walnutpie was started for {self.burn_in} + {self.max_draws} draws "
                               f"(sampler.burn_in + sampler.max_draws): raise sampler.max_draws")
        X, logps, evals, rejected = self._chain.grant(n)
        n = X.shape[0]  # fewer only after a Ctrl-C (the runner then stops)
        self.target.n_density += evals
        self.target.n_grad += evals
        if self._path[2] is not None:
            jit.ran_compiled()
        previous = np.vstack([state.x[None], X[:-1]])
        phase = (np.arange(state.t, state.t + n) >= self.burn_in).astype(np.int8)
        block = Block(samples=X[phase == 1].copy(), accepted=np.any(X != previous, axis=1),
                      accept_prob=np.full(n, np.nan), phase=phase, step_size=np.full(n, np.nan),
                      noise=np.full(n, np.nan), n_nonfinite=rejected, logp=logps)
        if n == 0:
            return state, block
        return PeerState(x=X[-1].copy(), logp=float(logps[-1]), t=state.t + n, library_state={},
                         mean_steps=evals / n), block

    def trace_columns(self, state: PeerState) -> dict:
        return {"mean_leapfrog": float(state.mean_steps)}

    def describe(self) -> dict:
        out = {"adaptation": "finite" if self.burn_in > 0 else "none", "burn_in": self.burn_in,
               "library": library_version("walnutpie"), "target_accept": self.target_accept,
               "max_trajectory_doublings": self.max_trajectory_doublings,
               "max_step_halvings": self.max_step_halvings, "max_draws": self.max_draws,
               "resumable": False}
        if self._path is not None:
            out["density"] = self._path[1]
        return out


def _uncounted(target: Target, x: np.ndarray) -> tuple[float, np.ndarray]:
    """(log π(x), ∇ log π(x)) without counting (the gate counts walnutpie's evaluations)."""
    both = getattr(target, "log_density_and_grad_uncounted", None)
    value, grad = both(x) if both is not None else (target._log_density(x), target._grad_log_density(x))
    return float(value), np.asarray(grad, float)


def _check_int(key: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float)) or int(value) != value \
            or not low <= value <= high:
        raise ValueError(f"{key} must be an integer in [{low}, {high}], got {value!r}")
    return int(value)


__all__ = ["Walnutpie", "harness_cfunc", "interrupt_flag"]
