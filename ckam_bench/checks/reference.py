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

all from arviz-stats (``arviz_stats.base.array_stats``). Exit 0 means one thing: a certified
sample was stored, as ``<reference_id>.npz`` (+ the certificate as ``<reference_id>.json`` to
read), written atomically. Anything else that is not an error exits with 3: a run that fails a
criterion stores nothing and prints one line saying which criterion failed where; a run with
thresholds looser than posteriordb's (``rhat_max`` > 1.01 or ``ess_min`` < 10 000) that meets
them is stored as ``<reference_id>.provisional.npz``, which no run ever uses, and says
"provisional, NOT certified". A configuration error exits with 2.

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

Lookup (:func:`load_reference`, in :mod:`ckam_bench.reference_lookup`, re-exported here): the
shipped references, then the user cache (``$CKAM_BENCH_CACHE`` or
``~/.cache/ckam-bench/references``), by the target's reference id, a hash of its settings
with its data identified by bytes, so another dataset file or other target settings never
pick up a wrong reference.
"""

from __future__ import annotations

import datetime
import json
import math
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ckam_bench.reference_lookup import (  # noqa: F401 - the loader, re-exported
    CACHE_ENV, ESS_MIN, PROBE_RTOL, RHAT_MAX, SHIPPED, TAIL_PROB, Reference, cache_dir,
    check_probes, density_probes, diagnose, find_reference, is_certified, load_reference,
    probe_points, read_reference, search_path)

MAX_HELD = 100_000_000
"""Most draw entries (chains × held draws × d) held in memory for the diagnostics (800 MB)."""
EXIT_CONFIG, EXIT_UNCERTIFIED = 2, 3


# ---------------------------------------------------------------------------- certification
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


COMMAND = "ckam-bench-reference"
STORE = "references"  # the identity of a reference folder (one folder holds many references)


def reference_names(certificate: dict) -> tuple[str, str]:
    """File names of a reference: ``<id>.npz`` and ``<id>.json`` when certified, else
    ``<id>.provisional.npz``/``.json`` (never found by :func:`load_reference`)."""
    rid = certificate["reference_id"]
    stem = rid if certificate.get("certified") else f"{rid}.provisional"
    return f"{stem}.npz", f"{stem}.json"


def store_reference(folder, certificate: dict, arrays: dict) -> Path:
    """Write ``<id>.npz`` (arrays + certificate) and ``<id>.json`` together, through
    :mod:`ckam_bench.engine.outputs` (a folder that is not a reference store is refused; an existing
    reference is never replaced); returns the npz."""
    from ckam_bench.engine.outputs import OutputFolder

    out = folder if isinstance(folder, OutputFolder) else OutputFolder.inspect(folder, COMMAND, STORE)
    npz, sidecar = reference_names(certificate)
    text = _certificate_text(certificate)
    stage = out.staging()
    try:
        with open(stage / npz, "wb") as fh:
            np.savez_compressed(fh, certificate=np.array(text), **arrays)
        (stage / sidecar).write_text(text + "\n")
        out.publish(keep=(npz, sidecar))
    except BaseException:
        out.discard()
        raise
    return out.path / npz


def _certificate_text(certificate: dict) -> str:
    """A certificate as stored: in the npz (``certificate``) and as ``<id>.json``."""
    return json.dumps(certificate, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))


REKEYABLE = ("data_sha256",)
"""The ``describe()`` keys whose definition may change under a reference without changing its
distribution (:func:`rekey_reference`): how the data are hashed (issue 43 §2)."""


def rekey_reference(path, target, note: str, changed=REKEYABLE) -> Path:
    """Store the certified reference ``path`` (``<old id>.npz`` and ``<old id>.json``) under
    ``target``'s current reference id, after a change of how ids are computed (not of the
    distribution). The draws and moments are copied unchanged, byte for byte; the certificate
    gets the new ``reference_id``, the target's new ``describe()``, ``previous_reference_id``
    (the old id; an earlier one moves to ``earlier_reference_ids``) and ``rekeyed`` (``note``).

    Refused with a ValueError, nothing changed, unless the certificate describes this very target
    up to the keys ``changed`` and its log π at the probe points is the target's
    (:func:`check_probes`; a noisy target has none), or when a reference of the new id exists.
    The new files are written atomically and read back before the old ones are removed. Returns
    the path of the reference (``path`` itself when the id did not change)."""
    from ckam_bench.engine.rundir import atomic_write

    path = Path(path)
    reference = read_reference(path, target.dim)
    certificate = reference.certificate
    old, new = certificate["reference_id"], target.reference_id()
    if path.name != f"{old}.npz":
        raise ValueError(f"{path}: its certificate names the id {old!r}, not its file name")
    if new == old:
        return path
    was, now = certificate.get("target", {}), target.describe()
    differ = sorted(k for k in set(was) | set(now) if was.get(k) != now.get(k) and k not in changed)
    if differ:
        raise ValueError(f"{path}: made for another target: its certificate's {', '.join(differ)} "
                         f"differ from {target.name}'s (only {', '.join(changed)} may change)")
    if not getattr(target, "noisy", False) and "log_density_probes" not in certificate:
        raise ValueError(f"{path}: its certificate keeps no log density probes to check the "
                         "density against")
    check_probes(target, certificate, path)
    folder = path.parent
    npz, sidecar = folder / f"{new}.npz", folder / f"{new}.json"
    for existing in (npz, sidecar):
        if existing.exists() or existing.is_symlink():
            raise ValueError(f"{existing} already exists: nothing was changed")
    earlier = list(certificate.get("earlier_reference_ids", []))
    if certificate.get("previous_reference_id"):
        earlier.append(certificate["previous_reference_id"])
    head = {"reference_id": new, "previous_reference_id": old, "rekeyed": str(note)}
    if earlier:
        head["earlier_reference_ids"] = earlier
    rest = {k: v for k, v in certificate.items() if k not in {*head, "earlier_reference_ids"}}
    rekeyed = {**head, **rest, "target": now}
    text = _certificate_text(rekeyed)
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files if k != "certificate"}

    def write_npz(tmp):
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, certificate=np.array(text), **arrays)

    try:
        atomic_write(sidecar, lambda tmp: Path(tmp).write_text(text + "\n"))
        atomic_write(npz, write_npz)
        with np.load(npz, allow_pickle=False) as f:
            same = set(f.files) == {"certificate", *arrays} and all(
                f[k].dtype == a.dtype and f[k].shape == a.shape and f[k].tobytes() == a.tobytes()
                for k, a in arrays.items())
        if not same or read_reference(npz, target.dim).reference_id != new:
            raise ValueError(f"{npz}: did not read back as written; the reference {path} is kept")
    except BaseException:
        for written in (npz, sidecar):
            written.unlink(missing_ok=True)
        raise
    path.unlink()
    old_sidecar = path.with_suffix(".json")
    if old_sidecar.exists():
        old_sidecar.unlink()
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


CHAIN_ARRAYS = ("held", "sums", "count", "acceptance", "n_nonfinite", "start", "seconds")


def code_version() -> dict:
    """ckam-bench's version and git commit (part of a chain's job identity)."""
    from ckam_bench.engine import provenance

    return {"ckam-bench": _versions().get("ckam-bench"),
            "git_commit": provenance.source().get("git_commit")}


def chain_identity(target, sampler_name: str, settings: dict, chain: int, *, seed: int,
                   burn_in: int, iterations: int, max_draws: int, start_spread: float) -> dict:
    """What defines one chain's job: target (reference id and settings), sampler and its
    settings, seed, chain index, run lengths, code version."""
    return json.loads(json.dumps({
        "reference_id": target.reference_id(), "target": target.describe(),
        "sampler": sampler_name, "settings": settings, "seed": int(seed), "chain": int(chain),
        "burn_in": int(burn_in), "iterations": int(iterations), "max_draws": int(max_draws),
        "start_spread": float(start_spread), "code": code_version()}, sort_keys=True, default=str))


def _chain_checksum(arrays: dict, identity_text: str) -> str:
    import hashlib

    h = hashlib.sha256(identity_text.encode())
    for name in CHAIN_ARRAYS:
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def chain_arrays(run: ChainRun, identity: dict | None = None) -> dict:
    """One chain's result as the arrays of its file: the draws, its job ``identity`` and a
    sha256 checksum of both."""
    arrays = {"held": run.held, "sums": run.sums, "count": np.array(run.count),
              "acceptance": np.array(run.acceptance), "n_nonfinite": np.array(run.n_nonfinite),
              "start": run.start, "seconds": np.array(run.seconds)}
    text = json.dumps(identity or {}, sort_keys=True)
    return {**arrays, "identity": np.array(text), "checksum": np.array(_chain_checksum(arrays, text))}


def save_chain(path, run: ChainRun, identity: dict | None = None) -> None:
    """Store one chain's result (a part of a reference run split over jobs) with its job
    identity and checksum, atomically (Python API; the command publishes through
    :mod:`ckam_bench.engine.outputs`)."""
    from ckam_bench.engine.rundir import atomic_write

    arrays = chain_arrays(run, identity)

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    atomic_write(Path(path), write)


class ChainFileError(ValueError):
    """A chain file that cannot be combined: damaged, or of another job."""


def load_chain(path, expected: dict | None = None) -> ChainRun:
    """Read one chain file, verifying its checksum and, given ``expected``, that its job
    identity is that one; :class:`ChainFileError` naming the file and the reason otherwise."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in CHAIN_ARRAYS}
            text, checksum = str(f["identity"]), str(f["checksum"])
        identity = json.loads(text)
    except Exception as exc:  # truncated, not a zip, missing arrays, bad JSON: damaged
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ChainFileError(f"{path}: damaged or not a chain file ({type(exc).__name__}: "
                             f"{first})") from None
    if _chain_checksum(arrays, text) != checksum:
        raise ChainFileError(f"{path}: checksum mismatch: its content was altered or damaged")
    if expected is not None and identity != expected:
        diff = sorted(k for k in set(identity) | set(expected) if identity.get(k) != expected.get(k))
        def short(v):
            text = repr(v)
            return text if len(text) <= 60 else text[:57] + "..."

        shown = "; ".join(f"{k} {short(identity.get(k))} (expected {short(expected.get(k))})"
                          for k in diff[:3])
        raise ChainFileError(f"{path}: a chain of another job: {shown}")
    try:
        run = ChainRun(held=arrays["held"], sums=arrays["sums"], count=int(arrays["count"]),
                       acceptance=float(arrays["acceptance"]),
                       n_nonfinite=int(arrays["n_nonfinite"]), start=arrays["start"],
                       seconds=float(arrays["seconds"]))
    except (TypeError, ValueError) as exc:
        raise ChainFileError(f"{path}: damaged ({exc})") from None
    d = run.sums.shape[-1] if run.sums.ndim == 2 else -1
    if run.sums.shape != (3, d) or run.held.ndim != 2 or run.held.shape[1] != d \
            or run.count < 1 or not np.all(np.isfinite(run.sums)):
        raise ChainFileError(f"{path}: damaged (arrays of inconsistent shapes or values)")
    return run


def combine_chains(files, identities) -> list[ChainRun]:
    """The chains of ``files`` (one per chain index, in order), each verified against the
    identity of its job (:func:`load_chain`); refuses a missing file, a damaged or mismatched
    one, and duplicates (two files with the same content), naming the file and the reason."""
    missing = [str(f) for f in files if not Path(f).is_file()]
    if missing:
        raise ChainFileError(f"incomplete set: missing chain file(s) {', '.join(missing)}")
    runs, seen = [], {}
    for f, expected in zip(files, identities):
        runs.append(load_chain(f, expected))
        with np.load(f, allow_pickle=False) as data:
            digest = _chain_checksum({k: data[k] for k in CHAIN_ARRAYS}, "")
        if digest in seen:
            raise ChainFileError(f"{f}: duplicates {seen[digest]} (the same draws)")
        seen[digest] = f
    return runs


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
    strict = float(rhat_max) <= RHAT_MAX and float(ess_min) >= ESS_MIN
    certificate = {
        "reference_id": target.reference_id(),
        **density_probes(target),
        "certified": bool(ok) and strict,
        # criteria met, but looser than posteriordb's: stored as provisional, never certified
        "provisional": bool(ok) and not strict,
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
                   stored_draws=stored_draws, start_spread=start_spread, dim=target.dim,
                   seed=seed, rhat_max=rhat_max, ess_min=ess_min)
    runs = run_chains(target, make_sampler, range(chains), burn_in=burn_in, iterations=iterations,
                      max_draws=max_draws, seed=seed, start_spread=start_spread, log=log)
    return certify_runs(target, runs, burn_in=burn_in, iterations=iterations, max_draws=max_draws,
                        stored_draws=stored_draws, seed=seed, start_spread=start_spread,
                        rhat_max=rhat_max, ess_min=ess_min, sampler_name=sampler_name,
                        settings=settings)


MAX_CHAINS = 1000
MAX_CHAIN_DRAWS = 10**10  # burn_in + iterations of one chain
MAX_STORED = 1_000_000
MAX_SPREAD = 1.0e6
RHAT_RANGE = (1.0, 2.0)  # (exclusive, inclusive); certified only up to RHAT_MAX
ESS_RANGE = (100, 1.0e9)  # certified only from ESS_MIN


def _int(name, value, lo, hi):
    if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool) and lo <= value <= hi):
        raise ValueError(f"{name} must be an integer in [{lo:,}, {hi:,}], got {value!r}")
    return int(value)


def _number(name, value, lo, hi, lo_open=False):
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool) \
        and math.isfinite(float(value)) and (lo < value if lo_open else lo <= value) and value <= hi
    if not ok:
        raise ValueError(f"{name} must be a number in {'(' if lo_open else '['}{lo:g}, {hi:g}], "
                         f"got {value!r}")
    return float(value)


def check_settings(*, chains, burn_in, iterations, max_draws, stored_draws, start_spread, dim,
                   seed=0, rhat_max=RHAT_MAX, ess_min=ESS_MIN, chain=None) -> None:
    """ValueError naming the key and its allowed range for settings that cannot give a valid
    certificate or would not end (every key of ckam-bench-reference but ``out``/``combine``)."""
    if isinstance(chains, (int, np.integer)) and not isinstance(chains, bool) and chains < 4:
        raise ValueError(f"chains must be >= 4 (posteriordb's criteria), got {chains}")
    chains = _int("chains", chains, 4, MAX_CHAINS)
    burn_in = _int("burn_in", burn_in, 0, MAX_CHAIN_DRAWS)
    iterations = _int("iterations", iterations, 100, MAX_CHAIN_DRAWS)
    if burn_in + iterations > MAX_CHAIN_DRAWS:
        raise ValueError(f"iterations: burn_in + iterations must be at most {MAX_CHAIN_DRAWS:.0e}"
                         f" draws per chain, got {burn_in + iterations:,}")
    max_draws = _int("max_draws", max_draws, 100, MAX_HELD)
    if chains * min(max_draws, iterations) * dim > MAX_HELD:
        raise ValueError(f"max_draws: chains x max_draws x dim must be <= {MAX_HELD} draw entries "
                         f"held in memory, got {chains} x {max_draws} x {dim}")
    _int("stored_draws", stored_draws, 1, MAX_STORED)
    _number("start_spread", start_spread, 0.0, MAX_SPREAD, lo_open=True)
    _int("seed", seed, 0, 2**63 - 1)
    _number("rhat_max", rhat_max, *RHAT_RANGE, lo_open=True)
    _number("ess_min", ess_min, *ESS_RANGE)
    if chain is not None:
        _int("chain", chain, 0, chains - 1)


# ---------------------------------------------------------------------------- command
KEYS = ("chains", "burn_in", "iterations", "max_draws", "stored_draws", "start_spread", "seed",
        "rhat_max", "ess_min", "chain")


def validate_config(cfg) -> tuple[dict, object]:
    """Every key of a ckam-bench-reference config checked (:class:`ConfigError` naming the key
    and its allowed range); returns the resolved config and the target. Writes nothing."""
    from ckam_bench.commands.cli import _build
    from ckam_bench.commands.validate import ConfigError, check_objects, resolved

    plain = resolved(cfg)
    plain.pop("hydra", None)
    if not isinstance(plain.get("combine"), bool):
        raise ConfigError(f"combine: must be true or false, got {plain.get('combine')!r}")
    if plain.get("out") is not None and not isinstance(plain["out"], str):
        raise ConfigError(f"out: must be null or a folder path, got {plain['out']!r}")
    if plain["combine"] and plain.get("chain") is not None:
        raise ConfigError("chain: must be null with combine=true (combine certifies the "
                          "stored chains)")
    check_objects({"target": plain["target"]})
    target = _build(cfg, "target")
    try:  # the command's own keys before the sampler's (the preset uses burn_in)
        check_settings(**{k: plain[k] for k in KEYS}, dim=target.dim)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    check_objects({"sampler": plain["sampler"]})
    _build(cfg, "sampler")  # fail on a bad sampler config before any sampling
    return plain, target


def _run(cfg) -> int:
    from hydra.core.hydra_config import HydraConfig

    from ckam_bench.commands.cli import _build
    from ckam_bench.engine.outputs import OutputFolder
    from ckam_bench.engine.rundir import FolderRefused
    from ckam_bench.commands.validate import ConfigError

    def say(msg):
        print(f"ckam-bench-reference: {msg}", file=sys.stderr, flush=True)

    try:
        plain, target = validate_config(cfg)
        folder = OutputFolder.inspect(Path(plain["out"]).expanduser() if plain["out"]
                                      else cache_dir(), COMMAND, STORE)
    except ConfigError as exc:
        say(f"invalid configuration: {exc}")
        return EXIT_CONFIG
    except FolderRefused as exc:
        say(f"refused: out: {exc}")
        return EXIT_CONFIG
    sampler_name = HydraConfig.get().runtime.choices.get("sampler", "sampler")
    settings = plain["sampler"]
    rid = target.reference_id()
    parts = Path("parts") / rid
    common = {k: plain[k] for k in ("burn_in", "iterations", "max_draws", "seed", "start_spread")}

    def identity(c):
        return chain_identity(target, sampler_name, settings, c, **common)

    strict = float(plain["rhat_max"]) <= RHAT_MAX and float(plain["ess_min"]) >= ESS_MIN
    done = [name for name in reference_names({"reference_id": rid, "certified": strict})
            if (folder.path / name).exists() or (folder.path / name).is_symlink()]
    if done and plain["chain"] is None:  # a stored reference is final: never replaced
        say(f"refused: {folder.path / done[0]} already exists (a reference of this target); "
            "nothing was changed: move it away or choose another out=")
        return EXIT_CONFIG
    if plain["chain"] is not None:  # one chain of a run split over jobs (e.g. a SLURM sweep)
        c = plain["chain"]
        name = parts / f"chain{c}.npz"
        if (folder.path / name).exists():  # replaced only when ours, of this very job
            try:
                if not folder.owns(str(name)):
                    raise ChainFileError(f"{folder.path / name}: not written by {COMMAND} here")
                load_chain(folder.path / name, identity(c))
            except ChainFileError as exc:
                say(f"refused: {exc}; nothing was changed: move it away or choose another out=")
                return EXIT_CONFIG
        (run,) = run_chains(target, lambda: _build(cfg, "sampler"), [c], log=say, **common)
        try:
            stage = folder.staging() / parts
            stage.mkdir(parents=True, exist_ok=True)
            with open(stage / f"chain{c}.npz", "wb") as fh:
                np.savez(fh, **chain_arrays(run, identity(c)))
            folder.publish()
        except FolderRefused as exc:
            folder.discard()
            say(f"refused: {exc}")
            return EXIT_CONFIG
        say(f"chain {c} stored -> {folder.path / name} (certify with combine=true)")
        return 0
    if plain["combine"]:
        files = [folder.path / parts / f"chain{c}.npz" for c in range(plain["chains"])]
        try:
            runs = combine_chains(files, [identity(c) for c in range(plain["chains"])])
        except ChainFileError as exc:
            say(f"refused: combine: {exc}; nothing was stored")
            return EXIT_CONFIG
        say(f"{rid}: combining {len(runs)} stored chains of {sampler_name}")
    else:
        say(f"{rid}: {plain['chains']} chains of {sampler_name}, {plain['burn_in']} burn-in "
            f"+ {plain['iterations']} draws each")
        runs = run_chains(target, lambda: _build(cfg, "sampler"), range(plain["chains"]),
                          log=say, **common)
    ok, why, certificate, arrays = certify_runs(
        target, runs, stored_draws=plain["stored_draws"], rhat_max=float(plain["rhat_max"]),
        ess_min=float(plain["ess_min"]), sampler_name=sampler_name, settings=settings, **common)
    d = certificate["diagnostics"]
    summary = (f"R-hat max {d['rhat_max']:.4f}, bulk ESS min {d['ess_bulk_min']:.0f}, "
               f"tail ESS min {d['ess_tail_min']:.0f}, {certificate['seconds']:.0f} s")
    if not ok:
        say(f"not certified, nothing stored: {why} ({summary})")
        return EXIT_UNCERTIFIED
    try:
        path = store_reference(folder, certificate, arrays)
    except FolderRefused as exc:
        say(f"refused: {exc}")
        return EXIT_CONFIG
    if certificate["certified"]:
        say(f"certified ({summary}) -> {path}")
        return 0
    say(f"provisional, NOT certified: criteria met at thresholds looser than posteriordb's "
        f"(rhat_max {plain['rhat_max']}, ess_min {plain['ess_min']}; certified needs "
        f"rhat_max <= {RHAT_MAX}, ess_min >= {ESS_MIN}); never used as a reference ({summary}) "
        f"-> {path}")
    return EXIT_UNCERTIFIED


def main() -> None:
    """Console entry point ``ckam-bench-reference``."""
    from ckam_bench.commands.discovery import command_help

    if command_help("ckam-bench-reference", sys.argv[1:]):
        return
    import hydra

    from ckam_bench.commands.validate import one_line_hydra_errors

    started = []

    @hydra.main(version_base="1.3", config_path="pkg://ckam_bench.conf", config_name="reference")
    def app(cfg) -> None:
        started.append(True)
        code = _run(cfg)
        if code:
            sys.exit(code)

    one_line_hydra_errors(app, "ckam-bench-reference", started)


if __name__ == "__main__":
    main()
