"""Overhead of running a peer sampler inside the harness against calling its library directly.

For each peer (nutpie, numpyro_nuts, blackjax_nuts) on one target, the same chain (same seed,
same start, same warm-up and draws) is run

* directly: ``nutpie.sample`` on the same ``from_pyfunc`` model (the same density callback,
  without the harness's gate); for NumPyro and BlackJAX, the library's kernel and adaptation
  steps over every iteration in one jitted ``lax.fori_loop`` (what NumPyro's ``MCMC.run`` does; it
  gives the same draws but compiles again at every call);
* in the harness: :class:`ckam_bench.runner.Runner` with an iteration budget, the default
  checkpoint schedule and no metrics, timed on its CPU sampler clock (``budget.clock=cpu``),

side by side in one process, alternating, ``--repeats`` times (after one untimed run of each); the draws are checked to be the
same. Compilation is excluded from both (each is warmed up once first). CPU time is the
process's (the libraries sample on threads of their own), so other processes loading the
machine do not inflate it. The goal: harness / direct ≤ 1.10.

    python scripts/bench_peer_overhead.py [--target logistic_german] [--warmup 500] [--draws 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from ckam_bench.runner import Budget, Runner, checkpoint_times
from ckam_bench.samplers import peers
from ckam_bench.targets.gaussians import gauss2d_corr, neal100
from ckam_bench.targets.logistic import LogisticRegression

TARGETS = {"logistic_german": lambda: LogisticRegression("german"), "gauss2d_corr": gauss2d_corr,
           "neal100": neal100}
SEED = 0


def _start(target) -> np.ndarray:
    """The start of every chain: off the target's default start (nutpie refuses a point whose
    gradient has a zero coordinate, such as the mode of gauss2d_corr)."""
    return np.asarray(target.start, float) + 0.1


def _cpu(fn):
    c0 = time.process_time()
    out = fn()
    return time.process_time() - c0, out


def _harness(sampler, target, warmup: int, draws: int, folder: Path):
    target.reset_counters()
    labels = {"run_id": "bench", "target": target.name, "sampler": sampler.name, "kernel": "none",
              "seed": SEED}
    runner = Runner(sampler, target, {}, Budget(1e6, max_iterations=warmup + draws, clock="cpu"), folder,
                    np.random.default_rng(SEED), labels, x0=_start(target), checkpoints=checkpoint_times(1e6),
                    progress=False, samples_capacity=draws, status_extra={"config_hash": "bench"})
    status = runner.run()
    return status["totals"]["sampler_cpu_seconds"], runner.samples.data.copy()


def _key_seed() -> int:
    """The JAX peers' PRNG seed for the harness's generator of seed SEED (their first draw)."""
    return int(np.random.default_rng(SEED).integers(2**63))


def _loop(sampler, target, warmup: int, draws: int):
    """The peer's library step (its kernel and adaptation) over every iteration in one jitted
    ``lax.fori_loop`` from the peer's init, compiled once: the library called directly, no
    blocks (a traced trip count, as in the harness: XLA compiles a scan, with a static count, into
    different arithmetic, and NumPyro's chain then drifts apart from the first draw)."""
    import jax

    init, step = sampler._functions(target)

    init = jax.jit(init)

    @jax.jit
    def chain(carry, n):
        def body(i, val):
            carry, out = val
            carry, rec = step(carry)
            return carry, out.at[i].set(rec["x"])

        out = jax.numpy.zeros((warmup + draws, target.dim))
        _, out = jax.lax.fori_loop(0, n, body, (carry, out))
        return out

    def run():
        carry = jax.device_get(init(jax.random.PRNGKey(_key_seed()), _start(target)))
        return np.asarray(chain(carry, np.int64(warmup + draws)))[warmup:]

    return run


def direct_numpyro(target, warmup: int, draws: int):
    """NumPyro's NUTS kernel (``init`` then ``sample``) in one jitted loop, as ``MCMC.run`` drives
    it (``MCMC.run`` gives the same draws, but compiles again at every call)."""
    return _loop(peers.NumPyroNUTS(burn_in=warmup), target, warmup, draws)


def direct_blackjax(target, warmup: int, draws: int):
    """BlackJAX's NUTS kernel and window-adaptation pieces in one jitted loop (BlackJAX's own
    ``window_adaptation.run`` runs the whole warm-up in one call with another key sequence)."""
    return _loop(peers.BlackJAXNUTS(burn_in=warmup), target, warmup, draws)


def direct_nutpie(target, warmup: int, draws: int):
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc

    f = target.jit_log_density_and_grad()
    start = _start(target)

    def logp(x):
        grad = np.empty(x.shape[0])
        return f(x, grad), grad

    def run():
        got = []

        def expand(x):
            got.append(np.array(x))
            return {}

        model = from_pyfunc(target.dim, lambda: logp, lambda *s: expand, [], [], [],
                            make_initial_point_fn=lambda seed: start.copy())
        nutpie.sample(model, draws=draws, tune=warmup, chains=1, cores=1,
                      seed=int(np.random.default_rng(SEED).integers(2**63)), progress_bar=False,
                      target_accept=0.8, maxdepth=10)
        return np.array(got[warmup:])

    return run


PEERS = {"numpyro_nuts": (peers.NumPyroNUTS, direct_numpyro), "blackjax_nuts": (peers.BlackJAXNUTS, direct_blackjax),
         "nutpie": (lambda burn_in: peers.Nutpie(burn_in=burn_in, max_draws=10**6), direct_nutpie)}


def peer_overhead(target_name: str = "logistic_german", warmup: int = 500, draws: int = 5000,
                  repeats: int = 3, only=None) -> list[dict]:
    """Harness CPU / direct CPU per peer (medians over ``repeats`` alternating pairs)."""
    rows = []
    target = TARGETS[target_name]()
    for name, (make, direct) in PEERS.items():
        if only and name not in only:
            continue
        run_direct = direct(target, warmup, draws)
        sampler = make(burn_in=warmup)
        sampler.warm_up(target)
        run_direct()  # compiles
        d_times, h_times = [], []
        with tempfile.TemporaryDirectory() as tmp:
            _harness(make(burn_in=warmup), target, warmup, draws, Path(tmp) / "warm")  # first-run costs
            for r in range(repeats):
                d, direct_draws = _cpu(run_direct)
                h, harness_draws = _harness(make(burn_in=warmup), target, warmup, draws, Path(tmp) / f"h{r}")
                d_times.append(d)
                h_times.append(h)
        same = direct_draws.shape == harness_draws.shape and float(np.abs(direct_draws - harness_draws).max())
        rows.append({"peer": name, "target": target_name, "direct_cpu": float(np.median(d_times)),
                     "harness_cpu": float(np.median(h_times)),
                     "ratio": float(np.median(h_times) / np.median(d_times)), "max_draw_difference": same})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="logistic_german", choices=sorted(TARGETS))
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--draws", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peers", nargs="*", default=None, choices=sorted(PEERS))
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{v:.1f}' for v in __import__('os').getloadavg())}")
    print("| peer | target | direct CPU s | harness CPU s | harness / direct | max |draw difference| |")
    print("|---|---|---|---|---|---|")
    for row in peer_overhead(args.target, args.warmup, args.draws, args.repeats, args.peers):
        print(f"| {row['peer']} | {row['target']} | {row['direct_cpu']:.3f} | {row['harness_cpu']:.3f} | "
              f"{row['ratio']:.3f} | {row['max_draw_difference']:.3g} |")


if __name__ == "__main__":
    main()
