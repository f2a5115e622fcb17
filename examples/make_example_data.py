"""Generate the bundled synthetic example dataset (deterministic; no real person is in it).

python examples/make_example_data.py   # writes examples/data/people.csv
"""

from pathlib import Path

import numpy as np

rng = np.random.default_rng(20261121)
n = 20_000
age = np.clip(np.round(rng.gamma(9.0, 4.6, n)), 18, 95).astype(int)
income = np.round(rng.lognormal(10.6, 0.75, n), 2)
start = np.datetime64("2024-01-01")
signup = start + rng.integers(0, 366, n).astype("timedelta64[D]")
out = Path(__file__).parent / "data" / "people.csv"
out.parent.mkdir(exist_ok=True)
with open(out, "w") as fh:
    fh.write("person_id,age,income,signup_date\n")
    for i in range(n):
        fh.write(f"{i + 1},{age[i]},{income[i]:.2f},{signup[i]}\n")
print(f"wrote {out} ({n} rows)")
