# What the scripts/reproduce_*_paper.sh scripts share; sourced, not run.
#
# A script sets PROG, DEFAULT_OUT and defines usage (and, for options of its own, extra_option:
# called with the remaining arguments, it sets its variables and the number of arguments it
# used in `consumed`, or returns 1 for an option it does not know), then calls
#   parse_options "$@"       --quick, --jobs N, --seeds N, --out DIR, -h/--help; validated
#   need_tools TOOL...       each must be on PATH (the package installed)
#   prepare_out              DIR/logs, single-threaded numerics, out made absolute
#   sweep NAME DIR ARGS...   one Hydra sweep of ckam-bench into DIR, its log appended to OUT/logs/NAME.log
#                            (a variable `note`, when set, is printed beside its name)
#   render [ARGS...]         ckam-bench-figures into DIR/report
# Exit status 2 for bad arguments or a missing tool, 1 when a sweep fails.

parse_options() {
    quick=0
    jobs=2
    seeds=""
    out=""
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --quick) quick=1; shift ;;
            --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
            --seeds) seeds="${2:?--seeds needs a number}"; shift 2 ;;
            --out) out="${2:?--out needs a folder}"; shift 2 ;;
            -h|--help) usage; exit 0 ;;
            *)
                consumed=0
                if declare -F extra_option >/dev/null && extra_option "$@" && (( consumed > 0 )); then
                    shift "$consumed"
                else
                    echo "$PROG: unknown argument $1" >&2
                    usage >&2
                    exit 2
                fi ;;
        esac
    done
    for value in "$jobs" ${seeds:+"$seeds"}; do
        if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
            echo "$PROG: --jobs and --seeds need a positive integer, got $value" >&2
            exit 2
        fi
    done
    if [[ -z "$out" ]]; then
        out=$([[ $quick == 1 ]] && echo "outputs/${DEFAULT_OUT}_quick" || echo "outputs/$DEFAULT_OUT")
    fi
}

need_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "$PROG: $tool not found (pip install -e .)" >&2; exit 2; }
    done
}

prepare_out() {
    # Single-threaded numerics in every run (joblib workers inherit these).
    export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
    mkdir -p "$out/logs"
    out=$(cd "$out" && pwd)
}

complete_runs() {  # DIR: how many runs in DIR are complete
    grep -l '"state": "complete"' "$1"/*/status.json 2>/dev/null | wc -l
}

sweep() {  # NAME DIR ARGS...: ckam-bench -m ARGS into DIR on the joblib launcher
    local name=$1 dir=$2
    shift 2
    echo "== $name${note:+ ($note)} -> $dir"
    local start=$SECONDS
    ckam-bench -m "$@" progress=false hydra/launcher=joblib "hydra.launcher.n_jobs=$jobs" \
        "hydra.sweep.dir='$dir'" >> "$out/logs/$name.log" 2>&1 || {
        echo "$PROG: $name failed, see $out/logs/$name.log" >&2
        exit 1
    }
    echo "   $(complete_runs "$dir") complete runs in $(( SECONDS - start )) s"
}

render() {  # [ARGS...] for ckam-bench-figures
    echo "== figures and tables -> $out/report"
    ckam-bench-figures "$out" --out "$out/report" "$@" | tee -a "$out/logs/figures.log"
    echo "== done in $(( SECONDS - start_all )) s: $out/report/report.md"
}
