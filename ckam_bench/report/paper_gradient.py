"""Titsias & Dellaportas (2019) tables and figures from stored runs (``experiment=gad_*``).

* :func:`paper_table` — Tables 1–7 in the paper's form, one per target: per method (gadMALAf,
  gadMALAe, gadRWM, AM, RWM, MALA, HMC-k, NUTS) the mean over repeats of the sampler time
  (burn-in plus sampling, the paper's "overall running time"), the acceptance rate of the
  sampling phase, the ESS (min, median, max over coordinates, of the collected draws) and the
  min ESS per second with its standard deviation (ddof 1) over repeats. Of the HMC-k runs only
  the best k (highest mean min ESS/s) is shown, as the paper does, except for MNIST (Table 7
  lists every k). Values are each run's last checkpoint. Only complete runs enter the means;
  a run still going or stopped early is listed below them as "(partial)" with its iterations
  so far (e.g. an MNIST run that did not fit on the machine).
* :func:`figure_log_target` — the log density of the chain over iterations, one line per
  method (first seed), from the diagnostics column ``logp`` (paper Figs 3–6).
* :func:`figure_neal_scales` — the learned diag(L) of the gad samplers on neal100 against the
  true scales s_i = 0.01 i (paper Fig. 2, second row), from the trace column ``L_diag``.

:func:`tables` and :func:`figures` are the sources ``ckam-bench-figures`` registers
(:data:`ckam_bench.report.cli.TABLE_SOURCES`, :data:`~ckam_bench.report.cli.FIGURE_SOURCES`).
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from ckam_bench.report import sections
from ckam_bench.report.aggregate import Results, StoredRun
from ckam_bench.report.drawing import Drawn, run_colour
from ckam_bench.report.tables import Table

TABLE_NUMBERS = {"neal100": 1, "logistic_caravan": 1, "logistic_australian": 2, "logistic_ripley": 3,
                 "logistic_pima": 4, "logistic_heart": 5, "logistic_german": 6, "logistic_mnist56": 7}
FIGURE_NUMBERS = {"neal100": 3, "logistic_german": 4, "logistic_caravan": 5, "logistic_mnist56": 6}
LABELS = {"gadmala_fast": "gadMALAf", "gadmala_exact": "gadMALAe", "gadrwm": "gadRWM", "am": "AM",
          "rw": "RWM", "mala": "MALA", "hmc": "HMC", "nuts": "NUTS",
          # NUTS with nutpie's warm-up (docs/samplers.md): rows after Stan-adapted NUTS
          "nuts_fisher": "NUTS-Fisher", "nuts_lowrank": "NUTS-lowrank"}
ORDER = ["gadMALAf", "gadMALAe", "gadRWM", "AM", "RWM", "MALA", "HMC", "NUTS"]
SECTION = sections.PAPERS["gradient"].section
GAD_SAMPLERS = ("gadmala_fast", "gadmala_exact", "gadrwm", "mala", "hmc", "nuts")


def method(run: StoredRun) -> str:
    """The paper's name of a run's method (HMC-k with k from the stored sampler info/config)."""
    label = LABELS.get(run.sampler, run.sampler)
    if run.sampler == "hmc":
        k = (run.status.get("sampler_info") or {}).get("n_leapfrog")
        if k is None and run.config:
            k = (run.config.get("sampler") or {}).get("n_leapfrog")
        label = f"HMC-{k}"
    return label


def _order_key(label: str) -> tuple:
    base = label.split("-")[0]
    rank = ORDER.index(base) if base in ORDER else len(ORDER)
    k = int(label.split("-")[1]) if "-" in label and label.split("-")[1].isdigit() else 0
    return rank, k, label


def _is_gad_run(run: StoredRun) -> bool:
    return run.sampler in GAD_SAMPLERS or str(run.experiment or "").startswith("gad_")


def summary(results: Results, target: str) -> pd.DataFrame:
    """One row per run: method, seed, time, acceptance, ESS min/med/max, min ESS/s."""
    rows = []
    for run in results.select(target=target):
        if not _is_gad_run(run) or run.trace.empty:
            continue
        last = run.trace.iloc[-1]
        accept = last.get("acceptance_sampling")
        if accept is None or not np.isfinite(accept):
            accept = last.get("acceptance", np.nan)
        time = float(last["sampler_seconds"])
        ess_min = float(last.get("ess_min", np.nan))
        rows.append({"method": method(run), "seed": run.seed, "time": time, "accept": float(accept),
                     "ess_min": ess_min, "ess_median": float(last.get("ess_median", np.nan)),
                     "ess_max": float(last.get("ess_max", np.nan)),
                     "min_ess_per_s": ess_min / time if time > 0 else np.nan,
                     "iterations": int(last["iterations"]), "n_grad": float(last.get("n_grad", np.nan)),
                     "complete": run.state == "complete",
                     "planned": int(((run.status.get("budget") or {}).get("max_iterations")) or 0)})
    return pd.DataFrame(rows)


def _fmt(value: float, digits: int = 1) -> str:
    return "–" if not np.isfinite(value) else f"{value:.{digits}f}"


def paper_table(results: Results, target: str) -> Table | None:
    """The paper's table for ``target`` (None when no gad run is stored for it)."""
    every = summary(results, target)
    if every.empty:
        return None
    frame = every[every.complete]
    grouped = frame.groupby("method")
    stats = grouped.agg(time=("time", "mean"), accept=("accept", "mean"), ess_min=("ess_min", "mean"),
                        ess_median=("ess_median", "mean"), ess_max=("ess_max", "mean"),
                        score=("min_ess_per_s", "mean"), n=("seed", "size"))
    stats["score_sd"] = grouped["min_ess_per_s"].std(ddof=1)
    methods = sorted(stats.index, key=_order_key)
    hmc = [m for m in methods if m.startswith("HMC")]
    if len(hmc) > 1 and target != "logistic_mnist56":
        best = max(hmc, key=lambda m: stats.loc[m, "score"])
        methods = [m for m in methods if not m.startswith("HMC") or m == best]
    number = TABLE_NUMBERS.get(target)
    title = (f"Table {number} (Titsias & Dellaportas 2019)" if number else "Gradient-based adaptive MCMC") + \
        f": {target}, mean over repeats (min ESS/s ± 1 s.d.)"
    rows = []
    for m in methods:
        s = stats.loc[m]
        digits = 3 if s.score < 1 else 2
        rows.append([m, _fmt(s.time, 2 if s.time < 10 else 1), f"{s.accept:.3f}",
                     f"({_fmt(s.ess_min)}, {_fmt(s.ess_median)}, {_fmt(s.ess_max)})",
                     f"{_fmt(s.score, digits)} ({_fmt(s.score_sd, digits)})", str(int(s.n))])
    partial = every[~every.complete]
    for _, r in partial.sort_values("method", key=lambda c: c.map(_order_key)).iterrows():
        planned = f" / {r.planned:,}" if r.planned else ""
        rows.append([f"{r.method} (partial, seed {r.seed}: {r.iterations:,}{planned} it.)",
                     _fmt(r.time, 1), f"{r.accept:.3f}", "–", "–", "0"])
    header = ["Method", "Time(s)", "Accept Rate", "ESS (Min, Med, Max)", "Min ESS/s (1 st.d.)", "repeats"]
    stem = f"gad_table{number}_{target}" if number else f"gad_table_{target}"
    return Table(title=title, stem=stem, header=header, latex_header=header, rows=rows)


def figure_log_target(results: Results, target: str) -> Drawn | None:
    """log π of the chain over iterations, one line per method (its lowest seed)."""
    import matplotlib.pyplot as plt

    first: dict[str, StoredRun] = {}
    for run in sorted(results.select(target=target), key=lambda r: r.seed):
        if _is_gad_run(run) and run.has_diagnostics:
            first.setdefault(method(run), run)
    curves = {}
    for label, run in first.items():
        diag = run.diagnostics()
        if diag is not None and "logp" in diag and np.isfinite(diag["logp"]).any():
            curves[label] = diag
    if not curves:
        return None
    labels = sorted(curves, key=_order_key)
    ncols = min(3, len(labels))
    nrows = -(-len(labels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.4 * nrows), squeeze=False, sharex=True)
    for ax, label in zip(axes.flat, labels):  # one panel per method, as in the paper
        diag = curves[label]
        ax.plot(diag["iteration"], diag["logp"], lw=0.5, color=run_colour(results, first[label]))
        ax.set_title(label, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.locator_params(axis="x", nbins=4)
    for ax in list(axes.flat)[len(labels):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("iteration", fontsize=8)
    number = FIGURE_NUMBERS.get(target)
    name = f"Fig. {number}" if number else "log-target trace"
    fig.suptitle(f"{target}: log target over iterations ({name} of Titsias & Dellaportas)", fontsize=9)
    fig.tight_layout()
    caption = (f"log π of the chain over iterations (burn-in included) on {target}, one run per method "
               f"(lowest seed); paper {name}.")
    return Drawn(f"gad_logp_{target}", fig, caption, SECTION, f"{target}: log target ({name})")


def figure_neal_scales(results: Results) -> Drawn | None:
    """Learned diag(L) of the gad samplers on neal100 (mean over seeds) vs the true s_i."""
    import matplotlib.pyplot as plt

    learned: dict[str, list[np.ndarray]] = {}
    shown: dict[str, StoredRun] = {}  # a run per method: its colour
    for run in results.select(target="neal100"):
        if "L_diag" in run.trace and run.sampler.startswith("gad"):
            value = run.trace["L_diag"].iloc[-1]
            if value is not None:
                learned.setdefault(method(run), []).append(np.asarray(value, dtype=float))
                shown.setdefault(method(run), run)
    if not learned:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    truth = 0.01 * np.arange(1, 101)
    ax.plot(np.arange(1, 101), truth, "k--", lw=1, label="true s_i")
    for label in sorted(learned, key=_order_key):
        ax.plot(np.arange(1, 101), np.mean(learned[label], axis=0), lw=1, label=f"{label} ({len(learned[label])} runs)",
                color=run_colour(results, shown[label]))
    ax.set_xlabel("coordinate i")
    ax.set_ylabel("learned L_ii")
    ax.legend(fontsize=7)
    ax.set_title("neal100: learned diag(L) (Fig. 2, second row, of Titsias & Dellaportas)", fontsize=9)
    caption = "Learned diagonal of L at the end of the run (mean over seeds) against the true scales s_i."
    return Drawn("gad_neal_diagL", fig, caption, SECTION, "neal100: learned diag(L) (Fig. 2)")


def _targets(results: Results) -> list[str]:
    """The targets with one of the paper's runs (:data:`ckam_bench.report.sections.PAPERS`:
    a gad sampler, or a ``gad_*`` preset): NUTS alone on a user's target is not the paper."""
    used = sections.PAPERS["gradient"].targets_used(results)
    return sorted(used, key=lambda t: (TABLE_NUMBERS.get(t, 99), t))


def tables(results: Results) -> list[Table]:
    """Tables 1–7: one per target the stored gad runs cover."""
    return [t for t in (paper_table(results, target) for target in _targets(results)) if t is not None]


def figures(results: Results, settings=None) -> list[Drawn]:
    """The log-target traces (Figs 3–6) and the learned diag(L) on neal100 (Fig. 2)."""
    drawn = [figure_log_target(results, target) for target in _targets(results)]
    drawn.append(figure_neal_scales(results))
    return [d for d in drawn if d is not None]
