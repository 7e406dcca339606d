"""posteriordb's two ODE models with reference draws: ``hudson_lynx_hare-lotka_volterra`` and
``one_comp_mm_elim_abs-one_comp_mm_elim_abs``; the translation rules are those of
:mod:`ckam_bench.posteriordb.models`, which re-exports both model functions.

Stan solves these ODEs with its adaptive integrators (``integrate_ode_rk45`` at rtol 1e-5, atol
1e-3; ``integrate_ode_bdf`` at its defaults, 1e-6). Here the solution and its derivatives with
respect to the parameters come from one PyTensor Op, :class:`ODESolution`: Dormand and Prince's
eighth-order Runge-Kutta method (:data:`TABLEAU`) on a fixed grid applied to the ODE augmented
with its forward sensitivity equations (dS/dt = J_y S + J_p), compiled with numba (and registered with
PyTensor's numba backend, so the harness's numba-compiled density calls it without leaving
compiled code). On a fixed grid the sensitivities computed this way are the exact derivatives
of the discrete solution, so the density and its gradient agree to rounding; the grid is fixed
per model (not per parameter value), so the density is a smooth function of the parameters.
The grids and their error against a tight adaptive solve (scipy's DOP853 / Radau at rtol 1e-13)
are in docs/posteriordb.md; both are far below what the identity checks on 10 000 draws see.
"""

from __future__ import annotations


import numba
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import log as log_transform
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ckam_bench import jit
from ckam_bench.data import array_sha256
from ckam_bench.posteriordb import load_data


@jit.helper
def _lotka_volterra_rhs(t, y, p, data, out):
    """y = (u, v, S) with S = d(u, v)/d(alpha, beta, gamma, delta, u0, v0) (2 x 6, row-major);
    du/dt = (alpha - beta v) u, dv/dt = (-gamma + delta u) v and dS/dt = J S + F_p."""
    alpha, beta, gamma, delta = p[0], p[1], p[2], p[3]
    u, v = y[0], y[1]
    out[0] = (alpha - beta * v) * u
    out[1] = (-gamma + delta * u) * v
    j00, j01, j10, j11 = alpha - beta * v, -beta * u, delta * v, -gamma + delta * u
    for c in range(6):
        s0, s1 = y[2 + c], y[8 + c]
        out[2 + c] = j00 * s0 + j01 * s1
        out[8 + c] = j10 * s0 + j11 * s1
    out[2] += u
    out[3] -= u * v
    out[8 + 2] -= v
    out[8 + 3] += u * v


@jit.helper
def _one_comp_rhs(t, y, p, data, out):
    """y = (C, S), S = dC/d(k_a, K_m, V_m); dC/dt = exp(-k_a t) D k_a / V - (V_m / V) C / (K_m + C)
    (the dose for t >= 0: Stan's ``if (t > 0)`` changes the right-hand side at t = 0 only, where
    the solution does not depend on it; the first stage at t = 0 takes the limit from the right)."""
    k_a, K_m, V_m = p[0], p[1], p[2]
    D, V = data[0], data[1]
    C = y[0]
    decay = np.exp(-k_a * t)
    denominator = K_m + C
    out[0] = decay * D * k_a / V - (V_m / V) * C / denominator
    dfdC = -(V_m / V) * K_m / denominator**2
    out[1] = dfdC * y[1] + decay * D / V * (1.0 - k_a * t)
    out[2] = dfdC * y[2] + (V_m / V) * C / denominator**2
    out[3] = dfdC * y[3] - C / (V * denominator)


LOTKA_VOLTERRA, ONE_COMP = 0, 1


@jit.helper
def _rhs(model, t, y, p, data, out):
    if model == LOTKA_VOLTERRA:
        _lotka_volterra_rhs(t, y, p, data, out)
    else:
        _one_comp_rhs(t, y, p, data, out)


@jit.helper
def _runge_kutta(model, y0, p, data, grid, keep, a, b, c):
    """The explicit Runge-Kutta method of tableau (a, b, c) for y' = rhs(t, y) (``model``'s
    right-hand side) on ``grid`` from y(grid[0]) = y0; the states at the grid nodes ``keep``
    (increasing indices), one row each."""
    n, stages = y0.size, b.size
    y = y0.copy()
    out = np.empty((keep.size, n))
    k = np.empty((stages, n))
    tmp = np.empty(n)
    j = 0
    while j < keep.size and keep[j] == 0:
        out[j] = y
        j += 1
    for i in range(grid.size - 1):
        t, h = grid[i], grid[i + 1] - grid[i]
        for s in range(stages):
            for e in range(n):
                acc = 0.0
                for r in range(s):
                    acc += a[s, r] * k[r, e]
                tmp[e] = y[e] + h * acc
            _rhs(model, t + c[s] * h, tmp, p, data, k[s])
        for e in range(n):
            acc = 0.0
            for s in range(stages):
                acc += b[s] * k[s, e]
            y[e] += h * acc
        while j < keep.size and keep[j] == i + 1:
            out[j] = y
            j += 1
    return out


@jit.helper
def _lotka_volterra_solve(p, data, grid, keep, a, b, c):
    """(z, S): the populations at the grid nodes ``keep`` and their derivatives by p = (alpha,
    beta, gamma, delta, u0, v0), by the Runge-Kutta tableau (a, b, c)."""
    y0 = np.zeros(14)
    y0[0], y0[1] = p[4], p[5]
    y0[2 + 4], y0[8 + 5] = 1.0, 1.0
    out = _runge_kutta(LOTKA_VOLTERRA, y0, p, data, grid, keep, a, b, c)
    return out[:, :2].copy(), out[:, 2:].copy().reshape((keep.size, 2, 6))


@jit.helper
def _one_comp_solve(p, data, grid, keep, a, b, c):
    """(C, S): the concentration at the grid nodes ``keep`` from C(t0) = 0 and its derivatives
    by p = (k_a, K_m, V_m); data = (D, V)."""
    out = _runge_kutta(ONE_COMP, np.zeros(4), p, data, grid, keep, a, b, c)
    return out[:, :1].copy(), out[:, 1:].copy().reshape((keep.size, 1, 3))


def _dop853_tableau():
    """The 12-stage, eighth-order Runge-Kutta method of Dormand & Prince (the solution of
    DOP853, Hairer, Norsett & Wanner; coefficients from scipy), used with fixed steps."""
    from scipy.integrate._ivp import dop853_coefficients as coefficients

    stages = coefficients.N_STAGES
    return tuple(np.ascontiguousarray(x, dtype=np.float64) for x in (
        coefficients.A[:stages, :stages], coefficients.B, coefficients.C[:stages]))


TABLEAU = _dop853_tableau()
_SOLVERS = {"lotka_volterra": _lotka_volterra_solve, "one_comp_mm_elim_abs": _one_comp_solve}


def time_grid(times, t0: float, step: float, first: float | None = None, ratio: float = 1.0):
    """A fixed grid from t0 through the observation ``times`` (each a node): steps of at most
    ``step``; with ``first``, steps growing geometrically from t0 + first by ``ratio`` until
    they reach ``step`` (for a solution whose time scale near t0 is the time since t0). Returns
    (grid, indices of ``times`` in it)."""
    nodes = [t0]
    if first is not None:
        t = t0 + first
        while (t - t0) * (ratio - 1.0) < step:
            nodes.append(t)
            t = t0 + (t - t0) * ratio
    points = np.unique(np.concatenate([[nodes[-1]], np.asarray(times, dtype=float)]))
    nodes.extend(points)
    for a, b in zip(points[:-1], points[1:]):
        n = int(np.ceil((b - a) / step - 1e-9))
        nodes.extend(a + (b - a) * np.arange(1, n + 1) / n)
    grid = np.unique(np.asarray(nodes, dtype=float))
    keep = np.searchsorted(grid, np.asarray(times, dtype=float))
    if not np.allclose(grid[keep], times, rtol=0, atol=1e-12):
        raise ValueError("the observation times are not grid nodes")
    return grid, keep.astype(np.int64)


class ODESolution(Op):
    """The solution of one of the ODE models at its observation times and its sensitivities:
    input the parameter vector p, outputs z (times, states) and S = dz/dp (times, states,
    parameters). Its gradient is ``tensordot(dL/dz, S)``; S has no gradient (no Hessians)."""

    __props__ = ("model", "key")

    def __init__(self, model: str, data: np.ndarray, grid: np.ndarray, keep: np.ndarray, n_states: int):
        self.model, self.n_states = model, n_states
        self.data, self.grid, self.keep = (np.ascontiguousarray(a) for a in (data, grid, keep))
        # the numba cache key of the compiled Op, and (an Op property) part of the target's id:
        # each array by its dtype, shape and bytes
        self.key = array_sha256([("data", self.data), ("grid", self.grid), ("keep", self.keep)])[:16]

    def make_node(self, params):
        params = pt.as_tensor_variable(params).astype("float64")
        return Apply(self, [params], [pt.tensor(dtype="float64", shape=(len(self.keep), self.n_states)),
                                      pt.tensor(dtype="float64", shape=(len(self.keep), self.n_states, None))])

    def perform(self, node, inputs, outputs):
        z, S = _SOLVERS[self.model](np.asarray(inputs[0], dtype=np.float64), self.data, self.grid, self.keep,
                                    *TABLEAU)
        outputs[0][0], outputs[1][0] = z, S

    def grad(self, inputs, output_grads):
        _, S = self(inputs[0])
        return [pt.tensordot(output_grads[0], S, axes=[[0, 1], [0, 1]])]


def _register_numba():
    """ODESolution in PyTensor's numba backend: the numba solver itself (no object mode)."""
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    @register_funcify_default_op_cache_key(ODESolution)
    def _funcify(op, node=None, **kwargs):
        solve, data, grid, keep = _SOLVERS[op.model], op.data, op.grid, op.keep
        a, b, c = TABLEAU

        @numba.njit
        def ode_solution(params):
            return solve(params, data, grid, keep, a, b, c)

        return ode_solution


_register_numba()

LOTKA_VOLTERRA_STEP = 0.2
"""step of the Lotka-Volterra grid (years; 100 steps)."""
ONE_COMP_GRID = {"step": 0.25, "first": 1e-8, "ratio": 1.25}
"""the one-compartment grid (123 nodes): geometric steps from 1e-8 days after the dose, by 1.25,
then 0.25 days. The elimination is stiff while C < K_m (rate up to V_m / (V K_m), 1e5 per day for
the posterior's smallest K_m) and C grows from 0 about linearly, so a step proportional to the
time since the dose stays stable and resolves the transient."""


def lotka_volterra() -> pm.Model:
    """``array[4] real<lower=0> theta; array[2] real<lower=0> z_init; array[2] real<lower=0> sigma``;
    ``z = integrate_ode_rk45(dz_dt, z_init, 0, ts, theta, ...)`` with ``du/dt = (alpha - beta v) u,
    dv/dt = (-gamma + delta u) v`` (theta = alpha, beta, gamma, delta); ``theta[{1, 3}] ~
    normal(1, 0.5); theta[{2, 4}] ~ normal(0.05, 0.05); sigma ~ lognormal(-1, 1); z_init ~
    lognormal(log(10), 1)``; for k = 1, 2: ``y_init[k] ~ lognormal(log(z_init[k]), sigma[k]);
    y[, k] ~ lognormal(log(z[, k]), sigma[k])``.

    theta's normal priors on (0, inf) are ``pm.Normal`` with the log transform (the truncated
    normal up to the constant Stan drops); z is :class:`ODESolution` on a grid of step
    :data:`LOTKA_VOLTERRA_STEP` through the observation years."""
    d = load_data("hudson_lynx_hare")
    grid, keep = time_grid(d["ts"], 0.0, LOTKA_VOLTERRA_STEP)
    solve = ODESolution("lotka_volterra", np.zeros(1), grid, keep, 2)
    with pm.Model() as model:
        theta = pm.Normal("theta", np.array([1.0, 0.05, 1.0, 0.05]), np.array([0.5, 0.05, 0.5, 0.05]),
                          shape=4, transform=log_transform)
        z_init = pm.LogNormal("z_init", np.log(10.0), 1.0, shape=2)
        sigma = pm.LogNormal("sigma", -1.0, 1.0, shape=2)
        z, _ = solve(pt.concatenate([theta, z_init]))
        pm.LogNormal("y_init", pt.log(z_init), sigma, observed=d["y_init"].astype(float))
        pm.LogNormal("y", pt.log(z), sigma[None, :], observed=d["y"].astype(float))
    return model


def one_comp_mm_elim_abs() -> pm.Model:
    """``real<lower=0> k_a, K_m, V_m, sigma``; ``C = integrate_ode_bdf(one_comp_mm_elim_abs, {0.0},
    t0, times, {k_a, K_m, V_m}, {D, V}, ...)`` with ``dC/dt = dose - (V_m / V) C / (K_m + C)``,
    ``dose = exp(-k_a t) D k_a / V`` for t > 0; ``k_a, K_m, V_m, sigma ~ cauchy(0, 1)``; ``C_hat[n]
    ~ lognormal(log(C[n, 1]), sigma)``.

    C is :class:`ODESolution` on the grid :data:`ONE_COMP_GRID` through the measurement times."""
    d = load_data("one_comp_mm_elim_abs")
    grid, keep = time_grid(d["times"], float(d["t0"]), **ONE_COMP_GRID)
    solve = ODESolution("one_comp_mm_elim_abs", np.array([float(d["D"]), float(d["V"])]), grid, keep, 1)
    with pm.Model() as model:
        k_a = pm.HalfCauchy("k_a", 1.0)
        K_m = pm.HalfCauchy("K_m", 1.0)
        V_m = pm.HalfCauchy("V_m", 1.0)
        sigma = pm.HalfCauchy("sigma", 1.0)
        C, _ = solve(pt.stack([k_a, K_m, V_m]))
        pm.LogNormal("C_hat", pt.log(C[:, 0]), sigma, observed=d["C_hat"].astype(float))
    return model
