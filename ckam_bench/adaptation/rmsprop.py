r"""RMSprop ascent steps (Tieleman & Hinton 2012) as used by Titsias & Dellaportas (2019):

.. math::
    G \leftarrow \rho G + (1 - \rho) g^2, \qquad
    \theta \leftarrow \theta + \frac{\eta}{1 + \sqrt G}\, g

elementwise, with decay ρ = 0.9 and G₀ = 0 (the paper's "1 +" in the denominator replaces
the usual small ε). The moment G is updated *before* the step, as the paper writes it.
"""

from __future__ import annotations

import numpy as np

from ckam_bench import jit


@jit.jitable
def step(theta, moment, grad, eta, decay):
    """In place: moment ← decay·moment + (1 − decay)·grad², theta += eta/(1 + √moment)·grad
    (arrays of one shape; a lower-triangular L stays lower triangular when its gradient is)."""
    moment *= decay
    moment += (1.0 - decay) * grad * grad
    theta += eta / (1.0 + np.sqrt(moment)) * grad
