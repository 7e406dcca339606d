r"""Microcanonical peers from BlackJAX: Metropolis-adjusted microcanonical HMC (MAMS) and
unadjusted microcanonical Langevin Monte Carlo (MCLMC), each tuned by BlackJAX's own tuner.

* :class:`MAMS` — Robnik, Cohn-Gordon & Seljak et al. (2025), "Metropolis adjusted
  microcanonical Hamiltonian Monte Carlo": BlackJAX's ``adjusted_mclmc_dynamic`` (the module
  BlackJAX recommends over ``adjusted_mclmc``): the isokinetic (microcanonical) dynamics with a
  fresh unit-sphere momentum per transition, a random number of integration steps
  ⌈u · rescale(L/ε)⌉ (u uniform) and a Metropolis–Hastings accept step on the energy error, so
  the fixed kernel leaves π invariant. Tuned by ``blackjax.adjusted_mclmc_find_L_and_step_size``
  (dual averaging of ε to the target acceptance, a diagonal preconditioner from the step-size
  weighted moments, L from the ESS in an optional third phase, then BlackJAX 1.7.1's invariant
  L = ``target_num_integration_steps`` · ε).
* :class:`MCLMC` — Robnik, De Luca, Silverstein & Seljak (2023), "Microcanonical Hamiltonian
  Monte Carlo": BlackJAX's ``mclmc``, the isokinetic dynamics with a partial momentum refresh
  (decoherence length L) and **no** Metropolis correction, tuned by
  ``blackjax.mclmc_find_L_and_step_size`` (ε from the energy-error variance per dimension,
  ``desired_energy_var``; L and a diagonal preconditioner from the moments, L refined from the
  ESS). **Biased by design**: its stationary law differs from π by the discretisation error
  (its size is set by ``desired_energy_var``); ``describe()["exact"]`` is False and the
  report's b² column shows how much.

**Tuning on the sampler clock.** BlackJAX's tuners are single functions (``lax.scan`` inside);
the harness runs one, jitted and compiled in ``warm_up`` (ahead of time, before the clock), at
the first ``advance`` from the chain's start, on the sampler clock, and then the fixed kernel in
the blocks of :class:`~ckam_bench.samplers.peers._JaxPeer`. The tuning is not interruptible
(a run killed during it restarts it from the start, with the same key: the same result). Its
kernel steps are not harness iterations: ``burn_in`` counts further fixed-kernel iterations
not collected (default 0; the tuner's last state is the first state of the chain).

**Accounting.** Every gradient the tuner spends is added to the target's counters: MAMS's
tuner returns its Σ integration steps, MCLMC's count is derived from its structure
(:func:`mclmc_tuning_steps`; BlackJAX's own returned count misses up to one step of the
preconditioner re-tuning, ``round`` against ``//``); each integration step costs
``GRADS_PER_STEP[integrator]`` gradients (McLachlan's two-stage integrator: 2). Plus one
evaluation at the start (the library's ``init``) and the harness's check of the start (one
density). ``tests/samplers/test_microcanonical.py`` proves the counts against a density that
counts its own evaluations.
"""

from __future__ import annotations

import dataclasses
import weakref

import numpy as np

from ckam_bench import jit
from ckam_bench.samplers.hamiltonian import check_burn_in, check_fraction, check_positive
from ckam_bench.samplers.peers import _JaxPeer, _jax, _leaves_dict, check_installed
from ckam_bench.targets.base import Target

GRADS_PER_STEP = {"isokinetic_velocity_verlet": 1, "isokinetic_mclachlan": 2, "isokinetic_omelyan": 3}
"""Gradient evaluations per integration step of BlackJAX's isokinetic integrators (the last
gradient of a step is the first of the next)."""

_TUNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""target -> {(sampler class, settings): the tuner compiled ahead of time}."""


def mclmc_tuning_steps(num_steps: int, frac_tune1: float, frac_tune2: float, frac_tune3: float,
                       diagonal_preconditioning: bool) -> int:
    """Kernel steps ``blackjax.mclmc_find_L_and_step_size`` runs (BlackJAX 1.7.1's structure):
    round(f₁N) + round(f₂N) predictor steps, round(round(f₂N)/3) more after the preconditioner
    (if any and round(f₂N) > 1), and round(f₃N) steps for L from the ESS (if ≥ 2)."""
    n1, n2, n3 = round(num_steps * frac_tune1), round(num_steps * frac_tune2), round(num_steps * frac_tune3)
    total = n1 + n2
    if diagonal_preconditioning and n2 > 1:
        total += round(n2 / 3)
    if n3 >= 2:
        total += n3
    return total


def _check_integrator(integrator: str) -> str:
    if integrator not in GRADS_PER_STEP:
        raise ValueError(f"integrator must be one of {', '.join(GRADS_PER_STEP)}, got {integrator!r}")
    return integrator


def _check_frac(name: str, value, allow_zero: bool = True) -> float:
    value = float(value)
    if not (0.0 <= value < 1.0) or (value == 0.0 and not allow_zero):
        raise ValueError(f"{name} must be in {'[0' if allow_zero else '(0'}, 1), got {value}")
    return value


class _Microcanonical(_JaxPeer):
    """A BlackJAX microcanonical kernel tuned by its library tuner at the first ``advance``."""

    distribution = "blackjax"
    exact = True

    def __init__(self, num_steps: int = 5000, burn_in: int = 0, frac_tune1: float = 0.1,
                 frac_tune2: float = 0.1, frac_tune3: float = 0.1, diagonal_preconditioning: bool = True,
                 integrator: str = "isokinetic_mclachlan"):
        check_installed("blackjax", "BlackJAX")
        check_installed("jax", "JAX")
        if isinstance(num_steps, bool) or int(num_steps) != num_steps or not 20 <= num_steps <= 10**8:
            raise ValueError(f"num_steps must be an integer in [20, 1e8], got {num_steps}")
        self.num_steps, self.burn_in = int(num_steps), check_burn_in(burn_in)
        self.frac_tune1 = _check_frac("frac_tune1", frac_tune1, allow_zero=False)
        self.frac_tune2 = _check_frac("frac_tune2", frac_tune2)
        self.frac_tune3 = _check_frac("frac_tune3", frac_tune3)
        self.diagonal_preconditioning = bool(diagonal_preconditioning)
        self.integrator = _check_integrator(integrator)
        self.tuning_grad = None

    def skip(self, target: Target) -> tuple[bool, str]:
        if target.dim < 2:
            return True, f"{self.name} needs at least 2 dimensions (BlackJAX's MCLMC); {target.name!r} has 1"
        return super().skip(target)

    def _settings(self) -> tuple:
        return (self.num_steps, self.frac_tune1, self.frac_tune2, self.frac_tune3,
                self.diagonal_preconditioning, self.integrator)

    def _integrator(self):
        from blackjax.mcmc import integrators

        return getattr(integrators, self.integrator)

    def _tuner(self, target: Target):  # pragma: no cover - abstract
        raise TypeError

    def _compiled(self, target: Target):
        init, block = super()._compiled(target)
        cache = _TUNERS.setdefault(target, {})
        key = (type(self).__name__, self._settings())
        if key not in cache:
            jax = _jax()
            carry = jax.device_get(init(jax.random.PRNGKey(0), np.asarray(target.start, float)))
            cache[key] = jax.jit(self._tuner(target)).lower(carry).compile()
        self._tune = cache[key]
        return init, block

    def _start_logp(self, carry) -> float:
        return float(carry[0].logdensity)

    def advance(self, state, n: int):
        if state.t == 0:  # the library's tuner, on the sampler clock, from the chain's start
            jax = _jax()
            carry = jax.tree_util.tree_unflatten(self._treedef, [state.library_state[k]
                                                                 for k in sorted(state.library_state)])
            carry, steps = self._tune(carry)
            carry = jax.device_get(carry)
            grads = int(steps) * GRADS_PER_STEP[self.integrator]
            self.target.n_density += grads
            self.target.n_grad += grads
            self.tuning_grad = grads
            jit.ran_compiled()
            state = dataclasses.replace(state, x=np.asarray(carry[0].position, float).copy(),
                                        logp=float(carry[0].logdensity),
                                        library_state=_leaves_dict(jax.tree_util.tree_leaves(carry)))
        return super().advance(state, n)

    def describe(self) -> dict:
        out = {**super().describe(), "adaptation": "finite", "exact": self.exact,
               "num_steps": self.num_steps, "integrator": self.integrator,
               "frac_tune": [self.frac_tune1, self.frac_tune2, self.frac_tune3],
               "diagonal_preconditioning": self.diagonal_preconditioning}
        if self.tuning_grad is not None:
            out["tuning_grad"] = self.tuning_grad
        return out


class MAMS(_Microcanonical):
    """Metropolis-adjusted microcanonical HMC (BlackJAX ``adjusted_mclmc_dynamic``, random
    trajectory length ⌈u · rescale(L/ε)⌉), tuned by ``adjusted_mclmc_find_L_and_step_size``;
    the kernel is fixed afterwards and leaves π invariant.

    num_steps : the tuner's ``num_steps`` (it tunes for frac_tune1 + frac_tune2 (+ frac_tune1 ·
        frac_tune3 / …) of it, as BlackJAX's docs call it with the planned sampling length);
    target_accept : the tuner's ``target`` acceptance (0.9, as BlackJAX's sampling book);
    target_num_integration_steps : L/ε after tuning (BlackJAX 1.7.1's default 2);
    frac_tune1..3, diagonal_preconditioning : the tuner's; burn_in : fixed-kernel iterations
    after tuning, not collected; integrator : BlackJAX's isokinetic integrator.
    """

    name = "mams"

    def __init__(self, num_steps: int = 5000, burn_in: int = 0, target_accept: float = 0.9,
                 frac_tune1: float = 0.1, frac_tune2: float = 0.1, frac_tune3: float = 0.1,
                 diagonal_preconditioning: bool = True, target_num_integration_steps: float = 2.0,
                 integrator: str = "isokinetic_mclachlan"):
        super().__init__(num_steps, burn_in, frac_tune1, frac_tune2, frac_tune3, diagonal_preconditioning,
                         integrator)
        self.target_accept = check_fraction("target_accept", target_accept)
        self.target_num_integration_steps = check_positive("target_num_integration_steps",
                                                           target_num_integration_steps)
        if self.target_num_integration_steps < 1.1:
            raise ValueError("target_num_integration_steps must be at least 1.1 (BlackJAX's floor), "
                             f"got {self.target_num_integration_steps}")

    def _settings(self) -> tuple:
        return (*super()._settings(), self.target_accept, self.target_num_integration_steps)

    def _kernel(self):
        from blackjax.mcmc import adjusted_mclmc_dynamic as mams

        return mams.build_kernel(integration_steps_fn=mams.make_random_trajectory_length_fn(True),
                                 integrator=self._integrator())

    def _functions(self, target: Target):
        import jax
        import jax.numpy as jnp
        from blackjax.mcmc import adjusted_mclmc_dynamic as mams

        log_density, kernel, dim = target.jax_log_density(), self._kernel(), target.dim
        per_step = GRADS_PER_STEP[self.integrator]

        def init(key, x):
            key, arg_key, tune_key = jax.random.split(key, 3)
            state = mams.init(jnp.asarray(x), log_density, arg_key)
            eps = jnp.sqrt(dim) * 0.2  # BlackJAX's initial parameters (replaced by tuning)
            return (state, eps, self.target_num_integration_steps * eps, jnp.ones(dim), key, tune_key)

        def step(carry):
            state, eps, L, imm, key, tune_key = carry
            key, sub = jax.random.split(key)
            state, info = kernel(sub, state, log_density, eps, inverse_mass_matrix=imm,
                                 integration_steps_params=(L / eps,))
            rec = {"x": state.position, "logp": state.logdensity, "accept_prob": info.acceptance_rate,
                   "n_steps": per_step * info.num_integration_steps, "diverging": info.is_divergent,
                   "step_size": eps}
            return (state, eps, L, imm, key, tune_key), rec

        return init, step

    def _tuner(self, target: Target):
        import blackjax

        log_density, kernel = target.jax_log_density(), self._kernel()

        def tune(carry):
            state, eps, L, imm, key, tune_key = carry
            state, params, steps = blackjax.adjusted_mclmc_find_L_and_step_size(
                mclmc_kernel=kernel, logdensity_fn=log_density, num_steps=self.num_steps, state=state,
                rng_key=tune_key, target=self.target_accept, frac_tune1=self.frac_tune1,
                frac_tune2=self.frac_tune2, frac_tune3=self.frac_tune3,
                diagonal_preconditioning=self.diagonal_preconditioning,
                target_num_integration_steps=self.target_num_integration_steps)
            return (state, params.step_size, params.L, params.inverse_mass_matrix, key, tune_key), steps

        return tune

    def describe(self) -> dict:
        return {**super().describe(), "target_accept": self.target_accept,
                "target_num_integration_steps": self.target_num_integration_steps}


class MCLMC(_Microcanonical):
    """Unadjusted microcanonical Langevin Monte Carlo (BlackJAX ``mclmc``), tuned by
    ``mclmc_find_L_and_step_size``. **Biased**: no Metropolis correction, so the chain targets
    π only up to the discretisation error (``describe()["exact"]`` is False).

    num_steps : the tuner's ``num_steps``; frac_tune1..3 : its phases (ε and moments; the
    preconditioner; L from the ESS); desired_energy_var : the energy-error variance per
    dimension ε is tuned to (BlackJAX's 5e-4; smaller: less bias, smaller steps);
    diagonal_preconditioning; burn_in : fixed-kernel iterations after tuning, not collected;
    integrator : BlackJAX's isokinetic integrator.
    """

    name = "mclmc"
    exact = False

    def __init__(self, num_steps: int = 5000, burn_in: int = 0, frac_tune1: float = 0.1,
                 frac_tune2: float = 0.1, frac_tune3: float = 0.1, diagonal_preconditioning: bool = True,
                 desired_energy_var: float = 5e-4, integrator: str = "isokinetic_mclachlan"):
        super().__init__(num_steps, burn_in, frac_tune1, frac_tune2, frac_tune3, diagonal_preconditioning,
                         integrator)
        self.desired_energy_var = check_positive("desired_energy_var", desired_energy_var)

    def _settings(self) -> tuple:
        return (*super()._settings(), self.desired_energy_var)

    def _kernel(self):
        from blackjax.mcmc import mclmc

        return mclmc.build_kernel(integrator=self._integrator())

    def _functions(self, target: Target):
        import jax
        import jax.numpy as jnp
        from blackjax.mcmc import mclmc

        log_density, kernel, dim = target.jax_log_density(), self._kernel(), target.dim
        per_step = GRADS_PER_STEP[self.integrator]

        def init(key, x):
            key, momentum_key, tune_key = jax.random.split(key, 3)
            state = mclmc.init(jnp.asarray(x), log_density, momentum_key)
            return (state, jnp.sqrt(dim) * 0.25, jnp.sqrt(dim) * 1.0, jnp.ones(dim), key, tune_key)

        def step(carry):
            state, eps, L, imm, key, tune_key = carry
            key, sub = jax.random.split(key)
            state, info = kernel(sub, state, log_density, imm, L, eps)
            rec = {"x": state.position, "logp": state.logdensity, "accept_prob": jnp.ones(()),
                   "n_steps": jnp.asarray(per_step), "diverging": jnp.logical_not(info.nonans),
                   "step_size": eps}
            return (state, eps, L, imm, key, tune_key), rec

        return init, step

    def _tuner(self, target: Target):
        import blackjax

        log_density, kernel = target.jax_log_density(), self._kernel()
        steps = mclmc_tuning_steps(self.num_steps, self.frac_tune1, self.frac_tune2, self.frac_tune3,
                                   self.diagonal_preconditioning)

        def tune(carry):
            state, eps, L, imm, key, tune_key = carry
            state, params, _ = blackjax.mclmc_find_L_and_step_size(
                mclmc_kernel=kernel, num_steps=self.num_steps, state=state, rng_key=tune_key,
                logdensity_fn=log_density, frac_tune1=self.frac_tune1, frac_tune2=self.frac_tune2,
                frac_tune3=self.frac_tune3, desired_energy_var=self.desired_energy_var,
                diagonal_preconditioning=self.diagonal_preconditioning)
            return (state, params.step_size, params.L, params.inverse_mass_matrix, key, tune_key), steps

        return tune

    def describe(self) -> dict:
        return {**super().describe(), "desired_energy_var": self.desired_energy_var,
                "bias": "unadjusted: no Metropolis correction, stationary law ≠ π (discretisation error)"}
