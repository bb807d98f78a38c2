"""Renderers: a :class:`~mtp_audit.report.Report` in, a string out. No printing, no files.

``FORMATS`` maps each ``--format`` name to its ``render(report) -> str`` function.
"""

from __future__ import annotations

from collections.abc import Callable

from mtp_audit.report import Report


def _text(report: Report) -> str:
    from mtp_audit.formats.text import render

    return render(report)


def _json(report: Report) -> str:
    from mtp_audit.formats.jsonfmt import render

    return render(report)


def _markdown(report: Report) -> str:
    from mtp_audit.formats.markdown import render

    return render(report)


def _sarif(report: Report) -> str:
    from mtp_audit.formats.sarif import render

    return render(report)


FORMATS: dict[str, Callable[[Report], str]] = {
    "text": _text,
    "json": _json,
    "markdown": _markdown,
    "sarif": _sarif,
}


def render(report: Report, fmt: str) -> str:
    """Render ``report`` in format ``fmt`` (a key of :data:`FORMATS`).

    Raises:
        KeyError: unknown format.
    """
    return FORMATS[fmt](report)
