"""posteriordb's dogs avoidance-learning models (Gelman & Hill 2006 ch. 24; stan-dev/example-models
``ARM/Ch.24``) and BPA's M0 capture-recapture model (Kéry & Schaub 2011 ch. 6), whose posteriordb
reference was added after v1.0 (registry: :mod:`ckam_bench.posteriordb.later`). The counts of
previous shocks and avoidances (dogs) and the capture totals (M0) are Stan's transformed data or
transformed parameters that depend on the data only, computed here in numpy as Stan computes them.
A ``real<lower=0, upper=1>`` without a prior statement is flat on (0, 1): PyMC's ``Beta(1, 1)``
with its log-odds transform, Stan's transform.

The translation rules are those of :mod:`ckam_bench.posteriordb.models`, which re-exports every
model function here. This file's bytes are part of its targets' reference ids: an edit here, even
of a comment, orphans the shipped references.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import gammaln

from ckam_bench.posteriordb import load_data


def _previous(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(previous avoidances, previous shocks) before each trial of each dog: Stan's
    ``n_avoid[j, t] = n_avoid[j, t - 1] + 1 - y[j, t - 1]``, ``n_shock[j, t] = n_shock[j, t - 1] +
    y[j, t - 1]``, both 0 at t = 1."""
    y = y.astype(np.float64)
    avoid, shock = np.zeros_like(y), np.zeros_like(y)
    avoid[:, 1:] = np.cumsum(1 - y[:, :-1], axis=1)
    shock[:, 1:] = np.cumsum(y[:, :-1], axis=1)
    return avoid, shock


def dogs() -> pm.Model:
    """dogs-dogs: ``vector[3] beta; beta ~ normal(0, 100); y[i, j] ~ bernoulli_logit(beta[1] +
    beta[2] * n_avoid[i, j] + beta[3] * n_shock[i, j])``."""
    d = load_data("dogs")
    y = d["y"].astype(np.int64)
    avoid, shock = _previous(y)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 100.0, shape=3)
        pm.Bernoulli("y", logit_p=beta[0] + beta[1] * avoid + beta[2] * shock, observed=y)
    return model


def dogs_hierarchical() -> pm.Model:
    """dogs-dogs_hierarchical: ``real<lower=0, upper=1> a, b; y[j, t] ~ bernoulli(a ^
    prev_shock[j, t] * b ^ prev_avoid[j, t])``, flat priors. The first trial (no previous
    trial: p = 1, and every dog's first y is 1) adds log 1 = 0 to Stan's target and is left out
    here, so that log(1 - p) is never log 0; log p = prev_shock log a + prev_avoid log b."""
    d = load_data("dogs")
    y = d["y"].astype(np.int64)
    assert (y[:, 0] == 1).all()
    avoid, shock = _previous(y)
    y, avoid, shock = y[:, 1:], avoid[:, 1:], shock[:, 1:]
    with pm.Model() as model:
        a = pm.Beta("a", 1.0, 1.0)
        b = pm.Beta("b", 1.0, 1.0)
        log_p = shock * pt.log(a) + avoid * pt.log(b)
        pm.Potential("y", pt.sum(y * log_p + (1 - y) * pt.log1mexp(log_p)))
    return model


def m0() -> pm.Model:
    """M0_data-M0_model: ``real<lower=0, upper=1> omega, p`` (flat); a row seen ``s[i] > 0``
    times adds ``bernoulli_lpmf(1 | omega) + binomial_lpmf(s[i] | T, p)``, a row never seen
    ``log_sum_exp(bernoulli_lpmf(1 | omega) + binomial_lpmf(0 | T, p), bernoulli_lpmf(0 |
    omega))``."""
    d = load_data("M0_data")
    s = d["y"].astype(np.int64).sum(axis=1)
    n_trials = int(d["T"])
    seen = s[s > 0]
    n_unseen = int((s == 0).sum())
    with pm.Model() as model:
        omega = pm.Beta("omega", 1.0, 1.0)
        p = pm.Beta("p", 1.0, 1.0)
        # binomial_lpmf(s | T, p) written out: log C(T, s) + s log p + (T - s) log(1 - p), its
        # constants numpy's (PyMC's own logp graph carries constants of PyMC's version)
        log_choose = gammaln(n_trials + 1.0) - gammaln(seen + 1.0) - gammaln(n_trials - seen + 1.0)
        seen_lp = pt.sum(pt.log(omega) + log_choose + seen * pt.log(p) + (n_trials - seen) * pt.log1p(-p))
        unseen_lp = n_unseen * pt.logaddexp(pt.log(omega) + n_trials * pt.log1p(-p), pt.log1p(-omega))
        pm.Potential("y", seen_lp + unseen_lp)
    return model
