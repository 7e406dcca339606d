"""Every option of every config group composes (Hydra compose API) and instantiates."""

from importlib import resources

import pytest
from hydra import compose, initialize_config_module
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf

from ckam_bench.samplers.base import Sampler
from ckam_bench.targets.base import CapabilityError, Target


def options(group):
    root = resources.files("ckam_bench.conf") / group
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


# target=pymc needs target.model (and the [pymc] extra): tests/test_pymc_target.py covers it
TARGETS = [name for name in options("target") if name != "pymc"]


def composed(*overrides):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_groups_exist():
    assert {"bimodal", "gmm2d", "gmm32"} <= set(options("target"))
    assert {"rw", "am", "rbam", "gam", "kam", "ckam"} <= set(options("sampler"))
    assert {"linear", "gaussian", "matern"} <= set(options("kernel"))
    assert {"cyclical", "robbins_monro", "constant", "noise_decay", "power_decay"} <= set(
        options("schedule"))


@pytest.mark.parametrize("name", TARGETS)
def test_target_options(name):
    cfg = composed(f"target={name}")
    target = instantiate(cfg.target)
    assert isinstance(target, Target) and target.dim == cfg.target.dim


@pytest.mark.parametrize("name", options("sampler"))
@pytest.mark.parametrize("target", ["bimodal", "gmm32"])
def test_sampler_options(name, target):
    cfg = composed(f"sampler={name}", f"target={target}")
    sampler = instantiate(cfg.sampler)
    assert isinstance(sampler, Sampler) and sampler.phases


@pytest.mark.parametrize("name", options("kernel"))
def test_kernel_options(name):
    cfg = composed("sampler=kam", f"kernel={name}")
    sampler = instantiate(cfg.sampler)
    assert sampler.kernel.name == name.split("_")[0]


@pytest.mark.parametrize("name", options("schedule"))
def test_schedule_options(name):
    # composed into a real slot: a schedule may interpolate its sampler's keys (the cycle length
    # of cKAM, the burn-in of KAM), so each is tried in the slot of a sampler that has them
    sampler = "kam" if name == "noise_decay_run" else "ckam"
    cfg = composed(f"sampler={sampler}", f"schedule@sampler.noise={name}")
    schedule = instantiate(cfg.sampler.noise)
    assert float(schedule(0)) >= 0


def test_schedule_slot_can_be_swapped_from_the_command_line():
    cfg = composed("sampler=kam", "schedule@sampler.noise=constant", "sampler.noise.value=0.2")
    sampler = instantiate(cfg.sampler)
    assert sampler.noise(10**6) == 0.2


def test_metrics_build_for_every_target():
    for name in TARGETS:
        cfg = composed(f"target={name}")
        target = instantiate(cfg.target)
        for key, node in cfg.metrics.items():
            if OmegaConf.is_dict(node) and "_target_" in node:
                try:
                    instantiate(node, target=target)
                except InstantiationException as exc:  # "unsupported here" is recorded, not fatal
                    assert isinstance(exc.__cause__, CapabilityError), exc
