"""Where a run's CPU goes: the cost breakdown of ``ckam-bench <overrides>``, cold and warm.

Runs the command twice in one new interpreter, each time in a folder of its own under a
temporary folder: the first run is *cold* (the imports, Hydra's first composition, the model
compiled in this process), the second *warm* (what each further job of a sweep pays in a worker
process that has run one before: same model, another seed). Each phase is the process's CPU
time (``time.process_time``: every thread) spent in it, exclusive of the phases nested in it:

* ``imports``: the command line's (what a run imports later, PyMC for a PyMC model, counts in
  the phase that imports it);
* ``config``: Hydra's compositions (the override check, the mode check, the run's) and the
  config's validation;
* ``build``: the target and the sampler instantiated (a PyMC model loaded, its layout read:
  PyMC imported in the cold run);
* ``model compile``: the target's compiled density (pytensor's functions, the C-callables
  around them and the numba wrappers of a PyMC model; a built-in target's cfunc);
* ``sampler compile``: the rest of ``sampler.warm_up`` (the sampler's kernels);
* ``sampling``: the sampler clock's CPU time (a NUTS adaptation's iterations included);
* ``metrics``: the checkpoint rows (ESS, moments, b², KL …), off the sampler clock;
* ``writes``: the checkpoint files (trace, samples, diagnostics, resume state, status);
* ``other``: the rest (Hydra's job set-up, the run folder's claim, the end line).

The fixed cost is everything but ``sampling``; the warm run's is what a job of a suite sweep
pays when its worker has run the same model before (issue 44's goal: ≤ 1 CPU-s amortised).
Measure alone (load < 1.5): CPU time is less distorted by load than wall time, not immune.

    python scripts/bench_run_cost.py                      # nuts_lowrank, kidscore_interaction, 10^5 gradients
    python scripts/bench_run_cost.py sampler=rw target=gauss2d_corr budget.max_iterations=1000
    python scripts/bench_run_cost.py --sweep experiment=posteriordb sampler=nuts_lowrank   # a whole sweep

``--sweep`` measures a whole sweep instead (:func:`sweep`): every process's CPU against the
runs' sampling and warm-up, the amortised fixed cost per run and the harness's share.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT = ["experiment=posteriordb", "target.model=ckam_bench.posteriordb.models:kidscore_interaction",
           "sampler=nuts_lowrank", "budget.max_grad=100000", "budget.max_density=100000"]
PHASES = ("imports", "config", "build", "model compile", "sampler compile", "sampling", "metrics",
          "writes", "other")


class _Phases:
    """CPU seconds per phase, each exclusive of the phases nested in it."""

    def __init__(self):
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self._stack: list[list] = []  # [label, start, nested seconds]

    def wrap(self, owner, name: str, label: str) -> None:
        original = getattr(owner, name)
        phases = self

        def timed(*args, **kwargs):
            phases._stack.append([label, time.process_time(), 0.0])
            try:
                return original(*args, **kwargs)
            finally:
                label_, start, nested = phases._stack.pop()
                spent = time.process_time() - start
                phases.seconds[label_] += spent - nested
                if phases._stack:
                    phases._stack[-1][2] += spent

        setattr(owner, name, timed)


def _child(argv: list[str], out: str) -> None:
    """In the new interpreter: import, run the command twice, write the breakdowns as JSON."""
    start = time.process_time()
    from ckam_bench.commands import cli

    imports = time.process_time() - start

    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    from ckam_bench import jit
    from ckam_bench.commands import overrides
    from ckam_bench.engine import rundir, runstatus

    phases = _Phases()
    phases.wrap(overrides, "problem", "config")
    phases.wrap(ConfigLoaderImpl, "load_configuration", "config")
    phases.wrap(ConfigLoaderImpl, "load_sweep_config", "config")
    phases.wrap(cli, "check_config", "config")
    phases.wrap(cli, "complete_target_dim", "build")  # a PyMC model's dimension: the model loaded
    phases.wrap(cli, "build", "build")
    built = cli.build

    def build(*args, **kwargs):  # the built sampler's warm-up: its compile, off the clock
        made = built(*args, **kwargs)
        phases.wrap(made.sampler, "warm_up", "sampler compile")
        return made

    cli.build = build
    for cls in (jit.CompiledDensity, jit.CompiledDensityGrad, jit.CompiledHessian):
        phases.wrap(cls, "__init__", "model compile")
    try:
        from ckam_bench.targets import pymc as pymc_target
        from ckam_bench.targets import pymc_compiled

        phases.wrap(pymc_target, "_functions", "model compile")
        phases.wrap(pymc_compiled, "compile_wrappers", "model compile")
        phases.wrap(pymc_compiled, "c_functions", "model compile")
    except ImportError:
        pass
    phases.wrap(runstatus, "trace_row", "metrics")
    phases.wrap(rundir.RunFolder, "write_checkpoint", "writes")
    phases.wrap(rundir.RunFolder, "write_status", "writes")
    runs = []
    for k in range(2):
        phases.seconds = dict.fromkeys(PHASES, 0.0)
        folder = os.path.join(os.path.dirname(out), f"run{k}")
        sys.argv = ["ckam-bench", *argv, f"hydra.run.dir={folder}", "progress=false"]
        begin = time.process_time()
        try:
            cli.main()
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
        total = time.process_time() - begin
        with open(os.path.join(folder, "status.json")) as fh:
            status = json.load(fh)
        sampling = status["totals"]["sampler_cpu_seconds"]
        seconds = dict(phases.seconds)
        seconds["sampling"] = sampling
        seconds["other"] = total - sum(v for p, v in seconds.items() if p != "other")
        if k == 0:
            seconds["imports"] = imports
        runs.append({"seconds": seconds, "total": total + (imports if k == 0 else 0.0),
                     "state": status["state"], "n_grad": status["totals"].get("n_grad"),
                     "iterations": status["totals"].get("iterations")})
    with open(out, "w") as fh:
        json.dump(runs, fh)


def sweep(argv: list[str]) -> int:
    """``--sweep OVERRIDES``: a whole sweep, ``ckam-bench -m OVERRIDES`` (the launcher the
    overrides choose: joblib for experiment=posteriordb), in a new folder; the CPU of every
    process (the sweep's and its workers', every thread: ``RUSAGE_CHILDREN``) against the runs'
    own: sampling (the sampler clock's CPU) and warm-up (the untimed compile, its wall time:
    single-threaded). Amortised fixed cost = (total − sampling) / runs; harness overhead =
    total − sampling − warm-up, the share of the total the harness itself takes (imports,
    Hydra, metrics, writes, the sweep's report)."""
    import glob
    import resource

    with tempfile.TemporaryDirectory(prefix="ckam-sweep-cost-") as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "ckam_bench.commands.cli", "-m", *argv, f"hydra.sweep.dir={tmp}/sweep", "progress=false"],
                              cwd=tmp, capture_output=True, text=True)
        wall = time.perf_counter() - wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            return proc.returncode
        total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        statuses = []
        for path in glob.glob(f"{tmp}/sweep/**/status.json", recursive=True):
            with open(path) as fh:
                statuses.append(json.load(fh))
    runs = len(statuses)
    sampling = sum(s["totals"]["sampler_cpu_seconds"] for s in statuses)
    warmup = sum(s["totals"]["warmup_seconds"] for s in statuses)
    states = sorted({s["state"] for s in statuses})
    early = sum(bool(s.get("stopped_early")) for s in statuses)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"ckam-bench -m {' '.join(argv)}")
    print(f"load average at the end: {load:.2f}; {runs} runs ({', '.join(states)}; {early} stopped "
          f"early), {wall:.1f} s wall\n")
    print(f"| {'CPU seconds':<34} | {'total':>9} | {'per run':>8} |")
    print(f"|{'-' * 36}|{'-' * 11}|{'-' * 10}|")
    for name, value in (("every process", total), ("sampling (sampler clock)", sampling),
                        ("warm-up (compile; wall)", warmup),
                        ("fixed cost (all but sampling)", total - sampling),
                        ("harness (all but sampling, warm-up)", total - sampling - warmup)):
        print(f"| {name:<34} | {value:9.1f} | {value / max(runs, 1):8.3f} |")
    print(f"\nharness overhead: {(total - sampling - warmup) / total:.1%} of the sweep's CPU; "
          f"sampling {sampling / total:.1%}, warm-up {warmup / total:.1%}")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        _child(argv[2:], argv[1])
        return 0
    if argv[:1] == ["--sweep"]:
        return sweep(argv[1:])
    args = argv or DEFAULT
    with tempfile.TemporaryDirectory(prefix="ckam-run-cost-") as tmp:
        out = os.path.join(tmp, "phases.json")
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", out, *args],
                              cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            return proc.returncode
        with open(out) as fh:
            cold, warm = json.load(fh)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"ckam-bench {' '.join(args)}")
    print(f"load average at the end: {load:.2f}; CPU seconds of the process (every thread)\n")
    print(f"| {'phase':<16} | {'cold':>8} | {'warm':>8} |")
    print(f"|{'-' * 18}|{'-' * 10}|{'-' * 10}|")
    for phase in PHASES:
        print(f"| {phase:<16} | {cold['seconds'][phase]:8.3f} | {warm['seconds'][phase]:8.3f} |")
    print(f"| {'total':<16} | {cold['total']:8.3f} | {warm['total']:8.3f} |")
    fixed = [run["total"] - run["seconds"]["sampling"] for run in (cold, warm)]
    print(f"| {'fixed cost':<16} | {fixed[0]:8.3f} | {fixed[1]:8.3f} |")
    print(f"\nstates: {cold['state']}, {warm['state']}; gradients: {cold['n_grad']}, "
          f"{warm['n_grad']}; iterations: {cold['iterations']}, {warm['iterations']}")
    print("fixed cost: every phase but sampling; warm: a later job of a sweep whose worker "
          "ran the same model before")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
