r"""Independence Metropolis–Hastings with a proposal learned in a finite warm-up (adaptive
independence sampler: Holden, Hauge & Holden 2009, "Adaptive independent Metropolis–Hastings",
Ann. Appl. Probab. 19; Giordani & Kohn 2010; here with the adaptation stopped after the warm-up).

**Warm-up** (iterations t < ``warmup``, not collected): random-walk Metropolis
y = x + s L_k ε, ε ~ N(0, I), s = 2.38/√d, with L_k L_kᵀ = Σ_k; Σ₀ = ``init_scale``² I, and
every ``refit_every`` iterations Σ_k becomes the sample covariance of the chain's states so far
(+ ``ridge`` I); the sums restart at t = ``warmup``/2, so the final fit forgets the start's
transient.

**Sampling** (t ≥ ``warmup``): μ and Σ are frozen at the warm-up states' mean and covariance,
and the proposal is the multivariate t with ν = ``df`` degrees of freedom,
y = μ + c L z √(ν/w), z ~ N(0, I), w ~ χ²_ν, i.e. q = t_ν(μ, c²Σ) (c = ``scale``), accepted iff

.. math::
    \log u < \log\pi(y) - \log\pi(x) + \log q(x) - \log q(y),\qquad
    \log q(x) = -\tfrac{\nu + d}{2}\log\big(1 + \delta(x)/\nu\big) + \text{const},\quad
    \delta(x) = |L^{-1}(x - \mu)|^2 / c^2.

A fixed Metropolis–Hastings kernel, so π is invariant (finite adaptation); uniformly ergodic
when π/q is bounded (the t's polynomial tails cover a posterior with Gaussian tails). The
current state's log density is stored and reused, never recomputed, so on a pseudo-marginal
target (an unbiased density estimate) the chain targets π exactly (Andrieu & Roberts 2009).
Near-independent draws when q is close to π: the reference sampler for low-dimensional,
expensive (pseudo-marginal) posteriors such as ``gp_glass``.

Random numbers: iteration i uses row i of one (n, d + ν + 1) standard-normal block drawn per
block (d for the direction, ν whose squares sum to w, the last z gives log u = log Φ(z)), so a
chain does not depend on how it is split into blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from scipy.special import log_ndtr

from ckam_bench.samplers.base import BlockRecorder, ChainState, Sampler, check_start
from ckam_bench.targets.base import Target


@dataclass
class IndependenceState(ChainState):
    """Chain state plus the warm-up's running sums and the proposal in use."""

    count: int = 0
    s1: np.ndarray | None = None
    """Σ of the states so far (warm-up), (d,)."""
    s2: np.ndarray | None = None
    """Σ of their outer products, (d, d)."""
    mean: np.ndarray | None = None
    """μ (the frozen proposal's centre)."""
    chol: np.ndarray | None = None
    """L, L Lᵀ = Σ_k."""
    log_q: float = 0.0
    """log q(x) of the current state (sampling phase, up to a constant)."""


class IndependenceMetropolis(Sampler):
    """A warm-up (random walk, then independence proposals, refitting μ and Σ), then the
    independence proposal t_ν(μ, c²Σ) with μ, Σ frozen (module docstring).

    Parameters
    ----------
    warmup : warm-up iterations (≥ 10; not collected): random walk for the first half,
        independence proposals for the second, refitting μ and Σ.
    refit_every : refit μ and Σ every this many warm-up iterations (≥ 1).
    df : ν, degrees of freedom of the t proposal (integer, 1 … 100).
    scale : c, scale of the t proposal relative to the warm-up covariance (> 0).
    init_scale : Σ₀ = init_scale² I (> 0).
    ridge : added to Σ's diagonal (≥ 0).
    """

    name = "imh"
    phases = ("warm-up", "sampling")

    def __init__(self, warmup: int = 10_000, refit_every: int = 500, df: int = 5, scale: float = 1.2,
                 init_scale: float = 1.0, ridge: float = 1e-8):
        self.warmup, self.refit_every, self.df = int(warmup), int(refit_every), int(df)
        self.scale, self.init_scale, self.ridge = float(scale), float(init_scale), float(ridge)
        if self.warmup < 10:
            raise ValueError(f"warmup must be >= 10, got {warmup}")
        if self.refit_every < 1:
            raise ValueError(f"refit_every must be >= 1, got {refit_every}")
        if not 1 <= self.df <= 100 or self.df != float(df):
            raise ValueError(f"df must be an integer in [1, 100], got {df}")
        for key, value in (("scale", self.scale), ("init_scale", self.init_scale)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{key} must be a finite number > 0, got {value}")
        if not (math.isfinite(self.ridge) and self.ridge >= 0):
            raise ValueError(f"ridge must be a finite number >= 0, got {ridge}")

    def describe(self) -> dict:
        return {"adaptation": "finite", "adapt_until": self.warmup, "proposal": f"t_{self.df} after warm-up"}

    def init(self, target: Target, x0, rng: np.random.Generator) -> IndependenceState:
        self.target, self.rng = target, rng
        x, logp = check_start(target, x0)
        d = target.dim
        return IndependenceState(x=x, logp=logp, t=0, count=1, s1=x.copy(), s2=np.outer(x, x),
                                 mean=x.copy(), chol=self.init_scale * np.eye(d))

    def _fit(self, state: IndependenceState) -> None:
        n = state.count
        if n < 2 * self.target.dim:  # too few states for a covariance: keep the previous one
            return
        mean = state.s1 / n
        cov = (state.s2 - n * np.outer(mean, mean)) / max(n - 1, 1)
        cov[np.diag_indices_from(cov)] += self.ridge
        try:
            state.chol = np.ascontiguousarray(cholesky(0.5 * (cov + cov.T), lower=True))  # C order, as copies
        except np.linalg.LinAlgError:  # a degenerate history: keep the previous factor
            return
        state.mean = mean

    def _log_q(self, delta: float) -> float:
        return -0.5 * (self.df + self.target.dim) * math.log1p(delta / self.df)

    def _delta(self, state: IndependenceState, x: np.ndarray) -> float:
        r = solve_triangular(state.chol, x - state.mean, lower=True) / self.scale
        return float(r @ r)

    def advance(self, state: IndependenceState, n: int):
        d, nu = self.target.dim, self.df
        state = replace(state, s1=state.s1.copy(), s2=state.s2.copy(), mean=state.mean.copy(),
                        chol=state.chol.copy())
        z = self.rng.standard_normal((n, d + nu + 1))
        log_u = log_ndtr(z[:, -1])
        rec = BlockRecorder(n, d, max_collect=n)
        start = min(max(self.warmup - state.t, 0), n)  # iterations before the sampling phase
        if start:
            self._warm_up(state, z[:start], log_u[:start], rec)
        if start < n:
            self._sample(state, z[start:], log_u[start:], rec, start)
        return state, rec.block()

    def _warm_up(self, state: IndependenceState, z, log_u, rec: BlockRecorder) -> None:
        """Warm-up iterations (t < warmup, not collected): the random walk, then independence
        proposals; μ and Σ refitted every ``refit_every`` iterations."""
        d, target = self.target.dim, self.target
        x, logp, t = state.x, state.logp, state.t
        s, half = 2.38 / math.sqrt(d), self.warmup // 2
        for i in range(z.shape[0]):
            if t < half:  # random walk with the covariance fitted so far
                y = x + s * (state.chol @ z[i, :d])
                log_q_y = 0.0
            else:  # independence proposal t_ν(μ, c²Σ)
                y, log_q_y = self._propose(state, z[i])
            logp_y = float(target.log_density(y))
            if math.isfinite(logp_y):
                r = logp_y - logp + (state.log_q - log_q_y if t >= half else 0.0)
            else:
                r = -math.inf
                rec.n_nonfinite += 1
            if log_u[i] < r:
                x, logp, state.log_q = y, logp_y, log_q_y
                rec.accepted[i] = True
            rec.accept_prob[i] = math.exp(min(r, 0.0)) if r > -math.inf else 0.0
            rec.step_size[i] = s if t < half else self.scale
            t += 1
            rec.phase[i] = 0
            state.count += 1
            state.s1 += x
            state.s2 += np.outer(x, x)
            if t % self.refit_every == 0 or t in (half, self.warmup):
                self._fit(state)
                if t == half:  # the independence phase refits on its own states only
                    state.count, state.s1, state.s2 = 0, np.zeros(d), np.zeros((d, d))
                if t >= half:  # log q(x) under the new proposal
                    state.log_q = self._log_q(self._delta(state, x))
            rec.logp[i] = logp
        state.x, state.logp, state.t = np.asarray(x, float), float(logp), t

    def _propose(self, state: IndependenceState, zi: np.ndarray) -> tuple[np.ndarray, float]:
        """y = μ + c √(ν/w) L z and log q(y), from one row (z, the ν normals of w, ·) of draws."""
        d, nu = self.target.dim, self.df
        direction, chi = zi[:d], zi[d:d + nu]
        w = float(chi @ chi)  # χ²_ν (row by row: block-size free)
        y = state.chol @ direction
        y *= self.scale * math.sqrt(nu / w)
        y += state.mean
        return y, self._log_q(nu * float(direction @ direction) / w)

    def _sample(self, state: IndependenceState, z, log_u, rec: BlockRecorder, offset: int) -> None:
        """Sampling iterations (μ and Σ frozen, every state collected) from row ``offset`` of
        the block's records. The proposals do not depend on the chain, so they are computed for
        the whole block first, with the same numbers as :meth:`_propose` row by row (numpy's
        stacked matmul runs the same product per row as ``@`` on one row; scalars as there);
        the loop only evaluates and accepts (a plain-numpy target runs here)."""
        d, nu, n = self.target.dim, self.df, z.shape[0]
        direction, chi = z[:, :d], z[:, d:d + nu]
        w = np.matmul(chi[:, None, :], chi[:, :, None])[:, 0, 0]
        proposals = np.matmul(state.chol[None], direction[:, :, None])[:, :, 0]
        proposals *= (self.scale * np.sqrt(nu / w))[:, None]
        proposals += state.mean
        deltas = (nu * np.matmul(direction[:, None, :], direction[:, :, None])[:, 0, 0] / w).tolist()
        log_q_ys = [self._log_q(delta) for delta in deltas]  # math.log1p, as in _propose
        log_density, isfinite, exp = self.target.log_density, math.isfinite, math.exp
        accepted, accept_prob, logps, log_u = rec.accepted, rec.accept_prob, rec.logp, log_u.tolist()
        x, logp, log_q, current = state.x, state.logp, state.log_q, -1
        source = np.empty(n, dtype=np.int64)  # proposal row of each collected state (-1: the start)
        n_nonfinite = 0
        for i in range(n):
            y = proposals[i]
            logp_y = float(log_density(y))
            if isfinite(logp_y):
                r = logp_y - logp + (log_q - log_q_ys[i])
            else:
                r = -math.inf
                n_nonfinite += 1
            j = offset + i
            if log_u[i] < r:
                logp, log_q, current = logp_y, log_q_ys[i], i
                accepted[j] = True
            accept_prob[j] = exp(min(r, 0.0)) if r > -math.inf else 0.0
            logps[j] = logp
            source[i] = current
        if current >= 0:
            x = proposals[current].copy()
        kept = rec.samples[rec.n_collected:rec.n_collected + n]
        kept[:] = proposals[np.maximum(source, 0)]
        kept[source < 0] = state.x
        rec.step_size[offset:] = self.scale
        rec.phase[offset:] = 1
        rec.n_collected += n
        rec.n_nonfinite += n_nonfinite
        state.x, state.logp, state.log_q, state.t = np.asarray(x, float), float(logp), log_q, state.t + n
