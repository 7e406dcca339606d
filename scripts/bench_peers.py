#!/usr/bin/env python
"""Peer benchmark: ckam-bench's NUTS against NumPyro's NUTS on the same posteriors, side by side.

Needs the ``peers`` extra (``pip install -e .[peers]``: jax, numpyro). For each target of
``--targets`` (German, Australian, Caravan, neal100) and each seed, alternating:

* **NumPyro NUTS** (JAX jitted, float64, one CPU thread) on the potential −log π written in
  jax.numpy with exactly our formula (checked equal to our density at random points first);
  diagonal mass matrix, target acceptance 0.8, tree depth 10 — NumPyro's defaults and ours;
  start at our target's start point;
* **ckam-bench NUTS** (``sampler=nuts``, its compiled kernel) with the same warm-up and draws,
  built from the same configs as ``ckam-bench``;
* **gadmala_fast** with its paper settings (``experiment=gad_*``: 20 000 adaptation + 20 000
  draws), the figure the gradient-paper tables rank on, beside them.

Each run is timed in process CPU time (all threads of this process) from the start of warm-up
to the last draw, excluding compilation (NumPyro's NUTS kernel runs warm-up and draws in one
``lax.scan`` compiled ahead of time; ours compiles in ``warm_up``); BLAS is pinned to one thread
(threadpoolctl) and XLA to one thread. Every run's min ESS is ckam-bench's split bulk ESS
(:func:`ckam_bench.metrics.ess.ess_per_dim`) over the coordinates of its draws; gradients count
warm-up and draws (NumPyro: its ``num_steps`` per iteration, plus one at the start).

Prints, per target, the median over seeds of min ESS per CPU-second and per 1000 gradients for
each sampler and the ratios ours / NumPyro (goal: ours >= 1.0x NumPyro per CPU-second), then each
target's gradient cost against JAX's (one thread, both inside compiled loops: our density and
gradient in a numba loop, JAX's ``value_and_grad`` in a ``lax.fori_loop``; goal <= 1.1x).
Writes JSON (``--json``). Example: ``python scripts/bench_peers.py --seeds 3``.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from ckam_bench.engine import outputs  # noqa: E402

TARGETS = ["logistic_german", "logistic_australian", "logistic_caravan", "neal100", "gp51"]
PEER_TARGETS = ["logistic_german", "logistic_australian", "logistic_caravan", "neal100"]
EXPERIMENTS = {"neal100": "gad_neal", "gp51": "gad_gp51"}


PRODUCER = "scripts/bench_peers.py"  # the written_by of its --json output

def need_extra():
    try:
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except ImportError as exc:
        sys.exit(f"bench_peers.py needs the peers extra (pip install -e .[peers]): {exc}")


def build(target_name: str, sampler: str, overrides=()):
    from hydra import compose, initialize_config_module
    from hydra.utils import instantiate

    import ckam_bench  # noqa: F401  (registers the config resolvers)

    experiment = EXPERIMENTS.get(target_name, "gad_" + target_name)
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment={experiment}", f"sampler={sampler}",
                                           f"target={target_name}", *overrides])
    return instantiate(cfg.target), instantiate(cfg.sampler), cfg


def jax_log_density(target):
    """−U: the target's log density in jax.numpy (same formula as its compiled one)."""
    import jax.numpy as jnp

    if target.name.startswith("logistic_"):
        X, c = jnp.asarray(target.X), jnp.asarray(target.X.T @ target.y)

        def log_density(w):
            return c @ w - jnp.sum(jnp.logaddexp(0.0, X @ w)) - 0.5 * w @ w

        return log_density
    mean, log_const = jnp.asarray(target._mean), target._log_const
    if np.count_nonzero(target.cov - np.diag(np.diag(target.cov))) == 0:
        inv_sd = jnp.asarray(np.diag(target._chol_inv))

        def log_density(x):
            z = inv_sd * (x - mean)
            return log_const - 0.5 * z @ z

        return log_density
    chol_inv = jnp.asarray(target._chol_inv)

    def log_density(x):
        z = chol_inv @ (x - mean)
        return log_const - 0.5 * z @ z

    return log_density


def check_same_density(target, log_density):
    """Our density and the jax one agree to 1e-10 relative at random points (else: exit)."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = target.start + rng.normal(0.0, 0.1, target.dim)
        ours, theirs = target._log_density(x), float(log_density(x))
        if not math.isclose(ours, theirs, rel_tol=1e-10):
            sys.exit(f"{target.name}: the jax density differs from ours ({theirs} vs {ours})")


def min_ess(draws: np.ndarray) -> float:
    from ckam_bench.metrics.ess import ess_per_dim

    return float(np.min(ess_per_dim(draws)))


def numpyro_chain(target, log_density, warmup: int, draws: int):
    """A function key -> (draws, gradients) running NumPyro's NUTS kernel for warm-up + draws in
    one jitted ``lax.scan``, compiled ahead of time here (``MCMC.run`` would compile again at
    every call)."""
    import jax
    from numpyro.infer import NUTS

    kernel = NUTS(potential_fn=lambda x: -log_density(x), target_accept_prob=0.8, max_tree_depth=10)
    init = np.asarray(target.start, float)

    def scan(state):
        def step(s, _):
            s = kernel.sample(s, (), {})
            return s, (s.z, s.num_steps)

        return jax.lax.scan(step, state, None, length=warmup + draws)[1]

    def start(key):
        return kernel.init(key, num_warmup=warmup, init_params=init, model_args=(), model_kwargs={})

    compiled = jax.jit(scan).lower(start(jax.random.PRNGKey(0))).compile()

    def chain(key):
        z, steps = jax.block_until_ready(compiled(start(key)))
        return np.asarray(z)[warmup:], float(np.sum(np.asarray(steps))) + 1.0  # + the start's

    return chain


def run_numpyro(chain, seed: int) -> dict:
    """One NumPyro chain timed in process CPU (its kernel state set up inside the clock)."""
    import jax

    t0 = time.process_time()
    samples, grads = chain(jax.random.PRNGKey(seed))
    cpu = time.process_time() - t0
    return {"cpu": cpu, "min_ess": min_ess(samples), "grads": grads}


def run_ours(target_name: str, sampler_name: str, seed: int, overrides=()) -> dict:
    """One of our samplers for its configured length (burn-in + draws), timed in CPU."""
    target, sampler, cfg = build(target_name, sampler_name, overrides)
    total = int(cfg.budget.max_iterations)
    sampler.warm_up(target)  # compiles (outside the clock, as in a ckam-bench run)
    state = sampler.init(target, None, np.random.default_rng(seed))
    target.reset_counters()
    kept, done, n = [], 0, 2000
    t0 = time.process_time()
    while done < total:
        state, block = sampler.advance(state, min(n, total - done))
        done += block.n
        if len(block.samples):
            kept.append(np.array(block.samples))
    cpu = time.process_time() - t0
    draws = np.concatenate(kept)
    return {"cpu": cpu, "min_ess": min_ess(draws), "grads": float(target.n_grad), "draws": len(draws)}


def gradient_ratio(target, log_density, seconds: float = 0.2) -> dict:
    """µs per density-and-gradient: ours in a compiled numba loop, JAX's value_and_grad in a
    jitted fori_loop, alternating, one thread, process CPU time (median of 5 rounds of about
    ``seconds`` each, so that a call's fixed cost does not count)."""
    import jax

    from ckam_bench import jit

    def loop(f, X, reps):
        out = np.empty(X.shape[1])
        total = 0.0
        for r in range(reps):
            total += f(X[r % X.shape[0]], out) + out[0]
        return total

    ours_loop = jit.gradient_kernel(jit.A2, jit.types.int64)(loop)
    fg = jit.compiled_log_density_and_grad(target)
    value_and_grad = jax.value_and_grad(log_density)
    W = np.ascontiguousarray(target.start + np.random.default_rng(1).normal(0.0, 0.05, (4, target.dim)))
    ours_loop(fg, W, 2)
    t0 = time.process_time()
    ours_loop(fg, W, 1000)
    reps = max(1000, int(1000 * seconds / max(time.process_time() - t0, 1e-6)))

    @jax.jit
    def jax_loop(W):
        def body(r, carry):  # carry * 0 keeps each evaluation inside the loop
            v, g = value_and_grad(W[r % 4] + carry * 0.0)
            return carry + v + g[0]

        return jax.lax.fori_loop(0, reps, body, 0.0)

    jax_loop(W).block_until_ready()
    ours, theirs = [], []
    for _ in range(5):
        t0 = time.process_time()
        ours_loop(fg, W, reps)
        t1 = time.process_time()
        jax_loop(W).block_until_ready()
        t2 = time.process_time()
        ours.append((t1 - t0) / reps)
        theirs.append((t2 - t1) / reps)
    o, j = 1e6 * float(np.median(ours)), 1e6 * float(np.median(theirs))
    return {"ours_us": o, "jax_us": j, "ratio": o / j}


def fmt(v, digits=3):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{digits}g}"


# ------------------------------------------------------------------ the suite's tables
ESTIMATOR_ROWS = ("nuts", "nuts_fisher_stan", "nuts_stan_nutpie", "nuts_fisher", "nuts_lowrank",
                  "nuts_reference_diag", "nuts_reference_dense", "nutpie", "nutpie_lowrank")
LIMIT = {"nuts": "nuts_reference_diag", "nuts_fisher_stan": "nuts_reference_diag",
         "nuts_stan_nutpie": "nuts_reference_diag", "nuts_fisher": "nuts_reference_diag",
         "nutpie": "nuts_reference_diag", "nuts_lowrank": "nuts_reference_dense",
         "nutpie_lowrank": "nuts_reference_dense"}
PAIRS = (("nuts_fisher", "nutpie"), ("nuts_lowrank", "nutpie_lowrank"))
CPU_PEERS = ("nutpie", "numpyro_nuts", "blackjax_nuts")
OURS = ("nuts_fisher", "nuts_lowrank")  # our adaptive NUTS: nutpie's estimator, and our best
CHEAP_US = 20.0  # a gradient this cheap or cheaper: the CPU-second goal applies


def suite_rows(root) -> "list[dict]":
    """One row per stored posteriordb run under ``root``: posterior, sampler config, seed,
    gradients and CPU seconds to b² < 0.01 for good (∞: never), whether the run was flagged
    ``divergent`` (transitions after the warm-up diverged), min ESS per gradient and CPU µs per
    gradient at the end of the budget."""
    from ckam_bench.report.aggregate import load_results
    from ckam_bench.report.posteriordb_suite import _posterior, run_evaluations
    from ckam_bench.report.ranking import cost_to_accuracy

    rows = []
    for run in load_results(root).runs:
        name = _posterior(run)
        if name is None:
            continue
        trace = run.trace.sort_values("checkpoint")
        last = trace.iloc[-1]
        grads = float(last.get("n_grad", 0.0))
        cpu = float(last.get("sampler_cpu_seconds", last["sampler_seconds"]))
        to_acc = run_evaluations(run)[0]
        cpu_to_acc = cost_to_accuracy(trace, costs=("sampler_cpu_seconds",))["sampler_cpu_seconds"]
        if math.isnan(to_acc):  # no b² at any checkpoint: no draw collected (the budget spent in warm-up)
            to_acc = cpu_to_acc = math.inf
        rows.append({"posterior": name, "sampler": run.choices.get("sampler") or run.sampler, "seed": run.seed,
                     "grads_to_acc": to_acc, "cpu_to_acc": cpu_to_acc,
                     # runs stored before the flag existed did not record it: NaN
                     "divergent": float("divergent" in run.warnings) if "divergent_sampling" in trace else math.nan,
                     "ess_per_grad": float(last["ess_min"]) / grads if grads > 0 else math.nan,
                     "us_per_grad": 1e6 * cpu / grads if grads > 0 else math.nan})
    return rows


def _median(values) -> float:
    values = [v for v in values if not math.isnan(v)]
    return float(np.median(values)) if values else math.nan


STEPS = (("schedule: nutpie's / Stan's (variance estimator)", "nuts_stan_nutpie", "nuts"),
         ("estimator: Fisher / variance (Stan's windows)", "nuts_fisher_stan", "nuts"),
         ("estimator: Fisher / variance (nutpie's schedule)", "nuts_fisher", "nuts_stan_nutpie"),
         ("low rank / diagonal (Fisher, nutpie's schedule)", "nuts_lowrank", "nuts_fisher"))


def character_summary(cell, posteriors) -> "list[str]":
    """Which part of the adaptation buys what, per posterior character: for each step of the
    ablation (one change at a time), the median over the posteriors of that character of the
    ratio of gradients to b² < 0.01 (< 1: the change helps), over the posteriors both finish,
    and how many the change makes finish (∞ → finite) or lose (finite → ∞)."""
    from ckam_bench.posteriordb import SUITE

    groups = {}
    for p in posteriors:
        entry = SUITE.get(p)
        groups.setdefault(entry.character if entry is not None else "other", []).append(p)
    steps = [(label, a, b) for label, a, b in STEPS if any((p, a) in cell and (p, b) in cell for p in posteriors)]
    if not steps:
        return []
    lines = ["Per character, one change at a time: median ratio of gradients to b² < 0.01 (after / before; "
             "< 1 helps) over the posteriors both finish [n]; +k: finishes k more, −k: k fewer", "",
             "| character (posteriors) | " + " | ".join(label for label, _, _ in steps) + " |",
             "|---|" + "---|" * len(steps)]
    for character in sorted(groups):
        row = [f"{character} ({len(groups[character])})"]
        for _, a, b in steps:
            ratios, gained, lost = [], 0, 0
            for p in groups[character]:
                x, y = cell.get((p, a)), cell.get((p, b))
                if x is None or y is None:
                    continue
                if math.isfinite(x.grads) and math.isfinite(y.grads) and y.grads > 0:
                    ratios.append(x.grads / y.grads)
                gained += math.isfinite(x.grads) and math.isinf(y.grads)
                lost += math.isinf(x.grads) and math.isfinite(y.grads)
            text = f"{np.median(ratios):.2f} [{len(ratios)}]" if ratios else "–"
            text += (f" +{gained}" if gained else "") + (f" −{lost}" if lost else "")
            row.append(text)
        lines.append("| " + " | ".join(row) + " |")
    return lines


def suite_tables(root) -> str:
    """The ablation table (median gradients to b² < 0.01 per posterior and configuration, and
    its ratio to the limit row of the same metric family), and the goals' two ratios per
    posterior: our NUTS's gradients over nutpie's (same estimator), and its CPU seconds to
    b² < 0.01 over each peer's (where a gradient costs ≤ 20 µs)."""
    import pandas as pd

    df = pd.DataFrame(suite_rows(root))
    if df.empty:
        return f"no posteriordb runs under {root}"
    med = df.groupby(["posterior", "sampler"]).agg(
        grads=("grads_to_acc", _median), cpu=("cpu_to_acc", _median), ess=("ess_per_grad", _median),
        us=("us_per_grad", _median), seeds=("seed", "nunique"), divergent=("divergent", "sum"),
        recorded=("divergent", "count")).reset_index()
    cell = {(r.posterior, r.sampler): r for r in med.itertuples()}
    posteriors = sorted(df.posterior.unique())
    present = [s for s in ESTIMATOR_ROWS if s in set(df.sampler)]
    lines = [f"Gradients to b² < 0.01 for good (median over seeds; ∞: never, or no draw collected), and × the limit row "
             f"(the reference's metric) of the same metric family; {len(posteriors)} posteriors, "
             f"seeds per cell: {int(med.seeds.min())}-{int(med.seeds.max())}", "",
             "| posterior | " + " | ".join(present) + " |", "|---|" + "---|" * len(present)]
    for p in posteriors:
        cells = []
        for s in present:
            r = cell.get((p, s))
            if r is None:
                cells.append("")
                continue
            text = "∞" if math.isinf(r.grads) else fmt(r.grads)
            limit = cell.get((p, LIMIT.get(s, "")))
            if limit is not None and math.isfinite(r.grads) and math.isfinite(limit.grads) and limit.grads > 0:
                text += f" ({r.grads / limit.grads:.2g}×)"
            cells.append(text)
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    lines += ["", "Min ESS per 1000 gradients at the end of the budget (median over seeds, warm-up counted)", "",
              "| posterior | " + " | ".join(present) + " |", "|---|" + "---|" * len(present)]
    for p in posteriors:
        lines.append(f"| {p} | " + " | ".join(
            fmt(1000 * cell[(p, s)].ess) if (p, s) in cell else "" for s in present) + " |")
    lines += ["", *character_summary(cell, posteriors)]
    lines += ["", "Goals: our NUTS's gradients to b² < 0.01 over nutpie's (same estimator), and our NUTS's CPU "
              "seconds to b² < 0.01 over each peer's where its gradient costs ≤ 20 µs (< 1: ours ahead)", ""]
    peers = [q for q in CPU_PEERS if q in set(df.sampler)]
    ours_rows = [s for s in OURS if s in set(df.sampler)]
    head = ["posterior", *(f"µs/grad ({s})" for s in ours_rows)] + [f"{a} / {b} grads" for a, b in PAIRS] + \
        [f"{s} / {q} CPU-s" for s in ours_rows for q in peers] + ["divergent after warm-up (seeds)"]
    lines += ["| " + " | ".join(head) + " |", "|---|" + "---|" * (len(head) - 1)]
    ratios = {f"{a}/{b}": [] for a, b in PAIRS}
    cpu_ratios = {(s, q): [] for s in ours_rows for q in peers}
    for p in posteriors:
        row = [p, *(fmt(cell[(p, s)].us) if (p, s) in cell else "" for s in ours_rows)]
        for a, b in PAIRS:
            x, y = cell.get((p, a)), cell.get((p, b))
            value = x.grads / y.grads if x is not None and y is not None and math.isfinite(y.grads) and y.grads > 0 \
                else math.nan
            if x is not None and y is not None and math.isinf(x.grads) and math.isinf(y.grads):
                value = math.nan
            ratios[f"{a}/{b}"].append(value)
            row.append("–" if math.isnan(value) else ("∞" if math.isinf(value) else f"{value:.2f}"))
        for s in ours_rows:
            ours = cell.get((p, s))
            for q in peers:
                y = cell.get((p, q))
                cheap = ours is not None and ours.us <= CHEAP_US
                if ours is None or y is None or not cheap or not math.isfinite(y.cpu) or y.cpu <= 0:
                    row.append("–")
                    continue
                value = ours.cpu / y.cpu
                cpu_ratios[(s, q)].append(value)
                row.append("∞" if math.isinf(value) else f"{value:.2f}")
        shown = [r for s in sorted({*ours_rows, *peers, *(x for pair in PAIRS for x in pair)})
                 if (r := cell.get((p, s))) is not None]
        row.append(", ".join(f"{r.sampler} {int(r.divergent)}/{int(r.recorded)}" for r in shown if r.divergent)
                   or ("none" if shown and all(r.recorded for r in shown) else "not recorded"))
        lines.append("| " + " | ".join(row) + " |")
    for key, values in ratios.items():
        finite = [v for v in values if not math.isnan(v)]
        if finite:
            lines.append(f"\n{key} gradients: median {np.median(finite):.2f}, worst {max(finite):.2f} "
                         f"over {len(finite)} posteriors (goal: median ≤ 1.0, none above 1.5)")
    for (s, q), values in cpu_ratios.items():
        if values:
            ahead = sum(v < 1.0 for v in values)
            lines.append(f"{s} / {q} CPU seconds: ahead (< 1) on {ahead} of {len(values)} cheap posteriors the peer "
                         f"finishes, median {np.median(values):.2f}, worst {max(values):.2f} (goal: ahead on every one)")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default=",".join(PEER_TARGETS), help="targets of the NUTS comparison")
    ap.add_argument("--gradient-targets", default=",".join(TARGETS), help="targets of the gradient ratios")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=5000)
    ap.add_argument("--no-gadmala", action="store_true", help="skip gadmala_fast's figure")
    ap.add_argument("--json", default="bench_peers.json")
    ap.add_argument("--suite", metavar="SWEEP", default=None,
                    help="print the ablation table and the goals' ratios from the posteriordb runs stored "
                         "under SWEEP (a sweep folder) and stop")
    args = ap.parse_args(argv)
    if args.suite is not None:
        if not os.path.isdir(args.suite):
            ap.exit(2, f"{ap.prog}: --suite: no such folder: {args.suite}\n")
        print(suite_tables(args.suite))
        return
    if args.seeds < 1 or args.warmup < 1 or args.draws < 100:
        ap.error("--seeds >= 1, --warmup >= 1 and --draws >= 100 are needed")
    try:  # --json replaces only this script's own earlier output: refused before any work
        outputs.check_own_json(args.json, PRODUCER)
    except outputs.FolderRefused as exc:
        ap.exit(2, f"{ap.prog}: refused: --json: {exc}\n")
    need_extra()
    import jax
    from threadpoolctl import threadpool_limits

    jax.config.update("jax_enable_x64", True)
    from ckam_bench.targets import logistic  # noqa: F401  (targets by name below)

    nuts_length = [f"sampler.burn_in={args.warmup}", f"budget.max_iterations={args.warmup + args.draws}"]
    rows, grads = [], []
    with threadpool_limits(limits=1):
        for tname in [t for t in args.targets.split(",") if t]:
            target, _, _ = build(tname, "nuts")
            log_density = jax_log_density(target)
            check_same_density(target, log_density)
            chain = numpyro_chain(target, log_density, args.warmup, args.draws)  # compiles, untimed
            runs = {"numpyro": [], "ours": [], "gadmala_fast": []}
            for seed in range(args.seeds):  # alternating: NumPyro, ours, gadmala_fast, next seed
                runs["numpyro"].append(run_numpyro(chain, seed))
                runs["ours"].append(run_ours(tname, "nuts", seed, nuts_length))
                if not args.no_gadmala:
                    runs["gadmala_fast"].append(run_ours(tname, "gadmala_fast", seed))
                print(f"[{tname}] seed {seed}: " + ", ".join(
                    f"{k} min ESS {v[-1]['min_ess']:.0f} in {v[-1]['cpu']:.1f} CPU-s, {v[-1]['grads']:.0f} grads"
                    for k, v in runs.items() if v), file=sys.stderr)
            row = {"target": tname}
            for k, v in runs.items():
                if v:
                    row[f"{k} ESS/CPU-s"] = float(np.median([r["min_ess"] / r["cpu"] for r in v]))
                    row[f"{k} ESS/1000 grads"] = float(np.median([1000 * r["min_ess"] / r["grads"] for r in v]))
                    row[f"{k} CPU-s"] = float(np.median([r["cpu"] for r in v]))
            row["ours/numpyro per CPU-s"] = row["ours ESS/CPU-s"] / row["numpyro ESS/CPU-s"]
            row["ours/numpyro per gradient"] = row["ours ESS/1000 grads"] / row["numpyro ESS/1000 grads"]
            if runs["gadmala_fast"]:
                row["gadmala_fast/numpyro per CPU-s"] = row["gadmala_fast ESS/CPU-s"] / row["numpyro ESS/CPU-s"]
            rows.append(row)
        for tname in [t for t in args.gradient_targets.split(",") if t]:
            target, _, _ = build(tname, "nuts")
            log_density = jax_log_density(target)
            check_same_density(target, log_density)
            grads.append({"target": tname, **gradient_ratio(target, log_density)})
            print(f"[{tname}] gradient {grads[-1]['ours_us']:.2f} us vs JAX {grads[-1]['jax_us']:.2f} us",
                  file=sys.stderr)

    machine = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "platform": platform.platform(),
               "python": platform.python_version(), "jax": jax.__version__,
               "numpyro": __import__("numpyro").__version__, "load_average": os.getloadavg()}
    print(f"\nckam-bench vs NumPyro NUTS, {machine['date']}, {machine['cpus']} CPUs, load average "
          f"{machine['load_average'][0]:.1f}, {args.warmup} warm-up + {args.draws} draws, "
          f"median of {args.seeds} seeds, process CPU time\n")
    cols = ["target", "numpyro ESS/CPU-s", "ours ESS/CPU-s", "ours/numpyro per CPU-s", "numpyro ESS/1000 grads",
            "ours ESS/1000 grads", "ours/numpyro per gradient", "gadmala_fast ESS/CPU-s",
            "gadmala_fast/numpyro per CPU-s"]
    cols = [c for c in cols if any(c in r for r in rows)]
    if rows:
        print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
        for r in rows:
            print("| " + " | ".join(fmt(r.get(c)) if c != "target" else r[c] for c in cols) + " |")
    if grads:
        print("\n| target | ours µs | JAX µs | ours / JAX |\n|---|---|---|---|")
        for g in grads:
            print(f"| {g['target']} | {fmt(g['ours_us'])} | {fmt(g['jax_us'])} | {fmt(g['ratio'])} |")
    goals = [{"goal": f"{r['target']}: ours >= 1.0x NumPyro NUTS per CPU-second",
              "measured": r["ours/numpyro per CPU-s"], "met": bool(r["ours/numpyro per CPU-s"] >= 1.0)} for r in rows]
    goals += [{"goal": f"{g['target']}: density and gradient <= 1.1x JAX's", "measured": g["ratio"],
               "met": bool(g["ratio"] <= 1.1)} for g in grads]
    print("\n| goal | measured | met |\n|---|---|---|")
    for g in goals:
        print(f"| {g['goal']} | {fmt(g['measured'])} | {'yes' if g['met'] else 'NO'} |")
    outputs.write_own_json(args.json, {"machine": machine, "args": vars(args), "rows": rows,
                                           "gradients": grads, "goals": goals}, PRODUCER)
    print(f"\nwrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
