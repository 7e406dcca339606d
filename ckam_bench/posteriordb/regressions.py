"""posteriordb's linear regressions beyond the first twelve posteriors: the earnings, kidiq,
kidiq_with_mom_work, mesquite and nes models of Gelman & Hill's ARM (chapters 3 and 4, via
stan-dev/example-models) and the simulated ``sblri-blr``; the translation rules are those of
:mod:`ckam_bench.posteriordb.models`, which re-exports every function here.

Every one is Stan's ``vector[K] beta; real<lower=0> sigma; response ~ normal(X * beta, sigma)``
with ``X`` built from the data in the program's ``transformed data`` block (quoted in each
docstring); beta is flat unless a prior is stated, sigma flat on (0, inf) unless a prior is stated.
``sd`` in a Stan program is the sample standard deviation (divisor N - 1).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ckam_bench.posteriordb import load_data


def _regression(response: str, y, columns, sigma_prior=None, beta_prior=None) -> pm.Model:
    """``beta`` (flat, or ``beta_prior(name, shape)``) then ``sigma`` (flat on (0, inf), or
    ``sigma_prior(name)``) and ``response ~ normal(beta[1] + sum_k beta[k+1] * columns[k], sigma)``."""
    X = np.column_stack([np.ones(len(y))] + [np.asarray(c, dtype=float) for c in columns])
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=X.shape[1]) if beta_prior is None else beta_prior("beta", X.shape[1])
        sigma = pm.HalfFlat("sigma") if sigma_prior is None else sigma_prior("sigma")
        pm.Normal(response, pt.dot(X, beta), sigma, observed=np.asarray(y, dtype=float))
    return model


def _half_cauchy_2_5(name):
    return pm.HalfCauchy(name, 2.5)


# ---------------------------------------------------------------------------- earnings (ARM ch. 4)
def earn_height() -> pm.Model:
    """``earn ~ normal(beta[1] + beta[2] * height, sigma)``: earnings in dollars (200 to 200 000)
    on height in inches."""
    d = load_data("earnings")
    return _regression("earn", d["earn"], [d["height"]])


def log10earn_height() -> pm.Model:
    """``log10_earn[i] = log10(earn[i])``; ``log10_earn ~ normal(beta[1] + beta[2] * height, sigma)``."""
    d = load_data("earnings")
    return _regression("log10_earn", np.log10(d["earn"]), [d["height"]])


def logearn_height() -> pm.Model:
    """``log_earn = log(earn)``; ``log_earn ~ normal(beta[1] + beta[2] * height, sigma)``."""
    d = load_data("earnings")
    return _regression("log_earn", np.log(d["earn"]), [d["height"]])


def logearn_height_male() -> pm.Model:
    """``log_earn = log(earn)``; ``log_earn ~ normal(beta[1] + beta[2] * height + beta[3] * male,
    sigma)``."""
    d = load_data("earnings")
    return _regression("log_earn", np.log(d["earn"]), [d["height"], d["male"]])


def logearn_logheight_male() -> pm.Model:
    """``log_earn = log(earn); log_height = log(height)``; ``log_earn ~ normal(beta[1] + beta[2] *
    log_height + beta[3] * male, sigma)``."""
    d = load_data("earnings")
    return _regression("log_earn", np.log(d["earn"]), [np.log(d["height"]), d["male"]])


def logearn_interaction() -> pm.Model:
    """``log_earn = log(earn); inter = height .* male``; ``log_earn ~ normal(beta[1] + beta[2] *
    height + beta[3] * male + beta[4] * inter, sigma)``."""
    d = load_data("earnings")
    return _regression("log_earn", np.log(d["earn"]), [d["height"], d["male"], d["height"] * d["male"]])


def logearn_interaction_z() -> pm.Model:
    """``log_earn = log(earn); z_height = (height - mean(height)) / sd(height); inter = z_height .*
    male``; ``log_earn ~ normal(beta[1] + beta[2] * z_height + beta[3] * male + beta[4] * inter,
    sigma)``."""
    d = load_data("earnings")
    z_height = (d["height"] - d["height"].mean()) / d["height"].std(ddof=1)
    return _regression("log_earn", np.log(d["earn"]), [z_height, d["male"], z_height * d["male"]])


# ---------------------------------------------------------------------------- kidiq (ARM ch. 3, 4)
def kidscore_momhs() -> pm.Model:
    """``sigma ~ cauchy(0, 2.5); kid_score ~ normal(beta[1] + beta[2] * mom_hs, sigma)``."""
    d = load_data("kidiq")
    return _regression("kid_score", d["kid_score"], [d["mom_hs"]], sigma_prior=_half_cauchy_2_5)


def kidscore_momiq() -> pm.Model:
    """``sigma ~ cauchy(0, 2.5); kid_score ~ normal(beta[1] + beta[2] * mom_iq, sigma)``."""
    d = load_data("kidiq")
    return _regression("kid_score", d["kid_score"], [d["mom_iq"]], sigma_prior=_half_cauchy_2_5)


def kidscore_momhsiq() -> pm.Model:
    """``sigma ~ cauchy(0, 2.5); kid_score ~ normal(beta[1] + beta[2] * mom_hs + beta[3] * mom_iq,
    sigma)``."""
    d = load_data("kidiq")
    return _regression("kid_score", d["kid_score"], [d["mom_hs"], d["mom_iq"]], sigma_prior=_half_cauchy_2_5)


def kidscore_interaction_c() -> pm.Model:
    """``c_mom_hs = mom_hs - mean(mom_hs); c_mom_iq = mom_iq - mean(mom_iq); inter = c_mom_hs .*
    c_mom_iq``; ``kid_score ~ normal(beta[1] + beta[2] * c_mom_hs + beta[3] * c_mom_iq + beta[4] *
    inter, sigma)`` (data kidiq_with_mom_work)."""
    d = load_data("kidiq_with_mom_work")
    hs, iq = d["mom_hs"] - d["mom_hs"].mean(), d["mom_iq"] - d["mom_iq"].mean()
    return _regression("kid_score", d["kid_score"], [hs, iq, hs * iq])


def kidscore_interaction_c2() -> pm.Model:
    """``c2_mom_hs = mom_hs - 0.5; c2_mom_iq = mom_iq - 100; inter = c2_mom_hs .* c2_mom_iq``;
    ``kid_score ~ normal(beta[1] + beta[2] * c2_mom_hs + beta[3] * c2_mom_iq + beta[4] * inter,
    sigma)``."""
    d = load_data("kidiq_with_mom_work")
    hs, iq = d["mom_hs"] - 0.5, d["mom_iq"] - 100.0
    return _regression("kid_score", d["kid_score"], [hs, iq, hs * iq])


def kidscore_interaction_z() -> pm.Model:
    """``z_mom_hs = (mom_hs - mean(mom_hs)) / (2 * sd(mom_hs))``, the same for ``z_mom_iq``;
    ``inter = z_mom_hs .* z_mom_iq``; ``kid_score ~ normal(beta[1] + beta[2] * z_mom_hs + beta[3] *
    z_mom_iq + beta[4] * inter, sigma)``."""
    d = load_data("kidiq_with_mom_work")
    hs, iq = ((x - x.mean()) / (2 * x.std(ddof=1)) for x in (d["mom_hs"], d["mom_iq"]))
    return _regression("kid_score", d["kid_score"], [hs, iq, hs * iq])


def kidscore_mom_work() -> pm.Model:
    """``work2[i] = mom_work[i] == 2`` (likewise 3, 4); ``kid_score ~ normal(beta[1] + beta[2] *
    work2 + beta[3] * work3 + beta[4] * work4, sigma)``."""
    d = load_data("kidiq_with_mom_work")
    return _regression("kid_score", d["kid_score"], [d["mom_work"] == k for k in (2, 3, 4)])


# ---------------------------------------------------------------------------- mesquite (ARM ch. 4)
def logmesquite() -> pm.Model:
    """``log_weight ~ normal(beta[1] + beta[2] * log_diam1 + beta[3] * log_diam2 + beta[4] *
    log_canopy_height + beta[5] * log_total_height + beta[6] * log_density + beta[7] * group,
    sigma)`` with ``log_x = log(x)``."""
    d = load_data("mesquite")
    logs = [np.log(d[k]) for k in ("diam1", "diam2", "canopy_height", "total_height", "density")]
    return _regression("log_weight", np.log(d["weight"]), logs + [d["group"]])


def logmesquite_logvolume() -> pm.Model:
    """``log_canopy_volume = log(diam1 .* diam2 .* canopy_height)``; ``log_weight ~
    normal(beta[1] + beta[2] * log_canopy_volume, sigma)``."""
    d = load_data("mesquite")
    return _regression("log_weight", np.log(d["weight"]), [np.log(d["diam1"] * d["diam2"] * d["canopy_height"])])


def logmesquite_logva() -> pm.Model:
    """``log_canopy_volume = log(diam1 .* diam2 .* canopy_height); log_canopy_area = log(diam1 .*
    diam2)``; ``log_weight ~ normal(beta[1] + beta[2] * log_canopy_volume + beta[3] *
    log_canopy_area + beta[4] * group, sigma)``."""
    d = load_data("mesquite")
    return _regression("log_weight", np.log(d["weight"]), [
        np.log(d["diam1"] * d["diam2"] * d["canopy_height"]), np.log(d["diam1"] * d["diam2"]), d["group"]])


def logmesquite_logvash() -> pm.Model:
    """As ``logmesquite_logva`` plus ``log_canopy_shape = log(diam1 ./ diam2)`` and
    ``log_total_height``: ``log_weight ~ normal(beta[1] + beta[2] * log_canopy_volume + beta[3] *
    log_canopy_area + beta[4] * log_canopy_shape + beta[5] * log_total_height + beta[6] * group,
    sigma)``."""
    d = load_data("mesquite")
    return _regression("log_weight", np.log(d["weight"]), [
        np.log(d["diam1"] * d["diam2"] * d["canopy_height"]), np.log(d["diam1"] * d["diam2"]),
        np.log(d["diam1"] / d["diam2"]), np.log(d["total_height"]), d["group"]])


def logmesquite_logvas() -> pm.Model:
    """As ``logmesquite_logvash`` plus ``log_density``: ``log_weight ~ normal(beta[1] + beta[2] *
    log_canopy_volume + beta[3] * log_canopy_area + beta[4] * log_canopy_shape + beta[5] *
    log_total_height + beta[6] * log_density + beta[7] * group, sigma)``."""
    d = load_data("mesquite")
    return _regression("log_weight", np.log(d["weight"]), [
        np.log(d["diam1"] * d["diam2"] * d["canopy_height"]), np.log(d["diam1"] * d["diam2"]),
        np.log(d["diam1"] / d["diam2"]), np.log(d["total_height"]), np.log(d["density"]), d["group"]])


# ---------------------------------------------------------------------------- nes (ARM ch. 4)
def _nes(data_name: str) -> pm.Model:
    """``age30_44[n] = age_discrete[n] == 2`` (likewise 3 -> age45_64, 4 -> age65up);
    ``partyid7 ~ normal(beta[1] + beta[2] * real_ideo + beta[3] * race_adj + beta[4] * age30_44 +
    beta[5] * age45_64 + beta[6] * age65up + beta[7] * educ1 + beta[8] * gender + beta[9] * income,
    sigma)``."""
    d = load_data(data_name)
    age = d["age_discrete"]
    return _regression("partyid7", d["partyid7"], [d["real_ideo"], d["race_adj"], age == 2, age == 3, age == 4,
                                                   d["educ1"], d["gender"], d["income"]])


def nes1972() -> pm.Model:
    """posteriordb's ``nes`` (party identification on ideology, race, age group, education,
    gender, income; see ``_nes``) on the 1972 National Election Study."""
    return _nes("nes1972")


def nes1976() -> pm.Model:
    """``nes`` (see ``_nes``) on the 1976 National Election Study."""
    return _nes("nes1976")


def nes1980() -> pm.Model:
    """``nes`` (see ``_nes``) on the 1980 National Election Study."""
    return _nes("nes1980")


def nes1984() -> pm.Model:
    """``nes`` (see ``_nes``) on the 1984 National Election Study."""
    return _nes("nes1984")


def nes1988() -> pm.Model:
    """``nes`` (see ``_nes``) on the 1988 National Election Study."""
    return _nes("nes1988")


def nes1992() -> pm.Model:
    """``nes`` (see ``_nes``) on the 1992 National Election Study."""
    return _nes("nes1992")


def nes1996() -> pm.Model:
    """``nes`` (see ``_nes``) on the 1996 National Election Study."""
    return _nes("nes1996")


def nes2000() -> pm.Model:
    """``nes`` (see ``_nes``) on the 2000 National Election Study."""
    return _nes("nes2000")


# ---------------------------------------------------------------------------- simulated
def sblri_blr() -> pm.Model:
    """posteriordb's ``blr`` on ``sblri`` (independent design): ``target += normal_lpdf(beta | 0,
    10); target += normal_lpdf(sigma | 0, 10); target += normal_lpdf(y | X * beta, sigma)`` with
    ``vector[D] beta; real<lower=0> sigma``."""
    d = load_data("sblri")
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 10.0, shape=int(d["D"]))
        sigma = pm.HalfNormal("sigma", 10.0)
        pm.Normal("y", pt.dot(d["X"], beta), sigma, observed=d["y"])
    return model
