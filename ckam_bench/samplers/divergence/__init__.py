r"""Divergence-minimisation (DM) sampler and Scout MCMC (Dharamshi, Ngo & Rosenthal; SPEC §3).

**DM** (:class:`DivergenceMinimisation`, Algorithm 1) — a random walk whose Cholesky factor L
follows one stochastic gradient-ascent step per iteration on a lower bound of
log[exp(−β KL(q‖π)) · E_q α]:

.. math::
    y = x + L\varepsilon_1,\qquad \text{accept iff } \log u < \log\pi(y) - \log\pi(x),

    G = \beta\,\mathrm{diag}(1/L_{ii}) + \frac1J\sum_{j=1}^J c_j\,\nabla\log\pi(y_j)\,\varepsilon_j^\top
    \ \text{(lower triangle)},\quad y_j = x + L\varepsilon_j,\quad
    c_j = \beta + \mathbb 1[\log\pi(y_j) < \log\pi(x)],

    L \leftarrow L + \gamma_t\,\mathrm{clip}(G, \pm h),

with the proposal's own ε₁ among the J draws, G computed at the current x before the accept
step, and L₀ = σI (σ = 2). Everything is in log space (the authors' code divides by raw
densities and underflows); a draw whose log density or gradient is not finite contributes no
term (the authors skip zero densities) and counts as a rejection: while L adapts (γ_t > 0), m
such draws out of J multiply L by 0.99^(m/J) (:data:`~ckam_bench.samplers.base.NONFINITE_SHRINK`),
since the entropy term alone would grow L. Costs J density and J gradient evaluations per
iteration (both counted; the scout's step below calls the same density-and-gradient function, so
an adaptive Scout iteration counts J + 1 of each). Defaults β = 0.2, γ = 0.002, h = 10/γ₀, J = 10.

Validity. With a constant γ (the paper) the adaptation never stops, and the chain is not
guaranteed to target π; measured from exact draws of banana_dm (32 chains × 8000 iterations),
its E[x₂] drifts from −8 to −12.8 and Var[x₂] from 166 to 251 (docs/papers/divergence.md). That is the paper preset
(``conf/preset/dm_*/dm.yaml``, marked non-diminishing). ``rate`` takes any schedule: the default
config adapts with γ = 0.002 during the first 5000 iterations only (``Window``) and collects
after them (``burnin``), a fixed random walk N(x, LLᵀ) from then on (finite adaptation); a
decaying rate (``PowerDecay``) is diminishing adaptation. ``gamma_shrink`` < 1 multiplies γ by
that factor at every rejection (the paper's horseshoe variant, "the step size shrinks upon
rejection"; our reading: γ is the step size of Algorithm 1's inputs).

**Finite DM** (:class:`FiniteDivergenceMinimisation`, Algorithm 2) — DM for the first F
iterations, keeping a uniform random subset S of ``bank_size`` pairs (x_t, L_t) (reservoir
sampling, so memory stays bounded); then a non-adaptive Metropolis–Hastings chain with

.. math::
    q(y\mid x) = N(y; x, L_{n(x)}L_{n(x)}^\top),\qquad
    \alpha = \min\Big\{1, \frac{\pi(y)\,q(x\mid y)}{\pi(x)\,q(y\mid x)}\Big\},

where n(z) is the stored state nearest to z: the reverse density q(x | y) uses the factor
nearest to **y** (the authors' ``DMfinite`` uses the one nearest to x, which makes the ratio
wrong; ``reverse_factor="current"`` reproduces that bug for tests and comparison only). The
nearest neighbour comes from a ``scipy.spatial.cKDTree`` built once over S, flattened into
arrays and searched by a compiled depth-first search (exact, O(log |S|) per query). The
phase-two chain is a fixed MH kernel, hence π-invariant (finite adaptation).

**Scout MCMC** (:class:`Scout`, :class:`FiniteScout`, Algorithms 3–4) — the DM (or finite DM)
chain x on π plus a scout chain s on π^τ (τ = 0.1) with random-walk proposals
N(s, σ_s I) (σ_s = 9 is a *variance*, as in the paper's N(s_t, σ_s 𝟙) and the authors' code),
and after the moves of iteration t with t ≡ 0 (mod k) (k = 20) a swap of x and s accepted with

.. math::
    \alpha_{swap} = \min\Big\{1, \frac{\pi(s)\,\pi(x)^\tau}{\pi(x)\,\pi(s)^\tau}\Big\}
    = \min\{1, \exp[(1-\tau)(\log\pi(s) - \log\pi(x))]\},

the tempering swap for π ⊗ π^τ (the paper prints garbled versions). Only the main chain is
collected. After a swap the main chain keeps its factor L (Scout) or looks up n(x) (finite).

Random numbers: each iteration consumes one row of a pre-drawn (n, w) standard-normal block
(J·d steps, the accept uniform log Φ(z), then the scout's d steps and two uniforms, and one
uniform for the reservoir), so a chain does not depend on how the runner splits it into blocks.

Compiled loops: with numba, the loops are compiled for the target's
``jit_log_density_and_grad()`` (adaptive phases) and ``jit_log_density()`` (MH phase);
``CKAM_BENCH_JIT=0`` or a target without them runs the same source as Python.

Modules: :mod:`~ckam_bench.samplers.divergence.dm` (:class:`DMState`, DM and finite DM),
:mod:`~ckam_bench.samplers.divergence.scout` (Scout and finite Scout),
:mod:`~ckam_bench.samplers.divergence.loops` (the per-iteration loops, Python and compiled),
:mod:`~ckam_bench.samplers.divergence.nearest` (the k-d tree search of the finite variants).
"""

from ckam_bench.samplers.divergence.dm import (
    MAX_BANK_FLOATS,
    MAX_DRAWS,
    DivergenceMinimisation,
    DMState,
    FiniteDivergenceMinimisation,
)
from ckam_bench.samplers.divergence.nearest import flatten_tree
from ckam_bench.samplers.divergence.scout import FiniteScout, Scout

__all__ = ["DivergenceMinimisation", "FiniteDivergenceMinimisation", "Scout", "FiniteScout", "DMState",
           "flatten_tree", "MAX_BANK_FLOATS", "MAX_DRAWS"]
