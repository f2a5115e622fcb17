#!/usr/bin/env bash
# Run the tests as a new user's install would meet them: two fresh virtual environments, nothing
# reused from this machine's Python.
#   1. .test-venvs/newest: `pip install ".[test,spark,docs]"` (not editable) with the newest versions the
#      dependency ranges in pyproject.toml allow, then the whole suite (statistical checks included;
#      the docs extra lets tests/system/test_docs.py build the documentation).
#   2. .test-venvs/oldest: the same project with every direct dependency at the lowest version its range
#      allows (uv's --resolution lowest-direct), then the unit tests: a lower bound that is a lie fails.
# Each prints the versions it resolved. Extra arguments go to the first pytest run;
# DPTREE_TEST_SKIP_OLDEST=1 skips the second run (for quick local reruns only, never in CI).
set -euo pipefail
cd "$(dirname "$0")/.."

# the Spark backend's tests start a local Spark (local[2]), which needs Java
command -v java >/dev/null || (apt-get update && apt-get install -y default-jre-headless)
# headless Chromium renders the HTML report in the report tests (Debian package)
command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

fresh_venv() {
    rm -rf "$1"
    python3 -m venv "$1"
    echo "created a fresh virtual environment: $1"
}

versions() {
    "$1/bin/python" -c '
import importlib.metadata as md, re, sys
names = sorted({re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0] for r in md.requires("dptree") or []})
found = []
for n in names:
    try:
        found.append(f"{n}=={md.version(n)}")
    except md.PackageNotFoundError:
        pass
print("resolved on python " + sys.version.split()[0] + ": dptree " + md.version("dptree") + " with " + ", ".join(found))
'
}

newest=.test-venvs/newest
fresh_venv "$newest"
"$newest/bin/python" -m pip install --quiet --upgrade pip
"$newest/bin/python" -m pip install --quiet ".[test,spark,docs]"
versions "$newest"
# the installed package is what is tested (tests/ has no path to src/)
# one worker per CPU, at most 4 (pytest-xdist); -p no:benchmark: a pytest-benchmark plugin, where
# one is installed, refuses to run under xdist; the 15 slowest tests listed: the suite must stay near 15 minutes
PATH="$PWD/$newest/bin:$PATH" "$newest/bin/python" -m pytest -q -n auto --maxprocesses 4 -p no:benchmark \
    --durations=15 "$@"

if [ "${DPTREE_TEST_SKIP_OLDEST:-}" = "1" ]; then
    echo "skipped the oldest-versions run (DPTREE_TEST_SKIP_OLDEST=1)"
    exit 0
fi
oldest=.test-venvs/oldest
fresh_venv "$oldest"
"$oldest/bin/python" -m pip install --quiet uv
"$oldest/bin/uv" pip install --quiet --python "$oldest/bin/python" --resolution lowest-direct ".[test,spark]"
versions "$oldest"
PATH="$PWD/$oldest/bin:$PATH" "$oldest/bin/python" -m pytest -q -n auto --maxprocesses 4 -p no:benchmark \
    -m "not slow" tests/unit
