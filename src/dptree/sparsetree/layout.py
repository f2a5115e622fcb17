"""The public shape of a sparse range tree (:class:`SparseLayout`): levels, their widths in keys and
their fan-outs, read by the mechanism (:mod:`dptree.sparsetree.mechanism`) and by the count tree's
refinements (:mod:`dptree.sparsetree.refine`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SparseLayout"]


@dataclass(frozen=True)
class SparseLayout:
    """The public shape of the tree: 2^bits leaves (single keys), ``branching`` = 2^s children per
    node (the root may have fewer: its fan-out takes the remainder bits), levels 1..depth."""

    bits: int
    branching: int

    @property
    def step(self) -> int:
        return self.branching.bit_length() - 1

    @property
    def depth(self) -> int:
        """L, the number of levels below the root (the last one holds single keys)."""
        return -(-self.bits // self.step)

    @property
    def shifts(self) -> tuple[int, ...]:
        """shift[d]: a node of level d covers 2^shift[d] keys (d = 0 .. L; shift[L] = 0)."""
        L, s = self.depth, self.step
        return (self.bits,) + tuple(s * (L - d) for d in range(1, L + 1))

    def fanout(self, d: int) -> int:
        """Children of a node of level d."""
        sh = self.shifts
        return 1 << (sh[d] - sh[d + 1])
