"""posteriordb's other posteriors, those without a posteriordb reference that stress samplers in
ways the rest of the suite does not (issue 45 §3): centred hierarchies (funnels) beside their
non-centred forms, crossed random effects, nonlinear growth curves, overdispersed binomial
random effects, label-switching mixtures. Their registry. Each family's models live in their own module
(:mod:`ckam_bench.posteriordb.radon_family`, :mod:`ckam_bench.posteriordb.bugs`,
:mod:`ckam_bench.posteriordb.mixtures`), which is the
``target.model`` path: a reference's id covers the bytes of its model function's module, so these
modules are never re-exported elsewhere and never edited once a reference is shipped. Data in
``data/`` (:func:`ckam_bench.posteriordb.build.build_hard`); references certified with
``ckam-bench-reference``'s criteria and shipped in ``ckam_bench/data/references/``
(tests/test_posteriordb_hard.py builds and proves them), each matched by a second route
(scripts/second_route.py). This module needs no PyMC.
"""

from __future__ import annotations

from ckam_bench.posteriordb import HARNESS, Posterior

RADON = "ckam_bench.posteriordb.radon_family"
BUGS = "ckam_bench.posteriordb.bugs"
MIXTURES = "ckam_bench.posteriordb.mixtures"


def _P(name, function, character, dim, note, module):
    return Posterior(name, function, character, dim, note, reference_source=HARNESS, module=module)


HARD: dict[str, Posterior] = {p.name: p for p in (
    # radon_mn (919 homes, 85 counties): the stan case study's hierarchies, centred and not
    _P("radon_mn-radon_partially_pooled_centered", "radon_partially_pooled_centered", "hierarchical", 88,
       "centred county intercepts under a learned sd (919 homes, 1-116 per county): a mild funnel", RADON),
    _P("radon_mn-radon_partially_pooled_noncentered", "radon_partially_pooled_noncentered", "hierarchical", 88,
       "the same posterior non-centred: the counties with many homes tie alpha_raw to sigma_alpha", RADON),
    _P("radon_mn-radon_variable_intercept_centered", "radon_variable_intercept_centered", "hierarchical", 89,
       "centred county intercepts and a common floor slope", RADON),
    _P("radon_mn-radon_variable_intercept_noncentered", "radon_variable_intercept_noncentered", "hierarchical", 89,
       "the same posterior non-centred", RADON),
    _P("radon_mn-radon_variable_slope_centered", "radon_variable_slope_centered", "hierarchical", 89,
       "centred county floor slopes: 25 counties have no first-floor home, their slopes prior-only: "
       "a funnel between sigma_beta and beta", RADON),
    _P("radon_mn-radon_variable_slope_noncentered", "radon_variable_slope_noncentered", "hierarchical", 89,
       "the same posterior non-centred", RADON),
    _P("radon_mn-radon_variable_intercept_slope_centered", "radon_variable_intercept_slope_centered",
       "hierarchical", 175, "centred county intercepts and slopes: two funnels", RADON),
    _P("radon_mn-radon_hierarchical_intercept_centered", "radon_hierarchical_intercept_centered", "hierarchical",
       90, "centred county intercepts with the log uranium and floor of each home as predictors", RADON),
    _P("radon_mn-radon_hierarchical_intercept_noncentered", "radon_hierarchical_intercept_noncentered",
       "hierarchical", 90, "the same posterior non-centred", RADON),
    # BUGS examples and the ARM book: small posteriors, hard shapes
    _P("dugongs_data-dugongs_model", "dugongs", "regression", 4,
       "nonlinear growth curve alpha - beta lambda^x (27 dugongs), lambda on (0.5, 1), a near-flat "
       "gamma(1e-4, 1e-4) precision", BUGS),
    _P("surgical_data-surgical_model", "surgical", "hierarchical", 14,
       "centred logit mortality of 12 hospitals under an inv_gamma(0.001, 0.001) variance: a "
       "funnel and a flat plateau in log sigmasq", BUGS),
    _P("seeds_data-seeds_model", "seeds", "hierarchical", 26,
       "overdispersed binomial random effects of 21 plates, centred, gamma(1e-3, 1e-3) precision: "
       "a long tail towards the pooled model", BUGS),
    _P("seeds_data-seeds_centered_model", "seeds_centered", "hierarchical", 26,
       "the same plates with sum-to-zero effects b = c - mean(c): c's mean is prior-only", BUGS),
    _P("seeds_data-seeds_stanified_model", "seeds_stanified", "hierarchical", 26,
       "the same plates with normal(0, 1) coefficients and a half-Cauchy sd", BUGS),
    _P("pilots-pilots", "pilots", "hierarchical", 18,
       "crossed effects of 5 groups and 8 scenarios, centred, flat (0, 100) sds: a + b identified "
       "only up to a shift the N(0, 1) means pin down", BUGS),
    # label-switching mixtures: certified through their ordered twin and the exact exchange symmetry
    _P("normal_2-normal_mixture", "normal_mixture", "mixture", 3,
       "two unit-variance normals (1000 points near -10 and 10), unknown weight and means: two "
       "well-separated exchangeable modes, mass 1/2 each by symmetry", MIXTURES),
    _P("low_dim_gauss_mix_collapse-low_dim_gauss_mix_collapse", "low_dim_gauss_mix_collapse", "mixture", 5,
       "two normals with unknown means, scales and weight (1000 points): two exchangeable modes, "
       "mass 1/2 each by symmetry", MIXTURES),
)}
"""posteriordb name -> :class:`~ckam_bench.posteriordb.Posterior` (``reference_source`` is
``HARNESS``; ``module`` the family's own)."""

DATA_KEYS: dict[str, tuple[str, ...]] = {
    "pilots": ("N", "n_groups", "n_scenarios", "group_id", "scenario_id", "y"),
    "surgical_data": ("N", "r", "n"),
    "dugongs_data": ("N", "x", "Y"),
    "seeds_data": ("I", "n", "N", "x1", "x2"),
    "normal_2": ("N", "y"),
    "low_dim_gauss_mix_collapse": ("N", "y"),
}
"""The keys of each posteriordb data set that its Stan programs' data blocks declare (radon_mn is
shipped by :mod:`~ckam_bench.posteriordb.highdim`, with ``log_uppm`` for the hierarchical
intercept models)."""
