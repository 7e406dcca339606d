"""The code stays in pieces a reader can hold: no module of the package grows past
MODULE_LINES lines (the few listed below say why they are larger, and may not grow further),
no class past CLASS_LINES, and the runner's loop class stays small (its pieces live in
budget.py, tally.py, runstatus.py and snapshot.py)."""

import ast
import functools
import re
import subprocess
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
    # what a new interpreter imports: a new interpreter (never tests/clirun.py's forks)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# ---------------------------------------------------------------------------- layers
FLOORS = (
    # (floor, the modules and packages on it, below ckam_bench.), lowest first
    ("helpers", ("jit", "kernels", "schedules", "data", "reference_providers", "files", "caches")),
    ("adaptation", ("adaptation",)),
    ("targets", ("targets",)),
    ("reference_lookup", ("reference_lookup",)),
    ("metrics", ("metrics",)),
    ("samplers", ("samplers",)),
    ("posteriordb", ("posteriordb",)),
    ("engine", ("engine",)),
    ("commands", ("commands", "posteriordb.build")),  # build: a maintainer's command (atomic writes)
    ("report", ("report", "interop")),  # interop: stored runs as DataTrees, read as the report reads them
    ("checks", ("checks",)),
    ("facade", ("", "api", "_moved")),  # "": the package ckam_bench itself (its __init__ only)
)
"""The floors of the house, lowest first (docs/layout.md): a module imports only from its own
floor or below, so a lower floor never reaches up (the targets do not import the posteriordb
suite built on them: it hands its references down through ckam_bench.reference_providers).
Every module of the package has a floor: the longest prefix listed here that it falls under."""


def _modules_by_name() -> dict[str, Path]:
    modules = {}
    for path in _modules():
        name = ".".join(("ckam_bench", *path.relative_to(PACKAGE).with_suffix("").parts))
        modules[name.removesuffix(".__init__")] = path
    return modules


def _floor(module: str) -> int | None:
    """The floor of ``module`` (its index in :data:`FLOORS`), None when it is on none."""
    inside = module.removeprefix("ckam_bench").removeprefix(".")
    best, floor = -1, None
    for i, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            under = inside == prefix or (prefix != "" and inside.startswith(prefix + "."))
            if under and len(prefix) > best:
                best, floor = len(prefix), i
    return floor


@functools.cache
def _import_graph() -> dict[str, frozenset[str]]:
    """Every import of a ckam_bench module by another, of the whole package (the package
    ``ckam_bench`` and every subpackage's ``__init__`` included), at module level or inside a
    function (a lazy import is still a dependency). An import of one of the module's own
    ancestor packages is left out: Python imports those before the module anyway, so it is no
    choice of the code (``import ckam_bench`` in a command, ``from ckam_bench.posteriordb import
    SUITE`` in a posteriordb module). A package importing its own submodules is kept: the
    circle posteriordb -> models -> subset -> targets.pymc -> posteriordb went through one."""
    modules = _modules_by_name()

    def resolve(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                raise AssertionError(f"{module}: relative import (the house test reads absolute ones)")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ckam_bench"):
                found = [resolve(f"{node.module}.{a.name}") for a in node.names]
            elif isinstance(node, ast.Import):
                found = [resolve(a.name) for a in node.names if a.name.startswith("ckam_bench")]
            else:
                continue
            graph[module] |= {t for t in found if t and t != module and not module.startswith(t + ".")}
    return {m: frozenset(t) for m, t in graph.items()}


def test_every_module_is_on_a_floor():
    homeless = sorted(m for m in _modules_by_name() if _floor(m) is None)
    assert not homeless, f"put these modules on a floor of FLOORS (and docs/layout.md): {homeless}"


def test_floors_import_downward_only():
    graph = _import_graph()
    upward = sorted(f"{m} ({FLOORS[_floor(m)][0]}) -> {t} ({FLOORS[_floor(t)][0]})"
                    for m, targets in graph.items() for t in targets
                    if None not in (_floor(m), _floor(t)) and _floor(m) < _floor(t))
    assert not upward, "imports that call a floor above (docs/layout.md):\n" + "\n".join(upward)


def test_the_house_test_sees_what_it_guards():
    """The graph holds lazy imports, the package's own ``__init__`` files and a package's
    imports of its submodules, and the floors order what the issue named."""
    graph = _import_graph()
    assert "ckam_bench.commands.config" in graph["ckam_bench"]  # the package itself, module level
    assert "ckam_bench.api" in graph["ckam_bench"]  # inside a function
    assert "ckam_bench.posteriordb.highdim" in graph["ckam_bench.posteriordb"]  # its own submodule
    assert "ckam_bench.posteriordb" not in graph["ckam_bench.posteriordb.highdim"]  # its ancestor
    assert _floor("ckam_bench.targets.pymc") < _floor("ckam_bench.reference_lookup") \
        < _floor("ckam_bench.posteriordb") < _floor("ckam_bench.posteriordb.build")
    assert _floor("ckam_bench.reference_providers") < _floor("ckam_bench.targets.pymc")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of two or more."""
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
    return cycles


def test_no_import_cycles():
    """No two modules of the package import each other, directly or in a circle, even inside
    functions; a lower floor reaching up to a module that imports it back is one."""
    cycles = _cycles(_import_graph())
    assert not cycles, f"modules that import each other: {cycles}"


def test_a_circle_is_seen():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({**graph, "c": set()}) == []


NAMES_NOT_PATHS = {
    # module: the names in it spelled like an old module path that are no module path
    "commands/plugins.py": {"ckam_bench.plugins"},  # the plugins' entry-point group (issue 43 §1)
}


def test_the_package_itself_uses_the_new_paths():
    from ckam_bench._moved import MOVED

    old = re.compile(r"\b(" + "|".join(re.escape(m) for m in MOVED) + r")\b(?![./\w])")
    users = sorted(f"{name}: {found}" for path in _modules()
                   if (name := path.relative_to(PACKAGE).as_posix()) != "_moved.py"
                   for found in set(old.findall(path.read_text())) - NAMES_NOT_PATHS.get(name, set()))
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
