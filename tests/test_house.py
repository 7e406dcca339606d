"""The code stays in pieces a reader can hold: no module of the package grows past
MODULE_LINES lines (the few listed below say why they are larger, and may not grow further),
no class past CLASS_LINES, and the runner's loop class stays small (its pieces live in
budget.py, tally.py, runstatus.py and snapshot.py)."""

import ast
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
    (runner,) = [node for name, node in _classes() if name == "runner.py" and node.name == "Runner"]
    assert runner.end_lineno - runner.lineno + 1 <= RUNNER_LINES


def test_commands_start_without_the_figure_stack():
    """Every command imports the end-of-sweep callback (ckam_bench.report.callback): the
    report package must not pull matplotlib and the figure modules in with it (a second per
    start, paid by every run of a sweep and every CLI test)."""
    import subprocess
    import sys

    code = ("import sys, ckam_bench.cli, ckam_bench.report.callback, ckam_bench.stationarity; "
            "print(sorted(m for m in ('matplotlib', 'ckam_bench.report.paper_ckam', "
            "'ckam_bench.report.aggregate') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
