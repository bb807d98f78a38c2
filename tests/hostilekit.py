"""Helpers shared by tests/test_hostile_*.py: the CLI run in-process outside hypothesis, and the
test that a string carries no character a person must not read raw."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Sequence
from pathlib import Path

from mtp_audit.formats.escape import UNSAFE


def cli(argv: Sequence[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """``mtp-audit argv`` in this process: ``(exit code, stdout, stderr)``."""
    from mtp_audit.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


def raw_unsafe(text: str, *, allow: str = "") -> list[str]:
    """The :data:`~mtp_audit.formats.escape.UNSAFE` characters of ``text`` not in ``allow``, as ``U+XXXX``."""
    return sorted({f"U+{ord(c):04X}" for c in text if ord(c) in UNSAFE and c not in allow})
