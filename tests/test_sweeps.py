"""A sweep's jobs composed once per shape in each process (ckam_bench.commands.sweeps)."""

import pytest
from hydra import initialize_config_module
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf

from ckam_bench.commands import sweeps


@pytest.fixture
def loader():
    with initialize_config_module("ckam_bench.conf", version_base="1.3", job_name="ckam-bench"):
        yield GlobalHydra.instance().config_loader()


def _full(loader, master, overrides):
    return OmegaConf.to_container(ConfigLoaderImpl.load_sweep_config.__wrapped__(loader, master, overrides))


def test_a_jobs_config_reused_from_its_shape_is_the_full_composition(loader, monkeypatch):
    """Every job of a sweep (seeds, keys, a list, groups, added keys, a dict, a deletion) gets
    the config a full composition gives, whether it was composed or set on a copy."""
    sweeps.reuse_compositions()
    sweeps.reuse_compositions()  # installed once
    monkeypatch.setattr(sweeps, "_SHAPES", {})
    master = loader.load_configuration("config", ["hydra.sweep.dir=/tmp/never-written"], RunMode.MULTIRUN)
    jobs = [[f"sampler={s}", "target=gauss2d_corr", f"seed={k}", f"budget.max_iterations={100 * (k + 1)}",
             "checkpoint.first=0.5", "+note=n", "+extra=[a,b]"]
            for s in ("rw", "am") for k in range(3)]
    jobs += [["sampler=rw", "target=gauss2d_corr", f"seed={k}", f"budget.early_stop={{enabled: {b}}}"]
             for k, b in ((0, "true"), (1, "false"), (2, "true"))]
    jobs += [["sampler=rw", "target=gauss2d_corr", f"seed={k}", "~metrics.esjd"] for k in (4, 5)]
    jobs += [["sampler=am", "target=gauss2d_corr", f"seed={k}", f"+note={k}"] for k in (6, 7)]
    composed, impl = [], ConfigLoaderImpl._load_configuration_impl

    def counted(self, *args, **kwargs):
        composed.append(1)
        return impl(self, *args, **kwargs)

    for overrides in jobs:
        monkeypatch.setattr(ConfigLoaderImpl, "_load_configuration_impl", counted)
        got = ConfigLoaderImpl.load_sweep_config(loader, master, overrides)
        monkeypatch.setattr(ConfigLoaderImpl, "_load_configuration_impl", impl)
        assert OmegaConf.to_container(got) == _full(loader, master, overrides), overrides
    # a shape's first job is composed, the others reuse it, unless what changed is a dict
    shapes = {sweeps._job_shape(o, loader.repository.group_exists) for o in jobs}
    assert len(sweeps._SHAPES) == len(shapes) == 5
    # one per shape, and the jobs after their shape's first that change a dict or add a key
    assert len(composed) == 5 + 1 + 1


def test_only_plain_scalar_overrides_are_set_on_a_copy():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parse = OverridesParser.create().parse_overrides
    plain, listed, added, dropped, dicted, hydras = parse(
        ["seed=3", "tags=[a]", "+a=1", "~b", "c={x: 1}", "hydra.job.chdir=true"])
    groups = {"sampler"}.__contains__
    assert sweeps._reusable(plain, groups)
    assert not any(sweeps._reusable(o, groups) for o in (listed, added, dropped, dicted, hydras,
                                                           *parse(["sampler=rw"])))
