"""Each posteriordb Stan program written a second time, independently of the PyMC models: plain
numpy/scipy, statement by statement from the Stan program (loops where Stan loops), taking
the Stan parameters on the constrained scale and returning Stan's ``target`` plus the log
Jacobian of Stan's unconstrained transform of each parameter (Stan reference manual,
"Constraint transforms"):

- ``<lower=0>`` x = exp(y): log x;
- ``<lower=0, upper=1>`` x = inv_logit(y): log x + log(1 - x); ``<lower=0, upper=U>``:
  log x + log(U - x) - log U;
- ``ordered[K]`` x1 = y1, x_k = x_{k-1} + exp(y_k): sum_k>1 log(x_k - x_{k-1});
  ``positive_ordered[K]`` also x1 = exp(y1): plus log x1;
- ``simplex[2]`` (stick-breaking, x1 = inv_logit(y1)): log x1 + log x2.

Stan's ``dirichlet_lpdf`` (normalised) is scipy's; ``exponential_lpdf(x | rate)`` is written
out. The ODEs are solved by scipy's adaptive solvers at rtol 1e-13 (the models use a fixed-step
eighth-order method, ckam_bench/posteriordb/ode.py): the 1e-8 agreement is also the bound on the
models' ODE error as it reaches the density.

The PyMC model's log density at the same draw (unconstrained, with PyMC's log-Jacobians) may
differ from this by a constant only (Stan's ``~`` drops constants, PyMC keeps them): the test
asks the differences over a few reference draws to agree to 1e-8.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import solve_ivp
from scipy.special import logsumexp

from ckam_bench.posteriordb import SUITE, load_data

pytest.importorskip("pymc")

norm, cauchy, student_t = stats.norm.logpdf, stats.cauchy.logpdf, stats.t.logpdf


def _log(x) -> float:
    """sum log x: the log Jacobian of parameters with ``<lower=0>``."""
    return float(np.sum(np.log(x)))


# ---------------------------------------------------------------------------- the first twelve
def eight_schools_centered(v):
    d = load_data("eight_schools")
    mu, tau, theta = v["mu"], v["tau"], v["theta"]
    target = norm(theta, mu, tau).sum() + norm(d["y"], theta, d["sigma"]).sum()
    target += norm(mu, 0, 5) + cauchy(tau, 0, 5)
    return target + _log(tau)


def eight_schools_noncentered(v):
    d = load_data("eight_schools")
    mu, tau, theta_trans = v["mu"], v["tau"], v["theta_trans"]
    theta = theta_trans * tau + mu
    target = norm(theta_trans, 0, 1).sum() + norm(d["y"], theta, d["sigma"]).sum()
    target += norm(mu, 0, 5) + cauchy(tau, 0, 5)
    return target + _log(tau)


def kidscore_interaction(v):
    d = load_data("kidiq")
    b, sigma = v["beta"], v["sigma"]
    mean = b[0] + b[1] * d["mom_hs"] + b[2] * d["mom_iq"] + b[3] * d["mom_hs"] * d["mom_iq"]
    return cauchy(sigma, 0, 2.5) + norm(d["kid_score"], mean, sigma).sum() + _log(sigma)


def mesquite(v):
    d = load_data("mesquite")
    b, sigma = v["beta"], v["sigma"]
    mean = (b[0] + b[1] * d["diam1"] + b[2] * d["diam2"] + b[3] * d["canopy_height"]
            + b[4] * d["total_height"] + b[5] * d["density"] + b[6] * d["group"])
    return norm(d["weight"], mean, sigma).sum() + _log(sigma)


def kilpisjarvi(v):
    d = load_data("kilpisjarvi_mod")
    alpha, beta, sigma = v["alpha"], v["beta"], v["sigma"]
    target = norm(alpha, d["pmualpha"], d["psalpha"]) + norm(beta, d["pmubeta"], d["psbeta"])
    return target + norm(d["y"], alpha + beta * d["x"], sigma).sum() + _log(sigma)


def _blr(data_name, v):
    d = load_data(data_name)
    beta, sigma = v["beta"], v["sigma"]
    target = norm(beta, 0, 10).sum() + norm(sigma, 0, 10) + norm(d["y"], d["X"] @ beta, sigma).sum()
    return target + _log(sigma)


def arK(v):
    d = load_data("arK")
    y, K = d["y"], int(d["K"])
    alpha, beta, sigma = v["alpha"], v["beta"], v["sigma"]
    target = norm(alpha, 0, 10) + norm(beta, 0, 10).sum() + cauchy(sigma, 0, 2.5)
    for t in range(K, len(y)):
        mu = alpha + sum(beta[k] * y[t - k - 1] for k in range(K))
        target += norm(y[t], mu, sigma)
    return target + _log(sigma)


def garch11(v):
    d = load_data("garch")
    y = d["y"]
    mu, alpha0, alpha1, beta1 = v["mu"], v["alpha0"], v["alpha1"], v["beta1"]
    sigma = np.empty(len(y))
    sigma[0] = d["sigma1"]
    for t in range(1, len(y)):
        sigma[t] = np.sqrt(alpha0 + alpha1 * (y[t - 1] - mu) ** 2 + beta1 * sigma[t - 1] ** 2)
    target = norm(y, mu, sigma).sum()
    upper = 1 - alpha1
    return (target + _log(alpha0) + np.log(alpha1) + np.log(1 - alpha1)
            + np.log(beta1) + np.log(upper - beta1) - np.log(upper))


def _cov_exp_quad(x, alpha, rho):
    return alpha**2 * np.exp(-np.subtract.outer(x, x) ** 2 / (2 * rho**2))


def gp_regr(v):
    d = load_data("gp_pois_regr")
    x = d["x"].astype(float)
    rho, alpha, sigma = v["rho"], v["alpha"], v["sigma"]
    cov = _cov_exp_quad(x, alpha, rho) + sigma * np.eye(len(x))
    target = stats.gamma.logpdf(rho, 25, scale=1 / 4) + norm(alpha, 0, 2) + norm(sigma, 0, 1)
    target += stats.multivariate_normal.logpdf(d["y"], np.zeros(len(x)), cov)
    return target + _log([rho, alpha, sigma])


def gp_pois_regr(v):
    d = load_data("gp_pois_regr")
    x = d["x"].astype(float)
    rho, alpha, f_tilde = v["rho"], v["alpha"], v["f_tilde"]
    f = np.linalg.cholesky(_cov_exp_quad(x, alpha, rho) + 1e-10 * np.eye(len(x))) @ f_tilde
    target = stats.gamma.logpdf(rho, 25, scale=1 / 4) + norm(alpha, 0, 2) + norm(f_tilde, 0, 1).sum()
    target += (d["k"] * f - np.exp(f)).sum()  # poisson_log_lpmf without log(k!)
    return target + _log([rho, alpha])


def low_dim_gauss_mix(v):
    d = load_data("low_dim_gauss_mix")
    mu, sigma, theta = v["mu"], v["sigma"], v["theta"]
    target = norm(mu, 0, 2).sum() + norm(sigma, 0, 2).sum() + stats.beta.logpdf(theta, 5, 5)
    for y in d["y"]:
        target += np.logaddexp(np.log(theta) + norm(y, mu[0], sigma[0]), np.log1p(-theta) + norm(y, mu[1], sigma[1]))
    return target + np.log(mu[1] - mu[0]) + _log(sigma) + np.log(theta) + np.log1p(-theta)


def diamonds(v):
    d = load_data("diamonds")
    Xc = d["X"][:, 1:] - d["X"][:, 1:].mean(axis=0)
    b, intercept, sigma = v["b"], v["Intercept"], v["sigma"]
    target = norm(b, 0, 1).sum() + student_t(intercept, 3, 8, 10) + student_t(sigma, 3, 0, 10)
    return target + norm(d["Y"], intercept + Xc @ b, sigma).sum() + _log(sigma)


# ---------------------------------------------------------------------------- regressions.py
def _flat_regression(y, columns, v, sigma_prior=None):
    b, sigma = v["beta"], v["sigma"]
    mean = b[0] + sum(b[k + 1] * c for k, c in enumerate(columns))
    target = norm(y, mean, sigma).sum() + (0.0 if sigma_prior is None else sigma_prior(sigma))
    return target + _log(sigma)


def _earnings(v, response, *columns):
    d = load_data("earnings")
    return _flat_regression(response(d["earn"]), [c(d) for c in columns], v)


def _sigma_cauchy(sigma):
    return cauchy(sigma, 0, 2.5)


def _kidiq(v, *columns):
    d = load_data("kidiq")
    return _flat_regression(d["kid_score"], [d[c] for c in columns], v, _sigma_cauchy)


def _kidiq_interaction(v, hs, iq):
    d = load_data("kidiq_with_mom_work")
    return _flat_regression(d["kid_score"], [hs, iq, hs * iq], v)


def _z2(x):
    return (x - np.mean(x)) / (2 * np.std(x, ddof=1))


def _mesquite(v, *names):
    d = load_data("mesquite")
    derived = {"volume": np.log(d["diam1"] * d["diam2"] * d["canopy_height"]),
               "area": np.log(d["diam1"] * d["diam2"]), "shape": np.log(d["diam1"] / d["diam2"]),
               "group": d["group"]}
    return _flat_regression(np.log(d["weight"]), [derived[n] if n in derived else np.log(d[n]) for n in names], v)


def _nes(data_name, v):
    d = load_data(data_name)
    b, sigma = v["beta"], v["sigma"]
    age = d["age_discrete"]
    mean = (b[0] + b[1] * d["real_ideo"] + b[2] * d["race_adj"] + b[3] * (age == 2) + b[4] * (age == 3)
            + b[5] * (age == 4) + b[6] * d["educ1"] + b[7] * d["gender"] + b[8] * d["income"])
    return norm(d["partyid7"], mean, sigma).sum() + _log(sigma)


def arma11(v):
    y = load_data("arma")["y"]
    mu, phi, theta, sigma = v["mu"], v["phi"], v["theta"], v["sigma"]
    err = np.empty(len(y))
    err[0] = y[0] - (mu + phi * mu)
    for t in range(1, len(y)):
        err[t] = y[t] - (mu + phi * y[t - 1] + theta * err[t - 1])
    target = norm(mu, 0, 10) + norm(phi, 0, 2) + norm(theta, 0, 2) + cauchy(sigma, 0, 2.5)
    return target + norm(err, 0, sigma).sum() + _log(sigma)


def _forward(log_theta, log_emission):
    """Stan's forward algorithm, loops as in the program: gamma[t, k] = log_sum_exp_j(gamma[t-1, j]
    + log(theta[j, k]) + emission[t, k]); target += log_sum_exp(gamma[N])."""
    n, K = log_emission.shape
    gamma = np.empty((n, K))
    gamma[0] = log_emission[0]
    for t in range(1, n):
        for k in range(K):
            gamma[t, k] = logsumexp([gamma[t - 1, j] + log_theta[j, k] + log_emission[t, k] for j in range(K)])
    return logsumexp(gamma[-1])


def _simplex_jacobian(*simplexes):
    """simplex[2] by stick-breaking: x1 = inv_logit(y), x2 = 1 - x1, log |J| = log x1 + log x2."""
    return sum(np.log(x[0]) + np.log(x[1]) for x in simplexes)


def hmm_example(v):
    y = load_data("hmm_example")["y"]
    theta1, theta2, mu = v["theta1"], v["theta2"], v["mu"]
    target = norm(mu[0], 3, 1) + norm(mu[1], 10, 1)
    emission = np.array([[norm(y_t, mu[k], 1) for k in range(2)] for y_t in y])
    target += _forward(np.log([theta1, theta2]), emission)
    return target + _simplex_jacobian(theta1, theta2) + np.log(mu[0]) + np.log(mu[1] - mu[0])


def _drive(data_name, v, emission, positive):
    d = load_data(data_name)
    theta1, theta2, phi, lam = v["theta1"], v["theta2"], v["phi"], v["lambda"]
    target = sum(stats.dirichlet.logpdf(theta, d["alpha"][k]) for k, theta in enumerate((theta1, theta2)))
    target += norm(phi[0], 0, 1) + norm(phi[1], 3, 1) + norm(lam[0], 0, 1) + norm(lam[1], 3, 1)
    log_emission = np.array([[emission(d, t, phi[k], lam[k]) for k in range(2)] for t in range(int(d["N"]))])
    target += _forward(np.log([theta1, theta2]), log_emission)
    jacobian = _simplex_jacobian(theta1, theta2) + np.log(phi[1] - phi[0]) + np.log(lam[1] - lam[0])
    if positive:
        jacobian += np.log(phi[0]) + np.log(lam[0])
    return target + jacobian


def _exponential(x, rate):
    return np.log(rate) - rate * x


def hmm_drive_0(v):
    return _drive("bball_drive_event_0", v, lambda d, t, phi, lam: _exponential(d["u"][t], phi)
                  + _exponential(d["v"][t], lam), positive=True)


def hmm_drive_1(v):
    return _drive("bball_drive_event_1", v, lambda d, t, phi, lam: norm(d["u"][t], phi, d["tau"])
                  + norm(d["v"][t], lam, d["rho"]), positive=False)


def _lognormal(x, mu, sigma):
    return stats.lognorm.logpdf(x, s=sigma, scale=np.exp(mu))


def lotka_volterra(v):
    """The ODE by scipy's adaptive DOP853 at rtol 1e-13 (Stan: integrate_ode_rk45)."""
    d = load_data("hudson_lynx_hare")
    theta, z_init, sigma = v["theta"], v["z_init"], v["sigma"]
    alpha, beta, gamma, delta = theta

    def dz_dt(t, z):
        u, w = z
        return [(alpha - beta * w) * u, (-gamma + delta * u) * w]

    z = solve_ivp(dz_dt, (0.0, float(d["ts"][-1])), z_init, method="DOP853", rtol=1e-13, atol=1e-12,
                  t_eval=d["ts"].astype(float)).y.T
    target = norm(theta[[0, 2]], 1, 0.5).sum() + norm(theta[[1, 3]], 0.05, 0.05).sum()
    target += _lognormal(sigma, -1, 1).sum() + _lognormal(z_init, np.log(10), 1).sum()
    for k in range(2):
        target += _lognormal(d["y_init"][k], np.log(z_init[k]), sigma[k])
        target += _lognormal(d["y"][:, k], np.log(z[:, k]), sigma[k]).sum()
    return target + _log(theta) + _log(z_init) + _log(sigma)


def one_comp_mm_elim_abs(v):
    """The ODE by scipy's implicit Radau at rtol 1e-13 (Stan: integrate_ode_bdf)."""
    d = load_data("one_comp_mm_elim_abs")
    k_a, K_m, V_m, sigma = v["k_a"], v["K_m"], v["V_m"], v["sigma"]
    D, V = float(d["D"]), float(d["V"])

    def rhs(t, y):
        dose = np.exp(-k_a * t) * D * k_a / V if t > 0 else 0.0
        return [dose - (V_m / V) * y[0] / (K_m + y[0])]

    C = solve_ivp(rhs, (float(d["t0"]), float(d["times"][-1])), [0.0], method="Radau", rtol=1e-13, atol=1e-16,
                  t_eval=d["times"]).y[0]
    target = cauchy(np.array([k_a, K_m, V_m, sigma]), 0, 1).sum()
    target += _lognormal(d["C_hat"], np.log(C), sigma).sum()
    return target + _log([k_a, K_m, V_m, sigma])


STAN_NUMPY = {
    "eight_schools-eight_schools_centered": eight_schools_centered,
    "eight_schools-eight_schools_noncentered": eight_schools_noncentered,
    "kidiq-kidscore_interaction": kidscore_interaction,
    "mesquite-mesquite": mesquite,
    "kilpisjarvi_mod-kilpisjarvi": kilpisjarvi,
    "sblrc-blr": lambda v: _blr("sblrc", v),
    "arK-arK": arK,
    "garch-garch11": garch11,
    "gp_pois_regr-gp_regr": gp_regr,
    "gp_pois_regr-gp_pois_regr": gp_pois_regr,
    "low_dim_gauss_mix-low_dim_gauss_mix": low_dim_gauss_mix,
    "diamonds-diamonds": diamonds,
    "earnings-earn_height": lambda v: _earnings(v, lambda e: e, lambda d: d["height"]),
    "earnings-log10earn_height": lambda v: _earnings(v, np.log10, lambda d: d["height"]),
    "earnings-logearn_height": lambda v: _earnings(v, np.log, lambda d: d["height"]),
    "earnings-logearn_height_male": lambda v: _earnings(v, np.log, lambda d: d["height"], lambda d: d["male"]),
    "earnings-logearn_logheight_male": lambda v: _earnings(v, np.log, lambda d: np.log(d["height"]),
                                                           lambda d: d["male"]),
    "earnings-logearn_interaction": lambda v: _earnings(v, np.log, lambda d: d["height"], lambda d: d["male"],
                                                        lambda d: d["height"] * d["male"]),
    "earnings-logearn_interaction_z": lambda v: _earnings(
        v, np.log, lambda d: (d["height"] - d["height"].mean()) / np.std(d["height"], ddof=1), lambda d: d["male"],
        lambda d: (d["height"] - d["height"].mean()) / np.std(d["height"], ddof=1) * d["male"]),
    "kidiq-kidscore_momhs": lambda v: _kidiq(v, "mom_hs"),
    "kidiq-kidscore_momiq": lambda v: _kidiq(v, "mom_iq"),
    "kidiq-kidscore_momhsiq": lambda v: _kidiq(v, "mom_hs", "mom_iq"),
    "kidiq_with_mom_work-kidscore_interaction_c": lambda v: _kidiq_interaction(
        v, *(x - np.mean(x) for x in (load_data("kidiq_with_mom_work")[k] for k in ("mom_hs", "mom_iq")))),
    "kidiq_with_mom_work-kidscore_interaction_c2": lambda v: _kidiq_interaction(
        v, load_data("kidiq_with_mom_work")["mom_hs"] - 0.5, load_data("kidiq_with_mom_work")["mom_iq"] - 100),
    "kidiq_with_mom_work-kidscore_interaction_z": lambda v: _kidiq_interaction(
        v, *(_z2(load_data("kidiq_with_mom_work")[k]) for k in ("mom_hs", "mom_iq"))),
    "kidiq_with_mom_work-kidscore_mom_work": lambda v: _flat_regression(
        load_data("kidiq_with_mom_work")["kid_score"],
        [(load_data("kidiq_with_mom_work")["mom_work"] == k).astype(float) for k in (2, 3, 4)], v),
    "mesquite-logmesquite": lambda v: _mesquite(v, "diam1", "diam2", "canopy_height", "total_height", "density",
                                                "group"),
    "mesquite-logmesquite_logvolume": lambda v: _mesquite(v, "volume"),
    "mesquite-logmesquite_logva": lambda v: _mesquite(v, "volume", "area", "group"),
    "mesquite-logmesquite_logvash": lambda v: _mesquite(v, "volume", "area", "shape", "total_height", "group"),
    "mesquite-logmesquite_logvas": lambda v: _mesquite(v, "volume", "area", "shape", "total_height", "density",
                                                       "group"),
    **{f"nes{year}-nes": (lambda v, name=f"nes{year}": _nes(name, v)) for year in range(1972, 2001, 4)},
    "sblri-blr": lambda v: _blr("sblri", v),
    "arma-arma11": arma11,
    "hmm_example-hmm_example": hmm_example,
    "bball_drive_event_0-hmm_drive_0": hmm_drive_0,
    "bball_drive_event_1-hmm_drive_1": hmm_drive_1,
    "hudson_lynx_hare-lotka_volterra": lotka_volterra,
    "one_comp_mm_elim_abs-one_comp_mm_elim_abs": one_comp_mm_elim_abs,
}

DRAWS = [0, 2345, 4567, 7891, 9999]
"""the reference draws (of 10 000, chains concatenated) at which the densities are compared."""


def test_every_suite_posterior_has_an_independent_density():
    assert sorted(STAN_NUMPY) == sorted(SUITE)


TOLERANCE = 1e-8
"""largest spread over :data:`DRAWS` of the PyMC density minus this module's, relative to the
size of the log densities compared (rounding grows with it: gp_pois_regr's Cholesky gave an
absolute spread of 1.04e-8 on one CPU)."""


def compare(name: str, values: dict, u: np.ndarray, logp_rows) -> float:
    """The spread (max - min) over :data:`DRAWS` of the PyMC model's log density minus this
    module's: ``values`` the reference draws as the model's free variables (constrained,
    :func:`~ckam_bench.posteriordb.models.reference_values`), ``u`` the same draws unconstrained,
    ``logp_rows(rows)`` the model's log density at rows of ``u``; relative to the largest
    ``|log density|`` of this module's (at least 1), since rounding grows with it."""
    ours = np.array([STAN_NUMPY[name]({k: x[i] for k, x in values.items()}) for i in DRAWS])
    diff = logp_rows(u[DRAWS]) - ours
    return float(diff.max() - diff.min()) / max(1.0, float(np.abs(ours).max()))
