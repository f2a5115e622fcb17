"""Release-file robustness: truncated, edited, wrong-version and hostile files are
rejected with ReleaseFileError, within bounded memory and time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path
from typing import Any, Callable

import pytest

import dptree
from dptree import ReleaseFileError
from dptree.io.release_file import canonical_checksum

SRC = str(Path(dptree.__file__).resolve().parents[1])
CAP = 1 << 30  # address-space cap for the hostile-file subprocesses


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    p = tmp_path_factory.mktemp("rel") / "rel.json"
    rel = dptree.range_tree([1, 2, 3, 15, 15], lower=0, upper=20, epsilon=1.0, branching=4, rng=5)
    rel.save(p, allow_nonprivate=True)
    return p, json.loads(p.read_text())


def write(path: Path, doc: Any, *, fix_checksum: bool = True) -> Path:
    if fix_checksum and isinstance(doc, dict):
        doc = dict(doc)
        doc["checksum"] = canonical_checksum(doc)
    path.write_text(json.dumps(doc))
    return path


def rejects(path: Path) -> ReleaseFileError:
    with pytest.raises(ReleaseFileError) as info:
        dptree.load(path)
    assert str(info.value)
    return info.value


def test_round_trip(saved: tuple[Path, dict[str, Any]]) -> None:
    path, _ = saved
    rel = dptree.load(path)
    assert rel.count(0, 20) == pytest.approx(dptree.load(path).count(0, 20))


def test_truncated_files(saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    raw = saved[0].read_bytes()
    for cut in sorted({0, 1, 2, 10, len(raw) // 3, len(raw) // 2, len(raw) - 2, len(raw) - 1}):
        p = tmp_path / f"cut{cut}.json"
        p.write_bytes(raw[:cut])
        rejects(p)


def test_edited_files_fail_the_checksum(saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    _, doc = saved
    edits: list[Callable[[dict[str, Any]], None]] = [
        lambda d: d["measurements"]["levels"][-1].__setitem__(0, d["measurements"]["levels"][-1][0] + 1),
        lambda d: d["privacy"].__setitem__("private", True),
        lambda d: d["parameters"]["budget"].__setitem__("epsilon", 2.0),
        lambda d: d.__setitem__("extra", 1),
    ]
    for i, edit in enumerate(edits):
        d = json.loads(json.dumps(doc))
        edit(d)
        rejects(write(tmp_path / f"edit{i}.json", d, fix_checksum=False))


def test_tampered_files_with_recomputed_checksum(saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """The checksum is not a signature: the loader re-derives everything from the parameters."""
    _, doc = saved
    tampers: list[Callable[[dict[str, Any]], None]] = [
        lambda d: d["parameters"]["budget"].__setitem__("epsilon", 100.0),   # claims less noise than used
        lambda d: d["measurements"]["noise_parameters"].__setitem__(1, "1/1000"),
        lambda d: d["privacy"].__setitem__("l1_sensitivity", 0.5),
        lambda d: d["privacy"]["budget_spent"].__setitem__("epsilon", 0.01),
        lambda d: d["parameters"].__setitem__("neighbors", "replace"),
        lambda d: d["parameters"].__setitem__("fanouts", [3, 7]),
        lambda d: d["parameters"]["domain"].__setitem__("size", 10),
        lambda d: d["measurements"]["levels"].__setitem__(-1, d["measurements"]["levels"][-1][:-1]),
        lambda d: d["measurements"]["levels"].__setitem__(0, [1]),
        lambda d: d["measurements"]["levels"][-1].__setitem__(0, 1.5),
        lambda d: d["measurements"]["levels"][-1].__setitem__(0, "1"),
        lambda d: d["measurements"]["levels"][-1].__setitem__(0, True),
        lambda d: d["measurements"]["levels"][-1].__setitem__(0, 2**70),
        lambda d: d["privacy"].pop("private"),
        lambda d: d["privacy"].__setitem__("private", "yes"),
        lambda d: d.__setitem__("kind", "pickle"),
        lambda d: d.__setitem__("kind", ["range_tree"]),
        lambda d: d.__setitem__("privacy", []),
        lambda d: d["parameters"].pop("domain"),
        lambda d: d["parameters"].__setitem__("branching", 1),
        lambda d: d["parameters"].__setitem__("noise", "uniform"),
        lambda d: d["parameters"].__setitem__("max_contributions", 0),
        lambda d: d["parameters"]["domain"].__setitem__("upper", 2**62),
        lambda d: d["parameters"]["domain"].__setitem__("lower", "日本"),
        lambda d: d["measurements"].__setitem__("levels", None),
        lambda d: d["measurements"].__setitem__("levels", {}),
    ]
    for i, tamper in enumerate(tampers):
        d = json.loads(json.dumps(doc))
        tamper(d)
        rejects(write(tmp_path / f"t{i}.json", d))


@pytest.mark.parametrize("version", [0, 2, "1", None, 1.0000001, [1], True])  # True == 1 in Python
def test_wrong_versions(version: Any, saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    d = dict(saved[1])
    d["version"] = version
    rejects(write(tmp_path / "v.json", d))


@pytest.mark.parametrize("fmt", ["dptree-release-2", "", None, 1, "DPTREE-RELEASE"])
def test_wrong_formats(fmt: Any, saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    d = dict(saved[1])
    d["format"] = fmt
    rejects(write(tmp_path / "f.json", d))


@pytest.mark.parametrize("text", [
    "", "null", "[]", "1", '"release"', "{}", "NaN", '{"format": Infinity}', '{"a": -Infinity}',
    "\ufeff{}", "{'format': 'dptree-release'}",
])
def test_non_release_json(text: str, tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text(text, encoding="utf-8")
    rejects(p)


def test_non_utf8_and_binary(tmp_path: Path) -> None:
    for i, raw in enumerate([b"\xff\xfe\x00", b"\x00" * 100, "{\"format\": \"é\"}".encode("latin-1")]):
        p = tmp_path / f"b{i}.json"
        p.write_bytes(raw)
        rejects(p)


def test_hostile_deep_nesting(tmp_path: Path) -> None:
    for depth in (40, 10_000, 200_000):
        p = tmp_path / f"deep{depth}.json"
        p.write_text("[" * depth + "]" * depth)
        rejects(p)
        p.write_text('{"a":' * depth + "1" + "}" * depth)
        rejects(p)


def test_hostile_nesting_inside_a_valid_envelope(saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    d = json.loads(json.dumps(saved[1]))
    nested: Any = 1
    for _ in range(100):
        nested = [nested]
    d["privacy"]["note"] = nested
    rejects(write(tmp_path / "n.json", d))


def test_hostile_huge_numbers(saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    base = saved[0].read_text()
    for old, new in [('"branching":4', '"branching":100000000000000000000000'),
                     ('"max_contributions":1', '"max_contributions":4611686018427387904'),
                     ('"epsilon":1.0', '"epsilon":1e-320')]:
        assert old in base, old
        d = json.loads(base.replace(old, new, 1))
        rejects(write(tmp_path / "h.json", d))


@pytest.mark.parametrize("literal", ["1e400", "-1e400"])
def test_hostile_overflowing_float(literal: str, saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    base = saved[0].read_text()
    p = tmp_path / "inf.json"
    p.write_text(base.replace('"epsilon":1.0', '"epsilon":' + literal, 1))
    rejects(p)


def test_hostile_integer_with_many_digits(saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    text = saved[0].read_text().replace('"branching":4', '"branching":' + "9" * 5000, 1)
    p = tmp_path / "digits.json"
    p.write_text(text)
    rejects(p)


def peak_while_rejecting(p: Path) -> int:
    """The peak of Python's traced memory while :func:`rejects` checks that ``p`` is refused."""
    tracemalloc.start()
    try:
        rejects(p)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_hostile_huge_array_is_rejected_with_bounded_memory(saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    d = json.loads(json.dumps(saved[1]))
    d["measurements"]["levels"][-1] = list(range(1_000_000))
    p = write(tmp_path / "big.json", d)
    size = p.stat().st_size
    peak = peak_while_rejecting(p)
    assert peak < 20 * size + 50 * 2**20, f"peak {peak / 2**20:.0f} MiB for a {size / 2**20:.1f} MiB file"


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS memory cap is Linux-specific")
def test_hostile_huge_array_is_rejected_in_a_memory_capped_process(saved: tuple[Path, dict[str, Any]],
                                                                    tmp_path: Path) -> None:
    d = json.loads(json.dumps(saved[1]))
    d["measurements"]["levels"][-1] = list(range(1_000_000))
    p = write(tmp_path / "big.json", d)
    result = _load_in_limited_process(p, CAP, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith("ReleaseFileError"), result.stdout + result.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS memory cap is Linux-specific")
def test_small_release_loads_under_one_gib(saved: tuple[Path, dict[str, Any]]) -> None:
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({1 << 30}, {1 << 30}))
        sys.path.insert(0, {SRC!r})
        import dptree
        dptree.load({str(saved[0])!r})
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-500:]


def test_file_size_limit_is_checked_before_reading(tmp_path: Path) -> None:
    from dptree.io.release_file import read_release

    p = tmp_path / "sparse.json"
    with open(p, "wb") as fh:  # a sparse 3 GiB file: rejected from its size alone
        fh.truncate(3 * 2**30)
    peak = peak_while_rejecting(p)
    assert peak < 10 * 2**20
    small = tmp_path / "small.json"
    small.write_text("{}" + " " * 100)
    with pytest.raises(ReleaseFileError):
        read_release(small, max_bytes=50)


def _load_in_limited_process(path: Path, mem_bytes: int, timeout: float) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({mem_bytes}, {mem_bytes}))
        sys.path.insert(0, {SRC!r})
        import dptree
        try:
            dptree.load({str(path)!r})
        except dptree.ReleaseFileError as exc:
            print("ReleaseFileError", exc)
            sys.exit(0)
        except BaseException as exc:
            print(type(exc).__name__, exc)
            sys.exit(1)
        print("loaded")
        sys.exit(1)
    """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS memory cap is Linux-specific")
def test_hostile_tiny_rho_is_rejected_with_bounded_memory(tmp_path: Path) -> None:
    rel = dptree.range_tree([1, 2], lower=0, upper=20, rho=1.0, noise="gaussian", branching=4, rng=5)
    rel.save(tmp_path / "g.json", allow_nonprivate=True)
    d = json.loads((tmp_path / "g.json").read_text())
    d["parameters"]["budget"]["rho"] = 1e-13
    p = write(tmp_path / "tiny_rho.json", d)
    result = _load_in_limited_process(p, 1 << 30, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith("ReleaseFileError"), result.stdout + result.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS memory cap is Linux-specific")
def test_hostile_large_domain_is_rejected_in_a_memory_capped_process(saved: tuple[Path, dict[str, Any]],
                                                                      tmp_path: Path) -> None:
    d = json.loads(json.dumps(saved[1]))
    d["parameters"]["domain"]["upper"] = 2**40
    d["parameters"]["domain"]["size"] = 2**40 + 1
    p = write(tmp_path / "wide.json", d)
    result = _load_in_limited_process(p, CAP, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith("ReleaseFileError"), result.stdout + result.stderr


def test_loader_never_executes_anything(saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    d = json.loads(json.dumps(saved[1]))
    d["kind"] = f"__import__('os').system('touch {marker}')"
    rejects(write(tmp_path / "code.json", d))
    d = json.loads(json.dumps(saved[1]))
    d["privacy"]["mechanism"] = {"__reduce__": ["os.system", [f"touch {marker}"]]}
    rejects(write(tmp_path / "code2.json", d))
    assert not marker.exists()
