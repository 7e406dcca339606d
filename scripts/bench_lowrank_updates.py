"""How often ``nuts_lowrank`` recomputes its metric in the early phase: gradients and CPU time of
the warm-up under each rule, side by side in one process.

Each rule is ``sampler=nuts_lowrank`` (conf/sampler/nuts_lowrank.yaml) with some settings
replaced; the default rules are

* ``draw``  — after every draw of the early phase (``early_update_every=1``);
* ``ten``   — every 10 draws, nuts-rs's low-rank setting (``early_update_every=10``, no gradient rule);
* ``g<G>``  — every 10 draws, or once the trees since the last update spent G gradients
  (``early_update_gradients=G``; ``nuts_lowrank`` uses G = 16).

For every posteriordb model named and every rule, ``--seeds`` warm-ups of ``--burn-in``
iterations from the model's start (seed s: ``np.random.default_rng(s)``); the table gives the
median over seeds of the warm-up's gradients (counts: no load changes them) and of its process
CPU time (compiled kernels, compiled once before timing). The load average is printed at the
start and the end: publish CPU figures only from an idle machine (load average < 1.5 on 2 cores).

    python scripts/bench_lowrank_updates.py [--models eight_schools_noncentered sblri_blr]
        [--gradients 16 32] [--seeds 8] [--burn-in 500]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import yaml

CONFIG = Path(__file__).resolve().parents[1] / "conf" / "sampler" / "nuts_lowrank.yaml"
MODELS = ["eight_schools_noncentered", "sblri_blr", "kidscore_interaction_z", "kidscore_interaction_c", "arma11",
          "gp_regr", "nes1976", "nes1992", "logmesquite_logvolume", "earn_height", "kilpisjarvi", "arK", "garch11",
          "diamonds", "low_dim_gauss_mix", "gp_pois_regr"]


def rules(gradients: list[int]) -> dict[str, dict]:
    base = {"draw": {"early_update_every": 1, "early_update_gradients": 0},
            "ten": {"early_update_every": 10, "early_update_gradients": 0}}
    return base | {f"g{g}": {"early_update_every": 10, "early_update_gradients": g} for g in gradients}


def warm_ups(model: str, settings: dict[str, dict], seeds: int, burn_in: int) -> dict[str, tuple[float, float]]:
    """{rule: (median gradients, median CPU seconds)} of the warm-ups on one model."""
    from ckam_bench.samplers.nuts_adaptation import AdaptedNUTS
    from ckam_bench.targets.pymc import PyMCModel

    config = yaml.safe_load(CONFIG.read_text())
    config.pop("_target_")
    target = PyMCModel(f"ckam_bench.posteriordb.models:{model}")
    out = {}
    for name, overrides in settings.items():
        sampler = AdaptedNUTS(**{**config, "burn_in": burn_in, **overrides})
        sampler.warm_up(target)  # compiles before timing
        gradients, seconds = [], []
        for seed in range(seeds):
            state = sampler.init(target, target.start, np.random.default_rng(seed))
            before, start = target.n_grad, time.process_time()
            sampler.advance(state, burn_in)
            seconds.append(time.process_time() - start)
            gradients.append(target.n_grad - before)
        out[name] = (float(np.median(gradients)), float(np.median(seconds)))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--gradients", nargs="+", type=int, default=[16, 32])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--burn-in", type=int, default=500)
    args = parser.parse_args(argv)
    settings = rules(args.gradients)
    print(f"load average at the start: {os.getloadavg()[0]:.2f}", flush=True)
    print("| posterior | d | " + " | ".join(settings) + " |")
    print("|---|---|" + "---|" * len(settings))
    for model in args.models:
        from ckam_bench.targets.pymc import PyMCModel

        dim = PyMCModel(f"ckam_bench.posteriordb.models:{model}").dim
        medians = warm_ups(model, settings, args.seeds, args.burn_in)
        cells = [f"{g:,.0f} / {s * 1e3:.1f} ms".replace(",", " ") for g, s in medians.values()]
        print(f"| {model} | {dim} | " + " | ".join(cells) + " |", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
