#!/usr/bin/env bash
# Smoke test of the README's base install, `pip install -e ".[test]"`: no PyMC, no peer samplers
# (issue 43 §1b). The test suite runs with every extra installed and cannot see a command that
# breaks without them. Here, in a fresh virtual environment and a copy of the checkout:
#   - every console script of pyproject.toml answers --help (and ckam-bench --version);
#   - ckam-bench list and ckam-bench list posteriordb work, rows of a missing extra marked
#     "needs ckam-bench[pymc]" / "needs ckam-bench[peers]";
#   - the main job (shortened), a sweep and its report (ckam-bench-figures) run;
#   - a feature of a missing extra is refused in one line naming the extra, exit 2, nothing created.
# Any other exit code, or a traceback anywhere, fails. Everything is written inside one temporary
# folder, removed at the end: the venv, the copy (its egg-info, bytecode and numba cache), the
# runs, the report, the reference and matplotlib caches. pip's download cache is the exception,
# shared with the main install so nothing is downloaded twice. About 2 minutes.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ckam-bench-base.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
src=$tmp/src venv=$tmp/venv work=$tmp/work logs=$tmp/logs
mkdir -p "$src" "$work" "$logs"
export CKAM_BENCH_CACHE=$tmp/references MPLCONFIGDIR=$tmp/matplotlib NUMBA_CACHE_DIR=$tmp/numba
unset HYDRA_FULL_ERROR

fail() {
  echo "smoke test of the base install: $*" >&2
  exit 1
}

# The checkout as it is (tracked and untracked files, not the ignored .venv/ or outputs/).
if git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$repo" && git ls-files -z --cached --others --exclude-standard \
    | tar --null --ignore-failed-read -T - -cf -) | tar -xf - -C "$src"
else
  tar -C "$repo" --exclude=./.venv --exclude=./outputs --exclude=./multirun -cf - . | tar -xf - -C "$src"
fi

# README, "Install and run the main job"
python3 -m venv "$venv"
export PATH=$venv/bin:$PATH VIRTUAL_ENV=$venv
if ! (cd "$src" && pip install --quiet -e ".[test]") >"$logs/install.log" 2>&1; then
  tail -n 40 "$logs/install.log" >&2
  fail "pip install -e \".[test]\" failed"
fi
echo "ok  install: pip install -e \".[test]\" (${SECONDS} s)"
for module in pymc pytensor jax numpyro blackjax nutpie; do
  if python -c "import $module" 2>/dev/null; then
    fail "$module is installed: this is not the base install"
  fi
done

# run NAME EXPECTED_EXIT COMMAND...: COMMAND in the work folder, its output in $logs/NAME.*
run() {
  local name=$1 want=$2 code=0 start=$SECONDS
  shift 2
  (cd "$work" && "$@") >"$logs/$name.out" 2>"$logs/$name.err" || code=$?
  if [ "$code" != "$want" ] || grep -q "Traceback" "$logs/$name.out" "$logs/$name.err"; then
    echo "--- $name: exit $code (expected $want): $*" >&2
    tail -n 40 "$logs/$name.out" "$logs/$name.err" >&2
    fail "$name failed"
  fi
  echo "ok  $name: $* ($((SECONDS - start)) s)"
}

# refused NAME EXTRA COMMAND...: exit 2, one line naming ckam-bench[EXTRA], nothing created
refused() {
  local name=$1 extra=$2
  shift 2
  local before
  before=$(cd "$work" && find . | sort)
  run "$name" 2 "$@"
  [ "$(wc -l <"$logs/$name.err")" -eq 1 ] || fail "$name: not one line: $(cat "$logs/$name.err")"
  grep -qF "ckam-bench[$extra]" "$logs/$name.err" || fail "$name does not name ckam-bench[$extra]"
  [ "$before" = "$(cd "$work" && find . | sort)" ] || fail "$name created files"
}

# Every console script of pyproject.toml
scripts=$(awk -F= '/^\[project.scripts\]/ {on = 1; next} /^\[/ {on = 0} on && NF > 1 {gsub(/[ "]/, "", $1); print $1}' \
  "$src/pyproject.toml")
[ -n "$scripts" ] || fail "no console script found in pyproject.toml"
for script in $scripts; do
  run "help-$script" 0 "$script" --help
  [ -s "$logs/help-$script.out" ] || fail "$script --help printed nothing"
done
run version 0 ckam-bench --version

run list 0 ckam-bench list
grep -q "needs ckam-bench\[pymc\]" "$logs/list.out" || fail "list: no row marked needs ckam-bench[pymc]"
grep -q "needs ckam-bench\[peers\]" "$logs/list.out" || fail "list: no row marked needs ckam-bench[peers]"
if grep -q "error:" "$logs/list.out"; then
  fail "list: rows with an error: $(grep "error:" "$logs/list.out")"
fi
run list-posteriordb 0 ckam-bench list posteriordb
rows=$(grep -c "target=pymc target.model=" "$logs/list-posteriordb.out" || true)
marked=$(grep -c "needs ckam-bench\[pymc\]\]$" "$logs/list-posteriordb.out" || true)
[ "$rows" -gt 0 ] && [ "$rows" -eq "$marked" ] || fail "list posteriordb: $marked of $rows rows marked"

# README's main job, shortened; then a sweep and its report (README, "One sweep, one report")
run main 0 ckam-bench budget.seconds=2
find "$work/outputs" -name status.json | grep -q . || fail "the main job left no status.json under outputs/"
run sweep 0 ckam-bench -m sampler=rw,am target=gauss2d_corr seed=0 budget.seconds=1 \
  "hydra.sweep.dir=$work/sweep"
run report 0 ckam-bench-figures "$work/sweep" --out "$work/report"
[ -s "$work/report/report.html" ] || fail "the report has no report.html"

# Features of the extras that are not installed
refused peer-sampler peers ckam-bench sampler=nutpie target=gauss2d_corr budget.seconds=1
refused pymc-target pymc ckam-bench target=pymc target.model=ckam_bench.posteriordb.models:kilpisjarvi
refused posteriordb-suite pymc ckam-bench -m experiment=posteriordb sampler=rw
refused sbc pymc ckam-bench-sbc sampler=rw target=pymc target.model=ckam_bench.posteriordb.models:kilpisjarvi
echo "the base install works: $(echo "$scripts" | wc -w) console scripts, every command (${SECONDS} s)"
