"""What a new user reads (issue 43 §6.6): the test command and count in docs/running.md, the
compile time and cache in docs/pymc.md, no pytensor BLAS warning on a PyMC build, and a
``loops_note`` that is true for any sampler. (SBC's progress line: tests/test_sbc.py.)"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from ckam_bench import jit
from ckam_bench.engine.tally import Tally

ROOT = Path(__file__).resolve().parents[1]
PYTENSOR_BLAS = (  # pytensor's own text (pytensor/link/c/cmodule.py), its first line
    "PyTensor could not link to a BLAS installation. Operations that might benefit from BLAS "
    "will be severely degraded.\nThis usually happens when PyTensor is installed via pip.")


def _bash_lines(markdown: str) -> list[str]:
    return [line for block in re.findall(r"```bash\n(.*?)```", markdown, re.S)
            for line in block.splitlines()]


def test_running_md_installs_what_the_readme_installs_for_the_tests():
    readme = [line for line in _bash_lines((ROOT / "README.md").read_text()) if "pytest" in line]
    running = (ROOT / "docs" / "running.md").read_text()
    assert readme and readme[0] in _bash_lines(running)  # the same command, all extras
    assert not [line for line in _bash_lines(running) if "pytest" in line and line != readme[0]]
    assert "~1180" not in running and "7.5 min" not in running
    assert "`python -m pytest --collect-only -q | tail -1`" in running  # where the count comes from


def test_pymc_md_says_what_the_compile_costs_and_where_the_cache_is():
    pytest.importorskip("pytensor")
    from pytensor import config
    from pytensor.link.numba.cache import NUMBA_CACHE_PATH

    text = (ROOT / "docs" / "pymc.md").read_text()
    assert "tens of" not in text and "minutes" in text
    assert "`base_compiledir`" in text and "`~/.pytensor` by default" in text
    assert Path(NUMBA_CACHE_PATH).is_relative_to(Path(config.base_compiledir))


def test_the_blas_filter_is_targeted():
    pytest.importorskip("pymc")
    from ckam_bench.targets.pymc import quiet_blas_warning

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_blas_warning()
        warnings.warn(PYTENSOR_BLAS, UserWarning)
        warnings.warn("another warning", UserWarning)
        warnings.warn(PYTENSOR_BLAS, RuntimeWarning)  # same text, other category: kept
    assert [(w.category, str(w.message)[:15]) for w in seen] == [
        (UserWarning, "another warning"), (RuntimeWarning, PYTENSOR_BLAS[:15])]


def test_a_pymc_target_build_does_not_emit_the_blas_warning():
    """Building a PyMC target, then pytensor's BLAS probe (which warns on a machine where
    pytensor finds no BLAS to link, as after a pip install): no BLAS warning."""
    pytest.importorskip("pymc")
    from pytensor.link.c.cmodule import default_blas_ldflags

    from ckam_bench.targets.pymc import PyMCModel

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        target = PyMCModel(f"{ROOT / 'tests' / 'pymc_models.py'}:hierarchical")
        target.log_density(target.start)
        default_blas_ldflags()
    assert not [w for w in seen if "BLAS" in str(w.message)], [str(w.message) for w in seen]


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_the_loops_note_is_true_for_any_sampler(monkeypatch):
    """A sampler (a plugin's, say) that ran Python loops on a target with a compiled density:
    the note names it and what is known, and says nothing of KAM."""
    monkeypatch.setenv(jit.ENV, "1")

    class Compiled:
        name = "ring"

        def jit_log_density(self):
            return None

    tally = Tally(("sampling",), 2, 10, 10, 10)
    tally.blocks, tally.compiled_blocks = 4, 0
    ran, note = tally.loops(Compiled(), "my_sampler")
    assert ran == "python"
    assert note == ("my_sampler ran these iterations in Python: it has no compiled loop for "
                    "them, or its compiled loop needs a function 'ring' does not compile")
    tally.compiled_blocks = 3
    ran, note = tally.loops(Compiled(), "my_sampler")
    assert ran == "mixed" and note.startswith("a compiled loop ran in 3 of 4 blocks; my_sampler")
    assert "KAM" not in note
