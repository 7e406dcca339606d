r"""A PyMC model as a target: ``ckam-bench target=pymc target.model=PKG.MODULE:FUNCTION``.

``target.model`` names a function that takes no argument and returns a ``pymc.Model``, either
as ``package.module:function`` (an importable module) or as ``path/to/file.py:function``. The
target is the model's joint log density on the *unconstrained* space, with the log-Jacobians of
PyMC's default transforms (``log`` for positive variables, ``logodds`` for (0, 1), …):

.. math::
    \log\pi(x) = \log p(\theta(x), y) + \log\lvert\det J_{\theta}(x)\rvert,

where :math:`x` is the flat vector of the model's value variables (``model.value_vars``, in
order, each raveled in C order) and :math:`\theta(x)` their constrained values. PyMC builds the
graph (``model.logp()``, Jacobians included), pytensor differentiates it and compiles it with
its numba backend (``mode="NUMBA"``; pytensor caches the compiled code on disk, so a model
compiles once per machine). The harness wraps pytensor's jitted functions in C-callables cached
on disk too, and compiles small wrappers ``f(x, grad_out) -> log π(x)`` calling them
(:mod:`ckam_bench.targets.pymc_compiled`), so the samplers' compiled loops call the density
without returning to Python. With ``CKAM_BENCH_JIT=0`` the Python loops call the
same graph compiled by pytensor's default (C) backend, and no numba code runs.

**Data.** The model's observed values and its ``pm.Data`` containers are not compiled in: they
are inputs of the compiled function, read from one flat float64 buffer of the target (cast back
to their dtypes inside the graph), so ``target.data=FILE.npz`` (arrays named after observed
variables or ``pm.Data`` containers, same shapes) runs the same model on other data without a
recompilation; simulation-based calibration (:mod:`ckam_bench.checks.sbc`) relies on this. Other arrays
used by the model (plain numpy covariates) are constants of the compiled code.

**Start.** ``init=support_point`` (default) starts from PyMC's initial point (each variable's
support point, no jitter); ``init=prior`` from a prior draw with ``init_seed``. The root
``start=[...]`` still overrides both, on the unconstrained scale.

**Stored samples.** ``samples.parquet`` holds the unconstrained coordinates ``x0 … x{d-1}``
(their names, e.g. ``tau_log__``, are in :attr:`PyMCModel.coordinates`) and, next to them, the
model's variables on the constrained scale under the model's names (``tau``, ``theta[3]``,
``L[0,1]``): the free variables and the deterministics, or only ``var_names`` when given, as
``pm.sample`` stores them (:meth:`PyMCModel.constrain`).

PyMC is an optional extra (``pip install "ckam-bench[pymc]"``); without it the target is a
configuration error that says what to install.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
import os
import re
import sys
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ckam_bench import jit
from ckam_bench.caches import MODELS_KEPT, Recent
from ckam_bench.data import array_sha256, content_sha256
from ckam_bench.targets.base import Target
from ckam_bench.targets import pymc_compiled, pymc_jax

INSTALL = 'pip install "ckam-bench[pymc]"'
INITS = ("support_point", "prior")


class ModelError(ValueError):
    """``target.model`` (or another key of the PyMC target) is unusable; the message starts
    with the key's name (``model …``), as the CLI's messages for constructor errors do."""


BLAS_WARNING = r"PyTensor could not link to a BLAS installation"
"""The start of pytensor's five-line ``UserWarning`` when its C backend finds no BLAS to link
(a pip install). ckam-bench compiles the density with pytensor's numba backend, which brings
its own BLAS; the warning is filtered by this message and its category only."""


def quiet_blas_warning() -> None:
    """Filter pytensor's BLAS ``UserWarning`` (:data:`BLAS_WARNING`), and nothing else."""
    warnings.filterwarnings("ignore", message=BLAS_WARNING, category=UserWarning)


def _pymc():
    # arviz (imported by pymc) announces its optional backends at INFO level through the root
    # logger, which Hydra's console handler would print
    logging.getLogger("arviz").setLevel(logging.WARNING)
    quiet_blas_warning()
    try:
        import pymc
        import pytensor  # noqa: F401
    except ImportError as exc:
        raise ModelError(f"model needs PyMC, which is not installed ({exc}): {INSTALL}") from None
    return pymc


# ---------------------------------------------------------------------------- loading
_SPEC = re.compile(r"^(?P<where>[^:]+):(?P<function>[A-Za-z_][A-Za-z0-9_]*)$")


def load_function(spec: str):
    """The model function named by ``spec`` (``package.module:function`` or
    ``path/to/file.py:function``)."""
    found = _SPEC.match(str(spec).strip()) if isinstance(spec, str) else None
    if found is None:
        raise ModelError(f"model must be PACKAGE.MODULE:FUNCTION or path/to/file.py:FUNCTION, "
                         f"got {spec!r}")
    where, name = found["where"], found["function"]
    if where.endswith(".py") or os.sep in where or "/" in where:
        path = Path(where).expanduser().resolve()
        if not path.is_file():
            raise ModelError(f"model names no Python file: {str(path)!r}")
        module_name = "ckam_bench_model_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
        try:
            loader = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(loader)
            sys.modules[module_name] = module
            loader.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(module_name, None)
            raise ModelError(f"model cannot be loaded from {str(path)!r}: {type(exc).__name__}: {exc}") from None
    else:
        try:
            module = importlib.import_module(where)
        except Exception as exc:
            raise ModelError(f"model cannot import module {where!r}: {type(exc).__name__}: {exc}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ModelError(f"model names a function {name!r} that {where!r} does not define"
                         + _did_you_mean(name, module, where))
    return function


def _did_you_mean(name: str, module, where: str) -> str:
    """`` — did you mean 'where:close'?`` for the module's public functions nearest ``name``."""
    import difflib
    import inspect

    names = getattr(module, "__all__", None) or [
        n for n, v in vars(module).items() if not n.startswith("_") and inspect.isfunction(v)]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if not close:
        return ""
    return " — did you mean " + " or ".join(f"'{where}:{c}'" for c in close) + "?"


_MODELS = Recent()
"""spec -> (sha256 of its model file or None, its pymc.Model), for the last few specs."""


def _file_digest(spec: str) -> str | None:
    """sha256 of the bytes of the file ``spec`` names, None for a module spec: a model file
    edited within one process (a notebook calling :func:`ckam_bench.run` again) is loaded again,
    not served from :data:`_MODELS`. (An imported module stays what Python imported.)"""
    found = _SPEC.match(str(spec).strip()) if isinstance(spec, str) else None
    where = found["where"] if found else ""
    if where.endswith(".py") or os.sep in where or "/" in where:
        try:
            return hashlib.sha256(Path(where).expanduser().read_bytes()).hexdigest()
        except OSError:
            return None
    return None


def load_model(spec: str):
    """``spec``'s ``pymc.Model`` (built once per process, spec and model-file content)."""
    pm = _pymc()
    digest = _file_digest(spec)
    if spec in _MODELS and _MODELS[spec][0] == digest:
        return _MODELS[spec][1]
    function = load_function(spec)
    try:
        model = function()
    except Exception as exc:
        raise ModelError(f"model failed: {spec} raised {type(exc).__name__}: {exc}") from None
    if not isinstance(model, pm.Model):
        raise ModelError(f"model must return a pymc.Model: {spec} returned {type(model).__name__}")
    if not model.free_RVs:
        raise ModelError(f"model has no free random variable to sample: {spec}")
    discrete = [rv.name for rv in model.free_RVs if rv.dtype.startswith(("int", "uint", "bool"))]
    if discrete:
        raise ModelError(f"model has discrete free variables ({', '.join(discrete)}) in {spec}; "
                         "ckam-bench samples continuous parameters only")
    _MODELS[spec] = (digest, model)
    return model


def model_dim(spec) -> int:
    """The number of unconstrained coordinates of ``spec``'s model (the ``${pymc_dim:...}``
    resolver of ``conf/target/pymc.yaml``, so sampler configs can read ``${target.dim}``; a
    config resolves it several times, so it is computed once per loaded model)."""
    point = initial_point(load_model(spec), None, 0)
    return int(sum(np.size(v) for v in point.values()))


_POINTS = Recent(4 * MODELS_KEPT)  # (id(model), init overrides, seed) -> (model, point)


def initial_point(model, init: str | None, seed: int) -> dict:
    """``model``'s initial point on the unconstrained scale (``init="prior"``: a prior draw of
    seed ``seed``, else PyMC's support point), computed once per model object: each needs a
    pytensor function compiled."""
    from pymc.initial_point import make_initial_point_fn

    key = (id(model), init == "prior", int(seed) if init == "prior" else 0)
    known = _POINTS.get(key)
    if known is None or known[0] is not model:
        overrides = {rv: "prior" for rv in model.free_RVs} if init == "prior" else None
        point = make_initial_point_fn(model=model, overrides=overrides, jitter_rvs=set(),
                                      return_transformed=True)(seed)
        known = _POINTS[key] = (model, point)
    return known[1]


def _element_names(name: str, shape: tuple) -> list[str]:
    if shape == ():
        return [name]
    return [f"{name}[{','.join(map(str, i))}]" for i in np.ndindex(*shape)]


# ---------------------------------------------------------------------------- compiled graph
@dataclass
class _Layout:
    """How the model's variables sit in the flat vectors: value variables in x, data inputs in
    the data buffer, stored (constrained) variables in the output of ``constrain``."""

    values: list  # (value variable, shape, slice of x)
    data: dict  # name -> (graph variable, shape, dtype, slice of the data buffer)
    observed: dict  # observed variable's name -> the name of its data in ``data``
    stored: list  # (name, graph variable, shape)
    dim: int
    n_data: int


def _layout(model, var_names) -> _Layout:
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    point = initial_point(model, None, 0)
    values, start = [], 0
    for rv in model.free_RVs:
        value = model.rvs_to_values[rv]
        shape = tuple(np.shape(point[value.name]))
        size = int(np.prod(shape, dtype=np.int64))
        values.append((value, shape, slice(start, start + size)))
        start += size
    data, observed, offset = {}, {}, 0

    def add(name, var):
        nonlocal offset
        for key, (v, *_) in data.items():
            if v is var:
                return key
        array = np.asarray(var.get_value() if isinstance(var, SharedVariable) else var.data)
        data[name] = (var, array.shape, array.dtype, slice(offset, offset + array.size))
        offset += array.size
        return name

    for rv in model.observed_RVs:
        var = model.rvs_to_values[rv]
        if isinstance(var, (SharedVariable, Constant)):
            observed[rv.name] = add(var.name if isinstance(var, SharedVariable) else rv.name, var)
    for var in model.data_vars:
        if isinstance(var, SharedVariable):
            add(var.name, var)
    free = {rv.name: rv for rv in model.free_RVs}
    determ = {d.name: d for d in model.deterministics}
    names = list(free) + list(determ) if var_names is None else list(var_names)
    unknown = [n for n in names if n not in free and n not in determ]
    if unknown:
        raise ModelError(f"var_names holds {', '.join(map(repr, unknown))}, not free variables or "
                         f"deterministics of the model (those are {', '.join(list(free) + list(determ))})")
    # shapes at the initial point, from the value variables (a pm.Flat cannot be drawn)
    outs = model.replace_rvs_by_values([free.get(n, determ.get(n)).shape for n in names])
    fn = model.compile_fn(outs, inputs=model.value_vars, point_fn=False, mode="FAST_COMPILE",
                          on_unused_input="ignore")
    shapes = fn(*[point[v.name] for v in model.value_vars]) if names else []
    stored = [(n, free.get(n, determ.get(n)), tuple(int(s) for s in shape))
              for n, shape in zip(names, shapes)]
    return _Layout(values, data, observed, stored, start, offset)


def _default_data(layout: _Layout) -> np.ndarray:
    from pytensor.compile.sharedvalue import SharedVariable

    buffer = np.empty(max(layout.n_data, 1))
    for var, _, _, where in layout.data.values():
        value = var.get_value() if isinstance(var, SharedVariable) else var.data
        buffer[where] = np.asarray(value, dtype=float).ravel()
    return buffer


_COMPILED = Recent()  # (spec, mode, stored names) -> the pytensor functions
_WRAPPERS = Recent()  # (spec, stored names) -> the latest compiled wrappers, their C-callables, buffer, owner


def _log_density_graph(model, layout: _Layout):
    """The joint log density (log-Jacobians included) as a pytensor graph of a flat vector ``x``
    and the data buffer: ``(x, buffer, replacements, logp)``."""
    import pytensor.tensor as pt
    from pytensor.graph.replace import clone_replace  # pytensor 3 has no pytensor.clone_replace

    x = pt.TensorType("float64", shape=(layout.dim,))("x")
    buffer = pt.TensorType("float64", shape=(max(layout.n_data, 1),))("data")
    replace = {value: x[where].reshape(shape) for value, shape, where in layout.values}
    for var, shape, dtype, where in layout.data.values():
        replace[var] = buffer[where].reshape(shape).astype(dtype)
    return x, buffer, replace, clone_replace(model.logp(), replace)


def _functions(spec: str, model, layout: _Layout, mode: str):
    """pytensor functions of (x, data buffer): log π, (log π, ∇ log π), the stored variables.
    Compiled once per process for each spec and mode."""
    key = (spec, mode, tuple(name for name, *_ in layout.stored))
    if key in _COMPILED:
        return _COMPILED[key]
    import pytensor
    import pytensor.tensor as pt
    from pymc.pytensorf import compile as compile_pymc
    from pytensor.graph.replace import clone_replace  # pytensor 3 has no pytensor.clone_replace

    x, buffer, replace, logp = _log_density_graph(model, layout)
    grad = pytensor.grad(logp, x)
    stored = [pt.as_tensor(v).ravel().astype("float64") for _, v, _ in layout.stored] or [pt.zeros(0)]
    # the stored variables as functions of the value variables (free variables back-transformed)
    stored = model.replace_rvs_by_values(stored)
    stored = clone_replace(stored, replace)
    stored = pt.concatenate(stored)
    # pytensor's compilation cached on disk (numba mode): the graphs of log π and the stored
    # variables decide the three functions (∇ log π is pytensor's own derivative of log π)
    disk = (pymc_compiled.graph_sha256([x, buffer], [logp, stored], f"{mode} {model.check_bounds}")
            if mode == "NUMBA" else None)
    out = pymc_compiled.load_functions(disk, 3)
    if out is None:
        with model:
            out = tuple(compile_pymc([x, buffer], outputs, mode=mode, trust_input=True,
                                     on_unused_input="ignore")  # a model without data
                        for outputs in ([logp], [logp, grad], [stored]))
        pymc_compiled.store_functions(disk, out)
    _COMPILED[key] = out
    return out


# ---------------------------------------------------------------------------- target
class PyMCModel(Target):
    """The posterior of a PyMC model on its unconstrained space (see the module docstring).

    Parameters
    ----------
    model : ``package.module:function`` or ``path/to/file.py:function``, a function of no
        argument returning a ``pymc.Model``.
    dim : the number of unconstrained coordinates; must match the model (a config key so
        sampler configs can read ``${target.dim}``; conf/target/pymc.yaml computes it).
    init : ``support_point`` (PyMC's initial point) or ``prior`` (a prior draw).
    init_seed : the seed of the prior draw (``init=prior``).
    var_names : the variables stored on the constrained scale; None = every free variable
        and deterministic.
    data : an ``.npz`` file of arrays replacing the model's observed data or ``pm.Data``
        containers of the same names and shapes; None keeps the model's own.
    """

    def __init__(self, model: str, dim: int | None = None, init: str = "support_point",
                 init_seed: int = 0, var_names: list | None = None, data: str | None = None):
        pm_model = load_model(model)
        if init not in INITS:
            raise ModelError(f"init must be one of {', '.join(INITS)}, got {init!r}")
        if var_names is not None:
            var_names = [str(v) for v in var_names]
        self.spec = str(model)
        self.model = pm_model
        self.layout = _layout(pm_model, var_names)
        if dim is not None and int(dim) != self.layout.dim:
            raise ModelError(f"dim must be {self.layout.dim} for model {self.spec}, got {dim}")
        super().__init__(self.layout.dim, self._initial_point(init, int(init_seed)))
        where, function = self.spec.rsplit(":", 1)
        stem = Path(where).stem if where.endswith(".py") else where.rsplit(".", 1)[-1]
        self.name = f"pymc_{stem}" if function == "model" else f"pymc_{stem}_{function}"
        self.init, self.init_seed, self.data_file = init, int(init_seed), data
        self.buffer = _default_data(self.layout)
        if data is not None:
            self.set_data(_read_data(data))
        self.coordinates = [n for value, shape, _ in self.layout.values
                            for n in _element_names(value.name, shape)]
        self.stored_names = [n for name, _, shape in self.layout.stored
                             for n in _element_names(name, shape)]
        self._mode = None
        self._jitted = self._jitted_entry = None
        self._jax_problem: str | None = None

    def _initial_point(self, init: str, seed: int) -> np.ndarray:
        point = initial_point(self.model, init, seed)
        return np.concatenate([np.ravel(point[v.name]) for v, _, _ in self.layout.values])

    # ------------------------------------------------------------------ data
    @property
    def data_names(self) -> list[str]:
        """Names of the arrays ``set_data`` accepts (observed variables, ``pm.Data``)."""
        return list(self.layout.data)

    def set_data(self, arrays: dict) -> None:
        """Replace observed data / ``pm.Data`` values in place (same names and shapes); the
        compiled functions read the new values at their next call."""
        for name, value in arrays.items():
            if name not in self.layout.data:
                raise ModelError(f"data names {name!r}, not observed data or a pm.Data container of "
                                 f"the model (those are {', '.join(self.layout.data) or 'none'})")
            _, shape, dtype, where = self.layout.data[name]
            value = np.asarray(value)
            if value.shape != shape:
                raise ModelError(f"data must give {name!r} the shape {shape}, got {value.shape}")
            flat = value.astype(float).ravel()
            if not np.all(np.isfinite(flat)) or not np.array_equal(flat.astype(dtype), value.ravel()):
                raise ModelError(f"data must give {name!r} finite values of dtype {dtype}")
            self.buffer[where] = flat

    # ------------------------------------------------------------------ compiled functions
    def _fns(self):
        mode = "NUMBA" if jit.enabled() else "FAST_RUN"
        fns = _functions(self.spec, self.model, self.layout, mode)
        if mode == "NUMBA":  # the jitted functions, called directly (no pytensor overhead)
            return [f.vm.jit_fn for f in fns]
        return fns

    def _log_density(self, x: np.ndarray) -> float:
        return float(self._fns()[0](np.ascontiguousarray(x, dtype=float), self.buffer)[0])

    def _grad_log_density(self, x: np.ndarray) -> np.ndarray:
        return self.log_density_and_grad_uncounted(x)[1]

    def log_density_and_grad_uncounted(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        logp, grad = self._fns()[1](np.ascontiguousarray(x, dtype=float), self.buffer)
        return float(logp), np.array(grad, dtype=float)

    def log_density_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """(log π(x), ∇ log π(x)) from one compiled call; counts one of each."""
        self.n_density += 1
        self.n_grad += 1
        return self.log_density_and_grad_uncounted(x)

    def _compiled(self):
        """The compiled wrappers reading this target's data buffer. A process keeps one set per
        model (with the samplers' C copies of them, :mod:`ckam_bench.jit`) and hands it to the
        next target of that model once the previous one is gone (sequential runs of a sweep or of an SBC); the new
        target then moves its data into the buffer they read. A target of the same model built
        while another still lives gets wrappers of its own."""
        if self._jitted is None:
            key = (self.spec, tuple(name for name, *_ in self.layout.stored))
            entry = _WRAPPERS.get(key)
            if entry is None or entry["owner"]() is not None:
                fns = _functions(self.spec, self.model, self.layout, "NUMBA")
                cfuncs = pymc_compiled.c_functions(key, fns[0], fns[1])
                entry = {"buffer": self.buffer, "owner": weakref.ref(self), "cfuncs": cfuncs,
                         "wrappers": pymc_compiled.compile_wrappers(cfuncs, self.buffer)}
                _WRAPPERS[key] = entry
            else:
                entry["buffer"][:] = self.buffer
                self.buffer = entry["buffer"]
                entry["owner"] = weakref.ref(self)
            # the wrappers call the C-callables by address: the target keeps them alive while it
            # lives, whatever the bounded caches drop (ckam_bench.caches)
            self._jitted_entry = entry
            self._jitted = entry["wrappers"]
        return self._jitted

    def jit_log_density(self):
        """Compiled ``f(x) -> log π(x)`` (uncounted; :mod:`ckam_bench.jit`)."""
        return self._compiled()[0] if jit.AVAILABLE else None

    def jit_log_density_and_grad(self):
        """Compiled ``f(x, grad_out) -> log π(x)`` writing ∇ log π(x) into ``grad_out``."""
        return self._compiled()[1] if jit.AVAILABLE else None

    # ------------------------------------------------------------------ constrained values
    @property
    def has_jax_density(self) -> bool:
        return not self.jax_density_problem()

    def jax_density_problem(self) -> str:
        """Why the model's log density has no JAX function ("" when it has one): an Op of the
        model's own without a JAX conversion (:func:`~ckam_bench.targets.pymc_jax.missing_conversions`)."""
        if self._jax_problem is None:
            x, buffer, _, logp = _log_density_graph(self.model, self.layout)
            self._jax_problem = pymc_jax.missing_conversions([x, buffer], [logp])
        return self._jax_problem

    def jax_log_density(self):
        """log π(x) of the flat unconstrained vector as a JAX function, through pytensor's JAX
        backend (the density of the JAX peer samplers), with the current data."""
        import jax.numpy as jnp

        get_jaxified_graph = pymc_jax.jaxify()
        x, buffer, _, logp = _log_density_graph(self.model, self.layout)
        fn = get_jaxified_graph(inputs=[x, buffer], outputs=[logp])
        data = jnp.asarray(self.buffer)
        return lambda v: fn(v, data)[0]

    def constrain(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """The stored variables on the constrained scale at each row of ``X`` (n, d), as
        columns named after the model's variables (``theta[3]``)."""
        fn = self._fns()[2]
        X = np.asarray(X, dtype=float)
        out = np.empty((X.shape[0], len(self.stored_names)))
        for i in range(X.shape[0]):
            out[i] = fn(np.ascontiguousarray(X[i]), self.buffer)[0]
        return {name: out[:, j] for j, name in enumerate(self.stored_names)}

    def ckam_constrained(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """The harness's hook for named sample columns: :meth:`constrain`."""
        return self.constrain(X)

    def ckam_reference(self):
        """The reference handed down for this model (:func:`ckam_bench.reference_providers.
        provided_reference`): posteriordb's reference draws when the model is one of the
        posteriordb suite's on its shipped data (the suite registers
        :func:`ckam_bench.posteriordb.reference_for` when imported, which building a suite model
        does), else None. The targets never import the suite built on them."""
        from ckam_bench.reference_providers import provided_reference

        return provided_reference(self)

    def ckam_label(self) -> str:
        """The run's target label: ``pymc_<module>[_<function>]``, not just ``pymc``."""
        return self.name

    # ------------------------------------------------------------------ description
    def describe(self) -> dict:
        """The model and its data, identified by bytes: ``source_sha256``, the sha256 of the
        source file that defines the model function, and ``data_sha256``, that of every array
        its log density reads (:func:`model_arrays`): the observed and ``pm.Data`` arrays as
        the target holds them (the model's own, or ``target.data``'s, or ``set_data``'s), then
        every constant of the model's graph (covariates, index arrays such as a county number
        per observation, sizes, the numbers of its priors) in the graph's order. Never a
        floating-point result (log π at some points, say), whose last bits depend on the CPU:
        the reference id computed from this is the same on every machine. A reference's
        certificate also keeps log π at two points, compared with a tolerance when it is loaded
        (:func:`ckam_bench.checks.reference.density_probes`), which catches a model whose code
        changed outside its source file."""
        data = array_sha256(model_arrays(self))
        return {**super().describe(), "model": self.spec, "coordinates": self.coordinates,
                "data_sha256": data[:16], "source_sha256": _source_sha256(self.spec)[:16]}


# ---------------------------------------------------------------------------- identity
_PYTENSOR_MODULES = ("pytensor.", "pymc.")


def model_arrays(target: PyMCModel) -> list[tuple[str, np.ndarray]]:
    """Every array the target's log density reads, labelled, in a fixed order (what
    ``data_sha256`` hashes with :func:`ckam_bench.data.array_sha256`):

    1. ``data <name>``: each observed or ``pm.Data`` array (the inputs of the compiled
       function), in its dtype and shape, read from the target's data buffer, so data set with
       ``target.data`` or :meth:`PyMCModel.set_data` are the ones hashed;
    2. ``<variable> #k``: every other constant and shared array of the model's graph, found by
       walking the graph of each random variable, deterministic and potential (in the model's
       order; each variable's inputs depth first, in input order), labelled with the first
       variable whose graph reaches it and its rank k in the walk: covariates, index arrays, the
       sizes and parameters of its distributions;
    3. ``<variable> op <class>``: the properties of an Op that is neither pytensor's nor PyMC's
       (a model's own Op, e.g. :class:`ckam_bench.posteriordb.ode.ODESolution`, whose arrays
       are properties, not inputs).

    Random generators (they do not enter the density) are left out. The constants PyMC adds
    when it derives the log density from this graph (−1/2, 2π, the bounds of its parameter
    checks) belong to PyMC's code, not to the model, and are not walked.

    The same model on the same data gives the same records on pytensor 2.38 (PyMC 5) and
    pytensor 3 (PyMC 6): pytensor 3 keeps a ``Join``'s (``concatenate``, ``stack``) axis as a
    property of the Op where pytensor 2 had it as the node's first input, an int8 constant;
    it is recorded as that constant on both (:func:`_join_axis`)."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    layout = target.layout
    records = [(f"data {name}", target.buffer[where].reshape(shape).astype(dtype))
               for name, (_, shape, dtype, where) in layout.data.items()]
    model = target.model
    in_buffer = {id(var) for var, *_ in layout.data.values()}
    outputs = ([(rv.name, rv) for rv in model.basic_RVs]
               + [(rv.name, model.rvs_to_values[rv]) for rv in model.observed_RVs]
               + [(v.name, v) for v in (*model.deterministics, *model.potentials)])
    seen: set = set()
    rank = 0
    for name, output in outputs:
        stack = [output]
        while stack:
            var = stack.pop()
            if isinstance(var, _JoinAxis):
                records.append((f"{name} #{rank}", var.value))
                rank += 1
                continue
            if id(var) in seen:
                continue
            seen.add(id(var))
            if id(var) in in_buffer:
                continue
            if isinstance(var, SharedVariable):
                value = var.get_value(borrow=True)
                if isinstance(value, (np.ndarray, np.generic, int, float, bool)):
                    records.append((f"{name} #{rank}", np.asarray(value)))
                    rank += 1
                continue
            if isinstance(var, Constant):
                records.append((f"{name} #{rank}", _constant_array(var.data)))
                rank += 1
                continue
            node = var.owner
            if node is None:
                continue
            first = id(node) not in seen
            if first:
                seen.add(id(node))
                op = type(node.op)
                if not op.__module__.startswith(_PYTENSOR_MODULES):
                    label = f"{name} op {op.__module__}.{op.__qualname__}"
                    props = getattr(node.op, "__props__", ())
                    records += [(f"{label}.{prop}", _constant_array(getattr(node.op, prop)))
                                for prop in props]
                    if not props:
                        records.append((label, np.asarray("")))
            stack.extend(reversed(node.inputs))
            axis = _join_axis(node.op) if first else None
            if axis is not None:  # popped next: where pytensor 2's axis input is
                stack.append(axis)
    return records


class _JoinAxis:
    """A ``Join``'s axis in the walk of :func:`model_arrays` (pytensor 3: an Op property)."""

    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = np.asarray(value, dtype=np.int8)


def _join_axis(op) -> _JoinAxis | None:
    """pytensor 3's ``Join(axis)`` (the axis a property of the Op): its axis, to be recorded as
    pytensor 2.38 recorded it, an int8 constant input (``as_tensor_variable`` of the
    normalised axis, which both versions compute alike); None for any other Op, and for
    pytensor 2's Join, whose constant axis input the walk meets as any other constant."""
    from pytensor.tensor.basic import Join

    if isinstance(op, Join) and "axis" in Join.__props__:
        return _JoinAxis(op.axis)
    return None


def _constant_array(value) -> np.ndarray:
    """A graph constant's value as an array to hash: numbers and arrays as they are, None and
    slices as their text; another object as its type's name (its bytes are not defined)."""
    if isinstance(value, (np.ndarray, np.generic, bool, int, float, complex, str, bytes)):
        array = np.asarray(value)
        if not array.dtype.hasobject:
            return array
    if value is None or isinstance(value, slice):
        return np.asarray(repr(value))
    if isinstance(value, (tuple, list)):
        parts = [_constant_array(v) for v in value]
        return np.asarray(repr([(p.dtype.str, p.shape, p.tobytes().hex()) for p in parts]))
    return np.asarray(f"<{type(value).__module__}.{type(value).__qualname__}>")


def _source_sha256(spec: str) -> str:
    """sha256 of the bytes of the file that defines ``spec``'s model function (its module's
    source; the function's own text when the file cannot be found)."""
    import inspect

    function = load_function(spec)
    try:
        return content_sha256(inspect.getsourcefile(function))
    except (TypeError, OSError):
        try:
            return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()
        except (TypeError, OSError):
            return hashlib.sha256(spec.encode()).hexdigest()


def _read_data(path) -> dict:
    path = Path(str(path)).expanduser()
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}
    except Exception as exc:
        raise ModelError(f"data cannot be read from {str(path)!r} as an .npz file: "
                         f"{type(exc).__name__}: {exc}") from None

