"""scripts/bench_lowrank_updates.py: the early-phase recompute rules of nuts_lowrank side by side,
each row's gradients the same as the sampler's own warm-up under that rule."""

import re

import numpy as np
import pytest
import yaml

from tests import scripts


def _script():
    return scripts.load("bench_lowrank_updates")


def test_the_rules_are_the_config_with_the_update_settings_replaced():
    script = _script()
    assert script.rules([16]) == {"draw": {"early_update_every": 1, "early_update_gradients": 0},
                                  "ten": {"early_update_every": 10, "early_update_gradients": 0},
                                  "g16": {"early_update_every": 10, "early_update_gradients": 16}}
    config = yaml.safe_load(script.CONFIG.read_text())
    assert (config["early_update_every"], config["early_update_gradients"]) == (10, 16)  # nuts_lowrank is g16


def test_a_table_row_per_model_with_each_rules_warm_up(capsys):
    pytest.importorskip("pymc")
    from ckam_bench.samplers.nuts_adaptation import AdaptedNUTS
    from ckam_bench.targets.pymc import PyMCModel

    script = _script()
    script.main(["--models", "eight_schools_noncentered", "--gradients", "16", "--seeds", "2", "--burn-in", "60"])
    out = capsys.readouterr().out
    assert out.startswith("load average at the start:") and "load average at the end:" in out
    row = next(line for line in out.splitlines() if line.startswith("| eight_schools_noncentered |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "10" and len(cells) == 5
    gradients = [re.match(r"([\d ]+) / [\d.]+ ms", c).group(1).replace(" ", "") for c in cells[2:]]

    config = yaml.safe_load(script.CONFIG.read_text())
    config.pop("_target_")
    target = PyMCModel("ckam_bench.posteriordb.models:eight_schools_noncentered")
    for rule, expected in zip(script.rules([16]).values(), gradients):
        sampler = AdaptedNUTS(**{**config, "burn_in": 60, **rule})
        spent = []
        for seed in range(2):
            state = sampler.init(target, target.start, np.random.default_rng(seed))
            before = target.n_grad
            sampler.advance(state, 60)
            spent.append(target.n_grad - before)
        assert f"{np.median(spent):.0f}" == expected
