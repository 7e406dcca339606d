r"""Welford's running mean and variance, and Stan's windowed warm-up for a diagonal metric.

Welford (1962): with n draws seen, mean m and sum of squared deviations s,

.. math::
    n \leftarrow n + 1,\quad \delta = x - m,\quad m \leftarrow m + \delta/n,\quad
    s \leftarrow s + \delta\,(x - m),

so s/(n − 1) is the sample variance (ddof 1) of the draws, exactly as ``np.var(ddof=1)``.
Stan regularises the estimate towards 10⁻³ before using it as the inverse metric:
:math:`\hat v = \tfrac{n}{n+5} v + 10^{-3}\tfrac{5}{n+5}`.

Stan's warm-up windows (``windowed_adaptation``): an initial fast buffer (75 iterations,
step size only), slow windows of 25, 50, 100, … iterations ending with a metric update (the
last one stretched to the start of the terminal buffer), and a terminal fast buffer (50).
With fewer than init + base + term warm-up iterations the three shrink to 15 %, 75 % and 10 %
of the warm-up, as in Stan. :func:`window_ends` gives the 0-based iterations at whose end the
metric is updated (500 warm-up iterations → 99, 149, 249, 449).

State: ``[n, mean_1..mean_d, s_1..s_d]`` (size 2d + 1).
"""

from __future__ import annotations

import math

import numpy as np

from ckam_bench import jit


def init(dim: int) -> np.ndarray:
    return np.zeros(2 * dim + 1)


@jit.jitable
def reset(state):
    for i in range(state.shape[0]):
        state[i] = 0.0


@jit.jitable
def update(state, x):
    d = x.shape[0]
    state[0] += 1.0
    n = state[0]
    for j in range(d):
        delta = x[j] - state[1 + j]
        state[1 + j] += delta / n
        state[1 + d + j] += delta * (x[j] - state[1 + j])


@jit.jitable
def variance_into(state, out):
    """Sample variance (ddof 1) of the draws seen, into ``out`` (NaN with fewer than 2)."""
    d = out.shape[0]
    n = state[0]
    for j in range(d):
        out[j] = state[1 + d + j] / (n - 1.0) if n > 1.0 else math.nan


@jit.jitable
def regularised_variance_into(state, out):
    """Stan's regularised variance n/(n + 5)·v + 1e-3·5/(n + 5), into ``out``."""
    variance_into(state, out)
    n = state[0]
    for j in range(out.shape[0]):
        out[j] = (n / (n + 5.0)) * out[j] + 1e-3 * (5.0 / (n + 5.0))


def window_ends(num_warmup: int, init_buffer: int = 75, term_buffer: int = 50,
                base_window: int = 25) -> np.ndarray:
    """0-based iterations that end a slow window (Stan's ``windowed_adaptation``)."""
    num_warmup = int(num_warmup)
    if num_warmup < 20:
        return np.zeros(0, dtype=np.int64)
    if init_buffer + base_window + term_buffer > num_warmup:
        init_buffer = int(0.15 * num_warmup)
        term_buffer = int(0.1 * num_warmup)
        base_window = num_warmup - (init_buffer + term_buffer)
    last = num_warmup - term_buffer - 1
    ends, size = [], base_window
    end = init_buffer + base_window - 1
    while True:
        ends.append(end)
        if end >= last:
            break
        size *= 2
        nxt = end + size
        if nxt != last and nxt + 2 * size >= num_warmup - term_buffer:
            nxt = last
        end = min(nxt, last)
    return np.array(ends, dtype=np.int64)


def slow_window_start(num_warmup: int, init_buffer: int = 75, term_buffer: int = 50,
                      base_window: int = 25) -> int:
    """First iteration whose state enters the variance estimate (after the initial buffer)."""
    if int(num_warmup) < 20:
        return int(num_warmup)
    if init_buffer + base_window + term_buffer > num_warmup:
        return int(0.15 * num_warmup)
    return int(init_buffer)
