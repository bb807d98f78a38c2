"""A read-only mapping for the typed answers analyzers hand each other (:mod:`mtp_audit.checkpoint.typed`,
:mod:`mtp_audit.preflight.typed`).

Its own leaf module, apart from :mod:`mtp_audit.known`: the checkpoint answer holds its ``config.json`` and per-type
counts in these, while the two frozen dataclasses of :mod:`mtp_audit.known` (~1 ms to create) are not used by a
checkpoint audit. Imports nothing of mtp_audit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class ReadOnlyMap(Mapping[str, Any]):
    """A read-only mapping for the typed answers (a ``config.json`` read once, per-type counts): no item can be set or
    removed (``TypeError``), its values are shared, not copied (a nested ``dict`` stays the reader's own). Unlike
    :class:`types.MappingProxyType` it pickles and deep-copies, so a report that carries a typed answer still does.
    Equal to any mapping with the same items."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        self._items: dict[str, Any] = dict(items or {})

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"ReadOnlyMap({self._items!r})"
