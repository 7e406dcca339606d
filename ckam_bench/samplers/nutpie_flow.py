"""nutpie's normalizing-flow adaptation (``transform_adapt``; ``adaptation="flow"`` from nutpie
0.16.9) driven by the harness: ``sampler=nutpie_flow``.

nutpie runs NUTS on y = F⁻¹(x), F a coupling flow fitted to the warm-up's draws and gradients by
the Fisher divergence (its first windows: a diagonal mass matrix). Its flow adapter needs the log
density as a JAX function (nutpie's users compile the PyMC model with ``backend="jax"``): it
evaluates it at x = F(y) for every leapfrog step, and calls the model's own logp callback only at
the first point. The harness hands it the target's own JAX density
(:meth:`~ckam_bench.targets.base.Target.jax_log_density`, pytensor's JAX backend for a PyMC model,
in the harness's coordinates: nutpie's own JAX compilation orders a model's variables otherwise),
so the flow runs on every target with one. So:

* **every evaluation is counted** inside that JAX function, by a host callback that receives the
  point and its log density (``jax.debug.callback``), plus the calls of the model's own logp
  (the harness's density, counted by the gate);
* nutpie is **held between blocks** in that callback: after the last draw granted (recorded by
  the per-draw expansion callback, with the log density met at that point of its trajectory, or
  the previous draw's), the next evaluation waits for the next grant
  (:class:`~ckam_bench.samplers.nutpie_fallback.Gate`, as the Python fallback holds its density).

The flow's fitting (JAX, on CPU) runs on nutpie's thread, inside the sampler clock: a gradient
count leaves it out, a CPU-second does not.
"""

from __future__ import annotations

import numpy as np

from ckam_bench.samplers.nutpie_fallback import Gate

LABEL = "the target's JAX density in nutpie's flow adapter (python callback at the first point)"
"""describe()'s ``density`` of ``nutpie_flow``."""


def _evaluated(gate: Gate, x, value) -> None:
    """One evaluation of the flow adapter's density (a host callback from inside JAX, on nutpie's
    thread): held while the draws granted are done, then counted."""
    if (gate.done >= gate.quota or gate.closing) and not gate.wait_for_quota():
        return
    gate.evaluated(np.asarray(x, dtype=float), float(value))


def model(target, gate: Gate, start, adapt_args: dict | None = None):
    """A nutpie model of ``target`` for ``nutpie.sample(..., transform_adapt=True)``: the counting
    JAX density for the flow adapter, the harness's density (the fallback's, through ``gate``) for
    nutpie's own calls, the gated expansion and the harness's start (``start(seed)``).
    ``adapt_args``: keywords of nutpie's ``make_transform_adapter`` (None: nutpie's defaults)."""
    import jax
    from nutpie.compiled_pyfunc import from_pyfunc

    from ckam_bench.samplers.nutpie_fallback import python_density

    logp = target.jax_log_density()

    def counted(x):
        value = logp(x)
        jax.debug.callback(lambda p, v: _evaluated(gate, p, v), x, value)
        return (value,)

    density = python_density(target, gate)

    def expand(x, **shared):
        gate.record(np.asarray(x, dtype=float))
        return {}

    def first(seed):
        """The harness's start; moved as nutpie's retry moves it when a gradient coordinate is 0
        there (the flow's first layer divides by the gradient: nutpie refuses such a start)."""
        x = start(seed)
        return start(seed + 1) if np.any(target._grad_log_density(x) == 0.0) else x  # uncounted

    compiled = from_pyfunc(target.dim, lambda: density, lambda *seeds: expand, [], [], [],
                           make_initial_point_fn=first, raw_logp_fn=counted)
    return compiled.with_transform_adapt(**(adapt_args or {}))
