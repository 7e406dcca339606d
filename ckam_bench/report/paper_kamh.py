"""Sejdinovic et al. (2014, KAMH) figures and table from stored runs (``experiment=kamh_*``).

* :func:`figure5` — per target (banana moderate, banana strong, flower), per method (SM = rw,
  AM-FS = am, AM-LS = gam, KAMH-LS = kamh, and any other sampler run on the target): the
  acceptance rate after burn-in, ‖Ê[X]‖/10 and the deviation |ĉ_q − q| × 10 of each quantile
  region q = 0.1 … 0.9, the median over chains with 80 % intervals (10 % and 90 % quantiles over
  chains) as error bars; each run's last checkpoint.
* :func:`figure4` — gp_glass: ‖Ê[θ] − E_ref[θ]‖ and MMD² to the certified reference sample
  against the number of collected samples, median over chains with an 80 % band: from the
  trace when the run measured them, else from the run's stored samples against the reference
  found at render time (:func:`glass_curve`; so runs made before the reference existed render).
* :func:`figure2` — per banana target with a stored KAM run (kamh, else kam): 95 % contours of
  KAM's proposal N(y, γ²I + ν²A_yA_yᵀ) at five points y, projected on (x₀, x₁), over the
  density; the subsample z is M (the run's ``subsample_size``) evenly spaced rows of the run's
  stored sample, the kernel the run's (fitted on z: the median heuristic), ν and γ the run's
  last recorded values (:func:`ckam_bench.samplers.kameleon.proposal_covariance`, the
  sampler's own covariance).
* :func:`summary_table` — the numbers of Figure 5 (medians over chains); :func:`glass_table` —
  the Glass row: final mean distance and MMD² to the reference (medians, 10–90 % over chains).

:func:`figures` and :func:`tables` are the sources registered in ``ckam-bench-figures``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ckam_bench.report import sections
from ckam_bench.report.aggregate import Results, StoredRun
from ckam_bench.report.drawing import Drawn, run_colour
from ckam_bench.report.tables import Table

LABELS = {"rw": "SM", "am": "AM-FS", "gam": "AM-LS", "kamh": "KAMH-LS"}
ORDER = ["SM", "AM-FS", "AM-LS", "KAMH-LS"]
FIG5_TARGETS = ("banana_moderate", "banana_strong", "flower")
SECTION = sections.PAPERS["kamh"].section
LEVELS = np.arange(1, 10) / 10.0


def method(run: StoredRun) -> str:
    return LABELS.get(run.sampler, run.sampler)


def _runs(results: Results, target: str) -> dict[str, list[StoredRun]]:
    groups: dict[str, list[StoredRun]] = {}
    for run in results.runs:
        if run.target == target and not run.trace.empty and "quantile_deviation" in run.trace:
            groups.setdefault(method(run), []).append(run)
    return dict(sorted(groups.items(), key=lambda kv: (ORDER.index(kv[0]) if kv[0] in ORDER else 99, kv[0])))


def _last(run: StoredRun) -> dict:
    row = run.trace.iloc[-1]
    accept = row.get("acceptance_sampling", np.nan)
    if accept is None or not np.isfinite(accept):
        accept = row.get("acceptance", np.nan)
    errors = np.asarray(row.get("quantile_coverage_error", np.full(LEVELS.size, np.nan)), float)
    return {"accept": float(accept), "mean_norm": float(row.get("mean_norm", np.nan)), "q": errors}


def _stats(values) -> tuple[float, float, float]:
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return np.nan, np.nan, np.nan
    return tuple(float(v) for v in np.quantile(values, [0.5, 0.1, 0.9]))


def figure5(results: Results, target: str) -> Drawn | None:
    import matplotlib.pyplot as plt

    groups = _runs(results, target)
    if not groups:
        return None
    names = ["Accept", "‖E[X]‖/10", *[f"{q:.1f}" for q in LEVELS]]
    fig, ax = plt.subplots(figsize=(10, 3.2))
    width = 0.8 / len(groups)
    for i, (label, runs) in enumerate(groups.items()):
        rows = [_last(r) for r in runs]
        columns = [[r["accept"] for r in rows], [r["mean_norm"] / 10 for r in rows],
                   *[[10 * r["q"][j] for r in rows] for j in range(LEVELS.size)]]
        med, lo, hi = np.array([_stats(c) for c in columns]).T
        x = np.arange(len(names)) + (i - (len(groups) - 1) / 2) * width
        ax.bar(x, med, width, label=f"{label} ({len(runs)})", color=run_colour(results, runs[0]))
        ax.errorbar(x, med, yerr=[med - lo, hi - med], fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_title(target)
    ax.legend(fontsize=7)
    fig.tight_layout()
    caption = ("Acceptance after burn-in, ‖Ê[X]‖/10, and |empirical − nominal| coverage ×10 of the "
               "0.1…0.9 quantile regions (0.1 = 1 % deviation); median over chains, bars 10–90 % over "
               "chains (number of chains in the legend).")
    return Drawn(f"kamh_fig5_{target}", fig, caption, SECTION, f"{target}: Figure 5")


GLASS_COLUMNS = ("mean_error", "mmd2")


def glass_curve(run: StoredRun, reference, points: int = 12) -> pd.DataFrame | None:
    """A run's Figure 4 curve computed afterwards from its stored (evenly thinned) samples: at
    ``points`` log-spaced k, ‖mean of the first k stored states − reference mean‖ and the unbiased
    MMD² (polynomial kernel (1 + ⟨a, b⟩)³) of those k states against ≤ 1000 evenly spaced reference
    rows; ``n_collected`` is the collected index of the k-th stored state + 1."""
    from ckam_bench.metrics.mmd import evenly_spaced, mmd2_unbiased

    samples = run.samples()
    if samples is None or len(samples) < 2:
        return None
    X = samples[[c for c in samples.columns if c.startswith("x")]].to_numpy(float)
    index = samples["index"].to_numpy() if "index" in samples else np.arange(len(X))
    Y = evenly_spaced(reference.samples, 1000)
    ks = np.unique(np.geomspace(2, len(X), points).round().astype(int))
    return pd.DataFrame({"n_collected": index[ks - 1] + 1,
                         "mean_error": [float(np.linalg.norm(X[:k].mean(0) - reference.mean)) for k in ks],
                         "mmd2": [mmd2_unbiased(X[:k], Y, "polynomial") for k in ks]})


def _glass_runs(results: Results, target: str) -> dict[str, list[pd.DataFrame]]:
    """Per method, each run's (n_collected, mean_error, mmd2) curve: the trace's checkpoints when the
    run measured them against a reference, else computed from its stored samples against the
    reference found now (:func:`ckam_bench.checks.reference.load_reference`)."""
    from ckam_bench.reference_lookup import load_reference

    groups: dict[str, list[pd.DataFrame]] = {}
    reference = False  # looked up once, on the first run that needs it
    for run in results.runs:
        if run.target != target:
            continue
        if not run.trace.empty and set(GLASS_COLUMNS) <= set(run.trace):
            curve = run.trace[["n_collected", *GLASS_COLUMNS]].dropna()
        else:
            if reference is False:
                reference = load_reference(run.build_target())
            curve = None if reference is None else glass_curve(run, reference)
        if curve is not None and len(curve):
            groups.setdefault(method(run), []).append(curve.assign(run=run.run_id, sampler=run.sampler,
                                                                   colour=run_colour(results, run)))
    return dict(sorted(groups.items(), key=lambda kv: (ORDER.index(kv[0]) if kv[0] in ORDER else 99, kv[0])))


def figure4(results: Results, target: str = "gp_glass") -> Drawn | None:
    import matplotlib.pyplot as plt

    groups = _glass_runs(results, target)
    if not groups:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for label, curves in groups.items():
        frame = pd.concat(curves)
        for ax, column in zip(axes, GLASS_COLUMNS):
            grid = np.unique(frame["n_collected"])
            table = frame.pivot_table(index="n_collected", columns="run", values=column).reindex(grid).ffill()
            lo, med, hi = (table.quantile(q, axis=1) for q in (0.1, 0.5, 0.9))
            c = curves[0]["colour"].iloc[0]
            ax.plot(grid, med, color=c, label=f"{label} ({len(curves)})")
            ax.fill_between(grid, lo, hi, color=c, alpha=0.2)
            ax.set_xlabel("collected samples")
            ax.set_xscale("log")
            ax.set_ylabel({"mean_error": "‖Ê[θ] − E_ref[θ]‖", "mmd2": "MMD² to reference"}[column])
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    caption = ("Glass (θ_d = log ℓ_d²): distance of the running mean to the reference mean and MMD² "
               "(polynomial kernel (1 + ⟨θ, θ′⟩)³) to the certified reference sample against the number "
               "of collected samples; median over chains (number in the legend), band 10–90 % over chains.")
    return Drawn(f"kamh_fig4_{target}", fig, caption, SECTION, f"{target}: Figure 4")


def glass_table(results: Results, target: str = "gp_glass") -> Table | None:
    """The Glass row of the KAMH table: per method, the last point of each chain's curve:
    ‖Ê[θ] − E_ref[θ]‖ and MMD² to the reference, median and 10–90 % over chains."""
    rows = []
    for label, curves in _glass_runs(results, target).items():
        last = [c.iloc[-1] for c in curves]
        cells = {"method": label, "chains": str(len(curves)),
                 "samples": f"{np.median([row['n_collected'] for row in last]):.0f}"}
        for key, column in (("‖mean − ref‖", "mean_error"), ("MMD²", "mmd2")):
            med, lo, hi = _stats([row[column] for row in last])
            cells[key] = f"{med:.3g} [{lo:.3g}, {hi:.3g}]"
        rows.append(cells)
    if not rows:
        return None
    header = list(rows[0])
    return Table("KAMH paper, Glass (medians over chains, [10 %, 90 %])", "kamh_glass_numbers", header, header,
                 [[r[h] for h in header] for r in rows])


FIG2_TARGETS = ("banana_moderate", "banana_strong", "banana")
FIG2_SAMPLERS = ("kamh", "kam")
FIG2_QUANTILES = (0.03, 0.2, 0.5, 0.8, 0.97)  # points y: states at these quantiles of x₀


def contour(y, C, level: float = 0.95, n: int = 100) -> np.ndarray:
    """(n, 2) points of the ``level`` contour of N(y[:2], C[:2, :2]), the proposal's marginal on
    (x₀, x₁): {p : (p − y)ᵀ C⁻¹ (p − y) = F⁻¹_χ²₂(level)}."""
    from scipy.stats import chi2

    angle = np.linspace(0.0, 2.0 * np.pi, n)
    circle = np.stack([np.cos(angle), np.sin(angle)])
    L = np.linalg.cholesky(np.asarray(C, float)[:2, :2])
    return (np.asarray(y, float)[:2, None] + np.sqrt(chi2.ppf(level, 2)) * (L @ circle)).T


def proposal_setup(run: StoredRun):
    """(kernel, z, ν, γ, target) of a stored KAM run: z = M evenly spaced rows of its stored
    sample (M = the run's subsample size), the run's kernel, its last recorded ν and γ."""
    from hydra.utils import instantiate

    samples, diag = run.samples(), run.diagnostics()
    if samples is None or diag is None or diag.empty or not run.config or "kernel" not in run.config:
        return None
    X = samples[[c for c in samples.columns if c.startswith("x")]].to_numpy(float)
    m = int((run.config.get("sampler") or {}).get("subsample_size", 1000))
    if len(X) < 2:
        return None
    Z = X[np.unique(np.linspace(0, len(X) - 1, min(m, len(X))).round().astype(int))]
    kernel = instantiate(run.config["kernel"])
    last = diag.iloc[-1]
    return kernel, Z, float(last["step_size"]), float(last["noise"]), run.build_target()


def figure2(results: Results, target: str) -> Drawn | None:
    import matplotlib.pyplot as plt

    from ckam_bench.samplers.kameleon import proposal_covariance

    runs = [r for s in FIG2_SAMPLERS for r in sorted(results.select(target=target, sampler=s), key=lambda r: r.seed)]
    found = next(((r, p) for r in runs if (p := proposal_setup(r)) is not None), None)
    if found is None:
        return None
    run, (kernel, Z, nu, gamma, tgt) = found
    points = [Z[i] for i in np.argsort(Z[:, 0])[np.round(np.asarray(FIG2_QUANTILES) * (len(Z) - 1)).astype(int)]]
    rings = [contour(y, proposal_covariance(kernel, y, Z, nu, gamma)) for y in points]
    # the plot: the subsample and the contours, 10 % margins, inside the target's box
    extent = np.vstack([Z[:, :2], *rings])
    low, high = extent.min(0), extent.max(0)
    low, high = low - 0.1 * (high - low), high + 0.1 * (high - low)
    if tgt.box is not None:
        low, high = np.maximum(low, tgt.box[:2, 0]), np.minimum(high, tgt.box[:2, 1])
    (x0, y0), (x1, y1) = low, high
    gx, gy = np.meshgrid(np.linspace(x0, x1, 240), np.linspace(y0, y1, 240))
    grid = np.zeros((gx.size, tgt.dim))
    grid[:, 0], grid[:, 1] = gx.ravel(), gy.ravel()
    dens = np.exp(tgt.log_density_batch(grid)).reshape(gx.shape)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.contourf(gx, gy, dens, levels=12, cmap="Greys")
    ax.scatter(Z[:, 0], Z[:, 1], s=2, color="tab:blue", alpha=0.3, label=f"subsample z (M = {len(Z)})")
    for y, ring in zip(points, rings):
        ax.plot(ring[:, 0], ring[:, 1], color="tab:red", lw=1.2)
        ax.plot(y[0], y[1], "o", color="tab:red", ms=3)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("x₀")
    ax.set_ylabel("x₁")
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(f"{target}: KAM proposals (95 % contours)")
    fig.tight_layout()
    caption = (f"95 % contours of KAM's proposal N(y, γ²I + ν²A_yA_yᵀ) at five points y (projected on "
               f"(x₀, x₁)), over the density slice at x₂ = … = 0; z: {len(Z)} evenly spaced states of the "
               f"stored sample of {run.sampler} seed {run.seed}, kernel {kernel!r} fitted on z, ν = {nu:.3g}, "
               f"γ = {gamma:.3g} (the run's last values).")
    return Drawn(f"kamh_fig2_{target}", fig, caption, SECTION, f"{target}: Figure 2")


def summary_table(results: Results) -> Table | None:
    rows = []
    for target in FIG5_TARGETS:
        for label, runs in _runs(results, target).items():
            last = [_last(r) for r in runs]
            rows.append({"target": target, "method": label, "chains": len(runs),
                         "accept": f"{_stats([r['accept'] for r in last])[0]:.3f}",
                         "‖mean‖": f"{_stats([r['mean_norm'] for r in last])[0]:.2f}",
                         "quantile dev.": f"{_stats([np.nanmean(r['q']) for r in last])[0]:.4f}"})
    if not rows:
        return None
    header = list(rows[0])
    return Table("KAMH paper, Figure 5 numbers (medians over chains)", "kamh_figure5_numbers", header, header,
                 [[str(r[h]) for h in header] for r in rows])


def figures(results: Results, settings=None) -> list[Drawn]:
    drawn = ([figure2(results, t) for t in FIG2_TARGETS] + [figure5(results, t) for t in FIG5_TARGETS]
             + [figure4(results)])
    return [d for d in drawn if d is not None]


def tables(results: Results) -> list[Table]:
    return [t for t in (summary_table(results), glass_table(results)) if t is not None]
