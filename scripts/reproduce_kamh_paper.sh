#!/usr/bin/env bash
# Reproduce Figures 2, 4 and 5 of the KAMH paper (Sejdinovic et al. 2014, "Kernel Adaptive
# Metropolis-Hastings") from fresh runs, then render them from the stored runs.
#
#   scripts/reproduce_kamh_paper.sh [--quick] [--jobs N] [--out DIR] [--glass]
#
#   --quick    iterations and burn-in / 20 and 2 chains: a smoke test of the pipeline, not a
#              reproduction
#   --jobs N   runs at once (Hydra's joblib launcher; default 2; at most one per core)
#   --out DIR  results folder (default outputs/kamh_paper, or outputs/kamh_paper_quick)
#   --glass    also run experiment=kamh_glass (Figure 4; slow: ~10-20 estimates/s per chain, and
#              its MMD / mean-error columns need the reference: ckam-bench-reference target=gp_glass)
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

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }

quick=0
jobs=2
out=""
glass=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) quick=1; shift ;;
        --glass) glass=1; shift ;;
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        --out) out="${2:?--out needs a folder}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "reproduce_kamh_paper.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
    echo "reproduce_kamh_paper.sh: --jobs needs a positive integer, got $jobs" >&2
    exit 2
fi
if [[ -z "$out" ]]; then
    out=$([[ $quick == 1 ]] && echo outputs/kamh_paper_quick || echo outputs/kamh_paper)
fi
for tool in ckam-bench ckam-bench-figures; do
    command -v "$tool" >/dev/null || { echo "reproduce_kamh_paper.sh: $tool not found (pip install -e .)" >&2; exit 2; }
done

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)

# experiment iterations burn-in chains
plan=("kamh_banana_moderate 40000 20000 20" "kamh_banana_strong 80000 40000 20" "kamh_flower 120000 60000 20")
if [[ $glass == 1 ]]; then plan+=("kamh_glass 100000 20000 30"); fi

start_all=$SECONDS
for line in "${plan[@]}"; do
    read -r name iters burn chains <<< "$line"
    if [[ $quick == 1 ]]; then iters=$(( iters / 20 )); burn=$(( burn / 20 )); chains=2; fi
    dir="$out/$name"
    args=(-m "experiment=$name" "seed=$(seq -s, 0 $(( chains - 1 )))" "budget.max_iterations=$iters"
          "burnin=$burn" progress=false hydra/launcher=joblib "hydra.launcher.n_jobs=$jobs"
          "hydra.sweep.dir='$dir'")
    echo "== $name ($iters iterations, burn-in $burn, $chains chains) -> $dir"
    start=$SECONDS
    ckam-bench "${args[@]}" > "$out/logs/$name.log" 2>&1 || {
        echo "reproduce_kamh_paper.sh: $name failed, see $out/logs/$name.log" >&2
        exit 1
    }
    echo "   $(grep -l '"state": "complete"' "$dir"/*/status.json 2>/dev/null | wc -l) complete runs" \
         "in $(( SECONDS - start )) s"
done

echo "== figures and tables -> $out/report"
ckam-bench-figures "$out" --out "$out/report" | tee "$out/logs/figures.log"
echo "== done in $(( SECONDS - start_all )) s: $out/report/report.md"
