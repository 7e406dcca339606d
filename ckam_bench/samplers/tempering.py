r"""Parallel tempering (PT; Swendsen & Wang 1986, Geyer 1991), as compared in the
divergence-minimisation paper (k = 2, 5 or 10 chains).

k chains x₁…x_k target π^{β_j} on a ladder of inverse temperatures 1 = β₁ > … > β_k = τ
(τ = 0.1 as the Scout chain; ``ladder="linear"`` spaces the β_j evenly as the authors' code,
``"geometric"`` evenly in log β). Each iteration:

1. every chain makes a random-walk Metropolis move, y = x_j + σ_j ε, accepted iff
   log u < β_j (log π(y) − log π(x_j));
2. one neighbouring pair (j, j + 1), chosen uniformly, proposes to exchange its states,
   accepted with

   .. math::
       \alpha_{j,j+1} = \min\{1, \exp[(\beta_j - \beta_{j+1})(\log\pi(x_{j+1}) - \log\pi(x_j))]\}.

Both moves leave ∏_j π^{β_j}(x_j) invariant, so chain 1 targets π; only chain 1 (β = 1) is
collected. (The authors' ``PTk`` swaps any two chains; neighbour swaps are the standard choice
and are what SPEC §3 asks for.) ``Block.accepted`` is chain 1's RW acceptance and
``Block.n_nonfinite`` counts chain 1's non-finite proposals (the runner's health flags are about
the collected chain: the hot chains of a healthy run on a target cut to a half-space propose
outside it at most iterations); the trace gets ``swap_acceptance`` (per neighbouring pair, a
list column), ``swap_acceptance_mean`` and ``n_nonfinite_all_chains`` (every chain's).

Cost: k density evaluations per iteration (counted). Random numbers: row i of a pre-drawn
(n, k(d + 1) + 2) normal block (k steps, k accept uniforms, the pair, the swap uniform), so a
chain does not depend on the block sizes.

Compiled loop: with numba and a target that has a compiled density, ``_pt_kernel`` runs a
block. For a plain numpy target the Python loop :func:`_pt_python_loop` calls the density for
the k proposals of an iteration and does everything else — the accept steps, the swap, the
records, the next k proposals — in one call of :func:`_pt_step`, compiled in ``warm_up``
(``CKAM_BENCH_JIT=0``: its Python function): the kernel's chain to the bit (tested), at ~1.1×
the cost of the density evaluations alone (k = 5, d = 10, a ~2 µs numpy density), as
:mod:`ckam_bench.samplers.adaptive` does for AM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ckam_bench import jit
from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start
from ckam_bench.targets.base import Target

MAX_CHAINS = 1000


def _pt_loop(log_density, X, logps, betas, steps, normals):
    """n PT iterations in place on X (k, d) and logps (k,). Returns (samples of chain 1,
    chain 1's log ratios, chain 1's accept flags, chain 1's log π, swaps tried per pair,
    swaps accepted per pair, chain 1's non-finite proposals, every chain's). Compiled only (:data:`_pt_kernel`); the Python loop is
    :func:`_pt_python_loop`, whose step :func:`_pt_step` does the same operations in the same order
    (its own copy: sharing helpers with it slowed this kernel by 2–25 %)."""
    n = normals.shape[0]
    k, d = X.shape
    samples = np.empty((n, d))
    log_ratio = np.empty(n)
    accepted = np.zeros(n, dtype=np.bool_)
    logp_out = np.empty(n)
    tried = np.zeros(max(k - 1, 1))
    swapped = np.zeros(max(k - 1, 1))
    y = np.empty(d)
    n_nonfinite = 0
    n_nonfinite_all = 0
    for i in range(n):
        row = normals[i]
        for j in range(k):
            for a in range(d):
                y[a] = X[j, a] + steps[j] * row[j * d + a]
            lp = log_density(y)
            if math.isfinite(lp):
                r = betas[j] * (lp - logps[j])
                acc = jit.log_uniform(row[k * d + j]) < r
                if acc:
                    for a in range(d):
                        X[j, a] = y[a]
                    logps[j] = lp
            else:
                r = -math.inf
                acc = False
                n_nonfinite_all += 1
                if j == 0:
                    n_nonfinite += 1
            if j == 0:
                log_ratio[i] = r
                accepted[i] = acc
        if k > 1:
            u = 0.5 * math.erfc(-row[k * d + k] / math.sqrt(2.0))
            p = min(int(u * (k - 1)), k - 2)
            tried[p] += 1.0
            if jit.log_uniform(row[k * d + k + 1]) < (betas[p] - betas[p + 1]) * (logps[p + 1] - logps[p]):
                swapped[p] += 1.0
                for a in range(d):
                    tmp = X[p, a]
                    X[p, a] = X[p + 1, a]
                    X[p + 1, a] = tmp
                tmp = logps[p]
                logps[p] = logps[p + 1]
                logps[p + 1] = tmp
        logp_out[i] = logps[0]
        for a in range(d):
            samples[i, a] = X[0, a]
    return samples, log_ratio, accepted, logp_out, tried, swapped, n_nonfinite, n_nonfinite_all


_pt_kernel = jit.kernel(jit.A2, jit.A1, jit.A1, jit.A1, jit.A2)(_pt_loop)


@jit.helper
def _pt_step(i, work, normals, record):
    """What :func:`_pt_python_loop` does around the k density calls of iteration i − 1 (their
    values in ``work``): that iteration's accept steps and swap, recorded in row i − 1 of
    ``record`` (chain 1's state, log ratio, accepted, log π) when i ≥ 1, then iteration i's
    k proposals (i < n) — one compiled call. ``work`` holds the chains X (k·d), their proposals
    Y (k·d), log π of X and of Y, β, σ (k each), then the tally: non-finite proposals (all
    chains), swaps tried and accepted per pair (k − 1 each), chain 1's non-finite proposals."""
    n, d = normals.shape[0], record.shape[1] - 3
    k = (normals.shape[1] - 2) // (d + 1)
    kd = k * d
    X, Y = work[:kd].reshape((k, d)), work[kd:2 * kd].reshape((k, d))
    logps, logps_y = work[2 * kd:2 * kd + k], work[2 * kd + k:2 * kd + 2 * k]
    betas, steps = work[2 * kd + 2 * k:2 * kd + 3 * k], work[2 * kd + 3 * k:2 * kd + 4 * k]
    tally = work[2 * kd + 4 * k:]
    if i > 0:
        m = i - 1
        row = normals[m]
        for j in range(k):
            lp = logps_y[j]
            if math.isfinite(lp):
                r = betas[j] * (lp - logps[j])
                acc = jit.log_uniform(row[kd + j]) < r
                if acc:
                    for a in range(d):
                        X[j, a] = Y[j, a]
                    logps[j] = lp
            else:
                r = -math.inf
                acc = False
                tally[0] += 1.0
                if j == 0:
                    tally[2 * k - 1] += 1.0
            if j == 0:
                record[m, d], record[m, d + 1] = r, acc
        if k > 1:
            u = 0.5 * math.erfc(-row[kd + k] / math.sqrt(2.0))
            p = min(int(u * (k - 1)), k - 2)
            tally[1 + p] += 1.0
            if jit.log_uniform(row[kd + k + 1]) < (betas[p] - betas[p + 1]) * (logps[p + 1] - logps[p]):
                tally[k + p] += 1.0
                for a in range(d):
                    tmp = X[p, a]
                    X[p, a] = X[p + 1, a]
                    X[p + 1, a] = tmp
                tmp = logps[p]
                logps[p] = logps[p + 1]
                logps[p + 1] = tmp
        record[m, d + 2] = logps[0]
        for a in range(d):
            record[m, a] = X[0, a]
    if i < n:
        row = normals[i]
        for j in range(k):
            for a in range(d):
                Y[j, a] = X[j, a] + steps[j] * row[j * d + a]


def _pt_python_loop(log_density, X, logps, betas, steps, normals, step):
    """:func:`_pt_loop` for a target without a compiled density: the Python loop calls its
    numpy log density for the k proposals of each iteration, and everything else is ``step``,
    :func:`_pt_step` — compiled (one call per iteration) when numba is there and switched on,
    else its Python function. The same chain as the kernel's, to the bit. The step's arrays
    are packed (``work``, ``record``): a compiled call costs ~60 ns per array argument."""
    n = normals.shape[0]
    k, d = X.shape
    kd = k * d
    work = np.zeros(2 * kd + 6 * k)
    work[:kd], work[2 * kd:2 * kd + k] = X.ravel(), logps
    work[2 * kd + 2 * k:2 * kd + 3 * k], work[2 * kd + 3 * k:2 * kd + 4 * k] = betas, steps
    record = np.empty((n, d + 3))
    ys = [work[kd + j * d:kd + (j + 1) * d] for j in range(k)]
    logps_y = work[2 * kd + k:2 * kd + 2 * k]
    step(0, work, normals, record)
    for i in range(1, n + 1):
        for j, y in enumerate(ys):
            logps_y[j] = log_density(y)
        step(i, work, normals, record)
    X[:], logps[:] = work[:kd].reshape(k, d), work[2 * kd:2 * kd + k]
    tally = work[2 * kd + 4 * k:]
    return (np.ascontiguousarray(record[:, :d]), record[:, d].copy(), record[:, d + 1] == 1.0,
            record[:, d + 2].copy(), tally[1:k].copy(), tally[k:2 * k - 1].copy(), int(tally[2 * k - 1]),
            int(tally[0]))


@dataclass(kw_only=True)
class TemperingState(ChainState):
    """``x``/``logp`` are chain 1's; ``chains`` (k, d) and ``chain_logp`` (k,) hold all chains."""

    chains: np.ndarray
    chain_logp: np.ndarray
    swaps_tried: np.ndarray
    """Swap attempts per neighbouring pair (k − 1,)."""
    swaps_accepted: np.ndarray
    nonfinite_all: int = 0
    """Non-finite proposals of every chain so far (``Block.n_nonfinite`` counts chain 1's)."""


class ParallelTempering(Sampler):
    """Parallel tempering with random-walk moves and neighbour swaps (module docstring).

    n_chains : k ≥ 2 (5; the paper also runs 2 and 10).
    tau : β_k ∈ (0, 1), the hottest chain's inverse temperature (0.1).
    step_size : σ > 0 of the RW moves, one number for every chain (the authors: 1) or a list of k.
    ladder : "linear" (β evenly spaced, the authors') or "geometric".
    burnin : iterations whose states are not collected (≥ 0).
    warmup : random-walk steps every tempered chain (β < 1) makes alone on its π^β before the
        first iteration, so swaps start from chains near equilibrium (0: all chains start at
        x₀, as the authors'; counted).
    """

    name = "pt"
    phases = ("burnin", "sampling")

    def __init__(self, n_chains: int = 5, tau: float = 0.1, step_size=1.0, ladder: str = "linear", burnin: int = 0,
                 warmup: int = 0):
        if isinstance(n_chains, bool) or int(n_chains) != n_chains or not 2 <= int(n_chains) <= MAX_CHAINS:
            raise ValueError(f"n_chains must be an integer in [2, {MAX_CHAINS}], got {n_chains!r}")
        self.n_chains = int(n_chains)
        tau = float(tau)
        if not 0.0 < tau < 1.0:
            raise ValueError(f"tau must be in (0, 1), got {tau}")
        self.tau = tau
        steps = np.broadcast_to(np.asarray(step_size, float), (self.n_chains,)) if np.ndim(step_size) == 0 \
            else np.asarray(step_size, float)
        if steps.shape != (self.n_chains,) or not np.all(np.isfinite(steps)) or np.any(steps <= 0):
            raise ValueError(f"step_size must be a number > 0 or {self.n_chains} numbers > 0, got {step_size!r}")
        self.steps = np.ascontiguousarray(steps, dtype=float)
        if ladder == "linear":
            betas = np.linspace(1.0, tau, self.n_chains)
        elif ladder == "geometric":
            betas = np.geomspace(1.0, tau, self.n_chains)
        else:
            raise ValueError(f"ladder must be 'linear' or 'geometric', got {ladder!r}")
        self.ladder = ladder
        self.betas = np.ascontiguousarray(betas)
        burnin_ok = not isinstance(burnin, bool) and int(burnin) == burnin and int(burnin) >= 0
        if not burnin_ok:
            raise ValueError(f"burnin must be an integer >= 0, got {burnin!r}")
        self.burnin = int(burnin)
        if isinstance(warmup, bool) or int(warmup) != warmup or int(warmup) < 0:
            raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
        self.warmup = int(warmup)

    def describe(self) -> dict:
        return {"adaptation": "none", "n_chains": self.n_chains, "inverse_temperatures": self.betas.tolist(),
                "collects": "the beta = 1 chain only"}

    def warm_up(self, target: Target) -> None:
        density = jit.compiled_log_density(target)
        X = np.tile(np.asarray(target.start, float), (self.n_chains, 1))
        args = (X, np.zeros(self.n_chains), self.betas, self.steps, np.zeros((1, self.n_chains * (target.dim + 1) + 2)))
        if density is not None:
            _pt_kernel(density, *args)
        elif jit.enabled():  # the Python loop's compiled step, on a constant density
            _pt_python_loop(lambda y: 0.0, *args, _pt_step)

    def init(self, target: Target, x0, rng: np.random.Generator) -> TemperingState:
        self.target = target
        self.rng = rng
        self._density = jit.compiled_log_density(target)
        self._step = jit.as_enabled(_pt_step)
        x, logp = check_start(target, x0)
        k, d = self.n_chains, target.dim
        chains, chain_logp = np.tile(x, (k, 1)), np.full(k, logp)
        for j in range(1, k if self.warmup else 1):  # each tempered chain alone (k = 1: no swaps)
            chain, chain_lp = chains[j : j + 1].copy(), chain_logp[j : j + 1].copy()
            normals = rng.standard_normal((self.warmup, d + 3))
            self._loop(chain, chain_lp, self.betas[j : j + 1].copy(), self.steps[j : j + 1].copy(), normals)
            chains[j], chain_logp[j] = chain[0], chain_lp[0]
            target.n_density += self.warmup
        return TemperingState(x=x, logp=logp, t=0, chains=chains, chain_logp=chain_logp,
                              swaps_tried=np.zeros(k - 1), swaps_accepted=np.zeros(k - 1))

    def _loop(self, X, logps, betas, steps, normals):
        """The kernel with a compiled density, else the Python loop with its step."""
        if self._density is None:
            return _pt_python_loop(self.target._log_density, X, logps, betas, steps, normals, self._step)
        return _pt_kernel(self._density, X, logps, betas, steps, normals)

    def trace_columns(self, state: TemperingState) -> dict:
        with np.errstate(invalid="ignore", divide="ignore"):
            rates = state.swaps_accepted / state.swaps_tried
        total = state.swaps_tried.sum()
        return {"swap_acceptance": rates,
                "swap_acceptance_mean": float(state.swaps_accepted.sum() / total) if total else math.nan,
                "n_nonfinite_all_chains": float(state.nonfinite_all)}

    def advance(self, state: TemperingState, n: int):
        k, d = self.n_chains, self.target.dim
        normals = self.rng.standard_normal((n, k * (d + 1) + 2))
        X = np.array(state.chains, dtype=float)
        logps = np.array(state.chain_logp, dtype=float)
        out = self._loop(X, logps, self.betas, self.steps, normals)
        samples, log_ratio, accepted, logp_out, tried, swapped, n_nonfinite, n_nonfinite_all = out
        self.target.n_density += k * n
        t = np.arange(state.t, state.t + n)
        block = Block(
            samples=samples[t >= self.burnin],
            accepted=accepted,
            accept_prob=np.exp(np.minimum(log_ratio, 0.0)),
            phase=(t >= self.burnin).astype(np.int8),
            step_size=np.full(n, self.steps[0]),
            noise=np.full(n, np.nan),
            n_nonfinite=int(n_nonfinite),
            logp=logp_out,
        )
        new = TemperingState(x=X[0].copy(), logp=float(logps[0]), t=state.t + n, chains=X, chain_logp=logps,
                             swaps_tried=state.swaps_tried + tried[: k - 1],
                             swaps_accepted=state.swaps_accepted + swapped[: k - 1],
                             nonfinite_all=state.nonfinite_all + int(n_nonfinite_all))
        return new, block
