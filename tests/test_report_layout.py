"""The layout of ckam_bench/report (issue 24): no import cycle among its modules, and one
module per paper named ``paper_<name>.py`` after the paper's documentation page."""

from __future__ import annotations

import ast
from pathlib import Path

import ckam_bench.report

REPORT = Path(ckam_bench.report.__file__).parent
PACKAGE = "ckam_bench.report"
PAPERS = Path(__file__).resolve().parents[1] / "docs" / "papers"


def report_imports(path: Path) -> set[str]:
    """The ``ckam_bench.report`` modules ``path`` imports, at module level or inside a
    function (both count: a function-level import only hides a cycle)."""
    modules = {p.stem for p in REPORT.glob("*.py")} - {"__init__"}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x / from .x import y
                base = ".".join([PACKAGE, base]).rstrip(".")
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith(PACKAGE + "."):
                first = name[len(PACKAGE) + 1:].split(".")[0]
                if first in modules:
                    found.add(first)
    return found - {path.stem}


def test_no_import_cycle_among_report_modules():
    """A depth-first search over the import graph of the report's modules (the package's
    ``__init__`` only re-exports and is left out) finds no back edge."""
    graph = {p.stem: report_imports(p) for p in REPORT.glob("*.py") if p.stem != "__init__"}
    assert graph["paper_ckam"] >= {"aggregate", "drawing"}  # the parser sees the imports
    state: dict[str, str] = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != "open", "import cycle: " + " -> ".join(path + [nxt])
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_the_parser_finds_a_function_level_cycle(tmp_path, monkeypatch):
    """The check above would catch a cycle hidden inside a function."""
    a = tmp_path / "aggregate.py"
    a.write_text("def f():\n    from ckam_bench.report.paper_ckam import FIGURES\n")
    assert report_imports(a) == {"paper_ckam"}
    b = tmp_path / "tables.py"
    b.write_text("from ckam_bench.report import aggregate, html\nfrom . import ranking\n")
    assert report_imports(b) == {"aggregate", "html", "ranking"}


def test_each_paper_has_its_report_module_named_after_it():
    papers = sorted(p.stem for p in PAPERS.glob("*.md"))
    assert "ckam" in papers and len(papers) >= 4
    modules = sorted(p.stem[len("paper_"):] for p in REPORT.glob("paper_*.py"))
    assert modules == papers
    assert not (REPORT / "figures.py").exists()
