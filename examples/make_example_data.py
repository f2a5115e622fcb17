"""Generate the bundled synthetic example files that README.md and scripts/demo.sh use
(deterministic: one fixed seed per file; no real person, place count or request is in them).

python examples/make_example_data.py [OUTDIR]   # default: examples/data/

people.csv      person_id, age, income, signup_date: one row per person (the demo's file)
events.parquet  day (a date in 2024), latency_ms: one row per request, 2,000 rows
visits.parquet  person, age: several visits per person (for --user-id / --max-contributions)
places.csv      country, state, city: the public structure of a place hierarchy
residents.csv   country, state, city: one row per resident, every row a city of places.csv
"""

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

PLACES = [
    ("US", "CA", "San Francisco"), ("US", "CA", "Los Angeles"), ("US", "NY", "New York"),
    ("US", "NY", "Buffalo"), ("US", "TX", "Austin"), ("US", "TX", "Houston"),
    ("FR", "IDF", "Paris"), ("FR", "IDF", "Versailles"), ("FR", "ARA", "Lyon"), ("FR", "ARA", "Grenoble"),
]


def people(out: Path) -> None:
    rng = np.random.default_rng(20261121)
    n = 20_000
    age = np.clip(np.round(rng.gamma(9.0, 4.6, n)), 18, 95).astype(int)
    income = np.round(rng.lognormal(10.6, 0.75, n), 2)
    signup = np.datetime64("2024-01-01") + rng.integers(0, 366, n).astype("timedelta64[D]")
    with open(out / "people.csv", "w") as fh:
        fh.write("person_id,age,income,signup_date\n")
        for i in range(n):
            fh.write(f"{i + 1},{age[i]},{income[i]:.2f},{signup[i]}\n")


def events(out: Path) -> None:
    rng = np.random.default_rng(20261207)
    n = 2_000
    day = np.sort(np.datetime64("2024-01-01") + rng.integers(0, 366, n).astype("timedelta64[D]"))
    latency_ms = np.clip(np.round(rng.lognormal(np.log(120.0), 0.9, n)), 1, 60_000).astype(np.int64)
    table = pa.table({"day": pa.array(day, pa.date32()), "latency_ms": latency_ms})
    pq.write_table(table, out / "events.parquet", compression="zstd")


def visits(out: Path) -> None:
    rng = np.random.default_rng(20261208)
    persons = 500
    age = np.clip(np.round(rng.gamma(9.0, 4.6, persons)), 18, 95).astype(np.int64)
    per_person = rng.integers(1, 13, persons)  # 1 to 12 visits: some past --max-contributions 5
    person = np.repeat(np.arange(1, persons + 1, dtype=np.int64), per_person)
    order = rng.permutation(person.size)
    table = pa.table({"person": person[order], "age": age[person[order] - 1]})
    pq.write_table(table, out / "visits.parquet", compression="zstd")


def places(out: Path) -> None:
    rng = np.random.default_rng(20261209)
    with open(out / "places.csv", "w") as fh:
        fh.write("country,state,city\n")
        fh.writelines(f"{c},{s},{t}\n" for c, s, t in PLACES)
    weights = np.array([8, 12, 15, 2, 4, 6, 14, 2, 4, 2], dtype=float)
    rows = rng.choice(len(PLACES), size=3_000, p=weights / weights.sum())
    with open(out / "residents.csv", "w") as fh:
        fh.write("country,state,city\n")
        fh.writelines("{},{},{}\n".format(*PLACES[i]) for i in rows)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for make in (people, events, visits, places):
        make(out)
    print(f"wrote the example files into {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "data")
