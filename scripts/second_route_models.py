"""The second route's densities (issue 45 §2): each harness-certified posterior written again as a
NumPyro model, statement by statement from its Stan program in posteriordb
(``posterior_database/models/stan/<model>.stan``), reading posteriordb's own data file
(``posterior_database/data/data/<data>.json.zip``) straight from a posteriordb git mirror with
:func:`load_posteriordb_data`, never the suite's shipped arrays nor its PyMC models.

Stan's target is a density up to a constant; a NumPyro ``sample`` site adds its normalised log
density, which differs from Stan's ``~`` statement by a constant only (a ``<lower=0>``
parameter with ``normal(0, s)`` is NumPyro's ``HalfNormal(s)``; a bounded parameter without a
prior statement is NumPyro's ``Uniform`` on the bounds; an unbounded one without a prior is
``ImproperUniform``). NumPyro's unconstrained coordinates use Stan's transforms (exp for
``<lower=0>``, ``lower + (upper - lower) inv_logit`` for an interval) and add their
log-Jacobians, as Stan does.

A model function takes the data dict and returns nothing; :data:`MODELS` maps the posteriordb
posterior name to ``(model function, data name, Stan parameter names in declaration order)``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import zipfile

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

MIRROR = os.environ.get("POSTERIORDB_GIT_DIR", "/work/.mirror/stan-dev+posteriordb/repo")
"""a git directory (bare or not) of github.com/stan-dev/posteriordb."""
COMMIT = "HEAD"
PDB = "posterior_database"


def _git_show(path: str, git_dir: str = MIRROR, commit: str = COMMIT) -> bytes:
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], capture_output=True,
                          check=True).stdout


def mirror_commit(git_dir: str = MIRROR, commit: str = COMMIT) -> str:
    """The full commit id the mirror's ``commit`` names."""
    return subprocess.run(["git", "--git-dir", git_dir, "rev-parse", f"{commit}^{{commit}}"], capture_output=True,
                          text=True, check=True).stdout.strip()


def load_posteriordb_data(data_name: str, git_dir: str = MIRROR, commit: str = COMMIT) -> dict:
    """posteriordb's data set ``data_name`` as its JSON gives it (numbers as numpy arrays), read
    from the zip file in the git mirror."""
    raw = _git_show(f"{PDB}/data/data/{data_name}.json.zip", git_dir, commit)
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        (member,) = archive.namelist()
        data = json.loads(archive.read(member))
    return {k: np.asarray(v) for k, v in data.items()}


def stan_program(model_name: str, git_dir: str = MIRROR, commit: str = COMMIT) -> str:
    """The Stan program ``model_name`` from the mirror."""
    return _git_show(f"{PDB}/models/stan/{model_name}.stan", git_dir, commit).decode()


def _flat(name, shape=()):
    """A parameter with no prior statement: Stan's flat density on the reals."""
    return numpyro.sample(name, dist.ImproperUniform(constraints.real, (), event_shape=shape))


def _binomial(name, n, p, k):
    numpyro.sample(name, dist.Binomial(total_count=int(n), probs=p), obs=jnp.asarray(k))


# ------------------------------------------------------------------------------- Rate_1 ... Rate_5
def rate_1(d):
    """Rate_1_model.stan: theta ~ beta(1, 1); k ~ binomial(n, theta)."""
    theta = numpyro.sample("theta", dist.Beta(1.0, 1.0))
    _binomial("k", d["n"], theta, d["k"])


def rate_2(d):
    """Rate_2_model.stan: two rates, theta1, theta2 ~ beta(1, 1); k1 ~ binomial(n1, theta1); k2 ~ binomial(n2, theta2)."""
    t1 = numpyro.sample("theta1", dist.Beta(1.0, 1.0))
    t2 = numpyro.sample("theta2", dist.Beta(1.0, 1.0))
    _binomial("k1", d["n1"], t1, d["k1"])
    _binomial("k2", d["n2"], t2, d["k2"])


def common_rate(d):
    """Rate_3_model.stan and Rate_5_model.stan: theta ~ beta(1, 1); k1 ~ binomial(n1, theta); k2 ~ binomial(n2, theta)."""
    theta = numpyro.sample("theta", dist.Beta(1.0, 1.0))
    _binomial("k1", d["n1"], theta, d["k1"])
    _binomial("k2", d["n2"], theta, d["k2"])


def rate_4(d):
    """Rate_4_model.stan: theta, thetaprior ~ beta(1, 1); k ~ binomial(n, theta) (thetaprior: prior only)."""
    theta = numpyro.sample("theta", dist.Beta(1.0, 1.0))
    numpyro.sample("thetaprior", dist.Beta(1.0, 1.0))
    _binomial("k", d["n"], theta, d["k"])


# ------------------------------------------------------------------------------- logistic regressions
def _bernoulli_logit(name, eta, y):
    numpyro.sample(name, dist.BernoulliLogits(eta), obs=jnp.asarray(y))


def wells_dist(d):
    """wells_dist.stan: vector[2] beta flat; switched ~ bernoulli_logit(beta[1] + beta[2] * dist)."""
    beta = _flat("beta", (2,))
    _bernoulli_logit("switched", beta[0] + beta[1] * jnp.asarray(d["dist"], float), d["switched"])


def wells_dist100(d):
    """wells_dist100_model.stan: alpha, vector[1] beta flat; switched ~ bernoulli_logit_glm(dist / 100, alpha, beta)."""
    x = (jnp.asarray(d["dist"], float) / 100.0)[:, None]
    alpha = _flat("alpha")
    beta = _flat("beta", (1,))
    _bernoulli_logit("switched", alpha + x @ beta, d["switched"])


def wells_dist100ars(d):
    """wells_dist100ars_model.stan: alpha, vector[2] beta flat; switched ~ bernoulli_logit_glm([dist / 100, arsenic], alpha, beta)."""
    x = jnp.stack([jnp.asarray(d["dist"], float) / 100.0, jnp.asarray(d["arsenic"], float)], axis=1)
    alpha = _flat("alpha")
    beta = _flat("beta", (2,))
    _bernoulli_logit("switched", alpha + x @ beta, d["switched"])


def wells_interaction_c(d):
    """wells_interaction_c_model.stan: centred dist / 100, centred arsenic and their product; flat alpha, vector[3] beta; bernoulli_logit_glm."""
    dist_ = np.asarray(d["dist"], float)
    ars = np.asarray(d["arsenic"], float)
    c_dist100 = (dist_ - dist_.mean()) / 100.0
    c_arsenic = ars - ars.mean()
    x = jnp.asarray(np.stack([c_dist100, c_arsenic, c_dist100 * c_arsenic], axis=1))
    alpha = _flat("alpha")
    beta = _flat("beta", (3,))
    _bernoulli_logit("switched", alpha + x @ beta, d["switched"])


def nes_logit(d):
    """nes_logit_model.stan: alpha, vector[1] beta flat; vote ~ bernoulli_logit_glm(income, alpha, beta)."""
    x = jnp.asarray(d["income"], float)[:, None]
    alpha = _flat("alpha")
    beta = _flat("beta", (1,))
    _bernoulli_logit("vote", alpha + x @ beta, d["vote"])


# ------------------------------------------------------------------------------- Gaussian regressions
def radon_pooled(d):
    """radon_pooled.stan: sigma_y ~ normal(0, 1) (lower=0); alpha, beta ~ normal(0, 10); log_radon[n] ~ normal(alpha + beta * floor_measure[n], sigma_y)."""
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0))
    mu = alpha + beta * jnp.asarray(d["floor_measure"], float)
    numpyro.sample("log_radon", dist.Normal(mu, sigma_y), obs=jnp.asarray(d["log_radon"], float))


def sesame_one_pred_a(d):
    """sesame_one_pred_a.stan: vector[2] beta flat, sigma flat on (0, inf); watched ~ normal(beta[1] + beta[2] * encouraged, sigma)."""
    beta = _flat("beta", (2,))
    sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
    mu = beta[0] + beta[1] * jnp.asarray(d["encouraged"], float)
    numpyro.sample("watched", dist.Normal(mu, sigma), obs=jnp.asarray(d["watched"], float))


def radon_county_intercept(d):
    """radon_county_intercept.stan: sigma_y ~ normal(0, 1) (lower=0); alpha[J], beta ~ normal(0, 10); log_radon[n] ~ normal(alpha[county_idx[n]] + beta * floor_measure[n], sigma_y)."""
    J = int(d["J"])
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0).expand([J]).to_event(1))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0))
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    idx = jnp.asarray(d["county_idx"], int) - 1
    mu = alpha[idx] + beta * jnp.asarray(d["floor_measure"], float)
    numpyro.sample("log_radon", dist.Normal(mu, sigma_y), obs=jnp.asarray(d["log_radon"], float))


def radon_variable_intercept_slope_noncentered(d):
    """radon_variable_intercept_slope_noncentered.stan: half-normal(0, 1) sigma_y, sigma_beta, sigma_alpha; mu_alpha, mu_beta ~ normal(0, 10); alpha_raw, beta_raw ~ normal(0, 1); alpha = mu_alpha + sigma_alpha alpha_raw, beta likewise; log_radon[n] ~ normal(alpha[c] + floor_measure[n] beta[c], sigma_y)."""
    J = int(d["J"])
    sigma_y = numpyro.sample("sigma_y", dist.HalfNormal(1.0))
    sigma_alpha = numpyro.sample("sigma_alpha", dist.HalfNormal(1.0))
    sigma_beta = numpyro.sample("sigma_beta", dist.HalfNormal(1.0))
    alpha_raw = numpyro.sample("alpha_raw", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    beta_raw = numpyro.sample("beta_raw", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    mu_beta = numpyro.sample("mu_beta", dist.Normal(0.0, 10.0))
    alpha = mu_alpha + sigma_alpha * alpha_raw
    beta = mu_beta + sigma_beta * beta_raw
    idx = jnp.asarray(d["county_idx"], int) - 1
    mu = alpha[idx] + jnp.asarray(d["floor_measure"], float) * beta[idx]
    numpyro.sample("log_radon", dist.Normal(mu, sigma_y), obs=jnp.asarray(d["log_radon"], float))


def radon_county(d):
    """radon_county.stan: a[J] ~ normal(mu_a, sigma_a); mu_a ~ normal(0, 1); sigma_a, sigma_y flat on (0, 100); y ~ normal(a[county], sigma_y)."""
    J = int(d["J"])
    mu_a = numpyro.sample("mu_a", dist.Normal(0.0, 1.0))
    sigma_a = numpyro.sample("sigma_a", dist.Uniform(0.0, 100.0))
    sigma_y = numpyro.sample("sigma_y", dist.Uniform(0.0, 100.0))
    a = numpyro.sample("a", dist.Normal(mu_a, sigma_a).expand([J]).to_event(1))
    idx = jnp.asarray(d["county"], int) - 1
    numpyro.sample("y", dist.Normal(a[idx], sigma_y), obs=jnp.asarray(d["y"], float))


# ------------------------------------------------------------------------------- counts, trials, mixtures
def glmm1(d):
    """GLMM1_model.stan: alpha[nsite] ~ normal(mu_alpha, sd_alpha); mu_alpha ~ normal(0, 10); sd_alpha flat on (0, 5); obs[i] ~ poisson_log(alpha[obssite[i]]) (log_lambda's rows repeat alpha')."""
    nsite = int(d["nsite"])
    mu_alpha = numpyro.sample("mu_alpha", dist.Normal(0.0, 10.0))
    sd_alpha = numpyro.sample("sd_alpha", dist.Uniform(0.0, 5.0))
    alpha = numpyro.sample("alpha", dist.Normal(mu_alpha, sd_alpha).expand([nsite]).to_event(1))
    log_lambda = jnp.broadcast_to(alpha, (int(d["nyear"]), nsite))  # rep_matrix(alpha', nyear)
    eta = log_lambda[jnp.asarray(d["obsyear"], int) - 1, jnp.asarray(d["obssite"], int) - 1]
    numpyro.sample("obs", dist.Poisson(jnp.exp(eta)), obs=jnp.asarray(d["obs"]))


def _dogs_counts(d):
    """Stan's loops over trials: counts of previous avoidances and shocks of each dog."""
    y = np.asarray(d["y"], int)
    n_dogs, n_trials = int(d["n_dogs"]), int(d["n_trials"])
    avoid = np.zeros((n_dogs, n_trials))
    shock = np.zeros((n_dogs, n_trials))
    for j in range(n_dogs):
        for t in range(1, n_trials):
            avoid[j, t] = avoid[j, t - 1] + 1 - y[j, t - 1]
            shock[j, t] = shock[j, t - 1] + y[j, t - 1]
    return y, avoid, shock


def dogs(d):
    """dogs.stan: beta[3] ~ normal(0, 100); y[i, j] ~ bernoulli_logit(beta[1] + beta[2] n_avoid[i, j] + beta[3] n_shock[i, j])."""
    y, avoid, shock = _dogs_counts(d)
    beta = numpyro.sample("beta", dist.Normal(0.0, 100.0).expand([3]).to_event(1))
    eta = beta[0] + beta[1] * jnp.asarray(avoid) + beta[2] * jnp.asarray(shock)
    _bernoulli_logit("y", eta, y)


def dogs_hierarchical(d):
    """dogs_hierarchical.stan: a, b flat on (0, 1); y[j, t] ~ bernoulli(a ^ prev_shock[j, t] * b ^ prev_avoid[j, t])."""
    y, avoid, shock = _dogs_counts(d)
    a = numpyro.sample("a", dist.Uniform(0.0, 1.0))
    b = numpyro.sample("b", dist.Uniform(0.0, 1.0))
    log_p = jnp.asarray(shock) * jnp.log(a) + jnp.asarray(avoid) * jnp.log(b)
    yj = jnp.asarray(y)
    safe = jnp.where(yj == 1, -1.0, log_p)  # log(1 - p) only where y == 0 (no 0 * inf in the gradient)
    numpyro.factor("y", jnp.sum(jnp.where(yj == 1, log_p, jnp.log1p(-jnp.exp(safe)))))


def m0(d):
    """M0_model.stan: omega, p flat on (0, 1); a row seen s > 0 times: log omega + binomial_lpmf(s | T, p); never seen: log_sum_exp(log omega + binomial_lpmf(0 | T, p), log(1 - omega))."""
    y = np.asarray(d["y"], int)
    T = int(d["T"])
    s = jnp.asarray(y.sum(axis=1))
    omega = numpyro.sample("omega", dist.Uniform(0.0, 1.0))
    p = numpyro.sample("p", dist.Uniform(0.0, 1.0))
    binom = dist.Binomial(total_count=T, probs=p).log_prob(s)
    seen = jnp.log(omega) + binom
    unseen = jnp.logaddexp(jnp.log(omega) + binom, jnp.log1p(-omega))
    numpyro.factor("rows", jnp.sum(jnp.where(s > 0, seen, unseen)))


# ------------------------------------------------------------------------------- time series
def _changepoint_matrix(t, t_change):
    """get_changepoint_matrix of prophet.stan, its loop as written."""
    T, S = len(t), len(t_change)
    A = np.zeros((T, S))
    a_row = np.zeros(S)
    cp = 0
    for i in range(T):
        while cp < S and t[i] >= t_change[cp]:
            a_row[cp] = 1.0
            cp += 1
        A[i] = a_row
    return A


def prophet(d):
    """prophet.stan (linear trend, trend_indicator == 0): k, m ~ normal(0, 5); delta ~ double_exponential(0, tau); sigma_obs ~ normal(0, 0.5) (lower=0); beta ~ normal(0, sigmas); y ~ normal(linear_trend .* (1 + X (beta .* s_m)) + X (beta .* s_a), sigma_obs)."""
    assert int(d["trend_indicator"]) == 0, "only the linear trend is transcribed"
    t = np.asarray(d["t"], float)
    t_change = np.atleast_1d(np.asarray(d["t_change"], float))
    X = np.asarray(d["X"], float)
    A = jnp.asarray(_changepoint_matrix(t, t_change))
    S = len(t_change)
    k = numpyro.sample("k", dist.Normal(0.0, 5.0))
    m = numpyro.sample("m", dist.Normal(0.0, 5.0))
    delta = numpyro.sample("delta", dist.Laplace(0.0, float(d["tau"])).expand([S]).to_event(1))
    sigma_obs = numpyro.sample("sigma_obs", dist.HalfNormal(0.5))
    beta = numpyro.sample("beta", dist.Normal(0.0, jnp.asarray(d["sigmas"], float)).to_event(1))
    tj = jnp.asarray(t)
    trend = (k + A @ delta) * tj + (m + A @ (-jnp.asarray(t_change) * delta))
    Xj = jnp.asarray(X)
    mu = trend * (1 + Xj @ (beta * jnp.asarray(d["s_m"], float))) + Xj @ (beta * jnp.asarray(d["s_a"], float))
    numpyro.sample("y", dist.Normal(mu, sigma_obs), obs=jnp.asarray(d["y"], float))


def irt_2pl(d):
    """irt_2pl.stan: sigma_theta, sigma_a, sigma_b ~ cauchy(0, 2) (lower=0); theta[J] ~ normal(0, sigma_theta); a[I] ~ lognormal(0, sigma_a) (lower=0); mu_b ~ normal(0, 5); b[I] ~ normal(mu_b, sigma_b); y[i] ~ bernoulli_logit(a[i] * (theta - b[i])).
    Written with theta = sigma_theta * theta_raw and log a = sigma_a * log_a_raw, theta_raw and log_a_raw standard normal: the same posterior (a's lognormal on a's log scale is normal(0, sigma_a)), without the centred funnels."""
    I, J = int(d["I"]), int(d["J"])
    sigma_theta = numpyro.sample("sigma_theta", dist.HalfCauchy(2.0))
    theta_raw = numpyro.sample("theta_raw", dist.Normal(0.0, 1.0).expand([J]).to_event(1))
    theta = numpyro.deterministic("theta", sigma_theta * theta_raw)
    sigma_a = numpyro.sample("sigma_a", dist.HalfCauchy(2.0))
    log_a_raw = numpyro.sample("log_a_raw", dist.Normal(0.0, 1.0).expand([I]).to_event(1))
    a = numpyro.deterministic("a", jnp.exp(sigma_a * log_a_raw))
    mu_b = numpyro.sample("mu_b", dist.Normal(0.0, 5.0))
    sigma_b = numpyro.sample("sigma_b", dist.HalfCauchy(2.0))
    b = numpyro.sample("b", dist.Normal(mu_b, sigma_b).expand([I]).to_event(1))
    y = jnp.asarray(d["y"], float)  # (I, J)
    numpyro.sample("y", dist.Bernoulli(logits=a[:, None] * (theta[None, :] - b[:, None])).to_event(2), obs=y)


def election88_full(d):
    """election88_full.stan: vector a[n_age], b[n_edu], c[n_age_edu], d[n_state], e[n_region_full],
    vector[5] beta; real<lower=0, upper=100> sigma_a ... sigma_e (flat); a ~ normal(0, sigma_a), b, c, d, e likewise;
    beta ~ normal(0, 100); y ~ bernoulli_logit(beta[1] + beta[2] black + beta[3] female + beta[5] female black
    + beta[4] v_prev_full + a[age] + b[edu] + c[age_edu] + d[state] + e[region_full]).
    Written with each effect partially non-centred, level j of effect x as x_j = h_j x_raw_j, h_j = sigma_x /
    sqrt(1 + sigma_x^2 n_j / 4) (n_j: the rows at level j), x_raw_j ~ normal(0, sigma_x / h_j); and beta[1] sampled as
    the level beta1_level = beta[1] + beta[4] mean(v_prev_full) + sum of the five effects' means (flat, beta ~
    normal(0, 100) as a factor on beta): a shear of unit Jacobian. The same posterior without the funnels (small
    sigma) or the bent ridges of a non-centred effect the data pin (large sigma; MAMS on the fully non-centred form:
    bulk ESS 54), nor the intercept's ridge. The likelihood is Stan's sum over the 11 566 Bernoulli rows taken row
    group by row group: rows with equal covariates (equal eta) summed as k eta - n log(1 + exp(eta)), n rows of which
    k have y = 1 (NUTS on the row-by-row sum: no chain of 21 000 draws finished in 16 CPU minutes)."""
    keys = ("black", "female", "v_prev_full", "age", "edu", "age_edu", "state", "region_full")
    covariates, group = np.unique(np.column_stack([np.asarray(d[key], float) for key in keys]), axis=0,
                                  return_inverse=True)
    group = np.ravel(group)
    n = jnp.asarray(np.bincount(group), float)
    k = jnp.asarray(np.bincount(group, weights=np.asarray(d["y"], float)), float)
    col = {key: np.ascontiguousarray(covariates[:, j]) for j, key in enumerate(keys)}
    idx = {key: jnp.asarray(col[key].astype(int) - 1) for key in ("age", "edu", "age_edu", "state", "region_full")}
    black, female = jnp.asarray(col["black"]), jnp.asarray(col["female"])
    v_prev = np.asarray(d["v_prev_full"], float)
    groups = (("a", "age", "n_age"), ("b", "edu", "n_edu"), ("c", "age_edu", "n_age_edu"), ("d", "state", "n_state"),
              ("e", "region_full", "n_region_full"))
    sigma = {x: numpyro.sample(f"sigma_{x}", dist.Uniform(0.0, 100.0)) for x, _, _ in groups}
    eff = {}
    for x, key, size in groups:
        n_j = jnp.asarray(np.bincount(np.asarray(d[key], int) - 1, minlength=int(d[size])), float)
        h = sigma[x] / jnp.sqrt(1.0 + sigma[x] ** 2 * n_j / 4.0)
        raw = numpyro.sample(f"{x}_raw", dist.Normal(0.0, sigma[x] / h).to_event(1))
        eff[x] = numpyro.deterministic(x, h * raw)
    level = _flat("beta1_level")
    rest = _flat("beta_rest", (4,))  # beta[2..5]
    beta1 = level - rest[2] * v_prev.mean() - sum(jnp.mean(v) for v in eff.values())
    beta = numpyro.deterministic("beta", jnp.concatenate([beta1[None], rest]))
    numpyro.factor("beta_prior", dist.Normal(0.0, 100.0).log_prob(beta).sum())
    y_hat = (beta[0] + beta[1] * black + beta[2] * female + beta[4] * female * black
             + beta[3] * jnp.asarray(col["v_prev_full"]) + sum(eff[x][idx[key]] for x, key, _ in groups))
    numpyro.factor("y", jnp.sum(k * y_hat - n * jnp.logaddexp(0.0, y_hat)))

MODELS: dict[str, tuple] = {
    "Rate_1_data-Rate_1_model": (rate_1, "Rate_1_data", ("theta",)),
    "Rate_2_data-Rate_2_model": (rate_2, "Rate_2_data", ("theta1", "theta2")),
    "Rate_3_data-Rate_3_model": (common_rate, "Rate_3_data", ("theta",)),
    "Rate_4_data-Rate_4_model": (rate_4, "Rate_4_data", ("theta", "thetaprior")),
    "Rate_5_data-Rate_5_model": (common_rate, "Rate_5_data", ("theta",)),
    "wells_data-wells_dist": (wells_dist, "wells_data", ("beta",)),
    "wells_data-wells_dist100_model": (wells_dist100, "wells_data", ("alpha", "beta")),
    "wells_data-wells_dist100ars_model": (wells_dist100ars, "wells_data", ("alpha", "beta")),
    "wells_data-wells_interaction_c_model": (wells_interaction_c, "wells_data", ("alpha", "beta")),
    "nes_logit_data-nes_logit_model": (nes_logit, "nes_logit_data", ("alpha", "beta")),
    "radon_mn-radon_pooled": (radon_pooled, "radon_mn", ("alpha", "beta", "sigma_y")),
    "radon_all-radon_pooled": (radon_pooled, "radon_all", ("alpha", "beta", "sigma_y")),
    "sesame_data-sesame_one_pred_a": (sesame_one_pred_a, "sesame_data", ("beta", "sigma")),
    "dogs-dogs": (dogs, "dogs", ("beta",)),
    "dogs-dogs_hierarchical": (dogs_hierarchical, "dogs", ("a", "b")),
    "M0_data-M0_model": (m0, "M0_data", ("omega", "p")),
    "radon_mn-radon_county_intercept": (radon_county_intercept, "radon_mn", ("alpha", "beta", "sigma_y")),
    "radon_all-radon_county_intercept": (radon_county_intercept, "radon_all", ("alpha", "beta", "sigma_y")),
    "radon_mn-radon_variable_intercept_slope_noncentered": (
        radon_variable_intercept_slope_noncentered, "radon_mn",
        ("sigma_y", "sigma_alpha", "sigma_beta", "alpha_raw", "beta_raw", "mu_alpha", "mu_beta")),
    "radon_all-radon_variable_intercept_slope_noncentered": (
        radon_variable_intercept_slope_noncentered, "radon_all",
        ("sigma_y", "sigma_alpha", "sigma_beta", "alpha_raw", "beta_raw", "mu_alpha", "mu_beta")),
    "radon_mod-radon_county": (radon_county, "radon_mod", ("a", "mu_a", "sigma_a", "sigma_y")),
    "GLMM_data-GLMM1_model": (glmm1, "GLMM_data", ("alpha", "mu_alpha", "sd_alpha")),
    "rstan_downloads-prophet": (prophet, "rstan_downloads", ("k", "m", "delta", "sigma_obs", "beta")),
    "irt_2pl-irt_2pl": (irt_2pl, "irt_2pl", ("sigma_theta", "theta", "sigma_a", "a", "mu_b", "sigma_b", "b")),
    "election88-election88_full": (election88_full, "election88", ("a", "b", "c", "d", "e", "beta", "sigma_a", "sigma_b",
                                                                    "sigma_c", "sigma_d", "sigma_e")),
}
"""posteriordb name -> (NumPyro model, posteriordb data name, the Stan program's parameters in
its declaration order)."""
