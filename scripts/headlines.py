r"""Every headline figure of the documentation, recomputed from the tables it comes from.

A headline figure is a number of a page that sums up a table: a median or a worst case over
posteriors, "ahead on k of n", a range of ratios, or a ratio of two medians. Each one is written
here as a *template* of the page's sentence (``median {median:.2f}, worst {worst:.2f}``) with the
values that fill it, computed from a per-posterior table shipped in ``docs/tables/`` (what each
file holds, when and how it was measured and the command that measures it again:
docs/samplers.md, "Where the figures come from"). The rows of the tables the pages print are
templates too, so a page's table is its file.

The files hold the numbers as the pages printed them, rounded. A printed number stands for every
value that rounds to it (half a unit of its last digit either way; counts of gradients are
exact), so each figure is recomputed as an interval: the median or the largest of rounded
ratios, or the ratio of two rounded medians, lies within it. A page's number agrees when the
values it stands for meet that interval; an interval too wide to print as one number is printed
"[lo, hi]".

    python scripts/headlines.py                       # every sentence, by page, with its file
    python scripts/headlines.py cpu_goal_seed0_2051   # only those of one file
    python scripts/headlines.py --tables              # the tables' rows as well
    python scripts/headlines.py --check               # compare with the pages; exit 1 on a difference

``tests/test_headlines.py`` runs the check, which also fails on a headline figure of
:data:`PAGES` that no template covers (:data:`HEADLINE_PATTERNS`).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import string
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLES = ROOT / "docs" / "tables"
INF = math.inf

# The pages whose headline figures must all come from a template below, and what a headline
# figure looks like: a median or worst case, "ahead … on k of n", "k of n posteriors", a range
# of ratios "a–b×", "k of the n medians".
PAGES = ("README.md", "docs/samplers.md", "docs/peers.md", "docs/posteriordb.md", "docs/performance.md")
HEADLINE_PATTERNS = (r"median\s+(?:of\s+)?[\d.]+×", r"worst\s+[\d.]+", r"ahead[^.)]{0,80}?\bon\s+\d+\s+of\s+\d+",
                     r"\b\d+\s+of\s+(?:the\s+)?\d+\s+(?:cheap\s+)?posteriors", r"[\d.]+–[\d.]+×",
                     r"\b\d+\s+of\s+the\s+\d+\s+medians")
SAMPLERS, PEERS, POSTERIORDB, PERFORMANCE = "docs/samplers.md", "docs/peers.md", "docs/posteriordb.md", \
    "docs/performance.md"


# ------------------------------------------------------------------ intervals of printed values
@dataclass(frozen=True)
class Span:
    """The closed interval [lo, hi] of the values a computation on printed numbers may have had."""

    lo: float
    hi: float

    @staticmethod
    def exact(value: float) -> "Span":
        return Span(value, value)

    @staticmethod
    def printed(text: str, significant: int | None = None) -> "Span":
        """A number as printed: every value within half a unit of its last digit ("0.26":
        [0.255, 0.265]; "306": [305.5, 306.5]); "inf" or "∞": infinity. ``significant``: the
        number was printed to that many significant digits with trailing zeros dropped (Python's
        "g" format: "1.4" is 1.40 at 3), so its last digit may be finer than it shows."""
        text = text.strip()
        if text in ("inf", "∞"):
            return Span(INF, INF)
        value, half = float(text.replace("−", "-")), half_unit(text)
        if significant is not None and value != 0:
            half = min(half, 0.5 * 10.0 ** (math.floor(math.log10(abs(value))) - significant + 1))
        return Span(value - half, value + half)

    def __truediv__(self, other: "Span") -> "Span":
        """x / y of positive values (∞ / finite = ∞)."""
        return Span(_div(self.lo, other.hi), _div(self.hi, other.lo))

    def map(self, f) -> "Span":
        """f of the interval, for an increasing f."""
        return Span(f(self.lo), f(self.hi))

    def show(self, spec: str) -> str:
        """The interval printed with ``spec``: one number when every value of it prints alike,
        else "[lo, hi]" (either end's rounding is what the page may print)."""
        # the ends are where rounding turns: a value that printed as v lies strictly inside
        nudge = 1e-9 * max(1.0, abs(self.lo), abs(self.hi)) if self.hi - self.lo > 2e-9 else 0.0
        lo, hi = _fmt(self.lo + nudge, spec), _fmt(self.hi - nudge, spec)
        return lo if lo == hi else f"[{lo}, {hi}]"

    def agrees(self, text: str) -> bool:
        """Whether a number printed as ``text`` stands for some value of the interval: an exact
        value rounds to it (either way at a tie), or the interval and the values that print as
        ``text`` overlap by more than a point (0.25 and [0.255, 0.265] do not: every value of
        the interval prints as 0.26)."""
        shown = Span.printed(text)
        if math.isinf(shown.lo) or math.isinf(self.hi):
            return math.isinf(shown.lo) and math.isinf(self.hi)
        tol = 1e-9 * max(1.0, abs(shown.lo))
        if self.hi - self.lo <= tol:
            return shown.lo - tol <= self.lo <= shown.hi + tol
        return min(shown.hi, self.hi) - max(shown.lo, self.lo) > tol


def _div(a: float, b: float) -> float:
    if math.isinf(a):
        return INF
    return INF if b == 0 else a / b


def _fmt(value: float, spec: str) -> str:
    if math.isinf(value):
        return "∞"
    return format(int(round(value)) if spec.endswith("d") else value, spec)


def half_unit(text: str) -> float:
    """Half a unit of the last printed digit of a decimal number."""
    text = text.strip()
    return 0.5 * 10.0 ** -(len(text) - text.index(".") - 1) if "." in text else 0.5


def exact(value: float) -> Span:
    return Span.exact(value)


def median(spans) -> Span:
    spans = list(spans)
    return Span(statistics.median(s.lo for s in spans), statistics.median(s.hi for s in spans))


def largest(spans) -> Span:
    spans = list(spans)
    return Span(max(s.lo for s in spans), max(s.hi for s in spans))


def smallest(spans) -> Span:
    spans = list(spans)
    return Span(min(s.lo for s in spans), min(s.hi for s in spans))


def count_below(spans, bound: float, inclusive: bool = False) -> Span:
    """How many values are below ``bound`` (at or below with ``inclusive``): between those
    certainly below and those possibly below."""
    below = (lambda v: v <= bound) if inclusive else (lambda v: v < bound)
    spans = list(spans)
    return Span(sum(below(s.hi) for s in spans), sum(below(s.lo) for s in spans))


def count_not_below(spans, bound: float) -> Span:
    """How many values are at or above ``bound``."""
    spans = list(spans)
    below = count_below(spans, bound)
    return Span(len(spans) - below.hi, len(spans) - below.lo)


def percent_change(ratio: Span) -> Span:
    """(ratio − 1) in per cent."""
    return ratio.map(lambda r: 100.0 * (r - 1.0))


def negated(span: Span) -> Span:
    return Span(-span.hi, -span.lo)


def fmt_count(value: float) -> str:
    """A gradient count as the suite tables print it (bench_peers.py's ``fmt``): 46,417, or ∞."""
    return "∞" if math.isinf(value) else f"{value:,.0f}"


def spaced(count: str) -> str:
    """A count as the prose tables print it: 17 572 (a space between thousands)."""
    return f"{int(float(count)):,}".replace(",", " ")


def label(posterior: str) -> str:
    """A posterior as the prose names it: the model (nes1996, sblri where the model is shared)."""
    data, model = posterior.split("-", 1)
    return data if model in ("nes", "blr") else model


# ------------------------------------------------------------------ templates
NUMBER = r"∞|[−-]?\d+(?:\.\d+)?"


@dataclass
class Figure:
    """A sentence (or a table row) of a page with its numbers as recomputed.

    ``template`` is the page's text with ``{name:spec}`` where a number is recomputed (a space
    matches any run of whitespace, so a sentence may wrap); ``values`` gives each name's
    interval. With ``anchor`` the text is looked for only in the block of the page that starts
    there (up to the next "**Measured" paragraph or heading)."""

    page: str
    source: str
    template: str
    values: dict = field(default_factory=dict)
    anchor: str | None = None
    row: bool = False

    def fields(self):
        return [(name, spec) for _, name, spec, _ in string.Formatter().parse(self.template) if name is not None]

    def text(self) -> str:
        parts = []
        for literal, name, spec, _ in string.Formatter().parse(self.template):
            parts.append(literal)
            if name is not None:
                parts.append(self.values[name].show(spec or ".2f"))
        return "".join(parts)

    def pattern(self) -> re.Pattern:
        parts = []
        for literal, name, _, _ in string.Formatter().parse(self.template):
            parts.append(r"\s+".join(re.escape(piece) for piece in re.split(r"\s+", literal)))
            if name is not None:
                parts.append(rf"(?P<{name}>{NUMBER})")
        return re.compile("".join(parts))


def region(text: str, anchor: str | None) -> tuple[int, int]:
    """(start, end) of the block of ``text`` that starts at ``anchor``: up to the next
    "**Measured" paragraph or heading after it (the whole text without an anchor; (−1, −1)
    when the anchor is not there)."""
    if anchor is None:
        return 0, len(text)
    start = text.find(anchor)
    if start < 0:
        return -1, -1
    ends = [m.start() for m in re.finditer(r"\n(?:\*\*Measured|#{1,4} )", text) if m.start() > start + len(anchor)]
    return start, min(ends, default=len(text))


# ------------------------------------------------------------------ the files
def read(name: str) -> list[dict]:
    with open(TABLES / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def counts(rows, value: str) -> dict:
    """{(posterior, sampler): count} (∞ for never; absent for a run that did not finish)."""
    return {(r["posterior"], r["sampler"]): float(r[value]) for r in rows if r[value] != ""}


def both_finish(cell: dict, posteriors, a: str, b: str) -> dict:
    """{posterior: a's count / b's} where both finish."""
    return {p: cell[(p, a)] / cell[(p, b)] for p in posteriors
            if math.isfinite(cell.get((p, a), INF)) and math.isfinite(cell.get((p, b), INF))}


def goal_ratios(cell: dict, posteriors, a: str, b: str) -> dict:
    """bench_peers.py --suite's gradient-goal ratios: a / b where b finishes (∞ when a does not)."""
    return {p: (INF if math.isinf(cell[(p, a)]) else cell[(p, a)] / cell[(p, b)]) for p in posteriors
            if (p, a) in cell and math.isfinite(cell.get((p, b), INF))}


def goal_line(ratios: dict, a: str, b: str) -> str:
    values = list(ratios.values())
    return (f"{a}/{b} gradients: median {statistics.median(values):.2f}, worst {max(values):.2f} over "
            f"{len(values)} posteriors (goal: median ≤ 1.0, none above 1.5)")


# ------------------------------------------------------------------ docs/samplers.md
UPDATE_RULES = ("draw", "ten", "g16", "g32")
DEVIATIONS = "**Where we differ from nuts-rs.**"


def lowrank_updates() -> list[Figure]:
    """The early-phase recompute rules of ``nuts_lowrank`` in one process
    (scripts/bench_lowrank_updates.py, 2026-11-28 03:50 UTC): the table, the findings under it,
    and the deviations table's cell on nuts-rs 0.17.4's rule."""
    source, anchor = "lowrank_updates", "`python scripts/bench_lowrank_updates.py` compares"
    rows = read("lowrank_updates.csv")
    grads = {(r["posterior"], r["rule"]): float(r["warmup_grads"]) for r in rows}
    cpu = {(r["posterior"], r["rule"]): Span.printed(r["warmup_cpu_ms"]) for r in rows}
    cells = {(r["posterior"], r["rule"]): f"{spaced(r['warmup_grads'])} / {r['warmup_cpu_ms']} ms" for r in rows}
    dims = {r["posterior"]: r["d"] for r in rows}
    figures = [Figure(SAMPLERS, source, f"| {p} | {d} | " + " | ".join(cells[(p, u)] for u in UPDATE_RULES) + " |",
                      anchor=anchor, row=True) for p, d in dims.items()]
    change = {p: percent_change(exact(grads[(p, "g16")] / grads[(p, "draw")])) for p in dims}
    saving = {p: negated(percent_change(cpu[(p, "g16")] / cpu[(p, "draw")])) for p in dims}
    figures.append(Figure(
        SAMPLERS, source,
        "Against every draw, the gradient rule (`g16`) costs between {fewer:d} % fewer and {more:d} % more gradients "
        "on these {n:d} (nes1992 +{a:d} %, sblri +{b:d} %, nes1976 +{c:d} %; gp_pois_regr −{d:d} %, diamonds −{e:d} %). "
        "It costs less CPU on {less:d} of them: {s1:d} % less on the non-centred eight schools, {s2:d} % on "
        "logmesquite_logvolume, {s3:d} % on sblri, {s4:d} % on arK and {s5:d} % on kilpisjarvi. garch11 is the "
        "exception, at {g:d} % more.",
        {"fewer": negated(smallest(change.values())), "more": largest(change.values()), "n": exact(len(dims)),
         "a": change["nes1992"], "b": change["sblri_blr"], "c": change["nes1976"],
         "d": negated(change["gp_pois_regr"]), "e": negated(change["diamonds"]),
         "less": count_below([cpu[(p, "g16")] / cpu[(p, "draw")] for p in dims], 1.0),
         "s1": saving["eight_schools_noncentered"], "s2": saving["logmesquite_logvolume"],
         "s3": saving["sblri_blr"], "s4": saving["arK"], "s5": saving["kilpisjarvi"],
         "g": negated(saving["garch11"])}, anchor))
    ten = {p: exact(grads[(p, "ten")] / grads[(p, "g16")]) for p in ("eight_schools_noncentered", "kilpisjarvi")}
    figures.append(Figure(
        SAMPLERS, source,
        "Every 10 draws keeps the CPU low where the metric is good at once, but it needs {a:.1f}× the gradients of the "
        "gradient rule on the eight schools and {b:.1f}× on kilpisjarvi. `g32` saves a little more CPU, at {c:d} % "
        "more gradients than every draw on nes1976.",
        {"a": ten["eight_schools_noncentered"], "b": ten["kilpisjarvi"],
         "c": percent_change(exact(grads[("nes1976", "g32")] / grads[("nes1976", "draw")]))}, anchor))
    figures.append(Figure(
        SAMPLERS, source,
        "in the warm-up, 0.17.4's rule needs {a:.1f}× the gradients of ours on the non-centred eight schools and "
        "{b:.1f}× on kilpisjarvi", {"a": ten["eight_schools_noncentered"], "b": ten["kilpisjarvi"]}, DEVIATIONS))
    return figures


def lowrank_updates_1733() -> list[Figure]:
    """The first in-process measurement of how often the low-rank metric is recomputed
    (2026-11-27 17:33 UTC): its table, and what every 10 draws after the early phase changes
    against every draw (the deviations table)."""
    source = "lowrank_updates_1733"
    rows = read("lowrank_updates_1733.csv")
    grads = {(r["posterior"], r["rule"]): float(r["warmup_grads"]) for r in rows}
    cpu = {(r["posterior"], r["rule"]): Span.printed(r["warmup_cpu_ms"]) for r in rows}
    cells = {(r["posterior"], r["rule"]): f"{spaced(r['warmup_grads'])} / {r['warmup_cpu_ms']} ms" for r in rows}
    posteriors = list(dict.fromkeys(r["posterior"] for r in rows))
    figures = [Figure(SAMPLERS, source, f"| {p} | " + " | ".join(cells[(p, u)] for u in ("draw", "ten", "draw_early"))
                      + " |", anchor="**How often the low-rank metric is recomputed.**", row=True) for p in posteriors]
    change = [percent_change(exact(grads[(p, "draw_early")] / grads[(p, "draw")])) for p in posteriors]
    saving = [negated(percent_change(cpu[(p, "draw_early")] / cpu[(p, "draw")])) for p in posteriors]
    figures.append(Figure(
        SAMPLERS, source,
        "against every draw, every 10 draws after the early phase changes the warm-up's gradients by {few:d} % fewer "
        "to {more:d} % more and spends {lo:d}–{hi:d} % less CPU",
        {"few": negated(smallest(change)), "more": largest(change), "lo": smallest(saving), "hi": largest(saving)},
        DEVIATIONS))
    return figures


def welford_inflation() -> list[Figure]:
    """The deviations table: nuts-rs's sums of squared deviations from the old mean over
    Welford's, in expectation on an exchangeable sample of n: 1 + H(n − 1)/(n − 1)."""
    def inflation(n):
        return exact(100.0 * sum(1.0 / k for k in range(1, n)) / (n - 1))

    return [Figure(SAMPLERS, "computed", "(by 1 + H_(n−1)/(n − 1): {a:d} % at n = 10, {b:d} % at n = 80)",
                   {"a": inflation(10), "b": inflation(80)}, DEVIATIONS)]


ABLATION = ("nuts", "nuts_fisher_stan", "nuts_stan_nutpie", "nuts_fisher", "nuts_lowrank", "nuts_reference_diag",
            "nuts_reference_dense", "nutpie", "nutpie_lowrank")
LIMIT = {"nuts": "nuts_reference_diag", "nuts_fisher_stan": "nuts_reference_diag",
         "nuts_stan_nutpie": "nuts_reference_diag", "nuts_fisher": "nuts_reference_diag",
         "nutpie": "nuts_reference_diag", "nuts_lowrank": "nuts_reference_dense",
         "nutpie_lowrank": "nuts_reference_dense"}
STEPS = (("nuts_stan_nutpie", "nuts"), ("nuts_fisher_stan", "nuts"), ("nuts_fisher", "nuts_stan_nutpie"),
         ("nuts_lowrank", "nuts_fisher"))


def character_cells(cell: dict, characters: dict, a: str, b: str) -> dict:
    """{character: "median [n] +k −k"} of one ablation step, as bench_peers.py --suite prints it."""
    out = {}
    for character in sorted(set(characters.values())):
        ratios, gained, lost = [], 0, 0
        for p in sorted(p for p, c in characters.items() if c == character):
            if (p, a) not in cell or (p, b) not in cell:
                continue
            x, y = cell[(p, a)], cell[(p, b)]
            if math.isfinite(x) and math.isfinite(y) and y > 0:
                ratios.append(x / y)
            gained += math.isfinite(x) and math.isinf(y)
            lost += math.isinf(x) and math.isfinite(y)
        text = f"{statistics.median(ratios):.2f} [{len(ratios)}]" if ratios else "–"
        out[character] = text + (f" +{gained}" if gained else "") + (f" −{lost}" if lost else "")
    return out


def ablation_seed0() -> list[Figure]:
    """The ablation over the suite on seed 0 (2026-11-27): its two tables, the per-character
    table, the goal lines and the findings under them."""
    source, anchor = "ablation_seed0", "**Measured: the ablation over the suite, seed 0**"
    rows = read("ablation_seed0.csv")
    cell = counts(rows, "grads_to_b2")
    ess = {(r["posterior"], r["sampler"]): r["ess_per_1000_grads"] for r in rows}
    characters = {r["posterior"]: r["character"] for r in rows}
    posteriors = sorted(characters)
    figures = []

    def add(template, row=False, **values):
        figures.append(Figure(SAMPLERS, source, template, values, anchor, row))

    for p in posteriors:
        cells = []
        for s in ABLATION:
            text = fmt_count(cell[(p, s)]) if (p, s) in cell else ""
            limit = cell.get((p, LIMIT.get(s, "")), INF)
            if text and math.isfinite(cell[(p, s)]) and math.isfinite(limit):
                text += f" ({cell[(p, s)] / limit:.2g}×)"
            cells.append(text)
        add(f"| {p} | " + " | ".join(cells) + " |", row=True)
        add(f"| {p} | " + " | ".join(ess[(p, s)] for s in ABLATION) + " |", row=True)
    steps = [character_cells(cell, characters, a, b) for a, b in STEPS]
    for character in sorted(set(characters.values())):
        n = sum(c == character for c in characters.values())
        add(f"| {character} ({n}) | " + " | ".join(step[character] for step in steps) + " |", row=True)
    fisher = goal_ratios(cell, posteriors, "nuts_fisher", "nutpie")
    low = goal_ratios(cell, posteriors, "nuts_lowrank", "nutpie_lowrank")
    add(goal_line(fisher, "nuts_fisher", "nutpie"))
    add(goal_line(low, "nuts_lowrank", "nutpie_lowrank"))

    def ess_ratios(a, b):  # min ESS is printed to 3 significant digits
        return [Span.printed(ess[(p, a)], 3) / Span.printed(ess[(p, b)], 3) for p in posteriors
                if ess[(p, a)] and ess[(p, b)]]

    behind = [r for r in low.values() if 1.2 < r <= 1.5]
    add("`nuts_lowrank` / `nutpie_lowrank` median {median:.2f} over the {n:d} posteriors both finish, at or below 1.0 "
        "on {le:d}; min ESS per gradient median {ess:.2f}× nutpie's",
        median=exact(statistics.median(low.values())), n=exact(len(low)),
        le=exact(sum(r <= 1.0 for r in low.values())), ess=median(ess_ratios("nuts_lowrank", "nutpie_lowrank")))
    add("{k:d} more are one checkpoint behind ({lo:.2f}–{hi:.2f}×:", k=exact(len(behind)), lo=exact(min(behind)),
        hi=exact(max(behind)))
    worst = sorted(fisher, key=lambda p: -fisher[p])[:3]
    add("median {median:.2f} over {n:d}, at or below 1.0 on {le:d}, min ESS per gradient median {ess:.2f}× "
        f"({{lo:.2f}}–{{hi:.2f}}). Not met on the worst: {label(worst[0])} {{a:.2f}}× "
        f"({spaced(cell[(worst[0], 'nuts_fisher')])} against {spaced(cell[(worst[0], 'nutpie')])}), "
        f"{label(worst[1])} {{b:.2f}}×, {label(worst[2])} {{c:.2f}}×",
        median=exact(statistics.median(fisher.values())), n=exact(len(fisher)),
        le=exact(sum(r <= 1.0 for r in fisher.values())), ess=median(ess_ratios("nuts_fisher", "nutpie")),
        lo=smallest(ess_ratios("nuts_fisher", "nutpie")), hi=largest(ess_ratios("nuts_fisher", "nutpie")),
        a=exact(fisher[worst[0]]), b=exact(fisher[worst[1]]), c=exact(fisher[worst[2]]))
    dense = both_finish(cell, posteriors, "nuts_lowrank", "nuts_reference_dense")
    add("`nuts_lowrank` needs a median {g:.2f}× the gradients of the reference covariance (`nuts_reference_dense`), "
        "and its ESS per gradient is a median {e:.2f}× the reference's",
        g=exact(statistics.median(dense.values())), e=median(ess_ratios("nuts_lowrank", "nuts_reference_dense")))
    stan = both_finish(cell, posteriors, "nuts", "nuts_reference_diag")
    diag = both_finish(cell, posteriors, "nuts_fisher", "nuts_reference_diag")
    add("**Stan's adaptation (`nuts`) needs a median {m:.2f}× the gradients of the reference variance** "
        "(`nuts_reference_diag`), more than 1.5× on {k:d} of the {n:d} posteriors both finish; `nuts_fisher` a median "
        "{f:.2f}× it", m=exact(statistics.median(stan.values())), k=exact(sum(r > 1.5 for r in stan.values())),
        n=exact(len(stan)), f=exact(statistics.median(diag.values())))
    return figures


CPU_PEERS = ("nutpie", "numpyro_nuts", "blackjax_nuts")
CPU_ANCHOR = "**Measured: the CPU-second goal, alone on the machine**"


def cpu_goal(name: str) -> dict:
    """One CPU-goal run's per-posterior numbers as intervals: {column: {posterior: Span}} (µs
    per gradient was printed to bench_peers.py's 3 significant digits, the ratios to 2 decimals)."""
    out = {}
    for r in read(f"{name}.csv"):
        for key, text in r.items():
            if key != "posterior" and text != "":
                digits = 3 if key.startswith("us_per_grad") else None
                out.setdefault(key, {})[r["posterior"]] = Span.printed(text, digits)
    return out


def cpu_summary(ratios: dict) -> dict:
    """Ahead (< 1), of how many, median and worst, as bench_peers.py --suite's goal line."""
    spans = list(ratios.values())
    return {"ahead": count_below(spans, 1.0), "n": exact(len(spans)), "median": median(spans),
            "worst": largest(spans)}


def cpu_goal_figures() -> list[Figure]:
    """The CPU-second goal on seed 0 (2026-11-27 20:51–21:05 UTC, beside the runs of 17:49 and
    14:32): samplers.md's table, goal lines and findings, and peers.md's summary."""
    now, before, first = (cpu_goal(f"cpu_goal_seed0_{t}") for t in ("2051", "1749", "1432"))
    source, both = "cpu_goal_seed0_2051", "cpu_goal_seed0_2051, cpu_goal_seed0_1749"
    figures = [Figure(SAMPLERS, source, "| " + " | ".join(v or "–" for v in r.values()) + " |", anchor=CPU_ANCHOR,
                      row=True) for r in read("cpu_goal_seed0_2051.csv")]
    grads = now["grads_nuts_fisher_over_nutpie"]
    figures.append(Figure(SAMPLERS, source,
                          "nuts_fisher/nutpie gradients: median {median:.2f}, worst {worst:.2f} over {n:d} posteriors "
                          "(goal: median ≤ 1.0, none above 1.5)",
                          {"median": median(grads.values()), "worst": largest(grads.values()),
                           "n": exact(len(grads))}, CPU_ANCHOR))
    low, fis = ({q: cpu_summary(run[f"cpu_{ours}_over_{q}"]) for q in CPU_PEERS}
                for run, ours in ((now, "nuts_lowrank"), (now, "nuts_fisher")))
    for ours, summary in (("nuts_fisher", fis), ("nuts_lowrank", low)):
        for q in CPU_PEERS:
            figures.append(Figure(SAMPLERS, source,
                                  f"{ours} / {q} CPU seconds: ahead (< 1) on {{ahead:d}} of {{n:d}} cheap posteriors "
                                  "the peer finishes, median {median:.2f}, worst {worst:.2f} "
                                  "(goal: ahead on every one)",
                                  summary[q], CPU_ANCHOR))
    old = cpu_summary(before["cpu_nuts_lowrank_over_nutpie"])
    figures.append(Figure(
        SAMPLERS, both,
        "**`nuts_lowrank` is ahead of nutpie on {a:d} of {n:d}** cheap posteriors (median {m:.2f}×; before the tree's "
        "speed-up, 17:49–18:02 the same day: {a0:d} of {n0:d} at {m0:.2f}×), of NumPyro on {b:d} of {nb:d} ({mb:.2f}×) "
        "and of BlackJAX on {c:d} of {nc:d} ({mc:.2f}×).",
        {"a": low["nutpie"]["ahead"], "n": low["nutpie"]["n"], "m": low["nutpie"]["median"], "a0": old["ahead"],
         "n0": old["n"], "m0": old["median"], "b": low["numpyro_nuts"]["ahead"], "nb": low["numpyro_nuts"]["n"],
         "mb": low["numpyro_nuts"]["median"], "c": low["blackjax_nuts"]["ahead"], "nc": low["blackjax_nuts"]["n"],
         "mc": low["blackjax_nuts"]["median"]}, CPU_ANCHOR))
    ratio, ratio0 = now["cpu_nuts_lowrank_over_nutpie"], before["cpu_nuts_lowrank_over_nutpie"]
    figures.append(Figure(
        SAMPLERS, both,
        "Behind nutpie on {k:d}: eight schools non-centred {e:.2f} (before: {e0:.2f}), gp_pois_regr {g:.2f} "
        "({g0:.2f}), kidscore_interaction_z {kz:.2f}, sblri {sb:.2f}, sblrc {sc:.2f} and arma11 {ar:.2f}.",
        {"k": count_not_below(ratio.values(), 1.0), "e": ratio["eight_schools-eight_schools_noncentered"],
         "e0": ratio0["eight_schools-eight_schools_noncentered"], "g": ratio["gp_pois_regr-gp_pois_regr"],
         "g0": ratio0["gp_pois_regr-gp_pois_regr"], "kz": ratio["kidiq_with_mom_work-kidscore_interaction_z"],
         "sb": ratio["sblri-blr"], "sc": ratio["sblrc-blr"], "ar": ratio["arma-arma11"]}, CPU_ANCHOR))

    def per_gradient(run):
        return [run["us_per_grad_nuts_lowrank"][p] / run["us_per_grad_nuts_fisher"][p]
                for p in run["us_per_grad_nuts_fisher"]]

    us = per_gradient(now)
    figures.append(Figure(
        SAMPLERS, both,
        "`nuts_lowrank` costs a median {m:.2f}× `nuts_fisher`'s CPU per gradient over the {n:d} posteriors "
        "({lo:.2f}–{hi:.2f}: the O(dk) maps and the recomputes; before the speed-up {m0:.2f}×)",
        {"m": median(us), "n": exact(len(us)), "lo": smallest(us), "hi": largest(us),
         "m0": median(per_gradient(before))}, CPU_ANCHOR))
    figures.append(Figure(
        SAMPLERS, both,
        "**`nuts_fisher` against nutpie**: ahead on {a:d} of {n:d} (before {a0:d}), median {m:.2f}×; the same "
        "algorithm, so the ratios follow the gradients (median {g:.2f}, worst {w:.2f})",
        {"a": fis["nutpie"]["ahead"], "n": fis["nutpie"]["n"],
         "a0": cpu_summary(before["cpu_nuts_fisher_over_nutpie"])["ahead"], "m": fis["nutpie"]["median"],
         "g": median(grads.values()), "w": largest(grads.values())}, CPU_ANCHOR))
    earliest = cpu_summary(first["cpu_nuts_lowrank_over_nutpie"])
    figures.append(Figure(
        PEERS, "cpu_goal_seed0_2051, cpu_goal_seed0_1749, cpu_goal_seed0_1432",
        "our `nuts_lowrank` needs a median {a:.2f}× nutpie's, {b:.2f}× NumPyro's and {c:.2f}× BlackJAX's and is ahead "
        "of them on {ka:d} of {na:d}, {kb:d} of {nb:d} and {kc:d} of {nc:d}; `nuts_fisher` (nutpie's adaptation) "
        "{d:.2f}×, {e:.2f}× and {f:.2f}×, ahead on {kd:d}, {ke:d} and {kf:d}. (Earlier runs: 17:49–18:02 UTC, before "
        "the tree's speed-up, `nuts_lowrank` ahead of nutpie on {k1:d} of {n1:d} at {m1:.2f}×; 14:32–14:53, "
        "`nuts_lowrank` recomputing its metric after every draw, {k2:d} of {n2:d} at {m2:.2f}×.)",
        {"a": low["nutpie"]["median"], "b": low["numpyro_nuts"]["median"], "c": low["blackjax_nuts"]["median"],
         "ka": low["nutpie"]["ahead"], "na": low["nutpie"]["n"], "kb": low["numpyro_nuts"]["ahead"],
         "nb": low["numpyro_nuts"]["n"], "kc": low["blackjax_nuts"]["ahead"], "nc": low["blackjax_nuts"]["n"],
         "d": fis["nutpie"]["median"], "e": fis["numpyro_nuts"]["median"], "f": fis["blackjax_nuts"]["median"],
         "kd": fis["nutpie"]["ahead"], "ke": fis["numpyro_nuts"]["ahead"], "kf": fis["blackjax_nuts"]["ahead"],
         "k1": old["ahead"], "n1": old["n"], "m1": old["median"], "k2": earliest["ahead"], "n2": earliest["n"],
         "m2": earliest["median"]}, "**Redone alone, with each peer"))
    return figures


BEHIND = {"eight_schools-eight_schools_noncentered": "eight schools, non-centred", "sblri-blr": "sblri",
          "arma-arma11": "arma11", "kidiq_with_mom_work-kidscore_interaction_z": "kidscore_interaction_z",
          "garch-garch11": "garch11", "gp_pois_regr-gp_regr": "gp_regr"}


def behind_seeds() -> list[Figure]:
    """The CPU goal again (2026-11-28 03:51–04:32 UTC): the six posteriors where nutpie was
    ahead, seed by seed, with the ratio of the median CPU seconds (samplers.md), and peers.md's
    summary of them."""
    source = "cpu_goal_behind_seeds012"
    cells, cpu = {}, {}
    for r in read("cpu_goal_behind_seeds012.csv"):
        key = (r["posterior"], r["sampler"])
        cells.setdefault(key, []).append(f"{spaced(r['grads_to_b2'])} / {r['cpu_ms_to_b2']}")
        cpu.setdefault(key, []).append(Span.printed(r["cpu_ms_to_b2"]))
    ratio = {p: median(cpu[(p, "nuts_lowrank")]) / median(cpu[(p, "nutpie")]) for p in BEHIND}
    figures = [Figure(SAMPLERS, source, f"| {name} | {{ratio:.2f}} | " + ", ".join(cells[(p, "nuts_lowrank")])
                      + " | " + ", ".join(cells[(p, "nutpie")]) + " |", {"ratio": ratio[p]},
                      "**Measured: the CPU goal again, with the gradient rule**", row=True)
               for p, name in BEHIND.items()]
    eight = "eight_schools-eight_schools_noncentered"
    figures.append(Figure(
        PEERS, source,
        "eight schools (our CPU {e:.2f}× nutpie's, medians over the seeds, at the same checkpoint), and the two are "
        "within {w:d} % on sblri, arma11, kidscore_interaction_z, garch11 and gp_regr.",
        {"e": ratio[eight], "w": percent_change(largest(v for p, v in ratio.items() if p != eight))},
        "**Again on 2026-11-28"))
    return figures


# ------------------------------------------------------------------ docs/posteriordb.md
NUTS6 = ("nuts", "nuts_fisher", "nuts_lowrank", "nutpie", "numpyro_nuts", "blackjax_nuts")
SUITE8 = NUTS6 + ("am", "mala")


def posteriordb_seed0() -> list[Figure]:
    """The suite on seed 0 (eight samplers, 2026-11-27): its table, the summary rows and the
    findings."""
    source, anchor = "posteriordb_seed0", "**Measured 2026-11-27: 42 of the 46"
    rows = read("posteriordb_seed0.csv")
    cell = counts(rows, "evals_to_b2")
    check_ = {(r["posterior"], r["sampler"]): r["reference_check"] for r in rows}
    posteriors = sorted({r["posterior"] for r in rows})
    mark = {"pass": "✓", "fail": "✗"}
    figures = []

    def add(template, row=False, **values):
        figures.append(Figure(POSTERIORDB, source, template, values, anchor, row))

    for p in posteriors:
        add(f"| {p} | " + " | ".join(f"{fmt_count(cell[(p, s)])} {mark[check_[(p, s)]]}" if (p, s) in cell else ""
                                    for s in SUITE8) + " |", row=True)
    runs = {s: [p for p in posteriors if (p, s) in cell] for s in SUITE8}
    add("| passes | " + " | ".join(f"{sum(check_[(p, s)] == 'pass' for p in runs[s])}/{len(runs[s])}"
                                   for s in SUITE8) + " |", row=True)
    add("| reach b² < 0.01 | " + " | ".join(f"{sum(math.isfinite(cell[(p, s)]) for p in runs[s])}/{len(runs[s])}"
                                            for s in SUITE8) + " |", row=True)
    reached = [p for p in posteriors if any(math.isfinite(cell.get((p, s), INF)) for s in NUTS6)]
    fewest = [p for p in reached
              if cell[(p, "nuts_lowrank")] <= 1.05 * min(cell[(p, s)] for s in NUTS6 if (p, s) in cell)]
    add("fewest (within 5 %) on {k:d} of the {n:d} posteriors where any of them reaches b² < 0.01",
        k=exact(len(fewest)), n=exact(len(reached)))
    low = both_finish(cell, posteriors, "nuts_lowrank", "nutpie")
    add("Over the {n:d} that both finish, it needs a median {m:.2f}× nutpie's gradients (range {lo:.2f}–{hi:.2f}×), "
        "and it passes {p:d} of {q:d}.", n=exact(len(low)), m=exact(statistics.median(low.values())),
        lo=exact(min(low.values())), hi=exact(max(low.values())),
        p=exact(sum(check_[(p, "nuts_lowrank")] == "pass" for p in runs["nuts_lowrank"])),
        q=exact(len(runs["nuts_lowrank"])))
    fisher = both_finish(cell, posteriors, "nuts_fisher", "nutpie")
    worst = sorted(fisher, key=lambda p: -fisher[p])
    above = [p for p in worst if fisher[p] > 1.5][1:]
    add("**`nuts_fisher` against nutpie (the same estimator family): median {m:.2f}, worst {w:.2f}** over the {n:d} "
        f"posteriors both finish ({label(worst[0])}, {spaced(cell[(worst[0], 'nuts_fisher')])} against "
        f"{spaced(cell[(worst[0], 'nutpie')])} gradients); "
        + " and ".join(f"{label(p)} ({{r{i}:.2f}})" for i, p in enumerate(above))
        + f" are the other {['no', 'one', 'two', 'three', 'four'][len(above)]} above 1.5.",
        m=exact(statistics.median(fisher.values())), w=exact(fisher[worst[0]]), n=exact(len(fisher)),
        **{f"r{i}": exact(fisher[p]) for i, p in enumerate(above)})
    am = [p for p in runs["am"] if math.isfinite(cell[(p, "am")])]
    add("**AM, with no gradient, reaches b² < 0.01 on {k:d} of {n:d}**", k=exact(len(am)), n=exact(len(runs["am"])))
    mala = [p for p in runs["mala"] if math.isinf(cell[(p, "mala")])]
    add("MALA's single isotropic step does not: it fails {k:d} of {n:d}.", k=exact(len(mala)),
        n=exact(len(runs["mala"])))
    return figures


# ------------------------------------------------------------------ docs/peers.md
def peer_overhead() -> list[Figure]:
    """The harness's overhead per gradient (scripts/bench_peer_overhead.py, 2026-11-27 09:35 and
    10:27 UTC): the table, the count within the goal and the verdict."""
    source, anchor = "peer_overhead", "The latest run, every peer on every model"
    rows = read("peer_overhead.csv")
    first = [r for r in rows if r["run"] == "2026-11-27T0935"]
    numpyro = [Span.printed(r["harness_over_direct"]) for r in rows if r["run"] == "2026-11-27T1027"]
    figures = [Figure(PEERS, source, f"| {r['model']} | {r['peer']} | {r['direct_us_per_grad']} | "
                      f"{r['harness_us_per_grad']} | {r['harness_over_direct']} ({r['quadruple_min']}–"
                      f"{r['quadruple_max']}) |", anchor=anchor, row=True) for r in first]
    ratio = {(r["model"], r["peer"]): Span.printed(r["harness_over_direct"]) for r in first}
    within = [v for v in ratio.values() if v.lo <= 1.1]

    def peer(name):
        return [v for (_, q), v in ratio.items() if q == name]

    figures.append(Figure(PEERS, source, "**{k:d} of the {n:d} medians are within the 1.1× goal** ({lo:.3f}–{hi:.3f})",
                          {"k": count_below(ratio.values(), 1.1, inclusive=True), "n": exact(len(ratio)),
                           "lo": smallest(within), "hi": largest(within)}, anchor))
    figures.append(Figure(
        PEERS, source,
        "**Verdict: every peer is within the 1.1× goal**: nutpie {a:.3f}–{b:.3f} and BlackJAX {c:.3f}–{d:.3f}, the "
        "medians of all four models in one run, and NumPyro {e:.3f}–{f:.3f}, the medians of its four models in the run "
        "right after.",
        {"a": smallest(peer("nutpie")), "b": largest(peer("nutpie")), "c": smallest(peer("blackjax_nuts")),
         "d": largest(peer("blackjax_nuts")), "e": smallest(numpyro), "f": largest(numpyro)}, anchor))
    return figures


# ------------------------------------------------------------------ docs/performance.md
def numpyro_logistic() -> list[Figure]:
    """Our NUTS against NumPyro's per CPU-second on the logistic targets and neal100
    (scripts/bench_peers.py, 2026-11-25): the table's ratios and the sentence under it."""
    source, anchor = "numpyro_logistic", "Measured before our NUTS made Stan's checks"
    figures, cpu, grads = [], {}, {}

    def num(text):  # the table prints thousands with commas
        return f"{float(text):,.0f}" if float(text) >= 1000 else text

    for r in read("numpyro_logistic.csv"):
        name = r["target"] + (f" ({r['note']})" if r["note"] else "")
        span = {k: Span.printed(v) for k, v in r.items() if k not in ("target", "note", "seeds")}
        cpu[r["target"]] = span["ours_ess_per_cpu_s"] / span["numpyro_ess_per_cpu_s"]
        grads[r["target"]] = span["ours_ess_per_1000_grads"] / span["numpyro_ess_per_1000_grads"]
        figures.append(Figure(
            PERFORMANCE, source,
            f"| {name} | {num(r['numpyro_ess_per_cpu_s'])} | {num(r['ours_ess_per_cpu_s'])} | **{{cpu:.2f}}** | "
            f"{r['numpyro_ess_per_1000_grads']} | {r['ours_ess_per_1000_grads']} | {{grads:.2f}} | "
            f"{num(r['gadmala_fast_ess_per_cpu_s'])} | {{gad:.2f}} |",
            {"cpu": cpu[r["target"]], "grads": grads[r["target"]],
             "gad": span["gadmala_fast_ess_per_cpu_s"] / span["numpyro_ess_per_cpu_s"]}, anchor, row=True))
    three = ("logistic_german", "logistic_australian", "neal100")
    figures.append(Figure(
        PERFORMANCE, source,
        "Ours ≥ 1.0× NumPyro per CPU-second is **met on all four**: German, Australian and neal100 "
        "({lo:.2f}–{hi:.2f}×, at the same ESS per gradient, {elo:.2f}–{ehi:.2f}×: the gain is the cost per gradient and per tree) and "
        "Caravan, **{c:.2f}×**",
        {"lo": smallest(cpu[t] for t in three), "hi": largest(cpu[t] for t in three),
         "elo": smallest(grads[t] for t in three), "ehi": largest(grads[t] for t in three),
         "c": cpu["logistic_caravan"]}, anchor))
    return figures


def page_table(page: str, header: str) -> list[dict]:
    """The rows of the table of ``page`` whose header line starts with ``header``, as dicts."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    names = [c.strip() for c in lines[start].strip().strip("|").split("|")]
    return [dict(zip(names, (c.strip() for c in line.strip().strip("|").split("|"))))
            for line in lines[start + 2:next((j for j in range(start + 2, len(lines))
                                              if not lines[j].startswith("|")), len(lines))]]


def gradient_rates() -> list[Figure]:
    """The gradient samplers' rates against the paper's and their overhead beyond the
    evaluations: the ranges the prose gives, from the page's own table."""
    anchor = "### Gradient samplers: the papers' rates"
    table = page_table(PERFORMANCE, "| sampler | target | it/s | iterations | grad/it | overhead/eval")
    cell = {(r["sampler"], r["target"]): r for r in table}

    def col(column, samplers, targets):
        return [Span.printed(cell[(s, t)][column]) for s in samplers for t in targets]

    gad, three = ("gadrwm", "gadmala_fast"), ("gadrwm", "gadmala_fast", "gadmala_exact")
    logistic = ("logistic_german", "logistic_australian")
    return [
        Figure(PERFORMANCE, "its own table",
               "German and Australian (gadRWM and gadMALA fast {lo:.0f}–{hi:.0f}×); not on Caravan (gadRWM {r:.1f}×, "
               "gadMALA fast {f:.1f}×)",
               {"lo": smallest(col("x paper", gad, logistic)), "hi": largest(col("x paper", gad, logistic)),
                "r": Span.printed(cell[("gadrwm", "logistic_caravan")]["x paper"]),
                "f": Span.printed(cell[("gadmala_fast", "logistic_caravan")]["x paper"])}, anchor),
        Figure(PERFORMANCE, "its own table", "not on gp51 (gad samplers {lo:.1f}–{hi:.1f}×,",
               {"lo": smallest(col("overhead/eval", three, ("gp51",))),
                "hi": largest(col("overhead/eval", three, ("gp51",)))}, anchor),
        Figure(PERFORMANCE, "its own table",
               "The sampling phase's {lo:.1f}–{hi:.1f}× on gp51 is thus bounded below by ~2× whatever is done, and the "
               "burn-in's {blo:.1f}–{bhi:.1f}×",
               {"lo": smallest(col("overhead/eval sampling", three, ("gp51",))),
                "hi": largest(col("overhead/eval sampling", three, ("gp51",))),
                "blo": smallest(col("overhead/eval burn_in", three, ("gp51",))),
                "bhi": largest(col("overhead/eval burn_in", three, ("gp51",)))}, anchor),
    ]


FRONTIER_ANCHOR = "**Measured: ahead of the best peer? The gradient goal over seeds 0–4**"


def _frontier_lines(source: str, ours: str, anchor: str) -> tuple[list[Figure], dict, dict, list]:
    """The figures frontier_goal.py prints from a table of ``source``: its rows and the goal's
    lines for configuration ``ours``; with (ratios, min-ESS ratios, warm-up shares) for more."""
    rows = read(f"{source}.csv")
    figures = []
    for r in rows:
        mine, best = float(r["ours"]), float(r["best"])
        figures.append(Figure(SAMPLERS, source, f"| {r['posterior']} | {fmt_count(mine)} | {r['best_peer']} | "
                              f"{fmt_count(best)} | {(r['ratio'] or '–').replace('inf', '∞')} |", anchor=anchor,
                              row=True))
    ratio = _frontier_ratios(source)
    values = list(ratio.values())
    above = [v for v in values if v > 1.5]
    level = [v for v in values if 1 / 1.2 <= v <= 1.2]
    ahead = [v for v in values if v < 1 / 1.2]
    figures.append(Figure(
        SAMPLERS, source, ours + " / best peer gradients: median {m:.2f}, worst {w:.2f} over {n:d} posteriors, "
        "above 1.5 on {k:d} (goal: median ≤ 0.8, none above 1.5): not met",
        {"m": exact(statistics.median(values)), "w": exact(max(values)), "n": exact(len(values)),
         "k": exact(len(above))}, anchor))
    figures.append(Figure(
        SAMPLERS, source, "at the best peer's checkpoint (a ratio within 1.2× of 1) on {l:d} of {n:d}, ahead on {a:d}, "
        "behind on {b:d}", {"l": exact(len(level)), "n": exact(len(values)), "a": exact(len(ahead)),
                           "b": exact(len(values) - len(level) - len(ahead))}, anchor))
    ess = {r["posterior"]: Span.printed(r["ess_ratio"]) for r in rows if r["ess_ratio"]}
    late = [ess[p] for p, v in ratio.items() if v > 1.2]
    shares = [Span.printed(r["warmup_share"]) for r in rows if r["warmup_share"]]
    figures.append(Figure(
        SAMPLERS, source, "min ESS per gradient at the runs' ends, " + ours + " / best peer: median {m:.2f} over {n:d} "
        "posteriors; {lo:.2f}–{hi:.2f}× on the {k:d} where it is behind",
        {"m": median([ess[p] for p in ratio]), "n": exact(len(ratio)), "lo": smallest(late), "hi": largest(late),
         "k": exact(len(late))}, anchor))
    figures.append(Figure(
        SAMPLERS, source, "its warm-up's share of its gradients to b² < 0.01: median {m:.2f} over {n:d} posteriors",
        {"m": median(shares), "n": exact(len(shares))}, anchor))
    return figures, ratio, ess, shares


def frontier_gradients() -> list[Figure]:
    """Issue 46 §3's gradient goal from the shipped baselines (scripts/frontier_goal.py): its
    table, goal lines and the ranges of its findings. Counts are exact; ratios of exact counts."""
    source = "frontier_gradients"
    figures, ratio, ess, shares = _frontier_lines(source, "nuts_lowrank", FRONTIER_ANCHOR)
    values = list(ratio.values())
    ahead = [v for v in values if v < 1 / 1.2]
    behind_one = [v for v in values if 1.2 < v <= 1.5]
    late = [ess[p] for p, v in ratio.items() if v > 1.2]
    figures.append(Figure(
        SAMPLERS, source, "**Behind by one checkpoint ({lo:.2f}–{hi:.2f}×) on {k:d}**",
        {"lo": exact(min(behind_one)), "hi": exact(max(behind_one)), "k": exact(len(behind_one))}, FRONTIER_ANCHOR))
    figures.append(Figure(
        SAMPLERS, source, "min ESS per gradient at the runs' ends is {lo:.2f}–{hi:.2f}× the best peer's",
        {"lo": smallest(late), "hi": largest(late)}, FRONTIER_ANCHOR))
    figures.append(Figure(
        SAMPLERS, source, "the warm-up takes a median {m:.2f} of `nuts_lowrank`'s gradients", {"m": median(shares)},
        FRONTIER_ANCHOR))
    small = [v for v in ahead if v > 0.5]
    figures.append(Figure(
        SAMPLERS, source, "**Ahead on {k:d}**, by one checkpoint ({lo:.2f}–{hi:.2f}×)",
        {"k": exact(len(ahead)), "lo": exact(min(small)), "hi": exact(max(small))}, FRONTIER_ANCHOR))
    return figures


WARMUP_ANCHOR = "**A shorter warm-up, tried (2026-11-30 01:20–01:38 UTC, counts; beside the baselines' sweep).**"


def _frontier_ratios(name: str) -> dict:
    """{posterior: ours / best peer} of a frontier_goal.py table (exact counts; both ∞ left out)."""
    out = {}
    for r in read(f"{name}.csv"):
        ours, best = float(r["ours"]), float(r["best"])
        if not (math.isinf(ours) and math.isinf(best)):
            out[r["posterior"]] = 0.0 if math.isinf(best) else (INF if math.isinf(ours) else ours / best)
    return out


def frontier_warmup() -> list[Figure]:
    """The shorter warm-up tried on 56 posteriors: nuts_lowrank at 250 iterations against the
    baselines' peers (at 500), and against nutpie and nutpie's low rank at 250 too."""
    unequal, both = _frontier_ratios("frontier_warmup250"), _frontier_ratios("frontier_warmup250_both")
    above = {p: v for p, v in both.items() if v > 1.5}
    return [
        Figure(SAMPLERS, "frontier_warmup250", "meets the gradient goal on these {n:d}: median {m:.2f}, worst {w:.2f}, "
               "none above 1.5", {"n": exact(len(unequal)), "m": exact(statistics.median(unequal.values())),
                                  "w": exact(max(unequal.values()))}, WARMUP_ANCHOR),
        Figure(SAMPLERS, "frontier_warmup250_both", "the median is {m:.2f} again, with {k:d} posteriors above 1.5 "
               "(M0 at {a:.2f}, Rate_1 {b:.2f}, Rate_2 {c:.2f}, dogs_hierarchical {d:.2f}",
               {"m": exact(statistics.median(both.values())), "k": exact(len(above)),
                "a": exact(both["M0_data-M0_model"]), "b": exact(both["Rate_1_data-Rate_1_model"]),
                "c": exact(both["Rate_2_data-Rate_2_model"]), "d": exact(both["dogs-dogs_hierarchical"])},
               WARMUP_ANCHOR),
    ]


CONVERGED_ANCHOR = "### The converged warm-up against the best peer"


def frontier_converged() -> list[Figure]:
    """nuts_converged (the warm-up that ends once its metric has converged) against the
    baselines' peers on their posteriors (scripts/frontier_goal.py --ours-runs)."""
    source = "frontier_converged"
    figures, ratio, _, _ = _frontier_lines(source, "nuts_converged", CONVERGED_ANCHOR)
    values = list(ratio.values())
    figures.append(Figure(
        SAMPLERS, source, "**The median goal is met: {m:.2f}** (≤ 0.8) over {n:d} posteriors, ahead of the best peer "
        "on {a:d} of them", {"m": exact(statistics.median(values)), "n": exact(len(values)),
                             "a": exact(sum(v < 1 / 1.2 for v in values))}, CONVERGED_ANCHOR))
    own = list(_frontier_ratios("frontier_converged_self").values())
    figures.append(Figure(
        SAMPLERS, "frontier_converged_self", "a median ratio of {m:.2f}, ahead on {a:d} of {n:d}",
        {"m": exact(statistics.median(own)), "a": exact(sum(v < 1 / 1.2 for v in own)), "n": exact(len(own))},
        CONVERGED_ANCHOR))
    return figures


JITTER_ANCHOR = "- **Tried 2026-12-01: a wider step-size jitter after the warm-up (0.5 an option, 0.3 the"


def _jitter_figures(suffix: str) -> tuple[dict, Span, dict]:
    """(ratios to the best peer, the median min-ESS ratio, the seed-by-seed counts) of
    nuts_converged with a sampling_jitter: frontier_converged_sj<suffix>.csv and
    ablation_sampling_jitter<suffix>.csv (suffix "" for 0.5)."""
    source = f"frontier_converged_sj{suffix or '05'}"
    ratio = _frontier_ratios(source)
    ess = median([Span.printed(r["ess_ratio"]) for r in read(f"{source}.csv") if r["posterior"] in ratio])
    seeds: dict = {}
    for r in read(f"ablation_sampling_jitter{suffix}.csv"):
        seeds.setdefault(r["posterior"], []).append(r)
    moves, void_before, void_after = [], 0, 0
    for group in seeds.values():
        before = statistics.median(float(r["before"]) for r in group)
        after = statistics.median(float(r["after"]) for r in group)
        if not (math.isinf(before) and math.isinf(after)):
            moves.append(0.0 if math.isinf(before) else (INF if math.isinf(after) else after / before))
        void_before += sum(bool(r["before_void"]) for r in group)
        void_after += sum(bool(r["after_void"]) for r in group)
    finite = [v for v in moves if 0 < v < INF]
    up, down = sum(v > 1.2 for v in moves), sum(v < 1 / 1.2 for v in moves)
    counts = {"n": exact(up + down), "f": exact(down), "u": exact(up),
              "g": exact(math.exp(statistics.mean(math.log(v) for v in finite))),
              "vb": exact(void_before), "va": exact(void_after)}
    return ratio, ess, counts


def sampling_jitter() -> list[Figure]:
    """nuts_converged with sampling_jitter 0.5 and 0.3: against the best of the eight peers
    (frontier_goal.py) and, seed by seed, against its run with the default jitter
    (ablation_seeds.py). Counts are exact; ratios of exact counts."""
    wide, wide_ess, wide_seeds = _jitter_figures("")
    mid, mid_ess, mid_seeds = _jitter_figures("03")
    return [
        Figure(SAMPLERS, "frontier_converged_sj05", "Above 1.5: **{k:d} posteriors, not 6**",
               {"k": exact(sum(v > 1.5 for v in wide.values()))}, JITTER_ANCHOR),
        Figure(SAMPLERS, "frontier_converged_sj05", "median ratio rises from 0.69 to **{m:.2f}**, and the min ESS per "
               "gradient at the runs' ends falls to a median {e:.2f} of the best peer's",
               {"m": exact(statistics.median(wide.values())), "e": wide_ess}, JITTER_ANCHOR),
        Figure(SAMPLERS, "ablation_sampling_jitter", "move by more than a checkpoint's spacing on {n:d} posteriors "
               "({f:d} fewer gradients, {u:d} more; geometric mean of the finite median ratios {g:.2f}), and {vb:d} "
               "seeds voided before, {va:d} after", wide_seeds, JITTER_ANCHOR),
        Figure(SAMPLERS, "frontier_converged_sj03", "against the best peer stays **{m:.2f}** (0.69 at 0.1) and the min "
               "ESS per gradient at a median {e:.2f} of the best peer's; above 1.5 on **{k:d}**",
               {"m": exact(statistics.median(mid.values())), "e": mid_ess,
                "k": exact(sum(v > 1.5 for v in mid.values()))}, JITTER_ANCHOR),
        Figure(SAMPLERS, "ablation_sampling_jitter03", "{n:d} posteriors move by more than a checkpoint's spacing ({f:d} "
               "fewer gradients, {u:d} more; geometric mean of the finite median ratios {g:.2f}), seeds voided {vb:d} "
               "before, {va:d} after", mid_seeds, JITTER_ANCHOR),
    ]


def frontier_new_peers() -> list[Figure]:
    """The peers of 2026 (walnutpie, GIST, BlackJAX's staged Fisher adaptation) against the best
    of the five older peer configurations of the baselines (scripts/frontier_goal.py --ours):
    the median ratio, and on how many posteriors each is ahead (< 1/1.2) or level (within 1.2×)."""
    figures = []
    for name, words in (("walnutpie", "walnutpie needs a median {m:.2f}× the best's gradients over {n:d} posteriors "
                                      "(ahead on {a:d}, level on {l:d})"),
                        ("blackjax_gist", "GIST {m:.2f}× over {n:d} (ahead on {a:d}, level on {l:d})"),
                        ("blackjax_nuts_fisher", "BlackJAX's staged Fisher adaptation {m:.2f}× over {n:d} "
                                                 "(ahead on {a:d}, level on {l:d})")):
        ratio = list(_frontier_ratios(f"frontier_{name}").values())
        figures.append(Figure(SAMPLERS, f"frontier_{name}", words,
                              {"m": exact(statistics.median(ratio)), "n": exact(len(ratio)),
                               "a": exact(sum(v < 1 / 1.2 for v in ratio)),
                               "l": exact(sum(1 / 1.2 <= v <= 1.2 for v in ratio))}, FRONTIER_ANCHOR))
    return figures


FRONTIER_CPU_ANCHOR = "**Measured: the CPU-second goal against every peer, alone on the machine**"


def frontier_cpu() -> list[Figure]:
    """Issue 46 §3's CPU-second goal on seed 0, measured alone (scripts/frontier_goal.py --cost
    cpu over docs/tables/cpu_alone_seed0.parquet): its table and its goal line. Seconds and
    ratios as printed (a ratio of unrounded seconds, to 2 decimals)."""
    source = "frontier_cpu_seconds"
    rows = read(f"{source}.csv")
    figures = [Figure(SAMPLERS, source, f"| {r['posterior']} | {r['ours'].replace('inf', '∞')} | {r['best_peer']} | "
                      f"{r['best'].replace('inf', '∞')} | {(r['ratio'] or '–').replace('inf', '∞')} |",
                      anchor=FRONTIER_CPU_ANCHOR, row=True) for r in rows]
    ratio = [Span.printed(r["ratio"]) for r in rows if r["ratio"]]
    ahead = count_below(ratio, 1.0)
    figures.append(Figure(
        SAMPLERS, source, "nuts_lowrank / best peer CPU seconds: median {m:.2f}, worst {w:.2f} over {n:d} posteriors; "
        "ahead (< 1) of every peer on {a:d} ({pct:.0f} %)",
        {"m": median(ratio), "w": largest(ratio), "n": exact(len(ratio)), "a": ahead,
         "pct": Span(100 * ahead.lo / len(ratio), 100 * ahead.hi / len(ratio))}, FRONTIER_CPU_ANCHOR))
    behind = [r for r in rows if r["ratio"] and Span.printed(r["ratio"]).hi >= 1.0]
    never = [r for r in behind if r["ratio"] == "inf"]
    later = [r for r in behind if r["ratio"] != "inf" and Span.printed(r["grads_ratio"]).lo > 1.2]
    figures.append(Figure(
        SAMPLERS, source, "ahead of every peer on {a:d} of the {n:d} posteriors compared ({pct:.0f} %), the goal being "
        "90 %. Of the {k:d} not ahead, {i:d} never get there with a right answer, {g:d} are a checkpoint or more "
        "behind in gradients and {c:d} are dearer per gradient at the same checkpoint",
        {"a": ahead, "n": exact(len(ratio)), "pct": Span(100 * ahead.lo / len(ratio), 100 * ahead.hi / len(ratio)),
         "k": count_not_below(ratio, 1.0), "i": exact(len(never)),
         "g": Span(len(later) - sum(Span.printed(r["ratio"]).lo < 1.0 for r in later), len(later)),
         "c": Span(len(behind) - len(never) - len(later) - sum(Span.printed(r["ratio"]).lo < 1.0 for r in behind
                                                             if r not in later and r not in never),
                   len(behind) - len(never) - len(later))}, FRONTIER_CPU_ANCHOR))
    before = [r for r in read("frontier_cpu_seconds_c69809d.csv") if r["ratio"]]  # the first sweep's table
    nutpie = sum(r["best_peer"].startswith("nutpie") for r in before)
    figures.append(Figure(SAMPLERS, "frontier_cpu_seconds_c69809d", "the best peer on {k:d} of the {n:d} posteriors compared in "
                          "the first sweep", {"k": exact(nutpie), "n": exact(len(before))}, FRONTIER_CPU_ANCHOR))
    first = {r["posterior"]: r["ours"] for r in before}
    change = [Span.printed(r["ours"]) / Span.printed(first[r["posterior"]]) for r in rows
              if r["ours"] not in ("", "inf") and first.get(r["posterior"]) not in (None, "", "inf")]
    figures.append(Figure(SAMPLERS, "frontier_cpu_seconds_c69809d", "own CPU seconds to the crossing fell by a median "
                          "{m:.2f}× over the {n:d} posteriors it reaches in both sweeps",
                          {"m": median(change), "n": exact(len(change))}, FRONTIER_CPU_ANCHOR))
    converged = [Span.printed(r["ratio"]) for r in read("frontier_cpu_converged.csv") if r["ratio"]]
    ahead = count_below(converged, 1.0)
    figures.append(Figure(
        SAMPLERS, "frontier_cpu_converged", "ahead of every peer on {a:d} of the {n:d} ({pct:.0f} %), median {m:.2f}",
        {"a": ahead, "n": exact(len(converged)), "m": median(converged),
         "pct": Span(100 * ahead.lo / len(converged), 100 * ahead.hi / len(converged))}, FRONTIER_CPU_ANCHOR))
    return figures


# ------------------------------------------------------------------ every figure, and the check
BUILDERS = (lowrank_updates, lowrank_updates_1733, welford_inflation, ablation_seed0, cpu_goal_figures,
            behind_seeds, posteriordb_seed0, peer_overhead, numpyro_logistic, gradient_rates, frontier_gradients,
            frontier_warmup, frontier_converged, sampling_jitter, frontier_new_peers, frontier_cpu)
NOT_FILES = ("its own table", "computed")


@lru_cache(maxsize=None)
def figures() -> tuple:
    return tuple(f for build in BUILDERS for f in build())


def sources_of(fig: Figure) -> set:
    return {name.strip() for name in fig.source.split(",")} - set(NOT_FILES)


def sources() -> list[str]:
    """The files (names without .csv) that figures come from."""
    return sorted(set().union(*(sources_of(f) for f in figures())))


def check(pages: dict | None = None) -> list[str]:
    """What differs between the pages and the figures recomputed: a sentence not found on its
    page, a number that disagrees, and a headline figure of :data:`PAGES` that no template
    covers. ``pages`` ({path: text}) replaces the files' text (the tests use it)."""
    pages = dict(pages or {})
    for page in PAGES:
        pages.setdefault(page, (ROOT / page).read_text(encoding="utf-8"))
    problems, covered = [], {page: [] for page in pages}
    for fig in figures():
        text = pages[fig.page]
        start, end = region(text, fig.anchor)
        if start < 0:
            problems.append(f"{fig.page}: anchor not found: {fig.anchor!r}")
            continue
        matches = list(fig.pattern().finditer(text, start, end))
        if not matches:
            problems.append(f"{fig.page}: not found ({fig.source}): {fig.text()}")
        for m in matches:
            covered[fig.page].append((m.start(), m.end()))
            wrong = [f"{name} is {m.group(name)}, recomputed {fig.values[name].show(spec or '.2f')}"
                     for name, spec in fig.fields() if not fig.values[name].agrees(m.group(name))]
            if wrong:
                problems.append(f"{fig.page}: {'; '.join(wrong)} ({fig.source}): {fig.text()}")
    for page in PAGES:
        text = pages[page]
        for pattern in HEADLINE_PATTERNS:
            for m in re.finditer(pattern, text):
                if not any(a <= m.start() and m.end() <= b for a, b in covered[page]):
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append(f"{page}:{line}: a headline figure without a source: {m.group(0)!r}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="*", help="files of docs/tables (names, .csv optional) whose figures to print")
    parser.add_argument("--tables", action="store_true", help="print the tables' rows too")
    parser.add_argument("--check", action="store_true", help="compare with the pages; exit 1 on a difference")
    args = parser.parse_args(argv)
    known = sources()
    wanted = {name.removesuffix(".csv") for name in args.source}
    for name in sorted(wanted - set(known)):
        print(f"headlines.py: source: unknown file {name!r} of docs/tables (known: {', '.join(known)})",
              file=sys.stderr)
        return 2
    if args.check:
        problems = check()
        print("\n".join(problems + [f"{len(figures())} figures, {len(problems)} differences"]))
        return 1 if problems else 0
    page = None
    for fig in figures():
        if (fig.row and not args.tables) or (wanted and not wanted & sources_of(fig)):
            continue
        if fig.page != page:
            page = fig.page
            print(f"\n{page}")
        print(f"  [{fig.source}] {fig.text()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
