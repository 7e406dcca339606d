r"""Simulation-based calibration (Talts et al. 2018, "Validating Bayesian inference algorithms
with simulation-based calibration"): ``ckam-bench-sbc sampler=... target=pymc target.model=...``.

A sampler's stationarity check needs exact draws of π; a posterior has none. SBC checks a sampler
on a model's posteriors *on average*: for i = 1 … N draw :math:`\theta_i \sim p(\theta)` and
:math:`y_i \sim p(y \mid \theta_i)` (one joint prior / prior-predictive draw, :func:`pymc.draw`
seeded ``sbc.seed``; exact for the model's prior only when nothing restricts it beyond the
distributions: see :func:`prior_constraints`), run the sampler on :math:`p(\theta \mid y_i)`
and keep L = ``sbc.draws`` evenly thinned posterior draws; the rank
:math:`r_i = \#\{l : \theta^{(l)} < \theta_i\} + U_i` (U uniform over the ties,
:func:`ranks_of`) of each stored variable is uniform on {0, …, L} when the sampler draws from
the posterior (the self-consistency of the joint distribution), whatever the model.

**Runs.** Simulation i is an ordinary ``ckam-bench`` run of the same configuration (sampler,
budget, checkpoints, metrics: every key of ``conf/base.yaml`` applies) with ``seed=i`` and
``target.data`` = the simulated data of simulation i (:class:`~ckam_bench.targets.pymc.PyMCModel`
reads observed data at run time, so one compiled model serves every simulation). They run as one
``ckam-bench -m`` sweep into ``runs/``, so Hydra's launchers apply (``hydra/launcher=joblib`` runs
them in local processes, ``hydra/launcher=slurm`` on a cluster), plugins and ``hydra.searchpath``
too, and so does the harness's resume: ``ckam-bench-sbc … sbc.dir=FOLDER`` (an existing SBC
folder) skips the complete runs and resumes the others from their last checkpoint. The sweep
runs in its own process group holding the SBC folder's lock, and dies with this command
(:func:`_die_with`); Ctrl-C stops it (final checkpoints) and prints the resume command. Its
output is made concise (:mod:`ckam_bench.checks.sbc_progress`): one progress line instead of Hydra's launch line and
the end line of every run; errors and failed or flagged runs are printed as they come. The
ranks are read from each run's ``samples.parquet`` (the model's variables on the constrained
scale: free variables and deterministics); a run folder another process holds is never read.

**Verdict.** Only with every simulation (else *incomplete*, exit 3). Per variable k, a
chi-square test of uniformity of the ranks in ``sbc.bins`` equal bins (Talts et al.'s
histogram; each bin has probability 1/bins); the verdict's p-value is the Bonferroni-corrected
smallest one, :math:`p = \min(1, K \min_k p_k)`, and the sampler *fails* when p < ``sbc.alpha``.
The verdict states the test's power at this N (:func:`power`) and warns when it cannot detect
even a posterior sd halved. Autocorrelated draws also make ranks non-uniform (too many extreme
ranks): the table records each run's bulk ESS, and the verdict warns when the median is below L.

**Outputs** (a new folder ``outputs/sbc/DATE/TIME_SAMPLER_MODEL_UID``, or ``sbc.dir``): its
marker (the configuration's hash, and the model's identity — the sha256 of its source file and
of the arrays it reads, :func:`ckam_bench.engine.store.target_identity` — so a folder of another
configuration, or of this one on an edited model, is refused untouched),
``simulations/<i>.npz`` (the simulated data), ``truth.npz`` (the θ_i of every stored variable),
``runs/sim_<i>/`` (the runs), ``ranks.parquet`` (simulation, variable, rank, ESS),
``rank_histograms.png`` (each variable's rank histogram with the central 1 − α band of a bin
count, Binomial(N, 1/bins)), ``ecdf_difference.png`` (ECDF of the fractional ranks minus the
uniform CDF, with the simultaneous 1 − α band of Säilynoja, Bürkner and Vehtari 2022 from
arviz-stats) and ``verdict.json``. Every file is written atomically (:mod:`ckam_bench.engine.rundir`).

Exit codes: 0 the verdict is *pass*; 1 *fail*; 2 invalid configuration, a prior that cannot be
drawn exactly, or a refused folder (one line, nothing created); 3 *incomplete* (simulations
missing, no verdict); 130 interrupted (the resume command is printed).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np

from ckam_bench.checks.sbc_progress import SweepProgress
from ckam_bench.engine import rundir, store
from ckam_bench.commands.validate import ConfigError, resolved

EXIT_PASS, EXIT_FAIL, EXIT_CONFIG, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
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
    progress bar, the root seed (each simulation has its own) and the folder. The model's file
    is covered by its identity, which the folder's marker keeps beside this hash
    (:meth:`ckam_bench.engine.rundir.RunFolder.claim`)."""
    plain = {k: v for k, v in plain.items() if k not in ("hydra", "progress", "seed")}
    plain["sbc"] = {k: v for k, v in plain["sbc"].items() if k != "dir"}
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()


# ---------------------------------------------------------------------------- simulations
MIN_ACCEPTANCE = 0.01  # prior draws satisfying the model's support constraints, at least


def prior_constraints(model) -> list:
    r"""The free variables whose prior :func:`pymc.draw` does not sample as the model states it,
    read from the model's graph; raises ConfigError (naming ``target.model``) for a model whose
    prior SBC cannot draw exactly.

    The model's prior is :math:`p(\theta) \propto \prod_k p_k(\theta_k \mid \cdot)\,
    \prod_j e^{\phi_j(\theta)}\,\mathbb 1[\theta \in S]`, where :math:`\phi_j` are its
    ``pm.Potential`` terms and S the image of the value transforms; ``pymc.draw`` samples the
    product of the :math:`p_k` alone. So: a variable with an improper prior (``pm.Flat``,
    ``pm.HalfFlat``) or any ``pm.Potential`` is refused (no exact draw); an ``ordered``
    transform (S = {θ₁ < θ₂ < …}) is returned, and :func:`simulate` draws from the joint prior
    restricted to S by rejection, which is exact; any other transform that is not the variable's
    default one (which maps onto the distribution's own support) is refused."""
    from pymc.distributions.continuous import FlatRV, HalfFlatRV
    from pymc.distributions.transforms import Interval, Ordered, _default_transform
    from pytensor.graph.basic import equal_computations

    for rv in model.free_RVs:
        if isinstance(rv.owner.op, (FlatRV, HalfFlatRV)):
            raise ConfigError(f"target.model: {rv.name} has an improper prior "
                              f"({type(rv.owner.op).__name__[:-2]}); SBC draws the truth from "
                              "the prior, which must be a proper distribution")
    if model.potentials:
        raise ConfigError(f"target.model: the model has a pm.Potential "
                          f"({model.potentials[0].name}): its prior is not what pymc.draw "
                          "samples and SBC cannot draw it exactly; refused rather than a wrong "
                          "verdict")
    constrained = []
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        if transform is None:
            continue
        default = _default_transform(rv.owner.op, rv)
        if isinstance(transform, Ordered):
            constrained.append((rv, transform))
            continue
        same = type(transform) is type(default)
        if same and isinstance(transform, Interval):
            same = equal_computations(list(transform.get_a_and_b(rv.owner.inputs)),
                                      list(default.get_a_and_b(rv.owner.inputs)))
        if not same:
            raise ConfigError(f"target.model: {rv.name} has the transform "
                              f"{type(transform).__name__}, not its distribution's default: it may "
                              "restrict the prior's support, which pymc.draw ignores; refused "
                              "rather than a wrong verdict (ordered is supported)")
    return constrained


def _in_support(value: np.ndarray, transform) -> np.ndarray:
    """Per draw (first axis): does ``value`` lie in the image of the ``ordered`` transform
    (strictly ascending, or descending, along the last axis; positive first element when the
    transform says so)?"""
    diff = np.diff(value, axis=-1)
    ok = diff > 0 if getattr(transform, "ascending", True) else diff < 0
    ok = ok.reshape(len(value), -1).all(axis=1)
    if getattr(transform, "positive", False):
        first = value[..., :1] if getattr(transform, "ascending", True) else value[..., -1:]
        ok &= (first > 0).reshape(len(value), -1).all(axis=1)
    return ok


def simulate(target, n: int, seed: int) -> tuple[dict, list[dict]]:
    """``n`` joint prior / prior-predictive draws of the target's model: the stored variables'
    values ``{element name: (n,)}`` on the constrained scale and, per draw, the simulated data
    ``{data name: array}`` for :meth:`~ckam_bench.targets.pymc.PyMCModel.set_data`.

    A model with support constraints (:func:`prior_constraints`) is drawn by rejection:
    joint draws of the model's compiled random function (seeded ``seed``, as ``pymc.draw``), of
    which only those inside the support S are kept (exact: the prior is the product of the
    conditionals restricted to S); ConfigError once fewer than ``MIN_ACCEPTANCE`` of 100 or
    more tries were kept. Raises ConfigError for a model whose prior cannot be drawn exactly
    or at all."""
    import pymc as pm
    from pytensor.compile.sharedvalue import SharedVariable

    layout = target.layout
    constrained = prior_constraints(target.model)
    for var, shape, _, where in layout.data.values():  # covariates as the target has them
        if isinstance(var, SharedVariable):
            var.set_value(target.buffer[where].reshape(shape).astype(var.dtype))
    observed = [rv for rv in target.model.observed_RVs if rv.name in layout.observed]
    params = [var for _, var, _ in layout.stored]
    wanted = [*params, *observed, *(rv for rv, _ in constrained)]

    def failed(exc):
        return ConfigError(f"target.model: pymc.draw cannot draw the model's prior: "
                           f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")

    if not constrained:
        try:
            draws = [np.asarray(d) for d in pm.draw(wanted, draws=n, random_seed=seed)]
        except Exception as exc:  # e.g. a distribution without a random generator
            raise failed(exc) from None
    else:  # pymc.draw's own loop (one compiled function), keeping the draws inside S
        from pymc.pytensorf import compile as compile_fn

        try:
            fn = compile_fn(inputs=[], outputs=wanted, random_seed=int(seed))
        except Exception as exc:
            raise failed(exc) from None
        kept, tried, first = [], 0, len(params) + len(observed)
        while len(kept) < n:
            values = [np.array(v, copy=True) for v in fn()]
            tried += 1
            if all(_in_support(v[None], t)[0] for (_, t), v in zip(constrained, values[first:])):
                kept.append(values)
            if tried >= 100 and len(kept) < MIN_ACCEPTANCE * tried:  # at most ~n / MIN tries
                raise ConfigError(f"target.model: only {len(kept)} of {tried} prior draws satisfy "
                                  f"the support constraint of {constrained[0][0].name} (fewer "
                                  f"than {MIN_ACCEPTANCE:.0%}); SBC cannot draw its prior")
        draws = [np.stack(v) for v in zip(*kept)]
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
def ranks_of(draws: np.ndarray, truth: float, rng: np.random.Generator) -> int:
    r"""Rank of the true value among the posterior draws, ties broken at random (Talts et al.
    2018, §4.1): :math:`r = \#\{l : \theta^{(l)} < \theta\} + U`, U uniform on
    {0, …, #{l : θ⁽ˡ⁾ = θ}}. With no tie (a continuous variable) U = 0; for a quantity with
    atoms (a deterministic max(μ, 0), a discrete variable) the rank stays uniform on {0, …, L}
    for a correct sampler, where counting ``<`` alone would pile ranks in the lowest bins."""
    below = int(np.count_nonzero(draws < truth))
    ties = int(np.count_nonzero(draws == truth))
    return below + (int(rng.integers(0, ties + 1)) if ties else 0)


def tie_rng(seed: int, simulation: int) -> np.random.Generator:
    """The tie-breaking stream of one simulation (reproducible from ``sbc.seed``)."""
    return np.random.default_rng([seed, 1, simulation])


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


POWER_SCALES = (0.5, 2 ** -0.5)  # posterior sd too small by 2 (π⁴) and by √2 (π²)
POWER_REPLICATES = 400


def power(n: int, draws: int, bins: int, alpha: float, k: int = 1, scale: float = 2 ** -0.5,
          replicates: int = POWER_REPLICATES, seed: int = 0) -> float:
    r"""Monte Carlo rejection rate of :func:`verdict` (N = ``n`` simulations, L = ``draws``,
    ``bins``, level α, Bonferroni over ``k`` variables of which one is miscalibrated) against a
    sampler whose posterior sd is ``scale`` times the true one, on a Gaussian posterior (the
    conjugate normal model: the rank law depends on nothing else). Per replicate and
    simulation, the standardized truth :math:`z \sim N(0, 1)` is ranked among L iid draws of
    :math:`N(0, \text{scale}^2)`: the rank is :math:`\text{Binomial}(L, \Phi(z/\text{scale}))`,
    drawn as such. ``scale=1`` gives the test's size. ``scripts/sbc_power.py`` tabulates it
    and checks it against ranks of explicit draws."""
    from scipy.special import ndtr

    rng = np.random.default_rng([seed, 7])
    z = rng.standard_normal((n, replicates))
    ranks = rng.binomial(draws, ndtr(z / scale))  # (n, replicates): one SBC per column
    _, p = uniformity_test(ranks, draws, bins)
    return float(np.mean(np.minimum(1.0, k * p) < alpha))


def collect(folder: Path, truth: dict, n: int, draws: int, seed: int = 0
            ) -> tuple[np.ndarray, list, dict]:
    """Ranks (used simulations, K) from the runs in ``runs/``, the used simulations' rows for
    ranks.parquet, and why the others were left out. A run whose folder another process holds
    (its ``flock``, :class:`~ckam_bench.engine.rundir.FolderLock`) is still running: never counted."""
    names = list(truth)
    ranks, rows, left_out = [], [], {}
    for i in range(n):
        path = folder / "runs" / f"sim_{i}"
        lock = None
        if (path / rundir.LOCK).exists():
            try:
                lock = rundir.FolderLock(path).acquire()
            except rundir.FolderBusy:
                left_out[i] = "still running (its folder is held by another process)"
                continue
            except OSError as exc:
                left_out[i] = f"no readable run ({type(exc).__name__})"
                continue
        try:
            run = store.load_run(path)
        except (OSError, ValueError) as exc:
            left_out[i] = f"no run ({type(exc).__name__})"
            continue
        finally:
            if lock is not None:
                lock.release()
        state = run.status.get("state")
        if state != "complete" or run.samples is None:
            left_out[i] = f"run {state or 'missing'}"
            continue
        keep = thin(len(run.samples), draws)
        if keep.size < draws:
            left_out[i] = f"{len(run.samples)} stored draws, fewer than sbc.draws={draws}"
            continue
        frame = run.samples.iloc[keep]
        rng = tie_rng(seed, i)
        r = [ranks_of(frame[name].to_numpy(), truth[name][i], rng) for name in names]
        ess = float(run.trace["ess_min"].iloc[-1]) if "ess_min" in run.trace else float("nan")
        acc = float(run.trace["acceptance"].iloc[-1]) if "acceptance" in run.trace else float("nan")
        ranks.append(r)
        rows += [{"simulation": i, "variable": name, "rank": rank, "truth": float(truth[name][i]),
                  "ess_min": ess, "acceptance": acc}
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
        return compose("sbc", overrides=overrides, return_hydra_config=True)


def _new_folder(plain: dict) -> Path:
    now = datetime.datetime.now()
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{now:%H-%M-%S}_{plain['sampler_name']}_{plain['target_name']}")
    return Path("outputs") / "sbc" / f"{now:%Y-%m-%d}" / f"{name}_{secrets.token_hex(4)}"


def _existing_sbc(value: str) -> Path:
    """``sbc.dir``: an existing SBC folder (its marker present) to resume, else ConfigError."""
    folder = Path(value)
    if not folder.is_dir():
        raise ConfigError(f"sbc.dir: {folder} is not an existing folder; sbc.dir resumes an SBC "
                          "(leave it unset to start a new one)")
    if not (folder / rundir.MARKER).is_file():
        raise ConfigError(f"sbc.dir: {folder} is not an SBC folder (no {rundir.MARKER}); "
                          "nothing was changed")
    return folder


def resume_command(argv: list[str], folder: Path) -> str:
    """The command line that resumes the SBC in ``folder`` (``argv`` with ``sbc.dir`` set)."""
    import shlex

    kept = [a for a in argv if not a.startswith("sbc.dir=")]
    return shlex.join(["ckam-bench-sbc", *kept, f"sbc.dir={Path(folder).resolve()}"])


def run(argv: list[str]) -> int:
    """``ckam-bench-sbc`` with ``argv`` (Hydra overrides); returns the exit code."""
    from ckam_bench.commands import cli, overrides as override_check

    sweep_args = [a for a in argv if a.startswith(("hydra/", "hydra.", "+hydra", "~hydra"))]
    searchpath = [a for a in argv if a.startswith("hydra.searchpath=")]
    overrides = [a for a in argv if a not in sweep_args]
    # 1. the configuration, checked and built once (writes nothing)
    try:
        mistake = override_check.problem(argv, config_name="sbc", command="ckam-bench")
        if mistake:
            raise ConfigError(mistake)
        from omegaconf import OmegaConf

        composed = _compose(overrides + searchpath)
        choice = str(composed.hydra.runtime.choices.get("sampler"))  # the config's name
        cfg = OmegaConf.masked_copy(composed, [k for k in composed if k != "hydra"])
        plain = resolved(cfg)
        check_settings(plain["sbc"])
        if not str(cfg.target.get("_target_", "")).endswith("targets.pymc.PyMCModel"):
            raise ConfigError("target: ckam-bench-sbc simulates data from a PyMC model: "
                              "target=pymc target.model=...")
        _check_prior(plain["target"]["model"])  # before anything is compiled or written
        runner = cli.build(cfg, {"run_id": "sbc", "sampler": choice, "target": "pymc",
                                 "kernel": None, "seed": 0}, None)
        target, sbc = runner.target, plain["sbc"]
        folder = _existing_sbc(sbc["dir"]) if sbc["dir"] else None
    except ConfigError as exc:
        _say(f"invalid configuration: {exc}")
        return EXIT_CONFIG
    except KeyboardInterrupt:
        _say("interrupted; nothing was created")
        return EXIT_INTERRUPTED
    except Exception as exc:  # Hydra's own messages: an unknown group option or key
        _say(f"invalid configuration: {str(exc).splitlines()[0]}")
        return EXIT_CONFIG
    digest = config_hash(plain)
    simulated = None
    try:
        if folder is None or not (folder / TRUTH).exists():  # the prior draws, before any write
            simulated = simulate(target, sbc["simulations"], sbc["seed"])
    except ConfigError as exc:
        _say(f"invalid configuration: {exc}")
        return EXIT_CONFIG
    except KeyboardInterrupt:
        _say("interrupted; nothing was created")
        return EXIT_INTERRUPTED
    if folder is None:
        folder = _new_folder({"sampler_name": choice, "target_name": target.name})
    created = rundir.missing_ancestors(folder)
    # 2. the folder: new, or an SBC of this configuration to resume
    identity = runner.status_extra[store.IDENTITY_KEY]
    try:
        claim = rundir.RunFolder.claim(folder, digest, identity=identity)
    except rundir.TargetChanged as exc:
        _say(f"refused: sbc.dir: {folder} holds an SBC of this configuration on another model: "
             f"{'; '.join(exc.changes)} since it was drawn; nothing was changed: leave sbc.dir "
             "unset to start a new SBC of the model as it is now")
        return EXIT_CONFIG
    except rundir.FolderRefused as exc:
        _say("refused: " + str(exc).replace("hydra.run.dir", "sbc.dir", 1))
        return EXIT_CONFIG
    except rundir.FolderBusy as exc:
        _say(f"refused: sbc.dir: {exc} (an SBC still running there, or its sweep)")
        return EXIT_CONFIG
    previous = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _calibrate(folder, target, plain, sbc, overrides, sweep_args, choice, simulated,
                          claim.lock.fd)
    except KeyboardInterrupt:
        _say(f"interrupted; resume with: {resume_command(argv, folder)}")
        return EXIT_INTERRUPTED
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)
        claim.release()
        rundir.remove_empty(created)  # only when nothing was written (an early failure)


def _check_prior(spec) -> None:
    """ConfigError for a model whose prior SBC cannot draw (:func:`prior_constraints`); a
    model that does not load is left to the target's own checks."""
    from ckam_bench.targets.pymc import load_model

    try:
        model = load_model(spec)
    except Exception:
        return
    prior_constraints(model)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _die_with(parent: int):
    """The sweep's pre-exec hook: on Linux, SIGTERM when ``parent`` (this command) dies
    (``PR_SET_PDEATHSIG``; the runs then write a final checkpoint and stop, the watchdog of
    :mod:`ckam_bench.commands.sweeps` ends joblib workers); elsewhere the SBC folder's lock, passed to
    the sweep, still refuses a re-run while the sweep lives."""
    def hook():
        if sys.platform.startswith("linux"):
            import ctypes

            try:
                ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
            except (OSError, AttributeError):
                return
            if os.getppid() != parent:  # died before the hook ran
                os.kill(os.getpid(), signal.SIGTERM)
    return hook


GRACE = 90.0  # seconds the sweep has, after Ctrl-C, for its final checkpoints


def _sweep(command: list[str], lock_fd: int | None, n: int) -> int:
    """Run the sweep of ``n`` simulations in its own process group, holding the SBC folder's
    lock too (so a re-run is refused while it lives) and dying with this process; its output
    goes through :class:`~ckam_bench.checks.sbc_progress.SweepProgress` (a thread reads it, so the sweep never waits on a full pipe).
    Ctrl-C / SIGTERM here is passed on to the whole group (a final checkpoint in each run),
    then re-raised."""
    sys.stdout.flush()
    proc = subprocess.Popen(command, env={**os.environ, "HYDRA_FULL_ERROR": "0"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,  # our stdout: the verdict alone
                            text=True, errors="replace", bufsize=1,
                            start_new_session=True, preexec_fn=_die_with(os.getpid()),
                            pass_fds=(lock_fd,) if lock_fd is not None else ())
    progress = SweepProgress(n)

    def read():
        for line in proc.stdout:
            progress.feed(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = proc.wait()
        reader.join(timeout=30.0)  # a process the sweep left behind may hold the pipe open
        return code
    except KeyboardInterrupt:
        for sig, wait in ((signal.SIGINT, GRACE), (signal.SIGTERM, 10.0), (signal.SIGKILL, None)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                continue
        reader.join(timeout=5.0)
        raise
    finally:
        progress.close()


def _calibrate(folder: Path, target, plain, sbc, overrides, sweep_args, choice, simulated,
               lock_fd=None) -> int:
    n, draws = sbc["simulations"], sbc["draws"]
    folder = folder.resolve()
    if not (folder / TRUTH).exists():
        _say(f"drawing {n} simulations from the prior of {target.name} into {folder}")
        truth, data = simulated if simulated is not None else simulate(target, n, sbc["seed"])
        write_simulations(folder, truth, data)
    with np.load(folder / TRUTH, allow_pickle=False) as archive:
        truth = {name: archive[name] for name in target.stored_names}
    # 3. the runs: one ckam-bench sweep (launcher, resume and refusals are the harness's)
    passed = [o for o in overrides if not o.startswith(("sbc.", "seed="))]
    command = [sys.executable, "-m", "ckam_bench.commands.cli", "-m", *passed, *sweep_args,
               f"seed=range(0,{n})", f"target.data={folder}/simulations/${{seed}}.npz",
               f"hydra.sweep.dir={folder / 'runs'}", "hydra.sweep.subdir=sim_${seed}",
               "~hydra.callbacks.sweep_report"]
    _say(f"running {n} simulations (one ckam-bench sweep) into {folder / 'runs'}")
    code = _sweep(command, lock_fd, n)
    if code not in (0, 2):
        _say(f"the sweep exited with {code}")
    # 4. ranks, test, figures, verdict
    ranks, rows, left_out = collect(folder, truth, n, draws, sbc["seed"])
    names = list(truth)
    base = {"sampler": choice, "sampler_class": plain["sampler"].get("_target_"),
            "model": target.spec, "config_hash": config_hash(plain),
            store.IDENTITY_KEY: store.target_identity(target), "folder": str(folder),
            "requested": n}
    if left_out:  # a verdict needs every simulation: a selection could pass anything
        reasons = "; ".join(f"sim {i}: {why}" for i, why in list(left_out.items())[:3])
        more = f"; … {len(left_out) - 3} more" if len(left_out) > 3 else ""
        rundir.write_json({"verdict": "incomplete", **base, "missing": len(left_out),
                           "left_out": {str(k): v for k, v in left_out.items()}},
                          folder / VERDICT)
        print(f"SBC INCOMPLETE: {len(left_out)} of {n} simulations missing, no verdict "
              f"({reasons}{more}); run again to resume: sbc.dir={folder}")
        return EXIT_INCOMPLETE
    import pandas as pd

    result = verdict(ranks, names, draws, sbc["bins"], sbc["alpha"])
    ess = np.array([r["ess_min"] for r in rows[::len(names)]])
    result.update({"left_out": {}, **base,
                   "median_ess_min": float(np.nanmedian(ess)) if np.isfinite(ess).any() else None,
                   "power": {f"sd x {s:.3g}": power(n, draws, sbc["bins"], sbc["alpha"], len(names), s)
                             for s in POWER_SCALES},
                   "power_method": (f"Monte Carlo, {POWER_REPLICATES} SBCs of exact draws with the "
                                    "posterior sd scaled, one of the variables miscalibrated "
                                    "(sbc.power, scripts/sbc_power.py)")})
    warnings = []
    gross = result["power"][f"sd x {POWER_SCALES[0]:.3g}"]
    if gross < 0.5:
        warnings.append(f"{n} simulations are too few to detect anything: a sampler whose "
                        f"posterior sd is half the true one fails this test only "
                        f"{gross:.0%} of the time; raise sbc.simulations")
    if result["median_ess_min"] is not None and result["median_ess_min"] < draws:
        warnings.append(f"median bulk ESS {result['median_ess_min']:.0f} < sbc.draws={draws}: "
                        "autocorrelated draws make ranks non-uniform; raise the budget")
    if warnings:
        result["warning"] = " | ".join(warnings)
    rundir.write_parquet(pd.DataFrame(rows), folder / RANKS)
    plot_histograms(folder / "rank_histograms.png", ranks, names, draws, sbc["bins"], sbc["alpha"])
    plot_ecdf_difference(folder / "ecdf_difference.png", ranks, names, draws, sbc["alpha"], sbc["seed"])
    rundir.write_json(result, folder / VERDICT)
    subtle = result["power"][f"sd x {POWER_SCALES[1]:.3g}"]
    print(f"SBC {result['verdict'].upper()}: {choice} on {target.name}, "
          f"{result['simulations']} simulations, p = {result['p_value']:.3g} ({result['test']}; "
          f"worst: {result['worst_variable']}; power against sd too small by 2: {gross:.0%}, "
          f"by √2: {subtle:.0%}) -> {folder}")
    for warning in warnings:
        _say(warning)
    return EXIT_PASS if result["verdict"] == "pass" else EXIT_FAIL


def main() -> None:
    """Console entry point ``ckam-bench-sbc``."""
    from ckam_bench.commands.discovery import command_help

    if command_help("ckam-bench-sbc", sys.argv[1:]):
        return
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
