"""Figures, tables and a report rendered from stored runs only (``ckam-bench-figures``).

* :mod:`~ckam_bench.report.aggregate` — load run folders back (:func:`load_results`) and
  aggregate traces over seeds on a common grid (``aggregate.common_grid``,
  ``aggregate.aggregate``, ``aggregate.final_rows``);
  and group runs by full configuration, each seed once (``Results.groups``, ``group_runs``);
* :mod:`~ckam_bench.report.drawing` — what every figure shares: settings, the report's
  palette (one colour per configuration label), drawn and rendered figures (titles wrapped to
  fit), :class:`NotSupported`, curves over seeds;
* :mod:`~ckam_bench.report.sections` — the report's sections in the order a reader needs them
  and the papers it knows (a paper's sections only when its runs are there);
* :mod:`~ckam_bench.report.words` — trace columns in words for titles, labels and captions,
  and which are accuracy (shown against cost first) and which diagnostics;
* :mod:`~ckam_bench.report.paper_ckam` — the cKAM paper's Figures 1–14, one function each, and
  :func:`render` to save one; ``paper_gradient``, ``paper_divergence``, ``paper_kamh``: the
  other papers' figures and tables (one module per paper, named after it);
* :mod:`~ckam_bench.report.validity` — the stationarity checks stored under a results folder
  (the report's Validity section) and the KL floor;
* :mod:`~ckam_bench.report.generic` — figures for any target (accuracy against cost, the
  diagnostics against iterations, marginals, pairwise projections, per-iteration diagnostics);
* :mod:`~ckam_bench.report.tables` — Tables 1–3 (hyperparameters as run) and results tables,
  as markdown and LaTeX (:func:`all_tables`);
* :mod:`~ckam_bench.report.ranking` — the ranking per target and the cost to accuracy;
* :mod:`~ckam_bench.report.html` — the self-contained ``report.html``;
* :mod:`~ckam_bench.report.cli` — the ``ckam-bench-figures`` command (``build_report``);
* :mod:`~ckam_bench.report.callback` — the end-of-sweep report (a Hydra callback).

The submodule names are not shadowed: ``ckam_bench.report.aggregate`` is the module, its
function is ``ckam_bench.report.aggregate.aggregate``.
"""

import importlib

# The re-exports load on first use (PEP 562): the end-of-sweep callback lives in this package,
# so every ckam-bench command imports it, and the figures' modules (matplotlib, scipy.stats)
# would add ~1 s to each start.
_EXPORTS = {
    "aggregate": ("Group", "Results", "Skipped", "StoredRun", "common_grid", "final_rows",
                  "group_runs", "load_results", "step_values"),
    "drawing": ("NotSupported", "Rendered", "Settings"),
    "paper_ckam": ("FIGURES", "render"),
    "tables": ("Table", "all_tables", "hyperparameter_table", "results_table"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
