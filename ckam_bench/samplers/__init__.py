"""Samplers, one module per family (each class pairs with ``conf/sampler/<name>.yaml``).

* :mod:`~ckam_bench.samplers.base` — the interface (``init`` / ``advance`` in blocks).
* :mod:`~ckam_bench.samplers.random_walk` — random-walk Metropolis (RW).
* :mod:`~ckam_bench.samplers.adaptive` — the adaptive Metropolis family of Andrieu & Thoms
  (2008): AM (alg. 2), Rao–Blackwellised AM (RBAM, alg. 3), AM with global adaptive scaling
  (GAM, alg. 4).
* :mod:`~ckam_bench.samplers.kameleon` — Kernel Adaptive Metropolis–Hastings (KAM) and
  cyclical KAM (cKAM).
* :mod:`~ckam_bench.samplers.gradient_adaptive` — gradient-based adaptive MCMC (Titsias &
  Dellaportas 2019): gadRWM, gadMALA fast, gadMALA exact.
* :mod:`~ckam_bench.samplers.hamiltonian` — the gradient baselines MALA and HMC-k;
  :mod:`~ckam_bench.samplers.nuts` — NUTS.
* :mod:`~ckam_bench.samplers.divergence` — the divergence-minimisation (DM) sampler, its
  finite-adaptation variant and Scout MCMC (Dharamshi, Ngo & Rosenthal).
* :mod:`~ckam_bench.samplers.tempering` — parallel tempering.
* :mod:`~ckam_bench.samplers.independence` — independence Metropolis–Hastings with a t proposal
  learned in a finite warm-up (the reference sampler of pseudo-marginal ``gp_glass``).
* :mod:`~ckam_bench.samplers.peers` — the production samplers run inside the harness: nutpie,
  NumPyro's NUTS, BlackJAX's NUTS with window adaptation (the optional extra ``peers``).
"""
