"""Finding and reading certified reference samples (what ``ckam-bench-reference`` stores, see
:mod:`ckam_bench.checks.reference`).

Lookup (:func:`load_reference`): ``<target.reference_id()>.npz`` in the references shipped with
the package (``ckam_bench/data/references/``), then in the user cache: ``$CKAM_BENCH_CACHE`` when
set (that folder itself), else ``~/.cache/ckam-bench/references``, then the reference the
target brings itself (``Target.ckam_reference``: posteriordb's draws for a suite model). The reference id is the target's name plus a hash of its
``describe()``, whose data are identified by bytes (docs/data.md); a certificate's log π at two
probe points is compared with the target's when it is loaded (:func:`check_probes`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ckam_bench.caches import Recent

SHIPPED = Path(__file__).resolve().parent / "data" / "references"
CACHE_ENV = "CKAM_BENCH_CACHE"
RHAT_MAX = 1.01
ESS_MIN = 10_000


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


TAIL_PROB = (0.05, 0.95)


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


def is_certified(certificate: dict) -> bool:
    """Whether a certificate certifies its sample: it says so, its criteria are at least
    posteriordb's (split R-hat < 1.01, bulk and tail ESS >= 10 000 — a looser threshold gives a
    provisional certificate, never a certified one), and its diagnostics meet them."""
    try:
        if certificate.get("certified_by") == "posteriordb":
            # posteriordb's reference posteriors, certified by their authors with their own
            # criteria (split R-hat < 1.01, ESS bounds, |lag-1 autocorrelation| < 0.05 on 10 000
            # thinned draws); shipped for the suite models only (ckam_bench.posteriordb)
            return (certificate.get("certified") is True
                    and float(certificate["diagnostics"]["rhat_max"]) < RHAT_MAX)
        crit, diag = certificate["criteria"], certificate["diagnostics"]
        return (certificate.get("certified") is True
                and float(crit["rhat_max"]) <= RHAT_MAX
                and float(crit["ess_bulk_min"]) >= ESS_MIN
                and float(crit["ess_tail_min"]) >= ESS_MIN
                and float(diag["rhat_max"]) < float(crit["rhat_max"])
                and float(diag["ess_bulk_min"]) >= float(crit["ess_bulk_min"])
                and float(diag["ess_tail_min"]) >= float(crit["ess_tail_min"]))
    except (KeyError, TypeError, ValueError):
        return False


_READ = Recent()
"""The references read last in this process, by (path, mtime, size, dim): a sweep's worker runs
the jobs of one posterior in turn, and the MMD keeps its reference terms for the same sample
object (:func:`ckam_bench.metrics.mmd._reference_terms`)."""


def read_reference(path, dim: int | None = None) -> Reference:
    """Read a reference file; ValueError when it is malformed or not certified
    (:func:`is_certified`: a provisional certificate, with looser thresholds, is not). A file
    read before in this process, unchanged (same modification time and size), is not read again."""
    path = Path(path)
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, dim)
    except OSError:
        key = None
    if key is not None and key in _READ:
        return _READ[key]
    reference = _read(path, dim)
    if key is not None:
        _READ[key] = reference
    return reference


def _read(path: Path, dim: int | None) -> Reference:
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in _ARRAYS}
            certificate = json.loads(str(f["certificate"]))
    except Exception as exc:  # any damage: zip, npy or JSON errors of several types
        raise ValueError(f"reference file {str(path)!r} is unreadable: {exc}") from None
    if not isinstance(certificate, dict):
        raise ValueError(f"reference file {str(path)!r} has no certificate")
    d = arrays["mean"].shape[0]
    if dim is not None and d != dim:
        raise ValueError(f"reference file {str(path)!r} has dimension {d}, the target {dim}")
    if arrays["samples"].ndim != 2 or arrays["samples"].shape[1] != d:
        raise ValueError(f"reference file {str(path)!r}: samples are not (n, {d})")
    if not is_certified(certificate):
        extra = " (provisional: looser thresholds than posteriordb's)" \
            if certificate.get("provisional") else ""
        raise ValueError(f"reference file {str(path)!r} is not certified{extra}")
    return Reference(samples=arrays["samples"].astype(float), chain=arrays["chain"],
                     mean=arrays["mean"], second_moment=arrays["second_moment"],
                     variance=arrays["variance"], fourth_moment=arrays["fourth_moment"],
                     mcse_mean=arrays["mcse_mean"], certificate=certificate, path=path)


PROBE_RTOL = 1e-7
"""Relative tolerance of :func:`check_probes`: far above the last-bit differences between CPUs'
BLAS and SIMD kernels (~1e-15 relative), far below what a change of model or data does."""


def probe_points(dim: int) -> list[np.ndarray]:
    """The two points at which a certificate keeps log π: 0 and an even grid on [−1, 1]
    (exact in binary floating point up to the last bit, on every CPU)."""
    return [np.zeros(dim), np.linspace(-1.0, 1.0, dim)]


def density_probes(target) -> dict:
    """``{"log_density_probes": [log π(p) for p in probe_points]}`` for a certificate; nothing
    for a noisy target (an estimate, not a function of the point)."""
    if getattr(target, "noisy", False):
        return {}
    return {"log_density_probes": [float(target._log_density(p)) for p in probe_points(target.dim)]}


def check_probes(target, certificate: dict, path) -> None:
    """Refuse a reference whose certificate's log π at the probe points is not the target's
    (to :data:`PROBE_RTOL`, or + 1e-7 absolute near 0): the same id (data and settings, by
    their bytes) but another density, e.g. a model whose covariates changed. References
    without probes (older certificates) pass."""
    stored = certificate.get("log_density_probes")
    if stored is None or getattr(target, "noisy", False):
        return
    now = density_probes(target)["log_density_probes"]
    for point, (a, b) in enumerate(zip(stored, now)):
        a, b = float(a), float(b)
        same = (a == b) or (np.isfinite(a) and np.isfinite(b)
                            and abs(a - b) <= PROBE_RTOL * max(abs(a), abs(b)) + 1e-7)
        if not same:
            raise ValueError(f"reference file {str(path)!r} was made for another density: log π "
                             f"at probe point {point} is {a!r} there and {b!r} for this target "
                             "(same data and settings by their bytes, different model code?)")


def find_reference(target) -> Path | None:
    """Path of ``target``'s reference file (shipped first, then the cache), or None."""
    name = f"{target.reference_id()}.npz"
    for folder in search_path():
        if (folder / name).is_file():
            return folder / name
    return None


def own_reference(target) -> Reference | None:
    """:meth:`Target.ckam_reference <ckam_bench.targets.base.Target.ckam_reference>` checked:
    a :class:`Reference` of the target's dimension, or None."""
    from ckam_bench.targets.base import PluginError

    hook = getattr(target, "ckam_reference", None)
    value = hook() if callable(hook) else None
    if value is None:
        return None
    where = f"{type(target).__module__}.{type(target).__qualname__}.ckam_reference"
    if not isinstance(value, Reference):
        raise PluginError(f"{where} must return a ckam_bench.reference_lookup.Reference or None, "
                          f"got {type(value).__name__}")
    if np.shape(value.mean) != (target.dim,) or np.ndim(value.samples) != 2 \
            or np.shape(value.samples)[1] != target.dim:
        raise PluginError(f"{where} returned a reference of shape {np.shape(value.samples)}, "
                          f"not (draws, {target.dim})")
    return value


def load_reference(target) -> Reference | None:
    """``target``'s certified reference sample (shipped, else cached, else the one the target
    brings itself: :func:`own_reference`, e.g. posteriordb's draws for a model of the
    posteriordb suite), or None if there is none."""
    path = find_reference(target)
    if path is None:
        return own_reference(target)
    reference = read_reference(path, target.dim)
    check_probes(target, reference.certificate, path)
    return reference
