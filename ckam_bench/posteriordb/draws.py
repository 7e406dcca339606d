"""posteriordb's reference draws in a PyMC model's coordinates: :func:`reference_values` (the
model's free variables, constrained scale), :func:`unconstrained_reference` (rows of the value
variables in the order PyMC ravels a point) and :func:`harness_reference` (posteriordb's draws as
a certified reference of the harness), for every registered posterior
(:func:`ckam_bench.posteriordb.registered`). Re-exported by :mod:`ckam_bench.posteriordb.models`.

Kept apart from the models: a reference's id covers the bytes of its model function's module, and
this code can change without orphaning any reference.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from ckam_bench.caches import Recent
from ckam_bench.posteriordb import POSTERIORDB, POSTERIORDB_COMMIT, SUITE, load_data, reference_columns, registered
from ckam_bench.posteriordb.subset import reference_status


def _noncentered_from_reference(ref: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """posteriordb's eight-schools reference gives theta: theta_trans = (theta - mu) / tau."""
    return {"theta_trans": (ref["theta"] - ref["mu"][:, None]) / ref["tau"][:, None],
            "mu": ref["mu"], "tau": ref["tau"]}


def _gp_pois_from_reference(ref: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """posteriordb's reference gives f: f_tilde = L^-1 f with L the model's Cholesky factor."""
    x = load_data("gp_pois_regr")["x"].astype(float)
    sq = np.subtract.outer(x, x) ** 2
    f_tilde = np.empty_like(ref["f"])
    for i, (alpha, rho, f) in enumerate(zip(ref["alpha"], ref["rho"], ref["f"])):
        chol = np.linalg.cholesky(alpha**2 * np.exp(-0.5 * sq / rho**2) + 1e-10 * np.eye(len(x)))
        f_tilde[i] = np.linalg.solve(chol, f)
    return {"rho": ref["rho"], "alpha": ref["alpha"], "f_tilde": f_tilde}


def _simplex_from_reference(ref: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The HMMs' simplexes theta1, theta2 (K = 2) from their first coordinate: x2 = 1 - x1 (the
    float32 draws sum to 1 only to rounding, and Stan's stick-breaking coordinate is logit(x1))."""
    out = dict(ref)
    for name in ("theta1", "theta2"):
        out[name] = np.column_stack([ref[name][:, 0], 1.0 - ref[name][:, 0]])
    return out


_FROM_REFERENCE = {
    "eight_schools-eight_schools_noncentered": _noncentered_from_reference,
    "gp_pois_regr-gp_pois_regr": _gp_pois_from_reference,
    "hmm_example-hmm_example": _simplex_from_reference,
    "bball_drive_event_0-hmm_drive_0": _simplex_from_reference,
    "bball_drive_event_1-hmm_drive_1": _simplex_from_reference,
}


def reference_values(name: str) -> dict[str, np.ndarray]:
    """The reference draws of posterior ``name`` as the model's free variables on the
    constrained scale: ``{variable name: (n, *shape)}``, chains concatenated. posteriordb's
    draws for a posterior of :data:`SUITE`; for one whose reference the harness certified, that
    reference's stored draws mapped from the target's unconstrained coordinates (LookupError
    when it has none: :func:`ckam_bench.posteriordb.subset.reference_status`)."""
    if registered()[name].reference_source == POSTERIORDB:
        ref = reference_columns(SUITE[name].reference)
        return _FROM_REFERENCE.get(name, lambda r: r)(ref)
    return _certified_values(name)


def _certified_values(name: str) -> dict[str, np.ndarray]:
    from ckam_bench.reference_lookup import read_reference

    status = reference_status(name)
    if not status.found:
        raise LookupError(f"{name}: no reference ({status.reason})")
    model = registered()[name].build()
    u = read_reference(status.path).samples
    point = model.initial_point()
    shapes = [np.shape(point[v.name]) for v in model.value_vars]
    bounds = np.cumsum([0] + [int(np.prod(shape, dtype=np.int64)) for shape in shapes])
    if u.shape[1] != bounds[-1]:
        raise ValueError(f"{name}: the reference has {u.shape[1]} coordinates, the model {bounds[-1]}")
    backward = _backward_transform(model)
    rows = [backward(*[row[a:b].reshape(shape) for a, b, shape in zip(bounds, bounds[1:], shapes)])
            for row in u]
    return {rv.name: np.array([r[k] for r in rows]) for k, rv in enumerate(model.free_RVs)}


_UNCONSTRAINED = Recent()
"""Posterior name -> its unconstrained reference draws (read-only), for the suite's own model:
kept for the last few posteriors, as every run of a sweep's worker on one posterior needs them."""


def unconstrained_reference(name: str, model: pm.Model | None = None) -> tuple[list[str], np.ndarray]:
    """The reference draws on the unconstrained scale, one row per draw, columns in the order in
    which PyMC ravels the model's value variables; returns (value-variable names, array (n, d),
    read-only when ``model`` is the suite's own: kept for the process)."""
    if model is None:
        if name not in _UNCONSTRAINED:
            names, u = unconstrained_reference(name, SUITE[name].build())
            u.setflags(write=False)
            _UNCONSTRAINED[name] = (names, u)
        names, u = _UNCONSTRAINED[name]
        return list(names), u
    values = reference_values(name)
    draws = [np.asarray(values[rv.name]) for rv in model.free_RVs]
    n = len(draws[0])
    columns = [np.reshape(u, (n, -1)) for u in _forward_transform(model, batched=True)(*draws)]
    return [v.name for v in model.value_vars], np.concatenate(columns, axis=1)


def _forward_transform(model: pm.Model, batched: bool = False):
    """Compiled map from the free variables (constrained) to the value variables (unconstrained);
    ``batched``: of a batch of draws at once (a leading axis; pytensor's ``vectorize_graph``, the
    same arithmetic per draw: bit-identical to the map applied draw by draw on every suite
    posterior, ``tests/test_posteriordb_models.py``)."""
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.replace import clone_replace, vectorize_graph

    inputs = [rv.type() for rv in model.free_RVs]
    outputs = []
    for rv, x in zip(model.free_RVs, inputs):
        transform = model.rvs_to_transforms.get(rv)
        outputs.append(x if transform is None else transform.forward(x, *rv.owner.inputs))
    outputs = clone_replace(outputs, replace=dict(zip(model.free_RVs, inputs)))
    if batched:
        stacked = [pt.tensor(dtype=x.type.dtype, shape=(None, *x.type.shape))
                   for x in inputs]
        outputs = vectorize_graph(outputs, replace=dict(zip(inputs, stacked)))
        inputs = stacked
    return pytensor.function(inputs, outputs, on_unused_input="ignore")


def _backward_transform(model: pm.Model):
    """Compiled map from the value variables (unconstrained) to the free variables (constrained)."""
    import pytensor

    outputs = model.replace_rvs_by_values(model.free_RVs)
    return pytensor.function(model.value_vars, outputs, on_unused_input="ignore")


def harness_reference(name: str, target) -> tuple[dict, dict]:
    """posteriordb's reference draws of ``name`` as a certified reference sample of the harness
    (:mod:`ckam_bench.checks.reference`'s format; write it with
    :func:`ckam_bench.checks.reference.store_reference`) for ``target``, the ``target=pymc`` target of
    the suite model (its ``reference_id()``, ``describe()`` and ``dim`` are used): the draws on
    the unconstrained scale, E[X], E[X²], Var[X], E[X⁴] over all of them, arviz-stats R-hat,
    ESS and MCSE. Certified by posteriordb (R-hat < 1.01, ESS within bounds, |lag-1
    autocorrelation| < 0.05, 10 000 draws), not by ``ckam-bench-reference``'s ESS >= 10 000, which
    10 000 thinned draws meet only on average. Returns (certificate, arrays)."""
    from ckam_bench.reference_lookup import diagnose

    if registered()[name].reference_source != POSTERIORDB:
        raise ValueError(f"{name} has no posteriordb draws: its reference is the one the harness "
                         "certified, found by the target's reference id")
    posterior = SUITE[name]
    _, u = unconstrained_reference(name)
    if u.shape[1] != target.dim:
        raise ValueError(f"{name}: the reference has {u.shape[1]} coordinates, the target {target.dim}")
    chains = u.reshape(10, -1, u.shape[1])
    diag = diagnose(chains)
    second = (u**2).mean(axis=0)
    arrays = {"samples": u.astype(np.float32), "chain": np.repeat(np.arange(10, dtype=np.int16), chains.shape[1]),
              "mean": u.mean(axis=0), "second_moment": second, "variance": u.var(axis=0),
              "fourth_moment": (u**4).mean(axis=0), "mcse_mean": diag["mcse_mean"]}
    certificate = {
        "reference_id": target.reference_id(), "certified": True, "certified_by": "posteriordb",
        "target": target.describe(),
        "sampler": f"posteriordb {posterior.reference} (Stan NUTS, 10 chains, 10 000 warm-up + "
                   f"10 000 iterations thinned by 10), commit {POSTERIORDB_COMMIT}",
        "chains": 10, "iterations": int(chains.shape[1]),
        "criteria": "posteriordb's: R-hat < 1.01, ESS within bounds, |lag-1 autocorrelation| < 0.05",
        "diagnostics": {"rhat_max": float(np.nanmax(diag["rhat"])),
                        "ess_bulk_min": float(np.nanmin(diag["ess_bulk"])),
                        "ess_tail_min": float(np.nanmin(diag["ess_tail"])),
                        "rhat": diag["rhat"].tolist(), "ess_bulk": diag["ess_bulk"].tolist(),
                        "ess_tail": diag["ess_tail"].tolist()},
        "date": "2025-04-29",
    }
    return certificate, arrays
