#!/usr/bin/env bash
# Reproduce Figures 2, 4 and 5 of the KAMH paper (Sejdinovic et al. 2014, "Kernel Adaptive
# Metropolis-Hastings") from fresh runs, then render them from the stored runs.
#
#   scripts/reproduce_kamh_paper.sh [--quick] [--jobs N] [--seeds N] [--out DIR] [--glass]
#                                   [--glass-iterations N] [--glass-only]
#
#   --quick    iterations and burn-in / 20 and 2 chains: a smoke test of the pipeline, not a
#              reproduction
#   --jobs N   runs at once (Hydra's joblib launcher; default 2; at most one per core)
#   --seeds N  chains (seeds 0 ... N-1) per experiment instead of the paper's 20 / 30
#   --out DIR  results folder (default outputs/kamh_paper, or outputs/kamh_paper_quick)
#   --glass    also run experiment=kamh_glass (Figure 4 and the Glass table, against the
#              certified gp_glass reference, rendered once one exists; slow: one estimate
#              costs 2.5-6 ms of CPU, so the paper's 4 x 30 x 100 000 estimates are ~8-20
#              CPU-hours: use --seeds and a shorter
#              --glass-iterations N (burn-in N/5; implies --glass) to run a fraction)
#   --glass-only  the Glass runs only (no Figure 5 experiments)
#   --glass-reference  first rebuild the certified gp_glass reference (the package ships
#              it) into the user cache (ckam-bench-reference target=gp_glass sampler=imh: 36
#              chains of 14 000 draws, one job each, --jobs at once, then combine=true; ~45
#              CPU-minutes on an idle core, docs/papers/kamh.md; implies --glass)
#
# What runs (SM = rw, AM-FS = am, AM-LS = gam, KAMH-LS = kamh; conf/experiment/kamh_*.yaml):
#   kamh_banana_moderate  B(0.03, 100), 8-D   40 000 iterations, burn-in 20 000, 20 chains
#   kamh_banana_strong    B(0.1, 100), 8-D    80 000 iterations, burn-in 40 000, 20 chains
#   kamh_flower           F(10, 6, 6, 1), 8-D 120 000 iterations, burn-in 60 000, 20 chains
#   kamh_glass            gp_glass            100 000 iterations, burn-in 20 000, 30 chains
#
# Resumable: each experiment is one Hydra sweep into DIR/<experiment>; running the script again
# skips complete runs, resumes interrupted ones, and only then renders DIR/report/.
set -euo pipefail
PROG=reproduce_kamh_paper.sh
DEFAULT_OUT=kamh_paper
. "$(dirname "$0")/reproduce_common.sh"

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }
glass=0
glass_only=0
glass_reference=0
glass_iters=100000
extra_option() {
    case "$1" in
        --glass) glass=1; consumed=1 ;;
        --glass-iterations)
            if ! [[ "${2:-}" =~ ^[1-9][0-9]*$ ]]; then
                echo "$PROG: --glass-iterations needs a positive integer, got ${2:-nothing}" >&2
                exit 2
            fi
            glass=1; glass_iters=$2; consumed=2 ;;
        --glass-only) glass=1; glass_only=1; consumed=1 ;;
        --glass-reference) glass=1; glass_reference=1; consumed=1 ;;
        *) return 1 ;;
    esac
}

parse_options "$@"
need_tools ckam-bench ckam-bench-figures
prepare_out

# experiment iterations burn-in chains
plan=("kamh_banana_moderate 40000 20000 20" "kamh_banana_strong 80000 40000 20" "kamh_flower 120000 60000 20")
if [[ $glass_only == 1 ]]; then plan=(); fi
if [[ $glass == 1 ]]; then plan+=("kamh_glass $glass_iters $(( glass_iters / 5 )) 30"); fi

start_all=$SECONDS
if [[ $glass_reference == 1 ]]; then
    need_tools ckam-bench-reference
    # the shipped reference's settings (docs/papers/kamh.md): 16 chains of imh, each a job, then certify
    ref=(target=gp_glass sampler=imh chains=36 burn_in=0 iterations=14000 max_draws=14000)
    echo "== gp_glass reference: 36 chains, $jobs at a time -> $out/logs/glass_reference.log"
    seq 0 35 | xargs -P "$jobs" -I{} ckam-bench-reference "${ref[@]}" chain={} >> "$out/logs/glass_reference.log" 2>&1
    ckam-bench-reference "${ref[@]}" combine=true 2>&1 | tee -a "$out/logs/glass_reference.log"
fi
for line in "${plan[@]}"; do
    read -r name iters burn chains <<< "$line"
    if [[ $quick == 1 ]]; then iters=$(( iters / 20 )); burn=$(( burn / 20 )); chains=2; fi
    if [[ -n "$seeds" ]]; then chains=$seeds; fi
    note="$iters iterations, burn-in $burn, $chains chains"
    sweep "$name" "$out/$name" "experiment=$name" "seed=$(seq -s, 0 $(( chains - 1 )))" \
        "budget.max_iterations=$iters" "burnin=$burn"
done
render
