r"""Moment errors against the truth: exact moments, else a certified reference sample.

With :math:`n` collected draws and per coordinate :math:`\hat m = \frac1n\sum_t x_t`,
:math:`\hat s = \frac1n\sum_t x_t^2`, and the truth :math:`m = E[X]`, :math:`s = E[X^2]`:

* ``mean_error`` :math:`= \|\hat m - m\|`, ``second_moment_error`` :math:`= \|\hat s - s\|`,
  ``mean_norm`` :math:`= \|\hat m\|`, ``mean_estimate`` :math:`= \hat m` (a list column);
* ``bias2``, the standardised squared bias (the cost-to-accuracy figure of merit):

  .. math::
      b^2 = \max_j \max\Big\{\frac{(\hat m_j - m_j)^2}{\operatorname{Var}[X_j]},
      \frac{(\hat s_j - s_j)^2}{\operatorname{Var}[X_j^2]}\Big\},
      \qquad \operatorname{Var}[X_j^2] = E[X_j^4] - s_j^2.

  For n exact independent draws :math:`E[b^2]` falls like 1/n (each ratio is a squared
  standardised mean, ≈ χ²₁/n), so :math:`b^2 < 0.01` means every moment is within a tenth of a
  standard deviation, roughly what 100 independent draws give.

Truth, in this order:

1. **exact**: the target's ``mean`` and ``variance`` (then :math:`s = \mathrm{var} + m^2`).
   :math:`E[X^4]` comes from the target's ``fourth_moment`` when it has one, else by quadrature
   of :math:`x^4` against its exact marginals (trapezoid rule on 4001 points over the mean ± 12
   sd), else from ``exact_draws`` (50 000) exact draws with a fixed seed (it only scales ``bias2``: a
   relative error of a few per cent), else from
   the reference sample;
2. **reference**: the target's certified reference (:func:`ckam_bench.checks.reference.load_reference`):
   its ``mean``, ``second_moment``, ``variance`` and ``fourth_moment``, computed from every
   post-burn-in draw of its chains.

With neither, the constructor raises :class:`CapabilityError` (the columns are absent and the
run records why). :meth:`describe` says which truth was used — ``{"truth": "exact"}`` or
``{"truth": "reference", "reference_id", "path", "sampler", ...}`` — for ``status.json``.

**Warm-up discarded** (``discard``, the key ``metrics.moments.discard``; default 0.1): the
collected samples of a sampler without a burn-in begin with its start point and transient,
right for a convergence trace but a bias in a moment error. The errors above use the collected
samples after the first ``discard`` of them: a fraction 0 ≤ discard < 1 of the samples
collected so far (at every checkpoint), or an integer count ≥ 1. A fraction is applied on a
grid of cumulative sums taken at the counts m₀ = 0, m_{i+1} = max(m_i + 1, ⌈1.05 m_i⌉), so
the samples left out are the first m ≤ ⌊discard · n⌋ for the largest such grid count m: between
discard/1.05 and discard of them (a few hundred sums of 2d floats for a million samples). The
trace column ``moments_discarded`` holds m at each checkpoint, and the report states it.

Streaming: ``update`` adds :math:`\sum x` and :math:`\sum x^2` (float64) per block, so a
checkpoint costs O(d) whatever the chain length; ``state_dict`` holds the sums for resume.
"""

from __future__ import annotations

import math

import numpy as np

from ckam_bench.targets.base import CapabilityError, Target, fourth_moment_of

EXACT_DRAWS = 50_000
DISCARD = 0.1
"""Default warm-up left out of the moment errors: the first 10 % of the collected samples."""
GRID_RATIO = 1.05


def _check_discard(discard):
    """A fraction in [0, 1) (float) or a count ≥ 1 (int); anything else is a ValueError."""
    if isinstance(discard, (int, np.integer)) and not isinstance(discard, bool) and discard >= 1:
        return int(discard)
    if isinstance(discard, (int, float, np.number)) and not isinstance(discard, bool) \
            and 0.0 <= float(discard) < 1.0:
        return float(discard)
    raise ValueError(f"discard must be a fraction in [0, 1) or a count >= 1, got {discard!r}")
QUADRATURE_SDS, QUADRATURE_POINTS = 12.0, 4001


def discarded_count(discard, n: int) -> int:
    """How many of the first ``n`` collected samples the errors leave out (the module
    docstring's rule, shared with the posteriordb suite's pass/fail): an integer count ≥ 1
    leaves out min(count, n); a fraction the largest grid count m ≤ ⌊discard · n⌋ (grid
    m₀ = 0, m_{i+1} = max(m_i + 1, ⌈1.05 m_i⌉))."""
    discard, n = _check_discard(discard), int(n)
    if isinstance(discard, int):
        return min(discard, n)
    limit, m = math.floor(discard * n), 0
    while (step := max(m + 1, math.ceil(GRID_RATIO * m))) <= limit:
        m = step
    return m


class MomentErrors:
    """Checkpoint metric: mean and second-moment errors, ‖Ê[X]‖, Ê[X] and b².

    Parameters
    ----------
    target : the run's target.
    use_reference : look up a certified reference sample when the target has no exact moments.
    exact_draws : exact draws used for E[X⁴] when the target knows its mean and variance but
        not its fourth moments (0 falls back to the reference).
    discard : warm-up left out of the errors: a fraction in [0, 1) of the collected samples, or
        an integer count ≥ 1 (module docstring).
    """

    def __init__(self, target: Target, use_reference: bool = True, exact_draws: int = EXACT_DRAWS,
                 discard: float = DISCARD):
        self.discard = _check_discard(discard)
        exact_draws = int(exact_draws)
        if not 0 <= exact_draws <= 10_000_000:
            raise ValueError(f"exact_draws must be in [0, 10000000], got {exact_draws}")
        self.dim = target.dim
        self.info: dict = {}
        mean, var = target.mean, target.variance
        reference = None
        if mean is None or var is None:
            if use_reference:
                from ckam_bench.reference_lookup import load_reference

                reference = load_reference(target)
            if reference is None:
                raise CapabilityError(
                    f"target {target.name!r} has no exact moments and no certified reference "
                    f"sample (build one with: ckam-bench-reference target={target.name})")
            mean, second, var, fourth = (reference.mean, reference.second_moment,
                                         reference.variance, reference.fourth_moment)
            self.info = {"truth": "reference", **reference.describe()}
        else:
            mean, var = np.asarray(mean, float), np.asarray(var, float)
            second = var + mean * mean
            fourth, source = self._fourth_moment(target, exact_draws, use_reference)
            self.info = {"truth": "exact", "fourth_moment": source}
        self.mean = np.asarray(mean, float)
        self.second = np.asarray(second, float)
        self.var = np.asarray(var, float)
        self.var2 = np.maximum(np.asarray(fourth, float) - self.second**2, 0.0)
        self.n = 0
        self.sum1 = np.zeros(self.dim)
        self.sum2 = np.zeros(self.dim)
        # cumulative sums at the grid counts (row 0: count 0), for the discarded warm-up
        self.marks = [0]
        self.marks_sum1 = [np.zeros(self.dim)]
        self.marks_sum2 = [np.zeros(self.dim)]

    def _next_mark(self) -> int | None:
        last = self.marks[-1]
        if isinstance(self.discard, int):
            return self.discard if last < self.discard else None
        if self.discard == 0.0:
            return None
        return max(last + 1, math.ceil(GRID_RATIO * last))

    @staticmethod
    def _fourth_moment(target: Target, exact_draws: int, use_reference: bool):
        known = fourth_moment_of(target)
        if known is not None:
            return known, "exact"
        if target.has_marginals:  # quadrature of x⁴ against each exact marginal
            mean, sd = np.asarray(target.mean, float), np.sqrt(np.asarray(target.variance, float))
            grid = np.linspace(-QUADRATURE_SDS, QUADRATURE_SDS, QUADRATURE_POINTS)
            fourth = np.empty(target.dim)
            for j in range(target.dim):
                x = mean[j] + sd[j] * grid
                p = np.exp(target.marginal_logpdf(j, x))
                fourth[j] = np.trapezoid(x**4 * p, x) / np.trapezoid(p, x)
            return fourth, "quadrature of the exact marginals"
        if target.has_exact_sampler and exact_draws > 0:
            draws = target.sample(exact_draws, np.random.default_rng(20240))
            return np.mean(draws**4, axis=0), f"{exact_draws} exact draws"
        if use_reference:
            from ckam_bench.reference_lookup import load_reference

            reference = load_reference(target)
            if reference is not None:
                return reference.fourth_moment, f"reference {reference.reference_id}"
        return np.full(target.dim, np.nan), "unknown (bias2 uses E[X] only)"

    def describe(self) -> dict:
        """Which truth the errors are measured against (JSON-able, for ``status.json``)."""
        return {**self.info, "discard": self.discard}

    def update(self, samples) -> None:
        """Add a block of collected samples (k, d) to the running sums."""
        x = np.asarray(samples, float)
        mark = self._next_mark()
        while mark is not None and mark <= self.n + x.shape[0]:
            head = x[: mark - self.n]
            self.marks.append(mark)
            self.marks_sum1.append(self.sum1 + head.sum(axis=0))
            self.marks_sum2.append(self.sum2 + np.einsum("ij,ij->j", head, head))
            mark = self._next_mark()
        if x.shape[0]:
            self.n += x.shape[0]
            self.sum1 += x.sum(axis=0)
            self.sum2 += np.einsum("ij,ij->j", x, x)

    def compute(self, buffer=None) -> dict:
        """Trace columns: mean_error, second_moment_error, mean_norm, bias2 (floats),
        mean_estimate (a (d,) array, stored as a list column), all over the samples kept after
        the warm-up (NaN before any), and moments_discarded (the samples left out)."""
        limit = discarded_count(self.discard, self.n)  # a grid count reached: one of the marks
        k = int(np.searchsorted(self.marks, limit, side="right")) - 1
        kept = self.n - self.marks[k] if limit < self.n else 0
        if kept == 0:
            nan = float("nan")
            return {"mean_error": nan, "second_moment_error": nan, "mean_norm": nan,
                    "bias2": nan, "mean_estimate": np.full(self.dim, np.nan),
                    "moments_discarded": float(self.n)}
        m = (self.sum1 - self.marks_sum1[k]) / kept
        s = (self.sum2 - self.marks_sum2[k]) / kept
        with np.errstate(divide="ignore", invalid="ignore"):
            z1 = (m - self.mean) ** 2 / self.var
            z2 = (s - self.second) ** 2 / self.var2
        return {
            "mean_error": float(np.linalg.norm(m - self.mean)),
            "second_moment_error": float(np.linalg.norm(s - self.second)),
            "mean_norm": float(np.linalg.norm(m)),
            "bias2": float(np.nanmax(np.concatenate([z1, z2]))),
            "mean_estimate": m,
            "moments_discarded": float(self.marks[k]),
        }

    def state_dict(self) -> dict:
        """Running sums for resume."""
        return {"n": np.array(self.n), "sum1": self.sum1.copy(), "sum2": self.sum2.copy(),
                "marks": np.array(self.marks, dtype=np.int64),
                "marks_sum1": np.array(self.marks_sum1), "marks_sum2": np.array(self.marks_sum2)}

    def load_state_dict(self, state: dict) -> None:
        self.n = int(state["n"])
        self.sum1 = np.array(state["sum1"], float)
        self.sum2 = np.array(state["sum2"], float)
        self.marks = [int(m) for m in state["marks"]]
        self.marks_sum1 = list(np.array(state["marks_sum1"], float))
        self.marks_sum2 = list(np.array(state["marks_sum2"], float))
