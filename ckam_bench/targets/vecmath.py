r"""exp and log1p that numba can vectorise, for the compiled densities' per-row loops.

numba compiles ``math.exp`` and ``math.log1p`` to calls into the C library, which LLVM cannot
vectorise (numba's SVML path needs Intel's library, absent here), so a loop over the rows of a
design evaluates them one at a time (~10 ns each); JAX's XLA inlines polynomial versions and
evaluates 4–8 rows per instruction. These are fdlibm's algorithms (``e_exp.c``, ``s_log1p.c``;
the C library's own; within 2 ulp of it, tested) written with arithmetic, ``floor`` and a bit cast only,
and without branches, so a loop that calls them vectorises:

.. math::
    e^{-a} = 2^k\, e^{r},\quad k = \lfloor -a/\ln 2 + \tfrac12 \rfloor,\ r = -a - k\ln 2
    \ (\ln 2 \text{ split in two, Cody–Waite}),\quad
    e^r = 1 - \Big(\big(r_{lo} - \tfrac{r\,c(r)}{2 - c(r)}\big) - r_{hi}\Big),\
    c(r) = r - r^2 P(r^2);

    \log(1 + e) = 2\,\mathrm{atanh}\tfrac{f}{2 + f} \text{ evaluated as }
    f - \big(\tfrac{f^2}{2} - s(\tfrac{f^2}{2} + R(s^2))\big),\ s = \tfrac{f}{2 + f},

with f = e, or f = (e − 1)/2 plus ln 2 when e > √2 − 1 (both exact in floating point, so no
exponent has to be extracted: the argument is in [0, 1]). P and R are fdlibm's minimax
polynomials. Their domains are what the densities need: ``exp_neg(a)`` for a ≥ 0 (a = |s|; 0
for a ≥ 708, where e^{-a} < 3.4e-308, near the smallest normal number, and for a = +∞), ``log1p_unit(e)`` for 0 ≤ e ≤ 1.
Tested against the C library over their domains (tests/test_targets.py: 2 ulp).
"""

from __future__ import annotations

import math

from ckam_bench import jit

# fdlibm e_exp.c
_P1, _P2, _P3 = 1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05
_P4, _P5 = -1.65339022054652515390e-06, 4.13813679705723846039e-08
_LN2_HI, _LN2_LO, _INV_LN2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.44269504088896338700e+00
# fdlibm s_log1p.c
_LP1, _LP2, _LP3 = 6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01
_LP4, _LP5, _LP6, _LP7 = (2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
                          1.479819860511658591e-01)
_SQRT2_M1 = 0.41421356237309503
_EXP_FLOOR = 708.0  # e^-708 = 3.3e-308, just above 2^-1022 (the smallest normal number)

FLAGS = dict(fastmath={"contract"}, error_model="numpy")
"""numba options of vectorisable loops: fused multiply-adds, no zero-division check (a branch
that stops vectorisation; numpy's rule gives ±inf or NaN instead)."""

SUM_FLAGS = dict(fastmath={"contract", "reassoc"}, error_model="numpy")
"""numba options of a density's loops: also reassociated sums, so that dot products and norms
vectorise (their rounding changes by a few ulp; no flag assumes finite values, so NaN and ±inf
propagate as before)."""


def vector_helper(fn):
    """Decorator for a target's compiled helper whose sums may vectorise (:data:`SUM_FLAGS`);
    the plain function without numba."""
    if not jit.AVAILABLE:
        return fn
    import numba

    try:
        return numba.njit(cache=True, **SUM_FLAGS)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(**SUM_FLAGS)(fn)


if jit.AVAILABLE:
    import numba
    import numpy as np
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def _double_from_bits(typingctx, bits):
        """The float64 whose IEEE bits are the int64 ``bits``."""

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.DoubleType())

        return types.float64(types.int64), codegen

    @numba.njit(inline="always", **FLAGS)
    def exp_neg(a):
        """e^{-a} for a ≥ 0 (0 for a ≥ 708, where e^{-a} < 3.4e-308)."""
        x = -a if a < _EXP_FLOOR else -_EXP_FLOOR
        k = math.floor(x * _INV_LN2 + 0.5)
        hi = x - k * _LN2_HI
        lo = k * _LN2_LO
        r = hi - lo
        t = r * r
        c = r - t * (_P1 + t * (_P2 + t * (_P3 + t * (_P4 + t * _P5))))
        y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
        y = y * _double_from_bits((np.int64(k) + 1023) << 52)
        return y if a < _EXP_FLOOR else 0.0

    @numba.njit(inline="always", **FLAGS)
    def log1p_unit(e):
        """log(1 + e) for 0 ≤ e ≤ 1."""
        big = e > _SQRT2_M1
        f = (e - 1.0) * 0.5 if big else e
        s = f / (2.0 + f)
        z = s * s
        R = z * (_LP1 + z * (_LP2 + z * (_LP3 + z * (_LP4 + z * (_LP5 + z * (_LP6 + z * _LP7))))))
        hfsq = 0.5 * f * f
        v = f - (hfsq - s * (hfsq + R))
        return _LN2_HI + (_LN2_LO + v) if big else v
