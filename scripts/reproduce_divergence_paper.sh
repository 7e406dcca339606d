#!/usr/bin/env bash
# Reproduce Tables 1-4 and Figures 7-9, 12 of the divergence-minimisation paper (Dharamshi, Ngo &
# Rosenthal, "Sampling by divergence minimization") from fresh runs, then render them.
#
#   scripts/reproduce_divergence_paper.sh [--quick] [--jobs N] [--seeds N] [--out DIR]
#
#   --quick    2 seeds instead of 10 (the runs themselves are already short: the paper's
#              iteration counts take about 1 s each here); a smoke test of the pipeline
#   --jobs N   runs at once (Hydra's joblib launcher; default 2, one per core)
#   --seeds N  seeds 0 ... N-1 per sampler (default 10; 2 with --quick)
#   --out DIR  results folder (default outputs/divergence_paper, or ..._quick)
#
# What runs (each sampler takes the paper's values from conf/preset/<experiment>/<sampler>.yaml;
# iteration counts are budget.max_iterations, the burn-in is not collected):
#
#   experiment         target         iterations (burn-in)  samplers                       runs
#   dm_double_banana   double_banana  51 000 (1000)         rw arwm pt2 pt mala dm         90
#                                                           dm_finite scout scout_finite
#   dm_basis4          basis4         42 000 (2000)         the same nine                  90
#   dm_banana_bunch    banana_bunch   101 000 (1000)        the same nine                  90
#   dm_horseshoe       horseshoe      55 000 (5000)         rw arwm pt2 pt10 mala dm       80
#                                                           scout horseshoe_gibbs
#
# horseshoe_gibbs (exact Gibbs, not in the paper) is the sampler of the horseshoe's certified
# reference, against which Table 4's moment errors are computed. Multi-chain samplers (pt*,
# scout*) collect only their target chain. Runtime (2 jobs on 2 cores): about 1 s of sampler time
# per run and 3-7 s of start-up and checkpoints: 350 runs in 11 min and the report in 5 min (measured,
# 983 s in all), --quick 4-7 min (70 runs, then the figures).
#
# Resumable: every experiment is one Hydra sweep into DIR/<experiment>; running the script again
# skips the runs already complete for the same config, resumes interrupted ones from their last
# checkpoint and only then renders DIR/report/ (report.md, dm_table_<target>.md/.tex, figures).
set -euo pipefail
PROG=reproduce_divergence_paper.sh
DEFAULT_OUT=divergence_paper
. "$(dirname "$0")/reproduce_common.sh"

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }

parse_options "$@"
if [[ -z "$seeds" ]]; then seeds=$(( quick ? 2 : 10 )); fi
need_tools ckam-bench ckam-bench-figures
prepare_out
seed_list=$(seq -s, 0 $(( seeds - 1 )))

start_all=$SECONDS
for name in dm_double_banana dm_basis4 dm_banana_bunch dm_horseshoe; do
    sweep "$name" "$out/$name" "experiment=$name" "seed=$seed_list"
done
render
