"""The self-contained HTML report (``OUT_DIR/report.html``).

One file that opens from disk in any browser with no server and no network: every figure is
embedded as a ``data:image/png;base64`` URI, the style sheet and the table-sorting script are
inline (plain JavaScript, no library), nothing is fetched. Sections, in the order a reader
needs them (:mod:`ckam_bench.report.sections`; ``report.md`` follows the same order):

* a header: the runs, and one line per target (its dimension, or a PyMC model's variables by
  name, and its configuration groups);
* the ranking table of each target (:mod:`ckam_bench.report.ranking`; a value's 10–90 %
  range in small print under it) and the posteriordb suite's tables — on the first screen;
* accuracy against cost: b², KL, ESS, … against sampler seconds, density and gradient
  evaluations (:mod:`ckam_bench.report.generic`);
* the posterior per variable of each target, under the model's names, one block per sampler
  (:mod:`ckam_bench.report.posterior`);
* the samples: marginals and pairwise projections;
* one section per paper whose runs are there (its figures, then its tables);
* diagnostics: acceptance, step size, iterations per second, … and the per-iteration traces;
* the other tables (results; a table of a source with no section);
* validity: the stationarity checks stored under the results folder (``ckam-bench-check``
  outputs: a summary naming each failed check, the drift figures, the verdict table and each
  check's own figure), the runs the runner flagged (stuck chain, non-finite proposals or state; ⚠, also
  in the ranking and the inventory's ``flags`` column), the configurations the report's checks
  flag (seeds that disagree, b² off the reference: :func:`ckam_bench.report.ranking.report_flags`),
  and the configuration groups whose
  sampler reports non-diminishing adaptation
  (``status.json`` → ``sampler_info.adaptation``), marked ⚠ wherever they appear;
* the run inventory: one row per loaded run (target, group, sampler, seed, state, budget,
  iterations, sampler seconds, adaptation, config hash, start and update times, package
  version, git commit, compiled or Python loops, host, folder), whether it was used or left
  out as a duplicate seed, and per group the full configuration and the provenance of
  ``status.json`` (package versions, CPU, platform, load) in a collapsible block;
* what was not used: skipped runs and figures that were not rendered, with the reason (a
  paper's figures are not attempted, and so not listed, when none of its runs are there).

Every table with class ``sortable`` sorts on a click on a column header (numbers by value,
using the cell's ``data-sort`` when present, text otherwise; a second click reverses).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
import json
import math
import re
from pathlib import Path

from ckam_bench.report import ranking, sections
from ckam_bench.report.aggregate import FLAG_MARK, Results
from ckam_bench.report.drawing import Rendered

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1250px;
padding:1em 2em;color:#222;line-height:1.4}
h1{margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0 .3em;font-size:.85em}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:' \\25B2'}
table.sortable th[aria-sort=descending]::after{content:' \\25BC'}
figure{margin:1.2em 0;padding:.5em;border:1px solid #eee}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:.85em;color:#444;margin-top:.4em}
.note{font-size:.85em;color:#555;margin:.1em 0}.warn{color:#a40000}
tr.left-out td{color:#888}details{margin:.3em 0}pre{font-size:.8em;white-space:pre-wrap}
nav ul{display:flex;flex-wrap:wrap;gap:.2em 1.2em;list-style:none;padding:0;margin:.4em 0;
font-size:.9em}code{font-size:.9em}.scroll{overflow-x:auto}
td .range{display:block;font-size:.8em;color:#666}
"""

SORT_JS = """
(function () {
  function key(cell) {
    var raw = cell.getAttribute('data-sort');
    var text = raw === null ? cell.textContent.trim() : raw;
    var num = parseFloat(text.replace(/,/g, ''));
    if (text === '\\u221e' || text === 'inf') { num = Infinity; }
    return isNaN(num) ? {n: null, t: text.toLowerCase()} : {n: num, t: text};
  }
  function sortBy(table, index, th) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var asc = th.getAttribute('aria-sort') !== 'ascending';
    rows.sort(function (a, b) {
      var x = key(a.cells[index]), y = key(b.cells[index]);
      var r;
      if (x.n !== null && y.n !== null) { r = x.n - y.n; }
      else if (x.n !== null) { r = -1; } else if (y.n !== null) { r = 1; }
      else { r = x.t < y.t ? -1 : (x.t > y.t ? 1 : 0); }
      if (isNaN(r)) { r = 0; }
      return asc ? r : -r;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) {
      c.removeAttribute('aria-sort');
    });
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.addEventListener('click', function () { sortBy(table, i, th); });
    });
  });
})();
"""


def runs_fingerprint(results: Results) -> str:
    """A short hash of what a report is made from: each loaded run's folder, state, last
    update and iterations, and each skipped folder with its reason. Equal fingerprints mean
    the report would show the same runs (the sweep callback then leaves it as it is)."""
    items = sorted([str(r.path), r.state, str(r.status.get("updated")), r.iterations]
                   for r in results.runs)
    items += sorted([str(s.path), s.reason] for s in results.skipped)
    return hashlib.sha256(json.dumps(items, default=str).encode()).hexdigest()[:16]


def fingerprint_meta(results: Results) -> str:
    return f'<meta name="ckam-bench-runs" content="{runs_fingerprint(results)}">'


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def _anchor(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")


_NUMBER = re.compile(r"^[≤≥]?\s?[-+]?(∞|[\d,]*\.?\d+(e[-+]?\d+)?)$")


def _cell(text) -> str:
    """A table cell; a value with its range (``0.0012 [0.0011, 0.0014]``) gets the range on a
    line of its own in small print, so the medians read as one column."""
    text = str(text)
    value, sep, rest = text.partition(" [")
    if sep and rest.endswith("]") and _NUMBER.match(value):
        return f'{esc(value)} <span class="range">[{esc(rest)}</span>'
    return esc(text)


def table_html(table, table_id: str | None = None) -> str:
    """A :class:`~ckam_bench.report.tables.Table` as a sortable HTML table with its notes."""
    ident = f' id="{esc(table_id)}"' if table_id else ""
    out = [f"<h3>{esc(table.title)}</h3>",
           f'<div class="scroll"><table class="sortable"{ident}><thead><tr>']
    out += [f"<th>{esc(h)}</th>" for h in table.header]
    out.append("</tr></thead><tbody>")
    keys = table.sort_keys or [[None] * len(row) for row in table.rows]
    for row, row_keys in zip(table.rows, keys):
        cells = []
        for cell, key in zip(row, row_keys):
            attr = ""
            if key is not None and not (isinstance(key, float) and math.isnan(key)):
                attr = f' data-sort="{"inf" if math.isinf(key) else repr(float(key))}"'
            cells.append(f"<td{attr}>{_cell(cell)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    out += [f'<p class="note">{esc(note)}.</p>' for note in table.notes]
    return "\n".join(out)


def _figure_html(fig) -> str:
    png = next((p for p in fig.paths if p.suffix == ".png"), None)
    if png is None:
        return ""
    data = base64.b64encode(Path(png).read_bytes()).decode("ascii")
    title = fig.title or png.stem
    others = ", ".join(p.name for p in fig.paths if p.suffix != ".png")
    files = f" Files: {esc(png.name)}{', ' + esc(others) if others else ''}."
    return (f'<figure id="{esc(_anchor(title))}"><img alt="{esc(title)}" '
            f'src="data:image/png;base64,{data}"><figcaption><b>{esc(title)}.</b> '
            f"{esc(fig.caption)}{files}</figcaption></figure>")


def _inventory(results: Results) -> str:
    rows, blocks = [], []
    used = {id(r) for g in results.groups() for r in g.runs}
    for group in results.groups():
        members = [(r, "used") for r in group.runs] + [
            (d, f"left out: seed {d.seed} already counted ({k.path.name})")
            for d, k in group.duplicates]
        for run, use in sorted(members, key=lambda m: (m[0].seed, str(m[0].path))):
            status = run.status
            prov = status.get("provenance") or {}
            versions = prov.get("versions") or status.get("versions") or {}
            commit = prov.get("git_commit")
            source = (f"{commit[:10]}{' (dirty)' if prov.get('git_dirty') else ''}"
                      if commit else "")
            totals = status.get("totals") or {}
            budget = status.get("budget") or {}
            mark = "⚠ non-diminishing" if run.adaptation == "non-diminishing" else run.adaptation
            if (status.get("sampler_info") or {}).get("exact") is False:
                mark += " ⚠ biased by design"
            flags = "; ".join(f"{FLAG_MARK} {k}: {v}" for k, v in {**run.flags, **run.warnings}.items())
            cells = [group.target, group.label, run.sampler, run.seed, run.state,
                     status.get("reason", ""), flags, use,
                     ", ".join(f"{k}={v}" for k, v in budget.items() if v is not None),
                     totals.get("iterations", run.iterations),
                     f"{float(totals.get('sampler_seconds', run.sampler_seconds)):.3g}", mark,
                     str(status.get("config_hash", ""))[:12], status.get("started", ""),
                     status.get("updated", ""),
                     versions.get("ckam-bench") or versions.get("ckam_bench") or "", source,
                     prov.get("loops", ""), prov.get("hostname", ""), run.path]
            cls = ' class="left-out"' if id(run) not in used else ""
            warn = run.adaptation == "non-diminishing" or run.flags or run.warnings
            cls = ' class="warn"' if warn and not cls else cls
            rows.append(f"<tr{cls}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
        first = group.runs[0]
        provenance = {k: v for k, v in first.status.items()
                      if k in ("provenance", "versions", "sampler_info", "metrics_unsupported",
                               "contended", "checkpoint_unit", "phases", "dim")}
        settings = "\n".join(f"{k}: {json.dumps(v, default=str)}"
                             for k, v in sorted(group.settings.items()))
        blocks.append(f"<details><summary>{esc(group.target)} · {esc(group.label)} "
                      f"(seeds {esc(', '.join(map(str, group.seeds)))}; config "
                      f"{esc(group.key)})</summary><pre>{esc(settings)}</pre>"
                      f"<pre>{esc(json.dumps(provenance, indent=1, default=str))}</pre>"
                      "</details>")
    header = ["target", "group", "sampler", "seed", "state", "stop reason", "flags", "use", "budget",
              "iterations", "sampler s", "adaptation", "config hash", "started", "updated",
              "ckam-bench", "git commit", "loops", "host", "folder"]
    return ('<div class="scroll"><table class="sortable" id="inventory"><thead><tr>'
            + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr></thead><tbody>"
            + "\n".join(rows) + "</tbody></table></div>"
            + "<h3>Configurations and provenance</h3>" + "\n".join(blocks))


def _checks_html(checks) -> list[str]:
    """The stored stationarity checks (a :class:`~ckam_bench.report.validity.ValiditySection`):
    verdict summary, drift figures, verdict table, each check's own figure, unused folders."""
    if checks is None:
        return ['<p class="note">No stationarity check (<code>ckam-bench-check</code> output) '
                "is stored under the results folder.</p>"]
    cls = ' class="warn"' if checks.failed else ""
    parts = [f"<p{cls}>{esc(checks.summary())}</p>"]
    parts += [_figure_html(f) for f in checks.figures]
    parts.append(table_html(checks.table, checks.table.stem))
    for check in checks.checks:
        info = check["info"]
        if check["figure"] is None:
            continue
        fig = Rendered(None, [check["figure"]], str(info.get("caption", "")), "Validity",
                       f"{check.get('name', info.get('label'))} on {info.get('target')}: "
                       f"{info.get('verdict')}")
        parts.append(f"<details><summary>{esc(fig.title)} (statistics against time)</summary>"
                     f"{_figure_html(fig)}</details>")
    if checks.problems:
        parts.append("<p>Check folders not used:</p><ul>" + "".join(
            f"<li><code>{esc(path)}</code>: {esc(why)}</li>" for path, why in checks.problems)
            + "</ul>")
    return parts


def table_section(table) -> str:
    """The report section of a table: its own, else Posterior for a posterior table, else
    Tables."""
    if table.section:
        return table.section
    return sections.POSTERIOR if table.stem.startswith("posterior_") else sections.TABLES


def report_sections(rendered: list, tables: list) -> dict[str, tuple[list, list]]:
    """Section → (its figures, its tables), in the report's order
    (:func:`ckam_bench.report.sections.ordered`); the Ranking section's own ranking tables
    are not among ``tables``. Shared by ``report.html`` and ``report.md``."""
    found = [f.section for f in rendered] + [table_section(t) for t in tables]
    return {section: ([f for f in rendered if f.section == section],
                      [t for t in tables if table_section(t) == section])
            for section in sections.ordered(found)}


def _variables(groups) -> str:
    """The model's variables of a PyMC target, vectors once: ``mu, tau, theta[0…7]``."""
    from ckam_bench.report.generic import model_columns

    try:
        columns = model_columns(groups)
    except Exception:  # unreadable samples: the line just names the target
        return ""
    names: dict[str, list[str]] = {}
    for column in columns:
        names.setdefault(column.split("[")[0], []).append(column)
    return ", ".join(cols[0] if len(cols) == 1 else f"{cols[0]}…{cols[-1]}"
                     for cols in names.values())


def _targets_line(results: Results) -> str:
    """One line naming each target, its dimension and a PyMC model's variables."""
    items = []
    for target in results.targets:
        groups = results.groups(target)
        dim = groups[0].runs[0].status.get("dim") if groups else None
        variables = _variables(groups)
        what = (f"variables {variables}" if variables else
                f"{dim} dimension{'s' * (dim != 1)}" if isinstance(dim, int) else "")
        samplers = ", ".join(g.label for g in groups)
        items.append(f"<b>{esc(target)}</b> ({esc(what + '; ' if what else '')}"
                     f"{esc(samplers)})")
    return f'<p class="note">Targets: {"; ".join(items)}.</p>' if items else ""


def write_html(out_dir: Path, results: Results, rendered: list, notes: list, tables: list,
               rankings: list, settings, checks=None) -> Path:
    """Write ``OUT_DIR/report.html`` (see the module docstring); returns its path.
    ``checks``: the stored stationarity checks (:func:`ckam_bench.report.validity.
    render_validity`), shown first under Validity."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    groups = results.groups()
    paper_x = (f" x-axis of the paper figures: {esc(settings.x_label)}."
               if any(f.number is not None for f in rendered) else "")
    parts = [f"<h1>ckam-bench report</h1><p>Runs from <code>{esc(results.root)}</code>: "
             f"{len(results.runs)} loaded in {len(groups)} configuration groups, "
             f"{len(results.skipped)} skipped or partly used. Bands: {esc(settings.band_text)} "
             f"over seeds.{paper_x} Generated {now}.</p>", _targets_line(results)]
    layout = report_sections(rendered, tables)
    toc = [sections.RANKING, *(s for s in layout if s != sections.RANKING),
           sections.VALIDITY, sections.INVENTORY, sections.NOT_USED]
    parts.append("<nav><ul>" + "".join(f'<li><a href="#{_anchor(t)}">{esc(t)}</a></li>'
                                       for t in toc) + "</ul></nav>")
    parts.append(f'<h2 id="{_anchor(sections.RANKING)}">{sections.RANKING}</h2>')
    parts += [table_html(t, t.stem) for t in rankings] or ["<p>No ranking.</p>"]
    for section, (figures, section_tables) in layout.items():
        if section != sections.RANKING:
            parts.append(f'<h2 id="{_anchor(section)}">{esc(section)}</h2>')
        parts += [_figure_html(f) for f in figures]
        parts += [table_html(t, t.stem) for t in section_tables]
    parts.append(f'<h2 id="{_anchor(sections.VALIDITY)}">{sections.VALIDITY}</h2>')
    parts += _checks_html(checks)
    invalid = [g for g in groups if g.non_diminishing]
    if invalid:
        parts.append('<p class="warn">⚠ These configurations adapt without diminishing (a '
                     "paper's preset): their chains are not guaranteed to target π, so their "
                     "results are at best approximate.</p><ul>"
                     + "".join(f"<li>{esc(g.target)}: {esc(g.label)}</li>" for g in invalid)
                     + "</ul>")
    else:
        parts.append("<p>No configuration reports non-diminishing adaptation.</p>")
    flagged = [(g, r) for g in groups for r in g.flagged]
    empty = [s for s in results.skipped if s.flags]  # collected nothing: not ranked at all
    if flagged or empty:
        parts.append(f'<p class="warn">{FLAG_MARK} These runs went wrong (the runner flagged '
                     "them): their ESS counts as 0 and their MCSE and cost to accuracy as ∞ in "
                     "the ranking; a run that collected no sample is not ranked.</p><ul>" + "".join(
                         f"<li>{esc(g.target)}: {esc(g.label)} seed {esc(r.seed)}: "
                         + esc("; ".join(f"{k}: {v}" for k, v in r.flags.items())) + "</li>"
                         for g, r in flagged) + "".join(
                         f"<li>{esc(s.target)}: {esc(s.label)} (not ranked): "
                         + esc("; ".join(f"{k}: {v}" for k, v in s.flags.items())) + "</li>"
                         for s in empty) + "</ul>")
    else:
        parts.append("<p>No run was flagged (stuck chain, non-finite proposals or state).</p>")
    checked = [(g, ranking.report_flags(g)) for g in groups]
    checked = [(g, found) for g, found in checked if found]
    if checked:
        parts.append(f'<p class="warn">{FLAG_MARK} These configurations are flagged by the '
                     f"report's checks (seeds that disagree: R-hat > {ranking.RHAT_LIMIT}; b² "
                     f"off: a final moment error more than {ranking.BIAS_SIGMAS:g} of the run's "
                     "own MCSEs; divergent: transitions diverged after the warm-up): their values "
                     "are shown as measured, and they rank below every unflagged configuration.</p><ul>" + "".join(
                         f"<li>{esc(g.target)}: {esc(g.label)}: "
                         + esc("; ".join(found.values())) + "</li>" for g, found in checked)
                     + "</ul>")
    else:
        parts.append("<p>No configuration was flagged by the report's checks (seeds that "
                     "disagree, b² off the reference, divergences after the warm-up).</p>")
    unknown = sorted({g.label for g in groups if all(r.adaptation == "unknown" for r in g.runs)})
    if unknown:
        parts.append(f'<p class="note">Kind of adaptation not recorded for: '
                     f"{esc(', '.join(unknown))}.</p>")
    parts.append(f'<h2 id="{_anchor(sections.INVENTORY)}">{sections.INVENTORY}</h2>')
    parts.append(_inventory(results))
    parts.append(f'<h2 id="{_anchor(sections.NOT_USED)}">{sections.NOT_USED}</h2>')
    if results.skipped:
        parts.append("<h3>Skipped runs</h3><ul>" + "".join(
            f"<li><code>{esc(s.path)}</code>: {esc(s.reason)}</li>" for s in results.skipped)
            + "</ul>")
    if notes:
        parts.append("<h3>Figures not rendered</h3><ul>" + "".join(
            f"<li>{esc(name)}: {esc(why)}</li>" for name, why in notes) + "</ul>")
    if not results.skipped and not notes:
        parts.append("<p>Every run was used and every figure rendered.</p>")
    page = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<title>ckam-bench report</title><link rel=\"icon\" href=\"data:,\">"
            + fingerprint_meta(results)
            + f"<style>{CSS}</style></head><body>" + "\n".join(parts)
            + f"<script>{SORT_JS}</script></body></html>\n")
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
