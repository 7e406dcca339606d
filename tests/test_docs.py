"""The documentation cannot drift from the code: every command line shown in README.md and
docs/ names only options and keys that exist (checked the way ``ckam-bench`` checks a command
line before running), and the site builds with no warning (slow; CI also builds it)."""

import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from ckam_bench.commands.overrides import problem
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXAMPLE_CONF = ROOT / "examples" / "plugin_package" / "my_plugin" / "conf"
PRIMARY = {"ckam-bench": "config", "ckam-bench-check": "check", "ckam-bench-reference": "reference"}
PLACEHOLDER = re.compile(r"[<>…]|\.\.\.|\bNAME\b|\bGROUP\b|\bKEY\b|\bOPTION\b|\$\{?[A-Z]")


def command_lines():
    """(page, command line) for every ckam-bench / -check / -reference call in a shell block."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", text, flags=re.S):
            block = block.replace("\\\n", " ")
            for line in block.splitlines():
                line = line.split(" #", 1)[0].strip()
                for part in re.split(r"&&|;|\|", line):
                    words = part.strip().split()
                    while words and "=" in words[0] and not words[0].startswith("-"):
                        words = words[1:]  # VAR=value prefixes
                    if words and words[0] in PRIMARY and not PLACEHOLDER.search(part):
                        found.append((page.relative_to(ROOT).as_posix(), " ".join(words)))
    return found


COMMANDS = command_lines()


def test_the_docs_show_commands():
    assert len(COMMANDS) > 30


@pytest.mark.parametrize("page, line", COMMANDS, ids=[f"{p}:{c[:60]}" for p, c in COMMANDS])
def test_every_documented_command_names_existing_options_and_keys(page, line):
    words = shlex.split(line)
    command, args = words[0], words[1:]
    if args[:1] in (["--help"], ["-h"], ["--version"], ["list"], ["--cfg"], ["-c"]):
        return
    args = [a for a in args if not a.startswith("hydra.searchpath")]
    args.append(f"hydra.searchpath=[file://{EXAMPLE_CONF}]")  # the example plugin's options
    found = problem(args, config_name=PRIMARY[command], command=command)
    assert found is None, f"{page}: `{line}`: {found}"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists(),
                    reason="needs the docs extra (pip install -e '.[docs]'); CI installs it")
def test_the_site_builds_without_a_warning(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    proc = clirun.run([str(mkdocs if mkdocs.exists() else "mkdocs"), "build", "--strict",
                           "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                      capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "index.html").is_file()


def test_the_lock_file_is_described_as_it_behaves(tmp_path):
    """``.lock`` stays after a run (ckam_bench.engine.rundir never removes it): the docs say so."""
    from ckam_bench.engine import rundir

    lock = rundir.FolderLock(tmp_path).acquire()
    lock.release()
    assert (tmp_path / rundir.LOCK).is_file()
    text = (ROOT / "docs" / "outputs.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `.lock`"))
    assert "stays after the run" in row and "present while a process runs" not in row
