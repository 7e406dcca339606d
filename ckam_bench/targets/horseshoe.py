r"""Bayesian linear regression with a horseshoe prior (the divergence-minimisation paper, §4.4).

Model (n observations, p predictors; Carvalho, Polson & Scott 2009):

.. math::
    y_i \mid \beta, \sigma \sim N(x_i^\top\beta, \sigma^2),\qquad
    \beta_j \mid \lambda_j, \tau \sim N(0, \lambda_j^2\tau^2),\qquad
    \lambda_j, \tau, \sigma \sim C^+(0, 1)\ \text{(half-Cauchy)}.

The paper gives neither the prior of the noise scale nor the parametrisation; we put the same
half-Cauchy on σ and sample the 2p + 2 parameters on an unconstrained scale,
θ = (β₁…β_p, log λ₁…log λ_p, log τ, log σ) (42 for p = 20), with the log Jacobians
log λ_j, log τ, log σ added:

.. math::
    \log\pi(\theta) = -n\log\sigma - \frac{\|y - X\beta\|^2}{2\sigma^2}
    + \sum_j \Big[-\ell_j - \ell_\tau - \frac{\beta_j^2}{2\lambda_j^2\tau^2}\Big]
    + \sum_{s\in\{\lambda_1..\lambda_p,\tau,\sigma\}} \big[\log s - \log(1+s^2)\big] + \text{const},

with ℓ = log λ, and ‖y − Xβ‖² = yᵀy − 2βᵀXᵀy + βᵀXᵀXβ from the precomputed XᵀX, Xᵀy (O(p²)
per evaluation, whatever n). The gradient:

.. math::
    \partial_\beta = \frac{X^\top y - X^\top X\beta}{\sigma^2} - \frac{\beta}{\lambda^2\tau^2},\quad
    \partial_{\ell_j} = \frac{\beta_j^2}{\lambda_j^2\tau^2} - \frac{2\lambda_j^2}{1+\lambda_j^2},\quad
    \partial_{\log\tau} = \sum_j\Big(\frac{\beta_j^2}{\lambda_j^2\tau^2} - 1\Big) + 1 - \frac{2\tau^2}{1+\tau^2},

    \partial_{\log\sigma} = -n + \frac{\|y - X\beta\|^2}{\sigma^2} + 1 - \frac{2\sigma^2}{1+\sigma^2}.

Data. The paper's design: X (1000 × 20) standard normal, β = (10, 5, 2.5, 2, 1, .75, .5, .25,
.2, .1, 0 × 10), y = Xβ + N(0, 1). It is generated once (:func:`generate_regression_data`, seed
20211, numpy's PCG64) and shipped as ``ckam_bench/data/horseshoe_regression.npz`` (keys ``X``,
``y``, ``beta_true``; 170 kB), rather than regenerated at each run: a stored file is the same
dataset for every user whatever future numpy versions do to their normal generator, and
``data_file=`` points the target at any other regression dataset in the same format
(``beta_true`` optional: without it there is no coefficient distance).

``true_coefficients`` (when known) and ``coefficient_slice`` feed the coefficient-distance metric
(:mod:`ckam_bench.metrics.esjd`). There is no closed-form posterior: the exact moments are
unknown (a certified reference sample is the reference-sample command's job).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np

from ckam_bench import jit
from ckam_bench.data import DataFileError, data_file
from ckam_bench.targets.base import Target
from ckam_bench.targets.divergence import bind_density_and_grad

_LOG_2PI = math.log(2.0 * math.pi)
DATA_NAME = "horseshoe_regression.npz"
DATA_ENV = "CKAM_BENCH_HORSESHOE_DATA"
PAPER_COEFFICIENTS = (10.0, 5.0, 2.5, 2.0, 1.0, 0.75, 0.5, 0.25, 0.2, 0.1) + (0.0,) * 10
PAPER_SEED = 20211
_MAX_OBS, _MAX_PREDICTORS = 10_000_000, 2_000


def generate_regression_data(seed: int = PAPER_SEED, n: int = 1000, coefficients=PAPER_COEFFICIENTS,
                             noise_sd: float = 1.0) -> dict:
    """The paper's design: X ~ N(0, 1) (n × p), y = Xβ + noise_sd · N(0, 1), from ``seed``.

    Returns ``{"X", "y", "beta_true"}`` (what the shipped file holds)."""
    beta = np.asarray(coefficients, float)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((int(n), beta.size))
    y = X @ beta + noise_sd * rng.standard_normal(int(n))
    return {"X": X, "y": y, "beta_true": beta}


@jit.helper
def _log1p_exp(z):
    """log(1 + e^z) without overflow."""
    if z > 0.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@jit.helper
def residual_sum_of_squares(beta, xtx, xty, yty, xt_residual):
    """‖y − Xβ‖² = yᵀy − 2βᵀXᵀy + βᵀXᵀXβ from the precomputed statistics (floored at 0);
    writes Xᵀ(y − Xβ) into ``xt_residual[:p]``. Only β = ``beta[:p]`` is read."""
    p = xty.shape[0]
    rss = yty
    for i in range(p):
        xtx_beta = 0.0
        for j in range(p):
            xtx_beta += xtx[i, j] * beta[j]
        rss += beta[i] * xtx_beta - 2.0 * beta[i] * xty[i]
        xt_residual[i] = xty[i] - xtx_beta
    return max(rss, 0.0)


@jit.helper
def _horseshoe_log_density_grad(theta, grad_out, params):
    """Horseshoe log posterior and gradient (into ``grad_out``), compiled."""
    xtx, xty, yty, n_obs, log_const = params
    p = xty.shape[0]
    for j in range(theta.shape[0]):
        if not math.isfinite(theta[j]):
            for i in range(theta.shape[0]):
                grad_out[i] = math.nan
            return math.nan if theta[j] != theta[j] else -math.inf
    log_tau, log_sigma = theta[2 * p], theta[2 * p + 1]
    rss = residual_sum_of_squares(theta, xtx, xty, yty, grad_out)  # and Xᵀ(y − Xβ) into grad_out[:p]
    inv_s2 = math.exp(-2.0 * log_sigma)
    out = log_const - n_obs * log_sigma - 0.5 * rss * inv_s2
    d_log_tau = 0.0
    for j in range(p):
        ell = theta[p + j]
        z = theta[j] * theta[j] * math.exp(-2.0 * (ell + log_tau))  # β²/(λ²τ²)
        out += -ell - log_tau - 0.5 * z + ell - _log1p_exp(2.0 * ell)
        grad_out[j] = grad_out[j] * inv_s2 - theta[j] * math.exp(-2.0 * (ell + log_tau))
        grad_out[p + j] = z - 2.0 / (1.0 + math.exp(-2.0 * ell))
        d_log_tau += z - 1.0
    out += log_tau - _log1p_exp(2.0 * log_tau) + log_sigma - _log1p_exp(2.0 * log_sigma)
    grad_out[2 * p] = d_log_tau + 1.0 - 2.0 / (1.0 + math.exp(-2.0 * log_tau))
    grad_out[2 * p + 1] = -n_obs + rss * inv_s2 + 1.0 - 2.0 / (1.0 + math.exp(-2.0 * log_sigma))
    if out != out:
        return -math.inf
    return out


@jit.helper
def _horseshoe_log_density(theta, params):
    scratch = np.empty(theta.shape[0])
    return _horseshoe_log_density_grad(theta, scratch, params)


class Horseshoe(Target):
    """Horseshoe-prior linear regression posterior on θ = (β, log λ, log τ, log σ).

    Parameters
    ----------
    data_file : path of an ``.npz`` with ``X`` (n, p), ``y`` (n,) and optionally
        ``beta_true`` (p,); None uses the shipped paper dataset (or ``$CKAM_BENCH_HORSESHOE_DATA``).
    dim : 2p + 2 (42 for the paper's data); checked against the data.
    start : default start (dim,); None gives the least-squares β, log λ = log τ = 0 and log σ
        = log of the residual sd (near the posterior bulk; the paper does not give its start).
    name : short name (the YAML name).
    """

    def __init__(self, data_file: str | None = None, dim: int = 42, start=None, name: str = "horseshoe"):
        path = _data_path(data_file)
        X, y, beta_true = _load(path)
        n, p = X.shape
        if int(dim) != 2 * p + 2:
            raise ValueError(f"dim must be {2 * p + 2} for a design with {p} predictors, got {dim}")
        if start is None:
            beta_ls, *_ = np.linalg.lstsq(X, y, rcond=None)
            resid_sd = float(np.std(y - X @ beta_ls)) or 1.0
            start = np.r_[beta_ls, np.zeros(p + 1), math.log(resid_sd)]
        super().__init__(2 * p + 2, start, None)
        self.name = str(name)
        self.n_obs, self.n_predictors = n, p
        self.data_path = str(path)
        self.true_coefficients = beta_true
        self.coefficient_slice = slice(0, p)
        self._digest = hashlib.sha256(X.tobytes() + y.tobytes()).hexdigest()
        self._xtx = np.ascontiguousarray(X.T @ X)
        self._xty = X.T @ y
        self._yty = float(y @ y)
        # −n/2 log 2π (likelihood), −p/2 log 2π (β prior), (p + 2) log(2/π) (half-Cauchys)
        self._log_const = -0.5 * (n + p) * _LOG_2PI + (p + 2) * math.log(2.0 / math.pi)
        self.box = np.tile([-10.0, 10.0], (self.dim, 1))

    def _params(self):
        return (self._xtx, self._xty, self._yty, float(self.n_obs), self._log_const)

    def regression_statistics(self) -> tuple[np.ndarray, np.ndarray, float, int]:
        """(XᵀX, Xᵀy, yᵀy, n): what the exact Gibbs sampler (:mod:`ckam_bench.samplers.gibbs`) needs."""
        return self._xtx, self._xty, self._yty, self.n_obs

    def _log_density(self, x: np.ndarray) -> float:
        return float(_horseshoe_log_density(np.ascontiguousarray(x, dtype=float), self._params()))

    def _grad_log_density(self, x: np.ndarray) -> np.ndarray:
        grad = np.empty(self.dim)
        _horseshoe_log_density_grad(np.ascontiguousarray(x, dtype=float), grad, self._params())
        return grad

    def log_density_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.n_density += 1
        self.n_grad += 1
        grad = np.empty(self.dim)
        logp = _horseshoe_log_density_grad(np.ascontiguousarray(x, dtype=float), grad, self._params())
        return float(logp), grad

    def jit_log_density(self):
        """The compiled ``_log_density`` (uncounted)."""
        return jit.bind_density(_horseshoe_log_density, *self._params())

    def jit_log_density_and_grad(self):
        """The compiled ``f(x, grad_out) -> log π(x)`` writing ∇log π(x) into ``grad_out``."""
        return bind_density_and_grad(_horseshoe_log_density_grad, *self._params())

    def describe(self) -> dict:
        return {**super().describe(), "n_obs": self.n_obs, "n_predictors": self.n_predictors,
                "data_sha256": self._digest[:16]}

    def ckam_true_coefficients(self) -> tuple | None:
        """(β_true, the β coordinates) when the data file holds ``beta_true``, else None."""
        if self.true_coefficients is None:
            return None
        return self.true_coefficients, self.coefficient_slice



def _data_path(override) -> Path:
    return data_file(DATA_NAME, override, DATA_ENV, key="data_file")


def _load(path: Path):
    try:
        with np.load(path, allow_pickle=False) as f:
            X = np.asarray(f["X"], float)
            y = np.asarray(f["y"], float)
            beta = np.asarray(f["beta_true"], float) if "beta_true" in f.files else None
    except (OSError, KeyError, ValueError) as err:
        raise DataFileError(f"data_file must be an .npz with arrays X and y, cannot read {str(path)!r}: {err}") from None
    if X.ndim != 2 or y.shape != (X.shape[0],) or X.shape[0] < 1 or X.shape[1] < 1:
        raise DataFileError(f"data_file must hold X of shape (n, p) and y of shape (n,), got {X.shape} and {y.shape}")
    if X.shape[0] > _MAX_OBS or X.shape[1] > _MAX_PREDICTORS:
        raise DataFileError(f"data_file must hold at most {_MAX_OBS} rows and {_MAX_PREDICTORS} predictors, got {X.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise DataFileError(f"data_file must hold finite X and y, {str(path)!r} does not")
    if beta is not None and beta.shape != (X.shape[1],):
        raise DataFileError(f"data_file must hold beta_true of shape ({X.shape[1]},), got {beta.shape}")
    return X, y, beta
