"""What one recompute of the low-rank Fisher metric costs: CPU time of the compiled
``fisher.low_rank_estimate`` (conf/sampler/nuts_lowrank.yaml's γ, cutoff and ridge power) on
draws and gradients of a Gaussian with a planted spread of scales, per dimension d and number of
stored draws n. With 2n < d the estimate works in the span of the draws (a QR first); otherwise
in all d dimensions.

The figure is the median over ``--repeats`` rounds of the mean CPU time of ``--calls`` calls,
after one untimed call that compiles. To compare two versions of the estimator, run the script
in each checkout alternately (``PYTHONPATH=<checkout> python <checkout>/scripts/...``), pinned to
one core with one BLAS thread; the load average is printed at the start and the end: publish
figures only from an idle machine (load average < 1.5 on 2 cores).

    OPENBLAS_NUM_THREADS=1 taskset -c 1 python scripts/bench_lowrank_recompute.py \\
        [--dims 87] [--draws 15 60 270] [--calls 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import yaml

CONFIG = Path(__file__).resolve().parents[1] / "conf" / "sampler" / "nuts_lowrank.yaml"


def sample(d: int, n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """n draws of N(0, diag(s²)) with log-normal scales s and their gradients, plus noise."""
    rng = np.random.default_rng(seed)
    scale = rng.lognormal(0.0, 1.0, d)
    draws = rng.standard_normal((n, d)) * scale
    return draws, -draws / scale ** 2 + 0.1 * rng.standard_normal((n, d))


def cost_ms(d: int, n: int, calls: int, repeats: int) -> float:
    """Median over rounds of one compiled recompute's mean CPU milliseconds."""
    import numba

    from ckam_bench.adaptation import fisher

    config = yaml.safe_load(CONFIG.read_text())
    gamma, cutoff, power = float(config["rank_gamma"]), float(config["eigval_cutoff"]), float(config["rank_ridge_power"])
    estimate = numba.njit(lambda x, g: fisher.low_rank_estimate(x, g, gamma, cutoff, power))
    draws, grads = sample(d, n)
    estimate(draws, grads)  # compiles
    rounds = []
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            estimate(draws, grads)
        rounds.append((time.process_time() - start) / calls * 1e3)
    return statistics.median(rounds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[87])
    parser.add_argument("--draws", type=int, nargs="+", default=[15, 60, 270])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    for key, least in (("dims", 1), ("draws", 3)):  # the estimator needs 3 draws
        if not all(least <= v <= 2000 for v in getattr(args, key)):
            print(f"--{key}: each must be in [{least}, 2000]", file=sys.stderr)
            return 2
    if args.calls < 1 or args.repeats < 1:
        print("--calls and --repeats must be at least 1", file=sys.stderr)
        return 2
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    print("| d | n | route | ms per recompute |")
    print("|---|---|---|---|")
    for d in args.dims:
        for n in args.draws:
            route = "span (QR)" if 2 * n < d else "all d"
            print(f"| {d} | {n} | {route} | {cost_ms(d, n, args.calls, args.repeats):.3f} |", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
