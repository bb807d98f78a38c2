"""The command line's log: what ``-v`` / ``-vv`` show of the package's ``logging`` records, on stderr.

The package logs through ``logging.getLogger("mtp_audit.<module>")`` and, as a library, shows nothing (a
``NullHandler``; a host program configures logging itself). The command line shows the records for the run of one
command: ``-v`` the INFO records (what was resolved and fetched, how many bytes, from which cache), ``-vv`` the DEBUG
ones too (every file and range request), each as one ``mtp-audit: <logger>: <message>`` line on the current stderr.
The handler is added when the verbosity is parsed and removed when the command ends (:func:`scoped`), so a program
that runs the CLI in-process keeps its own logging as it was.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

_ROOT = "mtp_audit"


def _handler_class() -> Any:
    """The stderr handler class (``logging`` is imported only when a command asks for ``-v``)."""
    import logging

    class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
        """Writes to whatever ``sys.stderr`` is at the time of the record (a test's capture, a redirected stream)."""

        def __init__(self) -> None:
            super().__init__(sys.stderr)

        def emit(self, record: logging.LogRecord) -> None:
            self.stream = sys.stderr
            if self.stream is not None:
                super().emit(record)

    return _StderrHandler


_STATE: dict[str, object] = {}


def set_verbosity(count: int) -> None:
    """Show the package's records at INFO (``count`` 1) or DEBUG (2 or more) until the command ends; 0: none."""
    if count <= 0 and "handler" not in _STATE:
        return  # nothing shown and nothing to undo: logging is not even imported
    import logging

    logger = logging.getLogger(_ROOT)
    _remove(logger)
    if count <= 0:
        return
    handler = _handler_class()()
    handler.setFormatter(logging.Formatter("mtp-audit: %(name)s: %(message)s"))
    _STATE.update(handler=handler, level=logger.level, propagate=logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if count == 1 else logging.DEBUG)
    logger.propagate = False


def _remove(logger: logging.Logger) -> None:
    import logging

    handler = _STATE.pop("handler", None)
    if isinstance(handler, logging.Handler):
        logger.removeHandler(handler)
        level = _STATE.pop("level", logging.NOTSET)
        logger.setLevel(level if isinstance(level, int) else logging.NOTSET)  # the int set_verbosity saved
        logger.propagate = bool(_STATE.pop("propagate", True))


@contextlib.contextmanager
def scoped() -> Iterator[None]:
    """Remove the command's log handler when the block ends (however it ends)."""
    try:
        yield
    finally:
        if "handler" in _STATE:
            import logging

            _remove(logging.getLogger(_ROOT))
