r"""Exact Gibbs sampling of horseshoe linear regression (Makalic & Schmidt 2016, *A simple
sampler for the horseshoe estimator*), the reference sampler of the ``horseshoe`` target.

Each half-Cauchy scale s ~ C⁺(0, 1) is written as an inverse-gamma mixture,
s² | v ~ IG(½, 1/v), v ~ IG(½, 1), which makes every full conditional of the model of
:mod:`ckam_bench.targets.horseshoe` (β_j ~ N(0, λ_j²τ²), y ~ N(Xβ, σ²I)) a standard
distribution. One iteration updates, in this order,

.. math::
    \beta &\sim N(Q^{-1}X^\top y/\sigma^2,\ Q^{-1}),\quad Q = X^\top X/\sigma^2 + \mathrm{diag}(\lambda^2\tau^2)^{-1}\\
    \sigma^2 &\sim IG\big(\tfrac{n+1}{2},\ \tfrac12\|y - X\beta\|^2 + 1/a\big),\qquad
    a \sim IG(1,\ 1 + 1/\sigma^2)\\
    \lambda_j^2 &\sim IG\big(1,\ 1/\nu_j + \beta_j^2/(2\tau^2)\big),\qquad
    \nu_j \sim IG(1,\ 1 + 1/\lambda_j^2)\\
    \tau^2 &\sim IG\big(\tfrac{p+1}{2},\ 1/\xi + \textstyle\sum_j \beta_j^2/(2\lambda_j^2)\big),\qquad
    \xi \sim IG(1,\ 1 + 1/\tau^2),

each an exact draw from its full conditional, so the sweep leaves the joint posterior of
(θ, ν, ξ, a) invariant and θ = (β, log λ, log τ, log σ) — the target's coordinates — is
distributed as the target. Nothing is accepted or rejected (acceptance 1) and nothing needs
tuning, which is why the certified horseshoe reference is built with it: the target's funnels
(β_j against log λ_j for the null coefficients) stall gradient samplers, not a Gibbs sweep.
Its cost is one p × p Cholesky factorisation per iteration (O(p³), p = 20 here); a sweep
evaluates no density. The log density of the start and of the last state of each block is
evaluated for the chain state (its log π, which the runner checks) and counted like every
evaluation, so ``n_density`` is the number of blocks plus one.

The auxiliaries (ν, ξ, a) are part of the chain's state (saved for resume); ``init`` draws
them from their conditionals given the start. Random numbers: per iteration p standard
normals, 2p + 2 standard exponentials, one Gamma((p+1)/2) and one Gamma((n+1)/2) variate
(IG(α, b) = b / Gamma(α, 1)), each the inverse CDF of one uniform of the block's array from the
run's generator, so a chain does not depend on block sizes. Compiled with numba (``_gibbs_sweeps``; the same source runs as Python with
``CKAM_BENCH_JIT=0`` or without numba).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaincinv, ndtri

from ckam_bench import jit
from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start
from ckam_bench.targets.base import Target
from ckam_bench.targets.horseshoe import residual_sum_of_squares

_TINY = 1e-300  # floor of a variance, so 1/variance stays finite


@jit.helper
def _gibbs_sweeps(x, nu, aux, xtx, xty, yty, n_obs, normals, expo, g_tau, g_sigma, samples):
    """len(normals) Gibbs sweeps in place on x = (β, log λ, log τ, log σ), nu (p,) and
    aux = (ξ, a); writes every state into ``samples``."""
    p = xty.shape[0]
    q = np.empty((p, p))
    w = np.empty(p)
    for it in range(normals.shape[0]):
        tau2 = math.exp(2.0 * x[2 * p])
        sig2 = math.exp(2.0 * x[2 * p + 1])
        # β | λ, τ, σ: Q = XᵀX/σ² + diag(1/(λ²τ²)), mean Q⁻¹Xᵀy/σ²; β = L⁻ᵀ(L⁻¹Xᵀy/σ² + z)
        for i in range(p):
            for j in range(p):
                q[i, j] = xtx[i, j] / sig2
            q[i, i] += 1.0 / max(math.exp(2.0 * x[p + i]) * tau2, _TINY)
        chol = np.linalg.cholesky(q)
        for i in range(p):  # forward: L w = Xᵀy/σ²
            s = xty[i] / sig2
            for k in range(i):
                s -= chol[i, k] * w[k]
            w[i] = s / chol[i, i]
        for i in range(p):
            w[i] += normals[it, i]
        for i in range(p - 1, -1, -1):  # backward: Lᵀ β = w + z
            s = w[i]
            for k in range(i + 1, p):
                s -= chol[k, i] * x[k]
            x[i] = s / chol[i, i]
        # σ² | β, a and a | σ²
        rss = residual_sum_of_squares(x, xtx, xty, yty, w)  # w: scratch for Xᵀ(y − Xβ)
        sig2 = (0.5 * rss + 1.0 / aux[1]) / g_sigma[it]
        aux[1] = (1.0 + 1.0 / sig2) / expo[it, 2 * p + 1]
        # λ² | β, τ, ν and ν | λ²; Σ β²/λ² for τ
        ssq = 0.0
        for j in range(p):
            lam2 = (1.0 / nu[j] + x[j] * x[j] / (2.0 * tau2)) / expo[it, j]
            lam2 = max(lam2, _TINY)
            nu[j] = (1.0 + 1.0 / lam2) / expo[it, p + j]
            x[p + j] = 0.5 * math.log(lam2)
            ssq += x[j] * x[j] / lam2
        # τ² | β, λ, ξ and ξ | τ²
        tau2 = max((1.0 / aux[0] + 0.5 * ssq) / g_tau[it], _TINY)
        aux[0] = (1.0 + 1.0 / tau2) / expo[it, 2 * p]
        x[2 * p] = 0.5 * math.log(tau2)
        x[2 * p + 1] = 0.5 * math.log(sig2)
        for j in range(x.shape[0]):
            samples[it, j] = x[j]


def sweeps():
    """The compiled sweeps, or their Python source when compiled loops are off (:mod:`ckam_bench.jit`)."""
    return jit.as_enabled(_gibbs_sweeps)


def draw_randoms(rng: np.random.Generator, n: int, p: int, n_obs: float):
    """The random numbers of n sweeps: normals (n, p), exponentials (n, 2p + 2), and the
    Gamma((p+1)/2) and Gamma((n_obs+1)/2) variates (n,) of τ² and σ².

    All come from one (n, 3p + 4) array of uniforms in (0, 1), by the inverse CDF of each
    distribution, so row i serves sweep i and splitting a block leaves every draw unchanged."""
    u = rng.random((n, 3 * p + 4)) + 2.0 ** -54  # (0, 1): never 0
    normals = ndtri(u[:, :p])
    expo = -np.log1p(-u[:, p:3 * p + 2])
    g_tau = gammaincinv(0.5 * (p + 1), u[:, 3 * p + 2])
    g_sigma = gammaincinv(0.5 * (n_obs + 1), u[:, 3 * p + 3])
    return normals, expo, g_tau, g_sigma


def auxiliaries_given(x: np.ndarray, p: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(ν (p,), (ξ, a)) drawn from their conditionals given θ = x: IG(1, 1 + 1/s²) for each scale."""
    lam2, tau2, sig2 = np.exp(2.0 * x[p:2 * p]), math.exp(2.0 * x[2 * p]), math.exp(2.0 * x[2 * p + 1])
    e = rng.standard_exponential(p + 2)
    nu = (1.0 + 1.0 / lam2) / e[:p]
    aux = np.array([(1.0 + 1.0 / tau2) / e[p], (1.0 + 1.0 / sig2) / e[p + 1]])
    return nu, aux


@dataclass(kw_only=True)
class GibbsState(ChainState):
    """θ in ``x`` plus the mixing variables of the half-Cauchy scales."""

    nu: np.ndarray
    """ν_j of the local scales λ_j (p,)."""
    aux: np.ndarray
    """(ξ, a): the mixing variables of τ and σ."""


class HorseshoeGibbs(Sampler):
    """Makalic–Schmidt Gibbs sampler for targets that expose ``regression_statistics()``
    (XᵀX, Xᵀy, yᵀy, n) of a horseshoe linear regression (the ``horseshoe`` target).

    No hyperparameters: every update is an exact conditional draw (acceptance 1). Every state
    is collected.
    """

    name = "horseshoe_gibbs"
    phases = ("sampling",)

    def describe(self) -> dict:
        return {"adaptation": "none", "kind": "exact Gibbs (conditionally conjugate)"}

    def skip(self, target: Target) -> tuple[bool, str]:
        if not callable(getattr(target, "regression_statistics", None)):
            return True, (f"horseshoe_gibbs samples horseshoe regression posteriors only; target "
                          f"{target.name!r} has no regression_statistics()")
        return False, ""

    def warm_up(self, target: Target) -> None:
        xtx, xty, yty, n_obs = target.regression_statistics()
        p = xty.shape[0]
        x = np.zeros(2 * p + 2)
        sweeps()(x, np.ones(p), np.ones(2), xtx, xty, yty, n_obs, np.zeros((1, p)),
                      np.ones((1, 2 * p + 2)), np.ones(1), np.ones(1), np.empty((1, 2 * p + 2)))

    def init(self, target: Target, x0, rng: np.random.Generator) -> GibbsState:
        skipped, why = self.skip(target)
        if skipped:
            raise ValueError(why)
        self.target, self.rng = target, rng
        self._stats = target.regression_statistics()
        self._sweeps = sweeps()
        x, logp = check_start(target, x0)
        nu, aux = auxiliaries_given(x, self._stats[1].shape[0], rng)
        return GibbsState(x=x, logp=logp, t=0, nu=nu, aux=aux)

    def advance(self, state: GibbsState, n: int):
        xtx, xty, yty, n_obs = self._stats
        p = xty.shape[0]
        normals, expo, g_tau, g_sigma = draw_randoms(self.rng, n, p, n_obs)
        x, nu, aux = state.x.copy(), state.nu.copy(), state.aux.copy()
        samples = np.empty((n, x.shape[0]))
        self._sweeps(x, nu, aux, xtx, xty, yty, float(n_obs), normals, expo, g_tau, g_sigma, samples)
        if self._sweeps is _gibbs_sweeps and jit.AVAILABLE:
            jit.ran_compiled()
        block = Block(samples=samples, accepted=np.ones(n, dtype=bool), accept_prob=np.ones(n),
                      phase=np.zeros(n, dtype=np.int8), step_size=np.full(n, np.nan),
                      noise=np.full(n, np.nan))
        logp = float(self.target.log_density(x))  # the state's log π (counted)
        return GibbsState(x=x, logp=logp, t=state.t + n, nu=nu, aux=aux), block
