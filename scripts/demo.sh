#!/usr/bin/env bash
# Install dptree and run its main job on the bundled example: release a private range tree of
# the 'age' column of examples/data/people.csv (epsilon = 1), then query it and plot its CDF.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet -e ".[plot]"
mkdir -p out
# --force: a rerun replaces the demo's own earlier release (without it dptree never replaces a release)
dptree release examples/data/people.csv --column age --lower 0 --upper 120 --epsilon 1.0 --out out/age_release.json --force
dptree query out/age_release.json --count 18:29 --count 30:44 --count 65:120 --cdf 40 --quantile 0.25 --quantile 0.5 --quantile 0.75 --total
dptree plot out/age_release.json --out out/age_cdf.png
