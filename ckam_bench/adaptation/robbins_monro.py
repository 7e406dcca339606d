r"""Robbins–Monro step size toward a target acceptance rate:

.. math::
    \log\sigma_{t+1} = \log\sigma_t + \gamma_t(\alpha_t - \alpha^*), \qquad
    \gamma_t = s\,(1 + t)^{-\kappa},

so σ grows when the chain accepts more often than α* and shrinks otherwise (closed form with
a constant α: :math:`\log\sigma_t = \log\sigma_0 + (\alpha - \alpha^*)\sum_{k<t}\gamma_k`).
MALA adapts σ this way during burn-in (α* = 0.574).
"""

from __future__ import annotations

import math

from ckam_bench import jit


@jit.jitable
def update(log_step, t, accept_prob, target, scale, kappa):
    """log σ after iteration ``t`` (0-based) with acceptance probability ``accept_prob``."""
    gain = scale * (1.0 + t) ** (-kappa)
    stat = accept_prob if accept_prob == accept_prob else 0.0
    return log_step + gain * (stat - target)


def final(log_step: float) -> float:
    return math.exp(log_step)
