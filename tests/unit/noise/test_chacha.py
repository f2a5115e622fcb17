"""The ChaCha20 generator behind SystemRandomSource: exact construction, bounds, uniformity, forks."""

from __future__ import annotations

import copy
import os
import pickle
import threading

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from scipy.stats import chisquare

from dptree.errors import InvalidParameterError
from dptree.noise import SystemRandomSource, make_source
from dptree.noise.chacha import BUFFER_BYTES, KEY_BYTES, RESEED_BYTES, SMALL_BYTES, ChaChaStream


class ScriptedEntropy:
    """Deterministic 'OS' bytes: call i returns 44 bytes derived from i (distinct per call)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, n: int) -> bytes:
        self.calls += 1
        return bytes((self.calls * 7 + j) % 256 for j in range(n))


def keystream(key: bytes, nonce16: bytes, n: int) -> bytes:
    enc = Cipher(algorithms.ChaCha20(key, nonce16), mode=None).encryptor()
    return enc.update(bytes(n))


def reference(requests: int | list[int], key_bytes: int, reseed_bytes: int) -> bytes:
    """The documented construction written out directly: seed 32-byte key + 12-byte nonce from
    the entropy source; each key gives 32 + at most key_bytes keystream bytes (and serves one
    request at most), the first 32 being the next key; a new seed after every reseed_bytes
    output bytes."""
    ent = ScriptedEntropy()
    out = b""
    since = reseed_bytes
    key = nonce = b""
    for n in [requests] if isinstance(requests, int) else requests:
        done = 0
        while done < n:
            if since >= reseed_bytes:
                m = ent(44)
                key, nonce, since = m[:32], bytes(4) + m[32:], 0
            piece = min(n - done, key_bytes, reseed_bytes - since)
            ks = keystream(key, nonce, 32 + piece)
            key, out, since, done = ks[:32], out + ks[32:], since + piece, done + piece
    return out


def test_documented_bounds() -> None:
    # a key gives at most 2^18 + 32 bytes = 4097 blocks, far below ChaCha20's 2^32 blocks per
    # (key, nonce); reseeds every 1,600,000 bytes as OpenBSD arc4random
    assert KEY_BYTES == 1 << 18 and (KEY_BYTES + 32) // 64 + 1 < 2**32
    assert RESEED_BYTES == 1_600_000 and SMALL_BYTES <= BUFFER_BYTES <= KEY_BYTES <= RESEED_BYTES


@pytest.mark.parametrize("sizes", [[5000], [101, 700, 1499, 2000, 600, 601]])
def test_large_requests_are_the_documented_construction(sizes: list[int]) -> None:
    s = ChaChaStream(entropy=ScriptedEntropy(), key_bytes=600, reseed_bytes=1500, buffer_bytes=100, small_bytes=100)
    got = b"".join(s.random_bytes(k) for k in sizes)
    assert got == reference(sizes, 600, 1500)


def test_rekeys_exactly_at_the_bound() -> None:
    ent = ScriptedEntropy()
    s = ChaChaStream(entropy=ent, key_bytes=256, reseed_bytes=10_000, buffer_bytes=16, small_bytes=16)
    out = s.random_bytes(1024)
    assert out == reference(1024, 256, 10_000)
    assert s.keys == 4 and s.seeds == 1 and ent.calls == 1
    # the bytes after the bound are not the continuation of the first key's stream
    m = ScriptedEntropy()(44)
    first = keystream(m[:32], bytes(4) + m[32:], 32 + 512)
    assert out[:256] == first[32:288] and out[256:512] != first[288:544]
    assert out[256:512] == keystream(first[:32], bytes(4) + m[32:], 32 + 256)[32:]


def test_reseeds_from_the_os_at_the_bound() -> None:
    ent = ScriptedEntropy()
    s = ChaChaStream(entropy=ent, key_bytes=100, reseed_bytes=300, buffer_bytes=10, small_bytes=10)
    s.random_bytes(300)
    assert ent.calls == 1  # exactly at the bound: not yet
    s.random_bytes(101)
    assert ent.calls == 2
    s.random_bytes(1000)
    assert ent.calls == 5 and s.seeds == 5


def test_small_requests_come_from_an_erased_buffer() -> None:
    s = ChaChaStream(entropy=ScriptedEntropy(), key_bytes=64, reseed_bytes=1000, buffer_bytes=64, small_bytes=64)
    a = s.random_bytes(10)
    assert a == reference(64, 64, 1000)[:10]
    assert s._buf[:10] == bytes(10)  # handed-out bytes are zeroed
    b = s.random_bytes(60)  # more than is left: a fresh buffer under the next key
    assert b == reference([64, 64], 64, 1000)[64:124]
    assert s.keys == 2


def test_bad_parameters_and_entropy() -> None:
    with pytest.raises(InvalidParameterError):
        ChaChaStream(key_bytes=10, buffer_bytes=20)
    with pytest.raises(InvalidParameterError):
        ChaChaStream(entropy=lambda n: bytes(n - 1)).random_bytes(1)
    with pytest.raises(InvalidParameterError):
        ChaChaStream().random_bytes(-1)
    assert ChaChaStream().random_bytes(0) == b""


def _byte_pvalue(data: bytes) -> float:
    counts = np.bincount(np.frombuffer(data, dtype=np.uint8), minlength=256)
    return float(chisquare(counts).pvalue)


def test_bytes_are_uniform_with_power() -> None:
    src = SystemRandomSource()
    # mixed request sizes cross buffer, key and reseed boundaries
    data = b"".join(src.random_bytes(k) for k in [1, 3, 4096, 4097, 70_000, 300_000, 2_000_000, 1_800_000])
    assert len(data) == 4_178_197
    assert _byte_pvalue(data) > 1e-6
    # adjacent bytes are independent: 16-bit words are uniform over 65536 values
    words = np.frombuffer(src.random_bytes(1 << 23), dtype=np.uint16)
    assert float(chisquare(np.bincount(words, minlength=1 << 16)).pvalue) > 1e-6
    # power: the same test rejects a stream in which one byte value in 256 is 10% too frequent
    arr = np.frombuffer(data, dtype=np.uint8).copy()
    hit = np.flatnonzero(arr == 1)[: len(data) // 2560]
    arr[hit] = 0
    assert _byte_pvalue(arr.tobytes()) < 1e-6


def test_two_sources_never_share_a_stream() -> None:
    firsts = {SystemRandomSource().random_bytes(16) for _ in range(2000)}
    assert len(firsts) == 2000
    a, b = SystemRandomSource(), SystemRandomSource()
    assert a.random_bytes(1 << 20) != b.random_bytes(1 << 20)
    a.random_bytes(5)
    for twin in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert twin.private is True
        assert twin.random_bytes(64) != a.random_bytes(64)
    chunks = [a.random_bytes(16) for _ in range(5000)]
    assert len(set(chunks)) == 5000


def test_threads_never_get_the_same_bytes() -> None:
    src = SystemRandomSource()
    got: list[bytes] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [src.random_bytes(16) for _ in range(2000)] + [src.random_bytes(5000)[:16] for _ in range(50)]
        with lock:
            got.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 * 2050 and len(set(got)) == len(got)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork in a process with threads
def test_a_forked_child_never_reuses_the_parent_stream() -> None:
    src = SystemRandomSource()
    src.random_bytes(8)  # seeded, with buffered bytes a careless child would hand out again
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(read_end)
            small = src.random_bytes(32)
            large = src.random_bytes(10_000)[:32]
            os.write(write_end, small + large + bytes([src._stream.seeds]))
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    while len(data) < 65:
        chunk = os.read(read_end, 65 - len(data))
        if not chunk:
            break
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    assert len(data) == 65
    child_small, child_large, child_seeds = data[:32], data[32:64], data[64]
    assert child_seeds == 2  # the parent's seed, then the child's own
    parent_small, parent_large = src.random_bytes(32), src.random_bytes(10_000)[:32]
    assert child_small != parent_small and child_large != parent_large
    assert src._stream.seeds == 1


def test_only_the_system_source_is_private_still() -> None:
    assert make_source(None).private is True
    assert isinstance(make_source(None), SystemRandomSource)

    class Sub(SystemRandomSource):
        pass

    assert Sub().private is False


def test_small_requests_share_one_buffered_key() -> None:
    s = ChaChaStream(entropy=ScriptedEntropy(), key_bytes=128, reseed_bytes=1000, buffer_bytes=128, small_bytes=32)
    got = b"".join(s.random_bytes(k) for k in (10, 20, 30, 32))  # 92 bytes of one buffer
    assert got == reference(128, 128, 1000)[:92] and s.keys == 1
    assert s.random_bytes(40) == reference([128, 40], 128, 1000)[128:]  # over small_bytes: own key
    assert s.random_bytes(32) == reference(128, 128, 1000)[92:124]  # 36 left in the buffer: 32 fit
    assert s.keys == 2
    assert s.random_bytes(5) == reference([128, 40, 128], 128, 1000)[168:173]  # 4 left: a new buffer
    assert s.keys == 3


class _StrictEncryptor:
    """A ChaCha20 encryptor that refuses what the strictest cryptography release refuses: an
    output buffer sharing memory with its input (and one shorter than the input)."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def update_into(self, data: object, buf: object) -> int:
        a, b = np.frombuffer(data, dtype=np.uint8), np.frombuffer(buf, dtype=np.uint8)
        if np.shares_memory(a, b):
            raise ValueError("data and buf must not overlap")
        if len(b) < len(a):
            raise ValueError("buf is too small")
        return self._inner.update_into(data, buf)  # type: ignore[attr-defined]

    def update(self, data: bytes) -> bytes:
        return self._inner.update(data)  # type: ignore[attr-defined]


def test_never_encrypts_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    # any cryptography version that refuses aliased buffers would break every release
    import dptree.noise.chacha as chacha

    class StrictCipher:
        def __init__(self, algorithm: object, mode: object = None) -> None:
            self._cipher = Cipher(algorithm, mode=mode)  # type: ignore[arg-type]

        def encryptor(self) -> _StrictEncryptor:
            return _StrictEncryptor(self._cipher.encryptor())

    monkeypatch.setattr(chacha, "Cipher", StrictCipher)
    kb, rb = 3 * BUFFER_BYTES, 10 * BUFFER_BYTES
    s = ChaChaStream(entropy=ScriptedEntropy(), key_bytes=kb, reseed_bytes=rb)
    # large requests: pieces longer than the zero block are still the documented keystream
    sizes = [SMALL_BYTES + 1, kb + 7, 2 * BUFFER_BYTES + 3, rb]
    assert b"".join(s.random_bytes(k) for k in sizes) == reference(sizes, kb, rb)
    assert len(s.random_bytes(10)) == 10  # a small request refills the buffer under the same rule
