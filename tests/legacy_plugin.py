"""A plugin written to the contract as documented a release ago (docs/extending.md before the
``ckam_`` hooks): the members that contract named, plus ordinary methods and attributes whose
names the harness once duck-typed — a Stan-style ``constrain`` returning an array, ``means``,
``weights`` and ``variances`` meaning something else, a ``label`` array. It must still run.
Used by tests/test_plugin_hooks.py through ``hydra.searchpath`` (tests/legacy_conf)."""

from __future__ import annotations

import math

import numpy as np

from ckam_bench.samplers.base import BlockRecorder, ChainState, Sampler, accept_prob, check_start
from ckam_bench.targets.base import Target


class StanStyleGaussian(Target):
    """N(μ, diag σ²) on the unconstrained scale, written as a Stan user would."""

    def __init__(self, dim: int = 2):
        super().__init__(dim, start=np.zeros(dim), box=np.tile([-6.0, 6.0], (dim, 1)))
        self.name = "stan_style_gaussian"
        self.mu = np.linspace(-1.0, 1.0, dim)
        self.sigma = np.linspace(0.5, 1.5, dim)
        # ordinary attributes of a user's class, not hooks of the harness
        self.means = np.array([1.0, 2.0, 3.0])  # e.g. per-group means of the data
        self.weights = "inverse-variance"
        self.variances = None
        self.label = np.array([0, 1, 1, 0])  # e.g. class labels of the data

    def _log_density(self, x):
        z = (np.asarray(x, float) - self.mu) / self.sigma
        return -0.5 * float(z @ z)

    def _grad_log_density(self, x):
        return -(np.asarray(x, float) - self.mu) / self.sigma**2

    def constrain(self, x):
        """Stan's ``constrain_pars``: the constrained parameter vector (an array, not a dict)."""
        return np.exp(np.asarray(x, float))

    def sample(self, n, rng):
        return self.mu + self.sigma * rng.standard_normal((int(n), self.dim))

    @property
    def mean(self):
        return self.mu.copy()

    @property
    def variance(self):
        return self.sigma**2


class PlainRandomWalk(Sampler):
    """Random-walk Metropolis written with last release's sampler contract."""

    name = "plain_rw"

    def __init__(self, scale: float = 1.0):
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be > 0, got {scale}")
        self.scale = float(scale)

    def init(self, target, x0, rng):
        x, logp = check_start(target, x0)
        self.target, self.rng = target, rng
        return ChainState(x=x, logp=logp)

    def advance(self, state, n):
        rec = BlockRecorder(n, self.target.dim)
        for i in range(n):
            y = state.x + self.scale * self.rng.standard_normal(self.target.dim)
            logp_y = self.target.log_density(y)
            alpha = accept_prob(logp_y - state.logp)
            rec.accept_prob[i] = alpha
            if self.rng.uniform() < alpha:
                state.x, state.logp = y, logp_y
                rec.accepted[i] = True
            state.t += 1
            rec.logp[i] = state.logp
            rec.collect(state.x)
        return state, rec.block()
