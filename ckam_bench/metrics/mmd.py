r"""Maximum mean discrepancy to a reference sample (the KAMH paper's Figure 4; SPEC §6).

For the chain's points :math:`x_1..x_n` and reference points :math:`y_1..y_m`, the unbiased
U-statistic estimate of :math:`\mathrm{MMD}^2 = \|\mu_P - \mu_Q\|^2_{\mathcal H}` is

.. math::
    \widehat{\mathrm{MMD}}^2_u = \frac{1}{n(n-1)}\sum_{i\ne j} k(x_i, x_j)
      + \frac{1}{m(m-1)}\sum_{i\ne j} k(y_i, y_j) - \frac{2}{nm}\sum_{i,j} k(x_i, y_j)

(Gretton et al. 2012, eq. 3); its expectation is exactly 0 when both samples are i.i.d. from
one distribution, so it can be negative. Kernels:

* ``polynomial`` — :math:`k(a, b) = (1 + \langle a, b\rangle)^3`, as in the KAMH paper;
* ``gaussian`` — :math:`k(a, b) = \exp(-\|a - b\|^2/(2\ell^2))`, ℓ by the median heuristic: the
  median pairwise distance of the reference subsample (fixed for the run, so checkpoints are
  comparable).

Cost is bounded whatever the chain length: the chain side is at most ``max_points`` evenly
spaced rows of the run's bounded sample store (the :class:`ThinningBuffer` of collected samples,
itself evenly thinned), the reference side ``reference_points`` rows; a checkpoint costs
O((n + m)·n·d) and the reference term is computed once. The reference is, in this order, exact
draws of the target from the fixed seed ``seed``, or evenly spaced rows of its certified
reference sample (:func:`ckam_bench.checks.reference.load_reference`); with neither the constructor
raises :class:`CapabilityError` (the column is absent). The column is ``mmd2`` (or
``mmd2_<kernel>`` with ``column_suffix``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.distance import pdist

from ckam_bench.targets.base import CapabilityError, Target

KERNELS = ("polynomial", "gaussian")
MAX_POINTS = 20_000


def evenly_spaced(x: np.ndarray, n: int) -> np.ndarray:
    """At most ``n`` evenly spaced rows of ``x`` (all of them if it has no more)."""
    x = np.asarray(x, float)
    if x.shape[0] <= n:
        return x
    return x[np.linspace(0, x.shape[0] - 1, n).round().astype(np.int64)]


def median_bandwidth(y: np.ndarray) -> float:
    """The median heuristic: median pairwise Euclidean distance of the rows of ``y``."""
    d = pdist(np.asarray(y, float))
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0


def gram(a: np.ndarray, b: np.ndarray, kernel: str, bandwidth: float = 1.0) -> np.ndarray:
    """Kernel matrix k(a_i, b_j), shape (len(a), len(b))."""
    if kernel == "polynomial":
        return (1.0 + a @ b.T) ** 3
    sq = np.einsum("ij,ij->i", a, a)[:, None] + np.einsum("ij,ij->i", b, b)[None, :] - 2.0 * a @ b.T
    return np.exp(-np.maximum(sq, 0.0) / (2.0 * bandwidth * bandwidth))


def _mean_off_diagonal(k: np.ndarray) -> float:
    n = k.shape[0]
    return float((k.sum() - np.trace(k)) / (n * (n - 1)))


def mmd2_unbiased(x, y, kernel: str = "polynomial", bandwidth: float = 1.0) -> float:
    """The unbiased U-statistic MMD² between the rows of ``x`` and ``y`` (each ≥ 2 rows)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape[0] < 2 or y.shape[0] < 2:
        raise ValueError(f"mmd2_unbiased needs at least 2 points per sample, got {x.shape[0]} and {y.shape[0]}")
    return (_mean_off_diagonal(gram(x, x, kernel, bandwidth)) + _mean_off_diagonal(gram(y, y, kernel, bandwidth))
            - 2.0 * float(gram(x, y, kernel, bandwidth).mean()))


class MMD:
    """Checkpoint metric: unbiased MMD² between the collected samples and a reference sample.

    Parameters
    ----------
    target : the run's target.
    kernel : ``polynomial`` ((1 + ⟨a, b⟩)³) or ``gaussian`` (median-heuristic bandwidth).
    max_points : at most this many evenly spaced rows of the sample store enter a checkpoint.
    reference_points : size of the reference subsample.
    seed : seed of the exact reference draws.
    use_reference : fall back to the target's certified reference sample without exact draws.
    column_suffix : name the column ``mmd2_<kernel>`` instead of ``mmd2``.
    """

    def __init__(self, target: Target, kernel: str = "polynomial", max_points: int = 1000,
                 reference_points: int = 1000, seed: int = 20140, use_reference: bool = True,
                 column_suffix: bool = False):
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
        max_points, reference_points = int(max_points), int(reference_points)
        for key, value in (("max_points", max_points), ("reference_points", reference_points)):
            if not 2 <= value <= MAX_POINTS:
                raise ValueError(f"{key} must be in [2, {MAX_POINTS}], got {value}")
        self.kernel, self.max_points = kernel, max_points
        self.column = f"mmd2_{kernel}" if column_suffix else "mmd2"
        if target.has_exact_sampler:
            self.reference = np.asarray(target.sample(reference_points, np.random.default_rng(int(seed))), float)
            self.info = {"kernel": kernel, "reference": f"{reference_points} exact draws, seed {int(seed)}"}
        else:
            reference = None
            if use_reference:
                from ckam_bench.reference_lookup import load_reference

                reference = load_reference(target)
            if reference is None:
                raise CapabilityError(
                    f"target {target.name!r} has no exact draws and no certified reference sample "
                    f"(build one with: ckam-bench-reference target={target.name})")
            self.reference = evenly_spaced(reference.samples, reference_points)
            self.info = {"kernel": kernel, "reference": reference.describe(), "reference_points": len(self.reference)}
        self.bandwidth = median_bandwidth(self.reference) if kernel == "gaussian" else 1.0
        if kernel == "gaussian":
            self.info["bandwidth"] = self.bandwidth
        self._yy = _mean_off_diagonal(gram(self.reference, self.reference, kernel, self.bandwidth))

    def describe(self) -> dict:
        return dict(self.info)

    def update(self, samples) -> None:
        """Nothing to stream: a checkpoint reads the bounded sample store."""

    def compute(self, buffer) -> dict:
        x = evenly_spaced(buffer.data, self.max_points) if buffer is not None else np.empty((0, 0))
        if x.shape[0] < 2:
            return {self.column: math.nan}
        xx = _mean_off_diagonal(gram(x, x, self.kernel, self.bandwidth))
        xy = float(gram(x, self.reference, self.kernel, self.bandwidth).mean())
        return {self.column: xx + self._yy - 2.0 * xy}

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Stateless (the reference is rebuilt from the seed)."""
