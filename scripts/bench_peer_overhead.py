"""Peers at their native speed: CPU time per gradient of each peer sampler run directly, as its
library's users run it, against the same peer inside the harness (``sampler=<peer>``).

For each model (posteriordb's mesquite, kidscore_interaction and arK as PyMC targets, and the
built-in logistic_german) and each peer, side by side in one process, alternating,
``--repeats`` times after one untimed run of each:

* **direct** — the library as its users run it:
  - nutpie on a PyMC model: ``nutpie.compile_pymc_model(model, backend="numba")`` then
    ``nutpie.sample`` (one chain, one core); on a built-in target (no PyMC model): nutpie's
    sampler on the target's compiled density handed over as a C callback with nothing around it
    (:mod:`ckam_bench.samplers.nutpie_native` with the gate open), i.e. what nutpie's numba path
    does;
  - NumPyro / BlackJAX: the library's NUTS kernel and window adaptation over every iteration in
    one jitted ``lax.fori_loop`` on the same JAX density (what NumPyro's ``MCMC.run`` compiles;
    BlackJAX's documented loop), compiled first;
* **harness** — :class:`ckam_bench.engine.runner.Runner` with ``sampler=<peer>``, an iteration budget,
  the default checkpoint schedule, no metrics, on its CPU sampler clock;
* **ours** — ``sampler=nuts`` through the harness, for reference.

CPU time per gradient = process CPU seconds (the libraries compute on threads of their own) /
gradient evaluations (nutpie direct: its Σ n_steps; JAX peers: Σ leapfrog steps + 1; harness:
the run's ``n_grad``). Goal: harness / direct ≤ 1.10 for every peer and model. The load
average is printed at the start and the end: publish figures only from an idle machine
(load average < 1.5 on 2 cores); under load the CPU time per gradient is inflated and noisy.

    python scripts/bench_peer_overhead.py [--models mesquite arK] [--peers nutpie] [--warmup 500]
        [--draws 5000] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from ckam_bench.engine.runner import Budget, Runner, checkpoint_times  # noqa: E402
from ckam_bench.samplers import peers  # noqa: E402

MODELS = {"mesquite": "ckam_bench.posteriordb.models:mesquite",
          "kidscore_interaction": "ckam_bench.posteriordb.models:kidscore_interaction",
          "arK": "ckam_bench.posteriordb.models:arK", "logistic_german": None}
SEED = 0


def make_target(name: str):
    if MODELS[name] is None:
        from ckam_bench.targets.logistic import LogisticRegression

        return LogisticRegression(name.removeprefix("logistic_"))
    from ckam_bench.targets.pymc import PyMCModel

    return PyMCModel(MODELS[name])


def _start(target) -> np.ndarray:
    """Every chain's start: off the target's default start (nutpie refuses a point whose
    gradient has a zero coordinate)."""
    return np.asarray(target.start, float) + 0.1


def harness(make, target, warmup: int, draws: int, folder: Path) -> tuple[float, int, str]:
    """(sampler CPU seconds, gradient evaluations, the density path nutpie took) of one run
    through the Runner."""
    target.reset_counters()
    sampler = make(warmup)
    labels = {"run_id": "bench", "target": target.name, "sampler": sampler.name, "kernel": "none",
              "seed": SEED}
    runner = Runner(sampler, target, {}, Budget(1e6, max_iterations=warmup + draws, clock="cpu"), folder,
                    np.random.default_rng(SEED), labels, x0=_start(target), checkpoints=checkpoint_times(1e6),
                    progress=False, samples_capacity=draws, status_extra={"config_hash": "bench"})
    status = runner.run()
    return (status["totals"]["sampler_cpu_seconds"], int(status["totals"]["n_grad"]),
            sampler.describe().get("density", ""))


def direct_jax(sampler, target, warmup: int, draws: int):
    """The library's kernel and adaptation over every iteration in one jitted ``lax.fori_loop``;
    returns ``run() -> (CPU seconds, gradient evaluations)``."""
    import jax

    peers._jax()
    init, step = sampler._functions(target)
    init = jax.jit(init)

    @jax.jit
    def chain(carry, n):
        def body(i, val):
            carry, steps = val
            carry, rec = step(carry)
            return carry, steps + rec["n_steps"].astype(np.int64)

        return jax.lax.fori_loop(0, n, body, (carry, np.int64(0)))[1]

    def run():
        c0 = time.process_time()
        carry = init(jax.random.PRNGKey(int(np.random.default_rng(SEED).integers(2**63))), _start(target))
        steps = int(chain(carry, np.int64(warmup + draws))) + 1
        return time.process_time() - c0, steps

    return run


def direct_nutpie(target, warmup: int, draws: int):
    """nutpie as its users run it: ``compile_pymc_model(backend="numba")`` + ``nutpie.sample`` for
    a PyMC model, else the target's compiled density as nutpie's C callback (gate open)."""
    import nutpie

    from ckam_bench.samplers import nutpie_native

    seed = int(np.random.default_rng(SEED).integers(2**63))
    if hasattr(target, "model"):  # a PyMC target
        compiled = nutpie.compile_pymc_model(target.model, backend="numba")

        def make():
            return compiled
    else:
        f = target.jit_log_density_and_grad()
        cfuncs = nutpie_native.harness_cfuncs(f)
        start = _start(target)

        def make():
            gate = nutpie_native.Gate(target.dim, float("nan"), 10)
            gate.ctl[nutpie_native.QUOTA] = 2**62  # open: nothing waits
            return nutpie_native.native_model(target.dim, cfuncs, gate, lambda s: start.copy(), f)

    def run():
        model = make()
        c0 = time.process_time()
        raw = nutpie.sample(model, draws=draws, tune=warmup, chains=1, cores=1, seed=seed,
                            progress_bar=False, target_accept=0.8, maxdepth=10, return_raw_trace=True)
        cpu = time.process_time() - c0  # sampling only: not the conversion to an InferenceData
        _, stats = raw.get_arrow_trace()
        return cpu, int(sum(np.asarray(s.column("n_steps")).sum() for s in stats))

    return run


PEERS = {"nutpie": lambda w: peers.Nutpie(burn_in=w, max_draws=10**6),
         "numpyro_nuts": lambda w: peers.NumPyroNUTS(burn_in=w),
         "blackjax_nuts": lambda w: peers.BlackJAXNUTS(burn_in=w)}


def ours(w):
    from ckam_bench.samplers.nuts import NUTS

    return NUTS(burn_in=w)


def measure(model: str, warmup: int, draws: int, repeats: int, only=None, with_ours=True) -> list[dict]:
    """Per peer: medians over ``repeats`` alternating pairs of CPU µs per gradient."""
    target = make_target(model)
    rows = []
    for name, make in PEERS.items():
        if only and name not in only:
            continue
        if name == "nutpie":
            run_direct = direct_nutpie(target, warmup, draws)
        else:
            if not target.has_jax_density:
                continue
            run_direct = direct_jax(make(warmup), target, warmup, draws)
        make(warmup).warm_up(target)
        run_direct()  # compiles, first-run costs
        d, h = [], []
        with tempfile.TemporaryDirectory() as tmp:
            harness(make, target, warmup, draws, Path(tmp) / "warm")
            for r in range(repeats):
                cpu, grads = run_direct()
                d.append(cpu / grads * 1e6)
                cpu, grads, density = harness(make, target, warmup, draws, Path(tmp) / f"h{r}")
                h.append(cpu / grads * 1e6)
        rows.append({"model": model, "peer": name, "direct_us_per_grad": float(np.median(d)),
                     "harness_us_per_grad": float(np.median(h)),
                     "ratio": float(np.median(h) / np.median(d)), "density": density})
    if with_ours:
        with tempfile.TemporaryDirectory() as tmp:
            harness(ours, target, warmup, draws, Path(tmp) / "warm")
            h = []
            for r in range(repeats):
                cpu, grads, _ = harness(ours, target, warmup, draws, Path(tmp) / f"o{r}")
                h.append(cpu / grads * 1e6)
        rows.append({"model": model, "peer": "nuts (ours)", "direct_us_per_grad": float("nan"),
                     "harness_us_per_grad": float(np.median(h)), "ratio": float("nan"), "density": ""})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--peers", nargs="*", default=None, choices=sorted(PEERS))
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--draws", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-ours", action="store_true", help="skip sampler=nuts")
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in load)}")
    if load[0] >= 1.5:
        print("WARNING: the machine is loaded (load average >= 1.5): do not publish these timings")
    print("| model | peer | direct CPU µs/grad | harness CPU µs/grad | harness / direct | nutpie's density |")
    print("|---|---|---|---|---|---|")
    rows = []
    for model in args.models:
        for row in measure(model, args.warmup, args.draws, args.repeats, args.peers, not args.no_ours):
            rows.append(row)
            print(f"| {row['model']} | {row['peer']} | {row['direct_us_per_grad']:.2f} | "
                  f"{row['harness_us_per_grad']:.2f} | {row['ratio']:.3f} | {row['density']} |", flush=True)
    end = os.getloadavg()
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in end)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"load_start": load, "load_end": end, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
