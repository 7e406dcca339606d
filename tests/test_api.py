"""The Python API (ckam_bench.run): the command line's config, checks, folder and promises."""

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import ckam_bench
from ckam_bench import api
from ckam_bench.engine import store
from ckam_bench.engine.runner import Budget, Runner, run_labels
from ckam_bench.samplers.random_walk import RandomWalk
from ckam_bench.targets.gaussians import gauss2d_corr
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]


def test_docs_examples_run(tmp_path, monkeypatch):
    """Every Python block of docs/api.md, in order, in one namespace."""
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs" / "api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), namespace)
    result = namespace["result"]
    assert result.status["state"] == "complete" and result.status["sampler"] == "nuts"
    assert result.status["target"] == "gauss2d_corr" and result.status["seed"] == 1
    assert int(result.trace["iterations"].iloc[-1]) == 2000
    assert (tmp_path / "outputs/api/nuts" / store.STATUS).exists()


def test_invalid_settings_raise_and_create_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for kwargs, words in [({"budget__seconds": -1}, "budget.seconds"),
                          ({"sampler": "nutz"}, "did you mean 'nuts'"),
                          ({"start": [1, 2, 3]}, "start"),
                          ({"budget": {"sekonds": 2}}, "budget.sekonds")]:
        with pytest.raises(api.ConfigError, match=re.escape(words)):
            ckam_bench.run(**{"sampler": "rw", "target": "gauss2d_corr", **kwargs})
    assert list(tmp_path.iterdir()) == []


def test_a_cli_run_and_an_api_run_are_the_same_run(tmp_path):
    """The API resolves the same config as the CLI: the CLI's complete folder is skipped."""
    folder = tmp_path / "run"
    args = ["sampler=rw", "target=gauss2d_corr", "budget.max_iterations=500", "seed=2"]
    proc = clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", *args, f"hydra.run.dir={folder}"],
                      cwd=tmp_path, capture_output=True, text=True, timeout=600,
                      env={**os.environ, "HYDRA_FULL_ERROR": "0"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    before = (folder / store.STATUS).read_bytes()
    result = ckam_bench.run("rw", "gauss2d_corr", "budget.max_iterations=500", seed=2, run_dir=folder)
    assert (folder / store.STATUS).read_bytes() == before  # skipped, not re-run
    assert result.status["state"] == "complete" and result.samples is not None
    # Hydra's global config is the caller's again (a later run or test sees no leftover)
    from hydra.core.hydra_config import HydraConfig

    assert not HydraConfig.initialized()
    # another config into that folder is refused, the folder untouched
    with pytest.raises(api.FolderRefused):
        ckam_bench.run("rw", "gauss2d_corr", "budget.max_iterations=500", seed=3, run_dir=folder)
    assert (folder / store.STATUS).read_bytes() == before


def test_runner_needs_no_label_keys(tmp_path):
    target = gauss2d_corr()
    runner = Runner(RandomWalk(0.5), target, {}, Budget(seconds=100.0, max_iterations=300),
                    tmp_path / "r", np.random.default_rng(0))
    status = runner.run()
    assert status["state"] == "complete" and status["sampler"] == "RandomWalk"
    assert status["target"] == target.name and status["kernel"] == "none"
    labels = run_labels(RandomWalk(0.5), target, {"sampler": "rw", "seed": 4})
    assert labels["sampler"] == "rw" and labels["seed"] == 4 and re.fullmatch(r"[0-9a-f]{12}", labels["run_id"])
