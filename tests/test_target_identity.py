"""A run is identified by its target's bytes too (issue 43 §2): a config names a model or data
*file*, and an edited file keeps the config's text, so its hash. The target's identity (the
sha256 of its source and data, ``status.json``'s ``target_identity``) is recorded, and a re-run
into a folder whose run was made on other bytes is refused, the stored run left as it was.

The runs are in-process where possible (``ckam_bench.run``); one command-line run checks the
exit code and the one-line message, one sweep (slow) checks each job."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import ckam_bench
from ckam_bench.engine import rundir, store
from tests import clirun

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "0"}
QUICK = ("budget.seconds=5", "budget.max_iterations=400")


def tree(folder: Path) -> dict:
    """Every file and folder below ``folder``: relative path -> bytes (None for folders)."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
            for p in sorted(Path(folder).rglob("*"))}


def cli(*args, cwd):
    return clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", *args], cwd=cwd,
                      env=ENV, capture_output=True, text=True, timeout=300)


# ---------------------------------------------------------------------------- a data file
def ripley_copy(folder: Path) -> Path:
    """A copy of the ripley data set the user may edit (``target.data_file``)."""
    from ckam_bench.targets.logistic import DATASETS, env_var
    from ckam_bench.data import data_file

    path = folder / "ripley.csv"
    path.write_bytes(data_file(DATASETS["ripley"][0], None, env=env_var("ripley")).read_bytes())
    return path


def edit_one_value(path: Path) -> None:
    """Change the last digit of the first number of the second line (one value of the data)."""
    lines = path.read_text().splitlines(keepends=True)
    fields = lines[1].split(",")
    fields[1] = fields[1][:-1] + str((int(fields[1][-1]) + 1) % 10)
    lines[1] = ",".join(fields)
    path.write_text("".join(lines))


def test_an_edited_data_file_is_not_the_same_run(tmp_path):
    """The stored run of the old bytes is never skipped as the new one's result nor overwritten:
    the re-run is refused, naming what changed; restoring the file makes it the same run again;
    a new folder runs the edited data, and the report keeps the two runs apart."""
    data = ripley_copy(tmp_path)
    args = ("rw", "logistic_ripley", f"target.data_file={data}", *QUICK)
    first = ckam_bench.run(*args, run_dir=tmp_path / "run", progress=False)
    identity = first.status[store.IDENTITY_KEY]
    assert first.status["state"] == "complete" and set(identity) == {"data_sha256"}
    assert ckam_bench.run(*args, run_dir=tmp_path / "run", progress=False).status == first.status
    original = data.read_bytes()
    edit_one_value(data)
    before = tree(tmp_path / "run")
    with pytest.raises(rundir.TargetChanged) as refused:
        ckam_bench.run(*args, run_dir=tmp_path / "run", progress=False)
    message = str(refused.value)
    assert "\n" not in message and "on another model or data" in message
    assert f"data_sha256 {identity['data_sha256'][:12]}, now " in message
    assert "choose a new folder" in message and "hydra.run.dir" in message
    assert tree(tmp_path / "run") == before  # nothing written, nothing set aside
    other = ckam_bench.run(*args, run_dir=tmp_path / "edited", progress=False)
    assert other.status["state"] == "complete"
    assert other.status[store.IDENTITY_KEY]["data_sha256"] != identity["data_sha256"]
    data.write_bytes(original)  # the bytes of the first run: the same run, skipped
    assert ckam_bench.run(*args, run_dir=tmp_path / "run", progress=False).status == first.status

    from ckam_bench.report import load_results

    runs = load_results(tmp_path).runs
    assert len(runs) == 2 and runs[0].config_key != runs[1].config_key  # never pooled as seeds
    assert {r.settings["target_identity.data_sha256"] for r in runs} == {
        identity["data_sha256"], other.status[store.IDENTITY_KEY]["data_sha256"]}


def test_the_command_line_refuses_in_one_line_with_exit_2(tmp_path):
    data = ripley_copy(tmp_path)
    args = (f"target.data_file={data}", *QUICK)
    ckam_bench.run("rw", "logistic_ripley", *args, run_dir=tmp_path / "run", progress=False)
    edit_one_value(data)
    before = tree(tmp_path)
    proc = cli("sampler=rw", "target=logistic_ripley", *args, "progress=false",
               f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("ckam-bench: refused: hydra.run.dir: ")
    assert "the target's data (its data file or arrays) changed (data_sha256" in lines[0]
    assert tree(tmp_path) == before


@pytest.mark.slow  # two sweeps of two jobs (~20 s)
def test_each_job_of_a_sweep_is_checked(tmp_path):
    data = ripley_copy(tmp_path)
    sweep = tmp_path / "sweep"
    args = ("-m", "sampler=rw", "target=logistic_ripley", f"target.data_file={data}", *QUICK,
            "seed=0,1", "progress=false", f"hydra.sweep.dir={sweep}")
    assert cli(*args, cwd=tmp_path).returncode == 0
    edit_one_value(data)
    before = {k: v for k, v in tree(sweep).items() if k != "multirun.yaml"}
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2 and "2 job(s) of the sweep were refused" in proc.stderr, proc.stderr
    assert proc.stderr.count("changed (data_sha256") == 4  # each job's line, then its note
    assert {k: v for k, v in tree(sweep).items() if k != "multirun.yaml"} == before


# ---------------------------------------------------------------------------- a PyMC model file
TINY = '''\
import numpy as np
import pymc as pm


def model():
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.array([0.1, -0.3, 0.5]))
    return m
'''


def test_an_edited_pymc_model_or_data_file_is_not_the_same_run(tmp_path):
    """The user's model file and its ``target.data``: editing either refuses the re-run (the
    model's source by ``source_sha256``, the data by ``data_sha256``), the stored run intact."""
    pytest.importorskip("pymc")
    from ckam_bench.targets import pymc as pymc_target

    (tmp_path / "tiny.py").write_text(TINY)
    np.savez(tmp_path / "data.npz", y=np.array([0.1, -0.3, 0.5]))
    spec = f"{tmp_path / 'tiny.py'}:model"
    args = ("rw", "pymc", f"target.model={spec}", f"target.data={tmp_path / 'data.npz'}", *QUICK)
    run = tmp_path / "run"
    try:
        first = ckam_bench.run(*args, run_dir=run, progress=False)
        assert set(first.status[store.IDENTITY_KEY]) == {"data_sha256", "source_sha256"}
        before = tree(run)
        np.savez(tmp_path / "data.npz", y=np.array([0.1, -0.3, 0.6]))
        with pytest.raises(rundir.TargetChanged, match=r"the target's data .*changed \(data_sha256 "):
            ckam_bench.run(*args, run_dir=run, progress=False)
        np.savez(tmp_path / "data.npz", y=np.array([0.1, -0.3, 0.5]))
        assert ckam_bench.run(*args, run_dir=run, progress=False).status == first.status
        (tmp_path / "tiny.py").write_text(TINY + "# edited, the same density\n")
        with pytest.raises(rundir.TargetChanged) as refused:
            ckam_bench.run(*args, run_dir=run, progress=False)
        assert refused.value.changes == [refused.value.changes[0]]
        assert refused.value.changes[0].startswith("the model's source file (target.model) "
                                                   "changed (source_sha256 ")
        # another prior: the edited model is loaded again in this process (not the one built
        # before), so its graph's constants change the data digest as well
        (tmp_path / "tiny.py").write_text(TINY.replace("0.0, 1.0)", "0.0, 2.0)"))
        with pytest.raises(rundir.TargetChanged) as refused:
            ckam_bench.run(*args, run_dir=run, progress=False)
        assert sorted(change.split(" changed")[0] for change in refused.value.changes) == [
            "the model's source file (target.model)", "the target's data (its data file or arrays)"]
        assert tree(run) == before
    finally:
        pymc_target._MODELS.pop(spec, None)


JOINED = '''\
import numpy as np
import pymc as pm
import pytensor.tensor as pt


def model():
    with pm.Model() as m:
        a = pm.Normal("a", 0.0, 1.0, shape=2)
        b = pm.Normal("b", 0.0, 1.0)
        pair = pt.stack([a, 2.0 * a], axis=1)  # (2, 2)
        mu = pt.concatenate([pair.ravel(), pt.stack([b, -b])])
        pm.Normal("y", mu, 1.0, observed=np.array([0.1, -0.3, 0.5, 0.2, 1.0, -1.0]))
    return m
'''


def test_the_data_digest_is_the_same_on_pymc_5_and_6(tmp_path):
    """pytensor 3 (PyMC 6) keeps a Join's axis (``stack``, ``concatenate``) as a property of the
    Op, pytensor 2.38 (PyMC 5) as the node's first input, an int8 constant: ``data_sha256``
    records it alike, so a model with both has one digest on both lines (pinned here; CI runs
    this on each). Without it, pytensor 3 gave this model ``6dd3aab07a9fa69d`` and six suite
    posteriors (garch11, arma11, hmm_example, hmm_drive_0/1, lotka_volterra) other reference
    ids than PyMC 5 on the same data."""
    pytest.importorskip("pymc")
    from ckam_bench.targets import pymc as pymc_target

    (tmp_path / "joined.py").write_text(JOINED)
    spec = f"{tmp_path / 'joined.py'}:model"
    try:
        target = pymc_target.PyMCModel(spec)
        axes = [(label, a.item()) for label, a in pymc_target.model_arrays(target) if a.dtype == np.int8]
        assert axes == [("y #7", 0), ("y #8", 1)]  # concatenate's, then stack's (axis=1)
        assert target.describe()["data_sha256"] == "efeb0d17a42c6885"
    finally:
        pymc_target._MODELS.pop(spec, None)


# ---------------------------------------------------------------------------- the identity
def test_the_identity_is_the_described_digests():
    from ckam_bench.targets.base import PluginError, Target

    class Plain(Target):
        def _log_density(self, x):
            return 0.0

    class WithData(Plain):
        def describe(self):
            return {**super().describe(), "data_sha256": "ab" * 8, "scale": 2.0, "b_sha256": 3}

    class Broken(Plain):
        def describe(self):
            raise RuntimeError("no description\nsecond line")

    assert store.target_identity(Plain(2)) == {}
    assert store.target_identity(WithData(2)) == {"data_sha256": "ab" * 8}
    with pytest.raises(PluginError, match=r"Broken\.describe\(\) raised RuntimeError: no "
                                          r"description$"):
        store.target_identity(Broken(2))
    assert store.identity_settings({"provenance": {"loops": "python"},
                                    "target_identity": {"data_sha256": "x"}}) == {
        "loops": "python", "target_identity.data_sha256": "x"}
    assert store.identity_settings({}) == {}


def test_only_digests_both_sides_record_are_compared():
    """A version that records a new digest does not refuse the runs made before it."""
    assert rundir.identity_changes({"data_sha256": "a"}, {"data_sha256": "a", "new_sha256": "b"}) == []
    assert rundir.identity_changes(None, {"data_sha256": "a"}) == []
    assert rundir.identity_changes({"data_sha256": "a"}, None) == []
    (change,) = rundir.identity_changes({"data_sha256": "a" * 16}, {"data_sha256": "b" * 16})
    assert change.endswith(f"changed (data_sha256 {'a' * 12}, now {'b' * 12})")


def test_an_sbc_folder_keeps_its_models_identity_in_the_marker(tmp_path):
    """A folder without a status (an SBC's) is judged by its marker: holding a result, it is
    refused for another model; holding nothing but the marker, it is not."""
    folder = tmp_path / "sbc"
    rundir.RunFolder.claim(folder, "d", identity={"source_sha256": "a"}).release()
    rundir.RunFolder.claim(folder, "d", identity={"source_sha256": "b"}).release()  # nothing kept
    marker = json.loads((folder / rundir.MARKER).read_text())
    assert marker[store.IDENTITY_KEY] == {"source_sha256": "b"}  # the claim let through: b's
    (folder / "truth.npz").write_bytes(b"draws")
    before = tree(folder)
    with pytest.raises(rundir.TargetChanged, match=r"source_sha256 b, now a"):
        rundir.RunFolder.claim(folder, "d", identity={"source_sha256": "a"})
    assert tree(folder) == before
    rundir.RunFolder.claim(folder, "d", identity={"source_sha256": "b"}).release()
    rundir.RunFolder.claim(folder, "d").release()  # no identity given: none compared


def test_an_sbc_of_an_edited_model_is_refused_untouched(tmp_path, capsys):
    """``ckam-bench-sbc … sbc.dir=FOLDER`` after the model's file was edited: its simulations were
    drawn from the old model, so the SBC is refused (exit 2, one line), the folder untouched."""
    pytest.importorskip("pymc")
    from omegaconf import OmegaConf

    from ckam_bench.checks import sbc
    from ckam_bench.commands.validate import resolved
    from ckam_bench.targets import pymc as pymc_target

    (tmp_path / "tiny.py").write_text(TINY)
    spec = f"{tmp_path / 'tiny.py'}:model"
    argv = ["target=pymc", f"target.model={spec}", "sampler=rw", "sbc.simulations=10",
            "sbc.draws=9", "sbc.bins=5"]
    composed = sbc._compose(argv)
    digest = sbc.config_hash(resolved(OmegaConf.masked_copy(
        composed, [k for k in composed if k != "hydra"])))
    folder = tmp_path / "sbc"
    try:
        identity = store.target_identity(pymc_target.PyMCModel(spec))
        rundir.RunFolder.claim(folder, digest, identity=identity).release()
        (folder / sbc.TRUTH).write_bytes(b"the old model's draws")
        (tmp_path / "tiny.py").write_text(TINY + "# edited\n")
        pymc_target._MODELS.pop(spec, None)  # as a new process would load it
        before = tree(folder)
        assert sbc.run([*argv, f"sbc.dir={folder}"]) == sbc.EXIT_CONFIG
    finally:
        pymc_target._MODELS.pop(spec, None)
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"ckam-bench-sbc: refused: sbc.dir: {folder} holds an SBC of this "
                           "configuration on another model: the model's source file")
    assert "leave sbc.dir unset" in line
    assert tree(folder) == before


def test_the_suite_counts_one_configuration_over_posteriors_of_different_identity():
    """A target's identity belongs to the target: across the suite's posteriors (each of its own
    model and data bytes) one sampler setting is one configuration, one row of the suite table
    (the CI's suite sweep once showed 52 'nuts [target_identity.data_sha256=…]' rows)."""
    from types import SimpleNamespace

    from ckam_bench.report.posteriordb_suite import config_key, suite_labels

    def group(target, data):
        return SimpleNamespace(sampler="nuts", label="nuts", settings={
            "choice.sampler": "nuts", "choice.target": "pymc", "target.model": target,
            "target_identity.data_sha256": data, "target_identity.source_sha256": "s",
            "sampler.max_depth": 10})

    groups = [group("a", "1"), group("b", "2")]
    assert config_key(groups[0]) == config_key(groups[1])
    assert suite_labels({config_key(groups[0]): groups[0]}) == {config_key(groups[0]): "nuts"}
