r"""Peer samplers: the production NUTS implementations researchers already trust, run inside the
harness under the same budgets, clocks, checkpoints, metrics and reports as every other sampler.

* :class:`Nutpie` — nutpie (PyMC's Rust NUTS, ``nuts-rs``) with its own mass-matrix and step-size
  adaptation (``tune`` warm-up draws), at its native speed: its Rust thread calls a C callback
  (:mod:`ckam_bench.samplers.nutpie_native`) around nutpie's own numba compilation of a PyMC
  target (``compile_pymc_model(backend="numba")``) or the target's compiled density, with no
  Python call per evaluation or per draw; only a target without a compiled density falls back
  to ``from_pyfunc`` (a Python call per evaluation). It runs on every target with a gradient.
* :class:`NumPyroNUTS` — NumPyro's NUTS on the potential −log π with Stan's windowed adaptation
  of a diagonal mass matrix and the step size (``num_warmup`` = ``burn_in``).
* :class:`BlackJAXNUTS` — BlackJAX's NUTS with Stan's window adaptation from BlackJAX's own
  pieces (``build_schedule``, ``dual_averaging_adaptation``, ``mass_matrix_adaptation``, as its
  ``window_adaptation`` combines them), one iteration at a time so warm-up runs in blocks too.

The two JAX peers need a JAX log density (:meth:`Target.jax_log_density`,
:mod:`ckam_bench.targets.jax_densities`) and decline other targets with one line. All three
collect no warm-up draw (phase ``burn_in``) and then run the library's fixed kernel (phase
``sampling``): finite adaptation.

**Accounting.** Gradient evaluations are the library's own: NumPyro's and BlackJAX's per-iteration
leapfrog counts (``num_steps``, ``num_integration_steps``) plus the one evaluation at the start
(neither library runs a step-size search here: NumPyro's ``find_heuristic_step_size`` is off,
BlackJAX's window adaptation has none); nutpie's are counted as its calls of the density (its
``n_steps`` plus the evaluations of its initial step-size search). Every evaluation is a density
and a gradient; the harness's check of the start point adds one density evaluation. Every
peer's imports and compilation (JAX's; nutpie's model and callbacks) run in ``warm_up`` (before
the sampler clock; its time is the run's ``warmup_seconds``), once per target instance and
configuration in a process.

**Blocks.** A JAX peer runs a jitted ``lax.fori_loop`` of up to :func:`capacity` iterations per
call (the count a traced argument: one compilation for every block size); its state (library
state, adaptation state, PRNG key) is a tree of arrays in the chain state, so a checkpoint saves
it and a resumed run continues the same chain. The libraries compute on threads of their own,
which the runner's CPU clock counts (it measures the whole process). nutpie's sampler runs on its
own thread: the density callback holds it (a blocking read of a pipe) until ``advance`` grants
it ``n`` more draws, and the expansion callback (once per draw) hands each draw back and wakes
``advance`` at the ``n``-th, so a block is exactly ``n`` draws and nutpie pauses between blocks.
nutpie's chain state cannot be saved: a killed nutpie run restarts from its first iteration
(``resumable = False``; the status records ``restarted``), never mixing two chains in one
trace. nutpie keeps every draw's statistics in memory (~150 bytes a draw) for the run's life.

Each peer is the optional extra ``peers``; without it the constructor raises one line saying
what to install. ``describe()`` names the library and its version (``status.json``'s
``sampler_info``; the report's labels). JAX runs in float64 (``jax_enable_x64``, set when a JAX
peer is built).
"""

from __future__ import annotations

import inspect
import math
import time
import weakref
from dataclasses import dataclass
from importlib import metadata

import numpy as np

from ckam_bench import jit
from ckam_bench.caches import Recent
from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start
from ckam_bench.samplers.hamiltonian import check_burn_in, check_fraction, check_positive
from ckam_bench.targets.base import Target

PHASES = ("burn_in", "sampling")
EXTRA = 'pip install "ckam-bench[peers]"'
MAX_DEPTH = 14
CAPACITY, BUFFER_BYTES = 4096, 32 * 2**20


def nutpie_adaptation(nutpie, mass_matrix: str) -> dict:
    """nutpie.sample's keyword for its mass matrix adaptation ("diag", "low_rank" or "flow"):
    from nutpie 0.16.9 ``adaptation=`` (its booleans ``low_rank_modified_mass_matrix`` and
    ``transform_adapt`` are deprecated there, a FutureWarning), up to 0.16.8 those booleans."""
    if "adaptation" in inspect.signature(nutpie.sample).parameters:
        return {"adaptation": mass_matrix}
    if mass_matrix == "flow":
        return {"transform_adapt": True}
    return {"low_rank_modified_mass_matrix": mass_matrix == "low_rank"}


def capacity(dim: int) -> int:
    """Iterations per call of a JAX peer's compiled block: up to CAPACITY (a call costs ~1-2 ms
    besides its iterations; 512 made 7 calls per 0.25 s block on logistic_german), its record of
    draws (rows x dim) under BUFFER_BYTES."""
    return int(min(CAPACITY, max(64, BUFFER_BYTES // (8 * dim))))


def require(module: str, library: str):
    """Import ``module`` of the optional extra, or raise a one-line ValueError saying what to
    install (the CLI reports it as a configuration error, exit 2)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"{library} is not installed ({exc}); it is the optional extra "
                         f"'peers': {EXTRA}") from None


def check_installed(module: str, library: str) -> None:
    """Raise :func:`require`'s one-line ValueError when ``module`` is not installed, without
    importing it (a sampler built for ``ckam-bench list`` or a refused run imports no library;
    the module is imported where it is used)."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        require(module, library)


def library_version(distribution: str) -> str:
    return f"{distribution} {metadata.version(distribution)}"


def _jax():
    import os

    jax = require("jax", "JAX")
    jax.config.update("jax_enable_x64", True)
    if not os.environ.get("JAX_PLATFORMS"):  # the harness benchmarks on the CPU
        jax.config.update("jax_platforms", "cpu")
    if not os.environ.get("JAX_COMPILATION_CACHE_DIR") and not jax.config.jax_compilation_cache_dir:
        # JAX's own persistent cache, keyed by the computation, the JAX/XLA versions and the
        # backend: a peer's programs compile once per machine, not once per process
        from ckam_bench.jit import compiled_cache_dir

        jax.config.update("jax_compilation_cache_dir", str(compiled_cache_dir().parent / "jax"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    return jax


def release_compiled() -> None:
    """Free what JAX compiled for runs that are over (their targets unreachable): a sweep runs
    its jobs in one process, and XLA keeps every executable it compiled, each in memory maps of
    its own (~900 per posterior for the two JAX NUTS peers), until the kernel's limit
    (vm.max_map_count, 65 530 by default) made LLVM fail with "Cannot allocate memory" after ~70
    posteriors. Called by the command line before each job; nothing to do before JAX is loaded."""
    import gc
    import sys

    clear = getattr(sys.modules.get("jax"), "clear_caches", None)
    if not callable(clear):  # JAX not loaded (or blocked): no full collection either
        return
    gc.collect()  # the finished runs' targets, and with them their entries in _COMPILED
    clear()
    gc.collect()


def _check_depth(max_depth) -> int:
    if isinstance(max_depth, bool) or int(max_depth) != max_depth or not 1 <= max_depth <= MAX_DEPTH:
        raise ValueError(f"max_depth must be an integer in [1, {MAX_DEPTH}], got {max_depth}")
    return int(max_depth)


@dataclass(kw_only=True)
class PeerState(ChainState):
    """A peer's chain state: ``x``, ``logp``, ``t`` plus the library's own state."""

    library_state: dict
    """The library's state as arrays (JAX peers: the leaves of its state tree, keyed by index,
    numpy arrays after ``init`` and JAX arrays after a block, read by a checkpoint only;
    nutpie: none, its state lives on its thread)."""
    step: float = math.nan
    """Step size of the last iteration."""
    mean_steps: float = 0.0
    """Mean leapfrog steps per iteration of the last block."""


# ---------------------------------------------------------------------------- JAX peers
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""target -> {(sampler class, settings): (init, block)}: a process compiles each once."""


class _JaxPeer(Sampler):
    """A JAX kernel advanced in jitted blocks. Subclasses give ``distribution``, ``_settings()`` and
    ``_functions(target)`` → ``(init(key, x) -> carry, step(carry) -> (carry, record))``, where
    the record holds ``x, logp, accept_prob, n_steps, diverging, step_size`` of one iteration."""

    phases = PHASES
    distribution = ""
    burn_in: int
    ckam_block_seconds = 0.25  # ~1-2 ms per advance: 10-20 % in 0.02 s blocks, ~1 % in 0.25 s

    def skip(self, target: Target) -> tuple[bool, str]:
        if not target.has_jax_density:
            why = getattr(target, "jax_density_problem", lambda: "")()
            return True, (f"{self.name} needs a JAX log density; target {target.name!r} has none "
                          f"({why or 'Target.jax_log_density'})")
        return False, ""

    def _settings(self) -> tuple:  # pragma: no cover - abstract
        raise TypeError

    def _functions(self, target: Target):  # pragma: no cover - abstract
        raise TypeError

    def _compiled(self, target: Target):
        """(init, block) jitted for ``target``, compiled on first use (by ``warm_up``)."""
        cache = _COMPILED.setdefault(target, {})
        key = (type(self).__name__, self._settings())
        if key not in cache:
            jax = _jax()
            init, step = self._functions(target)
            rows = capacity(target.dim)

            def block(carry, n):
                def body(i, val):
                    carry, out = val
                    carry, rec = step(carry)
                    return carry, {k: out[k].at[i].set(v) for k, v in rec.items()}

                _, rec = jax.eval_shape(step, carry)
                out = {k: jax.numpy.zeros((rows,) + v.shape, v.dtype) for k, v in rec.items()}
                return jax.lax.fori_loop(0, n, body, (carry, out))

            init, block = jax.jit(init), jax.jit(block)
            carry = jax.device_get(init(jax.random.PRNGKey(0), np.asarray(target.start, float)))
            carry, _ = block(carry, np.int64(0))  # compiles without running an iteration, for the
            block(carry, np.int64(0))  # state as stored (numpy) and as a block leaves it (on device)
            cache[key] = (init, block)
        return cache[key]

    def warm_up(self, target: Target) -> None:
        _warm_start_check(target)
        self._compiled(target)

    def init(self, target: Target, x0, rng: np.random.Generator) -> PeerState:
        jax = _jax()
        x, _ = check_start(target, x0)  # the harness's own check of the start (one density)
        self.target = target
        self._init, self._block = self._compiled(target)
        key = jax.random.PRNGKey(int(rng.integers(2**63)))
        carry = jax.device_get(self._init(key, x))
        leaves, self._treedef = jax.tree_util.tree_flatten(carry)  # numpy: the template of a resume
        target.n_density += 1  # the library's evaluation at the start
        target.n_grad += 1
        return PeerState(x=x, logp=self._start_logp(carry), t=0, library_state=_leaves_dict(leaves))

    def _start_logp(self, carry) -> float:  # pragma: no cover - abstract
        raise TypeError

    def advance(self, state: PeerState, n: int):
        jax = _jax()
        carry = jax.tree_util.tree_unflatten(self._treedef, [state.library_state[k]
                                                             for k in sorted(state.library_state)])
        pieces, done, rows = [], 0, capacity(self.target.dim)
        while done < n:
            m = min(rows, n - done)
            carry, out = self._block(carry, np.int64(m))  # the state stays on the device
            pieces.append({k: v[:m] for k, v in jax.device_get(out).items()})
            done += m
        jit.ran_compiled()  # XLA's compiled loop (provenance.loops)
        rec = {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}
        steps = rec["n_steps"].astype(np.int64)
        self.target.n_density += int(steps.sum())
        self.target.n_grad += int(steps.sum())
        X = rec["x"]
        previous = np.vstack([state.x[None], X[:-1]])
        moved = np.any(X != previous, axis=1)
        phase = (np.arange(state.t, state.t + n) >= self.burn_in).astype(np.int8)
        block = Block(samples=X[phase == 1].copy(), accepted=moved, accept_prob=rec["accept_prob"].astype(float),
                      phase=phase, step_size=rec["step_size"].astype(float), noise=np.full(n, np.nan),
                      logp=rec["logp"].astype(float), divergent=rec["diverging"].astype(bool))
        leaves = jax.tree_util.tree_leaves(carry)
        new = PeerState(x=X[-1].copy(), logp=float(rec["logp"][-1]), t=state.t + n,
                        library_state=_leaves_dict(leaves), step=float(rec["step_size"][-1]),
                        mean_steps=float(steps.mean()))
        return new, block

    def trace_columns(self, state: PeerState) -> dict:
        return {"step": float(state.step), "mean_leapfrog": float(state.mean_steps)}

    def describe(self) -> dict:
        return {"adaptation": "finite" if self.burn_in > 0 else "none", "burn_in": self.burn_in,
                "library": library_version(self.distribution), "jax": library_version("jax")}


def _warm_start_check(target: Target) -> None:
    """Evaluate the target's density once, uncounted, before the clock: ``init``'s check of the
    start point then finds it compiled (a PyMC target compiles its density at its first call)."""
    try:
        target._log_density(np.asarray(target.start, float))
    except Exception:  # noqa: BLE001 - a bad start is reported by init's check, on its own terms
        pass


def _leaves_dict(leaves) -> dict:
    return {f"{i:03d}": leaf for i, leaf in enumerate(leaves)}


class _JaxNUTS(_JaxPeer):
    """The settings both JAX NUTS peers take: the initial step size, the warm-up length
    (``burn_in``, not collected), dual averaging's target acceptance and the maximum tree depth;
    ``library`` names the module and library a missing extra is reported with."""

    library = ("", "")

    def __init__(self, step_size: float = 1.0, burn_in: int = 500, target_accept: float = 0.8,
                 max_depth: int = 10):
        check_installed(*self.library)
        check_installed("jax", "JAX")
        self.step_size = check_positive("step_size", step_size)
        self.burn_in = check_burn_in(burn_in)
        self.target_accept = check_fraction("target_accept", target_accept)
        self.max_depth = _check_depth(max_depth)

    def _settings(self) -> tuple:
        return (self.step_size, self.burn_in, self.target_accept, self.max_depth)

    def describe(self) -> dict:
        return {**super().describe(), "max_depth": self.max_depth, "target_accept": self.target_accept}


class NumPyroNUTS(_JaxNUTS):
    """NumPyro's NUTS (multinomial, generalised U-turn) with a diagonal mass matrix and step size
    adapted in Stan's windows during ``burn_in`` warm-up iterations (settings: :class:`_JaxNUTS`)."""

    name = "numpyro_nuts"
    distribution = "numpyro"
    library = ("numpyro", "NumPyro")

    def _functions(self, target: Target):
        import jax.numpy as jnp
        from numpyro.infer import NUTS

        log_density = target.jax_log_density()
        kernel = NUTS(potential_fn=lambda x: -log_density(x), step_size=self.step_size,
                      target_accept_prob=self.target_accept, max_tree_depth=self.max_depth,
                      adapt_step_size=True, adapt_mass_matrix=True, dense_mass=False)

        def init(key, x):
            return kernel.init(key, self.burn_in, init_params=jnp.asarray(x), model_args=(), model_kwargs={})

        def step(state):
            state = kernel.sample(state, (), {})
            return state, {"x": state.z, "logp": -state.potential_energy, "accept_prob": state.accept_prob,
                           "n_steps": state.num_steps, "diverging": state.diverging,
                           "step_size": state.adapt_state.step_size}

        return init, step

    def _start_logp(self, carry) -> float:
        return -float(carry.potential_energy)


class BlackJAXNUTS(_JaxNUTS):
    """BlackJAX's NUTS kernel with Stan's window adaptation (diagonal inverse mass matrix and
    dual-averaged step size, BlackJAX's schedule and estimators) during ``burn_in`` iterations;
    afterwards the averaged step size and the last window's mass matrix are fixed (settings:
    :class:`_JaxNUTS`; BlackJAX's default initial step size is 1.0)."""

    name = "blackjax_nuts"
    distribution = "blackjax"
    library = ("blackjax", "BlackJAX")

    def _functions(self, target: Target):
        import blackjax
        import jax
        import jax.numpy as jnp
        from blackjax.adaptation.mass_matrix import mass_matrix_adaptation
        from blackjax.adaptation.staged_adaptation import build_schedule
        from blackjax.adaptation.step_size import dual_averaging_adaptation

        log_density = target.jax_log_density()
        kernel = blackjax.nuts.build_kernel()
        da_init, da_update, da_final = dual_averaging_adaptation(self.target_accept)
        mm_init, mm_update, mm_final = mass_matrix_adaptation(True)
        burn_in, depth, dim = self.burn_in, self.max_depth, target.dim
        schedule = jnp.asarray(build_schedule(burn_in) if burn_in else np.zeros((1, 2), np.int32))

        def init(key, x):
            state = blackjax.nuts.init(jnp.asarray(x), log_density)
            ss, mm = da_init(self.step_size), mm_init(dim)
            return (state, ss, mm, jnp.asarray(self.step_size), mm.inverse_mass_matrix, key,
                    jnp.zeros((), jnp.int64))

        def adapt(t, position, acceptance, ss, mm):
            """One warm-up update, as BlackJAX's window adaptation: dual averaging always, the
            Welford estimate in slow windows; at a slow window's end the new inverse mass matrix
            and a dual-averaging restart at the window's averaged step size; at the last warm-up
            iteration the averaged step size."""
            stage, window_end = schedule[t, 0], schedule[t, 1]
            ss = da_update(ss, acceptance)
            mm = jax.lax.cond(stage == 1, lambda m: mm_update(m, position), lambda m: m, mm)

            def end_window(args):
                ss, mm = args
                return da_init(da_final(ss)), mm_final(mm)

            ss, mm = jax.lax.cond(window_end, end_window, lambda args: args, (ss, mm))
            step = jnp.where(t == burn_in - 1, da_final(ss), jnp.exp(ss.log_step_size))
            return ss, mm, step, mm.inverse_mass_matrix

        def step(carry):
            state, ss, mm, eps, imm, key, t = carry
            key, sub = jax.random.split(key)
            state, info = kernel(sub, state, log_density, eps, imm, max_num_doublings=depth)
            used = eps
            if burn_in:
                ss, mm, eps, imm = jax.lax.cond(
                    t < burn_in, lambda a: adapt(jnp.minimum(t, burn_in - 1), state.position,
                                                 info.acceptance_rate, *a),
                    lambda a: (a[0], a[1], eps, imm), (ss, mm))
            rec = {"x": state.position, "logp": state.logdensity, "accept_prob": info.acceptance_rate,
                   "n_steps": info.num_integration_steps, "diverging": info.is_divergent, "step_size": used}
            return (state, ss, mm, eps, imm, key, t + 1), rec

        return init, step

    def _start_logp(self, carry) -> float:
        return float(carry[0].logdensity)


# ---------------------------------------------------------------------------- nutpie
NUTPIE_NUMBA = "nutpie numba (compile_pymc_model)"
"""describe()'s ``density`` of a PyMC target: nutpie's own numba compilation of the model."""
HARNESS_COMPILED = "harness compiled density"
"""… of a target with a compiled ``jit_log_density_and_grad``: handed to nutpie as a C callback."""
PYTHON_CALLBACK = "python callback (from_pyfunc fallback)"
"""… of a target without a compiled density (or ``CKAM_BENCH_JIT=0``): a Python call per
evaluation, several times slower than nutpie's native speed."""

_NUTPIE_MODELS = Recent()
"""(PyMC model spec, source, data) -> nutpie.compile_pymc_model(model, backend="numba"), for the
last few models (a run's density path holds the one it calls)."""


@dataclass
class _DensityPath:
    """How nutpie evaluates the density of one target (decided and compiled in ``warm_up``)."""

    target: weakref.ref
    label: str
    cfuncs: tuple | None = None  # (density, expansion) numba cfuncs; None: the Python fallback
    inner_user_data: int = 0  # the user data of nutpie's own compiled logp
    keepalive: object = None
    note: str = ""


def _nutpie_logp_agrees(compiled, target: Target) -> str:
    """'' when nutpie's compiled logp of the PyMC model equals the target's density and gradient
    (at its start and a point beside it), else why not (e.g. ``target.data`` replaced the
    model's data, which nutpie compiled in)."""
    import ctypes

    fn = compiled.compiled_logp_func.ctypes
    rng = np.random.default_rng(0)
    start = np.asarray(target.start, float)
    for x in (start, start + 0.1 * rng.standard_normal(target.dim)):
        x = np.ascontiguousarray(x)
        grad, value = np.empty(target.dim), np.empty(1)
        ptr = ctypes.POINTER(ctypes.c_double)
        code = fn(target.dim, x.ctypes.data_as(ptr), grad.ctypes.data_as(ptr), value.ctypes.data_as(ptr),
                  compiled.user_data.ctypes.data)
        own, own_grad = target.log_density_and_grad_uncounted(x)
        if code not in (0, 3, 4) or not (
                np.isclose(value[0], own, rtol=1e-9, atol=1e-9)
                and np.allclose(grad, own_grad, rtol=1e-8, atol=1e-9)):
            return "nutpie's compiled model differs from the target's density (its data?)"
    return ""


class Nutpie(Sampler):
    """nutpie's NUTS with its default adaptation (diagonal mass matrix from draw and gradient
    variances, step size by dual averaging) during ``burn_in`` tuning draws.

    burn_in : nutpie's ``tune`` (not collected); target_accept; max_depth : nutpie's ``maxdepth``.
    The density nutpie evaluates, as a C callback without a Python call per evaluation (see
    :mod:`ckam_bench.samplers.nutpie_native`): for a PyMC target, nutpie's own numba
    compilation of the model (``nutpie.compile_pymc_model(model, backend="numba")``, what
    nutpie's users run); for another target, its compiled ``jit_log_density_and_grad``; only a
    target without a compiled density (or ``CKAM_BENCH_JIT=0``) falls back to nutpie's
    ``from_pyfunc`` with a Python callback (``describe()["density"]`` says which ran).
    nutpie hands the harness each draw's position: the block's acceptance is "the chain
    moved", its step size is not recorded (NaN), a draw's log density is the value the density
    returned at that point of its trajectory (the previous one if the chain stayed), and
    non-finite densities met (nutpie's divergences of that kind) are ``n_nonfinite``.
    max_draws : draws after tuning nutpie is started for (it reserves its statistics' storage for
        them up front and keeps ~150 bytes a draw); a run that needs more fails, saying so.
    mass_matrix : ``diag`` (σᵢ² = √(Var xᵢ / Var gᵢ)) or ``low_rank`` (nutpie's
        ``low_rank_modified_mass_matrix``: that diagonal times I + U(Λ − I)Uᵀ, U, Λ on the
        leading directions of the draws and gradients), or ``flow`` (nutpie's normalizing-flow
        adaptation, ``transform_adapt``: NUTS on y = F⁻¹(x), F a coupling flow fitted to the
        warm-up's draws and gradients by the Fisher divergence; experimental in nutpie, needs
        ``flowjax`` and a compiled density, which nutpie calls through the flow's Jacobian, so
        every gradient is counted; the fitting runs in JAX on the sampler clock).
    """

    name = "nutpie"
    phases = PHASES
    resumable = False

    def __init__(self, burn_in: int = 500, target_accept: float = 0.8, max_depth: int = 10,
                 max_draws: int = 1_000_000, mass_matrix: str = "diag"):
        check_installed("nutpie", "nutpie")
        if mass_matrix not in ("diag", "low_rank", "flow"):
            raise ValueError(f"mass_matrix must be one of diag, low_rank, flow, got {mass_matrix!r}")
        if mass_matrix == "flow":
            check_installed("flowjax", "flowjax (nutpie's flow adaptation)")
        self.mass_matrix, self.burn_in = mass_matrix, check_burn_in(burn_in)
        if isinstance(max_draws, bool) or int(max_draws) != max_draws or not 1 <= max_draws <= 10**8:
            raise ValueError(f"max_draws must be an integer in [1, 1e8], got {max_draws}")
        self.max_draws, self.max_depth = int(max_draws), _check_depth(max_depth)
        self.target_accept = check_fraction("target_accept", target_accept)
        self._finalizer, self._path = None, None  # the running sampler's cleanup; the density path

    def skip(self, target: Target) -> tuple[bool, str]:
        if not target.has_gradient:
            return True, f"{self.name} needs the gradient of the log density; target {target.name!r} has none"
        if self.mass_matrix == "flow" and not target.has_jax_density:
            return True, f"{self.name} needs a JAX log density (nutpie's flow adapter); target {target.name!r} has none"
        return False, ""

    # ------------------------------------------------------------------ untimed: imports, compilation
    def warm_up(self, target: Target) -> None:
        """Import nutpie and compile the density nutpie will call (nutpie's own model of a PyMC
        target, the C callbacks around it), all before the sampler clock starts."""
        nutpie = require("nutpie", "nutpie")
        import nutpie.compiled_pyfunc  # noqa: F401 - the fallback's module, imported off the clock too

        if self._path is not None and self._path.target() is target:
            return
        _warm_start_check(target)
        path = None
        if self.mass_matrix == "flow":  # nutpie's JAX model (nutpie_flow), compiled off the clock
            from ckam_bench.samplers import nutpie_flow

            import nutpie.transform_adapter  # noqa: F401 - JAX, flowjax and the flow's code

            target.jax_log_density()(np.asarray(target.start, float))  # traced and compiled
            self._path = _DensityPath(weakref.ref(target), nutpie_flow.LABEL)
            return
        if jit.enabled():
            from ckam_bench.samplers import nutpie_native

            note = ""
            if _is_pymc(target):
                described = target.describe()  # the model's source and every array it reads
                key = (target.spec, described.get("source_sha256"), described.get("data_sha256"))
                compiled = _NUTPIE_MODELS.get(key)
                if compiled is None:
                    try:
                        compiled = nutpie.compile_pymc_model(target.model, backend="numba")
                    except Exception as exc:  # noqa: BLE001 - the harness's own density still runs
                        note = f"nutpie could not compile the model: {type(exc).__name__}: {exc}"
                    else:
                        _NUTPIE_MODELS[key] = compiled
                if compiled is not None:
                    note = _nutpie_logp_agrees(compiled, target) if compiled.n_dim == target.dim else \
                        "nutpie's compiled model has another dimension"
                if compiled is not None and not note:
                    path = _DensityPath(weakref.ref(target), NUTPIE_NUMBA, nutpie_native.nutpie_pymc_cfuncs(compiled),
                                        int(compiled.user_data.ctypes.data), compiled)
            f = target.jit_log_density_and_grad() if path is None and hasattr(target, "jit_log_density_and_grad") else None
            if f is not None:
                f(np.array(target.start, float), np.empty(target.dim))  # compiles it
                path = _DensityPath(weakref.ref(target), HARNESS_COMPILED, nutpie_native.harness_cfuncs(f),
                                    keepalive=f, note=note)
        if path is None:
            path = _DensityPath(weakref.ref(target), PYTHON_CALLBACK)
        self._path = path

    def init(self, target: Target, x0, rng: np.random.Generator) -> PeerState:
        import nutpie  # imported by warm_up: a look-up

        if self._finalizer is not None:
            self._finalizer()
        if self._path is None or self._path.target() is not target:
            self.warm_up(target)  # the runner has done it, before the clock
        x, logp = check_start(target, x0)  # the harness's own check of the start (one density)
        self.target = target
        tries = []

        def start(seed):
            """The run's start point; if nutpie refuses it (its mass matrix starts from the
            gradient, so a zero gradient coordinate, e.g. at a mode, is refused), nutpie's own
            retry: uniform jitter in (−2, 2) around it."""
            tries.append(seed)
            if len(tries) == 1:
                return x.copy()
            return x + np.random.default_rng(seed).uniform(-2.0, 2.0, x.shape[0])

        path = self._path
        if path.cfuncs is not None:
            from ckam_bench.samplers import nutpie_native

            gate = nutpie_native.Gate(target.dim, float(logp), self.max_depth,
                                      inner_user_data=path.inner_user_data)
            model = nutpie_native.native_model(target.dim, path.cfuncs, gate, start, path.keepalive)
            close = nutpie_native.shutdown
        else:
            from nutpie.compiled_pyfunc import from_pyfunc

            from ckam_bench.samplers import nutpie_fallback, nutpie_flow

            gate = nutpie_fallback.Gate()
            gate.last_logp = float(logp)
            logp_fn = nutpie_fallback.python_density(target, gate)
            close = nutpie_fallback.close

            def expand(x):
                gate.record(x)
                return {}

            model = nutpie_flow.model(target, gate, start) if path.label == nutpie_flow.LABEL else \
                from_pyfunc(target.dim, lambda: logp_fn, lambda *seeds: expand, [], [], [], make_initial_point_fn=start)
        self._gate = gate
        self._background = nutpie.sample(
            model, draws=self.max_draws, tune=self.burn_in, chains=1, cores=1,
            seed=int(rng.integers(2**63)), progress_bar=False, blocking=False,
            target_accept=self.target_accept, maxdepth=self.max_depth,
            **nutpie_adaptation(nutpie, self.mass_matrix))
        self._finalizer = weakref.finalize(self, close, gate, self._background)
        return PeerState(x=x, logp=float(logp), t=0, library_state={})

    def advance(self, state: PeerState, n: int):
        if state.t + n > self.burn_in + self.max_draws:
            raise RuntimeError(f"nutpie was started for {self.burn_in} + {self.max_draws} draws "
                               f"(sampler.burn_in + sampler.max_draws): raise sampler.max_draws")
        background = self._background
        if self._path.cfuncs is not None:
            from ckam_bench.samplers.nutpie_native import finished
        else:
            from ckam_bench.samplers.nutpie_fallback import finished
        X, logps, evals, nonfinite = self._gate.grant(n, lambda: finished(background))
        self.target.n_density += evals
        self.target.n_grad += evals
        if self._path.cfuncs is not None:  # nutpie's Rust loop on a compiled density (provenance.loops)
            jit.ran_compiled()
        X = np.asarray(X, dtype=float).reshape(n, self.target.dim)
        logps = np.asarray(logps, dtype=float)
        previous = np.vstack([state.x[None], X[:-1]])
        phase = (np.arange(state.t, state.t + n) >= self.burn_in).astype(np.int8)
        block = Block(samples=X[phase == 1].copy(), accepted=np.any(X != previous, axis=1),
                      accept_prob=np.full(n, np.nan), phase=phase, step_size=np.full(n, np.nan),
                      noise=np.full(n, np.nan), n_nonfinite=nonfinite, logp=logps)
        return PeerState(x=X[-1].copy(), logp=float(logps[-1]), t=state.t + n, library_state={},
                         mean_steps=evals / n), block

    def ckam_divergent(self, state: PeerState, n: int):
        """Whether each of the last ``n`` draws diverged: nutpie's own ``diverging`` statistic,
        read from its trace (``inspect``) off the sampler clock, after the block's draws are in
        it (the chain records a draw just after handing it over); None (not known) if this
        nutpie cannot show its trace."""
        sampler = getattr(self._background, "_sampler", None)
        if not callable(getattr(sampler, "inspect", None)):
            return None
        for _ in range(2000):  # up to ~2 s for the last draw's record
            stats = sampler.inspect().get_arrow_trace()[1]
            if stats and stats[0].num_rows >= state.t:
                column = stats[0].column("diverging")
                return np.asarray(column.slice(state.t - n, n), dtype=bool)
            time.sleep(0.001)
        raise RuntimeError(f"nutpie's trace does not hold its first {state.t} draws")

    def trace_columns(self, state: PeerState) -> dict:
        return {"mean_leapfrog": float(state.mean_steps)}

    def describe(self) -> dict:
        out = {"adaptation": "finite" if self.burn_in > 0 else "none", "burn_in": self.burn_in,
               "library": library_version("nutpie"), "max_depth": self.max_depth,
               "target_accept": self.target_accept, "max_draws": self.max_draws, "resumable": False,
               "mass_matrix": self.mass_matrix}
        if self.mass_matrix == "flow":
            out["flowjax"] = library_version("flowjax")
        if self._path is not None:
            out["density"] = self._path.label
            if self._path.note:
                out["density_note"] = self._path.note
        return out


def _is_pymc(target) -> bool:
    from ckam_bench.targets.pymc import PyMCModel

    return isinstance(target, PyMCModel)
