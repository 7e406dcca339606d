#!/usr/bin/env python
"""Throughput benchmark: iterations per second of sampler time, side by side, as ratios.

Samplers use the cKAM paper's hyperparameters (``experiment=paper_<target>`` presets: the
tables' subsample sizes and cycle lengths). For each target of the matrix it first times a *yardstick*: a bare numpy random-walk loop on
the same target (pre-drawn normals, the target's uncounted log density, nothing else). Then,
for each sampler, it builds the sampler from the same configs as ``ckam-bench`` (Hydra
compose API), warms it up, and measures

* ``it/s`` — iterations per second while the sampler advances in ~20 ms blocks (the runner's
  block size), the median of ``--repeats`` consecutive windows of ``--seconds`` each;
* ``it/s <phase>`` — for samplers with several phases (cKAM: exploration / sampling; KAM:
  burn-in / sampling), the rate when each call advances exactly one whole phase segment;
* ``sampling/rw`` — the sampling phase's it/s over RW's it/s in blocks of the same length
  (the paper's point: cKAM's sampling steps cost what a random walk's cost);
* ``ratio`` — it/s divided by the yardstick's it/s measured in the same run (ratios survive a
  noisy or slower machine better than absolute numbers);
* ``ckpt %`` — the share of wall time spent outside the sampler (metrics, checkpoint writes,
  progress) in a real ``ckam-bench`` run of ``--run-seconds`` with the default checkpoint
  schedule, and ``peak MiB``, that run's peak resident memory (a separate process per run).

With ``--memory-seconds S`` it also runs cKAM and KAM on gmm32 for S seconds through the CLI
and reports peak memory and the cost of the first and last checkpoints (a checkpoint's cost
must not grow with the run length).

Then the rows of issue 23, each a ratio measured in the same run:

* gradient samplers with their paper settings (``--gradient-targets``): it/s per CPU-second
  over the paper's Time(s) rate (goal for gad*: >= 10x) and the overhead beyond their
  evaluations as a share of the evaluations' own cost, over the run and per phase (goal <= 50 %);
* start-up: ``ckam-bench --help``/``--version`` (goal < 0.5 s) and ``list`` (< 3 s), CPU
  seconds of fresh processes (an idle machine's wall time; the wall time is printed beside);
* a plain-numpy user target (no compiled density, so the Python loops run): each sampler's
  CPU per iteration over its own density and gradient evaluations alone (goal <= 2);
* §3: the streaming full-chain ESS over arviz-stats' bulk ESS on AR(1) chains (within 5 %);
* §1: each target's compiled density-and-gradient over JAX's ``value_and_grad`` (<= 1.1; with
  the peers extra). NumPyro's NUTS per CPU-second is ``scripts/bench_peers.py``'s.

BLAS/OpenMP pools are pinned to one thread (threadpoolctl), as in a ``ckam-bench`` run.
It prints markdown tables ending with every goal (goal, measured, met) and writes JSON
(``--json``). Example: ``python scripts/bench_throughput.py --quick``.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from hydra import compose, initialize_config_module
from hydra.utils import instantiate

import ckam_bench  # noqa: F401  (registers the config resolvers)
from ckam_bench.engine import outputs, provenance

SAMPLERS = ["rw", "am", "rbam", "gam", "kam", "ckam"]
TARGETS = ["bimodal", "gmm32"]
# Samplers are built with the cKAM paper's hyperparameters (Tables 1 and 3) for these targets.
PRESETS = {"bimodal": "paper_bimodal", "gmm2d": "paper_gmm2d", "gmm32": "paper_gmm32"}

# Goals of the performance issue: (sampler, target, column, minimum).
GOALS = [
    ("rw", "bimodal", "it/s", 150_000),
    ("am", "bimodal", "it/s", 50_000),
    ("rbam", "bimodal", "it/s", 50_000),
    ("gam", "bimodal", "it/s", 50_000),
    ("kam", "bimodal", "it/s", 10_000),
    ("ckam", "bimodal", "it/s", 20_000),
    ("ckam", "bimodal", "sampling/rw", 0.8),
    ("kam", "gmm32", "it/s", 2_000),
    ("ckam", "gmm32", "it/s", 5_000),
]


PRODUCER = "scripts/bench_throughput.py"  # the written_by of its --json output

def overrides_for(sampler: str, target: str) -> list[str]:
    preset = [f"experiment={PRESETS[target]}"] if target in PRESETS else []
    return [*preset, f"sampler={sampler}", f"target={target}"]


def build(sampler: str, target: str):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides_for(sampler, target))
    return instantiate(cfg.target), instantiate(cfg.sampler)


def yardstick(target, seconds: float, repeats: int) -> float:
    """Bare random-walk loop: pre-drawn numbers, the uncounted log density, no bookkeeping."""
    logpdf = target._log_density
    step = 2.38 / math.sqrt(target.dim)
    rng = np.random.default_rng(0)
    rates = []
    x = target.start.copy()
    lp = logpdf(x)
    n = 20_000
    for _ in range(repeats + 1):  # the first pass warms up
        done, elapsed = 0, 0.0
        while elapsed < seconds:
            steps = step * rng.standard_normal((n, target.dim))
            log_u = np.log(rng.random(n)).tolist()
            t0 = time.perf_counter()
            for i in range(n):
                y = x + steps[i]
                lpy = logpdf(y)
                if log_u[i] < lpy - lp:
                    x, lp = y, lpy
            elapsed += time.perf_counter() - t0
            done += n
        rates.append(done / elapsed)
    return float(np.median(rates[1:]))


def throughput(sampler, target, seconds: float, repeats: int, block_seconds=0.02) -> float:
    """Median it/s over ``repeats`` windows, blocks sized like the runner's (~20 ms)."""
    sampler.warm_up(target)
    state = sampler.init(target, None, np.random.default_rng(1))
    n, t_end = 64, time.perf_counter() + min(1.0, seconds)
    while time.perf_counter() < t_end:  # warm-up; also fills subsamples / histories
        t0 = time.perf_counter()
        state, _ = sampler.advance(state, n)
        n = max(1, int(n * block_seconds / max(time.perf_counter() - t0, 1e-6)))
    rates = []
    for _ in range(repeats):
        done, elapsed = 0, 0.0
        while elapsed < seconds:
            t0 = time.perf_counter()
            state, block = sampler.advance(state, n)
            dt = time.perf_counter() - t0
            elapsed += dt
            done += block.n
            n = max(1, int(0.5 * n + 0.5 * block.n * block_seconds / max(dt, 1e-6)))
        rates.append(done / elapsed)
    return float(np.median(rates))


def phase_throughput(make, seconds: float, probe: int = 5000) -> tuple[dict, float]:
    """it/s per phase, advancing exactly one phase segment per call.

    A probe copy of the sampler (same seed: chains do not depend on block sizes) runs ahead
    to reveal the phase of each coming iteration; the timed copy then advances segment by
    segment, so each call covers one whole phase. Returns the rates and the mean length of
    the last phase's segments (for a same-block-size comparison with RW).
    """
    target_p, probe_s = make()
    target_t, timed = make()
    state_p = probe_s.init(target_p, None, np.random.default_rng(2))
    state_t = timed.init(target_t, None, np.random.default_rng(2))
    timed.warm_up(target_t)
    iters = np.zeros(len(timed.phases))
    spent = np.zeros(len(timed.phases))
    lengths = []
    elapsed = 0.0
    while elapsed < seconds:
        state_p, blk = probe_s.advance(state_p, probe)
        cuts = np.flatnonzero(np.diff(blk.phase)) + 1
        for seg in np.split(blk.phase, cuts):
            t0 = time.perf_counter()
            state_t, _ = timed.advance(state_t, seg.size)
            dt = time.perf_counter() - t0
            elapsed += dt
            iters[seg[0]] += seg.size
            spent[seg[0]] += dt
            if seg[0] == len(timed.phases) - 1:
                lengths.append(seg.size)
    rates = {p: (iters[i] / spent[i] if spent[i] else math.nan) for i, p in enumerate(timed.phases)}
    return rates, float(np.mean(lengths)) if lengths else math.nan


def fixed_block_throughput(sampler, target, block: int, seconds: float) -> float:
    """it/s advancing in blocks of exactly ``block`` iterations (after a warm-up)."""
    sampler.warm_up(target)
    state = sampler.init(target, None, np.random.default_rng(3))
    state, _ = sampler.advance(state, block)
    done, elapsed = 0, 0.0
    while elapsed < seconds:
        t0 = time.perf_counter()
        state, blk = sampler.advance(state, block)
        elapsed += time.perf_counter() - t0
        done += blk.n
    return done / elapsed


def cli_run(sampler: str, target: str, seconds: float, out: Path) -> dict:
    """A real ckam-bench run in its own process: checkpoint share of wall time and peak RSS."""
    code = (
        "import resource, sys; from ckam_bench.commands.cli import main; sys.argv = sys.argv[1:];\n"
        "try:\n    main()\nfinally:\n"
        "    print('MAXRSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"
    )
    cmd = [sys.executable, "-c", code, "ckam-bench", *overrides_for(sampler, target),
           f"budget.seconds={seconds}", "progress=false", f"hydra.run.dir={out}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"ckam-bench failed: {proc.stderr[-2000:]}")
    rss_kb = int(proc.stderr.rsplit("MAXRSS_KB", 1)[1].split()[0])
    trace = pd.read_parquet(out / "trace.parquet")
    last = trace.iloc[-1]
    ckpt_cost = np.diff(np.concatenate([[0.0], trace.eval_seconds.to_numpy()]))
    return {
        "checkpoint_share": float(last.eval_seconds / last.wall_seconds),
        "peak_mib": rss_kb / 1024,
        "checkpoints": int(len(trace)),
        "first_checkpoint_s": float(ckpt_cost[1]) if len(ckpt_cost) > 1 else math.nan,
        "last_checkpoint_s": float(ckpt_cost[-1]),
        "iterations": int(last.iterations),
    }


def divergence_throughput(seconds: float, repeats: int) -> list[dict]:
    """The divergence-minimisation paper's speed goals on banana_dm, measured side by side:
    DM with J = 10 (the paper's constant γ) >= 20k it/s (the authors' code: ~0.09k); Scout and
    PT(5) within 3x of DM per iteration; the finite variants' MH phase (past a 2000-iteration
    adaptive phase, 1000 stored pairs) within 2x of RW. Prints its table, returns the goals."""
    paper = ["sampler.rate=0.002", "sampler.burnin=0"]
    finite = ["sampler.adapt_iterations=2000", "sampler.bank_size=1000", "sampler.rate=0.002", "sampler.burnin=0"]
    configs = {"dm": ["sampler=dm", *paper], "scout": ["sampler=scout", *paper, "sampler.scout_warmup=0"],
               "pt": ["sampler=pt"], "rw": ["sampler=rw", "sampler.step_size=1.0"],
               "dm_finite (MH phase)": ["sampler=dm_finite", *finite],
               "scout_finite (MH phase)": ["sampler=scout_finite", *finite, "sampler.scout_warmup=0"]}
    rates = {}
    for name, overrides in configs.items():
        with initialize_config_module("ckam_bench.conf", version_base="1.3"):
            cfg = compose("config", overrides=[*overrides, "target=banana_dm"])
        rates[name] = throughput(instantiate(cfg.sampler), instantiate(cfg.target), seconds, repeats)
    print("\n| divergence paper, banana_dm | it/s |\n|---|---|")
    for name, rate in rates.items():
        print(f"| {name} | {fmt(rate)} |")
    return [
        {"goal": "dm (J = 10) on banana_dm: it/s >= 20000", "measured": rates["dm"],
         "met": bool(rates["dm"] >= 20_000)},
        {"goal": "dm it/s / scout it/s <= 3", "measured": rates["dm"] / rates["scout"],
         "met": bool(rates["dm"] / rates["scout"] <= 3)},
        {"goal": "dm it/s / pt (5 chains) it/s <= 3", "measured": rates["dm"] / rates["pt"],
         "met": bool(rates["dm"] / rates["pt"] <= 3)},
        {"goal": "rw it/s / dm_finite MH-phase it/s <= 2", "measured": rates["rw"] / rates["dm_finite (MH phase)"],
         "met": bool(rates["rw"] / rates["dm_finite (MH phase)"] <= 2)},
        {"goal": "rw it/s / scout_finite MH-phase it/s <= 2",
         "measured": rates["rw"] / rates["scout_finite (MH phase)"],
         "met": bool(rates["rw"] / rates["scout_finite (MH phase)"] <= 2)},
    ]


# ---------------------------------------------------------------------------- gradient samplers
# Titsias & Dellaportas (2019) Time(s) per table (MATLAB; the paper's machine is not stated):
# (target, sampler) -> seconds for burn-in + 20 000 collected iterations (NUTS: 500 + 20 000);
# HMC is the table's best k, given as (seconds, k).
GAD_PAPER_TIME = {
    "neal100": {"gadmala_fast": 8.7, "gadmala_exact": 10.0, "gadrwm": 7.0, "mala": 3.1, "hmc": (49.7, 20),
                "nuts": 360.5},
    "logistic_caravan": {"gadmala_fast": 23.1, "gadmala_exact": 95.1, "gadrwm": 22.6, "mala": 22.8,
                         "hmc": (225.5, 10), "nuts": 1412.1},
    "logistic_australian": {"gadmala_fast": 8.1, "gadmala_exact": 13.5, "gadrwm": 7.7, "mala": 7.0,
                            "hmc": (37.0, 5), "nuts": 41.3},
    "logistic_ripley": {"gadmala_fast": 3.3, "gadmala_exact": 4.9, "gadrwm": 3.1, "mala": 2.8, "hmc": (14.7, 5),
                        "nuts": 7.5},
    "logistic_pima": {"gadmala_fast": 4.6, "gadmala_exact": 6.8, "gadrwm": 4.2, "mala": 4.0, "hmc": (20.3, 5),
                      "nuts": 15.2},
    "logistic_heart": {"gadmala_fast": 4.1, "gadmala_exact": 6.4, "gadrwm": 3.8, "mala": 3.5, "hmc": (18.4, 5),
                       "nuts": 15.4},
    "logistic_german": {"gadmala_fast": 11.0, "gadmala_exact": 22.4, "gadrwm": 10.4, "mala": 9.2,
                        "hmc": (43.4, 5), "nuts": 47.4},
}
GAD_EXPERIMENTS = {"neal100": "gad_neal", "gp51": "gad_gp51", "gauss2d_corr": "gad_gauss2d"}


def _evaluation_loops():
    """Compiled loops that only evaluate a target (density; density and gradient; Hessian)."""
    from ckam_bench import jit

    def density_loop(f, X, reps):
        total = 0.0
        for r in range(reps):
            total += f(X[r % X.shape[0]])
        return total

    def gradient_loop(f, X, reps):
        out = np.empty(X.shape[1])
        total = 0.0
        for r in range(reps):
            total += f(X[r % X.shape[0]], out) + out[0]
        return total

    def hessian_loop(f, h, X, reps):
        out = np.empty((X.shape[1], X.shape[1]))
        total = 0.0
        for r in range(reps):
            h(X[r % X.shape[0]], out)
            total += out[0, 0]
        return total

    i8 = jit.types.int64
    return (jit.kernel(jit.A2, i8)(density_loop), jit.gradient_kernel(jit.A2, i8)(gradient_loop),
            jit.gradient_kernel(jit.A2, i8, hessian=True)(hessian_loop))


def _evaluation_costs(target, points: np.ndarray, hessian: bool) -> tuple[float, float, float]:
    """CPU seconds of one density, one density with its gradient and (when ``hessian``) one
    Hessian, alone, timed on ``points`` (states of the run) in compiled loops (the Python
    functions when the target has no compiled ones), in the same process."""
    from ckam_bench import jit

    X = np.ascontiguousarray(points, dtype=float)
    density_loop, gradient_loop, hessian_loop = _evaluation_loops()
    de, dg, hs = (jit.compiled_log_density(target), jit.compiled_log_density_and_grad(target),
                  jit.compiled_hessian(target))

    def per_call(run, reps):
        run(2)  # compile / warm
        best = math.inf
        for _ in range(3):
            t0 = time.process_time()
            run(reps)
            best = min(best, (time.process_time() - t0) / reps)
        return best

    def python(fn):
        return lambda reps: [fn(X[r % len(X)]) for r in range(reps)]

    t_grad = per_call((lambda k: gradient_loop(dg, X, k)) if dg is not None else
                      python(lambda x: (target._log_density(x), target._grad_log_density(x))), 5000)
    t_dens = per_call((lambda k: density_loop(de, X, k)) if de is not None else python(target._log_density), 5000)
    t_hess = 0.0
    if hessian:
        t_hess = per_call((lambda k: hessian_loop(dg, hs, X, k)) if hs is not None and dg is not None else
                          python(target._hessian_log_density), 500)
    return t_dens, t_grad, t_hess


def _evaluation_seconds(costs, n_density: int, n_grad: int, n_hessian: int) -> float:
    """Seconds that ``n_density`` densities (of which ``n_grad`` with their gradient) and
    ``n_hessian`` Hessians take alone, from :func:`_evaluation_costs`."""
    t_dens, t_grad, t_hess = costs
    return n_grad * t_grad + max(n_density - n_grad, 0) * t_dens + n_hessian * t_hess


def gradient_rows(targets: list[str], cap_seconds: float) -> list[dict]:
    """Each gradient sampler on each target with its paper settings: iterations per CPU-second
    over a paper-length run (burn-in + 20 000; capped at ``cap_seconds`` of CPU), the sampler's
    overhead beyond its density, gradient and Hessian evaluations (timed alone in the same run,
    in compiled loops) as a share of the evaluation cost — over the run and per phase (burn-in:
    the adaptation of gad*'s L, NUTS's warm-up; sampling) — and the speed over the paper's
    Time(s) column."""
    rows = []
    for tname in targets:
        experiment = GAD_EXPERIMENTS.get(tname, "gad_" + tname.replace("logistic_mnist56", "mnist"))
        paper = GAD_PAPER_TIME.get(tname, {})
        for sname in ("gadmala_fast", "gadmala_exact", "gadrwm", "mala", "hmc", "nuts"):
            extra = []
            spec = paper.get(sname)
            if sname == "hmc":
                extra = [f"sampler.n_leapfrog={spec[1] if spec else 10}"]
            try:
                with initialize_config_module("ckam_bench.conf", version_base="1.3"):
                    cfg = compose("config", overrides=[f"experiment={experiment}", f"sampler={sname}",
                                                       f"target={tname}", *extra])
                target, sampler = instantiate(cfg.target), instantiate(cfg.sampler)
            except Exception as exc:  # a target another branch provides, or a sampler it declines
                print(f"[{tname}] {sname}: not run ({type(exc).__name__}: {exc})", file=sys.stderr)
                continue
            if sampler.skip(target)[0]:
                continue
            total = int(cfg.budget.max_iterations)
            sampler.warm_up(target)
            state = sampler.init(target, None, np.random.default_rng(0))
            target.reset_counters()
            done, elapsed, n, points = 0, 0.0, 256, []
            per_phase = {}  # phase -> [iterations, seconds, densities, gradients, Hessians]
            while done < total and elapsed < cap_seconds:
                counts = (target.n_density, target.n_grad, getattr(target, "n_hessian", 0))
                t0 = time.process_time()
                state, block = sampler.advance(state, min(n, total - done))
                dt = time.process_time() - t0
                elapsed += dt
                done += block.n
                points.append(np.array(state.x))
                acc = per_phase.setdefault(sampler.phases[int(block.phase[-1])], [0, 0.0, 0, 0, 0])
                acc[0] += block.n
                acc[1] += dt
                acc[2] += target.n_density - counts[0]
                acc[3] += target.n_grad - counts[1]
                acc[4] += getattr(target, "n_hessian", 0) - counts[2]
                n = max(1, int(0.5 * n + 0.5 * block.n * 0.02 / max(dt, 1e-6)))
            rate = done / elapsed
            X = np.array(points)
            costs = _evaluation_costs(target, X, getattr(target, "n_hessian", 0) > 0)
            evals = _evaluation_seconds(costs, target.n_density, target.n_grad, getattr(target, "n_hessian", 0))
            label = sname if sname != "hmc" else f"hmc-{extra[0].split('=')[1]}"
            row = {"sampler": label, "target": tname, "it/s": rate, "iterations": done,
                   "grad/it": target.n_grad / done, "overhead/eval": (elapsed - evals) / evals if evals else np.nan}
            for phase, (k, sec, nd, ng, nh) in per_phase.items():  # blocks labelled by their last phase
                ev = _evaluation_seconds(costs, nd, ng, nh)
                row[f"overhead/eval {phase}"] = (sec - ev) / ev if ev else np.nan
            if spec is not None:
                seconds = spec[0] if isinstance(spec, tuple) else spec
                row["x paper"] = rate / (total / seconds)
            rows.append(row)
            print(f"[{tname}] {label}: {rate:,.0f} it/s, overhead {row['overhead/eval']:.2f} x evaluations, "
                  f"{row.get('x paper', float('nan')):.1f} x the paper's rate", file=sys.stderr)
    return rows


# ---------------------------------------------------------------------------- target=pymc
PYMC_MODEL = ",".join(f"ckam_bench.posteriordb.models:{name}"
                      for name in ("eight_schools_noncentered", "arK", "diamonds"))
PYMC_SAMPLERS = ("mala", "hmc", "nuts", "gadmala_fast")


def _pymc_window_ratios(target, sampler, seconds: float, repeats: int, warm_seconds: float) -> dict:
    """One sampler on one target: CPU seconds per gradient inside the harness and of the same
    compiled function alone, medians over ``repeats`` windows (see :func:`pymc_rows`)."""
    from ckam_bench import jit

    _, gradient_loop, _ = _evaluation_loops()
    sampler.warm_up(target)
    state = sampler.init(target, None, np.random.default_rng(0))
    compiled = jit.compiled_log_density_and_grad(target)
    n, t_end = 64, time.thread_time() + warm_seconds
    while state.t < getattr(sampler, "burn_in", 0) and time.thread_time() < t_end:  # past adaptation
        t0 = time.thread_time()
        state, block = sampler.advance(state, n)
        n = max(1, int(0.5 * n + 0.5 * block.n * 0.02 / max(time.thread_time() - t0, 1e-6)))
    inside, alone, per_iteration = [], [], []
    for window in range(repeats + 1):  # the first window warms up; CPU time of this thread
        elapsed, grads, iterations, points = 0.0, 0, 0, []
        while elapsed < seconds:
            before = target.n_grad
            t0 = time.thread_time()
            state, block = sampler.advance(state, n)
            dt = time.thread_time() - t0
            elapsed += dt
            grads += target.n_grad - before
            iterations += block.n
            points.append(np.array(state.x))
            n = max(1, int(0.5 * n + 0.5 * block.n * 0.02 / max(dt, 1e-6)))
        X = np.ascontiguousarray(points, dtype=float)
        t0 = time.thread_time()
        gradient_loop(compiled, X, grads)  # as many calls as the window made, right after it
        if window:
            inside.append(elapsed / grads)
            alone.append((time.thread_time() - t0) / grads)
            per_iteration.append(grads / iterations)
    inside, alone = float(np.median(inside)), float(np.median(alone))
    return {"dim": target.dim, "grad/it": float(np.median(per_iteration)), "us/grad harness": 1e6 * inside,
            "us/grad alone": 1e6 * alone, "us/grad added": 1e6 * (inside - alone), "ratio": inside / alone,
            "state": state}


def pymc_rows(spec: str, seconds: float, repeats: int) -> tuple[list[dict], list[dict]]:
    """target=pymc: a gradient's cost inside the harness over the same compiled function alone.

    ``spec``: one ``target.model`` or several, comma-separated (default: three posteriordb suite
    models, eight schools non-centred (d = 10, ~1 µs per gradient), arK (d = 7, ~3 µs) and
    diamonds (d = 26, ~45 µs)). Inside: each gradient sampler (default config), once past its
    burn-in, advances in ~20 ms blocks as under the runner; CPU seconds per gradient evaluation.
    Alone: right after each window, the target's compiled ``f(x, grad_out)`` (pytensor's numba
    function behind the C-callable wrapper of :mod:`ckam_bench.targets.pymc`, what the kernels
    call) as many times in a bare compiled loop over the window's states. Medians over
    ``repeats`` windows, in one process. Goal: the ratio is at most 1.5 (the harness adds at most
    half a gradient).

    A sampler's own cost per gradient does not depend on the model: after each model, every
    sampler also runs on a built-in compiled target of the same dimension, a diagonal Gaussian
    with the posterior's variances (NUTS's adapted metric, so NUTS builds about the same trees),
    whose gradient costs next to nothing: its ``us/grad added`` is the sampler's bookkeeping per
    gradient (rows on ``gaussian_d<d>``, not goals)."""
    from ckam_bench.targets.gaussians import Gaussian

    rows, goals = [], []

    def config(overrides):
        with initialize_config_module("ckam_bench.conf", version_base="1.3"):
            return compose("config", overrides=overrides)

    def measure(target, sampler, sname):
        row = _pymc_window_ratios(target, sampler, seconds, repeats, warm_seconds=10 * seconds)
        state = row.pop("state")
        row = {"sampler": sname, "target": target.name, **row}
        rows.append(row)
        print(f"[pymc] {sname} on {target.name}: {row['us/grad harness']:.2f} us per gradient in the harness, "
              f"{row['us/grad alone']:.2f} us alone ({row['ratio']:.2f}x; {row['us/grad added']:.2f} us added, "
              f"{row['grad/it']:.1f} gradients per iteration)", file=sys.stderr)
        return row, state

    for model in [m.strip() for m in spec.split(",") if m.strip()]:
        variances = None
        for sname in PYMC_SAMPLERS:
            try:
                cfg = config(["target=pymc", f"target.model={model}", f"sampler={sname}"])
                target, sampler = instantiate(cfg.target), instantiate(cfg.sampler)
            except Exception as exc:  # PyMC not installed: pip install "ckam-bench[pymc]"
                print(f"[pymc] {sname}: not run ({type(exc).__name__}: {exc})", file=sys.stderr)
                return rows, goals
            row, state = measure(target, sampler, sname)
            goals.append({"goal": f"{sname} on {target.name} (target=pymc): gradient cost in the "
                                  "harness <= 1.5x the compiled function alone",
                          "measured": row["ratio"], "met": bool(row["ratio"] <= 1.5)})
            if hasattr(state, "inv_metric"):
                variances = np.array(state.inv_metric)
        d = target.dim
        variances = np.ones(d) if variances is None else variances
        for sname in PYMC_SAMPLERS:
            sampler = instantiate(config(["target=neal100", f"sampler={sname}", f"target.dim={d}"]).sampler)
            measure(Gaussian(np.zeros(d), np.diag(variances), d, name=f"gaussian_d{d}"), sampler, sname)
    return rows, goals


def gradient_vs_matvecs(dataset: str = "mnist56", rounds: int = 7, reps: int = 50) -> dict:
    """One compiled gradient of ``logistic_<dataset>`` (the function the samplers' compiled loops
    call, timed inside a compiled loop) against the bare numpy/BLAS cost of the two
    matrix-vector products it needs (Xw and Xᵀs), alternating in the same run, BLAS pinned to
    one thread (threadpoolctl), process CPU time: median ms of each and their ratio (goal <= 1.5)."""
    from threadpoolctl import threadpool_limits

    from ckam_bench import jit
    from ckam_bench.targets.logistic import LogisticRegression

    target = LogisticRegression(dataset)
    _, gradient_loop, _ = _evaluation_loops()
    dg = jit.compiled_log_density_and_grad(target)
    W = np.random.default_rng(0).normal(0.0, 0.05, (4, target.dim))
    X = target.X
    ours, bare = [], []
    with threadpool_limits(limits=1):
        gradient_loop(dg, W, 2)
        for _ in range(rounds):
            t0 = time.process_time()
            gradient_loop(dg, W, reps)
            t1 = time.process_time()
            for r in range(reps):
                X.T @ (X @ W[r % 4])
            t2 = time.process_time()
            ours.append((t1 - t0) / reps)
            bare.append((t2 - t1) / reps)
    ours_ms, bare_ms = 1000 * float(np.median(ours)), 1000 * float(np.median(bare))
    return {"dataset": dataset, "gradient_ms": ours_ms, "matvecs_ms": bare_ms, "ratio": ours_ms / bare_ms}


def direct_glass_log_density(X, y, theta, eps, prior_variance: float = 5.0, jitter: float = 1e-6) -> float:
    """The yardstick of the gp_glass row: log p(θ) + log p̂(y|θ), the same Laplace +
    importance-sampling formula as :class:`ckam_bench.targets.gp_classification.GPClassification`
    written directly with numpy/scipy (cdist for K with θ_d = log ℓ_d², plain Newton steps of
    Rasmussen & Williams' Algorithm 3.1 from f = 0, Cholesky factors, triangular solves), with
    the standard normals ``eps`` (n × N) given: f = L_K v, v ~ N(L_Kᵀ â, M⁻¹), M = I + L_KᵀWL_K.
    Equal to the target's estimate for the same draws (to rounding)."""
    from scipy.linalg import cho_solve, cholesky, solve_triangular
    from scipy.spatial.distance import cdist
    from scipy.special import expit, log_expit, logsumexp

    n, eye, t = len(y), np.eye(len(y)), 0.5 * (y + 1.0)
    scaled = X * np.exp(-0.5 * theta)
    K = np.exp(-0.5 * cdist(scaled, scaled, "sqeuclidean")) + jitter * eye
    f, a = np.zeros(n), np.zeros(n)
    for _ in range(200):
        p = expit(f)
        sw = np.sqrt(p * (1.0 - p))
        L = cholesky(eye + sw[:, None] * K * sw[None, :], lower=True)
        b = sw**2 * f + t - p
        a = b - sw * cho_solve((L, True), sw * (K @ b))
        f_new = K @ a
        done = np.max(np.abs(f_new - f)) < 1e-9
        f = f_new
        if done:
            break
    p = expit(f)
    LK = cholesky(K, lower=True)
    C = np.sqrt(p * (1.0 - p))[:, None] * LK
    LM = cholesky(eye + C.T @ C, lower=True)
    V = (LK.T @ a)[:, None] + solve_triangular(LM, eps, lower=True, trans="T")
    log_w = (np.sum(log_expit(y[:, None] * (LK @ V)), axis=0) - 0.5 * np.sum(V**2, axis=0)
             + 0.5 * np.sum(eps**2, axis=0) - np.log(np.diag(LM)).sum())
    return float(logsumexp(log_w) - math.log(eps.shape[1]) - 0.5 * theta @ theta / prior_variance
                 - 0.5 * len(theta) * math.log(2.0 * math.pi * prior_variance))


def glass_estimate_ratio(seconds: float, repeats: int) -> dict:
    """One gp_glass estimate (the target's ``log_density``) against the direct numpy/scipy
    evaluation of the same formula, timed alternately in the same run at θ = 0 and at a
    posterior-like θ: median ms of each and their ratio (goal <= 2); also the largest
    difference of the two values for the same normals."""
    from ckam_bench.targets.gp_classification import gp_glass

    glass = gp_glass()
    thetas = [np.zeros(glass.dim), np.random.default_rng(3).normal(0.0, 1.0, glass.dim)]
    eps = np.random.default_rng(1).standard_normal((glass.X.shape[0], glass.n_importance))
    gap = 0.0
    for theta in thetas:
        glass.rng = np.random.default_rng(1)  # the target draws exactly eps
        gap = max(gap, abs(glass.log_density(theta) - direct_glass_log_density(glass.X, glass.y, theta, eps)))
    ours, direct = [], []
    t_end = time.perf_counter() + max(seconds, 0.5) * max(repeats, 1)
    while time.perf_counter() < t_end or len(ours) < 10:
        for theta in thetas:
            t0 = time.perf_counter()
            glass.log_density(theta)
            t1 = time.perf_counter()
            direct_glass_log_density(glass.X, glass.y, theta, eps)
            t2 = time.perf_counter()
            ours.append(t1 - t0)
            direct.append(t2 - t1)
    ours_ms, direct_ms = 1000 * float(np.median(ours)), 1000 * float(np.median(direct))
    return {"ours_ms": ours_ms, "direct_ms": direct_ms, "ratio": ours_ms / direct_ms, "max_gap": gap,
            "estimates": len(ours)}


def kamh_throughput(seconds: float, repeats: int) -> list[dict]:
    """The KAMH paper's speed rows: KAM on 8-D banana (B(0.03, 100)) with subsample 1000 and the
    Gaussian kernel (median heuristic), against the kameleon-mcmc code's 0.45k it/s on this kind of
    machine (goal >= 10x); and one gp_glass likelihood estimate (Laplace + 100 importance samples),
    in ms. Prints its table, returns the goals."""
    base = ["sampler=kam", "target=banana_moderate", "kernel=gaussian", "sampler.subsample_size=1000"]
    variants = {"z frozen (KAMH-LS after burn-in), median heuristic": [
                    "kernel.median_heuristic=true", "schedule@sampler.subsample_prob=window",
                    "sampler.subsample_prob.until=0"],
                "z redrawn w.p. t^-1/2, fixed lengthscale": ["kernel.median_heuristic=false"],
                "z redrawn w.p. t^-1/2, median heuristic at each redraw": ["kernel.median_heuristic=true"]}
    rates = {}
    for name, extra in variants.items():
        with initialize_config_module("ckam_bench.conf", version_base="1.3"):
            cfg = compose("config", overrides=[*base, *extra])
        rates[name] = throughput(instantiate(cfg.sampler), instantiate(cfg.target), seconds, repeats)
    rate = rates["z frozen (KAMH-LS after burn-in), median heuristic"]
    glass = glass_estimate_ratio(seconds, repeats)
    print("\n| KAMH paper | value |\n|---|---|")
    for name, value in rates.items():
        print(f"| kam, 8-D banana, subsample 1000, Gaussian kernel, {name}: it/s | {fmt(value)} |")
    print(f"| gp_glass: one likelihood estimate (ms) | {fmt(glass['ours_ms'])} |")
    print(f"| gp_glass: direct numpy/scipy Laplace + IS, same formula, same run (ms) | {fmt(glass['direct_ms'])} |")
    print(f"| gp_glass: estimate / direct | {fmt(glass['ratio'])} |")
    print(f"| gp_glass: largest |difference| of the two for the same normals | {glass['max_gap']:.2g} |")
    return [{"goal": "kam on 8-D banana (n = 1000, Gaussian, z frozen): it/s >= 10 x 450 (kameleon-mcmc)",
             "measured": rate, "met": bool(rate >= 4500)},
            {"goal": "gp_glass: one estimate <= 2 x the direct numpy/scipy evaluation (same run)",
             "measured": glass["ratio"], "met": bool(glass["ratio"] <= 2.0 and glass["max_gap"] < 1e-6)}]


# ---------------------------------------------------------------------------- start-up
STARTUP_GOALS = [("--help", 0.5), ("--version", 0.5), ("list", 3.0)]


def startup_rows(repeats: int) -> list[dict]:
    """``ckam-bench --help``, ``--version`` and ``list`` in fresh processes (the installed console
    script): median wall seconds and median CPU seconds (user + system of the child) over
    ``repeats`` runs. The goals are for an idle machine; on a loaded one the CPU time is the
    estimate of an idle machine's wall time (the command runs on one thread)."""
    script = Path(sys.executable).parent / "ckam-bench"
    command = [str(script)] if script.exists() else [sys.executable, "-c", "from ckam_bench.commands.entry import main; main()"]
    rows = []
    for args, goal in STARTUP_GOALS:
        walls, cpus = [], []
        for _ in range(repeats):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run([*command, *args.split()], capture_output=True, text=True)
            walls.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if proc.returncode != 0:
                raise RuntimeError(f"ckam-bench {args} failed: {proc.stderr[-2000:]}")
        rows.append({"command": f"ckam-bench {args}", "wall s": float(np.median(walls)),
                     "cpu s": float(np.median(cpus)), "goal s": goal})
        print(f"[start-up] ckam-bench {args}: {rows[-1]['wall s']:.2f} s wall, {rows[-1]['cpu s']:.2f} s CPU",
              file=sys.stderr)
    return rows


# ---------------------------------------------------------------------------- plain-numpy target
def plain_target(dim: int = 10):
    """A Target subclass with ``_log_density`` and ``_grad_log_density`` in numpy only (no
    compiled density: every sampler runs its Python loop), N(0, Σ) with Σ_ij = 0.5^|i-j|."""
    from ckam_bench.targets.base import Target

    class UserGaussian(Target):
        name = "user_gaussian"

        def __init__(self, dim):
            super().__init__(dim)
            idx = np.arange(dim)
            self.precision = np.linalg.inv(0.5 ** np.abs(idx[:, None] - idx[None, :]))

        def _log_density(self, x):
            return float(-0.5 * x @ (self.precision @ x))

        def _grad_log_density(self, x):
            return -(self.precision @ x)

    return UserGaussian(dim)


PLAIN_SAMPLERS = ["rw", "am", "rbam", "gam", "arwm", "imh", "pt", "kam", "ckam", "mala", "hmc", "nuts", "gadrwm",
                  "gadmala_fast", "dm"]


def plain_rows(seconds: float, repeats: int, dim: int = 10) -> list[dict]:
    """Each sampler's Python loop on :func:`plain_target`: CPU seconds per iteration (blocks of
    ~20 ms, median of ``repeats`` windows after a warm-up) against the same iterations' density
    and gradient evaluations alone (the target's numpy functions called in a bare Python loop on
    the window's states, as many times as the window evaluated them), in the same run.
    Goal: the ratio is at most 2 (the loop costs at most as much again as the evaluations)."""
    from omegaconf import open_dict

    rows = []
    for sname in PLAIN_SAMPLERS:
        with initialize_config_module("ckam_bench.conf", version_base="1.3"):
            cfg = compose("config", overrides=[f"sampler={sname}", "target=gauss2d_corr"])
        with open_dict(cfg):
            cfg.target = {"dim": dim}  # the sampler's ${target.dim}
        target, sampler = plain_target(dim), instantiate(cfg.sampler)
        sampler.warm_up(target)
        state = sampler.init(target, None, np.random.default_rng(0))
        state, _ = sampler.advance(state, 200)
        n, ratios, per_it = 64, [], []
        for _ in range(repeats + 1):  # the first window warms up
            elapsed, done, points = 0.0, 0, []
            counts = (target.n_density, target.n_grad)
            while elapsed < seconds:
                t0 = time.process_time()
                state, block = sampler.advance(state, n)
                dt = time.process_time() - t0
                elapsed += dt
                done += block.n
                points.append(np.array(state.x, dtype=float).reshape(-1, dim)[0])
                n = max(1, int(0.5 * n + 0.5 * block.n * 0.02 / max(dt, 1e-6)))
            n_dens, n_grad = target.n_density - counts[0], target.n_grad - counts[1]
            X = np.array(points)
            t0 = time.process_time()
            for r in range(n_dens):
                target._log_density(X[r % len(X)])
            for r in range(n_grad):
                target._grad_log_density(X[r % len(X)])
            evals = time.process_time() - t0
            ratios.append(elapsed / evals)
            per_it.append(elapsed / done)
        rows.append({"sampler": sname, "target": f"{target.name} (numpy, d = {dim})",
                     "us/it": 1e6 * float(np.median(per_it[1:])), "loop/eval": float(np.median(ratios[1:])),
                     "evals/it": (n_dens + n_grad) / done})
        print(f"[plain numpy] {sname}: {rows[-1]['us/it']:.1f} us/it, {rows[-1]['loop/eval']:.2f}x its evaluations",
              file=sys.stderr)
    return rows


# ---------------------------------------------------------------------------- full-chain ESS
def ess_rows(n: int = 200_000) -> list[dict]:
    """Issue 23 §3: the streaming full-chain ESS (:class:`ckam_bench.metrics.ess.StreamingESS`,
    fed in blocks of 5 000) over arviz-stats' bulk ESS of the whole stored chain, for AR(1)
    chains of several correlations (n draws, 2 coordinates; goal: within 5 %)."""
    from arviz_stats.base import array_stats
    from scipy.signal import lfilter

    from ckam_bench.metrics.ess import StreamingESS

    rows = []
    for phi in (0.0, 0.5, 0.9, 0.99):
        e = np.random.default_rng(int(100 * phi)).standard_normal((n, 2))
        e[0] /= math.sqrt(1.0 - phi**2)
        x = lfilter([1.0], [1.0, -phi], e, axis=0)
        stream = StreamingESS(2)
        for i in range(0, n, 5000):
            stream.update(x[i:i + 5000])
        ref = np.asarray(array_stats.ess(x.T, chain_axis=None, draw_axis=-1, method="bulk"), dtype=float)
        rows.append({"phi": phi, "ratio": 1.0 + float(np.max(np.abs(stream.ess() / ref - 1.0))),
                     "streaming": float(stream.ess()[0]), "arviz": float(ref[0])})
    return rows


# ---------------------------------------------------------------------------- gradients against JAX
def jax_gradient_rows(targets=("logistic_german", "logistic_australian", "logistic_caravan", "neal100", "gp51")):
    """Issue 23 §1: each target's compiled density-and-gradient against JAX's ``value_and_grad``
    (scripts/bench_peers.py's measurement: both in compiled loops, one thread, alternating);
    empty without the peers extra (jax). NumPyro's NUTS against ours per CPU-second takes
    minutes per target: scripts/bench_peers.py."""
    try:
        import jax
    except ImportError:
        print("[jax] not installed: no gradient-cost rows (pip install -e .[peers])", file=sys.stderr)
        return []
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_peers

    rows = []
    for tname in targets:
        target, _, _ = bench_peers.build(tname, "nuts")
        log_density = bench_peers.jax_log_density(target)
        try:
            bench_peers.check_same_density(target, log_density)
        except SystemExit as exc:  # not the same function: no ratio
            print(f"[jax] {exc}", file=sys.stderr)
            continue
        rows.append({"target": tname, **bench_peers.gradient_ratio(target, log_density)})
    return rows


def fmt(v, digits=3):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float) and abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}" if isinstance(v, float) else str(v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--seconds", type=float, default=2.0, help="length of one timed window")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--run-seconds", type=float, default=20.0,
                    help="budget of the ckam-bench run measuring checkpoint share and memory")
    ap.add_argument("--memory-seconds", type=float, default=0.0,
                    help="also run kam/ckam on gmm32 this long (600 = the 10-minute goal)")
    ap.add_argument("--quick", action="store_true", help="short windows (a smoke run)")
    ap.add_argument("--json", default="bench_throughput.json")
    ap.add_argument("--gradient-targets", default="neal100,gp51",
                    help="targets of the gradient-sampler rows (e.g. add logistic_german); '' skips them")
    ap.add_argument("--gradient-seconds", type=float, default=20.0,
                    help="cap on each gradient sampler's paper-length run")
    ap.add_argument("--pymc-model", default=PYMC_MODEL,
                    help="target.model of the target=pymc rows (needs the [pymc] extra); '' skips them")
    ap.add_argument("--startup-repeats", type=int, default=3, help="runs of each start-up command")
    ap.add_argument("--plain-dim", type=int, default=10, help="dimension of the plain-numpy target")
    args = ap.parse_args(argv)
    try:  # --json replaces only this script's own earlier output: refused before any work
        outputs.check_own_json(args.json, PRODUCER)
    except outputs.FolderRefused as exc:
        ap.exit(2, f"{ap.prog}: refused: --json: {exc}\n")
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):  # one chain is one core, as in a ckam-bench run (threads=1)
        run_all(args)


def run_all(args):
    if args.quick:
        args.seconds, args.repeats, args.run_seconds = 0.5, 3, 3.0
    samplers, targets = args.samplers.split(","), args.targets.split(",")

    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="ckam-bench-"))
    for tname in targets:
        target, _ = build("rw", tname)
        base = yardstick(target, args.seconds, args.repeats)
        rows.append({"sampler": "numpy RW loop", "target": tname, "it/s": base, "ratio": 1.0})
        print(f"[{tname}] yardstick {base:,.0f} it/s", file=sys.stderr)
        for sname in samplers:
            target, sampler = build(sname, tname)
            rate = throughput(sampler, target, args.seconds, args.repeats)
            row = {"sampler": sname, "target": tname, "it/s": rate, "ratio": rate / base}
            if len(sampler.phases) > 1:
                rates, seg = phase_throughput(lambda: build(sname, tname), args.seconds * 2)
                for phase, r in rates.items():
                    row[f"it/s {phase}"] = r
                if "exploration" in rates and "sampling" in rates and seg == seg:
                    rw_target, rw = build("rw", tname)
                    same = fixed_block_throughput(rw, rw_target, int(round(seg)), args.seconds)
                    row["sampling/rw"] = rates["sampling"] / same
            run = cli_run(sname, tname, args.run_seconds, tmp / f"{sname}_{tname}")
            row["ckpt %"] = 100 * run["checkpoint_share"]
            row["peak MiB"] = run["peak_mib"]
            rows.append(row)
            print(f"[{tname}] {sname}: {rate:,.0f} it/s ({rate / base:.2f}x yardstick)",
                  file=sys.stderr)
    table = pd.DataFrame(rows)
    gradient = gradient_rows([t for t in args.gradient_targets.split(",") if t], args.gradient_seconds)

    memory = []
    if args.memory_seconds > 0:
        for sname in ("ckam", "kam"):
            run = cli_run(sname, "gmm32", args.memory_seconds, tmp / f"memory_{sname}")
            memory.append({"sampler": sname, "target": "gmm32", "seconds": args.memory_seconds,
                           **run})

    goals = []
    for sname, tname, col, minimum in GOALS:
        sel = table[(table.sampler == sname) & (table.target == tname)]
        if sel.empty or col not in sel:
            continue
        value = float(sel[col].iloc[0])
        goals.append({"goal": f"{sname} on {tname}: {col} >= {minimum:g}", "measured": value,
                      "met": bool(value >= minimum)})
    goals.append({"goal": "checkpoints < 5 % of wall time (every run)",
                  "measured": float(table["ckpt %"].max()),
                  "met": bool(table["ckpt %"].max() < 5)})
    mnist = gradient_vs_matvecs()
    print(f"\n| logistic_mnist56, one thread | ms |\n|---|---|\n"
          f"| compiled gradient (compiled loop) | {fmt(mnist['gradient_ms'])} |\n"
          f"| numpy X @ w and X.T @ s (same run) | {fmt(mnist['matvecs_ms'])} |\n"
          f"| gradient / two matvecs | {fmt(mnist['ratio'])} |")
    goals.append({"goal": "logistic_mnist56: one gradient <= 1.5 x its two matrix-vector products (numpy, 1 thread)",
                  "measured": mnist["ratio"], "met": bool(mnist["ratio"] <= 1.5)})
    goals += divergence_throughput(args.seconds, args.repeats)
    goals += kamh_throughput(args.seconds, args.repeats)
    pymc, pymc_goals = pymc_rows(args.pymc_model, args.seconds, args.repeats) if args.pymc_model else ([], [])
    goals += pymc_goals
    for m in memory:
        goals.append({"goal": f"{m['sampler']} gmm32 {m['seconds']:g} s run peaks < 1 GiB",
                      "measured": m["peak_mib"], "met": m["peak_mib"] < 1024})
    # issue 23 §1, §3 and §4
    startup = startup_rows(args.startup_repeats)
    for r in startup:
        goals.append({"goal": f"{r['command']}: CPU s (the idle machine's wall time) < {r['goal s']:g}",
                      "measured": r["cpu s"], "met": bool(r["cpu s"] < r["goal s"])})
    plain = plain_rows(args.seconds, args.repeats, args.plain_dim)
    for r in plain:
        goals.append({"goal": f"{r['sampler']} on a plain-numpy target: loop / its evaluations <= 2",
                      "measured": r["loop/eval"], "met": bool(r["loop/eval"] <= 2.0)})
    ess = ess_rows()
    for r in ess:
        goals.append({"goal": f"streaming full-chain ESS / arviz bulk ESS, AR(1) phi = {r['phi']:g}: "
                              "worst coordinate within 5 %", "measured": r["ratio"], "met": bool(r["ratio"] <= 1.05)})
    jax_rows = jax_gradient_rows() if args.gradient_targets else []
    for r in jax_rows:
        goals.append({"goal": f"{r['target']}: density and gradient / JAX's value_and_grad <= 1.1",
                      "measured": r["ratio"], "met": bool(r["ratio"] <= 1.1)})

    machine = {"date": time.strftime("%Y-%m-%d"), "python": platform.python_version(),
               "cpus": os.cpu_count(), "platform": platform.platform(),
               "processor": platform.processor() or platform.machine(), "cpu_model": provenance.cpu_model() or platform.machine(),
               "load": " ".join(f"{v:.1f}" for v in os.getloadavg())}
    cols = ["sampler", "target", "it/s", "ratio", "it/s exploration", "it/s burnin",
            "it/s sampling", "sampling/rw", "ckpt %", "peak MiB"]
    cols = [c for c in cols if c in table]
    print(f"\nckam-bench throughput, {machine['date']}, {machine['cpus']} CPUs ({machine['cpu_model']}), "
          f"load average {machine['load']}, Python {machine['python']}, {machine['platform']}\n")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for _, r in table.iterrows():
        print("| " + " | ".join(fmt(r.get(c)) for c in cols) + " |")
    if memory:
        print("\n| long run | peak MiB | checkpoints | first ckpt s | last ckpt s | iterations |")
        print("|---|---|---|---|---|---|")
        for m in memory:
            print(f"| {m['sampler']} gmm32 {m['seconds']:g} s | {m['peak_mib']:.0f} | "
                  f"{m['checkpoints']} | {m['first_checkpoint_s']:.4f} | "
                  f"{m['last_checkpoint_s']:.4f} | {m['iterations']:,} |")
    if gradient:
        gcols = ["sampler", "target", "it/s", "iterations", "grad/it", "overhead/eval", "overhead/eval burn_in",
                 "overhead/eval sampling", "x paper"]
        print("\n| " + " | ".join(gcols) + " |\n|" + "---|" * len(gcols))
        for r in gradient:
            print("| " + " | ".join(fmt(r.get(c)) for c in gcols) + " |")
        for r in gradient:
            if "x paper" in r and r["sampler"].startswith("gad"):
                goals.append({"goal": f"{r['sampler']} on {r['target']}: >= 10x the paper's it/s",
                              "measured": r["x paper"], "met": bool(r["x paper"] >= 10)})
            goals.append({"goal": f"{r['sampler']} on {r['target']}: overhead <= 50 % of its evaluations",
                          "measured": r["overhead/eval"], "met": bool(r["overhead/eval"] <= 0.5)})
    print("\n| command | wall s | CPU s | goal s |\n|---|---|---|---|")
    for r in startup:
        print(f"| {r['command']} | {fmt(r['wall s'])} | {fmt(r['cpu s'])} | < {r['goal s']:g} |")
    print("\n| sampler | target | us/it | evaluations/it | loop / evaluations |\n|---|---|---|---|---|")
    for r in plain:
        print(f"| {r['sampler']} | {r['target']} | {fmt(r['us/it'])} | {fmt(r['evals/it'])} | {fmt(r['loop/eval'])} |")
    print("\n| AR(1) phi | streaming ESS | arviz bulk ESS | 1 + worst relative gap |\n|---|---|---|---|")
    for r in ess:
        print(f"| {r['phi']:g} | {fmt(r['streaming'])} | {fmt(r['arviz'])} | {fmt(r['ratio'], 4)} |")
    if jax_rows:
        print("\n| target | ours us | JAX us | ours / JAX |\n|---|---|---|---|")
        for r in jax_rows:
            print(f"| {r['target']} | {fmt(r['ours_us'])} | {fmt(r['jax_us'])} | {fmt(r['ratio'])} |")
    if pymc:
        pcols = ["sampler", "target", "dim", "us/grad harness", "us/grad alone", "ratio"]
        print("\n| " + " | ".join(pcols) + " |\n|" + "---|" * len(pcols))
        for r in pymc:
            print("| " + " | ".join(fmt(r.get(c)) for c in pcols) + " |")
    print("\n| goal | measured | met |\n|---|---|---|")
    for g in goals:
        print(f"| {g['goal']} | {fmt(g['measured'])} | {'yes' if g['met'] else 'NO'} |")
    outputs.write_own_json(args.json, 
        {"machine": machine, "args": vars(args), "rows": table.to_dict("records"), "gradient_rows": gradient,
         "pymc_rows": pymc, "startup": startup, "plain_rows": plain, "ess_rows": ess, "jax_rows": jax_rows,
         "memory": memory, "goals": goals}, PRODUCER)
    print(f"\nwrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
