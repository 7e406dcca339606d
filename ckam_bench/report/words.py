"""Trace columns in words: what a figure's title, axis label and caption call a column.

A reader sees "min ESS of the stored, thinned sample", never ``ess_min_stored``. Each column
the runner or a metric writes (docs/outputs.md) has a :class:`Metric`: a title (a phrase, for
figure titles and captions), a short axis label, and its kind:

* ``"accuracy"`` — how close the samples are to the target, or how many effective samples they
  are worth: b², KL, ESS and its rates, moment errors, MMD, MCSE. The report shows these first,
  against what they cost (sampler seconds, density and gradient evaluations), in
  :data:`ACCURACY_ORDER`;
* ``"diagnostic"`` — how the sampler behaves: acceptance, step sizes, speed, tree depth,
  divergences, bookkeeping (samples left out, share outside the box). Shown after the results.

A column not listed here (a sampler's own trace column) is a diagnostic, titled by its name in
words (``swap_rate_mean`` → "swap rate mean", ``acceptance_warmup`` → "acceptance rate,
warmup phase", ``n_restarts`` → "restarts so far").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """A trace column in words."""

    title: str
    axis: str
    kind: str = "diagnostic"


ACCURACY = "accuracy"
DIAGNOSTIC = "diagnostic"

METRICS = {
    "bias2": Metric("b², the worst standardised squared error of the mean and second moment",
                    "b²", ACCURACY),
    "kl": Metric("symmetric KL divergence to the target", "symmetric KL", ACCURACY),
    "ess_min": Metric("effective sample size (min over coordinates)", "min ESS", ACCURACY),
    "ess_per_second": Metric("min ESS per second of sampler time", "min ESS / s", ACCURACY),
    "ess_per_grad": Metric("min ESS per gradient evaluation", "min ESS / gradient",
                           ACCURACY),
    "ess_per_density": Metric("min ESS per density evaluation", "min ESS / density",
                              ACCURACY),
    "mean_error": Metric("error of the mean ‖Ê[X] − E[X]‖", "mean error", ACCURACY),
    "second_moment_error": Metric("error of the second moment ‖Ê[X²] − E[X²]‖",
                                  "2nd-moment error", ACCURACY),
    "mmd2": Metric("squared maximum mean discrepancy (MMD²) to reference draws", "MMD²",
                   ACCURACY),
    "coefficient_error": Metric("distance to the true coefficients ‖Ê[β] − β‖",
                                "coefficient error", ACCURACY),
    "quantile_deviation": Metric("mean coverage error of the quantile regions",
                                 "coverage error", ACCURACY),
    "mcse_max": Metric("largest Monte Carlo standard error of a coordinate's mean", "max MCSE",
                       ACCURACY),
    "ess_median": Metric("effective sample size (median over coordinates)", "median ESS",
                         ACCURACY),
    "ess_max": Metric("effective sample size (max over coordinates)", "max ESS", ACCURACY),
    "acceptance": Metric("acceptance rate", "acceptance"),
    "step_size": Metric("step size", "step size"),
    "step": Metric("integrator step size ε", "step size ε"),
    "iters_per_second": Metric("iterations per second of sampler time", "iterations / s"),
    "tree_depth": Metric("mean tree depth", "tree depth"),
    "n_divergent": Metric("divergent transitions so far", "divergences"),
    "esjd": Metric("mean squared jump distance (ESJD)", "ESJD"),
    "noise": Metric("noise γ of the kernel proposal", "noise γ"),
    "swap_acceptance_mean": Metric("mean acceptance rate of swaps between temperatures",
                                   "swap acceptance"),
    "ess_min_stored": Metric("min ESS of the stored, thinned sample", "min ESS (stored)"),
    "moments_discarded": Metric("warm-up samples left out of the moment errors",
                                "samples left out"),
    "mean_norm": Metric("norm of the estimated mean ‖Ê[X]‖", "‖Ê[X]‖"),
    "kl_outside": Metric("share of samples outside the KL grid's box", "share outside"),
    "n_jitter": Metric("covariance jitters so far", "jitters"),
    "n_nonfinite": Metric("non-finite proposals so far", "non-finite proposals"),
}
ACCURACY_ORDER = tuple(name for name, m in METRICS.items() if m.kind == ACCURACY)
"""The accuracy columns in the order the report shows them: b², KL, ESS first."""

_ACRONYMS = {"ess": "ESS", "kl": "KL", "mmd": "MMD", "mcse": "MCSE", "esjd": "ESJD",
             "rhat": "R-hat", "ks": "KS"}


def _phrase(name: str) -> str:
    return " ".join(_ACRONYMS.get(part, part) for part in name.split("_") if part)


def metric(column: str) -> Metric:
    """The column in words (see the module docstring)."""
    if column in METRICS:
        return METRICS[column]
    if column.startswith("mmd2_"):
        kernel = _phrase(column.removeprefix("mmd2_"))
        return Metric(f"{METRICS['mmd2'].title}, {kernel} kernel", f"MMD² ({kernel})", ACCURACY)
    if column.startswith("acceptance_"):
        phase = _phrase(column.removeprefix("acceptance_"))
        return Metric(f"acceptance rate, {phase} phase", f"acceptance ({phase})")
    if column.startswith("n_") and len(column) > 2:
        words = _phrase(column[2:])
        return Metric(f"{words} so far", words)
    words = _phrase(column)
    return Metric(words, words)


def title(column: str) -> str:
    """The column's title in words."""
    return metric(column).title


def order(columns) -> list[str]:
    """Accuracy columns first (in :data:`ACCURACY_ORDER`, then other accuracy columns), then
    the others as given."""
    columns = list(columns)
    first = [c for c in ACCURACY_ORDER if c in columns]
    first += [c for c in columns if c not in first and metric(c).kind == ACCURACY]
    return first + [c for c in columns if c not in first]
