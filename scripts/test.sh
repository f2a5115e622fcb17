#!/usr/bin/env bash
# Install dptree with everything its tests need, then run the whole test suite (slow statistical
# checks included; they are marked 'slow' and run here too).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet -e ".[test]"
python3 -m pytest -q "$@"
