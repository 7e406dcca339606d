r"""Maximum mean discrepancy to a reference sample, and the noise band of exact draws (SPEC §6).

For the chain's points :math:`x_1..x_n` and reference points :math:`y_1..y_m`, the unbiased
U-statistic estimate of :math:`\mathrm{MMD}^2 = \|\mu_P - \mu_Q\|^2_{\mathcal H}` is

.. math::
    \widehat{\mathrm{MMD}}^2_u = \frac{1}{n(n-1)}\sum_{i\ne j} k(x_i, x_j)
      + \frac{1}{m(m-1)}\sum_{i\ne j} k(y_i, y_j) - \frac{2}{nm}\sum_{i,j} k(x_i, y_j)

(Gretton et al. 2012, eq. 3); its expectation is exactly 0 when both samples are i.i.d. from
one distribution, so it can be negative. Kernels:

* ``gaussian`` (the default) — :math:`k(a, b) = \exp(-\|a - b\|^2/(2\ell^2))`, ℓ by the median
  heuristic: the median pairwise distance of the reference points. It is scaled to the target,
  bounded by 1 and characteristic (MMD = 0 only for equal distributions); ℓ is fixed for the
  run, so checkpoints are comparable;
* ``polynomial`` — :math:`k(a, b) = (1 + \langle a, b\rangle)^3`, as in the KAMH paper
  (``experiment=kamh_glass``). It compares moments up to the third only and weighs a point by
  about ‖x‖⁶, so on a target not scaled to unit size its estimate is mostly noise.

**Noise band.** The reference is one fixed sample, so the estimate for n exact draws scatters
around a value that depends on that sample, not around 0. :meth:`MMD.noise_band` measures this
scatter: the estimate for B = 39 independent sets of n exact draws against the same reference.
A further set of n exact draws is exchangeable with them, so it falls inside their range
[min, max] with probability exactly (B − 1)/(B + 1) = 95 % (Monte Carlo test: Barnard 1963,
Besag & Clifford 1989). A chain whose estimate lies inside the band cannot be told apart from n
exact draws by this statistic; an autocorrelated but correct chain sits above it until its n
evenly spaced points are nearly independent. Without exact draws, the sets are drawn without
replacement from the reference rows held out of the reference points (the reference points
take at most half of the reference sample, and a band needs at least 2n held-out rows): the
sets then share rows of one finite pool, which makes the band somewhat narrower than the exact
one.

Cost is bounded whatever the chain length: the chain side is at most ``max_points`` evenly
spaced rows of the run's bounded sample store (the :class:`ThinningBuffer` of collected samples,
itself evenly thinned), the reference side ``reference_points`` rows; a checkpoint costs
O((n + m)·n·d) kernel evaluations, computed in blocks of bounded memory, and the reference term
is computed once. The band costs B checkpoints and is computed on request (the report computes
it once per target, :mod:`ckam_bench.report.mmd_band`), never during a run. The reference is, in
this order, exact draws of the target from the fixed seed ``seed``, or evenly spaced rows of
its certified reference sample (:func:`ckam_bench.checks.reference.load_reference`); with
neither the constructor raises :class:`CapabilityError` (the column is absent). The column is
``mmd2`` (or ``mmd2_<kernel>`` with ``column_suffix``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist, pdist

from ckam_bench.targets.base import CapabilityError, Target

KERNELS = ("gaussian", "polynomial")
MAX_POINTS = 20_000
BAND_DRAWS = 39
"""Sets of exact draws behind a noise band: their range holds a further set with probability
(39 − 1)/(39 + 1) = 95 %."""
BLOCK = 1 << 22
"""Kernel values held in memory at once (32 MiB of float64)."""


def evenly_spaced(x: np.ndarray, n: int) -> np.ndarray:
    """At most ``n`` evenly spaced rows of ``x`` (all of them if it has no more)."""
    x = np.asarray(x, float)
    if x.shape[0] <= n:
        return x
    return x[_spaced_index(x.shape[0], n)]


def _spaced_index(rows: int, n: int) -> np.ndarray:
    return np.unique(np.linspace(0, rows - 1, n).round().astype(np.int64))


def median_bandwidth(y: np.ndarray) -> float:
    """The median heuristic: median pairwise Euclidean distance of the rows of ``y``."""
    d = pdist(np.asarray(y, float))
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0


_TERMS: dict = {}  # (id(source), kernel, points) -> (source, bandwidth, mean within)
_TERMS_KEPT = 8


def _reference_terms(source, reference: np.ndarray, kernel: str) -> tuple[float, float]:
    """(bandwidth, mean kernel within ``reference``): the MMD's terms of the reference points
    alone. Kept for the process when they come from a certified reference sample ``source``
    (the same object: the suite's references are read once per process, and a sweep's worker
    runs a posterior again and again), for the last few such samples; None (exact draws):
    computed."""
    key = (id(source), kernel, reference.shape[0])
    known = _TERMS.get(key) if source is not None else None
    if known is None or known[0] is not source:
        bandwidth = median_bandwidth(reference) if kernel == "gaussian" else 1.0
        known = (source, bandwidth, mean_within(reference, kernel, bandwidth))
        if source is not None:
            _TERMS[key] = known
            while len(_TERMS) > _TERMS_KEPT:
                _TERMS.pop(next(iter(_TERMS)))
    return known[1], known[2]


def gram(a: np.ndarray, b: np.ndarray, kernel: str, bandwidth: float = 1.0) -> np.ndarray:
    """Kernel matrix k(a_i, b_j), shape (len(a), len(b))."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if kernel == "polynomial":
        k = a @ b.T
        k += 1.0
        return np.power(k, 3, out=k)
    k = cdist(a, b, "sqeuclidean")
    k *= -0.5 / (bandwidth * bandwidth)
    return np.exp(k, out=k)


def kernel_sum(a: np.ndarray, b: np.ndarray, kernel: str, bandwidth: float = 1.0) -> float:
    """Σᵢⱼ k(aᵢ, bⱼ), computed in blocks of rows of ``a`` (at most :data:`BLOCK` values each)."""
    rows = max(1, BLOCK // max(len(b), 1))
    return float(sum(gram(a[s:s + rows], b, kernel, bandwidth).sum() for s in range(0, len(a), rows)))


def mean_within(x: np.ndarray, kernel: str, bandwidth: float = 1.0) -> float:
    """The mean of k(xᵢ, xⱼ) over the pairs i ≠ j (x has at least 2 rows)."""
    x = np.asarray(x, float)
    n = x.shape[0]
    if kernel == "gaussian" and n * (n - 1) // 2 <= BLOCK:  # each unordered pair once
        k = pdist(x, "sqeuclidean")
        k *= -0.5 / (bandwidth * bandwidth)
        return float(2.0 * np.exp(k, out=k).sum() / (n * (n - 1)))
    diagonal = n if kernel == "gaussian" else float(np.sum((1.0 + np.einsum("ij,ij->i", x, x)) ** 3))
    return (kernel_sum(x, x, kernel, bandwidth) - diagonal) / (n * (n - 1))


def mmd2_unbiased(x, y, kernel: str = "gaussian", bandwidth: float = 1.0) -> float:
    """The unbiased U-statistic MMD² between the rows of ``x`` and ``y`` (each ≥ 2 rows)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape[0] < 2 or y.shape[0] < 2:
        raise ValueError(f"mmd2_unbiased needs at least 2 points per sample, got {x.shape[0]} and {y.shape[0]}")
    return (mean_within(x, kernel, bandwidth) + mean_within(y, kernel, bandwidth)
            - 2.0 * kernel_sum(x, y, kernel, bandwidth) / (x.shape[0] * y.shape[0]))


@dataclass(frozen=True)
class NoiseBand:
    """Where the estimate for ``n`` exact draws falls: the range [lo, hi] of ``values`` (one
    estimate per set of draws), holding a further set with probability ``level``."""

    n: int
    lo: float
    hi: float
    values: np.ndarray
    source: str

    @property
    def level(self) -> float:
        """(B − 1)/(B + 1) for B sets: the chance that a further set falls inside [lo, hi]."""
        return (len(self.values) - 1) / (len(self.values) + 1)

    def describe(self) -> str:
        return (f"the range of MMD² for {len(self.values)} sets of {self.n} {self.source} against "
                f"the same reference, which holds a further set {self.level:.0%} of the time")


class MMD:
    """Checkpoint metric: unbiased MMD² between the collected samples and a reference sample.

    Parameters
    ----------
    target : the run's target.
    kernel : ``gaussian`` (median-heuristic bandwidth) or ``polynomial`` ((1 + ⟨a, b⟩)³).
    max_points : at most this many evenly spaced rows of the sample store enter a checkpoint.
    reference_points : size of the reference subsample (at most half of a certified reference
        sample, whose other rows are held out for :meth:`noise_band`).
    seed : seed of the exact reference draws (the noise band's draws use ``[seed, 1, n]``).
    use_reference : fall back to the target's certified reference sample without exact draws.
    column_suffix : name the column ``mmd2_<kernel>`` instead of ``mmd2``.
    """

    def __init__(self, target: Target, kernel: str = "gaussian", max_points: int = 1000,
                 reference_points: int = 2000, seed: int = 20140, use_reference: bool = True,
                 column_suffix: bool = False):
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
        max_points, reference_points = int(max_points), int(reference_points)
        for key, value in (("max_points", max_points), ("reference_points", reference_points)):
            if not 2 <= value <= MAX_POINTS:
                raise ValueError(f"{key} must be in [2, {MAX_POINTS}], got {value}")
        self.target, self.kernel, self.max_points, self.seed = target, kernel, max_points, int(seed)
        self.column = f"mmd2_{kernel}" if column_suffix else "mmd2"
        self.held_out = None  # reference rows left out of the reference points (no exact draws)
        if target.has_exact_sampler:
            self.reference = np.asarray(target.sample(reference_points, np.random.default_rng(self.seed)), float)
            self.info = {"kernel": kernel, "reference": f"{reference_points} exact draws, seed {self.seed}"}
        else:
            reference = None
            if use_reference:
                from ckam_bench.reference_lookup import load_reference

                reference = load_reference(target)
            if reference is None:
                raise CapabilityError(
                    f"target {target.name!r} has no exact draws and no certified reference sample "
                    f"(build one with: ckam-bench-reference target={target.name})")
            rows = np.asarray(reference.samples, float)
            if rows.shape[0] < 2:
                raise CapabilityError(f"target {target.name!r}: its reference sample has {rows.shape[0]} row")
            chosen = _spaced_index(rows.shape[0], max(2, min(reference_points, rows.shape[0] // 2)))
            self.reference = rows[chosen]
            self.held_out = np.delete(rows, chosen, axis=0)
            self.info = {"kernel": kernel, "reference": reference.describe(), "reference_points": len(self.reference),
                         "held_out": len(self.held_out)}
        self.bandwidth, self._yy = _reference_terms(
            None if target.has_exact_sampler else reference.samples, self.reference, kernel)
        if kernel == "gaussian":
            self.info["bandwidth"] = self.bandwidth

    def describe(self) -> dict:
        return dict(self.info)

    def update(self, samples) -> None:
        """Nothing to stream: a checkpoint reads the bounded sample store."""

    def points(self, stored: int) -> int:
        """How many chain points a checkpoint uses when the sample store holds ``stored`` rows."""
        return min(int(stored), self.max_points)

    def estimate(self, x: np.ndarray) -> float:
        """MMD² between the rows of ``x`` (at least 2) and the reference."""
        return (mean_within(x, self.kernel, self.bandwidth) + self._yy
                - 2.0 * kernel_sum(x, self.reference, self.kernel, self.bandwidth)
                / (x.shape[0] * self.reference.shape[0]))

    def compute(self, buffer) -> dict:
        x = evenly_spaced(buffer.data, self.max_points) if buffer is not None else np.empty((0, 0))
        if x.shape[0] < 2:
            return {self.column: math.nan}
        return {self.column: self.estimate(x)}

    def noise_band(self, n: int, draws: int = BAND_DRAWS) -> NoiseBand:
        """The estimate for ``draws`` independent sets of ``n`` exact draws (seeded
        ``[seed, 1, n]``), or, without exact draws, of ``n`` held-out reference rows each (drawn
        without replacement); see the module docstring. Raises ValueError when there are too
        few held-out rows (fewer than 2n)."""
        n, draws = int(n), int(draws)
        if not 2 <= n <= self.max_points:
            raise ValueError(f"n must be in [2, max_points={self.max_points}], got {n}")
        if draws < 2:
            raise ValueError(f"draws must be at least 2, got {draws}")
        rng = np.random.default_rng([self.seed, 1, n])
        if self.held_out is None:
            sets = (np.asarray(self.target.sample(n, rng), float) for _ in range(draws))
            source = "exact draws"
        else:
            pool = self.held_out
            if pool.shape[0] < 2 * n:
                raise ValueError(f"the reference sample has {pool.shape[0]} rows beyond the "
                                 f"{len(self.reference)} reference points, fewer than 2 × {n}")
            sets = (pool[rng.choice(pool.shape[0], n, replace=False)] for _ in range(draws))
            source = f"held-out reference rows (of {pool.shape[0]})"
        values = np.array([self.estimate(x) for x in sets])
        return NoiseBand(n, float(values.min()), float(values.max()), values, source)

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Stateless (the reference is rebuilt from the seed)."""
