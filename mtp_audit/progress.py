"""Progress of long work (hub shard headers, a release fetched from the package index, large SGLang trees) on
stderr, on a terminal only.

The bar is tqdm's: it comes with huggingface_hub (a runtime dependency), shows the rate and the time left, and
renders the same in every terminal. It is imported only when a bar is shown, which keeps ``import mtp_audit`` and
``mtp-audit --help`` free of it; without tqdm importable no bar is drawn (the work is the same).

Shown only when asked for (the CLI asks; a program using the library asks with ``with requested():``), stderr is a
terminal, ``CI`` is unset and ``MTP_AUDIT_NO_PROGRESS`` is unset: a host program's terminal, CI logs, pipes, files and
tests never see control characters, and stdout (the report) is never touched.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

_REQUESTED: contextvars.ContextVar[bool] = contextvars.ContextVar("mtp_audit_progress", default=False)


@contextlib.contextmanager
def requested(on: bool = True) -> Iterator[None]:
    """Draw progress bars inside the block (on a terminal only; see the module docstring). The library draws none
    unless asked; ``mtp-audit`` asks for its whole run."""
    token = _REQUESTED.set(on)
    try:
        yield
    finally:
        _REQUESTED.reset(token)


def enabled() -> bool:
    """Whether a progress bar may be drawn now (see the module docstring)."""
    if not _REQUESTED.get() or os.environ.get("CI") or os.environ.get("MTP_AUDIT_NO_PROGRESS"):
        return False
    try:
        return bool(sys.stderr is not None and sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """A bar of ``total`` steps labelled ``mtp-audit: <label>`` with its rate and time left; :meth:`step` is
    thread-safe. ``unit="B"`` counts bytes (shown as kB/MB, MB/s).

    Use as a context manager or call :meth:`close`. With ``total < min_total`` or :func:`enabled`
    false it draws nothing and costs a lock per step.
    """

    def __init__(self, total: int, label: str, *, min_total: int = 2, unit: str = "it") -> None:
        self.total = total
        self.done = 0
        self._lock = threading.Lock()
        self._bar: Any = None
        if total >= min_total and enabled():
            try:
                from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]  # optional; untyped where installed
            except ImportError:  # pragma: no cover - tqdm comes with huggingface_hub
                return
            self._bar = tqdm(total=total, desc=f"mtp-audit: {label}", file=sys.stderr, unit=unit,
                             unit_scale=unit == "B", unit_divisor=1000, leave=True, dynamic_ncols=True)

    @property
    def shown(self) -> bool:
        """Whether a bar is being drawn."""
        return self._bar is not None

    def step(self, n: int = 1) -> None:
        """Advance by ``n`` steps."""
        with self._lock:
            self.done += n
            if self._bar is not None:
                self._bar.update(n)

    def close(self) -> None:
        """Finish the bar (it stays as one completed line on the terminal); idempotent."""
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
