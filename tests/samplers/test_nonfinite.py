"""A non-finite proposal is a rejection with acceptance probability 0 in every adaptation rule:
started with a step far too large for a target whose log density is -inf (or NaN) outside a
box, every adaptive sampler shrinks its step (gad*: the factor L; MALA: σ; HMC, NUTS: ε; DM,
Scout: L), on the Python and the compiled loops."""

import math

import numba
import numpy as np
import pytest

from ckam_bench.samplers.divergence import DivergenceMinimisation, Scout
from ckam_bench.samplers.gradient_adaptive import GadMALAExact, GadMALAFast, GadRWM
from ckam_bench.samplers.hamiltonian import HMC, MALA
from ckam_bench.samplers.nuts import NUTS
from ckam_bench.targets.base import Target


def _box_density(outside):
    @numba.njit
    def density_and_grad(x, out):
        inside = True
        for j in range(x.shape[0]):
            inside = inside and abs(x[j]) < 1.0
        for j in range(x.shape[0]):
            out[j] = -x[j] if inside else outside
        return -0.5 * np.dot(x, x) if inside else outside

    @numba.njit
    def hessian(x, out):
        out[:, :] = 0.0
        for j in range(x.shape[0]):
            out[j, j] = -1.0
        return 0.0

    return density_and_grad, hessian


class Box(Target):
    """N(0, I) restricted to the box |x_j| < 1: log density ``outside`` (-inf or NaN) beyond it."""

    name = "box"

    def __init__(self, outside: float, dim: int = 2):
        super().__init__(dim)
        self.outside = outside
        self._jitted = _box_density(outside)

    def _log_density(self, x):
        return float(self._jitted[0](np.ascontiguousarray(x, dtype=float), np.empty(self.dim)))

    def _grad_log_density(self, x):
        out = np.empty(self.dim)
        self._jitted[0](np.ascontiguousarray(x, dtype=float), out)
        return out

    def _hessian_log_density(self, x):
        return -np.eye(self.dim)

    def jit_log_density_and_grad(self):
        return self._jitted[0]

    def jit_hessian_log_density(self):
        return self._jitted[1]


BURN = 400
SAMPLERS = {
    "gadrwm": (lambda: GadRWM(burn_in=BURN, init_scale=20.0), 20.0 / math.sqrt(2)),
    "gadmala_fast": (lambda: GadMALAFast(burn_in=BURN, init_scale=20.0), 20.0 / math.sqrt(2)),
    "gadmala_exact": (lambda: GadMALAExact(burn_in=BURN, init_scale=20.0), 20.0 / math.sqrt(2)),
    "mala": (lambda: MALA(step_size=20.0, burn_in=BURN), 20.0),
    "hmc": (lambda: HMC(step_size=20.0, burn_in=BURN, n_leapfrog=3), 20.0),
    "nuts": (lambda: NUTS(step_size=20.0, burn_in=BURN, max_depth=4, init_buffer=20, term_buffer=20,
                          base_window=20), 20.0),
    "dm": (lambda: DivergenceMinimisation(rate=0.05, init_scale=20.0, n_draws=4, burnin=BURN), 20.0),
    "scout": (lambda: Scout(rate=0.05, init_scale=20.0, n_draws=4, burnin=BURN), 20.0),
}


@pytest.mark.parametrize("loop", ["compiled", "python"])
@pytest.mark.parametrize("outside", [-math.inf, math.nan])
@pytest.mark.parametrize("name", SAMPLERS)
def test_step_shrinks_after_nonfinite_proposals(name, outside, loop, monkeypatch):
    monkeypatch.setenv("CKAM_BENCH_JIT", "1" if loop == "compiled" else "0")
    make, initial = SAMPLERS[name]
    sampler, target = make(), Box(outside)
    state = sampler.init(target, None, np.random.default_rng(0))
    state, block = sampler.advance(state, BURN + 50)
    adapted = block.step_size[BURN - 1]
    assert adapted < 0.2 * initial, f"{name}: step {initial:.3g} -> {adapted:.3g}"
    if name != "nuts":  # NUTS reports a non-finite leaf as a divergence
        assert block.n_nonfinite > 0
    assert block.accepted[BURN:].any(), f"{name} still rejects everything after adaptation"
