"""Tables from stored runs, as markdown and LaTeX.

* **Hyperparameters as run** (the cKAM paper's Tables 1–3 for bimodal, gmm2d, gmm32; an
  unnumbered table for any other target): one row per configuration group (a sampler run with
  several kernels, budgets, presets or settings gets a row for each, every seed once, see
  :func:`row_groups`; the table's notes say what was kept apart or left out), read from each run's stored
  config. Columns: (initial) step size ν (``step_size``); RM step size η, the learning rate
  of AM/RBAM (``rate``: a constant value, or the schedule it follows); RM rate ε and optimal
  acceptance α* (``adaptation.epsilon`` / ``adaptation.target_accept``, η_t = (1+t)^-ε);
  T/M and β (``cycle.cycle_length`` / ``cycle.beta``); subsample size (``subsample_size``);
  kernel (``kernel``: name and parameters); noise γ (``noise``). N/A where the sampler has no
  such hyperparameter; "varies (…)" where the runs of a row disagree.
* **Results** per target: final symmetric KL, min ESS, min ESS per sampler second, acceptance,
  iterations per sampler second and sampler seconds, each as mean ± sd (ddof = 1) over the
  runs (seeds) of a row, with the number of runs. Values are those of each run's last
  checkpoint (:func:`ckam_bench.report.aggregate.final_rows`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ckam_bench.report import sections
from ckam_bench.report.aggregate import Results, StoredRun, final_rows, grouping_notes

PAPER_TABLES = {"bimodal": 1, "gmm2d": 2, "gmm32": 3}
NA = "N/A"

HYPER_COLUMNS = (
    # (key, markdown header, LaTeX header)
    ("step_size", "(initial) step size ν", r"(initial) step size $\nu$"),
    ("rate", "RM step size η", r"RM step size $\eta$"),
    ("epsilon", "RM rate ε", r"RM rate $\epsilon$"),
    ("cycle_length", "T/M", r"$T/M$"),
    ("beta", "β", r"$\beta$"),
    ("target_accept", "α*", r"$\alpha^*$"),
    ("subsample_size", "subsample size", "subsample size"),
    ("kernel", "kernel", "kernel"),
    ("noise", "noise γ", r"noise $\gamma$"),
)
RESULT_COLUMNS = (
    # (trace column, markdown header, LaTeX header)
    ("kl", "final KL", "final KL"),
    ("ess_min", "ESS min", "ESS min"),
    ("ess_per_second", "ESS/s", "ESS/s"),
    ("acceptance", "acceptance", "acceptance"),
    ("iters_per_second", "it/s", "it/s"),
    ("sampler_seconds", "sampler s", "sampler s"),
)
KERNEL_PARAMS = {"lengthscale": "l", "smoothness": "s"}


@dataclass
class Table:
    """A titled table: a header (markdown and LaTeX versions) and rows of strings."""

    title: str
    stem: str
    header: list[str]
    latex_header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    sort_keys: list[list[float | None]] | None = None
    section: str = ""  # the report section it is shown in ("": Tables)

    def markdown(self) -> str:
        lines = [f"**{self.title}**", "",
                 "| " + " | ".join(self.header) + " |",
                 "|" + "|".join("---" for _ in self.header) + "|"]
        lines += ["| " + " | ".join(cell.replace("|", r"\|") for cell in row) + " |"
                  for row in self.rows]
        lines += [""] + [f"Note: {note}." for note in self.notes] if self.notes else []
        return "\n".join(lines) + "\n"

    def latex(self) -> str:
        spec = "l" * len(self.header)
        lines = [r"\begin{table}[ht]", r"\centering", rf"\caption{{{latex_escape(self.title)}}}",
                 rf"\begin{{tabular}}{{{spec}}}", r"\hline",
                 " & ".join(self.latex_header) + r" \\", r"\hline"]
        lines += [" & ".join(latex_escape(cell) for cell in row) + r" \\" for row in self.rows]
        lines += [r"\hline", r"\end{tabular}"]
        lines += [latex_escape(f"Note: {note}.") + r"\\" for note in self.notes]
        lines += [r"\end{table}"]
        return "\n".join(lines) + "\n"

    def write(self, out_dir: str | Path) -> list[Path]:
        """Write ``<stem>.md`` and ``<stem>.tex``; returns the two paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        md, tex = out / f"{self.stem}.md", out / f"{self.stem}.tex"
        md.write_text(self.markdown())
        tex.write_text(self.latex())
        return [md, tex]


# ---------------------------------------------------------------------------- formatting
_UNICODE_TEX = {"→": r"$\to$", "±": r"$\pm$", "·": r"$\cdot$", "×": r"$\times$",
                "ν": r"$\nu$", "η": r"$\eta$", "ε": r"$\epsilon$", "β": r"$\beta$",
                "α": r"$\alpha$", "γ": r"$\gamma$", "–": "--"}
_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}"}


def latex_escape(text: str) -> str:
    """Plain table text as LaTeX: specials escaped, ``a^b`` as a superscript, Greek as math."""
    out = []
    for part in re.split(r"(\^[-+]?[0-9.]+)", str(text)):
        if part.startswith("^"):
            out.append(f"$^{{{part[1:]}}}$")
            continue
        out.append("".join(_UNICODE_TEX.get(ch, _TEX_SPECIAL.get(ch, ch)) for ch in part))
    return "".join(out)


def number(value) -> str:
    """A short number: integers as such, others with 4 significant digits; text as is."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, float):
        try:
            value = float(value)
        except (TypeError, ValueError):  # e.g. an interpolation that could not be resolved
            return str(value)
    if math.isfinite(value) and value == round(value) and abs(value) < 1e6:
        return str(int(round(value)))
    return f"{value:.4g}"


def statistic(value: float) -> str:
    """A result value: thousands with separators, others with 3 significant digits."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def mean_sd(values) -> str:
    """'mean ± sd' over the finite values (sd with ddof = 1); one value alone; N/A for none."""
    v = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return NA
    if v.size == 1:
        return statistic(v[0])
    return f"{statistic(v.mean())} ± {statistic(v.std(ddof=1))}"


def _class_name(node: dict) -> str:
    return str(node.get("_target_", "")).rsplit(".", 1)[-1]


def schedule_text(node) -> str:
    """A schedule node (``ckam_bench.schedules``) or a plain number as short text."""
    if node is None:
        return NA
    if not isinstance(node, dict):
        return number(node) if isinstance(node, (int, float)) else str(node)
    kind = _class_name(node)
    if kind == "Constant":
        return number(node.get("value"))
    if kind in ("PowerDecay", "RobbinsMonro"):
        exponent = node.get("exponent", node.get("epsilon"))
        scale = node.get("scale", 1.0)
        if float(exponent) == 0.0:  # scale · (…)^0: a constant rate (non-diminishing)
            text = number(scale)
        else:
            prefix = "" if float(scale) == 1.0 else f"{number(scale)}·"
            offset = float(node.get("offset") or 0.0)
            base = "1+t" if offset == 0.0 else f"{number(1.0 + offset)}+t"
            text = f"{prefix}({base})^-{number(exponent)}"
        until = node.get("until")
        return text if until is None else f"{text} until t={number(until)}"
    if kind == "NoiseDecay":
        return (f"{number(node['start'])}→{number(node['end'])} (r={number(node['rate'])}, "
                f"T={number(node['horizon'])})")
    if kind == "Window":
        return f"{number(node['value'])} until t={number(node['until'])}"
    params = ", ".join(f"{k}={number(v) if isinstance(v, (int, float)) else v}"
                       for k, v in node.items() if k != "_target_")
    return f"{kind}({params})" if kind else params


def kernel_text(node) -> str:
    """A kernel node as 'name (l=…, s=…)'."""
    if not isinstance(node, dict):
        return NA if node is None else str(node)
    name = _class_name(node).lower() or "kernel"
    params = [f"{KERNEL_PARAMS.get(k, k)}={number(v)}" for k, v in node.items()
              if k not in ("_target_", "median_heuristic") and isinstance(v, (int, float))]
    if node.get("median_heuristic"):
        params.append("median heuristic")
    return f"{name} ({', '.join(params)})" if params else name


def hyperparameters(sampler: dict) -> dict[str, str]:
    """The table's hyperparameter cells for one sampler config node."""
    adaptation = sampler.get("adaptation")
    adaptation = adaptation if isinstance(adaptation, dict) else {}
    cycle = sampler.get("cycle")
    cycle = cycle if isinstance(cycle, dict) else {}
    rate = sampler.get("rate", sampler.get("learning_rate"))

    def num(value):
        return NA if value is None else number(value)

    return {
        "step_size": num(sampler.get("step_size")),
        "rate": NA if rate is None else schedule_text(rate),
        "epsilon": num(adaptation.get("epsilon")),
        "cycle_length": num(cycle.get("cycle_length")),
        "beta": num(cycle.get("beta")),
        "target_accept": num(adaptation.get("target_accept")),
        "subsample_size": num(sampler.get("subsample_size")),
        "kernel": kernel_text(sampler["kernel"]) if "kernel" in sampler else NA,
        "noise": schedule_text(sampler["noise"]) if "noise" in sampler else NA,
    }


def _agree(values: list[str]) -> str:
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return distinct[0]
    shown = " / ".join(distinct[:3]) + (" / …" if len(distinct) > 3 else "")
    return f"varies ({shown})"


# ---------------------------------------------------------------------------- rows
def row_groups(results: Results, target: str) -> list[tuple[str, list[StoredRun]]]:
    """(label, runs) per configuration group on ``target`` (sampler in the paper's order;
    :func:`ckam_bench.report.aggregate.group_runs`): one row per full configuration, each
    seed once, labelled by what tells it apart (``"ckam [matern, 20 s]"``)."""
    return [(g.label, g.runs) for g in results.groups(target)]


def table_notes(results: Results, target: str) -> list[str]:
    """What the tables of ``target`` keep apart or leave out (duplicates, mixed budgets,
    skipped runs)."""
    return grouping_notes(results.groups(target), results.skipped_on(target))


def hyperparameter_table(results: Results, target: str) -> Table:
    """The hyperparameters actually run on ``target`` (cKAM Tables 1–3)."""
    groups = row_groups(results, target)
    rows = []
    for label, runs in groups:
        cells = [hyperparameters((r.config or {}).get("sampler") or {}) for r in runs]
        rows.append([label, *(_agree([c[key] for c in cells]) for key, _, _ in HYPER_COLUMNS),
                     str(len(runs))])
    number_ = PAPER_TABLES.get(target)
    prefix = f"Table {number_}. " if number_ else ""
    stem = f"table{number_}_hyperparameters_{target}" if number_ else f"hyperparameters_{target}"
    return Table(title=f"{prefix}Hyperparameters as run on {target}", stem=stem,
                 header=["sampler", *(h for _, h, _ in HYPER_COLUMNS), "runs"],
                 latex_header=["sampler", *(t for _, _, t in HYPER_COLUMNS), "runs"],
                 rows=rows, notes=table_notes(results, target))


def results_table(results: Results, target: str) -> Table:
    """Final metrics per sampler on ``target``: mean ± sd over seeds, and the seed count. A run
    the runner flagged (stuck, non-finite; ``status.json`` flags) counts with ESS 0, and its
    group's label carries the flag (as in :mod:`ckam_bench.report.ranking`)."""
    rows = []
    for group in results.groups(target):
        last = final_rows(pd.concat([r.trace for r in group.runs], ignore_index=True))
        flagged = last["run_id"].isin([r.run_id for r in group.flagged])
        for col in ("ess_min", "ess_per_second"):
            if col in last.columns:
                last.loc[flagged, col] = 0.0
        cells = [mean_sd(last[col]) if col in last.columns else NA
                 for col, _, _ in RESULT_COLUMNS]
        label = f"{group.label} {group.flag_text()}".rstrip()
        rows.append([label, *cells, str(last["run_id"].nunique())])
    return Table(title=f"Results on {target} (last checkpoint; mean ± sd over seeds)",
                 stem=f"results_{target}",
                 header=["sampler", *(h for _, h, _ in RESULT_COLUMNS), "seeds"],
                 latex_header=["sampler", *(t for _, _, t in RESULT_COLUMNS), "seeds"],
                 rows=rows, notes=table_notes(results, target))


def all_tables(results: Results) -> list[Table]:
    """Hyperparameter tables (paper targets first, in table order) and results tables.

    The hyperparameter table has the cKAM paper's columns (RM rates, cycle, subsample, kernel,
    noise): it is made for a target with a run of one of that paper's samplers or presets
    (:data:`ckam_bench.report.sections.PAPERS`) and shown in the paper's section; a target run
    only with other samplers gets none (its settings are in the run inventory)."""
    targets = sorted(results.targets, key=lambda t: (PAPER_TABLES.get(t, 99), t))
    paper = sections.PAPERS["ckam"]
    used = set(paper.targets_used(results))
    hyper = [replace(hyperparameter_table(results, t), section=paper.section)
             for t in targets if t in used]
    return hyper + [results_table(results, t) for t in targets]
