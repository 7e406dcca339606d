"""A twin of :func:`ckam_bench.posteriordb.mcycle.accel_gp` for building its reference: the same
posterior in coordinates without the ridge between each intercept and its GP's first basis
function.

The first basis function of each approximate GP is nearly constant over the data (``Xgp_1[:, 1]``
and ``Xgp_sigma_1[:, 1]`` lie in 0.67-0.82, mean 0.79), so an intercept and ``a_1 zgp[1]`` (``a_1``
the first entry of ``sqrt(spd_cov_exp_quad(slambda, sdgp, lscale))``) trade off along a ridge
whose direction turns with ``sdgp`` and ``lscale``: nutpie at target accept 0.99-0.995 left one
divergence in 80 000-100 000 draws there (Intercept_sigma at -5.5, 13 posterior sds below its
mean, held up by ``a_1 zgp_sigma_1[1]``). The twin samples, in place of each intercept, the level
``Intercept_level = Intercept + xbar a_1 zgp_1[1]`` (``xbar`` the mean of the first basis function
over the data), and likewise ``Intercept_sigma_level``; every other coordinate is the model's.

The map back, :func:`accel_gp_to_target`, is ``Intercept = Intercept_level - xbar a_1(sdgp_1,
lscale_1) zgp_1[1]`` (the other coordinates unchanged): a shear whose shift depends only on other
coordinates, so its Jacobian is triangular with unit diagonal, log |det| = 0
(:func:`accel_gp_log_jacobian`). The twin's density is the model's at the mapped point: the
intercepts' Student-t priors are added as potentials on the mapped intercepts, the levels
themselves are flat. tests/test_posteriordb_later.py checks log pi_twin(u) = log pi(T(u)) to 1e-8.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ckam_bench.posteriordb import load_data
from ckam_bench.posteriordb.mcycle import LSCALE_PRIOR

LEVELS = ((0, 1, 2, 3, "Xgp_1", "slambda_1"), (43, 44, 45, 46, "Xgp_sigma_1", "slambda_sigma_1"))
"""For each GP, the unconstrained coordinates of (intercept or level, log sdgp, log lscale,
zgp[1]) and its data keys (basis matrix, square roots of the eigenvalues)."""


def _amplitudes(slambda: np.ndarray, sdgp, lscale, exp=pt.exp, sqrt=pt.sqrt):
    """``sqrt(spd_cov_exp_quad(slambda, sdgp, lscale))`` for one dimension:
    ``sdgp (2 pi)^(1/4) sqrt(lscale) exp(-lscale^2 slambda^2 / 4)``."""
    s = slambda[:, 0]
    return sdgp * (2 * np.pi) ** 0.25 * sqrt(lscale) * exp(-0.25 * lscale**2 * s**2)


def accel_gp_twin() -> pm.Model:
    """accel_gp with each intercept replaced by its level (module docstring); value variables in
    the model's order, the levels where the intercepts are."""
    d = load_data("mcycle_gp")
    X, X_sigma = d["Xgp_1"].astype(np.float64), d["Xgp_sigma_1"].astype(np.float64)
    slambda, slambda_sigma = d["slambda_1"].astype(np.float64), d["slambda_sigma_1"].astype(np.float64)
    xbar, xbar_sigma = X[:, 0].mean(), X_sigma[:, 0].mean()
    with pm.Model() as model:
        level = pm.Flat("Intercept_level")
        sdgp = pm.HalfStudentT("sdgp_1", nu=3.0, sigma=36.0)
        lscale = pm.InverseGamma("lscale_1", alpha=LSCALE_PRIOR[0], beta=LSCALE_PRIOR[1])
        zgp = pm.Normal("zgp_1", 0.0, 1.0, shape=int(d["NBgp_1"]))
        level_sigma = pm.Flat("Intercept_sigma_level")
        sdgp_sigma = pm.HalfStudentT("sdgp_sigma_1", nu=3.0, sigma=36.0)
        lscale_sigma = pm.InverseGamma("lscale_sigma_1", alpha=LSCALE_PRIOR[0], beta=LSCALE_PRIOR[1])
        zgp_sigma = pm.Normal("zgp_sigma_1", 0.0, 1.0, shape=int(d["NBgp_sigma_1"]))
        a = _amplitudes(slambda, sdgp, lscale)
        a_sigma = _amplitudes(slambda_sigma, sdgp_sigma, lscale_sigma)
        intercept = level - xbar * a[0] * zgp[0]
        intercept_sigma = level_sigma - xbar_sigma * a_sigma[0] * zgp_sigma[0]
        pm.Potential("Intercept_prior", pm.logp(pm.StudentT.dist(nu=3.0, mu=-13.0, sigma=36.0), intercept))
        pm.Potential("Intercept_sigma_prior", pm.logp(pm.StudentT.dist(nu=3.0, mu=0.0, sigma=10.0), intercept_sigma))
        if not int(d["prior_only"]):
            pm.Normal("Y", intercept + pt.dot(X, a * zgp), pt.exp(intercept_sigma + pt.dot(X_sigma, a_sigma * zgp_sigma)),
                      observed=d["Y"].astype(np.float64))
    return model


def accel_gp_to_target(u: np.ndarray) -> np.ndarray:
    """The twin's unconstrained draws ``u`` (..., 66) in accel_gp's coordinates: each level minus
    ``xbar a_1 zgp[1]``."""
    d = load_data("mcycle_gp")
    out = np.array(u, dtype=np.float64, copy=True)
    for level, log_sdgp, log_lscale, z1, X, slambda in LEVELS:
        a1 = _amplitudes(d[slambda][:1].astype(np.float64), np.exp(out[..., log_sdgp]), np.exp(out[..., log_lscale]),
                         exp=np.exp, sqrt=np.sqrt)
        out[..., level] -= d[X][:, 0].mean() * a1 * out[..., z1]
    return out


def accel_gp_log_jacobian(u: np.ndarray) -> np.ndarray:
    """log |det| of :func:`accel_gp_to_target`'s Jacobian at each row: 0 (a shear)."""
    return np.zeros(np.shape(u)[:-1])
