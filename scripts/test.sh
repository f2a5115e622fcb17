#!/usr/bin/env bash
# Install dptree with everything its tests need, then run the whole test suite (slow statistical
# checks included; they are marked 'slow' and run here too).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet -e ".[test,spark]"
# the Spark backend's tests start a local Spark (local[2]), which needs Java
command -v java >/dev/null || (apt-get update && apt-get install -y default-jre-headless)
# headless Chromium renders the HTML report in tests/test_report.py (Debian package)
command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)
# one worker per CPU, at most 4 (pytest-xdist; 11:44 on 2 cores against 16:18 in one process);
# -p no:benchmark: a pytest-benchmark plugin, where one is installed, refuses to run under xdist
python3 -m pytest -q -n auto --maxprocesses 4 -p no:benchmark --durations=15 "$@"  # the 15 slowest tests listed: the suite must stay near 15 minutes
