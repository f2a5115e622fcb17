#!/usr/bin/env bash
# Install dptree into the virtual environment .venv (created if absent; dptree and its dependencies
# upgraded to the newest versions pyproject.toml allows) and run its main job on the bundled
# example: release a private range tree of the 'age' column of examples/data/people.csv
# (epsilon = 1), then query it and plot its CDF into out/age_cdf.png.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager .
dptree=.venv/bin/dptree
mkdir -p out
# --force: a rerun replaces the demo's own earlier release (without it dptree never replaces a release)
"$dptree" release examples/data/people.csv --column age --lower 0 --upper 120 --epsilon 1.0 --out out/age_release.json --force
"$dptree" query out/age_release.json --count 18:29 --count 30:44 --count 65:120 --cdf 40 --quantile 0.25 --quantile 0.5 --quantile 0.75 --total
"$dptree" plot out/age_release.json --out out/age_cdf.png
echo "dptree is installed in .venv: 'source .venv/bin/activate' puts the dptree command on your PATH"
