"""Paper experiments: presets equal the cKAM paper's Tables 1–3, and sweeps run end to end.

The expected tables below are typed from the paper's appendix A (Tables 1–3 and the text
around them), independently of the YAML files they check. Sweeps run ``ckam-bench`` in a
subprocess (``python -m ckam_bench.commands.cli``) with tiny budgets.
"""

from __future__ import annotations

import functools
import math
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from hydra.utils import instantiate
from omegaconf import OmegaConf

from ckam_bench.schedules import Constant, NoiseDecay
from ckam_bench.engine.store import find_runs, load_run
from tests import clirun

SAMPLERS = ("rw", "am", "rbam", "gam", "kam", "ckam")
PAPER = ("paper_bimodal", "paper_gmm2d", "paper_gmm32")
REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "reproduce_ckam_paper.sh"


def nu(d: int, factor: float = 1.0) -> float:
    """factor · 2.38/√d."""
    return factor * 2.38 / math.sqrt(d)


# Appendix A: target, start, dimension, then per sampler the columns "(initial) stepsize ν",
# "RM stepsize η", "RM rate ε", "T/M", "β", "α*", plus the subsample sizes from the text
# (30 / 50 in 2-D, 100 / 100 in 32-D) and the Matérn kernel l = 2, ν = 4.
TABLES = {
    "paper_bimodal": {  # Table 1
        "target": "bimodal", "dim": 2, "start": [-8.0, 0.0],
        "rw": {"nu": math.sqrt(15)},
        "am": {"nu": nu(2), "eta": 0.1},
        "rbam": {"eta": 0.1},
        "gam": {"nu": nu(2), "eps": 0.75, "alpha": 0.234},
        "kam": {"nu": nu(2, 2), "eps": 0.75, "alpha": 0.234, "m": 30},
        "ckam": {"nu": nu(2, 2), "eps": 0.75, "alpha": 0.234, "m": 50, "L": 1000, "beta": 0.4},
    },
    "paper_gmm2d": {  # Table 2
        "target": "gmm2d", "dim": 2, "start": [0.0, 0.0],
        "rw": {"nu": math.sqrt(15)},
        "am": {"nu": nu(2), "eta": 0.01},
        "rbam": {"eta": 0.001},
        "gam": {"nu": nu(2), "eps": 0.75, "alpha": 0.234},
        "kam": {"nu": nu(2, 2), "eps": 0.75, "alpha": 0.234, "m": 30},
        "ckam": {"nu": nu(2, 2), "eps": 0.75, "alpha": 0.234, "m": 50, "L": 1000, "beta": 0.4},
    },
    "paper_gmm32": {  # Table 3
        "target": "gmm32", "dim": 32, "start": [0.0] * 32,
        "rw": {"nu": nu(32)},
        "am": {"nu": nu(32), "eta": 0.01},
        "rbam": {"eta": 0.001},
        "gam": {"nu": nu(32), "eps": 0.75, "alpha": 0.234},
        "kam": {"nu": nu(32, 2), "eps": 0.75, "alpha": 0.234, "m": 100},
        "ckam": {"nu": nu(32, 2), "eps": 0.75, "alpha": 0.234, "m": 100, "L": 8000, "beta": 0.6},
    },
}


@functools.lru_cache(maxsize=None)
def composed(*overrides):
    """The composed config with its ``hydra`` node (cached: tests only read it)."""
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=True)


def options(group: str) -> list[str]:
    root = resources.files("ckam_bench.conf") / group
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


def sampler_values(cfg) -> dict:
    """The resolved sampler node as a flat {dotted key: value} dict (kernel left out)."""
    node = OmegaConf.to_container(cfg.sampler, resolve=True)
    node.pop("kernel", None)
    flat = {}

    def walk(prefix, value):
        if isinstance(value, dict):
            for key, sub in value.items():
                walk(f"{prefix}{key}.", sub)
        else:
            flat[prefix[:-1]] = value

    walk("", node)
    return flat


def expected_values(row: dict) -> dict:
    """The dotted sampler keys a table row fixes."""
    out = {}
    if "nu" in row:
        out["step_size"] = row["nu"]
    if "eta" in row:  # the constant rate η as scale · (1 + t)^0
        out["rate._target_"] = "ckam_bench.schedules.PowerDecay"
        out["rate.scale"] = row["eta"]
        out["rate.exponent"] = 0.0
    if "eps" in row:
        out["adaptation._target_"] = "ckam_bench.schedules.RobbinsMonro"
        out["adaptation.epsilon"] = row["eps"]
        out["adaptation.target_accept"] = row["alpha"]
        out["adaptation.scale"] = 1.0
    if "m" in row:
        out["subsample_size"] = row["m"]
    if "L" in row:
        out["cycle.cycle_length"] = row["L"]
        out["cycle.beta"] = row["beta"]
    return out


# ------------------------------------------------------------------------ the paper's tables
@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize("experiment", PAPER)
def test_preset_has_the_table_values(experiment, sampler):
    table = TABLES[experiment]
    cfg = composed(f"experiment={experiment}", f"sampler={sampler}")
    values = sampler_values(cfg)
    for key, want in expected_values(table[sampler]).items():
        assert key in values, f"{experiment}/{sampler}: no {key}"
        if isinstance(want, str):
            assert values[key] == want, key
        else:
            assert values[key] == pytest.approx(want, rel=1e-12), key
    # No other step size or rate sneaks in: AM/RBAM keep a constant rate, the others none.
    # (GAM adds the offset t0 = 100 to the paper's (1 + t)^-0.75, conf/sampler/gam.yaml.)
    has_rate = "rate._target_" in values
    assert has_rate == ("eta" in table[sampler])
    if sampler in ("kam", "ckam"):
        assert OmegaConf.to_container(cfg.kernel) == {
            "_target_": "ckam_bench.kernels.Matern", "lengthscale": 2.0, "smoothness": 4.0}
        assert cfg.sampler.kernel == cfg.kernel
    assert OmegaConf.to_container(cfg.start) == table["start"]
    assert cfg.target.dim == table["dim"]
    assert (composed(f"experiment={experiment}")
            .hydra.runtime.choices.target) == table["target"]


@pytest.mark.parametrize("experiment", PAPER)
def test_noise_schedules(experiment):
    """KAM: 4 → 1 over the run, burn-in 40 % of it (the run planned in iterations in the preset,
    reported by describe()); cKAM: 4 → 1 over each whole cycle."""
    dim = TABLES[experiment]["dim"]
    kam = instantiate(composed(f"experiment={experiment}", "sampler=kam").sampler)
    horizon = kam.noise.horizon
    assert horizon >= 1_000_000  # a run of the experiment's budget, not the 100k default
    assert kam.noise == NoiseDecay(start=4.0, end=1.0, rate=0.55, horizon=horizon)
    assert kam.burnin == int(0.4 * horizon)
    assert (kam.describe()["burnin"], kam.describe()["noise_horizon"]) == (kam.burnin, horizon)
    short = instantiate(composed(f"experiment={experiment}", "sampler=kam", "budget.seconds=10").sampler)
    assert short.noise.horizon == pytest.approx(horizon / composed(f"experiment={experiment}").budget.seconds * 10, rel=1e-6)
    ckam = instantiate(composed(f"experiment={experiment}", "sampler=ckam").sampler)
    assert ckam.noise == NoiseDecay(start=4.0, end=1.0, rate=0.55, horizon=TABLES[experiment]["ckam"]["L"])
    assert ckam.cycle_length == TABLES[experiment]["ckam"]["L"]
    assert ckam.step_size == pytest.approx(nu(dim, 2))


@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize("experiment", PAPER)
def test_preset_instantiates_and_samples(experiment, sampler):
    cfg = composed(f"experiment={experiment}", f"sampler={sampler}")
    target = instantiate(cfg.target)
    chain = instantiate(cfg.sampler)
    row = TABLES[experiment][sampler]
    if "nu" in row:
        assert chain.step_size == pytest.approx(row["nu"])
    if "eta" in row:
        assert chain.rate(0) == chain.rate(10**9) == row["eta"]
        assert chain.describe()["adaptation"] == "non-diminishing"
    elif sampler == "ckam":
        assert chain.describe()["adaptation"] == "non-diminishing"  # cKAM as published
    elif sampler != "rw":
        assert chain.describe()["adaptation"] == "diminishing"
    if "m" in row:
        assert chain.subsample_size == row["m"]
    if "eps" in row:
        assert (chain.adaptation.epsilon, chain.adaptation.target_accept) == (row["eps"], row["alpha"])
    x0 = np.asarray(OmegaConf.to_container(cfg.start), float)
    np.testing.assert_array_equal(x0, TABLES[experiment]["start"])
    state = chain.init(target, x0, np.random.default_rng(0))
    state, block = chain.advance(state, 50)
    assert state.t == 50 and np.all(np.isfinite(state.x))


def test_command_line_overrides_win_over_presets():
    cfg = composed("experiment=paper_gmm32", "sampler=ckam", "sampler.cycle.cycle_length=500",
                   "sampler.subsample_size=7", "sampler.step_size=0.5", "budget.seconds=2",
                   "start=[" + ",".join(["1.0"] * 32) + "]")
    assert (cfg.sampler.cycle.cycle_length, cfg.sampler.subsample_size) == (500, 7)
    assert cfg.sampler.step_size == 0.5 and cfg.budget.seconds == 2
    assert cfg.sampler.noise.horizon == 500  # the noise horizon follows the cycle length
    assert list(cfg.start) == [1.0] * 32
    cfg = composed("experiment=paper_bimodal", "sampler=am", "sampler.rate.scale=0.5")
    assert cfg.sampler.rate.scale == 0.5
    cfg = composed("experiment=paper_gmm2d", "sampler=kam", "kernel=gaussian")
    assert instantiate(cfg.sampler).kernel.name == "gaussian"
    # a group override beats the experiment's choice, and the preset still applies
    cfg = composed("experiment=paper_gmm2d", "sampler=rbam", "target=gmm2d_authors")
    assert cfg.target.variance == "authors" and cfg.sampler.rate.scale == 0.001


def test_a_schedule_slot_can_be_swapped_under_a_preset():
    """Presets set no schedule keys of their own, so a slot swaps as under the defaults."""
    cfg = composed("experiment=paper_gmm32", "sampler=ckam", "schedule@sampler.noise=constant",
                   "sampler.noise.value=0.2")
    assert instantiate(cfg.sampler).noise == Constant(0.2)


def test_without_experiment_no_preset_applies():
    plain = composed("sampler=rw", "target=gmm32")
    assert plain.sampler.step_size == pytest.approx(math.sqrt(15)) and plain.start is None
    paper = composed("experiment=paper_gmm32", "sampler=rw")
    assert paper.sampler.step_size == pytest.approx(nu(32))


def test_every_preset_belongs_to_an_experiment_and_a_sampler():
    """A misspelt preset folder or file would silently never apply."""
    root = resources.files("ckam_bench.conf") / "preset"
    experiments, samplers = set(options("experiment")), set(options("sampler"))
    found = 0
    for folder in root.iterdir():
        if not folder.is_dir() or folder.name.startswith("__"):
            continue
        if folder.name == "reference":  # ckam-bench-reference's presets (conf/reference.yaml)
            continue
        assert folder.name in experiments, f"preset/{folder.name}: no such experiment"
        for file in folder.iterdir():
            if not file.name.endswith(".yaml"):
                continue
            sampler = file.name[:-5]
            assert sampler in samplers, f"preset/{folder.name}/{file.name}: no such sampler"
            cfg = composed(f"experiment={folder.name}", f"sampler={sampler}")
            assert cfg.hydra.runtime.choices["preset@sampler"] == f"{folder.name}/{sampler}"
            found += 1
    assert found >= 18


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_sweep_composes(experiment):
    """Every (sampler, kernel) an experiment sweeps by default composes and instantiates."""
    cfg = composed(f"experiment={experiment}")
    params = cfg.hydra.sweeper.params
    assert set(params) <= {"sampler", "kernel", "seed", "target.model"}  # target.model: a suite
    seeds = [int(s) for s in str(params.seed).split(",")]
    assert seeds == list(range(len(seeds))) and len(seeds) >= 5  # 5 (cKAM) or the paper's repeats
    samplers = str(params.get("sampler", cfg.hydra.runtime.choices.sampler)).split(",")
    kernels = str(params.get("kernel", cfg.hydra.runtime.choices.kernel)).split(",")
    for sampler in samplers:
        for kernel in kernels:
            extra = (f"kernel={kernel}",) if "kernel" in params else ()
            run = composed(f"experiment={experiment}", f"sampler={sampler}", *extra)
            assert run.hydra.runtime.choices["preset@sampler"] == f"{experiment}/{sampler}"
            instantiate(run.target)
            instantiate(run.sampler)
            assert run.budget.seconds > 0


def test_long_and_kernel_experiments_reuse_the_table_values():
    main = composed("experiment=paper_bimodal", "sampler=ckam")
    long = composed("experiment=paper_bimodal_long")
    kernels = composed("experiment=paper_bimodal_kernels")
    assert long.hydra.runtime.choices.sampler == kernels.hydra.runtime.choices.sampler == "ckam"
    assert sampler_values(long) == sampler_values(kernels) == sampler_values(main)
    assert set(str(kernels.hydra.sweeper.params.kernel).split(",")) == {"linear", "gaussian", "matern"}
    # Figures tell the sets of cKAM runs apart by budget (longest: Fig. 4; the kernel runs'
    # own budget: Fig. 13; the comparison's: Fig. 3), so the three must differ.
    budgets = {main.budget.seconds, long.budget.seconds, kernels.budget.seconds}
    assert len(budgets) == 3 and long.budget.seconds == max(budgets)
    main2 = composed("experiment=paper_gmm2d", "sampler=ckam")
    long2 = composed("experiment=paper_gmm2d_long")
    assert sampler_values(long2) == sampler_values(main2)
    assert long2.budget.seconds > main2.budget.seconds


def test_authors_variants():
    cfg = composed("experiment=paper_bimodal_authors", "sampler=ckam_authors")
    target = instantiate(cfg.target)
    np.testing.assert_allclose(target.weights, [1 / 3, 2 / 3])
    values = sampler_values(cfg)
    assert values["step_size"] == pytest.approx(4 * 2.38**2 / 2, rel=1e-4)
    assert values["adaptation.epsilon"] == 2.0
    table = TABLES["paper_bimodal"]["ckam"]
    assert (values["subsample_size"], values["cycle.cycle_length"], values["cycle.beta"],
            values["adaptation.target_accept"]) == (table["m"], table["L"], table["beta"], table["alpha"])
    assert "ckam_authors" in str(cfg.hydra.sweeper.params.sampler).split(",")
    # the other samplers keep Table 1
    for sampler in ("rw", "am", "rbam", "gam", "kam", "ckam"):
        variant = sampler_values(composed("experiment=paper_bimodal_authors", f"sampler={sampler}"))
        assert variant == sampler_values(composed("experiment=paper_bimodal", f"sampler={sampler}"))
    cfg = composed("experiment=paper_gmm2d_authors", "sampler=rbam")
    assert instantiate(cfg.target).name == "gmm2d_authors" and cfg.sampler.rate.scale == 0.001


def test_slurm_launcher_config():
    cfg = composed("experiment=paper_bimodal", "hydra/launcher=slurm",
                   "hydra.launcher.partition=cpu")
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    assert (launcher.cpus_per_task, launcher.tasks_per_node, launcher.partition) == (1, 1, "cpu")
    assert any("OMP_NUM_THREADS=1" in line for line in launcher.setup)
    # the time limit must outlast the longest paper run's wall cap (2 x budget + 60 s) plus
    # submitit's warning (signal_delay_s)
    # (time-budgeted experiments; iteration-capped ones end long before their nominal seconds)
    budgets = [composed(f"experiment={e}").budget for e in options("experiment")]
    timed = [b for b in budgets if b.max_iterations is None and b.max_density is None and b.max_grad is None]
    longest = max(b.seconds for b in timed)
    assert launcher.timeout_min * 60 > 2 * longest + 60 + launcher.signal_delay_s
    # evaluation-budgeted suites (posteriordb) stop at their wall-clock guard at the latest
    for b in budgets:
        if b.max_iterations is None and (b.max_density is not None or b.max_grad is not None):
            assert b.wall_seconds is not None
            assert launcher.timeout_min * 60 > b.wall_seconds + launcher.signal_delay_s


def test_sweep_folders_are_unique_per_sweep():
    fresh = composed.__wrapped__  # two compositions, as two `ckam-bench -m` calls make
    first = fresh("experiment=paper_bimodal").hydra.sweep.dir
    second = fresh("experiment=paper_bimodal").hydra.sweep.dir
    assert first != second
    assert re.fullmatch(r"outputs/multirun/\d{4}-\d\d-\d\d/\d\d-\d\d-\d\d_[0-9a-f]{8}", first)


def test_reproduce_script_header_matches_the_configs():
    text = SCRIPT.read_text()
    assert os.access(SCRIPT, os.X_OK) and "set -euo pipefail" in text
    rows = re.findall(r"^#   (paper_\w+)\s.*?\s(\d+) s\s+(\d+)\s+(\d+) s$", text, flags=re.M)
    assert {r[0] for r in rows} == {"paper_bimodal", "paper_gmm2d", "paper_gmm32",
                                    "paper_bimodal_long", "paper_gmm2d_long",
                                    "paper_bimodal_kernels"}
    total = 0
    for name, budget, runs, seconds in rows:
        cfg = composed(f"experiment={name}")
        params = cfg.hydra.sweeper.params
        count = len(str(params.seed).split(","))
        for group in ("sampler", "kernel"):
            if group in params:
                count *= len(str(params[group]).split(","))
        assert float(budget) == cfg.budget.seconds, name
        assert int(runs) == count and int(seconds) == count * cfg.budget.seconds, name
        total += int(seconds)
    assert re.search(rf"^#   total\s+\d+\s+{total} s$", text, flags=re.M)


# ------------------------------------------------------------------------------- sweeps
def cli(*args, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", *args], cwd=cwd, env=env,
                      capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def check_run_folder(path: Path, experiment: str) -> None:
    """A sweep job folder holds its config snapshot, with the preset applied, and its results."""
    for name in ("config.yaml", "overrides.yaml", "hydra.yaml"):
        assert (path / ".hydra" / name).is_file(), path
    run = load_run(path)
    assert run.status["state"] == "complete"
    sampler = run.status["sampler"]
    hydra_cfg = OmegaConf.load(path / ".hydra" / "hydra.yaml")
    assert hydra_cfg.hydra.runtime.choices["preset@sampler"] == f"{experiment}/{sampler}"
    want = expected_values(TABLES[experiment][sampler])
    got = sampler_values(OmegaConf.create(run.config))
    for key, value in want.items():
        assert got[key] == (value if isinstance(value, str) else pytest.approx(value)), key
    # checkpoints at 0.1, 0.147, 0.215, … s (6 per decade) and at the end: a curve, not a point
    assert len(run.trace) >= 4, run.trace[["sampler_seconds"]]


@pytest.mark.slow  # a real joblib sweep (~25 s)
def test_joblib_sweep_runs_every_job_and_renders(tmp_path):
    cli("-m", "experiment=paper_bimodal", "sampler=rw,ckam", "seed=0,1", "budget.seconds=1",
        "progress=false", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", cwd=tmp_path)
    sweeps = list((tmp_path / "outputs" / "multirun").glob("*/*"))
    assert len(sweeps) == 1, sweeps  # one folder per sweep, shared by its jobs
    runs = find_runs(tmp_path / "outputs")
    assert len(runs) == 4 and all(p.parent == sweeps[0] for p in runs)
    assert sorted(p.name.split("_", 1)[1] for p in runs) == [
        "ckam_bimodal_s0", "ckam_bimodal_s1", "rw_bimodal_s0", "rw_bimodal_s1"]
    for path in runs:
        check_run_folder(path, "paper_bimodal")
    report = tmp_path / "report"
    proc = clirun.run([sys.executable, "-m", "ckam_bench.report.cli", str(tmp_path / "outputs"),
                           "--out", str(report), "--figures", "3", "--formats", "png"],
                      capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "loaded 4 runs" in proc.stdout and "skipped" not in proc.stdout
    assert (report / "fig03_kl_bimodal.png").is_file()
    md = (report / "report.md").read_text()
    assert "| bimodal | rw | none | 2 | 0, 1 | complete 2 |" in md
    assert "| bimodal | ckam | matern | 2 | 0, 1 | complete 2 |" in md


@pytest.mark.slow  # two new interpreters sweeping at once (6 s)
def test_concurrent_sweeps_get_their_own_folders(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = [sys.executable, "-m", "ckam_bench.commands.cli", "-m", "experiment=paper_gmm2d", "sampler=rw",
            "seed=0", "budget.seconds=0.3", "progress=false"]
    procs = [subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]
    sweeps = sorted((tmp_path / "outputs" / "multirun").glob("*/*"))
    assert len(sweeps) == 2, sweeps
    for sweep in sweeps:
        runs = find_runs(sweep)
        assert len(runs) == 1
        check_run_folder(runs[0], "paper_gmm2d")


@pytest.mark.slow
def test_submitit_local_sweep(tmp_path):
    sweep = tmp_path / "sweep"
    # cKAM collects nothing in its first 4 800 iterations (exploration: beta x cycle), 0.6 s
    # alone; 1 s of wall time on a loaded machine did not reach them (CI, 2026-12-01): 3 s of
    # the thread's CPU time, which other processes do not consume
    cli("-m", "experiment=paper_gmm32", "sampler=gam,ckam", "seed=3", "budget.seconds=3",
        "budget.clock=cpu", "progress=false", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5",
        f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    runs = find_runs(sweep)
    assert [p.name for p in runs] == ["0_gam_gmm32_s3", "1_ckam_gmm32_s3"]
    for path in runs:
        check_run_folder(path, "paper_gmm32")
        assert load_run(path).status["seed"] == 3
    assert list((sweep / ".submitit").iterdir())  # submitit's job logs


@pytest.mark.slow
def test_reproduce_script_quick(tmp_path):
    """The whole pipeline with one seed: every figure and table of the paper is rendered."""
    out = tmp_path / "quick"
    # the console scripts of this interpreter's environment, activated or not
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = clirun.run(["bash", str(SCRIPT), "--quick", "--seeds", "1", "--out", str(out)],
                      cwd=tmp_path, env=env, capture_output=True, text=True, timeout=2400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "skipped" not in proc.stdout
    report = out / "report"
    assert len(list(report.glob("fig*.png"))) == 14
    for n in (1, 2, 3):
        assert list(report.glob(f"table{n}_*.md")), n
    # a second call finds every experiment complete and only re-renders
    again = clirun.run(["bash", str(SCRIPT), "--quick", "--seeds", "1", "--out", str(out)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and again.stdout.count("not run again") == 6


def test_the_suite_sweep_uses_every_core_unless_told_otherwise():
    """experiment=posteriordb runs its jobs in joblib workers, one per usable core (n_jobs -1),
    each single-threaded; a launcher named on the command line wins (basic: one after another
    in the sweep's process; slurm: grouped array jobs, unchanged)."""
    pytest.importorskip("pymc")  # the suite's resolver lists PyMC models; CI installs the extra
    suite = composed("experiment=posteriordb").hydra
    assert suite.launcher._target_.endswith("JoblibLauncher") and suite.launcher.n_jobs == -1
    assert composed("experiment=posteriordb").threads == 1
    basic = composed("experiment=posteriordb", "hydra/launcher=basic").hydra.launcher
    assert basic._target_.endswith("BasicLauncher")
    slurm = composed("experiment=posteriordb", "hydra/launcher=slurm").hydra.launcher
    assert "slurm" in slurm._target_.lower()
    assert composed("experiment=paper_gmm2d").hydra.launcher._target_.endswith("BasicLauncher")
