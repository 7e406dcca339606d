#!/usr/bin/env bash
# CI, the PyMC 6 line (issue 46 §1). The main block of .ci/run tests the PyMC 5 line on CI's
# python3 (3.11: pymc 5.28, pytensor 2.38, nutpie 0.16.8). PyMC 6 needs Python >= 3.12, so here
# a fresh Python 3.12 venv gets the same install with the PyMC and peer extras, where pip picks
# the PyMC 6 line (pymc 6.4, pytensor 3.3, nutpie 0.16.11; pyproject.toml says why each pin),
# and runs the default tier of every test file that uses PyMC, pytensor or a peer library
# (nutpie, JAX, NumPyro, BlackJAX), listed by what the files import. No Python 3.12, or pip
# installing PyMC 5 there, fails CI: the line is never skipped in silence. The venv lives in a
# temporary folder, removed at the end; pip's download cache is shared with the main install.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
  echo "PyMC 6 line: $*" >&2
  exit 1
}

# The first Python 3.12 that runs: python3.12 on PATH (a pyenv shim there may exist and refuse
# to run when 3.12 is not pyenv's selected version), then pyenv's 3.12 builds, newest first.
py=
for candidate in "$(command -v python3.12 || true)" \
    $(ls -d /root/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | sort -rV); do
  if [ -n "$candidate" ] && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
    py=$candidate
    break
  fi
done
[ -n "$py" ] || fail "no Python 3.12 interpreter that runs (python3.12 on PATH, /root/.pyenv/versions/3.12*/bin/python3.12): PyMC 6 needs Python >= 3.12"
echo "PyMC 6 line: $py"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ckam-bench-pymc6.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
venv=$tmp/venv
"$py" -m venv "$venv"
. "$venv/bin/activate"  # its console scripts (ckam-bench ...) on PATH, as the tests run them
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e ".[test,pymc,peers]"
python - <<'EOF' || fail "pip did not install the PyMC 6 line (see the versions above)"
import sys
from importlib.metadata import version
names = ("pymc", "pytensor", "nutpie", "numba", "arviz", "jax", "numpyro", "blackjax")
print("PyMC 6 line: Python " + sys.version.split()[0] + ", "
      + ", ".join(f"{name} {version(name)}" for name in names))
sys.exit(0 if version("pymc").startswith("6.") else 1)
EOF

# The test files that use PyMC, pytensor or a peer library: those importing one (at the top, in
# a test, or through pytest.importorskip), the peers' or the PyMC target's module.
mapfile -t files < <(grep -lE \
  "^\s*(import|from) (pymc|pytensor|nutpie|jax|numpyro|blackjax)\b|importorskip\(\"(pymc|pytensor|nutpie|jax|numpyro|blackjax)\"|ckam_bench\.samplers\.peers|from ckam_bench\.targets import pymc|ckam_bench\.targets\.pymc import" \
  -r tests --include='test_*.py' | sort)
[ "${#files[@]}" -gt 0 ] || fail "no test file uses PyMC or a peer library (the list is empty)"
echo "PyMC 6 line: ${#files[@]} test files"
python -m pytest -n auto -p no:cacheprovider "${files[@]}"
