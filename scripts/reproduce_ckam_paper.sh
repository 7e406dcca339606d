#!/usr/bin/env bash
# Reproduce every figure and table of the cKAM paper (Li, Zeng & Guo, "Cyclical Kernel Adaptive
# Metropolis": Figures 1-14, Tables 1-3) from fresh runs, then render them from the stored runs.
#
#   scripts/reproduce_ckam_paper.sh [--quick] [--jobs N] [--seeds N] [--out DIR]
#
#   --quick    short budgets (4-16 s per run) and 2 seeds: a smoke test of the whole pipeline
#              (a few minutes), not a reproduction
#   --jobs N   runs at once (Hydra's joblib launcher; default 2). Each run is single-threaded:
#              use at most one job per core, since the sampler clock is a wall clock and
#              oversubscribed cores would slow every sampler down
#   --seeds N  seeds 0 … N-1 per sampler (default 5; 2 with --quick)
#   --out DIR  results folder (default outputs/ckam_paper, or outputs/ckam_paper_quick)
#
# What runs (every sampler takes its Table 1-3 values from conf/preset/<experiment>/):
#
#   experiment             runs                            budget   runs  sampler time
#   paper_bimodal          rw am rbam gam kam ckam          300 s     40       12000 s
#                          ckam_finite ckam_dim x 5
#   paper_gmm2d            (the same 8 samplers) x 5        120 s     40        4800 s
#   paper_gmm32            (the same 8 samplers) x 5        300 s     40       12000 s
#   paper_bimodal_long     ckam ckam_finite x 5            1200 s     10       12000 s
#   paper_gmm2d_long       ckam ckam_finite x 5             600 s     10        6000 s
#   paper_bimodal_kernels  ckam x {linear,gaussian,matern}  120 s     15        1800 s
#                          x 5
#   total                                                            155       48600 s
#
# ckam is cKAM as published (re-adapts every cycle: not pi-invariant), ckam_finite its
# finite-adaptation variant, ckam_dim its diminishing-adaptation variant (docs/validity.md).
# Then the stationarity check (ckam-bench-check) of the three on the bimodal target, 100 chains
# from exact draws tested at cycles 1-60 (about 3 x 6 min; --quick: 50 chains, cycles 1-10),
# whose drift figure and verdicts the report shows.
#
# Budgets (measured on this code, 2 jobs on 2 cores, seed 0): bimodal 300 s: cKAM reaches
# the second mode after ~3 s and keeps switching (KL between 0.01 and 0.7 from 20 to 300 s)
# while KAM stays trapped (KL 3 -> 5.4) and AM/RBAM/GAM stay in the start mode (KL 3.4-4). The
# paper's cKAM needed ~500 s of code about 10-15x slower than ours (SPEC §8) to cover both
# modes, i.e. ~40 s here; the long runs give Figs 4/7 many times that: on bimodal cKAM's KL
# settles near 0.7 from ~300 s to 1200 s (13 % of its samples in the right-hand mode, not
# 50 %), on gmm2d it keeps falling (0.01 at 100 s, 0.0016 at 600 s). gmm2d 120 s: every
# sampler is past its transient (cKAM and KAM at KL ~0.006 and still falling, AM's constant
# rate levels off at 4e-4). gmm32 300 s: cKAM collects from ~5 s on (4800 exploration
# iterations), KAM only after its burn-in (then 40000 iterations, 20-45 s; now 40 % of the run); AM's KL rises 7 -> 11 as
# in the paper, RBAM levels off at 0.4, GAM, KAM and cKAM fall to 0.006-0.06. Kernels 120 s
# (15 runs): cKAM with the Matérn kernel has crossed between the bimodal modes several times
# by then (at least 6 crossings seen in the thinned samples).
#
# Expected runtime on 2 cores (--jobs 2): 48600 s / 2 = 6.8 h of sampler time. The wall clock
# adds what runs outside the sampler clock (measured by scripts/bench_throughput.py: metrics
# and bookkeeping cost 3-8 % on top for the compiled RW/AM/RBAM/GAM, 2-3 % for KAM/cKAM) and ~3 s of
# start-up per run: about 7.5 h in all, 15 h / N with --jobs N on N free cores. --quick: 580 s
# of sampler time, about 7 min on 2 cores including start-up, the checks and the figures.
#
# Results: DIR/<experiment>/<job>_<sampler>_<target>_s<seed>/ (one Hydra sweep per experiment,
# each run folder with its .hydra/ config snapshot), DIR/logs/<experiment>.log, and the report
# DIR/report/ (report.md, Figures 1-14 as PNG and PDF, Tables 1-3 and results tables as
# markdown and LaTeX). An experiment whose folder already holds all its complete runs is not
# run again, so an interrupted reproduction restarts where it stopped and a finished one just
# re-renders the report; a partly filled experiment folder stops the script (delete it first).
set -euo pipefail

PROG=reproduce_ckam_paper.sh
DEFAULT_OUT=ckam_paper
. "$(dirname "$0")/reproduce_common.sh"

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }

parse_options "$@"
if [[ -z "$seeds" ]]; then seeds=$(( quick ? 2 : 5 )); fi
need_tools ckam-bench ckam-bench-figures ckam-bench-check
prepare_out
seed_list=$(seq -s, 0 $(( seeds - 1 )))

# experiment | runs per seed | --quick budget (s). The quick budgets keep three distinct values
# on the bimodal target (comparison 6 s, long 12 s, kernels 4 s), as the full budgets do: the
# figures tell the sets of cKAM runs apart by budget. The comparison budgets let KAM pass its
# burn-in (40 % of budget x the preset's throughput) and collect samples.
experiments=(
    "paper_bimodal 8 6"
    "paper_gmm2d 8 6"
    "paper_gmm32 8 16"
    "paper_bimodal_long 2 12"
    "paper_gmm2d_long 2 12"
    "paper_bimodal_kernels 3 4"
)

start_all=$SECONDS
for line in "${experiments[@]}"; do
    read -r name per_seed quick_budget <<< "$line"
    dir="$out/$name"
    expected=$(( per_seed * seeds ))
    if [[ -d "$dir" ]]; then
        done_runs=$(complete_runs "$dir")
        if (( done_runs >= expected )); then
            echo "== $name: $done_runs complete runs already in $dir, not run again"
            continue
        fi
        echo "$PROG: $dir holds $done_runs of $expected complete runs;" \
             "delete it (or choose another --out) and start again" >&2
        exit 1
    fi
    args=("experiment=$name" "seed=$seed_list")
    if [[ $quick == 1 ]]; then args+=("budget.seconds=$quick_budget"); fi
    note="$expected runs, $jobs at a time"
    sweep "$name" "$dir" "${args[@]}"
done

# The stationarity check of published cKAM and of its finite- and diminishing-adaptation
# variants on the bimodal target (the drift figure and verdict table of the report's Validity section).
if [[ $quick == 1 ]]; then check_args=(check.n_chains=50 "check.times=[1000,2000,5000,10000]")
else check_args=(check.n_chains=100 "check.times=[1000,5000,10000,20000,40000,60000]"); fi
for sampler in ckam ckam_finite ckam_dim; do
    dir="$out/checks/paper_bimodal_$sampler"
    if [[ -f "$dir/check.json" ]]; then
        echo "== check $sampler: already in $dir"
        continue
    fi
    echo "== stationarity check: $sampler on bimodal -> $dir"
    ckam-bench-check "sampler=$sampler" experiment=paper_bimodal "${check_args[@]}" \
        "hydra.run.dir='$dir'" >> "$out/logs/check_$sampler.log" 2>&1 || {
        echo "$PROG: check of $sampler failed, see $out/logs/check_$sampler.log" >&2
        exit 1
    }
    tail -n 2 "$out/logs/check_$sampler.log" | head -n 1
done

render
