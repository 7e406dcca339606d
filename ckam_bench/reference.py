r"""Certified reference samples for targets without exact draws: the command and the lookup.

``ckam-bench-reference target=logistic_german sampler=nuts`` (a Hydra app composed like
``ckam-bench``: any target, any sampler config, any override) runs ``chains`` (≥ 4) chains of the
sampler from overdispersed starts with independent seeds, discards each chain's first
``burn_in`` collected draws, keeps ``iterations`` draws per chain, and certifies them with
posteriordb's criteria (Magnusson et al., "posteriordb: testing, benchmarking and developing
Bayesian inference algorithms", 2025; Vehtari et al. 2021 for the diagnostics):

* rank-normalised split R-hat < ``rhat_max`` (1.01) on every coordinate, and
* bulk ESS ≥ ``ess_min`` and tail ESS (the smaller quantile ESS at 5 % and 95 %) ≥ ``ess_min``
  (10 000) on every coordinate,

all from arviz-stats (``arviz_stats.base.array_stats``). Only a certified sample is stored, as
``<reference_id>.npz`` (+ the certificate as ``<reference_id>.json`` to read), written
atomically; an uncertified run stores nothing, prints one line saying which criterion failed
where, and exits with 3 (a configuration error exits with 2).

What is computed from what. Per chain the draws after burn-in are streamed: sums of x, x², x⁴
over *every* draw give the reference's ``mean``, ``second_moment``, ``variance`` and
``fourth_moment`` (float64); every ``thin``-th draw (``thin`` = ⌈iterations / max_draws⌉) is held
in memory for the diagnostics, so R-hat and ESS are those of the thinned chains (thinning by
less than the autocorrelation time loses little ESS; by more, the ESS is a lower bound: the
certificate errs on the safe side). ``mcse_mean`` is the arviz-stats MCSE of the mean of the same
thinned draws (an upper bound on that of the full chains). The stored ``samples`` are a further
even thinning to ``stored_draws`` per chain, as float32 (small files; enough for marginals,
MMD, plots). Starts: ``target.start + start_spread · N(0, I)`` per chain (redrawn while the
log density is not finite), i.e. overdispersed relative to a posterior much narrower than
``start_spread``; each chain has its own generator, seeded ``[seed, chain]``.

Lookup (:func:`load_reference`): ``<target.reference_id()>.npz`` in the references shipped with
the package (``ckam_bench/data/references/``), then in the user cache: ``$CKAM_BENCH_CACHE`` when
set (that folder itself), else ``~/.cache/ckam-bench/references``. The reference id is the
target's name plus a hash of its settings (:meth:`ckam_bench.targets.base.Target.reference_id`),
so another dataset file or other target settings never pick up a wrong reference.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SHIPPED = Path(__file__).resolve().parent / "data" / "references"
CACHE_ENV = "CKAM_BENCH_CACHE"
RHAT_MAX = 1.01
ESS_MIN = 10_000
TAIL_PROB = (0.05, 0.95)
MAX_HELD = 100_000_000
"""Most draw entries (chains × held draws × d) held in memory for the diagnostics (800 MB)."""
EXIT_CONFIG, EXIT_UNCERTIFIED = 2, 3


def cache_dir() -> Path:
    """The user's reference cache: ``$CKAM_BENCH_CACHE`` or ``~/.cache/ckam-bench/references``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ckam-bench" / "references"


def search_path() -> list[Path]:
    """Folders searched for references, in order: shipped, then the user cache."""
    return [SHIPPED, cache_dir()]


@dataclass
class Reference:
    """A certified reference sample and the moments of the full chains it was thinned from.

    samples : (n, d) thinned draws of all chains (float64 copy of the stored float32).
    chain : (n,) chain index of each stored draw.
    mean, second_moment, variance, fourth_moment : (d,) E[X], E[X²], Var[X], E[X⁴] per
        coordinate, from every post-burn-in draw of every chain.
    mcse_mean : (d,) Monte-Carlo standard error of ``mean``.
    certificate : the certificate (sampler, settings, seeds, versions, diagnostics, date).
    path : the file it was read from.
    """

    samples: np.ndarray
    chain: np.ndarray
    mean: np.ndarray
    second_moment: np.ndarray
    variance: np.ndarray
    fourth_moment: np.ndarray
    mcse_mean: np.ndarray
    certificate: dict
    path: Path

    @property
    def reference_id(self) -> str:
        return self.certificate["reference_id"]

    def describe(self) -> dict:
        """What a run records about the reference it used (for ``status.json``)."""
        c = self.certificate
        return {"reference_id": c["reference_id"], "path": str(self.path), "sampler": c["sampler"],
                "date": c["date"], "chains": c["chains"], "iterations": c["iterations"],
                "rhat_max": c["diagnostics"]["rhat_max"],
                "ess_bulk_min": c["diagnostics"]["ess_bulk_min"],
                "ess_tail_min": c["diagnostics"]["ess_tail_min"]}


_ARRAYS = ("samples", "chain", "mean", "second_moment", "variance", "fourth_moment", "mcse_mean")


def read_reference(path, dim: int | None = None) -> Reference:
    """Read a reference file; ValueError when it is malformed or not certified."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in _ARRAYS}
            certificate = json.loads(str(f["certificate"]))
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError(f"reference file {str(path)!r} is unreadable: {exc}") from None
    d = arrays["mean"].shape[0]
    if dim is not None and d != dim:
        raise ValueError(f"reference file {str(path)!r} has dimension {d}, the target {dim}")
    if arrays["samples"].ndim != 2 or arrays["samples"].shape[1] != d:
        raise ValueError(f"reference file {str(path)!r}: samples are not (n, {d})")
    if not certificate.get("certified"):
        raise ValueError(f"reference file {str(path)!r} is not certified")
    return Reference(samples=arrays["samples"].astype(float), chain=arrays["chain"],
                     mean=arrays["mean"], second_moment=arrays["second_moment"],
                     variance=arrays["variance"], fourth_moment=arrays["fourth_moment"],
                     mcse_mean=arrays["mcse_mean"], certificate=certificate, path=path)


def find_reference(target) -> Path | None:
    """Path of ``target``'s reference file (shipped first, then the cache), or None."""
    name = f"{target.reference_id()}.npz"
    for folder in search_path():
        if (folder / name).is_file():
            return folder / name
    return None


def load_reference(target) -> Reference | None:
    """``target``'s certified reference sample (shipped, else cached, else posteriordb's draws
    for a model of the posteriordb suite), or None if there is none."""
    path = find_reference(target)
    if path is None:
        from ckam_bench.posteriordb import reference_for

        return reference_for(target)
    return read_reference(path, target.dim)


# ---------------------------------------------------------------------------- certification
def diagnose(draws: np.ndarray) -> dict:
    """Split R-hat (rank), bulk ESS and tail ESS per coordinate of ``draws`` (chains, n, d),
    and the MCSE of each mean, with arviz-stats."""
    from arviz_stats.base import array_stats

    ary = np.moveaxis(np.asarray(draws, float), -1, 0)  # (d, chains, n)
    rhat = array_stats.rhat(ary, chain_axis=-2, draw_axis=-1, method="rank")
    bulk = array_stats.ess(ary, chain_axis=-2, draw_axis=-1, method="bulk")
    tail = array_stats.ess(ary, chain_axis=-2, draw_axis=-1, method="tail", prob=TAIL_PROB)
    mcse = array_stats.mcse(ary, chain_axis=-2, draw_axis=-1, method="mean")
    return {"rhat": np.asarray(rhat), "ess_bulk": np.asarray(bulk), "ess_tail": np.asarray(tail),
            "mcse_mean": np.asarray(mcse)}


def certify(diag: dict, rhat_max: float = RHAT_MAX, ess_min: float = ESS_MIN) -> tuple[bool, str]:
    """(certified, why not) under posteriordb's criteria; NaN fails every criterion."""
    checks = (("split R-hat", diag["rhat"], lambda v: v < rhat_max, f"< {rhat_max}", np.nanargmax),
              ("bulk ESS", diag["ess_bulk"], lambda v: v >= ess_min, f">= {ess_min:g}", np.nanargmin),
              ("tail ESS", diag["ess_tail"], lambda v: v >= ess_min, f">= {ess_min:g}", np.nanargmin))
    for label, values, ok, rule, worst in checks:
        good = ok(values)  # False for NaN
        if not np.all(good):
            bad = np.flatnonzero(~good)
            j = int(bad[0]) if np.all(np.isnan(values[bad])) else int(worst(np.where(good, np.nan, values)))
            return False, (f"{label} {values[j]:.4g} at coordinate {j} (needs {rule}; "
                           f"{bad.size} of {values.size} coordinates fail)")
    return True, ""


@dataclass
class ChainRun:
    """What one chain leaves: held (thinned) draws, streaming sums, acceptance."""

    held: np.ndarray
    sums: np.ndarray  # (3, d): Σx, Σx², Σx⁴ over every post-burn-in draw
    count: int
    acceptance: float
    n_nonfinite: int
    start: np.ndarray
    seconds: float


def overdispersed_start(target, spread: float, rng: np.random.Generator, tries: int = 100) -> np.ndarray:
    """``target.start + spread · N(0, I)``, redrawn until the log density is finite."""
    for _ in range(tries):
        x0 = target.start + spread * rng.standard_normal(target.dim)
        if math.isfinite(float(target._log_density(x0))):
            return x0
    raise ValueError(f"start_spread: no finite log density in {tries} draws around the target's "
                     f"start with spread {spread}; use a smaller start_spread")


def run_chain(sampler, target, rng, x0, burn_in: int, iterations: int, thin: int,
              block: int = 5000) -> ChainRun:
    """Run one chain: discard ``burn_in`` collected draws, then stream ``iterations`` draws,
    holding every ``thin``-th."""
    t0 = time.perf_counter()
    sampler.warm_up(target)
    state = sampler.init(target, x0, rng)
    d = target.dim
    held = np.empty((iterations // thin, d))
    sums = np.zeros((3, d))
    skipped = kept = n_held = 0
    accepted = steps = n_nonfinite = 0
    while kept < iterations:  # blocks no longer than the draws still needed (a chain does not
        # depend on its block sizes; a short run does not pay for a whole block)
        state, blk = sampler.advance(state, max(1, min(block, burn_in - skipped + iterations - kept)))
        accepted += int(np.count_nonzero(blk.accepted))
        steps += blk.n
        n_nonfinite += int(blk.n_nonfinite)
        draws = blk.samples
        if skipped < burn_in:
            drop = min(burn_in - skipped, draws.shape[0])
            skipped += drop
            draws = draws[drop:]
        draws = draws[: iterations - kept]
        if draws.shape[0]:
            sq = draws * draws
            sums += (draws.sum(0), sq.sum(0), (sq * sq).sum(0))
            index = np.arange(kept, kept + draws.shape[0])
            pick = (index % thin == thin - 1) & (index // thin < held.shape[0])
            take = draws[pick]
            held[n_held:n_held + take.shape[0]] = take
            n_held += take.shape[0]
            kept += draws.shape[0]
    return ChainRun(held=held[:n_held], sums=sums, count=kept, acceptance=accepted / max(steps, 1),
                    n_nonfinite=n_nonfinite, start=np.asarray(x0), seconds=time.perf_counter() - t0)


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("ckam-bench", "numpy", "scipy", "numba", "arviz-stats", "hydra-core"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def store_reference(folder, certificate: dict, arrays: dict) -> Path:
    """Write ``<id>.npz`` (arrays + certificate) and ``<id>.json`` atomically; returns the npz."""
    folder = Path(folder)
    rid = certificate["reference_id"]
    npz, sidecar = folder / f"{rid}.npz", folder / f"{rid}.json"
    text = json.dumps(certificate, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))

    def write_npz(tmp):
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, certificate=np.array(text), **arrays)

    _atomic_write(npz, write_npz)
    _atomic_write(sidecar, lambda tmp: Path(tmp).write_text(text + "\n"))
    return npz


def run_chains(target, make_sampler, chain_ids, *, burn_in: int, iterations: int, max_draws: int,
               seed: int = 0, start_spread: float = 1.0, log=None) -> list[ChainRun]:
    """Run the chains ``chain_ids`` (chain c: generator ``default_rng([seed, c])``, which draws
    its overdispersed start and then drives the sampler); ``make_sampler()`` builds a fresh
    sampler per chain. A noisy (pseudo-marginal) target draws its density estimates from the
    chain's own stream ``default_rng([seed, c, 1])``, bound before the start is drawn: the chains
    are independent, and a chain run alone (``chain=c``, a job of a SLURM sweep) is the same as
    in a run of all chains."""
    thin = max(1, math.ceil(iterations / max_draws))
    runs = []
    for c in chain_ids:
        if getattr(target, "noisy", False):
            target.bind_rng(np.random.default_rng([int(seed), int(c), 1]))
        rng = np.random.default_rng([int(seed), int(c)])
        x0 = overdispersed_start(target, start_spread, rng)
        runs.append(run_chain(make_sampler(), target, rng, x0, burn_in, iterations, thin))
        if log:
            log(f"chain {c}: {runs[-1].count} draws after {burn_in} burn-in, "
                f"acceptance {runs[-1].acceptance:.3f}, {runs[-1].seconds:.1f} s")
    return runs


def save_chain(path, run: ChainRun) -> None:
    """Store one chain's result (a part of a reference run split over jobs), atomically."""
    arrays = {"held": run.held, "sums": run.sums, "count": np.array(run.count),
              "acceptance": np.array(run.acceptance), "n_nonfinite": np.array(run.n_nonfinite),
              "start": run.start, "seconds": np.array(run.seconds)}

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    _atomic_write(Path(path), write)


def load_chain(path) -> ChainRun:
    with np.load(path, allow_pickle=False) as f:
        return ChainRun(held=f["held"], sums=f["sums"], count=int(f["count"]),
                        acceptance=float(f["acceptance"]), n_nonfinite=int(f["n_nonfinite"]),
                        start=f["start"], seconds=float(f["seconds"]))


def certify_runs(target, runs: list[ChainRun], *, burn_in: int, iterations: int, max_draws: int,
                 stored_draws: int = 1000, seed: int = 0, start_spread: float = 1.0,
                 rhat_max: float = RHAT_MAX, ess_min: float = ESS_MIN, sampler_name: str = "sampler",
                 settings: dict | None = None) -> tuple[bool, str, dict, dict]:
    """Diagnose finished chains; returns (certified, why not, certificate, arrays to store)."""
    chains = len(runs)
    thin = max(1, math.ceil(iterations / max_draws))
    n_held = min(r.held.shape[0] for r in runs)
    held = np.stack([r.held[:n_held] for r in runs])
    diag = diagnose(held)
    ok, why = certify(diag, rhat_max, ess_min)
    total = sum(r.count for r in runs)
    s1, s2, s4 = sum(r.sums for r in runs) / total
    keep = np.unique(np.linspace(0, n_held - 1, min(stored_draws, n_held)).round().astype(int))
    arrays = {
        "samples": held[:, keep].reshape(-1, target.dim).astype(np.float32),
        "chain": np.repeat(np.arange(chains, dtype=np.int16), keep.size),
        "mean": s1, "second_moment": s2, "variance": np.maximum(s2 - s1 * s1, 0.0),
        "fourth_moment": s4, "mcse_mean": diag["mcse_mean"],
    }
    certificate = {
        "reference_id": target.reference_id(),
        "certified": bool(ok),
        "target": target.describe(),
        "sampler": sampler_name,
        "settings": {"sampler": settings or {}, "chains": chains, "burn_in": burn_in,
                     "iterations": iterations, "thin": thin, "held_draws_per_chain": n_held,
                     "stored_draws_per_chain": int(keep.size), "start_spread": start_spread},
        "chains": chains, "iterations": iterations,
        "seeds": {"seed": int(seed), "chain_seeds": [[int(seed), c] for c in range(chains)],
                  "rule": "numpy.random.default_rng([seed, chain]) per chain (start, then sampler)"},
        "starts": [r.start.tolist() for r in runs],
        "criteria": {"rhat_max": rhat_max, "ess_bulk_min": ess_min, "ess_tail_min": ess_min,
                     "rhat": "rank-normalised split R-hat (arviz-stats)",
                     "ess_tail": f"min quantile ESS at {TAIL_PROB} (arviz-stats)"},
        "diagnostics": {
            "rhat_max": float(np.nanmax(diag["rhat"])),
            "ess_bulk_min": float(np.nanmin(diag["ess_bulk"])),
            "ess_tail_min": float(np.nanmin(diag["ess_tail"])),
            "rhat": diag["rhat"].tolist(), "ess_bulk": diag["ess_bulk"].tolist(),
            "ess_tail": diag["ess_tail"].tolist(),
            "acceptance": [r.acceptance for r in runs],
            "n_nonfinite": [r.n_nonfinite for r in runs],
            "why_not": why,
        },
        "versions": _versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": sum(r.seconds for r in runs),
        "seconds_per_chain": [r.seconds for r in runs],
    }
    return ok, why, certificate, arrays


def build_reference(target, make_sampler, *, chains: int = 4, burn_in: int = 20_000,
                    iterations: int = 100_000, max_draws: int = 20_000, stored_draws: int = 1000,
                    seed: int = 0, start_spread: float = 1.0, rhat_max: float = RHAT_MAX,
                    ess_min: float = ESS_MIN, sampler_name: str = "sampler",
                    settings: dict | None = None, log=None) -> tuple[bool, str, dict, dict]:
    """Run ``chains`` chains and diagnose them (:func:`run_chains` then :func:`certify_runs`)."""
    check_settings(chains=chains, burn_in=burn_in, iterations=iterations, max_draws=max_draws,
                   stored_draws=stored_draws, start_spread=start_spread, dim=target.dim)
    runs = run_chains(target, make_sampler, range(chains), burn_in=burn_in, iterations=iterations,
                      max_draws=max_draws, seed=seed, start_spread=start_spread, log=log)
    return certify_runs(target, runs, burn_in=burn_in, iterations=iterations, max_draws=max_draws,
                        stored_draws=stored_draws, seed=seed, start_spread=start_spread,
                        rhat_max=rhat_max, ess_min=ess_min, sampler_name=sampler_name,
                        settings=settings)


def check_settings(*, chains, burn_in, iterations, max_draws, stored_draws, start_spread, dim) -> None:
    """ValueError naming the key for settings that cannot give a valid certificate."""
    if int(chains) < 4:
        raise ValueError(f"chains must be >= 4 (posteriordb's criteria), got {chains}")
    if int(burn_in) < 0:
        raise ValueError(f"burn_in must be >= 0, got {burn_in}")
    if int(iterations) < 100:
        raise ValueError(f"iterations must be >= 100, got {iterations}")
    if int(max_draws) < 100:
        raise ValueError(f"max_draws must be >= 100, got {max_draws}")
    if int(chains) * min(int(max_draws), int(iterations)) * dim > MAX_HELD:
        raise ValueError(f"max_draws: chains x max_draws x dim must be <= {MAX_HELD} draw entries "
                         f"held in memory, got {chains} x {max_draws} x {dim}")
    if int(stored_draws) < 1:
        raise ValueError(f"stored_draws must be >= 1, got {stored_draws}")
    if not (math.isfinite(float(start_spread)) and float(start_spread) > 0):
        raise ValueError(f"start_spread must be > 0, got {start_spread}")


# ---------------------------------------------------------------------------- command
def _run(cfg) -> int:
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from ckam_bench.cli import _build
    from ckam_bench.validate import ConfigError

    def say(msg):
        print(f"ckam-bench-reference: {msg}", file=sys.stderr, flush=True)

    try:
        target = _build(cfg, "target")
        _build(cfg, "sampler")  # fail on a bad sampler config before any sampling
        keys = ("chains", "burn_in", "iterations", "max_draws", "stored_draws", "start_spread")
        try:
            check_settings(**{k: cfg[k] for k in keys}, dim=target.dim)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    except ConfigError as exc:
        say(f"invalid configuration: {exc}")
        return EXIT_CONFIG
    sampler_name = HydraConfig.get().runtime.choices.get("sampler", "sampler")
    settings = OmegaConf.to_container(cfg.sampler, resolve=True)
    folder = Path(cfg.out).expanduser() if cfg.out else cache_dir()
    parts = folder / "parts" / target.reference_id()
    common = {"burn_in": int(cfg.burn_in), "iterations": int(cfg.iterations),
              "max_draws": int(cfg.max_draws), "seed": int(cfg.seed),
              "start_spread": float(cfg.start_spread)}
    if cfg.chain is not None:  # one chain of a run split over jobs (e.g. a SLURM sweep)
        c = int(cfg.chain)
        if not 0 <= c < int(cfg.chains):
            say(f"invalid configuration: chain must be in [0, {int(cfg.chains)}), got {c}")
            return EXIT_CONFIG
        (run,) = run_chains(target, lambda: _build(cfg, "sampler"), [c], log=say, **common)
        save_chain(parts / f"chain{c}.npz", run)
        say(f"chain {c} stored -> {parts / f'chain{c}.npz'} (certify with combine=true)")
        return 0
    if cfg.combine:
        files = [parts / f"chain{c}.npz" for c in range(int(cfg.chains))]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            say(f"invalid configuration: combine: missing chain files {missing}")
            return EXIT_CONFIG
        runs = [load_chain(f) for f in files]
        say(f"{target.reference_id()}: combining {len(runs)} stored chains of {sampler_name}")
    else:
        say(f"{target.reference_id()}: {cfg.chains} chains of {sampler_name}, {cfg.burn_in} burn-in "
            f"+ {cfg.iterations} draws each")
        runs = run_chains(target, lambda: _build(cfg, "sampler"), range(int(cfg.chains)), log=say,
                          **common)
    ok, why, certificate, arrays = certify_runs(
        target, runs, stored_draws=int(cfg.stored_draws), rhat_max=float(cfg.rhat_max),
        ess_min=float(cfg.ess_min), sampler_name=sampler_name, settings=settings, **common)
    d = certificate["diagnostics"]
    summary = (f"R-hat max {d['rhat_max']:.4f}, bulk ESS min {d['ess_bulk_min']:.0f}, "
               f"tail ESS min {d['ess_tail_min']:.0f}, {certificate['seconds']:.0f} s")
    if not ok:
        say(f"not certified, nothing stored: {why} ({summary})")
        return EXIT_UNCERTIFIED
    path = store_reference(folder, certificate, arrays)
    say(f"certified ({summary}) -> {path}")
    return 0


def main() -> None:
    """Console entry point ``ckam-bench-reference``."""
    import hydra

    composed = []

    @hydra.main(version_base="1.3", config_path="pkg://ckam_bench.conf", config_name="reference")
    def app(cfg) -> None:
        composed.append(True)
        code = _run(cfg)
        if code:
            sys.exit(code)

    try:
        app()
    except SystemExit as exc:  # Hydra's own composition errors exit with 1: config errors
        if exc.code == 1 and not composed:
            sys.exit(EXIT_CONFIG)
        raise


if __name__ == "__main__":
    main()
