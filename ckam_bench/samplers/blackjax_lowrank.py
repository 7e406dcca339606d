r"""BlackJAX's NUTS with BlackJAX's newer mass-matrix adaptations, advanced one iteration at a time.

* :class:`BlackJAXNUTSLowRank` — ``blackjax.window_adaptation_low_rank`` (BlackJAX 1.7.1):
  Seyboldt et al. (2026)'s low-rank modified mass matrix M⁻¹ = diag(σ)(I + U(Λ − I)Uᵀ)diag(σ),
  fitted by minimising the sample Fisher divergence between the draws and the gradients of each
  slow window (rank ≤ ``max_rank``, eigenvalues in [1/cutoff, cutoff] masked to 1, regulariser
  γ; nutpie's estimator), the step size by dual averaging, in Stan's window schedule (or
  nutpie's growing windows). As BlackJAX's ``run`` does, the chain restarts at the fitted
  optimal translation μ* = x̄ + σ² ⊙ ᾱ after the last warm-up iteration (``restart``; one
  more gradient, counted).
* :class:`BlackJAXNUTSFisher` — ``blackjax.staged_adaptation(nuts, metric="fisher_diag")``:
  the Fisher-divergence diagonal σᵢ² = √(Var xᵢ / Var ∂ᵢ log π) per slow window, same schedule
  and dual averaging; no restart.

Both assemble BlackJAX's own pieces the way its ``run`` does — the staged-adaptation engine
(``staged_adaptation._make_engine``: dual averaging, the schedule's fast/slow/window-end
dispatch), the metric core (``_build_fisher_low_rank_core``, ``lookup_recipe("fisher_diag")``)
and the schedule — but advance one harness iteration at a time inside the blocks of
:class:`~ckam_bench.samplers.peers._JaxPeer`, so warm-up runs in blocks on the sampler clock,
is interruptible and resumes. Warm-up iteration t uses the t-th of ``jax.random.split(key,
burn_in)``, BlackJAX's key sequence: the warm-up equals ``run(key, x, burn_in)`` step for step
(a test checks the final step size, metric and state against BlackJAX's ``run``). Afterwards
the kernel is fixed (finite adaptation). Gradients: the library's leapfrog counts per
iteration, one at the start, one at the restart.
"""

from __future__ import annotations

from ckam_bench.samplers.peers import _JaxNUTS
from ckam_bench.targets.base import Target

SCHEDULES = ("stan", "growing")


class _StagedNUTS(_JaxNUTS):
    """NUTS with a staged-adaptation metric core; subclasses give ``_core(burn_in)`` and
    whether the chain restarts at the core's μ*."""

    distribution = "blackjax"
    library = ("blackjax", "BlackJAX")
    restart = False

    def __init__(self, step_size: float = 1.0, burn_in: int = 1000, target_accept: float = 0.8,
                 max_depth: int = 10, schedule: str = "stan"):
        super().__init__(step_size=step_size, burn_in=burn_in, target_accept=target_accept,
                         max_depth=max_depth)
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
        self.schedule = schedule

    def _settings(self) -> tuple:
        return (*super()._settings(), self.schedule)

    def _core(self):  # pragma: no cover - abstract
        raise TypeError

    def _seed(self, engine_state, core, grad):
        return engine_state

    def _functions(self, target: Target):
        import blackjax
        import jax
        import jax.numpy as jnp
        from blackjax.adaptation.low_rank_adaptation import build_growing_window_schedule
        from blackjax.adaptation.staged_adaptation import _make_engine, build_schedule

        log_density = target.jax_log_density()
        kernel = blackjax.nuts.build_kernel()
        burn_in, depth, restart = self.burn_in, self.max_depth, self.restart
        core = self._core()
        adapt_init, adapt_update, adapt_final = _make_engine(core, target_acceptance_rate=self.target_accept)
        build = build_schedule if self.schedule == "stan" else build_growing_window_schedule
        schedule = jnp.asarray(build(burn_in) if burn_in else jnp.zeros((1, 2), jnp.int32)).astype(jnp.int32)

        def init(key, x):
            key, warm_key = jax.random.split(key)
            state = blackjax.nuts.init(jnp.asarray(x), log_density)
            ws = self._seed(adapt_init(state.position, self.step_size), core, state.logdensity_grad)
            keys = jax.random.split(warm_key, max(burn_in, 1))  # BlackJAX's warm-up keys
            return (state, ws, jnp.asarray(ws.step_size, float), ws.inverse_mass_matrix, key, keys,
                    jnp.zeros((), jnp.int64))

        def step(carry):
            state, ws, eps, imm, key, keys, t = carry
            warm = t < burn_in
            key, sub = jax.random.split(key)
            sub = jnp.where(warm, keys[jnp.minimum(t, keys.shape[0] - 1)], sub)
            state, info = kernel(sub, state, log_density, eps, imm, max_num_doublings=depth)
            used, grads = eps, info.num_integration_steps
            if burn_in:
                def adapt(args):
                    state, ws = args
                    ws = adapt_update(ws, tuple(schedule[jnp.minimum(t, burn_in - 1)]), state.position,
                                      state.logdensity_grad, info.acceptance_rate, t)
                    return state, ws, jnp.asarray(ws.step_size, float), ws.inverse_mass_matrix, jnp.zeros((), grads.dtype)

                def last(args):  # the last warm-up iteration: BlackJAX's final values
                    state, ws, _, _, _ = adapt(args)
                    eps, imm = adapt_final(ws)
                    extra = jnp.zeros((), grads.dtype)
                    if restart:
                        state, extra = blackjax.nuts.init(ws.imm_state.mu_star, log_density), extra + 1
                    return state, ws, jnp.asarray(eps, float), imm, extra

                def fixed(args):
                    return args[0], args[1], eps, imm, jnp.zeros((), grads.dtype)

                branch = jnp.where(t < burn_in - 1, 0, jnp.where(t == burn_in - 1, 1, 2))
                state, ws, eps, imm, extra = jax.lax.switch(branch, (adapt, last, fixed), (state, ws))
                grads = grads + extra
            rec = {"x": state.position, "logp": state.logdensity, "accept_prob": info.acceptance_rate,
                   "n_steps": grads, "diverging": info.is_divergent, "step_size": used}
            return (state, ws, eps, imm, key, keys, t + 1), rec

        return init, step

    def _start_logp(self, carry) -> float:
        return float(carry[0].logdensity)

    def describe(self) -> dict:
        return {**super().describe(), "schedule": self.schedule, "restart": self.restart}


class BlackJAXNUTSLowRank(_StagedNUTS):
    """BlackJAX's NUTS with ``window_adaptation_low_rank`` (Fisher-divergence low-rank modified
    mass matrix, dual-averaged step size) during ``burn_in`` iterations, then fixed.

    step_size : initial step size; burn_in : warm-up iterations (not collected); target_accept;
    max_depth; max_rank, gamma, cutoff : the low-rank estimator's (BlackJAX's defaults 10,
    1e-5, 2); schedule : ``stan`` (BlackJAX's default) or ``growing`` (nutpie's windows);
    gradient_based_init : σ from the start's gradient (nutpie's); restart : restart at μ*
    after warm-up (BlackJAX's ``run`` does).
    """

    name = "blackjax_nuts_lowrank"

    def __init__(self, step_size: float = 1.0, burn_in: int = 1000, target_accept: float = 0.8,
                 max_depth: int = 10, max_rank: int = 10, gamma: float = 1e-5, cutoff: float = 2.0,
                 schedule: str = "stan", gradient_based_init: bool = False, restart: bool = True):
        super().__init__(step_size, burn_in, target_accept, max_depth, schedule)
        if isinstance(max_rank, bool) or int(max_rank) != max_rank or max_rank < 1:
            raise ValueError(f"max_rank must be a positive integer, got {max_rank}")
        if not float(gamma) > 0 or not float(cutoff) >= 1:
            raise ValueError(f"gamma must be > 0 and cutoff >= 1, got {gamma}, {cutoff}")
        self.max_rank, self.gamma, self.cutoff = int(max_rank), float(gamma), float(cutoff)
        self.gradient_based_init, self.restart = bool(gradient_based_init), bool(restart)

    def _settings(self) -> tuple:
        return (*super()._settings(), self.max_rank, self.gamma, self.cutoff, self.gradient_based_init,
                self.restart)

    def _core(self):
        from blackjax.adaptation.metric_recipes import _build_fisher_low_rank_core

        n = self.burn_in  # window_adaptation_low_rank's buffer size for the reset policy
        buffer_size = min(max(n // 5, 128) * 2, max(n, 1))
        return _build_fisher_low_rank_core(buffer_size=buffer_size, max_rank=self.max_rank,
                                           gamma=self.gamma, cutoff=self.cutoff)

    def _seed(self, engine_state, core, grad):
        if not self.gradient_based_init:
            return engine_state
        from blackjax.adaptation.metric_recipes import seed_low_rank_sigma_from_grad

        seeded = seed_low_rank_sigma_from_grad(engine_state.imm_state, grad)
        return engine_state._replace(imm_state=seeded, inverse_mass_matrix=seeded.inverse_mass_matrix)

    def describe(self) -> dict:
        return {**super().describe(), "mass_matrix": "low_rank", "max_rank": self.max_rank,
                "gamma": self.gamma, "cutoff": self.cutoff, "gradient_based_init": self.gradient_based_init}


class BlackJAXNUTSFisher(_StagedNUTS):
    """BlackJAX's NUTS with ``staged_adaptation(metric="fisher_diag")``: the Fisher-divergence
    diagonal mass matrix and dual-averaged step size during ``burn_in`` iterations, then fixed.

    step_size; burn_in; target_accept; max_depth; schedule : ``stan`` or ``growing``.
    """

    name = "blackjax_nuts_fisher"

    def __init__(self, step_size: float = 1.0, burn_in: int = 1000, target_accept: float = 0.8,
                 max_depth: int = 10, schedule: str = "stan"):
        super().__init__(step_size, burn_in, target_accept, max_depth, schedule)

    def _core(self):
        from blackjax.adaptation.metric_recipes import lookup_recipe

        return lookup_recipe("fisher_diag").build_core()

    def describe(self) -> dict:
        return {**super().describe(), "mass_matrix": "fisher_diag"}
