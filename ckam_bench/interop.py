"""Stored runs as ArviZ data: one call, :func:`to_datatree`.

``to_datatree(runs)`` turns one stored run, or the runs of several seeds of one configuration
(as chains), into an :class:`xarray.DataTree` laid out the way ArviZ (``arviz-base``,
``arviz-stats``, ``arviz-plots``) expects, so its diagnostics and plots work directly::

    import arviz_stats as azs
    from ckam_bench.interop import to_datatree

    dt = to_datatree("outputs/multirun/2026-11-23/10-00-00_ab12cd")  # a one-config sweep
    azs.ess(dt), azs.rhat(dt), azs.mcse(dt)

Groups:

* ``posterior`` — variable ``x`` with dims ``(chain, draw, dim)``: each run's stored sample
  (``samples.parquet``, the bounded evenly thinned record of the collected states; for a
  PyMC target the unconstrained coordinates). Chain c is the c-th run in seed order; ``draw``
  is the position in the stored sample, and the coordinate ``index`` (chain, draw) the
  position of that state in the collected chain. For a target whose samples also hold named
  columns (a PyMC model's variables on the constrained scale: ``tau``, ``theta[3]``,
  ``L[0,1]``; :func:`named_variables`), one variable per model variable with its own dims
  ``(chain, draw, <name>_dim_0, …)`` (``attrs["model_variables"]`` lists them), so
  ``azs.summary(dt, var_names=["mu", "tau"])`` works under the model's names.
* ``sample_stats`` — from ``diagnostics.parquet``, per recorded iteration (all iterations of
  the head of the run, then thinned; uncollected phases such as cKAM's exploration included):
  ``acceptance_rate`` (the MH acceptance probability), ``accepted``, ``step_size``, ``noise``,
  ``phase`` and, when the sampler records it, ``lp`` (log target density of the state). Its
  ``draw`` is the position in the diagnostics record, with the coordinate ``iteration``.

**Seeds are aligned on collected iterations** (:func:`aligned_positions`): each stored draw
carries its index in the collected chain (``samples.parquet`` ``index``; the diagnostics'
``iteration``), and seeds can be stored with different thinning strides or lengths. Over the
common range [max of the seeds' first indices, min of their last], the grid is the indices of
the seed with the fewest stored draws there, and every seed keeps, per grid point, its last
draw at or before it (for the buffer's power-of-two strides, the same collected iteration). So
R-hat and MCSE over seeds compare the same part of every chain; cutting each seed to its first
n draws compared a finely thinned seed's first half with a coarsely thinned seed's whole chain.
``attrs["aligned_on"]`` names the axis and ``attrs["common_range"]`` the range;
``attrs["truncated_to"]`` the draws per chain when a seed lost draws. The
root's ``attrs`` hold the run ids, seeds, sampler, target and the configuration. Runs of
different configurations are refused (``ValueError`` naming the settings that differ), so a
set of chains is always one configuration with several seeds.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np

from ckam_bench.engine import store

STATS = {  # diagnostics column -> ArviZ sample_stats name
    "accept_prob": "acceptance_rate",
    "accepted": "accepted",
    "step_size": "step_size",
    "noise": "noise",
    "phase": "phase",
    "logp": "lp",
}


def _runs(source):
    """StoredRun objects from a run folder, a folder of runs of one configuration, a
    StoredRun, or a list of either."""
    from ckam_bench.report.aggregate import StoredRun, load_results

    items = source if isinstance(source, (list, tuple)) else [source]
    runs = []
    for item in items:
        if isinstance(item, StoredRun):
            runs.append(item)
            continue
        results = load_results(Path(item), include_incomplete=True)
        if not results.runs:
            why = "; ".join(str(s) for s in results.skipped) or "no run folder found"
            raise ValueError(f"{item}: no usable run ({why})")
        runs.extend(results.runs)
    return runs


def to_datatree(source, *, stats: bool = True):
    """One stored run, or the seeds of one configuration as chains, as an ArviZ DataTree.

    ``source``: a run folder, a folder holding the runs of one configuration (e.g. a sweep
    over seeds), a :class:`~ckam_bench.report.aggregate.StoredRun`, or a list of those.
    ``stats=False`` leaves out ``sample_stats``. See the module docstring for the layout.
    """
    import xarray as xr
    from arviz_base import dict_to_dataset

    group = _one_configuration(_runs(source))
    runs = group.runs  # one per seed, seed order
    samples, positions, x = aligned_draws(runs)
    n = x.shape[1]
    attrs = {
        "ckam_run_ids": [r.run_id for r in runs],
        "ckam_seeds": [r.seed for r in runs],
        "ckam_sampler": group.sampler,
        "ckam_target": group.target,
        "ckam_label": group.label,
        "ckam_config": json.dumps(group.settings, sort_keys=True, default=str),
        "ckam_paths": [str(r.path) for r in runs],
    }
    post_attrs = dict(attrs)
    if any(len(f) != n for f in samples):
        post_attrs["truncated_to"] = n
    index = np.stack([f["index"].to_numpy(np.int64)[p] if "index" in f else p
                      for f, p in zip(samples, positions)])
    post_attrs["aligned_on"] = "collected index"
    post_attrs["common_range"] = [int(index[:, 0].max()), int(index[:, -1].min())] if n else []
    data, dims = {"x": x}, {"x": ["dim"]}
    for name, (shape, columns) in named_variables(samples[0]).items():
        if name in data or not all(set(columns) <= set(f.columns) for f in samples):
            continue  # a model variable called x, or one a seed did not store
        data[name] = np.stack([f[columns].to_numpy(float)[p] for f, p in zip(samples, positions)]
                              ).reshape(len(samples), n, *shape)
        dims[name] = [f"{name}_dim_{k}" for k in range(len(shape))]
    post_attrs["model_variables"] = [k for k in data if k != "x"]
    posterior = dict_to_dataset(data, dims=dims, attrs=post_attrs)
    posterior = posterior.assign_coords(index=(("chain", "draw"), index))
    tree = {"posterior": posterior}
    if stats:
        diags = [run.diagnostics() for run in runs]
        if all(d is not None and not d.empty for d in diags):
            where = aligned_positions([d["iteration"].to_numpy(np.int64) for d in diags])
            m = len(where[0])
            data = {name: np.stack([d[col].to_numpy()[p] for d, p in zip(diags, where)])
                    for col, name in STATS.items() if all(col in d for d in diags)}
            data = {k: (v.astype(float) if v.dtype == object else v) for k, v in data.items()}
            stat_attrs = dict(attrs)
            if any(len(d) != m for d in diags):
                stat_attrs["truncated_to"] = m
            ds = dict_to_dataset(data, attrs=stat_attrs)
            stat_attrs["aligned_on"] = "iteration"
            iteration = np.stack([d["iteration"].to_numpy(np.int64)[p] for d, p in zip(diags, where)])
            tree["sample_stats"] = ds.assign_coords(iteration=(("chain", "draw"), iteration))
    dt = xr.DataTree.from_dict(tree)
    dt.attrs.update(attrs)
    return dt


def _one_configuration(runs):
    """The one group (:func:`ckam_bench.report.aggregate.group_runs`) of ``runs``; ValueError
    when they are runs of different configurations or targets."""
    from ckam_bench.report.aggregate import differing_keys, group_runs

    groups = group_runs(runs)
    if len({g.key for g in groups}) > 1 or len({g.target for g in groups}) > 1:
        keys = differing_keys(groups)
        raise ValueError("runs of different configurations cannot be chains of one posterior "
                         f"(they differ in {', '.join(keys[:6]) or 'target'}); "
                         "pass the runs of one configuration")
    return groups[0]


def aligned_draws(runs, unconstrained: bool = False) -> tuple[list, list[np.ndarray], np.ndarray]:
    """The runs' stored samples as chains: their frames (``unconstrained``: ``index`` and
    ``x0 …`` only), each one's positions on the common grid of collected iterations
    (:func:`aligned_positions`) and the unconstrained draws ``x0 … x{d-1}`` there, (chains,
    draws, d). ValueError for a run without stored samples."""
    samples = []
    for run in runs:
        frame = run.samples(unconstrained)
        if frame is None or frame.empty:
            raise ValueError(f"{run.path}: no stored samples")
        samples.append(frame)
    cols = store.x_columns(samples[0].columns)
    positions = aligned_positions([f["index"].to_numpy(np.int64) if "index" in f
                                   else np.arange(len(f)) for f in samples])
    x = np.stack([f[cols].to_numpy(float)[p] for f, p in zip(samples, positions)])
    return samples, positions, x


_NAMED = re.compile(r"^(?P<name>[^\[\]]+?)(?:\[(?P<index>\d+(?:,\s*\d+)*)\])?$")
_UNCONSTRAINED = re.compile(r"^x\d+$")


def named_variables(frame) -> dict[str, tuple[tuple[int, ...], list[str]]]:
    """The model's variables among a ``samples.parquet`` frame's columns (every column but
    ``index`` and the unconstrained ``x0 … x{d-1}``: ``tau``, ``theta[3]``, ``L[0,1]``), as
    name -> (shape, its columns in C order). Empty for a target without named variables."""
    found: dict[str, dict[tuple[int, ...], str]] = {}
    for column in frame.columns:
        match = _NAMED.match(str(column))
        if column == "index" or _UNCONSTRAINED.match(str(column)) or match is None:
            continue
        index = tuple(int(i) for i in match["index"].split(",")) if match["index"] else ()
        found.setdefault(match["name"], {})[index] = column
    out = {}
    for name, cells in found.items():
        ranks = {len(i) for i in cells}
        if len(ranks) != 1:
            continue  # both "a" and "a[0]": not one array
        shape = tuple(max(i[k] for i in cells) + 1 for k in range(ranks.pop()))
        every = list(np.ndindex(*shape)) if shape else [()]
        if len(every) != len(cells) or any(i not in cells for i in every):
            continue
        out[name] = (shape, [cells[i] for i in every])
    return out


def aligned_positions(indices) -> list[np.ndarray]:
    """Per chain, the positions of the draws it keeps on a common grid of collected
    iterations (``indices``: each chain's increasing index per stored draw): the grid is the
    indices, inside the common range [max first, min last], of the chain with the fewest draws
    there; each chain keeps its last draw at or before each grid point. ValueError when the
    ranges do not overlap."""
    indices = [np.asarray(ix, np.int64) for ix in indices]
    if any(ix.size == 0 for ix in indices):
        return [np.zeros(0, np.int64) for _ in indices]
    lo, hi = max(int(ix[0]) for ix in indices), min(int(ix[-1]) for ix in indices)
    if lo > hi:
        raise ValueError(f"the chains' stored draws share no collected iterations ({lo} > {hi})")
    inside = [np.flatnonzero((ix >= lo) & (ix <= hi)) for ix in indices]
    ref = min(range(len(indices)), key=lambda c: inside[c].size)
    grid = indices[ref][inside[ref]]
    return [np.searchsorted(ix, grid, side="right") - 1 for ix in indices]


def seed_diagnostics(runs) -> dict[str, float]:
    """R-hat and MCSE across the seeds of one configuration, as arviz-stats computes them.

    Returns ``rhat`` (the largest rank-normalised split R-hat over coordinates) and ``mcse``
    (the largest Monte Carlo standard error of the mean over coordinates), NaN when fewer than
    two runs have stored samples. The seeds are aligned on collected iterations
    (:func:`aligned_positions`). The estimators are arviz-stats' ``rhat(method="rank")`` and
    ``mcse(method="mean")`` vectorised over coordinates (:func:`ckam_bench.metrics.ess.rank_rhat`,
    :func:`~ckam_bench.metrics.ess.mcse_mean`; the tests hold them equal to arviz-stats): a
    whole suite's report computes them for every configuration of every posterior, which
    through arviz-stats' per-coordinate xarray calls took half the report's CPU.
    """
    from ckam_bench.metrics.ess import mcse_mean, rank_rhat

    runs = [r for r in runs if r.has_samples]
    if len(runs) < 2:
        return {"rhat": float("nan"), "mcse": float("nan")}
    x = aligned_draws(_one_configuration(list(runs)).runs, unconstrained=True)[2]
    with warnings.catch_warnings():  # every coordinate NaN: NaN, as before
        warnings.simplefilter("ignore", RuntimeWarning)
        return {"rhat": float(np.nanmax(rank_rhat(x))), "mcse": float(np.nanmax(mcse_mean(x)))}

