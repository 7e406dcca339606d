"""posteriordb's no-pooling regressions without posteriordb reference draws (registry:
:mod:`ckam_bench.posteriordb.highdim`): one free coefficient per group under a fixed prior, no
hierarchy and so no funnel, a near-Gaussian posterior whose scales differ by the groups' sizes.

The translation rules are those of :mod:`ckam_bench.posteriordb.models`, which re-exports every
model function here: Stan's ``<lower=0>`` is PyMC's log transform, a normal prior on a
``<lower=0>`` parameter is the half-normal, indices are Stan's minus one.

This file's bytes are part of its targets' reference ids (the pymc target hashes the source file
of the model function): an edit here, even of a comment, orphans the shipped references.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from ckam_bench.posteriordb import load_data


def _county_intercept(data_name: str) -> pm.Model:
    """``vector[J] alpha; real beta; real<lower=0> sigma_y; sigma_y ~ normal(0, 1); alpha ~
    normal(0, 10); beta ~ normal(0, 10); log_radon[n] ~ normal(alpha[county_idx[n]] + beta *
    floor_measure[n], sigma_y)`` (Stan program radon_county_intercept) on data ``data_name``.
    Parameters in the Stan program's order."""
    d = load_data(data_name)
    county = d["county_idx"].astype(np.int64) - 1
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0.0, 10.0, shape=int(d["J"]))
        beta = pm.Normal("beta", 0.0, 10.0)
        sigma_y = pm.HalfNormal("sigma_y", 1.0)
        pm.Normal("log_radon", alpha[county] + beta * d["floor_measure"].astype(np.float64), sigma_y,
                  observed=d["log_radon"])
    return model


def radon_county_intercept() -> pm.Model:
    """radon_mn-radon_county_intercept: :func:`_county_intercept` on data radon_mn (85 Minnesota
    counties, 919 homes)."""
    return _county_intercept("radon_mn")


def radon_all_county_intercept() -> pm.Model:
    """radon_all-radon_county_intercept: :func:`_county_intercept` on data radon_all (386
    counties of all states, 12573 homes; floor_measure as posteriordb ships it, 0, 1 or 9)."""
    return _county_intercept("radon_all")
