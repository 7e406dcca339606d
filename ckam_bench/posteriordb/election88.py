"""posteriordb's election88-election88_full with its likelihood grouped by covariate pattern: the
suite's model of that posterior (registry: :mod:`ckam_bench.posteriordb.highdim`).

The Stan program (quoted in :func:`ckam_bench.posteriordb.hierarchical.election88_full`, the
row-by-row model) sums 11 566 Bernoulli-logit terms. A respondent's linear predictor depends only
on the covariate pattern (black, female, v_prev_full, age, edu, age_edu, state, region_full),
and the respondents fall into :data:`N_PATTERNS` = 1458 patterns; with n_i respondents of pattern
i, k_i of whom answered y = 1,

    sum_rows y eta - log(1 + exp(eta)) = sum_i k_i eta_i - n_i log(1 + exp(eta_i))

exactly: the same sum regrouped (a ``pm.Potential``, no binomial coefficient), the same
posterior in the same coordinates as the row-by-row model, at an eighth of its gradient's cost.
tests/test_posteriordb_highdim.py proves it equal to the Stan program's numpy transcription,
which keeps the rows.

This file's bytes are part of its target's reference id (the pymc target hashes the source file
of the model function): an edit here, even of a comment, orphans the shipped reference.
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ckam_bench.posteriordb import load_data

GROUPS = (("a", "age", "n_age"), ("b", "edu", "n_edu"), ("c", "age_edu", "n_age_edu"),
          ("d", "state", "n_state"), ("e", "region_full", "n_region_full"))
"""(effect, its index in the data, its number of levels), the Stan program's order."""
PATTERN_KEYS = ("black", "female", "v_prev_full", "age", "edu", "age_edu", "state", "region_full")
N_PATTERNS = 1458
"""distinct covariate patterns among the 11 566 respondents."""


@functools.lru_cache(maxsize=1)
def patterns() -> tuple[dict, np.ndarray, np.ndarray]:
    """(covariates of each distinct pattern by key, respondents n per pattern, successes k)."""
    d = load_data("election88")
    X = np.column_stack([np.asarray(d[k], np.float64) for k in PATTERN_KEYS])
    unique, inverse = np.unique(X, axis=0, return_inverse=True)
    inverse = np.ravel(inverse)
    n = np.bincount(inverse, minlength=len(unique)).astype(np.float64)
    k = np.bincount(inverse, weights=np.asarray(d["y"], np.float64), minlength=len(unique))
    assert len(unique) == N_PATTERNS and n.sum() == int(d["N"])
    return {key: np.ascontiguousarray(unique[:, j]) for j, key in enumerate(PATTERN_KEYS)}, n, k


def linear_predictor(beta, effects: dict) -> pt.TensorVariable:
    """eta of each pattern: beta[1] + beta[2] black + beta[3] female + beta[5] female black +
    beta[4] v_prev_full + a[age] + b[edu] + c[age_edu] + d[state] + e[region_full]."""
    cov = patterns()[0]
    black, female = cov["black"], cov["female"]
    return (beta[0] + beta[1] * black + beta[2] * female + beta[4] * female * black + beta[3] * cov["v_prev_full"]
            + sum(effects[name][cov[index].astype(np.int64) - 1] for name, index, _ in GROUPS))


def grouped_bernoulli_logit(eta) -> pt.TensorVariable:
    """sum_i k_i eta_i - n_i log(1 + exp(eta_i)): the Bernoulli-logit log likelihood of the rows."""
    _, n, k = patterns()
    return pt.sum(k * eta - n * pt.softplus(eta))


def election88_full() -> pm.Model:
    """``real<lower=0, upper=100> sigma_a, ..., sigma_e`` (flat); ``a ~ normal(0, sigma_a)`` (age),
    ``b`` (education), ``c`` (age x education), ``d`` (state), ``e`` (region) likewise;
    ``vector[5] beta ~ normal(0, 100); y ~ bernoulli_logit(...)``, the likelihood grouped by
    pattern (module docstring)."""
    d = load_data("election88")
    with pm.Model() as model:
        sigmas = {name: pm.Uniform(f"sigma_{name}", 0.0, 100.0) for name, _, _ in GROUPS}
        effects = {name: pm.Normal(name, 0.0, sigmas[name], shape=int(d[size])) for name, _, size in GROUPS}
        beta = pm.Normal("beta", 0.0, 100.0, shape=5)
        pm.Potential("y", grouped_bernoulli_logit(linear_predictor(beta, effects)))
    return model
