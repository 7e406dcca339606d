"""What one call into a sampler costs on the sampler clock, apart from its iterations: the
input for landing a checkpoint on an exact iteration by shortening blocks (docs/posteriordb.md,
"How exactly the counts repeat").

For each sampler config named (conf/sampler/<name>.yaml) on one posteriordb model: a chain run
past its warm-up (``--warmup`` iterations), then ``--iterations`` iterations in one block and as
many again one iteration per call, each timed in process CPU seconds (``time.process_time``,
every thread). The difference per iteration is a call's own cost. Run it alone, one thread on
one core, as the harness runs samplers::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 taskset -c 1 \\
        python scripts/bench_block_calls.py --model kidscore_momiq \\
        --samplers nuts_lowrank nutpie walnutpie numpyro_nuts blackjax_nuts blackjax_gist
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

CONF = Path(__file__).resolve().parents[1] / "conf" / "sampler"


def call_cost(name: str, target, warmup: int, iterations: int) -> tuple[float, float]:
    """(CPU µs per iteration in one block, a call's own CPU µs) of sampler config ``name``."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    sampler = instantiate(OmegaConf.load(CONF / f"{name}.yaml"))
    if hasattr(sampler, "warm_up"):
        sampler.warm_up(target)  # compiles before timing
    chain = sampler.init(target, target.start, np.random.default_rng(0))
    chain, _ = sampler.advance(chain, warmup)
    start = time.process_time()
    chain, _ = sampler.advance(chain, iterations)
    block = time.process_time() - start
    start = time.process_time()
    for _ in range(iterations):
        chain, _ = sampler.advance(chain, 1)
    single = time.process_time() - start
    return 1e6 * block / iterations, 1e6 * (single - block) / iterations


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="kidscore_momiq", help="a function of ckam_bench.posteriordb.models")
    parser.add_argument("--samplers", nargs="+", default=["nuts_lowrank", "nutpie"])
    parser.add_argument("--warmup", type=int, default=1500)
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args(argv)
    unknown = [name for name in args.samplers if not (CONF / f"{name}.yaml").is_file()]
    if unknown:
        parser.exit(2, f"{parser.prog}: --samplers: no config conf/sampler/{unknown[0]}.yaml\n")
    from ckam_bench.targets.pymc import PyMCModel

    target = PyMCModel(f"ckam_bench.posteriordb.models:{args.model}")
    print(f"load average at the start: {os.getloadavg()[0]:.2f}", flush=True)
    print("| sampler | CPU µs per iteration, one block | a call's own CPU µs |\n|---|---|---|")
    for name in args.samplers:
        per_iteration, per_call = call_cost(name, target, args.warmup, args.iterations)
        print(f"| {name} | {per_iteration:.1f} | {per_call:.1f} |", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
