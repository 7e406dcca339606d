"""Issue 30 §1: a report from stored runs alone — the run folders, nothing importable."""

import json

import pytest
from omegaconf import OmegaConf

from ckam_bench.engine import rundir, store
from ckam_bench.report import aggregate as agg
from tests.test_report import make_run

MISSING = "a_module_nobody_has_xyz.models:eight_schools"


def _as_pymc_run(path, model=MISSING, dim_text="${pymc_dim:${.model}}", dim=2):
    """Rewrite a run folder as a PyMC run whose model cannot be imported here: the snapshot
    holds ``dim: ${pymc_dim:...}`` unresolved (as Hydra stores it), status.json the run's
    config hash and dim (as the runner writes them)."""
    cfg = OmegaConf.load(path / ".hydra" / "config.yaml")
    cfg.target = {"_target_": "ckam_bench.targets.pymc.PyMCModel", "model": model,
                  "dim": dim_text, "init": "support_point"}
    OmegaConf.save(cfg, path / ".hydra" / "config.yaml")
    plain = OmegaConf.to_container(cfg, resolve=False)
    plain["target"]["dim"] = dim  # what the run resolved when it ran
    status = json.loads((path / store.STATUS).read_text())
    status.update(config_hash=store.config_digest(plain, "compiled"), dim=dim)
    rundir.write_json(status, path / store.STATUS)
    return path


def test_a_pymc_run_loads_without_its_model(tmp_path):
    """${pymc_dim:...} takes the dim status.json recorded: the model is never imported and the
    config hash checks."""
    for seed in (0, 1):
        _as_pymc_run(make_run(tmp_path, "bimodal", "rw", seed=seed))
    res = agg.load_results(tmp_path)
    assert not res.skipped, [str(s) for s in res.skipped]
    assert [r.config["target"]["dim"] for r in res.runs] == [2, 2]
    assert len(res.groups()) == 1


def test_an_unresolvable_snapshot_says_what_is_wrong(tmp_path):
    """An interpolation that cannot be resolved from the folder is named, with its error, not
    reported as a snapshot from another run."""
    _as_pymc_run(make_run(tmp_path, "bimodal", "rw"), dim_text="${no_such_resolver:3}")
    res = agg.load_results(tmp_path)
    assert not res.runs
    (item,) = res.skipped
    assert "cannot be resolved from the run folder" in item.reason
    assert "target.dim = ${no_such_resolver:3}" in item.reason
    assert "another run" not in item.reason


def test_a_snapshot_of_another_run_is_still_refused(tmp_path):
    path = _as_pymc_run(make_run(tmp_path, "bimodal", "rw"))
    cfg = OmegaConf.load(path / ".hydra" / "config.yaml")
    cfg.budget.seconds = 99.0
    OmegaConf.save(cfg, path / ".hydra" / "config.yaml")
    (item,) = agg.load_results(tmp_path).skipped
    assert "is not the config of this run" in item.reason


def test_figures_cli_renders_a_pymc_sweep_whose_model_is_not_importable(tmp_path, capsys):
    from ckam_bench.report.cli import main

    for sampler in ("rw", "am"):
        for seed in (0, 1, 2):
            _as_pymc_run(make_run(tmp_path / "runs", "bimodal", sampler, seed=seed))
    code = main([str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--figures", "none",
                 "--generic", "none"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "skipped" not in out and "loaded 6 runs in 2 configuration groups" in out
    assert (tmp_path / "out" / "report.html").exists()


def test_stored_yaml_reads_as_omegaconf_reads_it(tmp_path):
    """The report reads every run's .hydra files with libyaml: the values OmegaConf.load gives
    (its number resolver, dates kept as text, interpolations as text), duplicate keys refused."""
    import yaml
    from omegaconf import OmegaConf

    from ckam_bench.engine import store

    text = ("a: 1e5\nb: 2026-01-01\nc: .inf\nd: ${x.y}\ne: [1, 2.5, 'on', yes]\n"
            "f: {g: null, h: 1_000}\ni: '007'\n")
    path = tmp_path / "config.yaml"
    path.write_text(text)
    assert store.load_yaml(path) == OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    path.write_text("a: 1\na: 2\n")
    with pytest.raises(yaml.constructor.ConstructorError, match="duplicate key a"):
        store.load_yaml(path)
