r"""Dual averaging of the log step size (Nesterov 2009; Hoffman & Gelman 2014, Algorithm 5).

With a_t the acceptance statistic of iteration t and δ the target:

.. math::
    \bar H_t = (1 - \tfrac{1}{t + t_0})\bar H_{t-1} + \tfrac{1}{t + t_0}(\delta - a_t)
             = \tfrac{1}{t + t_0}\textstyle\sum_{k\le t}(\delta - a_k),

    \log\varepsilon_t = \mu - \tfrac{\sqrt t}{\gamma}\bar H_t, \qquad
    \log\bar\varepsilon_t = t^{-\kappa}\log\varepsilon_t + (1 - t^{-\kappa})\log\bar\varepsilon_{t-1},

μ = log(10 ε₀). The step used while adapting is ε_t; after adaptation the averaged
:math:`\bar\varepsilon_t` (Stan's defaults γ = 0.05, t₀ = 10, κ = 0.75).

State: ``[mu, hbar, log_step, log_step_bar, t]``.
"""

from __future__ import annotations

import math

import numpy as np

from ckam_bench import jit

SIZE = 5


@jit.jitable
def restart(state, step):
    """(Re)start at step size ``step``: μ = log(10 ε), H̄ = 0, t = 0."""
    state[0] = math.log(10.0 * step)
    state[1] = 0.0
    state[2] = math.log(step)
    state[3] = 0.0
    state[4] = 0.0


def init(step: float) -> np.ndarray:
    state = np.zeros(SIZE)
    restart(state, step)
    return state


@jit.jitable
def update(state, accept_stat, target, gamma, t0, kappa):
    """One dual-averaging step with acceptance statistic ``accept_stat``; returns the new ε_t."""
    state[4] += 1.0
    t = state[4]
    w = 1.0 / (t + t0)
    stat = accept_stat if accept_stat == accept_stat else 0.0  # NaN counts as 0
    state[1] = (1.0 - w) * state[1] + w * (target - stat)
    state[2] = state[0] - math.sqrt(t) / gamma * state[1]
    eta = t ** (-kappa)
    state[3] = eta * state[2] + (1.0 - eta) * state[3]
    return math.exp(state[2])


@jit.jitable
def update_bounded(state, accept_stat, target, gamma, t0, kappa, max_log_step):
    """:func:`update` with log ε_t capped at ``max_log_step`` before it enters the average
    (nuts-rs caps ε at π); returns the new ε_t."""
    state[4] += 1.0
    t = state[4]
    w = 1.0 / (t + t0)
    stat = accept_stat if accept_stat == accept_stat else 0.0  # NaN counts as 0
    state[1] = (1.0 - w) * state[1] + w * (target - stat)
    state[2] = min(state[0] - math.sqrt(t) / gamma * state[1], max_log_step)
    eta = t ** (-kappa)
    state[3] = eta * state[2] + (1.0 - eta) * state[3]
    return math.exp(state[2])


@jit.jitable
def final(state):
    """The averaged step size exp(log ε̄) used once adaptation has stopped."""
    return math.exp(state[3])
