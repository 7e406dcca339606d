#!/usr/bin/env bash
# Reproduce Titsias & Dellaportas (2019), gradient-based adaptive MCMC: Tables 1-7 and the
# log-target / diag(L) figures, from stored runs, in one resumable command.
#
#   scripts/reproduce_gradient_paper.sh [--quick] [--jobs N] [--seeds N] [--out DIR] [--only EXP,...]
#                                       [--samplers NAME,...] [--first-seed S]
#
# Per experiment (gad_neal, gad_logistic_{australian,heart,pima,ripley,german,caravan}: 10 seeds;
# gad_mnist: 5 seeds) three sweeps: the gad samplers, MALA and NUTS; AM (the paper's rate preset);
# HMC with 5, 10 and 20 leapfrog steps. Every run: burn-in (adaptation) + 20 000 collected
# iterations (NUTS 500 + 20 000; MNIST's gadMALAf 50 000 + 20 000). Running the command again
# skips complete runs and resumes interrupted ones (same sweep folders). Then ckam-bench-figures
# writes DIR/report (gad_table*.md/.tex, gad_logp_*.png, gad_neal_diagL.png, report.md).
# --quick: 2 seeds, 2 000 burn-in + 2 000 collected iterations (a smoke run of the pipeline).
# --samplers: run only these of each experiment's samplers (hmc = the HMC-5/10/20 sweep, am = the
# AM sweep), e.g. --only gad_mnist --samplers gadmala_fast,mala,hmc (MNIST without NUTS). Runs keep
# the folder names of the full sweep as long as the samplers left out come last (nuts), so a
# later full run resumes them. --first-seed S: seeds S, S+1, ... (one seed per cluster job:
# --first-seed $SLURM_ARRAY_TASK_ID --seeds 1, each job with its own --out; render them together
# with ckam-bench-figures on the parent folder).
set -euo pipefail
PROG=reproduce_gradient_paper.sh
DEFAULT_OUT=gradient_paper
. "$(dirname "$0")/reproduce_common.sh"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
only=""
chosen=""
first_seed=0
extra_option() {
    case "$1" in
        --only) only="${2:?--only needs experiment names}"; consumed=2 ;;
        --samplers) chosen="${2:?--samplers needs sampler names}"; consumed=2 ;;
        --first-seed) first_seed="${2:?--first-seed needs a number}"; consumed=2 ;;
        *) return 1 ;;
    esac
}

parse_options "$@"
if ! [[ "$first_seed" =~ ^[0-9]+$ ]]; then
    echo "$PROG: --first-seed needs a non-negative integer, got $first_seed" >&2
    exit 2
fi
need_tools ckam-bench ckam-bench-figures
prepare_out

# experiment, seeds, samplers of the main sweep, whether AM runs (the paper skips it on MNIST)
experiments=(
    "gad_neal 10 gadmala_fast,gadmala_exact,gadrwm,mala,nuts am"
    "gad_logistic_australian 10 gadmala_fast,gadmala_exact,gadrwm,mala,nuts am"
    "gad_logistic_ripley 10 gadmala_fast,gadmala_exact,gadrwm,mala,nuts am"
    "gad_logistic_pima 10 gadmala_fast,gadmala_exact,gadrwm,mala,nuts am"
    "gad_logistic_heart 10 gadmala_fast,gadmala_exact,gadrwm,mala,nuts am"
    "gad_logistic_german 10 gadmala_fast,gadmala_exact,gadrwm,mala,nuts am"
    "gad_logistic_caravan 10 gadmala_fast,gadmala_exact,gadrwm,mala,nuts am"
    "gad_mnist 5 gadmala_fast,mala,nuts -"
)

start_all=$SECONDS
for line in "${experiments[@]}"; do
    read -r name n_seeds samplers am <<< "$line"
    if [[ -n "$only" && ",$only," != *",$name,"* ]]; then continue; fi
    if [[ -n "$seeds" ]]; then n_seeds=$seeds; elif [[ $quick == 1 ]]; then n_seeds=2; fi
    seed_list=$(seq -s, "$first_seed" $(( first_seed + n_seeds - 1 )))
    short=()
    if [[ $quick == 1 ]]; then short=("++sampler.burn_in=2000" "budget.max_iterations=4000"); fi
    if [[ -n "$chosen" ]]; then
        kept=()
        for s in ${samplers//,/ }; do [[ ",$chosen," == *",$s,"* ]] && kept+=("$s"); done
        samplers=$(IFS=,; echo "${kept[*]}")
        [[ ",$chosen," == *",am,"* ]] || am=-
    fi
    if [[ -n "$samplers" ]]; then
        sweep "$name-main" "$out/$name/main" "experiment=$name" "sampler=$samplers" "seed=$seed_list" "${short[@]}"
    fi
    if [[ -z "$chosen" || ",$chosen," == *",hmc,"* ]]; then
        sweep "$name-hmc" "$out/$name/hmc" "experiment=$name" sampler=hmc "sampler.n_leapfrog=5,10,20" \
            "seed=$seed_list" "${short[@]}"
    fi
    if [[ $am == am ]]; then
        sweep "$name-am" "$out/$name/am" "experiment=$name" sampler=am "seed=$seed_list" \
            ${short:+"budget.max_iterations=4000"}
    fi
done

render --formats png,pdf
