"""Small adaptation rules shared by the gradient-based samplers, each an init/update/final trio
over a flat float64 array (so the same functions run in the Python loops and, compiled with
numba, inside the samplers' kernels):

* :mod:`~ckam_bench.adaptation.dual_averaging` — Nesterov dual averaging of log ε
  (Hoffman & Gelman 2014, §3.2), the step size of HMC and NUTS;
* :mod:`~ckam_bench.adaptation.robbins_monro` — log σ ← log σ + γ_t(α − α*), MALA's step;
* :mod:`~ckam_bench.adaptation.rmsprop` — RMSprop ascent steps, gadRWM/gadMALA's L;
* :mod:`~ckam_bench.adaptation.welford` — Welford's running mean and variance and Stan's
  windowed warm-up schedule for a diagonal mass matrix;
* :mod:`~ckam_bench.adaptation.fisher` — the Fisher-divergence mass-matrix estimators of
  nutpie (diagonal and low-rank) and Stan's variance, as foreground/background pairs
  (tested in ``tests/samplers/test_nuts_fisher.py``).

Each rule is tested against its closed form in ``tests/test_adaptation.py``.
"""
