"""The posteriordb posteriors of 50-800 dimensions without posteriordb reference draws
(issue 31 §2, issue 45 §3): their registry. Models in :mod:`ckam_bench.posteriordb.hierarchical`,
:mod:`~ckam_bench.posteriordb.unpooled`, :mod:`~ckam_bench.posteriordb.structural` and
:mod:`~ckam_bench.posteriordb.radon_all_slopes` and :mod:`~ckam_bench.posteriordb.election88` (one module per family: a reference's id covers
the bytes of its model's module and every array its density reads, data and index arrays alike
(docs/data.md)). The first three are re-exported by :mod:`ckam_bench.posteriordb.models`, so
``target.model`` is ``ckam_bench.posteriordb.models:<function>`` as for the suite; the last two keep
their own path (``Posterior.module``: an edit of models.py would change the identity of every model it
defines). Data in
``data/`` (built by :func:`ckam_bench.posteriordb.build.build_highdim`), references certified with
``ckam-bench-reference``'s criteria and shipped in ``ckam_bench/data/references/`` (found by
:func:`ckam_bench.reference_lookup.find_reference` like any shipped reference). This module needs
no PyMC.
"""

from __future__ import annotations

from ckam_bench.posteriordb import HARNESS, Posterior

_P = Posterior
HIGHDIM: dict[str, Posterior] = {p.name: p for p in (
    _P("radon_mn-radon_variable_intercept_slope_noncentered", "radon_variable_intercept_slope_noncentered",
       "hierarchical", 175,
       "Gaussian varying intercepts and slopes, non-centred, 85 Minnesota counties (919 homes)",
       reference_source=HARNESS),
    _P("irt_2pl-irt_2pl", "irt_2pl", "hierarchical", 144,
       "2PL item response: Bernoulli-logit, 100 abilities x 20 items, positive lognormal "
       "discriminations under a learned scale, products a_i (theta_j - b_i)",
       reference_source=HARNESS),
    _P("GLMM_data-GLMM1_model", "glmm1", "hierarchical", 237,
       "Poisson GLMM of bird counts, centred site effects (235 sites, 2072 counts), bounded sd",
       reference_source=HARNESS),
    _P("radon_mod-radon_county", "radon_county", "hierarchical", 389,
       "centred Gaussian intercepts of 386 counties (12573 homes), many with 1-5 homes",
       reference_source=HARNESS),
    _P("election88-election88_full", "election88_full", "hierarchical", 90,
       "hierarchical logistic regression, five crossed centred effects (4 to 51 levels), "
       "11566 respondents (1458 covariate patterns), flat uniform(0, 100) scales",
       reference_source=HARNESS, module="ckam_bench.posteriordb.election88"),
    _P("radon_all-radon_county_intercept", "radon_all_county_intercept", "regression", 388,
       "no-pooling Gaussian regression at scale: 386 free county intercepts under a fixed "
       "normal(0, 10) prior and a floor slope (12573 homes of all states, many counties with 1-5)",
       reference_source=HARNESS),
    _P("radon_mn-radon_county_intercept", "radon_county_intercept", "regression", 87,
       "no-pooling Gaussian regression: 85 free county intercepts under a fixed normal(0, 10) "
       "prior and a floor slope (919 homes, 1-116 per county), no hierarchy",
       reference_source=HARNESS),
    _P("radon_all-radon_variable_intercept_slope_noncentered", "radon_all_variable_intercept_slope_noncentered",
       "hierarchical", 777,
       "Gaussian varying intercepts and slopes, non-centred, 386 counties of all states (12573 "
       "homes, many counties with 1-5): the suite's largest",
       reference_source=HARNESS, module="ckam_bench.posteriordb.radon_all_slopes"),
    _P("rstan_downloads-prophet", "prophet", "time series", 62,
       "prophet's structural time series: a linear trend with 25 changepoints under a "
       "Laplace(0, 0.05) prior plus 34 seasonal Fourier terms, 1169 days, Gaussian noise",
       reference_source=HARNESS),
)}
"""posteriordb name -> :class:`~ckam_bench.posteriordb.Posterior` (``reference`` is unused: no
posteriordb draws; ``reference_source`` is ``HARNESS``: the reference is the one the harness
certified for the target; :func:`ckam_bench.posteriordb.subset.reference_status` tells whether
it is shipped, and the suite runs those whose reference is)."""

DATA_KEYS: dict[str, tuple[str, ...]] = {
    "radon_mn": ("N", "J", "county_idx", "floor_measure", "log_radon", "log_uppm"),
    "irt_2pl": ("I", "J", "y"),
    "GLMM_data": ("nobs", "nmis", "nyear", "nsite", "obs", "obsyear", "obssite", "misyear", "missite"),
    "radon_mod": ("N", "J", "county", "y"),
    "election88": ("N", "n_age", "n_age_edu", "n_edu", "n_region_full", "n_state", "age", "age_edu",
                   "black", "edu", "female", "region_full", "state", "v_prev_full", "y"),
    "radon_all": ("N", "J", "county_idx", "floor_measure", "log_radon"),
    "rstan_downloads": ("T", "K", "t", "cap", "y", "S", "t_change", "X", "sigmas", "tau", "trend_indicator", "s_a",
                        "s_m"),
}
"""The keys of each posteriordb data set that its Stan program's data block declares (the
others, e.g. radon_mod's unused ``x``, ``u``, ``holdout``, are not shipped)."""


def spec(name: str) -> str:
    """The ``target.model`` string of a posterior of :data:`HIGHDIM`."""
    return HIGHDIM[name].model
