"""A deliberately wrong sampler for the SBC test that must fail (loaded by the harness as
``sampler._target_=sbc_samplers.PoweredRatioWalk`` with this folder on PYTHONPATH)."""

import numpy as np

from ckam_bench.samplers.base import Block, ChainState
from ckam_bench.samplers.random_walk import RandomWalk, metropolis_walk, predraw


class PoweredRatioWalk(RandomWalk):
    """Random-walk Metropolis with a wrong acceptance ratio: accepts with
    min(1, (π(y)/π(x))⁴) (log u divided by 4), so its chain targets π⁴, not π: on a Gaussian
    posterior, half its standard deviation."""

    def advance(self, state: ChainState, n: int):
        eps, log_u = predraw(self.rng, n, self.target.dim)
        x, logp, samples, log_ratio, n_nonfinite = metropolis_walk(
            self.target, self._density, state.x, state.logp, self.step_size * eps, 0.25 * log_u)
        block = Block(samples=samples, accepted=0.25 * log_u < log_ratio,
                      accept_prob=np.exp(np.minimum(4.0 * log_ratio, 0.0)),
                      phase=np.zeros(n, dtype=np.int8), step_size=np.full(n, self.step_size),
                      noise=np.full(n, np.nan), n_nonfinite=n_nonfinite)
        return ChainState(x=x, logp=float(logp), t=state.t + n), block
