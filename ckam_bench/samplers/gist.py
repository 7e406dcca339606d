r"""GIST: Gibbs self-tuning of HMC's trajectory length (Bou-Rabee, Carpenter & Marsden, "GIST:
Gibbs self-tuning for locally adaptive Hamiltonian Monte Carlo", arXiv:2404.15253, §5), as
BlackJAX 1.7 implements it (``blackjax.mcmc.composed.trajectory_length``).

The number of leapfrog steps L is a tuning parameter drawn afresh in every transition, given
the position θ and a fresh momentum ρ ~ N(0, M): the integrator runs forward from (θ, ρ) at the
fixed step size h until the no-U-turn condition first holds, after U(θ, ρ) steps; L is drawn
uniformly from [Lo, U], the lower end Lo shifted up by the path fraction ψ; (θ', ρ') is the
L-th state. The acceptance probability is the Hamiltonian's Metropolis ratio times the ratio of
the widths of the forward interval and of the interval the same rule gives from (θ', −ρ'),
and zero when L lies outside that reverse interval: the pair (state, L) is then a
Metropolis-within-Gibbs move on the extended space, so π is invariant for every h and M. Unlike
NUTS there is no tree: one forward rollout and one reverse rollout per transition.

The peer (:class:`BlackJAXGIST`): ``burn_in`` iterations of BlackJAX's NUTS with Stan's window
adaptation (the diagonal inverse metric and the dual-averaged step size, exactly as
:class:`~ckam_bench.samplers.peers.BlackJAXNUTS`, not collected), then GIST with that step size
and metric, fixed (finite adaptation): the GIST paper's experiments take h and M from Stan's
NUTS warm-up the same way. Gradients counted per iteration: the warm-up's NUTS integration
steps; a GIST transition's forward and reverse rollouts, U + U' (BlackJAX gathers the proposal
from the forward rollout's states, so L costs nothing more), each capped at ``max_steps``.
"""

from __future__ import annotations

import numpy as np

from ckam_bench.samplers.peers import BlackJAXNUTS
from ckam_bench.targets.base import Target

MAX_STEPS_LIMIT = 1 << 16
"""Largest ``max_steps``: BlackJAX keeps the whole forward rollout (``max_steps`` leapfrog states
of the target's dimension) in memory in each transition."""


class BlackJAXGIST(BlackJAXNUTS):
    """BlackJAX's GIST trajectory-length sampler after a NUTS warm-up (module docstring).

    step_size, burn_in, target_accept, max_depth : the warm-up's NUTS (:class:`BlackJAXNUTS`).
    path_fraction : ψ in [0, 1], the shift of the lower end of L's range (0.5: the paper's and
        BlackJAX's default, leapfrog counts comparable to NUTS).
    max_steps : the cap on each rollout (BlackJAX's ``max_num_steps``, default 1024).
    """

    name = "blackjax_gist"

    def __init__(self, step_size: float = 1.0, burn_in: int = 500, target_accept: float = 0.8,
                 max_depth: int = 10, path_fraction: float = 0.5, max_steps: int = 1024):
        super().__init__(step_size=step_size, burn_in=burn_in, target_accept=target_accept,
                         max_depth=max_depth)
        if isinstance(path_fraction, bool) or not isinstance(path_fraction, (int, float)) \
                or not 0.0 <= float(path_fraction) <= 1.0:
            raise ValueError(f"path_fraction must be a number in [0, 1], got {path_fraction!r}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) \
                or not 1 <= int(max_steps) <= MAX_STEPS_LIMIT:
            raise ValueError(f"max_steps must be an integer in [1, {MAX_STEPS_LIMIT}], got {max_steps!r}")
        self.path_fraction, self.max_steps = float(path_fraction), int(max_steps)

    def _settings(self) -> tuple:
        return (*super()._settings(), self.path_fraction, self.max_steps)

    def _functions(self, target: Target):
        import jax
        import jax.numpy as jnp
        from blackjax.mcmc.composed import trajectory_length
        from blackjax.mcmc.composed._seam import GISTState
        from blackjax.mcmc.hmc import HMCState

        init, nuts_step = super()._functions(target)
        log_density = target.jax_log_density()
        gist = trajectory_length.build_kernel(path_fraction=self.path_fraction,
                                              max_num_steps=self.max_steps)
        burn_in = self.burn_in

        def record(rec):  # one dtype per entry, whichever branch made it
            return {"x": rec["x"], "logp": jnp.asarray(rec["logp"], jnp.float64),
                    "accept_prob": jnp.asarray(rec["accept_prob"], jnp.float64),
                    "n_steps": jnp.asarray(rec["n_steps"], jnp.int64),
                    "diverging": jnp.asarray(rec["diverging"], bool),
                    "step_size": jnp.asarray(rec["step_size"], jnp.float64)}

        def warm(carry):
            carry, rec = nuts_step(carry)
            return carry, record(rec)

        def sample(carry):
            state, ss, mm, eps, imm, key, t = carry
            key, sub = jax.random.split(key)
            new, info = gist(sub, GISTState(*state), log_density, eps, imm)
            rec = {"x": new.position, "logp": new.logdensity, "accept_prob": info.acceptance_rate,
                   "n_steps": info.num_steps_to_uturn_forward + info.num_steps_to_uturn_reverse,
                   "diverging": info.is_divergent, "step_size": eps}
            return (HMCState(*new), ss, mm, eps, imm, key, t + 1), record(rec)

        def step(carry):
            return jax.lax.cond(carry[-1] < burn_in, warm, sample, carry)

        return init, step

    def describe(self) -> dict:
        return {**super().describe(), "path_fraction": self.path_fraction, "max_steps": self.max_steps}
