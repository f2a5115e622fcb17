"""The PipelineDP anchor of benchmarks/partition_selection.py: PipelineDP's own partition selection
(``DPEngine.select_partitions``, truncated-geometric strategy, local backend) on the same rows.

Run by the benchmark under a Python that has PipelineDP (``pip install pipeline-dp`` in a scratch
virtual environment: its native dependency python-dp brings the strategy):

    /tmp/pdp/bin/python benchmarks/reference/pipelinedp_anchor.py ROWS.npz TRIALS EPSILON DELTA OUT.json

``ROWS.npz`` holds ``users`` and ``keys`` (int64, one row per record); ``OUT.json`` receives one list
of released keys per trial. PipelineDP draws its own randomness (no seed).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pipeline_dp


def select(rows: list[tuple[int, int]], epsilon: float, delta: float) -> list[int]:
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.SelectPartitionsParams(
        max_partitions_contributed=1,
        partition_selection_strategy=pipeline_dp.PartitionSelectionStrategy.TRUNCATED_GEOMETRIC)
    extract = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1])
    released = engine.select_partitions(rows, params, extract)
    accountant.compute_budgets()
    return sorted(int(k) for k in released)


def main() -> None:
    path, trials, epsilon, delta, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    data = np.load(path)
    rows = list(zip(data["users"].tolist(), data["keys"].tolist()))
    start = time.perf_counter()
    runs = [select(rows, epsilon, delta) for _ in range(trials)]
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"version": pipeline_dp.__version__, "seconds": time.perf_counter() - start, "runs": runs}, fh)


if __name__ == "__main__":
    main()
