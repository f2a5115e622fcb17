"""The release contract: what every kind of release offers, whatever mechanism made it.

* :class:`Release` -- ``privacy`` (the statement, :mod:`dptree.privacy.statement`), ``private``,
  ``metadata``, ``summary()``, ``to_frame()``, ``to_document()`` / ``from_document()``,
  ``save(path)``; a subclass with a ``KIND`` is registered with the one loader, ``dptree.load``.
* every release displays itself in a notebook (``_repr_html_``) and draws itself (``plot(ax=None)``):
  :class:`~dptree.io.display.Displayed`.
* :class:`CountRelease` -- releases of counts with error bars add ``count``, ``stderr`` and
  ``ci`` (range trees, group releases, hierarchies).

Everything a release holds is public (its boundary, ``BOUNDARY``, says which fields are noisy).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Mapping

from dptree.io.display import Displayed
from dptree.io.release_file import register_kind, write_release

__all__ = ["Release", "CountRelease", "shown"]


def shown(value: Any) -> str:
    """A released point as summaries and the CLI print it: a date at the precision it needs
    (2024-01-01, 2024-01-01T06:00), a number as str() prints it."""
    import numpy as np

    if isinstance(value, np.datetime64):
        return str(np.datetime_as_string(value, unit="auto"))
    return str(value)


class Release(Displayed, ABC):
    """Base of every release kind (see the module docstring for the contract)."""

    #: the file kind ("range_tree", "hierarchy", ...); subclasses that set it can be loaded
    KIND: ClassVar[str]
    privacy: dict[str, Any]
    metadata: dict[str, Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "KIND" in cls.__dict__:
            register_kind(cls.KIND, cls.from_document)

    @property
    def private(self) -> bool:
        """False when a test seed made this release: it is then not differentially private."""
        return bool(self.privacy.get("private", False))

    @abstractmethod
    def summary(self) -> str:
        """One line: what was released, over what, under which guarantee."""

    @abstractmethod
    def to_frame(self, *args: Any, **kwargs: Any) -> Any:
        """Everything released as a pandas table, with error bars where the release has them."""

    @abstractmethod
    def to_document(self) -> dict[str, Any]:
        """The file's parts: ``privacy``, ``parameters``, ``measurements`` and ``metadata``."""

    @classmethod
    @abstractmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Release:
        """Rebuild from a validated file document, re-deriving and checking its noise."""

    def save(self, path: str | os.PathLike[str], *, allow_nonprivate: bool = False, force: bool = False) -> None:
        """Write the release as JSON (format in :mod:`dptree.io.release_file`: checksummed,
        atomic). A release made with a test seed needs ``allow_nonprivate=True``. An existing file
        that holds a release, or is not a dptree release of this kind, is replaced only with ``force=True``."""
        doc = self.to_document()
        write_release(
            path,
            self.KIND,
            privacy=doc["privacy"],
            parameters=doc["parameters"],
            measurements=doc["measurements"],
            metadata=doc.get("metadata"),
            allow_nonprivate=allow_nonprivate,
            force=force,
        )

    def __repr__(self) -> str:
        return f"<{self.summary()}>"


class CountRelease(Release):
    """A release of counts with exact error bars: every answer is post-processing."""

    @abstractmethod
    def count(self, *args: Any, **kwargs: Any) -> Any:
        """The estimated count of a query (a range, a node, ...)."""

    @abstractmethod
    def stderr(self, *args: Any, **kwargs: Any) -> Any:
        """The exact standard error of :meth:`count` (noise only; no sampling error)."""

    @abstractmethod
    def ci(self, *args: Any, **kwargs: Any) -> Any:
        """A confidence interval at ``level`` for :meth:`count` (:mod:`dptree.estimation.intervals`)."""
