r"""The NUTS tree's bookkeeping (:mod:`ckam_bench.samplers.nuts`) on the rows of one work array:
the generalised U-turn criterion, the checks of every binary subtree ending at a leaf and the
two checks across the halves of a merge (Stan ≥ 2.26, nuts-rs), and the row operations between.

Rows are passed by index, never as views, and the helpers are inlined into the compiled tree
(:func:`ckam_bench.jit.jitable`'s ``inline``): an array view passed to a compiled call takes and
drops a reference count (~7 ns), and these checks run several times per leapfrog step. The U-turn
dot products are loops summed in index order, in Python too (:func:`_ordered_sum`), so the
compiled and Python trees decide alike, and the decision does not depend on the CPU's BLAS kernel.
"""

from __future__ import annotations

import numpy as np

from ckam_bench import jit
from ckam_bench.samplers import nuts_metric
from ckam_bench.samplers.hamiltonian import _compiled_as

# The rows of the tree's work array (:func:`_nuts_work`): the trajectory's left and right ends,
# the end being extended, the new subtree's candidate, the momentum sums of the trajectory and of
# the new subtree, a row of zeros; then per level k = 0 … max_depth (n = max_depth + 1 rows each)
# the checkpoints of :func:`_subtrees_turn`.
(_XL, _PL, _GL, _XR, _PR, _GR, _XE, _PE, _GE, _XC, _GC, _RHO, _RHO_SUB, _ZERO) = range(14)
_CK = 14


def _turns_loop(work, a, b, rho, extra, rho0, minv):
    dot_a = dot_b = 0.0
    for j in range(work.shape[1]):
        r = (work[rho, j] + work[extra, j]) - work[rho0, j]
        dot_a += _weight(minv, j) * work[a, j] * r
        dot_b += _weight(minv, j) * work[b, j] * r
    return not (dot_a > 0.0 and dot_b > 0.0)


def _ordered_sum(v) -> float:
    """Σ vⱼ added in index order, as a compiled loop adds (numpy and BLAS sum pairwise)."""
    total = 0.0
    for value in v.tolist():
        total += value
    return total


def _weight(minv, j):
    """M⁻¹'s j-th diagonal entry in the tree's coordinates: minv[j], or 1 for a low-rank metric
    (the tree runs in y with M⁻¹ = I)."""
    return minv[j] if minv.ndim == 1 else 1.0

if jit.AVAILABLE:
    from numba.extending import overload

    @overload(_weight, inline="always")
    def _weight_compiled(minv, j):
        if minv.ndim == 1:
            return lambda minv, j: minv[j]
        return lambda minv, j: 1.0


@_compiled_as(_turns_loop)
def _turns(work, a, b, rho, extra, rho0, minv):
    """The generalised no-U-turn criterion fails (the trajectory turns back) for the momenta in
    rows a and b of ``work`` and the momentum sum ρ = rho + extra − rho0 (rows; extra = _ZERO for
    none): p♯_a·ρ ≤ 0 or p♯_b·ρ ≤ 0 with p♯ = M⁻¹p, each dot product summed in index order in
    Python and compiled code alike (a BLAS dot costs ~50 ns a call from compiled code, more than
    the loop at small d, and its summation order depends on the CPU's kernel)."""
    w = minv if minv.ndim == 1 else minv[nuts_metric.ONES]
    r = (work[rho] + work[extra]) - work[rho0]
    return not (_ordered_sum(w * work[a] * r) > 0.0 and _ordered_sum(w * work[b] * r) > 0.0)


def _copy_row_loop(work, dst, src):
    for j in range(work.shape[1]):
        work[dst, j] = work[src, j]


@_compiled_as(_copy_row_loop)
def _copy_row(work, dst, src):
    """Row ``dst`` of ``work`` ← row ``src``."""
    work[dst] = work[src]


def _add_row_loop(work, dst, src):
    for j in range(work.shape[1]):
        work[dst, j] += work[src, j]


@_compiled_as(_add_row_loop)
def _add_row(work, dst, src):
    """Row ``dst`` of ``work`` += row ``src``."""
    work[dst] += work[src]


@jit.jitable(inline=True)
def _copy_end(work, dst, src):
    """The trajectory end (x, p, g: three consecutive rows) at row ``src`` into row ``dst``."""
    for r in range(3):
        _copy_row(work, dst + r, src + r)


def _fill_loop(v, value):
    for j in range(v.shape[0]):
        v[j] = value


@_compiled_as(_fill_loop)
def _fill(v, value):
    """v[:] = value."""
    v[:] = value


@jit.jitable(inline=True)
def _levels(work):
    """The first rows of the checkpoints in ``work``: at each open subtree's first leaf its
    momentum (row ck_p + k) and the partial ρ before it (ck_rho + k); the momentum at the last
    leaf of the latest complete subtree of each size (ck_e + k), k = 0 … max_depth."""
    n = (work.shape[0] - _CK) // 3
    return _CK, _CK + n, _CK + 2 * n


@jit.jitable(inline=True)
def _merge_turns(work, far, near, first, last, minv):
    """Stan's (≥ 2.26) two extra checks when a subtree joins a trajectory of its size, the two
    halves of one binary tree: the old half's far end with the new half's first leaf, over the
    old half's ρ plus that leaf's momentum; the old half's near end with the new half's last
    leaf, over the new half's ρ plus the near end's momentum (rows of ``work``). Without them a
    trajectory on a well-preconditioned target can circle its orbit for several doublings unseen
    (an isotropic Gaussian at ε ≈ 0.8 reached depth 7 in 39 % of transitions)."""
    return (_turns(work, far, first, _RHO, first, _ZERO, minv)
            or _turns(work, near, last, _RHO_SUB, near, _ZERO, minv))


@jit.jitable(inline=True)
def _subtrees_turn(work, leaf, depth, minv):
    """After leaf ``leaf`` (momentum in row _PE, ρ of the new subtree so far in _RHO_SUB) of a
    subtree of 2^depth leaves: does any binary subtree ending there turn (its own check and,
    from 4 leaves, the two across its halves, :func:`_merge_turns`)? Then records the leaf's
    momentum as the last leaf of the subtrees it ends (those smaller than the whole: only they
    are a later check's left half)."""
    ck_p, ck_rho, ck_e = _levels(work)
    for k in range(1, depth + 1):
        if ((leaf + 1) & ((1 << k) - 1)) == 0:  # 2^k divides leaf + 1
            if _turns(work, ck_p + k, _PE, _RHO_SUB, _ZERO, ck_rho + k, minv):
                return True
            # halves: [ck_p[k] … ck_e[k−1]] with ρ = ck_rho[k−1] − ck_rho[k], [ck_p[k−1] … pe]
            if k > 1 and (_turns(work, ck_p + k, ck_p + k - 1, ck_rho + k - 1, ck_p + k - 1, ck_rho + k, minv)
                          or _turns(work, ck_e + k - 1, _PE, _RHO_SUB, ck_e + k - 1, ck_rho + k - 1, minv)):
                return True
    for k in range(1, depth):
        if ((leaf + 1) & ((1 << k) - 1)) == 0:
            _copy_row(work, ck_e + k, _PE)
    return False


@jit.jitable(inline=True)
def _open_subtrees(work, leaf, depth):
    """Before leaf ``leaf`` enters ρ of the new subtree: at the first leaf of each subtree it
    opens, record its momentum and the partial ρ."""
    ck_p, ck_rho, _ = _levels(work)
    for k in range(1, depth + 1):
        if (leaf & ((1 << k) - 1)) == 0:
            _copy_row(work, ck_p + k, _PE)
            _copy_row(work, ck_rho + k, _RHO_SUB)


@jit.jitable
def _nuts_work(max_depth, d):
    """The tree's work array: the rows _XL … _ZERO, then 3 (max_depth + 1) checkpoint rows."""
    return np.empty((_CK + 3 * (max_depth + 1), d))
