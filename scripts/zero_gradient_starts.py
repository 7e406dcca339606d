#!/usr/bin/env python
"""The suite posteriors whose log-density gradient at the start has a coordinate that is
exactly 0 (or NaN), and how many: there a gradient-based first metric, M⁻¹ = 1/|∇log π(x₀)|,
learns nothing of the coordinate's scale (docs/samplers.md, "A zero gradient at the start").

The start is the one every suite run uses: the model's support point (``init=support_point``).
A centred hierarchy starts every group at its mean, where the mean's gradient vanishes::

    python scripts/zero_gradient_starts.py            # those with a zero, one line each
    python scripts/zero_gradient_starts.py --all      # every posterior

Needs the ``[pymc]`` extra. Zeros of the graph's arithmetic, not of rounding: a run on another
CPU lists the same posteriors.
"""

from __future__ import annotations

import argparse

import numpy as np


def zero_coordinates(post) -> tuple[int, int]:
    """(d, the number of coordinates of ∇log π(x₀) that are 0 or NaN) of a suite posterior."""
    from ckam_bench.targets.pymc import PyMCModel

    target = PyMCModel(f"{post.module}:{post.function}")
    g = np.asarray(target.grad_log_density(np.asarray(target.start, float)))
    return target.dim, int(np.sum(~(np.abs(g) > 0.0)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="print every posterior, not only those with a zero")
    args = parser.parse_args(argv)
    from ckam_bench.posteriordb import registered

    found = 0
    posteriors = sorted(registered().items())
    for name, post in posteriors:
        dim, zeros = zero_coordinates(post)
        found += zeros > 0
        if zeros or args.all:
            print(f"{name}  d={dim}  zero gradient coordinates: {zeros}", flush=True)
    print(f"{found} of {len(posteriors)} posteriors start with a zero gradient coordinate")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
