"""posteriordb's hidden Markov models: ``hmm_example-hmm_example`` and the two basketball drive
models ``bball_drive_event_0-hmm_drive_0``, ``bball_drive_event_1-hmm_drive_1`` (imadmali/
bball-hmm); the translation rules are those of :mod:`ckam_bench.posteriordb.models`, which
re-exports every model function here.

Two pieces Stan has and PyMC has not in this form:

- Stan's ``simplex`` transform (stick-breaking), :data:`stick_breaking`, so the unconstrained
  coordinates are Stan's (PyMC's own simplex transform is another map: for K = 2 it gives
  logit(x1) / 2, Stan's gives logit(x1));
- the forward algorithm on the log scale, :func:`hmm_log_likelihood`, evaluated as a product of
  N - 1 K x K matrices in the (log-sum-exp, +) semiring by a balanced tree of pairwise products:
  log2(N) vectorised levels, no loop over time in the graph and no rescaling (every step is a
  log-sum-exp).

Stan's ``positive_ordered`` is PyMC's ``Ordered(positive=True)`` (x1 = exp(y1), x_k = x_{k-1} +
exp(y_k)), its ``ordered`` PyMC's ``ordered``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import Ordered, Transform, ordered

from ckam_bench.posteriordb import load_data


class StickBreaking(Transform):
    """Stan's ``simplex[K]`` transform (Stan reference manual, "Unit simplex"): from y in R^(K-1),
    z_k = inv_logit(y_k - log(K - k)) (k = 1..K-1), x_k = (1 - x_1 - ... - x_{k-1}) z_k and x_K
    the rest of the stick; log |J| = sum_k log z_k + log(1 - z_k) + log(1 - x_1 - ... - x_{k-1})."""

    name = "stick_breaking"

    @staticmethod
    def _offset(k):
        """log(K - k) for k = 1..K-1 given the K - 1 free coordinates (0-based: log(K - 1 - i))."""
        return pt.log(pt.arange(k, 0, -1).astype("float64"))

    def backward(self, value, *inputs):
        value = pt.as_tensor(value)
        z = pt.sigmoid(value - self._offset(value.shape[-1]))
        rest = pt.cumprod(1.0 - z, axis=-1)  # the stick left after each break
        before = pt.concatenate([pt.ones_like(rest[..., :1]), rest[..., :-1]], axis=-1)
        return pt.concatenate([before * z, rest[..., -1:]], axis=-1)

    def forward(self, value, *inputs):
        value = pt.as_tensor(value)
        before = 1.0 - pt.concatenate([pt.zeros_like(value[..., :1]), pt.cumsum(value[..., :-2], axis=-1)], axis=-1)
        z = value[..., :-1] / before
        return pt.log(z) - pt.log1p(-z) + self._offset(value.shape[-1] - 1)

    def log_jac_det(self, value, *inputs):
        value = pt.as_tensor(value)
        shifted = value - self._offset(value.shape[-1])
        log_z, log_1mz = -pt.softplus(-shifted), -pt.softplus(shifted)
        log_before = pt.concatenate([pt.zeros_like(log_1mz[..., :1]), pt.cumsum(log_1mz[..., :-1], axis=-1)], axis=-1)
        return pt.sum(log_z + log_1mz + log_before, axis=-1)


stick_breaking = StickBreaking()
positive_ordered = Ordered(positive=True)


def _semiring_product(a, b):
    """Batched matrix products in the (log-sum-exp, +) semiring: out[..., i, k] =
    log sum_j exp(a[..., i, j] + b[..., j, k])."""
    return pt.logsumexp(a[..., :, :, None] + b[..., None, :, :], axis=-2)


def hmm_log_likelihood(log_theta, log_emission, n: int):
    """Stan's forward algorithm: with gamma[1, k] = log_emission[1, k] and gamma[t, k] =
    log_sum_exp_j(gamma[t-1, j] + log_theta[j, k] + log_emission[t, k]), the log likelihood
    log_sum_exp(gamma[n]). ``log_theta`` (K, K) is the log transition matrix (row j: from state
    j), ``log_emission`` (n, K).

    gamma[n] = gamma[1] (x) M_2 (x) ... (x) M_n with M_t[j, k] = log_theta[j, k] +
    log_emission[t, k] and (x) the semiring product; the product of the M_t is taken pairwise,
    adjacent pairs first, so the graph has ceil(log2(n - 1)) levels of batched K x K products."""
    mats = log_theta[None, :, :] + log_emission[1:, None, :]
    m = n - 1
    while m > 1:
        half = m // 2
        paired = _semiring_product(mats[0:2 * half:2], mats[1:2 * half:2])
        mats = pt.concatenate([paired, mats[2 * half:m]]) if m % 2 else paired
        m = half + m % 2
    return pt.logsumexp(log_emission[0][:, None] + mats[0])


def _transition(theta1, theta2):
    """Stan's ``theta[1] = theta1; theta[2] = theta2``: the log transition matrix, row j = theta_j."""
    return pt.log(pt.stack([theta1, theta2]))


def hmm_example() -> pm.Model:
    """``simplex[K] theta1; simplex[K] theta2; positive_ordered[K] mu`` (K = 2); ``target +=
    normal_lpdf(mu[1] | 3, 1) + normal_lpdf(mu[2] | 10, 1)``; forward algorithm with
    ``gamma[1, k] = normal_lpdf(y[1] | mu[k], 1)``, ``acc[j] = gamma[t-1, j] + log(theta[j, k]) +
    normal_lpdf(y[t] | mu[k], 1)``, ``gamma[t, k] = log_sum_exp(acc)``, ``target +=
    log_sum_exp(gamma[N])``. theta1, theta2 have no prior: flat on the simplex (Dirichlet(1, 1))."""
    d = load_data("hmm_example")
    y, n = d["y"].astype(float), int(d["N"])
    with pm.Model() as model:
        theta1 = pm.Dirichlet("theta1", np.ones(2), default_transform=None, transform=stick_breaking)
        theta2 = pm.Dirichlet("theta2", np.ones(2), default_transform=None, transform=stick_breaking)
        mu = pm.Normal("mu", np.array([3.0, 10.0]), 1.0, shape=2, transform=positive_ordered,
                       initval=np.array([3.0, 10.0]))
        emission = pm.logp(pm.Normal.dist(mu, 1.0), y[:, None])
        pm.Potential("forward", hmm_log_likelihood(_transition(theta1, theta2), emission, n))
    return model


def _drive(data_name: str, emission, order) -> pm.Model:
    """The drive models: ``simplex[K] theta1, theta2`` with ``dirichlet_lpdf(theta[k] | alpha[k,
    :]')``; ``phi``, ``lambda`` (``order``: positive_ordered or ordered) with ``normal_lpdf(phi[1] |
    0, 1) + normal_lpdf(phi[2] | 3, 1)``, the same for lambda; the forward algorithm with the
    emission ``emission(u, v, phi, lambda, d)`` (an (N, K) graph)."""
    d = load_data(data_name)
    alpha = d["alpha"].astype(float)
    start = np.array([0.5, 3.0])  # ordered, and positive for positive_ordered
    with pm.Model() as model:
        theta1 = pm.Dirichlet("theta1", alpha[0], default_transform=None, transform=stick_breaking)
        theta2 = pm.Dirichlet("theta2", alpha[1], default_transform=None, transform=stick_breaking)
        phi = pm.Normal("phi", np.array([0.0, 3.0]), 1.0, shape=2, transform=order, initval=start)
        lam = pm.Normal("lambda", np.array([0.0, 3.0]), 1.0, shape=2, transform=order, initval=start)
        log_emission = emission(d["u"].astype(float)[:, None], d["v"].astype(float)[:, None], phi, lam, d)
        pm.Potential("forward", hmm_log_likelihood(_transition(theta1, theta2), log_emission, int(d["N"])))
    return model


def hmm_drive_0() -> pm.Model:
    """``positive_ordered[K] phi, lambda``; emission ``exponential_lpdf(u[t] | phi[k]) +
    exponential_lpdf(v[t] | lambda[k])`` (rates); see ``_drive`` for the rest."""
    return _drive("bball_drive_event_0",
                  lambda u, v, phi, lam, d: pm.logp(pm.Exponential.dist(lam=phi), u)
                  + pm.logp(pm.Exponential.dist(lam=lam), v), positive_ordered)


def hmm_drive_1() -> pm.Model:
    """``ordered[K] phi, lambda``; emission ``normal_lpdf(u[t] | phi[k], tau) + normal_lpdf(v[t] |
    lambda[k], rho)`` (tau, rho data); see ``_drive`` for the rest."""
    return _drive("bball_drive_event_1",
                  lambda u, v, phi, lam, d: pm.logp(pm.Normal.dist(phi, float(d["tau"])), u)
                  + pm.logp(pm.Normal.dist(lam, float(d["rho"])), v), ordered)
