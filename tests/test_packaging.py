"""The package metadata lists every subpackage and every command (an editable install would
hide a missing one: its finder serves the whole source tree)."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
META = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_subpackage_is_listed():
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "ckam_bench").rglob("__init__.py")}
    listed = set(META["tool"]["setuptools"]["packages"])
    assert found <= listed, f"not in pyproject.toml packages: {sorted(found - listed)}"


def test_every_command_module_is_a_script():
    scripts = set(META["project"]["scripts"].values())
    # The ckam-bench script (ckam_bench.commands.entry:main) answers --help, --version and list without
    # importing the harness and hands every other command line to ckam_bench.commands.cli:main.
    if "cli.main()" in (ROOT / "ckam_bench" / "commands" / "entry.py").read_text():
        scripts.add("ckam_bench.commands.cli:main")
    for path in (ROOT / "ckam_bench").rglob("*.py"):
        if re.search(r"^def main\(", path.read_text(), re.M):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            assert f"{module}:main" in scripts, f"{module}:main has no [project.scripts] entry"
