#!/usr/bin/env python
r"""Power of ckam-bench-sbc's verdict, by Monte Carlo (the numbers in docs/sbc.md).

The conjugate normal model of the tests (``tests/pymc_models.py:normal_mean``: μ ~ N(0, 1),
y₁…₅ ~ N(μ, 1)) has the exact posterior N(Σy/6, 1/6). A "sampler" that draws L iid values of
N(Σy/6, c²/6) has its posterior sd too small by 1/c: c = 1/√2 is what accepting with
(π(y)/π(x))² samples (π²), c = 1/2 accepting with (π(y)/π(x))⁴ (π⁴), c = 1 the exact sampler
(the test's size). Each replicate is one whole SBC: N simulations (μᵢ, yᵢ) from the prior, the
rank of μᵢ among the L draws, and the command's own verdict (:func:`ckam_bench.checks.sbc.verdict`:
chi-square in ``bins`` bins, level α). The printed rate is the fraction of replicates whose
verdict is *fail*, with its Monte Carlo standard error.

``--check`` also runs :func:`ckam_bench.checks.sbc.power` (the command's fast version, which uses
that the rank is Binomial(L, Φ(z/c)) for a standardized truth z) beside it.

    python scripts/sbc_power.py                      # the docs' table (400 replicates)
    python scripts/sbc_power.py --simulations 60 100 200 --replicates 400 --seed 0
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ckam_bench.checks import sbc


def replicate_rejections(n: int, scale: float, replicates: int, draws: int, bins: int,
                         alpha: float, rng: np.random.Generator) -> float:
    """Fraction of ``replicates`` SBCs of the normal-mean model (N = ``n``) that fail a sampler
    drawing exactly from N(mean, (scale · sd)²)."""
    failed = 0
    for _ in range(replicates):
        mu = rng.standard_normal(n)
        y = mu[:, None] + rng.standard_normal((n, 5))
        mean, sd = y.sum(axis=1) / 6.0, np.sqrt(1 / 6.0)
        sample = mean[:, None] + scale * sd * rng.standard_normal((n, draws))
        ranks = np.count_nonzero(sample < mu[:, None], axis=1)[:, None]
        failed += sbc.verdict(ranks, ["mu"], draws, bins, alpha)["verdict"] == "fail"
    return failed / replicates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, nargs="+", default=[30, 60, 100, 200, 400])
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 2 ** -0.5, 0.5])
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--draws", type=int, default=99, help="L (sbc.draws)")
    parser.add_argument("--bins", type=int, default=10, help="sbc.bins")
    parser.add_argument("--alpha", type=float, default=0.01, help="sbc.alpha")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true", help="also print sbc.power's estimate")
    args = parser.parse_args(argv)
    sbc.check_settings({"simulations": max(args.simulations), "draws": args.draws,
                        "bins": args.bins, "seed": args.seed, "alpha": args.alpha})
    print(f"rejection rate of the SBC verdict (chi-square, {args.bins} bins, L = {args.draws}, "
          f"alpha = {args.alpha}), {args.replicates} replicate SBCs of exact draws per cell, "
          f"seed {args.seed}; sd factor 1 = size")
    for n in args.simulations:
        cells = []
        for k, scale in enumerate(args.scales):
            rng = np.random.default_rng([args.seed, n, k])
            rate = replicate_rejections(n, scale, args.replicates, args.draws, args.bins,
                                        args.alpha, rng)
            se = np.sqrt(max(rate * (1 - rate), 1e-12) / args.replicates)
            cell = f"sd x {scale:.3g}: {rate:.3f} ± {se:.3f}"
            if args.check:
                cell += f" (sbc.power {sbc.power(n, args.draws, args.bins, args.alpha, 1, scale):.3f})"
            cells.append(cell)
        print(f"N = {n:>5}:  " + "   ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
