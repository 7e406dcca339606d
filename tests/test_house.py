"""The code stays in pieces a reader can hold: no module of the package grows past
MODULE_LINES lines (the few listed below say why they are larger, and may not grow further),
no class past CLASS_LINES, and the runner's loop class stays small (its pieces live in
budget.py, tally.py, runstatus.py and snapshot.py)."""

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ckam_bench"
MODULE_LINES = 700
CLASS_LINES = 250
RUNNER_LINES = 200
LARGER = {
    # path: (most lines, why it is one module)
    "samplers/kameleon.py": (900, "one paper family (KAM, cKAM, KAMH) in one module, as every "
                                  "sampler family; its Python steps call compiled helpers"),
}


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_is_a_wall():
    too_long = {}
    for path in _modules():
        name = path.relative_to(PACKAGE).as_posix()
        limit = LARGER.get(name, (MODULE_LINES, ""))[0]
        lines = len(path.read_text().splitlines())
        if lines > limit:
            too_long[name] = f"{lines} lines > {limit}"
    assert not too_long, f"split these modules (or say why not in LARGER): {too_long}"


def test_the_listed_exceptions_still_need_to_be():
    for name, (limit, why) in LARGER.items():
        path = PACKAGE / name
        assert path.exists(), f"{name} is gone: remove it from LARGER"
        assert why
        assert len(path.read_text().splitlines()) > MODULE_LINES, f"{name} fits now: remove it from LARGER"


def _classes():
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                yield path.relative_to(PACKAGE).as_posix(), node


def test_no_class_is_a_wall():
    too_long = {f"{name}:{node.name}": node.end_lineno - node.lineno + 1 for name, node in _classes()
                if node.end_lineno - node.lineno + 1 > CLASS_LINES}
    assert not too_long, f"classes over {CLASS_LINES} lines: {too_long}"


def test_the_runner_class_stays_small():
    (runner,) = [node for name, node in _classes() if name == "engine/runner.py" and node.name == "Runner"]
    assert runner.end_lineno - runner.lineno + 1 <= RUNNER_LINES


def test_commands_start_without_the_figure_stack():
    """Every command imports the end-of-sweep callback (ckam_bench.report.callback): the
    report package must not pull matplotlib and the figure modules in with it (a second per
    start, paid by every run of a sweep and every CLI test)."""
    import subprocess
    import sys

    code = ("import sys, ckam_bench.commands.cli, ckam_bench.report.callback, ckam_bench.checks.stationarity; "
            "print(sorted(m for m in ('matplotlib', 'ckam_bench.report.paper_ckam', "
            "'ckam_bench.report.aggregate') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# ---------------------------------------------------------------------------- layers
LAYERS = ("base", "engine", "commands", "report", "checks", "facade")
"""Lowest first: a module imports only from its own layer or below (docs/layout.md)."""


def _layer(module: str) -> str:
    parts = module.split(".")
    if module in ("ckam_bench", "ckam_bench.api", "ckam_bench._moved"):
        return "facade"
    if module == "ckam_bench.interop":
        return "report"  # stored runs as DataTrees: read like the report reads them
    if module == "ckam_bench.posteriordb.build":
        return "commands"  # a maintainer's command (writes package data atomically)
    return {"engine": "engine", "commands": "commands", "report": "report",
            "checks": "checks"}.get(parts[1], "base")


def _import_graph() -> dict[str, set[str]]:
    """Every import of a ckam_bench module by another, at module level or inside a function
    (a lazy import is still a dependency); the bare package ``ckam_bench`` (which every import
    runs first) and a package's own submodules (its re-exports) are left out."""
    modules = {}
    for path in _modules():
        name = ".".join(("ckam_bench", *path.relative_to(PACKAGE).with_suffix("").parts))
        modules[name.removesuffix(".__init__")] = path

    def resolve(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("ckam_bench"):
                found = [resolve(f"{node.module}.{a.name}") for a in node.names]
            elif isinstance(node, ast.Import):
                found = [resolve(a.name) for a in node.names if a.name.startswith("ckam_bench")]
            else:
                continue
            graph[module] |= {t for t in found if t and t != "ckam_bench" and t != module
                              and not t.startswith(module + ".")}
    return graph


def test_layers_import_downward_only():
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    upward = sorted(f"{m} -> {t}" for m, targets in _import_graph().items() for t in targets
                    if rank[_layer(m)] < rank[_layer(t)])
    assert not upward, "imports that call a layer above (docs/layout.md):\n" + "\n".join(upward)


def test_no_import_cycles():
    graph = _import_graph()
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, f"modules that import each other: {cycles}"


def test_the_package_itself_uses_the_new_paths():
    from ckam_bench._moved import MOVED

    old = re.compile(r"\b(" + "|".join(re.escape(m) for m in MOVED) + r")\b(?![./\w])")
    users = sorted(f"{path.relative_to(PACKAGE)}: {found}" for path in _modules()
                   if path.name != "_moved.py" for found in set(old.findall(path.read_text())))
    assert not users, f"old module paths inside the package: {users}"


def test_old_module_paths_still_import():
    """A plugin or script written for the flat layout (ckam_bench.runner, ckam_bench.cli, …)."""
    import importlib
    import warnings

    from ckam_bench._moved import MOVED

    for old, new in MOVED.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert importlib.import_module(old) is importlib.import_module(new), old
        assert any(issubclass(w.category, DeprecationWarning) for w in caught) or old in sys.modules
