r"""JAX log densities of the built-in targets, for the peer samplers (:mod:`ckam_bench.samplers.peers`).

Each function takes a target instance and returns a pure JAX function ``f(x) -> log π(x)``
(float64, the same formula as the target's ``_log_density``; the peers differentiate it with
``jax.grad``). Each target class's ``jax_log_density`` calls its function here (this module
imports no target: the targets depend on it, not the other way round); a target without one
has none, and the peers decline it with one line. ``tests/samplers/test_peers.py`` checks every
function and its gradient against the target's numpy density and gradient (within 1e-10).

JAX is imported only when a function is built (JAX is the optional ``peers`` extra), and
switched to float64 (``jax_enable_x64``) then.

* :class:`~ckam_bench.targets.gaussians.Gaussian` (gauss2d_corr, neal100, gp51):
  :math:`c - \tfrac12\|L^{-1}(x - \mu)\|^2`.
* :class:`~ckam_bench.targets.mixtures.GaussianMixture` (gmm2d, bimodal, basis4):
  :math:`\operatorname{logsumexp}_k\,[c_k - \sum_j (x_j - \mu_{kj})^2 / (2v_{kj})]`.
* :class:`~ckam_bench.targets.mixtures.ProductMixture` (gmm32): the same per coordinate, summed.
* :class:`~ckam_bench.targets.banana.Banana`: :math:`c - \tfrac12(y_1^2/v + r^2 + \sum_{j\ge3}
  y_j^2)`, :math:`r = y_2 - b(y_1^2 - v)`.
* :class:`~ckam_bench.targets.logistic.LogisticRegression`:
  :math:`y^\top X w - \sum_i \operatorname{softplus}(x_i^\top w) - \tfrac12\|w\|^2`.
"""

from __future__ import annotations



def _jnp():
    """jax.numpy, with JAX switched to float64 (the targets' densities are float64)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax.numpy


def gaussian(target):
    jnp = _jnp()

    mean, chol_inv, const = jnp.asarray(target._mean), jnp.asarray(target._chol_inv), float(target._log_const)

    def log_density(x):
        z = chol_inv @ (x - mean)
        return const - 0.5 * jnp.dot(z, z)

    return log_density


def mixture(target):
    jnp = _jnp()
    from jax.scipy.special import logsumexp

    const, means = jnp.asarray(target._log_const), jnp.asarray(target.means)
    half_inv_var = jnp.asarray(target._half_inv_var)

    def log_density(x):
        diff = x - means
        return logsumexp(const - jnp.sum(diff * diff * half_inv_var, axis=1))

    return log_density


def product_mixture(target):
    jnp = _jnp()
    from jax.scipy.special import logsumexp

    const, means = jnp.asarray(target._log_const), jnp.asarray(target.means)
    half_inv_var = jnp.asarray(target._half_inv_var)

    def log_density(x):
        diff = x[:, None] - means
        return jnp.sum(logsumexp(const - diff * diff * half_inv_var, axis=1))

    return log_density


def banana(target):
    jnp = _jnp()

    b, v, const = float(target.b), float(target.v), float(target._log_const)

    def log_density(x):
        r = x[1] - b * (x[0] * x[0] - v)
        return const - 0.5 * (x[0] * x[0] / v + r * r + jnp.sum(x[2:] * x[2:]))

    return log_density


def logistic(target):
    jnp = _jnp()

    X, c = jnp.asarray(target.X), jnp.asarray(target._c)

    def log_density(w):
        return jnp.dot(c, w) - jnp.sum(jnp.logaddexp(0.0, X @ w)) - 0.5 * jnp.dot(w, w)

    return log_density
