r"""Simulation-based calibration (Talts et al. 2018, "Validating Bayesian inference algorithms
with simulation-based calibration"): ``ckam-bench-sbc sampler=... target=pymc target.model=...``.

A sampler's stationarity check needs exact draws of π; a posterior has none. SBC checks a sampler
on a model's posteriors *on average*: for i = 1 … N draw :math:`\theta_i \sim p(\theta)` and
:math:`y_i \sim p(y \mid \theta_i)` (one joint prior / prior-predictive draw, :func:`pymc.draw`
seeded ``sbc.seed``), run the sampler on :math:`p(\theta \mid y_i)` and keep L = ``sbc.draws``
evenly thinned posterior draws; the rank :math:`r_i = \#\{l : \theta^{(l)} < \theta_i\}` of each
stored variable is uniform on {0, …, L} when the sampler draws from the posterior (the
self-consistency of the joint distribution), whatever the model.

**Runs.** Simulation i is an ordinary ``ckam-bench`` run of the same configuration (sampler,
budget, checkpoints, metrics: every key of ``conf/base.yaml`` applies) with ``seed=i`` and
``target.data`` = the simulated data of simulation i (:class:`~ckam_bench.targets.pymc.PyMCModel`
reads observed data at run time, so one compiled model serves every simulation). They run as one
``ckam-bench -m`` sweep into ``runs/``, so Hydra's launchers apply (``hydra/launcher=joblib`` runs
them in local processes, ``hydra/launcher=slurm`` on a cluster) and so does the harness's resume:
running ``ckam-bench-sbc … sbc.dir=FOLDER`` again skips the complete runs and resumes the others
from their last checkpoint. The ranks are read from each run's ``samples.parquet`` (the model's
variables on the constrained scale: free variables and deterministics).

**Verdict.** Per variable k, a chi-square test of uniformity of the ranks in ``sbc.bins`` equal
bins (Talts et al.'s histogram; each bin has probability 1/bins); the verdict's p-value is the
Bonferroni-corrected smallest one, :math:`p = \min(1, K \min_k p_k)`, and the sampler *fails* when
p < ``sbc.alpha``. Autocorrelated draws also make ranks non-uniform (too many extreme ranks): the
table records each run's bulk ESS, and the verdict warns when the median is below L.

**Outputs** (a new folder ``outputs/sbc/DATE/TIME_SAMPLER_MODEL_UID``, or ``sbc.dir``): its
marker (the configuration's hash: a folder of another configuration is refused untouched),
``simulations/<i>.npz`` (the simulated data), ``truth.npz`` (the θ_i of every stored variable),
``runs/sim_<i>/`` (the runs), ``ranks.parquet`` (simulation, variable, rank, ESS),
``rank_histograms.png`` (each variable's rank histogram with the central 1 − α band of a bin
count, Binomial(N, 1/bins)), ``ecdf_difference.png`` (ECDF of the fractional ranks minus the
uniform CDF, with the simultaneous 1 − α band of Säilynoja, Bürkner and Vehtari 2022 from
arviz-stats) and ``verdict.json``. Every file is written atomically (:mod:`ckam_bench.rundir`).

Exit codes: 0 the verdict is *pass*; 1 *fail* (or no simulation could be used); 2 invalid
configuration or refused folder (nothing created).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import numpy as np

from ckam_bench import rundir, store
from ckam_bench.validate import ConfigError, resolved

EXIT_PASS, EXIT_FAIL, EXIT_CONFIG = 0, 1, 2
TRUTH = "truth.npz"
RANKS = "ranks.parquet"
VERDICT = "verdict.json"


# ---------------------------------------------------------------------------- settings
def check_settings(sbc) -> None:
    """Range checks of the ``sbc`` block (ConfigError naming the key)."""
    def integer(key, low, high):
        value = sbc.get(key)
        if not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
            raise ConfigError(f"sbc.{key}: must be an integer in [{low}, {high:,}], got {value!r}")

    integer("simulations", 2, 100_000)
    integer("draws", 1, 100_000)
    integer("bins", 2, 100_000)
    integer("seed", 0, 2**32 - 1)
    if (sbc["draws"] + 1) % sbc["bins"]:
        raise ConfigError(f"sbc.bins: must divide sbc.draws + 1 = {sbc['draws'] + 1}, got {sbc['bins']}")
    alpha = sbc.get("alpha")
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise ConfigError(f"sbc.alpha: must be a number in (0, 1), got {alpha!r}")


def config_hash(plain: dict) -> str:
    """Hash of what an SBC computes: the resolved configuration without Hydra's settings, the
    progress bar, the root seed (each simulation has its own) and the folder."""
    plain = {k: v for k, v in plain.items() if k not in ("hydra", "progress", "seed")}
    plain["sbc"] = {k: v for k, v in plain["sbc"].items() if k != "dir"}
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()


# ---------------------------------------------------------------------------- simulations
def simulate(target, n: int, seed: int) -> tuple[dict, list[dict]]:
    """``n`` joint prior / prior-predictive draws of the target's model: the stored variables'
    values ``{element name: (n,)}`` on the constrained scale and, per draw, the simulated data
    ``{data name: array}`` for :meth:`~ckam_bench.targets.pymc.PyMCModel.set_data`."""
    import pymc as pm
    from pytensor.compile.sharedvalue import SharedVariable

    layout = target.layout
    for var, shape, _, where in layout.data.values():  # covariates as the target has them
        if isinstance(var, SharedVariable):
            var.set_value(target.buffer[where].reshape(shape).astype(var.dtype))
    observed = [rv for rv in target.model.observed_RVs if rv.name in layout.observed]
    params = [var for _, var, _ in layout.stored]
    draws = pm.draw([*params, *observed], draws=n, random_seed=seed)
    truth = np.concatenate([np.asarray(d, dtype=float).reshape(n, -1) for d in draws[:len(params)]],
                           axis=1)
    data = [{layout.observed[rv.name]: np.asarray(d[i]) for rv, d in zip(observed, draws[len(params):])}
            for i in range(n)]
    return {name: truth[:, j] for j, name in enumerate(target.stored_names)}, data


def write_simulations(folder: Path, truth: dict, data: list[dict]) -> None:
    """``simulations/<i>.npz`` then ``truth.npz`` (its presence marks the set complete)."""
    sims = folder / "simulations"
    sims.mkdir(exist_ok=True)
    for i, arrays in enumerate(data):
        rundir.atomic_write(sims / f"{i}.npz", lambda tmp, a=arrays: _savez(tmp, a))
    rundir.atomic_write(folder / TRUTH, lambda tmp: _savez(tmp, truth))


def _savez(tmp, arrays: dict) -> None:
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


# ---------------------------------------------------------------------------- ranks and test
def ranks_of(draws: np.ndarray, truth: float) -> int:
    """Number of posterior draws below the true value."""
    return int(np.count_nonzero(draws < truth))


def thin(n: int, k: int) -> np.ndarray:
    """``k`` evenly spaced row indices of ``n`` rows."""
    return np.unique(np.linspace(0, n - 1, k).round().astype(int)) if n >= k else np.arange(0)


def uniformity_test(ranks: np.ndarray, draws: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``ranks`` (N, K) in {0 … draws}: bin counts (bins, K) and the chi-square
    p-value of equal bin probabilities."""
    from scipy.stats import chisquare

    per_bin = (draws + 1) // bins
    counts = np.stack([np.bincount(ranks[:, k] // per_bin, minlength=bins) for k in range(ranks.shape[1])],
                      axis=1)
    return counts, np.atleast_1d(chisquare(counts, axis=0).pvalue)


def verdict(ranks: np.ndarray, names: list[str], draws: int, bins: int, alpha: float) -> dict:
    counts, pvalues = uniformity_test(ranks, draws, bins)
    p = float(min(1.0, len(names) * pvalues.min()))
    worst = int(np.argmin(pvalues))
    return {"verdict": "pass" if p >= alpha else "fail", "p_value": p, "alpha": alpha,
            "test": (f"chi-square test of uniform ranks in {bins} bins per variable, "
                     f"Bonferroni-corrected over {len(names)} variables"),
            "worst_variable": names[worst], "p_values": dict(zip(names, pvalues.tolist())),
            "simulations": int(ranks.shape[0]), "draws": draws, "bins": bins,
            "counts": {n: counts[:, k].tolist() for k, n in enumerate(names)}}


def collect(folder: Path, truth: dict, n: int, draws: int) -> tuple[np.ndarray, list, dict]:
    """Ranks (used simulations, K) from the runs in ``runs/``, the used simulations' rows for
    ranks.parquet, and why the others were left out."""
    names = list(truth)
    ranks, rows, left_out = [], [], {}
    for i in range(n):
        path = folder / "runs" / f"sim_{i}"
        try:
            run = store.load_run(path)
        except (OSError, ValueError) as exc:
            left_out[i] = f"no readable run ({type(exc).__name__})"
            continue
        state = run.status.get("state")
        if state != "complete" or run.samples is None:
            left_out[i] = f"run {state or 'missing'}"
            continue
        keep = thin(len(run.samples), draws)
        if keep.size < draws:
            left_out[i] = f"{len(run.samples)} stored draws, fewer than sbc.draws={draws}"
            continue
        frame = run.samples.iloc[keep]
        r = [ranks_of(frame[name].to_numpy(), truth[name][i]) for name in names]
        ess = float(run.trace["ess_min"].iloc[-1]) if "ess_min" in run.trace else float("nan")
        ranks.append(r)
        rows += [{"simulation": i, "variable": name, "rank": rank, "truth": float(truth[name][i]),
                  "ess_min": ess, "acceptance": float(run.trace["acceptance"].iloc[-1])}
                 for name, rank in zip(names, r)]
    return np.array(ranks, dtype=np.int64).reshape(-1, len(names)), rows, left_out


# ---------------------------------------------------------------------------- figures
def _grid(k: int):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(k, 4)
    rows = -(-k // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(3.2 * cols, 6.4), 2.4 * rows + 0.6),
                             squeeze=False)
    for ax in axes.ravel()[k:]:
        ax.set_visible(False)
    return plt, fig, axes.ravel()


def plot_histograms(path: Path, ranks: np.ndarray, names: list[str], draws: int, bins: int,
                    alpha: float) -> None:
    """Rank histograms with the central 1 − α interval of a bin's count under uniformity."""
    from scipy.stats import binom

    counts, _ = uniformity_test(ranks, draws, bins)
    n = ranks.shape[0]
    low, high = binom.ppf(alpha / 2, n, 1 / bins), binom.ppf(1 - alpha / 2, n, 1 / bins)
    plt, fig, axes = _grid(len(names))
    for k, (ax, name) in enumerate(zip(axes, names)):
        ax.axhspan(low, high, color="0.85", zorder=0)
        ax.axhline(n / bins, color="0.5", lw=0.8)
        ax.bar(np.arange(bins), counts[:, k], width=1.0, color="C0", edgecolor="white")
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
    fig.suptitle(f"SBC rank histograms ({n} simulations, {bins} bins)\nband: the {1 - alpha:.0%} "
                 "interval of a bin's count under uniform ranks", fontsize=9)
    fig.tight_layout()
    rundir.atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


def plot_ecdf_difference(path: Path, ranks: np.ndarray, names: list[str], draws: int,
                         alpha: float, seed: int) -> None:
    """ECDF of the fractional ranks (r + U(0, 1)) / (L + 1) minus the uniform CDF, with the
    simultaneous 1 − α band (arviz-stats' ``ecdf_pit``, Säilynoja et al. 2022)."""
    from arviz_stats.ecdf_utils import ecdf_pit

    rng = np.random.default_rng([seed, 2])
    frac = (ranks + rng.random(ranks.shape)) / (draws + 1)
    plt, fig, axes = _grid(len(names))
    for k, (ax, name) in enumerate(zip(axes, names)):
        z, ecdf, lower, upper = ecdf_pit(frac[:, k], 1 - alpha, 1000, rng=np.random.default_rng([seed, 3]))
        ax.fill_between(z, lower - z, upper - z, color="0.85", step="post")
        ax.step(z, ecdf - z, where="post", color="C0")
        ax.axhline(0, color="0.5", lw=0.8)
        ax.set_title(name, fontsize=9)
    fig.suptitle(f"SBC: ECDF of fractional ranks minus the uniform CDF ({ranks.shape[0]} "
                 f"simulations)\nband: simultaneous {1 - alpha:.0%} under uniform ranks", fontsize=9)
    fig.tight_layout()
    rundir.atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


# ---------------------------------------------------------------------------- command
def _say(message: str) -> None:
    print(f"ckam-bench-sbc: {message}", file=sys.stderr)


def _compose(overrides: list[str]):
    from hydra import compose, initialize_config_module

    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        return compose("sbc", overrides=overrides)


def _new_folder(plain: dict) -> Path:
    now = datetime.datetime.now()
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{now:%H-%M-%S}_{plain['sampler_name']}_{plain['target_name']}")
    return Path("outputs") / "sbc" / f"{now:%Y-%m-%d}" / f"{name}_{secrets.token_hex(4)}"


def run(argv: list[str]) -> int:
    """``ckam-bench-sbc`` with ``argv`` (Hydra overrides); returns the exit code."""
    from ckam_bench import cli

    sweep_args = [a for a in argv if a.startswith(("hydra/", "hydra.", "+hydra", "~hydra"))]
    overrides = [a for a in argv if a not in sweep_args]
    # 1. the configuration, checked and built once (writes nothing)
    try:
        cfg = _compose(overrides)
        plain = resolved(cfg)
        check_settings(plain["sbc"])
        if not str(cfg.target.get("_target_", "")).endswith("targets.pymc.PyMCModel"):
            raise ConfigError("target: ckam-bench-sbc simulates data from a PyMC model: "
                              "target=pymc target.model=...")
        choice = next((o.split("=", 1)[1] for o in overrides if o.startswith("sampler=")), "ckam")
        runner = cli.build(cfg, {"run_id": "sbc", "sampler": choice, "target": "pymc",
                                 "kernel": None, "seed": 0}, None)
    except ConfigError as exc:
        _say(f"invalid configuration: {exc}")
        return EXIT_CONFIG
    except Exception as exc:  # Hydra's own messages: an unknown group option or key
        _say(f"invalid configuration: {str(exc).splitlines()[0]}")
        return EXIT_CONFIG
    target, sbc = runner.target, plain["sbc"]
    digest = config_hash(plain)
    folder = Path(sbc["dir"]) if sbc["dir"] else _new_folder(
        {"sampler_name": choice, "target_name": target.name})
    created = rundir.missing_ancestors(folder)
    # 2. the folder: new, or an SBC of this configuration to resume
    try:
        claim = rundir.RunFolder.claim(folder, digest)
    except rundir.FolderRefused as exc:
        _say("refused: " + str(exc).replace("hydra.run.dir", "sbc.dir", 1))
        return EXIT_CONFIG
    except rundir.FolderBusy as exc:
        _say(f"refused: sbc.dir: {exc}")
        return EXIT_CONFIG
    try:
        return _calibrate(folder, target, plain, sbc, overrides, sweep_args)
    finally:
        claim.release()
        rundir.remove_empty(created)  # only when nothing was written (an early failure)


def _calibrate(folder: Path, target, plain, sbc, overrides, sweep_args) -> int:
    n, draws = sbc["simulations"], sbc["draws"]
    folder = folder.resolve()
    if not (folder / TRUTH).exists():
        _say(f"drawing {n} simulations from the prior of {target.name} into {folder}")
        truth, data = simulate(target, n, sbc["seed"])
        write_simulations(folder, truth, data)
    with np.load(folder / TRUTH, allow_pickle=False) as archive:
        truth = {name: archive[name] for name in target.stored_names}
    # 3. the runs: one ckam-bench sweep (launcher, resume and refusals are the harness's)
    passed = [o for o in overrides if not o.startswith(("sbc.", "seed="))]
    command = [sys.executable, "-m", "ckam_bench.cli", "-m", *passed, *sweep_args,
               f"seed=range(0,{n})", f"target.data={folder}/simulations/${{seed}}.npz",
               f"hydra.sweep.dir={folder / 'runs'}", "hydra.sweep.subdir=sim_${seed}",
               "~hydra.callbacks.sweep_report"]
    _say(f"running {n} simulations: {' '.join(command[2:])}")
    sweep = subprocess.run(command, env={**os.environ, "HYDRA_FULL_ERROR": "0"})
    if sweep.returncode not in (0, 2):
        _say(f"the sweep exited with {sweep.returncode}; ranking the simulations that completed")
    # 4. ranks, test, figures, verdict
    ranks, rows, left_out = collect(folder, truth, n, draws)
    names = list(truth)
    if ranks.shape[0] < 2:
        _say(f"no verdict: {ranks.shape[0]} usable simulations of {n} "
             f"({'; '.join(f'{i}: {w}' for i, w in list(left_out.items())[:3])})")
        return EXIT_FAIL
    import pandas as pd

    result = verdict(ranks, names, draws, sbc["bins"], sbc["alpha"])
    ess = np.array([r["ess_min"] for r in rows[::len(names)]])
    result.update({"left_out": {str(k): v for k, v in left_out.items()},
                   "median_ess_min": float(np.nanmedian(ess)) if np.isfinite(ess).any() else None,
                   "sampler": plain["sampler"].get("_target_"), "model": target.spec,
                   "config_hash": config_hash(plain), "folder": str(folder)})
    if result["median_ess_min"] is not None and result["median_ess_min"] < draws:
        result["warning"] = (f"median bulk ESS {result['median_ess_min']:.0f} < sbc.draws={draws}: "
                             "autocorrelated draws make ranks non-uniform; raise the budget")
    rundir.write_parquet(pd.DataFrame(rows), folder / RANKS)
    plot_histograms(folder / "rank_histograms.png", ranks, names, draws, sbc["bins"], sbc["alpha"])
    plot_ecdf_difference(folder / "ecdf_difference.png", ranks, names, draws, sbc["alpha"], sbc["seed"])
    rundir.write_json(result, folder / VERDICT)
    print(f"SBC {result['verdict'].upper()}: {result['sampler']} on {target.name}, "
          f"{result['simulations']} simulations, p = {result['p_value']:.3g} ({result['test']}; "
          f"worst: {result['worst_variable']}) -> {folder}")
    if "warning" in result:
        _say(result["warning"])
    return EXIT_PASS if result["verdict"] == "pass" else EXIT_FAIL


def main() -> None:
    """Console entry point ``ckam-bench-sbc``."""
    from ckam_bench.discovery import command_help

    if command_help("ckam-bench-sbc", sys.argv[1:]):
        return
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
