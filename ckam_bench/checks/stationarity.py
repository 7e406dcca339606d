r"""The stationarity check: do chains started from π stay distributed as π?

For a target with exact draws, K chains (independent sampler instances, generators spawned
from one seed) start from K independent exact draws of π. A sampler that leaves π invariant
keeps every chain's marginal at π for ever, so at any time t the K states X_t^{(1..K)} are K
independent draws of π, whatever the mixing speed; an adaptive sampler whose adaptation
breaks invariance lets the distribution drift away, and the drift shows however slowly the
chain mixes. At each of several times t₁ < … < t_T (iteration counts, e.g. cycle starts) the
K states are compared with fresh exact draws of π (``n_reference`` of them, independent of the
chains) by these tests, each giving a p-value under H₀ "X_t ~ π":

* ``ks[j]`` — two-sample Kolmogorov–Smirnov test of coordinate j (exact p-values for small
  samples, :func:`scipy.stats.ks_2samp`);
* ``mean[j]`` — z = (m̂_j − E[X_j]) / √(Var[X_j]/K), two-sided normal p-value;
* ``second[j]`` — z for the mean of (X_j − E X_j)² against Var[X_j], with the standard
  deviation of (X_j − E X_j)² from the reference draws;
* ``occupancy`` (mixtures) — each state is labelled with its most responsible component
  (per coordinate for a product mixture, the labels of all coordinates pooled, since they are
  independent under π); a χ² test of homogeneity between the chains' and the reference
  draws' label counts (:func:`scipy.stats.chi2_contingency`).

Truth for the moment tests is the target's exact ``mean``/``variance`` when it has them,
else the reference draws' moments. The verdict controls the family-wise error over every test
at every time with Holm's step-down procedure (valid under any dependence between the tests,
which share chains across times): the sampler **passes** when no Holm-adjusted p-value is
below ``alpha``. Under H₀ the chance of a false alarm is at most ``alpha`` (Holm is
conservative for positively dependent tests, so it is typically below).

:func:`check_stationarity` is the Python entry (the tests of every sampler call it through
``tests/samplers/invariance.py``); ``ckam-bench-check`` (:func:`main`) composes the same
config as ``ckam-bench`` (so presets, experiments and overrides apply), runs the check and
writes ``verdict.csv``, ``verdict.md``, ``tests.csv``, ``stationarity.png`` and ``check.json``
into its output folder through :mod:`ckam_bench.engine.outputs` (a new or empty folder, or one of an
earlier check of the same config; anything else is refused untouched).

**Exit codes** (a check is a gate, the convention of ``ckam-bench-sbc``): :data:`EXIT_PASS` 0
the sampler passes, :data:`EXIT_FAIL` 1 it FAILs (or the check could not write its outputs),
:data:`EXIT_CONFIG` 2 invalid configuration or refused folder. A check already done for the
same config is skipped with the code of its stored verdict; a sweep exits with the highest code
of its checks.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from ckam_bench.targets.base import Target, mixture_of

MAX_CHAINS = 100_000
MAX_TIMES = 1_000
_CHUNK = 50_000


def _spawned(seed: int, n: int) -> list[np.random.SeedSequence]:
    return np.random.SeedSequence(int(seed)).spawn(n)


def mode_labels(target: Target, X: np.ndarray) -> np.ndarray | None:
    """Most responsible mixture component of each state, or None for a non-mixture target.

    The mixture is the target's :meth:`~ckam_bench.targets.base.Target.ckam_mixture`: a joint
    mixture (means of shape (K, d), diagonal variances) gives labels (n,); a product mixture
    (means of shape (K,)) gives labels per coordinate, shape (n, d).
    """
    mixture = mixture_of(target)
    if mixture is None:
        return None
    weights, means, variances = mixture
    X = np.asarray(X, float)
    log_w = np.log(weights)
    if means.ndim == 2:  # (n, K): log w_k + log N(x; μ_k, diag v_k)
        diff = X[:, None, :] - means[None]
        terms = log_w - 0.5 * np.sum(diff * diff / variances + np.log(variances), axis=2)
        return np.argmax(terms, axis=1)
    diff = X[..., None] - means  # (n, d, K)
    terms = log_w - 0.5 * (diff * diff / variances + np.log(variances))
    return np.argmax(terms, axis=2)


def run_from_stationarity(make_sampler, target: Target, n_chains: int, times, seed: int = 0,
                          starts: np.ndarray | None = None) -> np.ndarray:
    """States of ``n_chains`` chains started from exact draws, at iteration counts ``times``.

    make_sampler : zero-argument factory; each chain gets its own sampler instance (its
        ``warm_up`` is called once, on the first instance).
    times : increasing iteration counts ≥ 1.
    seed : one ``np.random.SeedSequence`` whose children seed the chains and (last child)
        the start draws.

    Returns the states, shape (len(times), n_chains, d).
    """
    times = [int(t) for t in times]
    children = _spawned(seed, n_chains + 1)
    if starts is None:
        starts = target.sample(n_chains, np.random.default_rng(children[-1]))
    out = np.empty((len(times), n_chains, target.dim))
    for c in range(n_chains):
        sampler = make_sampler()
        if c == 0:
            sampler.warm_up(target)
        state = sampler.init(target, starts[c], np.random.default_rng(children[c]))
        done = 0
        for i, t in enumerate(times):
            while done < t:
                state, block = sampler.advance(state, min(_CHUNK, t - done))
                done += block.n
            out[i, c] = state.x
    return out


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (same order as the input)."""
    p = np.asarray(p_values, float)
    order = np.argsort(p)
    m = p.size
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def _z_p(z: float) -> float:
    return float(2.0 * stats.norm.sf(abs(z)))


def tests_at(states: np.ndarray, reference: np.ndarray, mean: np.ndarray, variance: np.ndarray,
             labels=None, reference_labels=None) -> list[dict]:
    """The tests of the module docstring for one time: states (K, d) against reference (n, d).

    Each row: ``test`` (e.g. ``ks[0]``), ``statistic`` (KS distance, z-score or χ²),
    ``p_value``, and for z-tests and occupancy the values behind them.
    """
    K, d = states.shape
    rows = []
    sd = np.sqrt(variance)
    sq_ref = (reference - mean) ** 2
    sd_sq = sq_ref.std(axis=0, ddof=1)
    for j in range(d):
        ks = stats.ks_2samp(states[:, j], reference[:, j])
        rows.append({"test": f"ks[{j}]", "statistic": float(ks.statistic), "p_value": float(ks.pvalue)})
    for j in range(d):
        z = (states[:, j].mean() - mean[j]) / (sd[j] / math.sqrt(K))
        rows.append({"test": f"mean[{j}]", "statistic": float(z), "p_value": _z_p(z),
                     "estimate": float(states[:, j].mean()), "truth": float(mean[j]),
                     "standard_error": float(sd[j] / math.sqrt(K))})
    for j in range(d):
        v_hat = float(((states[:, j] - mean[j]) ** 2).mean())
        se = sd_sq[j] / math.sqrt(K)
        z = (v_hat - variance[j]) / se
        rows.append({"test": f"second[{j}]", "statistic": float(z), "p_value": _z_p(z),
                     "estimate": v_hat, "truth": float(variance[j]), "standard_error": float(se)})
    if labels is not None:
        n_modes = int(max(labels.max(), reference_labels.max())) + 1
        chain_counts = np.bincount(labels.ravel(), minlength=n_modes)
        ref_counts = np.bincount(reference_labels.ravel(), minlength=n_modes)
        keep = (chain_counts + ref_counts) > 0
        if keep.sum() >= 2:
            chi2, p, _, _ = stats.chi2_contingency(np.stack([chain_counts[keep], ref_counts[keep]]))
        else:
            chi2, p = 0.0, 1.0
        share = chain_counts / chain_counts.sum()
        ref_share = ref_counts / ref_counts.sum()
        rows.append({"test": "occupancy", "statistic": float(chi2), "p_value": float(p),
                     "share": share.tolist(), "reference_share": ref_share.tolist(),
                     "n_labels": int(labels.size)})
    return rows


@dataclass
class StationarityResult:
    """Outcome of :func:`check_stationarity`.

    tests : one row per (time, test): ``time``, ``test``, ``statistic``, ``p_value``,
        ``p_holm`` (adjusted over every row), ``reject`` (p_holm < alpha) and the values behind
        the moment and occupancy tests.
    states : (T, K, d) chain states at the tested times.
    """

    tests: pd.DataFrame
    states: np.ndarray
    times: list[int]
    n_chains: int
    alpha: float
    seed: int
    n_reference: int
    info: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not bool(self.tests["reject"].any())

    @property
    def min_p_holm(self) -> float:
        return float(self.tests["p_holm"].min())

    def worst(self) -> pd.Series:
        """The row with the smallest adjusted p-value."""
        return self.tests.loc[self.tests["p_holm"].idxmin()]

    def summary(self) -> dict:
        """One verdict row: pass/fail, the worst test, and the largest standardised biases."""
        worst = self.worst()
        last = self.tests[self.tests["time"] == self.times[-1]]
        z_mean = last[last["test"].str.startswith("mean")]["statistic"].abs().max()
        z_second = last[last["test"].str.startswith("second")]["statistic"].abs().max()
        row = {
            "verdict": "pass" if self.passed else "FAIL",
            "alpha": self.alpha,
            "n_chains": self.n_chains,
            "times": " ".join(str(t) for t in self.times),
            "n_tests": int(len(self.tests)),
            "min_p_holm": self.min_p_holm,
            "worst_test": f"{worst['test']} at t={int(worst['time'])}",
            "max_abs_z_mean_last": float(z_mean),
            "max_abs_z_second_last": float(z_second),
            "seed": self.seed,
        }
        occ = last[last["test"] == "occupancy"]
        if len(occ):
            share = np.asarray(occ.iloc[0]["share"], float)
            ref = np.asarray(occ.iloc[0]["reference_share"], float)
            k = int(np.argmax(np.abs(share - ref)))
            n = int(occ.iloc[0]["n_labels"])
            row["occupancy_last"] = (f"mode {k}: {share[k]:.3f} vs {ref[k]:.3f} "
                                     f"(± {math.sqrt(ref[k] * (1 - ref[k]) / n):.3f})")
        row.update(self.info)
        return row


def check_stationarity(make_sampler, target: Target, n_chains: int = 100, times=(1000, 10_000),
                       seed: int = 0, alpha: float = 0.01, n_reference: int = 10_000) -> StationarityResult:
    """Run the stationarity check (module docstring) and return its result.

    make_sampler : zero-argument factory of a fresh sampler.
    target : a target with exact draws (``target.sample``).
    n_chains : K ≥ 10 chains; times : increasing iteration counts ≥ 1 at which to test.
    alpha : family-wise level of the verdict (Holm over every test at every time).
    n_reference : fresh exact draws the chains are compared with (≥ 100).
    """
    n_chains, n_reference, seed = int(n_chains), int(n_reference), int(seed)
    if not 10 <= n_chains <= MAX_CHAINS:
        raise ValueError(f"n_chains must be in [10, {MAX_CHAINS}], got {n_chains}")
    if not 100 <= n_reference <= 10_000_000:
        raise ValueError(f"n_reference must be in [100, 10000000], got {n_reference}")
    times = [int(t) for t in times]
    if not times or len(times) > MAX_TIMES or times[0] < 1 or any(b <= a for a, b in zip(times, times[1:])):
        raise ValueError(f"times must be 1 to {MAX_TIMES} increasing iteration counts >= 1, got {times}")
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not target.has_exact_sampler:
        raise ValueError(f"target {target.name!r} has no exact sampler: the stationarity check needs one")
    states = run_from_stationarity(make_sampler, target, n_chains, times, seed)
    ref_rng = np.random.default_rng(np.random.SeedSequence([seed, 2**31 - 1]))
    reference = target.sample(n_reference, ref_rng)
    mean = target.mean if target.mean is not None else reference.mean(axis=0)
    variance = target.variance if target.variance is not None else reference.var(axis=0, ddof=1)
    mean, variance = np.asarray(mean, float), np.asarray(variance, float)
    ref_labels = mode_labels(target, reference)
    rows = []
    for t, x in zip(times, states):
        labels = mode_labels(target, x) if ref_labels is not None else None
        for row in tests_at(x, reference, mean, variance, labels, ref_labels):
            rows.append({"time": t, **row})
    table = pd.DataFrame(rows)
    table["p_holm"] = holm(table["p_value"].to_numpy())
    table["reject"] = table["p_holm"] < alpha
    return StationarityResult(tests=table, states=states, times=times, n_chains=n_chains,
                              alpha=float(alpha), seed=seed, n_reference=n_reference)


# ---------------------------------------------------------------------------- command line
EXIT_PASS, EXIT_FAIL, EXIT_CONFIG = 0, 1, 2
OUTPUT_FILES = ("check.json", "tests.csv", "verdict.csv", "verdict.md", "stationarity.png")
DEFAULT_CYCLES = (1, 2, 5, 10, 20)
DEFAULT_TIMES = (1000, 5000, 20000)


def default_times(sampler) -> list[int]:
    """Cycles 1, 2, 5, 10, 20 of a cyclic sampler (``describe()["cycle_length"]``), else
    iterations 1000, 5000, 20000 — counted from the end of a finite adaptation
    (``describe()["adapt_until"]``) when the sampler has one: while it adapts, such a
    sampler need not keep π (those iterations are not collected); the kernel it freezes must."""
    info = sampler.describe() or {}
    cycle = info.get("cycle_length")
    if cycle:
        return [int(c * cycle) for c in DEFAULT_CYCLES]
    start = int(info.get("adapt_until") or 0)
    return [start + t for t in DEFAULT_TIMES]


COMMAND = "ckam-bench-check"


def write_outputs(result: StationarityResult, out, info: dict, identity: str = "") -> dict:
    """Write the check's files (``OUTPUT_FILES``) into ``out`` (a path, or an
    :class:`~ckam_bench.engine.outputs.OutputFolder` already inspected), all published together
    (:mod:`ckam_bench.engine.outputs`: a folder that is not this check's is refused untouched)."""
    from ckam_bench.engine.outputs import OutputFolder
    from ckam_bench.report.validity import figure_check, markdown

    folder = out if isinstance(out, OutputFolder) else OutputFolder.inspect(out, COMMAND, identity)
    summary = {**info, **result.summary()}  # the check's n_chains, not a sampler's own (PT)
    tests = result.tests.copy()
    for col in ("share", "reference_share"):
        if col in tests:
            tests[col] = [json.dumps(v) if isinstance(v, list) else v for v in tests[col]]
    stage = folder.staging()
    try:
        tests.to_csv(stage / "tests.csv", index=False)
        table = pd.DataFrame([summary])
        table.to_csv(stage / "verdict.csv", index=False)
        (stage / "verdict.md").write_text(markdown(table) + "\n")
        fig, caption = figure_check(tests, {**summary, "n_reference": result.n_reference})
        fig.savefig(stage / "stationarity.png", dpi=150)
        (stage / "check.json").write_text(json.dumps({**summary, "caption": caption}, indent=2,
                                                     default=str))
        folder.publish(last=("check.json",))  # check.json last: it says the check is complete
    except BaseException:
        folder.discard()
        raise
    return summary


def _config_error(message: str) -> int:
    print(f"ckam-bench-check: invalid configuration: {message}", file=sys.stderr)
    return EXIT_CONFIG


def verdict_code(verdict) -> int:
    """The exit code of a check's verdict: :data:`EXIT_PASS` for ``pass``, else :data:`EXIT_FAIL`."""
    return EXIT_PASS if verdict == "pass" else EXIT_FAIL


def _app_main(cfg) -> int:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from ckam_bench.commands import cli
    from ckam_bench.engine.outputs import OutputFolder
    from ckam_bench.engine.rundir import FolderRefused
    from ckam_bench.commands.validate import ConfigError, check_config, check_times

    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    choices = hc.runtime.choices
    try:
        check_config(cfg)  # every key, check.* included, before anything is built
        target = cli._build(cfg, "target")
        probe = cli._build(cfg, "sampler")  # fails fast on a bad sampler config
        check = cfg.check
        times = list(check.times) if check.times is not None else default_times(probe)
        check_times(times, int(check.n_chains))
        if not target.has_exact_sampler:
            raise ConfigError(f"target: {target.name} has no exact sampler: the stationarity "
                              "check needs one")
        folder = OutputFolder.inspect(out_dir, COMMAND, cli.config_hash(cfg), cli._CREATED)
    except ConfigError as exc:
        cli._undo_created(out_dir, multirun)
        return _config_error(str(exc))
    except FolderRefused as exc:
        cli._undo_created(out_dir, multirun)
        print(f"ckam-bench-check: refused: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if (out_dir / "check.json").is_file() and folder.owns("check.json"):
        try:
            verdict = json.loads((out_dir / "check.json").read_text()).get("verdict")
        except (OSError, ValueError, AttributeError):
            verdict = None
        print(f"ckam-bench-check: already checked for this config ({verdict or 'no verdict'}), "
              f"skipped: {out_dir}", file=sys.stderr)
        return verdict_code(verdict)
    cli.note_sweep_job(out_dir, ran=True)
    experiment = choices.get("experiment")
    info = {"sampler": choices.get("sampler"), "target": choices.get("target"),
            "experiment": experiment or "default",
            "kernel": choices.get("kernel") if getattr(probe, "kernel", None) is not None else "none",
            "label": choices.get("sampler") + (f" [{experiment}]" if experiment else ""),
            **{k: v for k, v in probe.describe().items() if isinstance(v, (str, int, float))},
            "config": OmegaConf.to_container(cfg.sampler, resolve=True)}
    try:
        result = check_stationarity(lambda: cli._build(cfg, "sampler"), target,
                                    n_chains=check.n_chains, times=times, seed=cfg.seed,
                                    alpha=check.alpha, n_reference=check.n_reference)
    except ValueError as exc:  # validated above; a sampler's own refusal names its key
        cli._undo_created(out_dir, multirun)
        return _config_error(str(exc))
    try:
        summary = write_outputs(result, folder, info)
    except FolderRefused as exc:
        print(f"ckam-bench-check: refused: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except OSError as exc:
        folder.discard()
        print(f"ckam-bench-check: cannot write {out_dir}: {exc}; nothing was changed",
              file=sys.stderr)
        return EXIT_FAIL
    print(f"{summary['label']} on {summary['target']}: {summary['verdict']} "
          f"(min Holm-adjusted p = {summary['min_p_holm']:.3g}, worst {summary['worst_test']}"
          + (f"; occupancy {summary['occupancy_last']}" if "occupancy_last" in summary else "")
          + f")\nwritten to {out_dir}")
    return verdict_code(summary["verdict"])


def main() -> None:
    """Console entry ``ckam-bench-check``: a Hydra app on ``conf/check.yaml``."""
    from ckam_bench.commands.discovery import command_help

    if command_help("ckam-bench-check", sys.argv[1:]):
        return
    import hydra

    import ckam_bench  # noqa: F401  (registers the config resolvers)

    from ckam_bench.commands.validate import one_line_hydra_errors

    code, started = {"value": 0}, []

    @hydra.main(version_base="1.3", config_path="pkg://ckam_bench.conf", config_name="check")
    def app(cfg) -> None:
        started.append(True)
        code["value"] = max(code["value"], _app_main(cfg))

    one_line_hydra_errors(app, "ckam-bench-check", started)
    sys.exit(code["value"])
