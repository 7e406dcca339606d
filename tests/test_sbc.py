"""ckam-bench-sbc: simulations from the prior, ranks, the uniformity test and verdict, bad input,
and (slow) both ways end to end: a correct sampler passes on two models, a sampler with a wrong
acceptance ratio fails, and a re-run resumes."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pymc")  # the [pymc] extra; CI installs it, so this never skips there

from ckam_bench.checks import sbc  # noqa: E402
from ckam_bench.checks.sbc_progress import SweepProgress  # noqa: E402
from ckam_bench.targets.pymc import PyMCModel  # noqa: E402
from ckam_bench.commands.validate import ConfigError  # noqa: E402
from tests import clirun

TESTS = Path(__file__).resolve().parent
MODELS = TESTS / "pymc_models.py"


def settings(**kw):
    return {"simulations": 100, "draws": 99, "bins": 20, "seed": 0, "alpha": 0.01, "dir": None, **kw}


@pytest.mark.parametrize("key, value, message", [
    ("simulations", 1, "sbc.simulations: must be an integer in [2"),
    ("draws", 0, "sbc.draws: must be an integer in [1"),
    ("bins", 7, "sbc.bins: must divide sbc.draws + 1 = 100, got 7"),
    ("alpha", 1.5, "sbc.alpha: must be a number in (0, 1)"),
    ("seed", -1, "sbc.seed: must be an integer in [0"),
])
def test_bad_settings_name_the_key(key, value, message):
    with pytest.raises(ConfigError) as info:
        sbc.check_settings(settings(**{key: value}))
    assert str(info.value).startswith(message)


def test_ranks_thinning_and_the_uniformity_test():
    assert sbc.ranks_of(np.array([0.1, 0.5, 0.9]), 0.6, np.random.default_rng(0)) == 2
    np.testing.assert_array_equal(sbc.thin(10, 4), [0, 3, 6, 9])
    assert sbc.thin(3, 4).size == 0  # fewer rows than draws: unusable
    rng = np.random.default_rng(0)
    uniform = rng.integers(0, 100, size=(2000, 3))
    counts, p = sbc.uniformity_test(uniform, draws=99, bins=20)
    assert counts.shape == (20, 3) and np.all(counts.sum(axis=0) == 2000)
    assert np.all(p > 0.001)
    # a sampler too narrow by half puts the truth in the tails: U-shaped ranks
    narrow = np.clip(np.round(100 * (0.5 + 2 * (rng.random((2000, 1)) - 0.5))), 0, 99).astype(int)
    result = sbc.verdict(np.column_stack([uniform[:, :1], narrow]), ["a", "b"], 99, 20, 0.01)
    assert result["verdict"] == "fail" and result["worst_variable"] == "b"
    assert result["p_value"] == min(1.0, 2 * min(result["p_values"].values()))
    assert sbc.verdict(uniform, ["a", "b", "c"], 99, 20, 0.01)["verdict"] == "pass"


def test_simulations_are_joint_prior_predictive_draws():
    target = PyMCModel(f"{MODELS}:normal_mean")
    truth, data = sbc.simulate(target, 400, seed=3)
    assert list(truth) == ["mu"] and truth["mu"].shape == (400,)
    assert len(data) == 400 and set(data[0]) == {"y"} and data[0]["y"].shape == (5,)
    y_mean = np.array([d["y"].mean() for d in data])
    # y_i | mu ~ N(mu, 1): the mean of 5 observations minus mu is N(0, 1/5)
    assert np.std(y_mean - truth["mu"]) == pytest.approx(np.sqrt(0.2), rel=0.15)
    assert np.std(truth["mu"]) == pytest.approx(1.0, rel=0.15)
    again, _ = sbc.simulate(target, 400, seed=3)
    np.testing.assert_array_equal(again["mu"], truth["mu"])
    counts = PyMCModel(f"{MODELS}:gamma_poisson")
    truth, data = sbc.simulate(counts, 5, seed=0)
    assert data[0]["k"].dtype.kind == "i"
    counts.set_data(data[0])  # simulated data fit the model's data


def sbc_command(*args, cwd, pythonpath=None):
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    return clirun.run([sys.executable, "-m", "ckam_bench.checks.sbc", *args], cwd=cwd,
                      capture_output=True, text=True, timeout=3000, env=env)


def test_arviz_daily_warning_never_breaks_a_one_line_error(tmp_path, tmp_path_factory, monkeypatch):
    """ArviZ warns at its first import of each day (a stamp in its cache folder): with a fresh
    cache the error is still one line."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    proc = sbc_command("target=pymc", f"target.model={MODELS}:normal_mean", "sbc.bins=7", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "sbc.bins" in proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, key", [
    (["target=gmm2d"], "target: ckam-bench-sbc simulates data from a PyMC model"),
    (["target=pymc", f"target.model={MODELS}:normal_mean", "sbc.bins=7"], "sbc.bins"),
    (["target=pymc", "target.model=nonsense"], "target.model"),
    (["target=pymc", f"target.model={MODELS}:normal_mean", "sampler=gadmala_exact"], "sampler"),
])
def test_bad_input_is_one_line_exit_2_nothing_created(tmp_path, args, key):
    proc = sbc_command(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ckam-bench-sbc: invalid configuration: {key}")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_is_not_this_sbc_is_refused_untouched(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep")
    proc = sbc_command("target=pymc", f"target.model={MODELS}:normal_mean", f"sbc.dir={folder}",
                       cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith(
        "ckam-bench-sbc: invalid configuration: sbc.dir:"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "not an SBC folder" in proc.stderr
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


# ---------------------------------------------------------------------------- progress
SWEEP_OUTPUT = r"""[2026-11-28 14:10:16,487][HYDRA] Launching 4 jobs locally
[2026-11-28 14:10:16,488][HYDRA] \t#0 : target=pymc sampler=rw seed=0 target.data=/f/simulations/$\{seed\}.npz
complete (max_iterations): rw on m, 3000 iterations in 0.00 s of sampler time (3,093,578 it/s), min ESS 215 -> /f/runs/sim_0
  note: too short to trust: min ESS 215 is below 1000 (the ESS floor)
[2026-11-28 14:10:23,785][HYDRA] \t#1 : target=pymc sampler=rw seed=1 target.data=/f/simulations/$\{seed\}.npz
ckam-bench: already complete for this config, skipped: /f/runs/sim_1
[2026-11-28 14:10:24,681][HYDRA] \t#2 : target=pymc sampler=rw seed=2 target.data=/f/simulations/$\{seed\}.npz
complete (budget) FLAGGED stuck: rw on m, 10 iterations in 0.01 s of sampler time (1,000 it/s) -> /f/runs/sim_2
  FLAGGED stuck: no move accepted in the last 9 of 10 iterations (90% of the run)
[2026-11-28 14:10:25,525][HYDRA] \t#3 : target=pymc sampler=rw seed=3 target.data=/f/simulations/$\{seed\}.npz
Traceback (most recent call last):
  File "x.py", line 1, in <module>
ValueError: the model broke
failed (ValueError: the model broke): rw on m, 0 iterations in 0.00 s of sampler time (0 it/s) -> /f/runs/sim_3
""".replace("\\t#", "\t#")  # Hydra writes a tab before the job number


def test_the_sweep_output_is_one_progress_line_errors_kept():
    """Hydra's launch lines (with ${seed} escaped) and clean runs' end lines and notes go; a
    progress line counts the simulations; a flagged or failed run and a traceback stay."""
    import io

    out = io.StringIO()
    progress = SweepProgress(4, out, tty=False)
    for line in SWEEP_OUTPUT.splitlines(keepends=True):
        progress.feed(line)
    progress.close()
    text = out.getvalue()
    assert "[HYDRA]" not in text and "$\\{seed\\}" not in text and "sim_0" not in text
    assert "too short to trust" not in text and "skipped" not in text
    assert "complete (budget) FLAGGED stuck" in text and "  FLAGGED stuck: no move" in text
    assert "Traceback (most recent call last):" in text and "ValueError: the model broke" in text
    assert text.rstrip().endswith("ckam-bench-sbc: 4/4 simulations finished (1 already complete, "
                                  "1 flagged, 1 failed)")
    assert text.count("simulations finished") == 4  # n < 10: every simulation


def test_progress_on_a_terminal_rewrites_one_line():
    import io

    out = io.StringIO()
    progress = SweepProgress(100, out, tty=True)
    for i in range(30):
        progress.feed(f"complete (budget): rw on m, 1 iterations -> /f/runs/sim_{i}\n")
    progress.feed("ckam-bench: an error\n")
    progress.close()
    text = out.getvalue()
    assert text.count("\n") == 2  # the error's line and the final newline
    assert "\r\x1b[Kckam-bench: an error\nckam-bench-sbc: 30/100 simulations finished" in text
    assert text.endswith("ckam-bench-sbc: 30/100 simulations finished\n")
    quiet = io.StringIO()
    progress = SweepProgress(100, quiet, tty=False)
    for i in range(30):
        progress.feed(f"complete (budget): rw on m -> /f/runs/sim_{i}\n")
    assert quiet.getvalue().splitlines() == [f"ckam-bench-sbc: {k}/100 simulations finished"
                                             for k in (10, 20, 30)]


def test_a_run_end_line_with_notes_reaches_the_stream_in_one_write(monkeypatch):
    """Two workers share the sweep's stream: were a multi-line end line's last newline written
apart, another job's end line could be glued to this one's last note and go uncounted."""
    from ckam_bench.commands import cli

    class Recorder:
        def __init__(self):
            self.writes = []

        def write(self, text):
            self.writes.append(text)

        def flush(self):
            pass

    stream = Recorder()
    monkeypatch.setattr(sys, "stderr", stream)
    cli.say_whole("complete (budget): rw on m -> /f\n  note: the sampler got 80% of a core")
    assert stream.writes == ["complete (budget): rw on m -> /f\n  note: the sampler got 80% of "
                             "a core\n"]


# ---------------------------------------------------------------------------- both ways
CORRECT = ["sampler=mala", "sampler.burn_in=1000", "budget.max_iterations=21000",
           "budget.seconds=120", "checkpoint.on=iterations", "checkpoint.first=5000",
           "progress=false", "sbc.simulations=100"]


def _folder(cwd: Path) -> Path:
    """The one SBC folder a command started in ``cwd`` created."""
    (folder,) = [p for p in (cwd / "outputs" / "sbc").glob("*/*") if p.is_dir()]
    return folder


def _verdict(folder: Path) -> dict:
    return json.loads((folder / sbc.VERDICT).read_text())


def _outputs_complete(folder: Path, n: int) -> None:
    for name in ("truth.npz", "ranks.parquet", "rank_histograms.png", "ecdf_difference.png"):
        assert (folder / name).stat().st_size > 0, name
    assert len(list((folder / "simulations").glob("*.npz"))) == n
    assert len(pd.read_parquet(folder / sbc.RANKS).simulation.unique()) == n


@pytest.mark.slow
@pytest.mark.parametrize("model", ["normal_mean", "gamma_poisson"])
def test_a_correct_sampler_passes(tmp_path, model):
    extra = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"] if model == "gamma_poisson" else []
    proc = sbc_command("target=pymc", f"target.model={MODELS}:{model}", *CORRECT, *extra,
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    folder = _folder(tmp_path)
    result = _verdict(folder)
    assert result["verdict"] == "pass" and result["p_value"] >= 0.01, result
    assert result["simulations"] == 100 and not result["left_out"]
    assert proc.stdout.startswith("SBC PASS: mala on ")  # the config name, not the class
    _outputs_complete(folder, 100)
    # concise: a progress line at every tenth, no Hydra launch line, no escaped ${seed}
    assert "ckam-bench-sbc: 100/100 simulations finished" in proc.stderr
    assert "[HYDRA]" not in proc.stderr and "$\\{seed\\}" not in proc.stderr
    assert proc.stderr.count("simulations finished") == 10


@pytest.mark.slow
def test_a_wrong_acceptance_ratio_fails(tmp_path):
    """Accepting with (π(y)/π(x))⁴ samples π⁴, half the posterior sd: U-shaped ranks. (With
    (π(y)/π(x))², sd / √2, 200 simulations of seed 0 gave p = 0.033: too weak an effect.)"""
    proc = sbc_command("target=pymc", f"target.model={MODELS}:normal_mean", "sampler=rw",
                       "sampler._target_=sbc_samplers.PoweredRatioWalk", "sampler.step_size=1.0",
                       "budget.max_iterations=20000", "budget.seconds=120", "progress=false",
                       "sbc.simulations=100", cwd=tmp_path, pythonpath=TESTS)
    assert proc.returncode == 1, proc.stderr[-3000:]
    result = _verdict(_folder(tmp_path))
    assert result["verdict"] == "fail" and result["p_value"] < 0.01, result  # measured: 0.0028
    counts = np.array(result["counts"]["mu"])
    assert counts[0] + counts[-1] > 1.5 * 2 * 100 / 10  # measured: 22 + 13


@pytest.mark.slow
def test_a_rerun_resumes_and_skips_complete_runs(tmp_path):
    args = ["target=pymc", f"target.model={MODELS}:normal_mean", *CORRECT[:-1],
            "sbc.simulations=10"]
    first = sbc_command(*args, cwd=tmp_path)
    assert first.returncode in (0, 1), first.stderr[-3000:]
    folder = _folder(tmp_path)
    args.append(f"sbc.dir={folder}")
    before = _verdict(folder)
    sim = folder / "runs" / "sim_4"
    mtime = (folder / "runs" / "sim_0" / "trace.parquet").stat().st_mtime
    for name in ("trace.parquet", "samples.parquet", "status.json"):  # as if killed early
        (sim / name).unlink()
    second = sbc_command(*args, cwd=tmp_path)
    assert second.returncode == first.returncode, second.stderr[-3000:]
    assert "ckam-bench-sbc: 10/10 simulations finished (9 already complete)" in second.stderr
    assert "already complete for this config, skipped" not in second.stderr  # counted, not listed
    assert (folder / "runs" / "sim_0" / "trace.parquet").stat().st_mtime == mtime
    after = _verdict(folder)
    assert after["p_value"] == before["p_value"] and after["counts"] == before["counts"]
    other = sbc_command(*args[:-2], "sbc.simulations=12", f"sbc.dir={folder}", cwd=tmp_path)
    assert other.returncode == 2 and "refused: sbc.dir" in other.stderr
