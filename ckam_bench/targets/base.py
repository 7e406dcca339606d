"""The target interface every benchmark distribution implements.

A target is an unnormalised log density ``log π(x)`` on ``R^dim``. Subclasses implement the
*uncounted* primitives (``_log_density`` and, when they have one, ``_grad_log_density``);
the public ``log_density`` / ``grad_log_density`` wrap them and count evaluations, so the
trace can report cost in density and gradient evaluations. Metrics and tests call the
uncounted primitives, so evaluation work never inflates a sampler's counts.

Optional capabilities (exact draws, exact 1-D marginals, known moments, exact bin masses)
are advertised by the ``has_*`` properties; calling a missing one raises
:class:`CapabilityError` with the target's name.

Pseudo-marginal targets (``noisy = True``) return an unbiased *estimate* of the density:
a sampler must keep the estimate at its current state and never recompute it. All samplers
in ckam-bench store ``logp`` of the current state in their state, so this holds by design.
Their randomness comes from ``self.rng``, a generator the runner derives from the run's seed
(:meth:`Target.bind_rng`) and saves with the resume state, so a resumed run stays
bit-identical.
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np


class CapabilityError(RuntimeError):
    """A target was asked for something it cannot provide (e.g. exact draws)."""


class PluginError(ValueError):
    """A target's or sampler's hook returned something the harness cannot use; the message is
    one line naming the class and the hook."""


class Target:
    """Base class for targets.

    Attributes
    ----------
    name : short name used in traces and figures.
    dim : dimension d.
    start : default start point, shape (d,).
    box : plotting / KL box, shape (d, 2) of [low, high] per coordinate.
    noisy : True for pseudo-marginal targets (density is a random estimate).
    n_density, n_grad, n_hessian : evaluation counters (counted calls only).
    """

    name: str = "target"
    noisy: bool = False
    rng: np.random.Generator | None = None

    def __init__(self, dim: int, start=None, box=None):
        self.dim = int(dim)
        self.start = np.zeros(self.dim) if start is None else np.asarray(start, float).reshape(self.dim)
        self.box = None if box is None else np.asarray(box, float).reshape(self.dim, 2)
        self.n_density = 0
        self.n_grad = 0
        self.n_hessian = 0

    # ------------------------------------------------------------------ primitives
    def _log_density(self, x: np.ndarray) -> float:  # pragma: no cover - abstract
        raise CapabilityError(f"target {self.name!r} defines no log density")

    def _log_density_batch(self, X: np.ndarray) -> np.ndarray:
        """Uncounted log density of each row of ``X`` (n, d); subclasses vectorise this."""
        return np.array([self._log_density(x) for x in np.asarray(X, float)])

    def _grad_log_density(self, x: np.ndarray) -> np.ndarray:
        raise CapabilityError(f"target {self.name!r} has no gradient")

    # ------------------------------------------------------------------ counted API
    def log_density(self, x: np.ndarray) -> float:
        """log π(x) up to a constant (counted)."""
        self.n_density += 1
        return self._log_density(x)

    def log_density_batch(self, X: np.ndarray) -> np.ndarray:
        """log π at each row of ``X`` (counted, one evaluation per row)."""
        X = np.asarray(X, float)
        self.n_density += X.shape[0]
        return self._log_density_batch(X)

    def _hessian_log_density(self, x: np.ndarray) -> np.ndarray:
        raise CapabilityError(f"target {self.name!r} has no Hessian")

    def hessian_log_density(self, x: np.ndarray) -> np.ndarray:
        """∇² log π(x), shape (d, d) (counted in ``n_hessian``)."""
        self.n_hessian += 1
        return self._hessian_log_density(x)

    def grad_log_density(self, x: np.ndarray) -> np.ndarray:
        """∇ log π(x) (counted)."""
        self.n_grad += 1
        return self._grad_log_density(x)

    def log_density_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """(log π(x), ∇ log π(x)), counting one density and one gradient evaluation."""
        return self.log_density(x), self.grad_log_density(x)

    def bind_rng(self, rng: np.random.Generator) -> None:
        """Give a noisy target the generator of its density estimates (called by the runner
        with a generator derived from the run's seed)."""
        self.rng = rng

    def reset_counters(self) -> None:
        self.n_density = 0
        self.n_grad = 0
        self.n_hessian = 0

    # ------------------------------------------------------------------ capabilities
    @property
    def has_gradient(self) -> bool:
        return type(self)._grad_log_density is not Target._grad_log_density

    @property
    def has_hessian(self) -> bool:
        return type(self)._hessian_log_density is not Target._hessian_log_density

    @property
    def has_jax_density(self) -> bool:
        """Whether :meth:`jax_log_density` gives a function (checked without importing JAX)."""
        return type(self).jax_log_density is not Target.jax_log_density

    def jax_log_density(self):
        """A pure JAX function ``x -> log π(x)`` (float64) for the peer samplers
        (:mod:`ckam_bench.samplers.peers`), or None (the default). The built-in targets build
        theirs with :mod:`ckam_bench.targets.jax_densities`; a user's target may override it."""
        return None

    @property
    def has_exact_sampler(self) -> bool:
        return type(self).sample is not Target.sample

    @property
    def has_marginals(self) -> bool:
        return type(self).marginal_cdf is not Target.marginal_cdf

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` exact independent draws, shape (n, d)."""
        raise CapabilityError(f"target {self.name!r} has no exact sampler")

    def marginal_logpdf(self, j: int, x: np.ndarray) -> np.ndarray:
        """Exact log density of coordinate ``j`` at points ``x`` (1-D array)."""
        raise CapabilityError(f"target {self.name!r} has no exact marginals")

    def marginal_cdf(self, j: int, x: np.ndarray) -> np.ndarray:
        """Exact CDF of coordinate ``j`` at points ``x`` (1-D array)."""
        raise CapabilityError(f"target {self.name!r} has no exact marginals")

    @property
    def mean(self) -> np.ndarray | None:
        """Exact mean, or None when unknown."""
        return None

    @property
    def variance(self) -> np.ndarray | None:
        """Exact per-coordinate variance, or None when unknown."""
        return None

    # ------------------------------------------------------------------ optional hooks
    # The harness calls a target by these names only (namespaced ``ckam_``, so that an ordinary
    # method of a user's class — ``constrain``, ``means``, ``label`` — never collides with one);
    # it reads their results through the checked accessors below (:func:`constrained_columns`,
    # …), which turn a malformed result into one :class:`PluginError` line naming the class.

    def ckam_constrained(self, X: np.ndarray) -> dict | None:
        """Named columns to store beside ``x0…`` in ``samples.parquet`` for the rows of ``X``
        (n, d): ``{name: (n,) array}`` (a PyMC model's variables on the constrained scale).
        None (the default) stores none."""
        return None

    def ckam_mixture(self) -> tuple | None:
        """(weights (K,), means, variances) of a Gaussian mixture — joint: means and diagonal
        variances (K, d); product: (K,), the same mixture per coordinate — for the stationarity
        check's mode occupancy; None (default) for a target that is not one."""
        return None

    def ckam_fourth_moment(self) -> np.ndarray | None:
        """Exact E[X⁴] per coordinate (d,) (for the moment metric's MCSE of E[X²]), or None."""
        return None

    def ckam_quantile_statistic(self, X: np.ndarray) -> np.ndarray | None:
        """A statistic s(x) (n,) for the rows of ``X`` whose distribution function under π is
        the identity on (0, 1) (the quantile-deviation metric), or None (default)."""
        return None

    def ckam_true_coefficients(self) -> tuple | None:
        """(β_true (p,), the slice of the coordinates that estimate it) for the coefficient
        distance metric, or None (default)."""
        return None

    def ckam_reference(self):
        """A reference sample the target brings itself (a
        :class:`ckam_bench.reference_lookup.Reference`: draws, moments, certificate), used when
        no certified reference of its id is shipped or cached (a posteriordb suite model: its
        posteriordb draws); None (default) for none."""
        return None

    def ckam_label(self) -> str | None:
        """The run's target label in traces and figures when the config name does not say
        enough (a PyMC model: its module and function); None (default) keeps the config name."""
        return None

    def grid_mass(self, edges: list[np.ndarray]) -> np.ndarray:
        """Probability of each cell of a grid (conditional on the grid's box).

        ``edges`` holds one array of bin edges per coordinate (only 2-D grids are used by the
        KL metric). The default integrates the density by the midpoint rule; targets with a
        closed form (Gaussian mixtures) override it with exact cell masses.
        """
        mids = [0.5 * (e[1:] + e[:-1]) for e in edges]
        widths = [np.diff(e) for e in edges]
        mesh = np.meshgrid(*mids, indexing="ij")
        pts = np.stack([m.ravel() for m in mesh], axis=1)
        logp = self._log_density_batch(pts).reshape(mesh[0].shape)
        vol = np.ones_like(logp)
        for axis, w in enumerate(widths):
            shape = [1] * len(widths)
            shape[axis] = -1
            vol = vol * w.reshape(shape)
        logp = np.where(np.isfinite(logp), logp, -np.inf)
        mass = np.exp(logp - logp.max()) * vol
        return mass / mass.sum()

    def describe(self) -> dict:
        """Small JSON-able description stored in the run's status file, and the identity of the
        distribution (:meth:`reference_id`): a subclass adds every setting that changes its
        density, and its data by their bytes (:func:`ckam_bench.data.content_sha256` of a file,
        :func:`ckam_bench.data.array_sha256` of arrays read or built exactly)."""
        return {"name": self.name, "dim": self.dim, "noisy": self.noisy}

    def reference_id(self) -> str:
        """Key of this target's certified reference sample (:mod:`ckam_bench.checks.reference`): its
        name plus a short hash of :meth:`describe` (the settings that define the distribution;
        targets that read data put a digest of it there), as sorted JSON in which a numpy array
        is written in full (never numpy's abbreviated text) and a numpy number as the number."""
        settings = json.dumps(self.describe(), sort_keys=True, default=_json_value)
        return f"{self.name}-{hashlib.sha256(settings.encode()).hexdigest()[:10]}"


def _json_value(value):
    """JSON for what ``json`` cannot write: numpy arrays as nested lists (every element),
    numpy numbers as numbers, anything else as its text."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def check_target(target, label: str) -> None:
    """The target contract, checked when a target is built (``label``: its config name).

    Required: a :class:`Target` with ``dim >= 1`` and ``_log_density(x)`` finite at ``start``.
    Optional, each checked when present: ``start`` (d,), ``box`` (d, 2) with low < high,
    ``_grad_log_density`` (d,), ``sample(n, rng)`` (n, d), ``marginal_logpdf`` together with
    ``marginal_cdf``, ``mean`` / ``variance`` (d,). A class that keeps the default ``name``
    takes its config name. Raises ``ValueError`` naming the target and the member.
    """
    where = f"target '{label}'"
    if not isinstance(target, Target):
        raise ValueError(f"{where}: _target_ must build a ckam_bench.targets.base.Target, "
                         f"got {type(target).__name__}")
    if getattr(target, "name", "target") == "target":
        target.name = label
    d = getattr(target, "dim", None)
    if not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"{where}: dim must be an integer >= 1 (call super().__init__(dim, ...) "
                         f"in __init__), got {d!r}")
    if type(target)._log_density is Target._log_density:
        raise ValueError(f"{where}: defines no _log_density(x) (required: the unnormalised "
                         "log density of a point of shape (dim,))")
    if np.shape(target.start) != (d,):
        raise ValueError(f"{where}: start has shape {np.shape(target.start)}, needs ({d},)")
    if target.box is not None and not np.all(target.box[:, 0] < target.box[:, 1]):
        raise ValueError(f"{where}: box rows must be [low, high] with low < high")
    if type(target).marginal_logpdf is Target.marginal_logpdf and target.has_marginals:
        raise ValueError(f"{where}: defines marginal_cdf but not marginal_logpdf (the KL "
                         "metric needs both)")
    if target.has_gradient and not target.noisy:
        g = np.asarray(target._grad_log_density(np.array(target.start, float)))
        if g.shape != (d,):
            raise ValueError(f"{where}: _grad_log_density returns shape {g.shape}, needs ({d},)")
    if target.has_exact_sampler:
        draws = np.asarray(target.sample(2, np.random.default_rng(0)))
        if draws.shape != (2, d):
            raise ValueError(f"{where}: sample(n, rng) returns shape {draws.shape} for n=2, "
                             f"needs (n, {d})")
    for member in ("mean", "variance"):
        value = getattr(target, member)
        if value is not None and np.shape(value) != (d,):
            raise ValueError(f"{where}: {member} has shape {np.shape(value)}, needs ({d},)")


# ---------------------------------------------------------------------------- checked hooks
def _where(obj, hook: str) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}.{hook}"


def _array(obj, hook: str, value, shape: tuple, what: str) -> np.ndarray:
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise PluginError(f"{_where(obj, hook)} must return {what}, got {type(value).__name__}") from None
    if a.shape != shape:
        raise PluginError(f"{_where(obj, hook)} must return {what} of shape {shape}, got shape {a.shape}")
    return a


def constrained_columns(target, X: np.ndarray) -> dict:
    """:meth:`Target.ckam_constrained` checked: a dict of str → (n,) arrays whose names do not
    clash with the stored ``index`` and ``x0…`` columns."""
    value = target.ckam_constrained(X)
    if value is None:
        return {}
    hook = "ckam_constrained"
    if not isinstance(value, dict):
        raise PluginError(f"{_where(target, hook)} must return a dict of name -> (n,) array, "
                          f"got {type(value).__name__}")
    n = np.shape(X)[0]
    reserved = {"index"} | {f"x{j}" for j in range(target.dim)}
    out = {}
    for name, column in value.items():
        if not isinstance(name, str) or name in reserved:
            raise PluginError(f"{_where(target, hook)} returned the column name {name!r} "
                              "(names must be strings other than index and x0, x1, …)")
        out[name] = _array(target, hook, column, (n,), f"column {name!r} as an array")
    return out


def mixture_of(target) -> tuple | None:
    """:meth:`Target.ckam_mixture` checked: (weights, means, variances) as arrays, or None."""
    value = target.ckam_mixture()
    if value is None:
        return None
    hook = "ckam_mixture"
    if not (isinstance(value, (tuple, list)) and len(value) == 3):
        raise PluginError(f"{_where(target, hook)} must return (weights, means, variances) or None")
    w = np.asarray(value[0], float)
    if w.ndim != 1 or w.size < 1 or not np.all(w > 0):
        raise PluginError(f"{_where(target, hook)}: weights must be K > 0 positive numbers")
    K, d = w.size, target.dim
    shape = (K, d) if np.ndim(value[1]) == 2 else (K,)
    means = _array(target, hook, value[1], shape, "means")
    variances = _array(target, hook, value[2], shape, "variances")
    if not np.all(variances > 0):
        raise PluginError(f"{_where(target, hook)}: variances must be > 0")
    return w, means, variances


def fourth_moment_of(target) -> np.ndarray | None:
    """:meth:`Target.ckam_fourth_moment` checked: (d,) or None."""
    value = target.ckam_fourth_moment()
    return None if value is None else _array(target, "ckam_fourth_moment", value, (target.dim,),
                                             "E[X^4] per coordinate")


def has_quantile_statistic(target) -> bool:
    return type(target).ckam_quantile_statistic is not Target.ckam_quantile_statistic


def quantile_statistic_of(target, X: np.ndarray) -> np.ndarray:
    """:meth:`Target.ckam_quantile_statistic` checked: (n,)."""
    return _array(target, "ckam_quantile_statistic", target.ckam_quantile_statistic(X),
                  (np.shape(X)[0],), "one statistic per row")


def true_coefficients_of(target) -> tuple | None:
    """:meth:`Target.ckam_true_coefficients` checked: (β_true (p,), column indices (p,))."""
    value = target.ckam_true_coefficients()
    if value is None:
        return None
    hook = "ckam_true_coefficients"
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise PluginError(f"{_where(target, hook)} must return (coefficients, slice) or None")
    truth = np.asarray(value[0], float).ravel()
    try:
        columns = np.arange(target.dim)[value[1]]
    except (IndexError, TypeError):
        raise PluginError(f"{_where(target, hook)}: {value[1]!r} does not select coordinates") from None
    if columns.shape != truth.shape:
        raise PluginError(f"{_where(target, hook)}: the slice selects {columns.size} coordinates, "
                          f"the coefficients are {truth.size}")
    return truth, columns


_SAFE_LABEL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def label_of(target, default: str) -> str:
    """:meth:`Target.ckam_label` checked: a non-empty string, else ``default``."""
    value = target.ckam_label()
    if value is None:
        return default
    if not (isinstance(value, str) and _SAFE_LABEL.match(value)):
        raise PluginError(f"{_where(target, 'ckam_label')} must return a name usable in file names "
                          f"(letters, digits, _ . + -) or None, got {value!r}")
    return value
