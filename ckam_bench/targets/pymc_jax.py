"""A PyMC model's log density as a JAX function (the density of the JAX peer samplers), and
whether it has one.

pytensor's JAX backend converts each Op of the graph through ``jax_funcify``; an Op of the
model's own (e.g. :class:`ckam_bench.posteriordb.ode.ODESolution`, an ODE solved by SciPy) has no
conversion unless its author registered one, and then the JAX peers cannot run the model: they
decline it with one line (:func:`missing_conversions`) instead of failing in their warm-up.
"""

from __future__ import annotations

import os

_LIBRARY_OPS = ("pytensor.", "pymc.")


def jaxify():
    """``pymc.sampling.jax.get_jaxified_graph``, imported without the side effect of that import:
    it sets ``XLA_FLAGS=--xla_force_host_platform_device_count=100``, after which JAX makes 100
    CPU devices with their thread pools and a compiled loop's work hops between ~200 threads:
    NumPyro's NUTS on a PyMC model then cost 5 to 36 CPU µs per gradient from run to run of the
    same executable, against 5.1 µs with one device. The user's own ``XLA_FLAGS`` is kept."""
    before = os.environ.get("XLA_FLAGS")
    try:
        from pymc.sampling.jax import get_jaxified_graph
    finally:
        if before is None:
            os.environ.pop("XLA_FLAGS", None)
        else:
            os.environ["XLA_FLAGS"] = before
    return get_jaxified_graph


def missing_conversions(inputs, outputs) -> str:
    """"" when every Op of the graph from ``inputs`` to ``outputs`` converts to JAX, else why
    not: the Ops outside pytensor and PyMC without a ``jax_funcify`` registration (JAX is
    imported only when the graph has such an Op), or JAX missing."""
    try:
        from pytensor.graph.traversal import io_toposort
    except ImportError:  # pytensor before 2.31
        from pytensor.graph.basic import io_toposort

    own = sorted({type(node.op) for node in io_toposort(inputs, outputs)
                  if not type(node.op).__module__.startswith(_LIBRARY_OPS)}, key=lambda op: op.__name__)
    if not own:
        return ""
    try:
        from pytensor.link.jax.dispatch import jax_funcify
    except ImportError as exc:  # JAX not installed
        return f"JAX cannot be imported ({exc})"
    default = jax_funcify.dispatch(object)
    missing = [op.__name__ for op in own if jax_funcify.dispatch(op) is default]
    if not missing:
        return ""
    return f"its Op{'s' if len(missing) > 1 else ''} {', '.join(missing)} ha{'ve' if len(missing) > 1 else 's'} no JAX conversion (pytensor's jax_funcify)"
