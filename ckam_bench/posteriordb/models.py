"""The suite's PyMC models, one function per posteriordb posterior, each equal to posteriordb's
Stan program (quoted in the docstring, commit in :data:`ckam_bench.posteriordb.POSTERIORDB_COMMIT`):
the first twelve here, the others by family in :mod:`~ckam_bench.posteriordb.regressions`,
:mod:`~ckam_bench.posteriordb.series`, :mod:`~ckam_bench.posteriordb.hmm` and
:mod:`~ckam_bench.posteriordb.ode`, re-exported here (every ``target.model`` of the suite is
``ckam_bench.posteriordb.models:<function>``).

Translation rules, so that the density on the unconstrained scale is Stan's up to a constant:

- a Stan parameter without a prior statement is flat: ``pm.Flat`` (unbounded) or ``pm.HalfFlat``
  (``<lower=0>``); Stan's ``<lower=0>`` is PyMC's log transform (``pm.HalfCauchy``,
  ``pm.HalfNormal``, ``pm.HalfStudentT``, ``pm.Gamma``, ``pm.HalfFlat``), ``<lower=0, upper=1>``
  its log-odds transform, ``ordered`` its ordered transform (Stan's: x1, log(x2 - x1)),
  ``positive_ordered`` ``Ordered(positive=True)``, ``simplex`` the stick-breaking transform of
  :mod:`~ckam_bench.posteriordb.hmm` (``default_transform=None``: PyMC chains a ``transform``
  after the distribution's default one);
- a truncated Stan prior (``sigma ~ cauchy(0, 2.5)`` on ``<lower=0>``) is the half
  distribution: they differ by the constant Stan drops; one not centred at 0 (Lotka-Volterra's
  ``theta ~ normal(1, 0.5)`` on ``<lower=0>``) is the distribution with the log transform;
- variables are declared in the Stan order where a prior allows it (PyMC needs a variable's
  parents first), and their names are Stan's.

:func:`reference_values`, :func:`unconstrained_reference` and :func:`harness_reference` (the
reference draws in a model's coordinates) live in :mod:`ckam_bench.posteriordb.draws`, re-exported
here; later families (:mod:`ckam_bench.posteriordb.hard`'s) keep their own module path.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import ordered

from ckam_bench.posteriordb import load_data
from ckam_bench.posteriordb.draws import (  # noqa: F401  (re-exported: their documented import path)
    _forward_transform, harness_reference, reference_values, unconstrained_reference)
from ckam_bench.posteriordb.hierarchical import (  # noqa: F401  (re-exported: highdim.HIGHDIM's target.model)
    election88_full, glmm1, irt_2pl, radon_county, radon_variable_intercept_slope_noncentered)
from ckam_bench.posteriordb.regressions import (  # noqa: F401  (re-exported: the suite's target.model)
    earn_height, kidscore_interaction_c, kidscore_interaction_c2, kidscore_interaction_z, kidscore_mom_work,
    kidscore_momhs, kidscore_momhsiq, kidscore_momiq, log10earn_height, logearn_height, logearn_height_male,
    logearn_interaction, logearn_interaction_z, logearn_logheight_male, logmesquite, logmesquite_logva,
    logmesquite_logvas, logmesquite_logvash, logmesquite_logvolume, nes1972, nes1976, nes1980, nes1984,
    nes1988, nes1992, nes1996, nes2000, sblri_blr)
from ckam_bench.posteriordb.hmm import hmm_drive_0, hmm_drive_1, hmm_example  # noqa: F401
from ckam_bench.posteriordb.ode import lotka_volterra, one_comp_mm_elim_abs  # noqa: F401
from ckam_bench.posteriordb.glms import (  # noqa: F401  (re-exported: later.LATER's target.model)
    nes_logit, radon_all_pooled, radon_mn_pooled, sesame_one_pred_a, wells_dist, wells_dist100, wells_dist100ars,
    wells_interaction_c)
from ckam_bench.posteriordb.rates import rate_1, rate_2, rate_3, rate_4, rate_5  # noqa: F401  (re-exported: later.LATER's target.model)
from ckam_bench.posteriordb.trials import dogs, dogs_hierarchical, m0  # noqa: F401  (re-exported: later.LATER's target.model)
from ckam_bench.posteriordb.series import arma11, linear_recursion  # noqa: F401
from ckam_bench.posteriordb.structural import prophet  # noqa: F401  (re-exported: highdim.HIGHDIM's target.model)
from ckam_bench.posteriordb.unpooled import radon_all_county_intercept, radon_county_intercept  # noqa: F401  (re-exported: highdim.HIGHDIM's target.model)


def eight_schools_centered() -> pm.Model:
    """``theta ~ normal(mu, tau); y ~ normal(theta, sigma); mu ~ normal(0, 5);
    tau ~ cauchy(0, 5)`` with ``real<lower=0> tau``; Stan declares theta, mu, tau."""
    d = load_data("eight_schools")
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta = pm.Normal("theta", mu, tau, shape=int(d["J"]))
        pm.Normal("y", theta, d["sigma"], observed=d["y"])
    return model


def eight_schools_noncentered() -> pm.Model:
    """``theta_trans ~ normal(0, 1); theta = theta_trans * tau + mu; y ~ normal(theta, sigma);
    mu ~ normal(0, 5); tau ~ cauchy(0, 5)`` with ``real<lower=0> tau``."""
    d = load_data("eight_schools")
    with pm.Model() as model:
        theta_trans = pm.Normal("theta_trans", 0.0, 1.0, shape=int(d["J"]))
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta = pm.Deterministic("theta", theta_trans * tau + mu)
        pm.Normal("y", theta, d["sigma"], observed=d["y"])
    return model


def kidscore_interaction() -> pm.Model:
    """``vector[4] beta`` (flat), ``real<lower=0> sigma ~ cauchy(0, 2.5)``; ``kid_score ~
    normal(beta[1] + beta[2] * mom_hs + beta[3] * mom_iq + beta[4] * mom_hs .* mom_iq, sigma)``."""
    d = load_data("kidiq")
    design = np.column_stack([np.ones_like(d["mom_iq"]), d["mom_hs"], d["mom_iq"], d["mom_hs"] * d["mom_iq"]])
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=4)
        sigma = pm.HalfCauchy("sigma", 2.5)
        pm.Normal("kid_score", pt.dot(design, beta), sigma, observed=d["kid_score"])
    return model


def mesquite() -> pm.Model:
    """``vector[7] beta`` and ``real<lower=0> sigma``, both flat; ``weight ~ normal(beta[1] +
    beta[2] * diam1 + ... + beta[7] * group, sigma)``."""
    d = load_data("mesquite")
    design = np.column_stack([np.ones_like(d["weight"])] + [d[k] for k in (
        "diam1", "diam2", "canopy_height", "total_height", "density", "group")])
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=7)
        sigma = pm.HalfFlat("sigma")
        pm.Normal("weight", pt.dot(design, beta), sigma, observed=d["weight"])
    return model


def kilpisjarvi() -> pm.Model:
    """``alpha ~ normal(pmualpha, psalpha); beta ~ normal(pmubeta, psbeta);
    real<lower=0> sigma`` (flat); ``y ~ normal(alpha + beta * x, sigma)``."""
    d = load_data("kilpisjarvi_mod")
    with pm.Model() as model:
        alpha = pm.Normal("alpha", d["pmualpha"], d["psalpha"])
        beta = pm.Normal("beta", d["pmubeta"], d["psbeta"])
        sigma = pm.HalfFlat("sigma")
        pm.Normal("y", alpha + beta * d["x"], sigma, observed=d["y"])
    return model


def sblrc_blr() -> pm.Model:
    """``vector[D] beta ~ normal(0, 10); real<lower=0> sigma ~ normal(0, 10);
    y ~ normal(X * beta, sigma)``."""
    d = load_data("sblrc")
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 10.0, shape=int(d["D"]))
        sigma = pm.HalfNormal("sigma", 10.0)
        pm.Normal("y", pt.dot(d["X"], beta), sigma, observed=d["y"])
    return model


def arK() -> pm.Model:
    """``alpha ~ normal(0, 10); beta[1:K] ~ normal(0, 10); real<lower=0> sigma ~ cauchy(0, 2.5);
    y[t] ~ normal(alpha + sum_k beta[k] * y[t - k], sigma)`` for t = K+1..T."""
    d = load_data("arK")
    y, K = d["y"], int(d["K"])
    lags = np.column_stack([y[K - k:len(y) - k] for k in range(1, K + 1)])  # row t: y[t-1..t-K]
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0.0, 10.0)
        beta = pm.Normal("beta", 0.0, 10.0, shape=K)
        sigma = pm.HalfCauchy("sigma", 2.5)
        pm.Normal("y", alpha + pt.dot(lags, beta), sigma, observed=y[K:])
    return model


def garch11() -> pm.Model:
    """``real mu; real<lower=0> alpha0; real<lower=0, upper=1> alpha1;
    real<lower=0, upper=(1 - alpha1)> beta1``, all flat; ``sigma[1] = sigma1``,
    ``sigma[t]^2 = alpha0 + alpha1 (y[t-1] - mu)^2 + beta1 sigma[t-1]^2``; ``y ~ normal(mu, sigma)``.

    Stan's beta1 is flat on (0, 1 - alpha1): ``pm.Uniform`` adds its normalisation
    -log(1 - alpha1), which the potential ``beta1_flat`` cancels. The variance recursion
    v_t = c_t + beta1 v_{t-1} (v = sigma^2, c_1 = sigma1^2, c_t = alpha0 + alpha1 (y[t-1] - mu)^2)
    is solved by recursive doubling (:func:`ckam_bench.posteriordb.series.linear_recursion`), so
    the graph has no loop and no T x T matrix.
    """
    d = load_data("garch")
    y = d["y"]
    with pm.Model() as model:
        mu = pm.Flat("mu")
        alpha0 = pm.HalfFlat("alpha0")
        alpha1 = pm.Uniform("alpha1", 0.0, 1.0)
        beta1 = pm.Uniform("beta1", 0.0, 1.0 - alpha1)
        pm.Potential("beta1_flat", pt.log1p(-alpha1))
        c = pt.concatenate([pt.as_tensor([float(d["sigma1"]) ** 2]), alpha0 + alpha1 * (y[:-1] - mu) ** 2])
        pm.Normal("y", mu, pt.sqrt(linear_recursion(c, beta1, len(y))), observed=y)
    return model


def _exp_quad_cov(x: np.ndarray, alpha, rho):
    """Stan's ``gp_exp_quad_cov(x, alpha, rho)``: alpha^2 exp(-(x_i - x_j)^2 / (2 rho^2))."""
    sq = np.subtract.outer(x, x) ** 2
    return alpha**2 * pt.exp(-0.5 * sq / rho**2)


def gp_regr() -> pm.Model:
    """``rho ~ gamma(25, 4); alpha ~ normal(0, 2); sigma ~ normal(0, 1)`` (all ``<lower=0>``);
    ``y ~ multi_normal(0, gp_exp_quad_cov(x, alpha, rho) + sigma I)`` (sigma, not sigma^2, on
    the diagonal, as in the Stan program)."""
    d = load_data("gp_pois_regr")
    x = d["x"].astype(float)
    with pm.Model() as model:
        rho = pm.Gamma("rho", alpha=25.0, beta=4.0)
        alpha = pm.HalfNormal("alpha", 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        cov = _exp_quad_cov(x, alpha, rho) + sigma * np.eye(len(x))
        pm.MvNormal("y", np.zeros(len(x)), cov=cov, observed=d["y"])
    return model


def gp_pois_regr() -> pm.Model:
    """``rho ~ gamma(25, 4); alpha ~ normal(0, 2)`` (``<lower=0>``); ``f_tilde ~ normal(0, 1)``;
    ``f = cholesky(gp_exp_quad_cov(x, alpha, rho) + 1e-10 I) * f_tilde``; ``k ~ poisson_log(f)``."""
    d = load_data("gp_pois_regr")
    x = d["x"].astype(float)
    with pm.Model() as model:
        rho = pm.Gamma("rho", alpha=25.0, beta=4.0)
        alpha = pm.HalfNormal("alpha", 2.0)
        f_tilde = pm.Normal("f_tilde", 0.0, 1.0, shape=len(x))
        chol = pt.linalg.cholesky(_exp_quad_cov(x, alpha, rho) + 1e-10 * np.eye(len(x)))
        f = pm.Deterministic("f", pt.dot(chol, f_tilde))
        pm.Poisson("k", pt.exp(f), observed=d["k"])
    return model


def low_dim_gauss_mix() -> pm.Model:
    """``ordered[2] mu ~ normal(0, 2); array[2] real<lower=0> sigma ~ normal(0, 2);
    real<lower=0, upper=1> theta ~ beta(5, 5); target += log_mix(theta, normal_lpdf(y[n] | mu[1],
    sigma[1]), normal_lpdf(y[n] | mu[2], sigma[2]))``."""
    d = load_data("low_dim_gauss_mix")
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0, shape=2, transform=ordered, initval=np.array([-1.0, 1.0]))
        sigma = pm.HalfNormal("sigma", 2.0, shape=2)
        theta = pm.Beta("theta", 5.0, 5.0)
        pm.NormalMixture("y", w=pt.stack([theta, 1.0 - theta]), mu=mu, sigma=sigma, observed=d["y"])
    return model


def diamonds() -> pm.Model:
    """brms: ``Xc`` = X without its intercept column, centred; ``b ~ normal(0, 1);
    Intercept ~ student_t(3, 8, 10); real<lower=0> sigma ~ student_t(3, 0, 10)``;
    ``Y ~ normal_id_glm(Xc, Intercept, b, sigma)``."""
    d = load_data("diamonds")
    X = d["X"][:, 1:]
    Xc = X - X.mean(axis=0)
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0, shape=Xc.shape[1])
        intercept = pm.StudentT("Intercept", nu=3.0, mu=8.0, sigma=10.0)
        sigma = pm.HalfStudentT("sigma", nu=3.0, sigma=10.0)
        pm.Normal("Y", intercept + pt.dot(Xc, b), sigma, observed=d["Y"])
    return model
