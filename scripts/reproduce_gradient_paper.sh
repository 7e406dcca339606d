#!/usr/bin/env bash
# Reproduce Titsias & Dellaportas (2019), gradient-based adaptive MCMC: Tables 1-7 and the
# log-target / diag(L) figures, from stored runs, in one resumable command.
#
#   scripts/reproduce_gradient_paper.sh [--quick] [--jobs N] [--seeds N] [--out DIR] [--only EXP,...]
#
# Per experiment (gad_neal, gad_logistic_{australian,heart,pima,ripley,german,caravan}: 10 seeds;
# gad_mnist: 5 seeds) three sweeps: the gad samplers, MALA and NUTS; AM (the paper's rate preset);
# HMC with 5, 10 and 20 leapfrog steps. Every run: burn-in (adaptation) + 20 000 collected
# iterations (NUTS 500 + 20 000; MNIST's gadMALAf 50 000 + 20 000). Running the command again
# skips complete runs and resumes interrupted ones (same sweep folders). Then ckam-bench-figures
# writes DIR/report (gad_table*.md/.tex, gad_logp_*.png, gad_neal_diagL.png, report.md).
# --quick: 2 seeds, 2 000 burn-in + 2 000 collected iterations (a smoke run of the pipeline).
set -euo pipefail

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }

quick=0
jobs=2
seeds=""
out=""
only=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) quick=1; shift ;;
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        --seeds) seeds="${2:?--seeds needs a number}"; shift 2 ;;
        --out) out="${2:?--out needs a folder}"; shift 2 ;;
        --only) only="${2:?--only needs experiment names}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "reproduce_gradient_paper.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
if [[ -z "$out" ]]; then out=$([[ $quick == 1 ]] && echo outputs/gradient_paper_quick || echo outputs/gradient_paper); fi
for value in "$jobs" ${seeds:+"$seeds"}; do
    if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
        echo "reproduce_gradient_paper.sh: --jobs and --seeds need a positive integer, got $value" >&2
        exit 2
    fi
done
for tool in ckam-bench ckam-bench-figures; do
    command -v "$tool" >/dev/null || { echo "reproduce_gradient_paper.sh: $tool not found (pip install -e .)" >&2; exit 2; }
done

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)

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

sweep() {  # name dir args...
    local name=$1 dir=$2
    shift 2
    echo "== $name -> $dir"
    local start=$SECONDS
    ckam-bench -m "$@" progress=false hydra/launcher=joblib "hydra.launcher.n_jobs=$jobs" \
        "hydra.sweep.dir='$dir'" > "$out/logs/$name.log" 2>&1 || {
        echo "reproduce_gradient_paper.sh: $name failed, see $out/logs/$name.log" >&2
        exit 1
    }
    echo "   $(grep -l '"state": "complete"' "$dir"/*/status.json 2>/dev/null | wc -l) complete runs" \
         "in $(( SECONDS - start )) s"
}

start_all=$SECONDS
for line in "${experiments[@]}"; do
    read -r name n_seeds samplers am <<< "$line"
    if [[ -n "$only" && ",$only," != *",$name,"* ]]; then continue; fi
    if [[ -n "$seeds" ]]; then n_seeds=$seeds; elif [[ $quick == 1 ]]; then n_seeds=2; fi
    seed_list=$(seq -s, 0 $(( n_seeds - 1 )))
    short=()
    if [[ $quick == 1 ]]; then short=("++sampler.burn_in=2000" "budget.max_iterations=4000"); fi
    sweep "$name-main" "$out/$name/main" "experiment=$name" "sampler=$samplers" "seed=$seed_list" "${short[@]}"
    sweep "$name-hmc" "$out/$name/hmc" "experiment=$name" sampler=hmc "sampler.n_leapfrog=5,10,20" \
        "seed=$seed_list" "${short[@]}"
    if [[ $am == am ]]; then
        sweep "$name-am" "$out/$name/am" "experiment=$name" sampler=am "seed=$seed_list" \
            ${short:+"budget.max_iterations=4000"}
    fi
done

echo "== tables and figures -> $out/report"
ckam-bench-figures "$out" --out "$out/report" --formats png,pdf | tee "$out/logs/figures.log"
echo "== done in $(( SECONDS - start_all )) s: $out/report/report.md"
