"""posteriordb's mcycle_gp-accel_gp (Bales et al. 2019, the "warmup paper"'s accel_gp; brms 2.10.0's
code): the head acceleration of a simulated motorcycle crash (MASS's ``mcycle``, 133 readings)
modelled by two latent Gaussian processes in time, one for the mean and one for the log standard
deviation, each approximated by Hilbert-space basis functions (40 and 20; Solin & Särkkä 2020,
Riutort-Mayol et al. 2023). posteriordb's reference draws for it are missing from the v1.0 mirror
(:data:`ckam_bench.posteriordb.NOT_SHIPPED`), its published summaries are not; registry:
:mod:`ckam_bench.posteriordb.later`.

The function returns a ``pymc.Model`` equal to the posteriordb Stan program quoted in its
docstring (posteriordb commit :data:`ckam_bench.posteriordb.POSTERIORDB_COMMIT`), under the
translation rules of :mod:`ckam_bench.posteriordb.models`: Stan's ``<lower=0>`` is PyMC's log
transform, the truncated Student-t priors on the ``<lower=0>`` GP scales (Stan's ``student_t_lpdf
- student_t_lccdf(0 | ...)``, normalised) are PyMC's ``HalfStudentT``, value variables in the
order of Stan's parameters block. Stan's transformed parameters ``vsdgp_1``, ``vlscale_1``, ... only
copy parameters into vectors and are left out.

This file's bytes are part of the target's reference id (the pymc target hashes the source file
of the model function): an edit here, even of a comment, orphans the shipped reference. It is not
re-exported by :mod:`ckam_bench.posteriordb.models`: ``target.model`` is
``ckam_bench.posteriordb.mcycle:accel_gp``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ckam_bench.posteriordb import load_data

LSCALE_PRIOR = (1.124909, 0.0177)
"""``inv_gamma(1.124909, 0.0177)``: brms's default length-scale prior for these data."""


def _gpa(X: np.ndarray, slambda: np.ndarray, sdgp, lscale, zgp):
    """Stan's ``gpa(X, sdgp, lscale, zgp, slambda) = X * (sqrt(spd_cov_exp_quad(slambda, sdgp,
    lscale)) .* zgp)`` for one dimension (``Dls == 1``, ``D == 1``): ``spd[m] = sdgp^2 sqrt(2 pi)
    lscale exp(-lscale^2 slambda[m]^2 / 2)``. Its square root is written as ``sdgp (2 pi)^(1/4)
    sqrt(lscale) exp(-lscale^2 slambda[m]^2 / 4)``, the same number, whose gradient stays finite
    where the exponential underflows (a long length scale: sqrt(0) has no derivative)."""
    assert slambda.shape[1] == 1
    s = slambda[:, 0]
    diag_spd = sdgp * (2 * np.pi) ** 0.25 * pt.sqrt(lscale) * pt.exp(-0.25 * lscale**2 * s**2)
    return pt.dot(X, diag_spd * zgp)


def accel_gp() -> pm.Model:
    """mcycle_gp-accel_gp: ``real Intercept ~ student_t(3, -13, 36); real<lower=0> sdgp_1 ~
    student_t(3, 0, 36)`` (truncated at 0); ``real<lower=0> lscale_1 ~ inv_gamma(1.124909, 0.0177);
    vector[NBgp_1] zgp_1 ~ normal(0, 1); real Intercept_sigma ~ student_t(3, 0, 10); real<lower=0>
    sdgp_sigma_1 ~ student_t(3, 0, 36)`` (truncated at 0); ``real<lower=0> lscale_sigma_1 ~
    inv_gamma(1.124909, 0.0177); vector[NBgp_sigma_1] zgp_sigma_1 ~ normal(0, 1); mu = Intercept +
    gpa(Xgp_1, sdgp_1, lscale_1, zgp_1, slambda_1); sigma = exp(Intercept_sigma + gpa(Xgp_sigma_1,
    sdgp_sigma_1, lscale_sigma_1, zgp_sigma_1, slambda_sigma_1)); if (!prior_only) Y ~ normal(mu,
    sigma)`` (data mcycle_gp: N = 133, NBgp_1 = 40, NBgp_sigma_1 = 20; the generated quantities
    ``b_Intercept``, ``b_sigma_Intercept`` copy the intercepts)."""
    d = load_data("mcycle_gp")
    assert int(d["Kgp_1"]) == int(d["Kgp_sigma_1"]) == int(d["Dgp_1"]) == int(d["Dgp_sigma_1"]) == 1
    X, X_sigma = d["Xgp_1"].astype(np.float64), d["Xgp_sigma_1"].astype(np.float64)
    slambda, slambda_sigma = d["slambda_1"].astype(np.float64), d["slambda_sigma_1"].astype(np.float64)
    with pm.Model() as model:
        intercept = pm.StudentT("Intercept", nu=3.0, mu=-13.0, sigma=36.0)
        sdgp = pm.HalfStudentT("sdgp_1", nu=3.0, sigma=36.0)
        lscale = pm.InverseGamma("lscale_1", alpha=LSCALE_PRIOR[0], beta=LSCALE_PRIOR[1])
        zgp = pm.Normal("zgp_1", 0.0, 1.0, shape=int(d["NBgp_1"]))
        intercept_sigma = pm.StudentT("Intercept_sigma", nu=3.0, mu=0.0, sigma=10.0)
        sdgp_sigma = pm.HalfStudentT("sdgp_sigma_1", nu=3.0, sigma=36.0)
        lscale_sigma = pm.InverseGamma("lscale_sigma_1", alpha=LSCALE_PRIOR[0], beta=LSCALE_PRIOR[1])
        zgp_sigma = pm.Normal("zgp_sigma_1", 0.0, 1.0, shape=int(d["NBgp_sigma_1"]))
        mu = intercept + _gpa(X, slambda, sdgp, lscale, zgp)
        log_sigma = intercept_sigma + _gpa(X_sigma, slambda_sigma, sdgp_sigma, lscale_sigma, zgp_sigma)
        if not int(d["prior_only"]):
            pm.Normal("Y", mu, pt.exp(log_sigma), observed=d["Y"].astype(np.float64))
    return model
