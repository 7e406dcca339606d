"""Peers at their native speed: CPU time per gradient of each peer sampler run directly, as its
library's users run it, against the same peer inside the harness (``sampler=<peer>``).

For each model (posteriordb's mesquite, kidscore_interaction and arK as PyMC targets, and the
built-in logistic_german) and each peer, side by side in one process, in ``--repeats`` ABBA
quadruples (direct, harness, harness, direct) after one untimed run of each:

* **direct** — the library as its users run it:
  - nutpie on a PyMC model: ``nutpie.compile_pymc_model(model, backend="numba")`` then
    ``nutpie.sample`` (one chain, one core); on a built-in target (no PyMC model): nutpie's
    sampler on the target's compiled density handed over as a C callback with nothing around it
    (:mod:`ckam_bench.samplers.nutpie_native` with the gate open), i.e. what nutpie's numba path
    does;
  - NumPyro: its NUTS kernel and warm-up adapter (``NUTS(potential_fn=...)``) over every
    iteration in one jitted loop collecting the draws, what ``MCMC.run`` compiles (``MCMC.run``
    itself recompiles at each call);
  - BlackJAX: ``window_adaptation(blackjax.nuts, ...).run`` and its documented inference loop
    (``lax.scan`` over the kernel's ``step``), jitted; each compiled by a first, untimed, run;
* **harness** — :class:`ckam_bench.engine.runner.Runner` with ``sampler=<peer>``, an iteration budget,
  the default checkpoint schedule, no metrics, on its CPU sampler clock;
* **ours** — ``sampler=nuts`` through the harness, for reference.

CPU time per gradient = process CPU seconds (the libraries compute on threads of their own) /
gradient evaluations (nutpie direct: its Σ n_steps; JAX peers: Σ leapfrog steps + 1; harness:
the run's ``n_grad``). The process is pinned to one core before JAX starts (``--no-pin`` not to):
unpinned, XLA's CPU runtime spreads some executions of a compiled loop over its thread pool and
the same executable's CPU time per gradient varies up to 3x between runs. Pinned and idle, this
virtual machine's speed still drifts: one compiled BlackJAX run on logistic_german, repeated
in one process, took 26.0-26.7 µs per gradient four times, then 31-37.6 (user time only, no
system time, no other process), so the ratio is taken within each quadruple, where a drift of
seconds cancels, and the table gives the median ratio and its range over the quadruples.
One quadruple's ratio spreads by ±0.15-0.25 here, so a model's median of a few is known to
about ±0.05; the verdict per peer is the median over all its quadruples on all models, printed
with its 95 % distribution-free (sign-test) interval.
Goal: harness / direct ≤ 1.10 for every peer. The load
average is printed at the start and the end: publish figures only from an idle machine
(load average < 1.5 on 2 cores); under load the CPU time per gradient is inflated and noisy.

    python scripts/bench_peer_overhead.py [--models mesquite arK] [--peers nutpie] [--warmup 500]
        [--draws 5000] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
if "--no-pin" not in sys.argv and hasattr(os, "sched_setaffinity"):
    # One chain, one core, for every library alike, before JAX starts its thread pool (sized by
    # the CPUs the process may use): on 2 cores XLA's CPU runtime moves a compiled loop's work
    # between pool threads on some executions and not others, and the CPU time per gradient of
    # one executable varied 3.7-12.5 µs from run to run on mesquite; pinned, 3.65-3.8.
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})

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


def direct_numpyro(sampler, target, warmup: int, draws: int):
    """NumPyro's NUTS kernel and its warm-up adapter over every iteration in one jitted
    ``lax.fori_loop`` collecting each iteration's position and ``num_steps`` (what NumPyro's
    ``MCMC.run`` / ``fori_collect`` compiles), compiled first: ``MCMC.run`` with a
    ``potential_fn`` re-traces and recompiles at every call (about 3 s on these models), which
    is not a cost per gradient. Returns ``run() -> (CPU seconds, gradient evaluations)``."""
    import jax

    peers._jax()  # float64, as the peers run
    init, step = sampler._functions(target)
    init = jax.jit(init)
    n = warmup + draws

    @jax.jit
    def chain(carry):
        def body(i, val):
            carry, z, steps = val
            carry, rec = step(carry)
            return carry, z.at[i].set(rec["x"]), steps.at[i].set(rec["n_steps"])

        z = jax.numpy.zeros((n, target.dim))
        steps = jax.numpy.zeros(n, np.int64)
        return jax.lax.fori_loop(0, n, body, (carry, z, steps))[1:]

    def run():
        c0 = time.process_time()
        carry = init(jax.random.PRNGKey(int(np.random.default_rng(SEED).integers(2**63))), _start(target))
        z, steps = jax.block_until_ready(chain(carry))
        return time.process_time() - c0, int(np.asarray(steps).sum()) + 1

    return run


def direct_blackjax(target, warmup: int, draws: int):
    """BlackJAX as its docs run it: ``window_adaptation(blackjax.nuts, ...).run`` then the
    inference loop (``lax.scan`` over the kernel's ``step``, collecting the states), each
    jitted and compiled by the first, untimed, call."""
    import blackjax
    import jax

    peers._jax()  # float64, as the peers run
    log_density = target.jax_log_density()
    adaptation = blackjax.window_adaptation(blackjax.nuts, log_density, target_acceptance_rate=0.8)
    key = jax.random.PRNGKey(int(np.random.default_rng(SEED).integers(2**63)))
    x0 = _start(target)

    @jax.jit
    def tune(key):
        (state, params), info = adaptation.run(key, x0, num_steps=warmup)
        return state, params, info.info.num_integration_steps.sum()

    @jax.jit
    def sample(key, state, params):
        step = blackjax.nuts(log_density, **params).step

        def one(state, k):
            state, info = step(k, state)
            return state, (state.position, info.num_integration_steps)

        _, (positions, steps) = jax.lax.scan(one, state, jax.random.split(key, draws))
        return positions, steps.sum()

    def run():
        k1, k2 = jax.random.split(key)
        c0 = time.process_time()
        state, params, tuned = tune(k1)
        positions, steps = sample(k2, state, params)
        jax.block_until_ready(positions)
        return time.process_time() - c0, int(tuned) + int(steps) + 1

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
    """Per peer: CPU µs per gradient, medians over ``repeats`` ABBA quadruples (direct, harness,
    harness, direct), and the harness / direct ratio as the median over the quadruples of
    (h₁ + h₂) / (d₁ + d₂), which cancels a drift of the machine's speed within a quadruple."""
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
            run_direct = (direct_numpyro(make(warmup), target, warmup, draws) if name == "numpyro_nuts"
                          else direct_blackjax(target, warmup, draws))
        make(warmup).warm_up(target)
        run_direct()  # compiles, first-run costs
        d, h, ratios = [], [], []
        with tempfile.TemporaryDirectory() as tmp:
            harness(make, target, warmup, draws, Path(tmp) / "warm")
            for r in range(repeats):  # ABBA: direct, harness, harness, direct
                quad = []
                for i, kind in enumerate("dhhd"):
                    if kind == "d":
                        cpu, grads = run_direct()
                    else:
                        cpu, grads, density = harness(make, target, warmup, draws, Path(tmp) / f"h{r}{i}")
                    quad.append(cpu / grads * 1e6)
                d += [quad[0], quad[3]]
                h += [quad[1], quad[2]]
                ratios.append((quad[1] + quad[2]) / (quad[0] + quad[3]))
        rows.append({"model": model, "peer": name, "direct_us_per_grad": float(np.median(d)),
                     "harness_us_per_grad": float(np.median(h)), "ratio": float(np.median(ratios)),
                     "ratio_range": [float(min(ratios)), float(max(ratios))], "ratios": ratios,
                     "density": density})
    if with_ours:
        with tempfile.TemporaryDirectory() as tmp:
            harness(ours, target, warmup, draws, Path(tmp) / "warm")
            h = []
            for r in range(repeats):
                cpu, grads, _ = harness(ours, target, warmup, draws, Path(tmp) / f"o{r}")
                h.append(cpu / grads * 1e6)
        rows.append({"model": model, "peer": "nuts (ours)", "direct_us_per_grad": float("nan"),
                     "harness_us_per_grad": float(np.median(h)), "ratio": float("nan"),
                     "ratio_range": [float("nan")] * 2, "density": ""})
    return rows


def median_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """The median of ``values`` and a distribution-free confidence interval for the population
    median: order statistics (k, n + 1 - k) with k the largest such that P(Binomial(n, 1/2) < k)
    <= (1 - level) / 2 (the sign test's interval; NaN bounds when n is too small for ``level``)."""
    from scipy.stats import binom

    x = np.sort(np.asarray(values, float))
    n = x.size
    k = int(binom.ppf((1 - level) / 2, n, 0.5))  # the smallest k with P(B <= k) >= alpha/2: P(B <= k - 1) < alpha/2
    if k < 1:
        return float(np.median(x)), float("nan"), float("nan")
    return float(np.median(x)), float(x[k - 1]), float(x[n - k])


def pooled(rows) -> list[str]:
    """Per peer: the median harness / direct over every quadruple of every model, with its 95 %
    interval: the verdict on the 1.1x goal, which one model's few quadruples cannot settle."""
    lines = []
    for peer in dict.fromkeys(r["peer"] for r in rows if r.get("ratios")):
        values = [v for r in rows if r["peer"] == peer for v in r.get("ratios", [])]
        mid, lo, hi = median_interval(values)
        models = sum(r["peer"] == peer for r in rows)
        lines.append(f"{peer}: pooled harness / direct {mid:.3f} (95 % interval of the median {lo:.3f}-{hi:.3f}) "
                     f"over {len(values)} quadruples on {models} models; goal <= 1.10")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--peers", nargs="*", default=None, choices=sorted(PEERS))
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--draws", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-ours", action="store_true", help="skip sampler=nuts")
    parser.add_argument("--json", default=None, help="also write the rows here")
    parser.add_argument("--no-pin", action="store_true",
                        help="do not pin the process to one core (JAX's timings then vary ~3x)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in load)}; "
          f"CPUs this process may use: {sorted(os.sched_getaffinity(0))}")
    if load[0] >= 1.5:
        print("WARNING: the machine is loaded (load average >= 1.5): do not publish these timings")
    print("| model | peer | direct CPU µs/grad | harness CPU µs/grad | harness / direct (range) | nutpie's density |")
    print("|---|---|---|---|---|---|")
    rows = []
    for model in args.models:
        for row in measure(model, args.warmup, args.draws, args.repeats, args.peers, not args.no_ours):
            rows.append(row)
            print(f"| {row['model']} | {row['peer']} | {row['direct_us_per_grad']:.2f} | "
                  f"{row['harness_us_per_grad']:.2f} | {row['ratio']:.3f} ({row['ratio_range'][0]:.2f}-"
                  f"{row['ratio_range'][1]:.2f}) | {row['density']} |", flush=True)
    print()
    print("\n".join(pooled(rows)))
    end = os.getloadavg()
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in end)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"load_start": load, "load_end": end, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
