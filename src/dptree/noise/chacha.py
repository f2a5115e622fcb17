"""A user-space CSPRNG: ChaCha20 keyed from the OS, with fast key erasure and periodic reseeding.

:class:`ChaChaStream` is the generator behind :class:`dptree.noise.SystemRandomSource`. It is the
construction of OpenBSD's ``arc4random`` (also used by OpenSSH and libbsd), with the ChaCha20 of
the ``cryptography`` package (OpenSSL's implementation) as the keystream:

* **Seed** from the OS CSPRNG (``os.urandom``): a 32-byte key and a fresh 12-byte nonce (the
  block counter starts at 0).
* **Fast key erasure** (Bernstein, "Fast-key-erasure random-number generators", 2017): every key
  produces at most ``32 + key_bytes`` bytes of keystream (default 2^18 + 32 bytes, 4097 blocks,
  far below ChaCha20's 2^32-block limit per key and nonce, RFC 8439). The first 32 bytes replace
  the key; the rest is output. A key is never used twice, and a state captured later does not
  reveal earlier output (forward secrecy). Buffered bytes are zeroed once handed out.
* **Reseed** from the OS after at most ``reseed_bytes`` output bytes (default 1,600,000, the bound
  of ``arc4random``), so a captured state predicts at most that many further bytes.
* **Fork safety**: the process id is checked on every call and a child process reseeds from the
  OS before its first byte (as ``arc4random`` and libsodium do); ``os.register_at_fork`` also
  renews every stream's lock in the child. Copies and pickles of a stream start a new one.

Security argument: if ChaCha20 is a pseudo-random function of its key (its standard assumption),
the output is computationally indistinguishable from uniform bytes, so the samplers' output laws
(exact for uniform bytes) are within a negligible distance of exact. Python cannot guarantee
that freed memory is erased; the zeroing is best effort (see docs/notes/privacy.md).
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Callable

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from dptree.errors import InvalidParameterError

__all__ = ["ChaChaStream", "KEY_BYTES", "RESEED_BYTES", "BUFFER_BYTES", "SMALL_BYTES"]

#: output bytes per ChaCha20 key before fast key erasure replaces it (2^12 blocks of 64 bytes)
KEY_BYTES = 1 << 18
#: output bytes between two seeds from the OS CSPRNG (OpenBSD arc4random's bound)
RESEED_BYTES = 1_600_000
#: the buffer for small requests (one keystream piece, under one key)
BUFFER_BYTES = 1 << 16
#: requests up to this size are served from the buffer; larger ones get their own keys
SMALL_BYTES = 1 << 12

_KEY, _NONCE = 32, 12
_ZERO_KEY = bytes(_KEY)
_ZEROS = memoryview(bytes(BUFFER_BYTES))
_STREAMS: "weakref.WeakSet[ChaChaStream]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for stream in list(_STREAMS):
        stream._lock = threading.Lock()  # a lock held by another thread at fork time stays held
        stream._pid = -1  # forces a reseed before the child's first byte


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class ChaChaStream:
    """Uniform random bytes from ChaCha20 keyed by the OS (see the module docstring).

    ``entropy``, ``key_bytes``, ``reseed_bytes``, ``buffer_bytes`` and ``small_bytes`` exist for
    tests: the defaults are the documented bounds. ``seeds`` and ``keys`` count OS seedings and keys used.
    """

    def __init__(
        self,
        entropy: Callable[[int], bytes] = os.urandom,
        key_bytes: int = KEY_BYTES,
        reseed_bytes: int = RESEED_BYTES,
        buffer_bytes: int = BUFFER_BYTES,
        small_bytes: int = SMALL_BYTES,
    ) -> None:
        if not 1 <= small_bytes <= buffer_bytes <= min(key_bytes, BUFFER_BYTES) and key_bytes <= reseed_bytes:
            raise InvalidParameterError(
                "ChaChaStream needs 1 <= small_bytes <= buffer_bytes <= key_bytes <= reseed_bytes "
                f"and buffer_bytes <= {BUFFER_BYTES}"
            )
        self._entropy = entropy
        self._key_bytes, self._reseed_bytes = key_bytes, reseed_bytes
        self._buffer_bytes, self._small_bytes = buffer_bytes, small_bytes
        self._lock = threading.Lock()
        self._pid = -1  # not seeded yet: the first call seeds (lazily, so a fork before use is free)
        self._key = _ZERO_KEY
        self._nonce = bytes(16)
        self._since_seed = 0
        self._buf = bytearray(buffer_bytes)
        self._view = memoryview(self._buf)
        self._have = 0  # unread bytes at the end of _buf
        self.seeds = 0
        self.keys = 0
        _STREAMS.add(self)

    def __reduce__(self) -> tuple[Any, ...]:
        # a copy or an unpickled stream must never replay this one's output: it starts afresh
        return (type(self), (self._entropy, self._key_bytes, self._reseed_bytes, self._buffer_bytes,
                             self._small_bytes))

    def _seed(self) -> None:
        material = self._entropy(_KEY + _NONCE)
        if not isinstance(material, bytes) or len(material) != _KEY + _NONCE:
            raise InvalidParameterError("the entropy source must return exactly the bytes asked for")
        self._key = material[:_KEY]
        self._nonce = bytes(4) + material[_KEY:]  # 32-bit block counter 0, then the 96-bit nonce
        self._since_seed = 0
        self._pid = os.getpid()
        self.seeds += 1

    def _fill(self, out: memoryview) -> None:
        """Overwrite ``out`` with keystream, one fresh key per piece."""
        pos, n = 0, len(out)
        while pos < n:
            if self._since_seed >= self._reseed_bytes:
                self._seed()
            piece = min(n - pos, self._key_bytes, self._reseed_bytes - self._since_seed)
            enc = Cipher(algorithms.ChaCha20(self._key, self._nonce), mode=None).encryptor()
            # keystream = ChaCha20 of zero bytes, always read from the separate read-only _ZEROS:
            # input and output never alias (cryptography 51 refuses an in-place update_into)
            new_key = bytearray(_KEY)
            enc.update_into(_ZEROS[:_KEY], new_key)  # keystream bytes 0..31: the next key
            end = pos + piece
            for start in range(pos, end, len(_ZEROS)):  # bytes 32..: output
                stop = min(end, start + len(_ZEROS))
                enc.update_into(_ZEROS[: stop - start], out[start:stop])
            self._key = bytes(new_key)
            new_key[:] = _ZERO_KEY
            self.keys += 1
            self._since_seed += piece
            pos += piece

    def random_bytes(self, n: int) -> bytes:
        """``n`` uniformly random bytes (computationally: see the module docstring)."""
        if n < 0:
            raise InvalidParameterError(f"random_bytes needs n >= 0, got {n}")
        with self._lock:
            if self._pid != os.getpid():  # first use, or a forked child: never the parent's stream
                self._seed()
                self._view[:] = _ZEROS[: self._buffer_bytes]
                self._have = 0
            if n > self._small_bytes:
                out = bytearray(n)
                self._fill(memoryview(out))
                return bytes(out)
            size = self._buffer_bytes
            if self._have < n:
                # unread buffered bytes are dropped (which bytes are dropped depends on n only);
                # handed-out bytes are already zero, so the whole buffer is zero for the refill
                self._view[size - self._have :] = _ZEROS[: self._have]
                self._fill(self._view)
                self._have = size
            start = size - self._have
            chunk = bytes(self._view[start : start + n])
            self._view[start : start + n] = _ZEROS[:n]  # erase what was handed out
            self._have -= n
            return chunk
