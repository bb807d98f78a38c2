"""Rendering a report for each output and writing them (:func:`emit`): settings applied, colour and width for a
terminal, SARIF roots and the settings anchor, the exit code."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mtp_audit.cli.invocation import current, echo_err
from mtp_audit.cli.options import META_BASELINE, META_CATEGORY, META_SHOWN, Shown
from mtp_audit.cli.outputs import (
    STDOUT,
    is_stdout,
    output_plan,
    stage_and_commit,
    std_stream_of,
)
from mtp_audit.cli.protect import check_outputs, input_paths


def use_color(stream: Any) -> bool:
    """Colour and symbols for ``stream``: only a terminal, never with ``NO_COLOR`` set (https://no-color.org);
    ``FORCE_COLOR`` (non-empty) forces them on, ``NO_COLOR`` wins over it."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return bool(stream is not None and stream.isatty()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def emit(
    report: Any,
    fmt: Sequence[str] | str | None,
    output: Sequence[Path | str | None] | Path | str | None,
    fail_on: str | None,
    *,
    protected: Iterable[str | os.PathLike[str]] = (),
    also_write: Sequence[tuple[str, Path | None, str]] = (),
) -> int:
    """Apply the settings (ignores, ``fail-on``: :func:`mtp_audit.cli.config.settings_for`), render
    ``report`` once per output, check every planned output, write them, and return the exit code.

    Args:
        report: the audit result.
        fmt: ``-f`` values (``text`` / ``json`` / ``markdown`` / ``sarif``), one or several.
        output: ``-o`` values (``None`` or ``"-"``: stdout), paired with ``fmt`` by :func:`output_plan`.
        fail_on: the ``--fail-on`` value, None when not given.
        protected: paths the command read beyond what :func:`input_paths` finds on its own (every file
            opened through :mod:`mtp_audit.sources.bounded` in this run is added too: an installed
            package's files, ``torch/version.py`` read by the live preflight).
        also_write: further outputs ``(option, path, text)`` (``--save-facts``), written with the report.

    Nothing is written unless every output passes :func:`check_outputs` against :func:`input_paths`, and
    every file is staged before any is put in place. When no report goes to stdout, its first line
    (verdict and answer) and the counts go to stderr, so CI logs still show them (not with ``-q``).
    Expired ignores are reported on stderr after the report is written. The display filters
    (:class:`Shown`) change what is listed, never the exit code: see :func:`mtp_audit.report.exit_code`.

    Raises:
        InputError: an output would overwrite an input or collides with another output, formats and
            outputs do not pair up, or a write fails.
    """
    from mtp_audit.cli.config import config_files, settings_for, warn_expired
    from mtp_audit.formats.summary import verdict_line
    from mtp_audit.report import Severity, exit_code

    pairs = output_plan(fmt, output)
    resolved = settings_for(report, fail_on.lower() if fail_on else None)
    report = report.ignore(resolved.suppressions)
    report, also_write, baseline_in = _with_baseline(report, also_write)
    threshold = None if resolved.fail_on == "never" else Severity.parse(resolved.fail_on)
    plan: dict[str, Path | str | None] = {}
    for i, (_, out) in enumerate(pairs):
        plan["--output" if i == 0 else f"--output #{i + 1}"] = out
    for option, extra_out, _ in also_write:
        plan[option] = extra_out
    from mtp_audit.sources.bounded import files_read

    check_outputs(input_paths(report, extra=[*protected, *config_files(), *baseline_in]), plan, read=files_read())
    texts = [(fmt_i, path, _render_for(report, fmt_i, path, threshold)) for fmt_i, path in pairs]
    to_stdout = stage_and_commit(also_write, texts)
    shown = _shown()
    if not to_stdout and not shown.quiet:
        from mtp_audit.formats import render

        head = render(report, "text", fail_on=threshold)
        written = ", ".join(os.fspath(p) for _, p in pairs)
        echo_err(head.split("\n", 1)[0])
        echo_err(f"{verdict_line(report)} (report written to {written})")
    warn_expired(resolved)
    return exit_code(report, threshold)


def _with_baseline(report: Any, also_write: Sequence[tuple[str, Path | None, str]]) -> tuple[Any, list[tuple[str, Path | None, str]], list[Path]]:
    """``(report, outputs, inputs)`` after ``--baseline-findings`` (known findings moved to the ignored ones) and
    ``--write-baseline`` (one more output: the fingerprints of every finding); see :mod:`mtp_audit.cli.baseline`.

    Raises:
        InputError: an unreadable or malformed baseline file.
    """
    ctx = current()
    given, write = (ctx.meta.get(META_BASELINE) if ctx is not None else None) or (None, None)
    if given is None and write is None:
        return report, list(also_write), []
    import json

    from mtp_audit.cli import baseline as bl
    from mtp_audit.formats import render

    prints = bl.fingerprints(report, json.loads(render(report, "sarif", **_sarif_extra(report))))
    if given is not None:
        active = prints[:len(report.findings)]
        report = bl.apply_baseline(report, active, bl.read_baseline(Path(given)), f"--baseline-findings {given}")
    extra = [("--write-baseline", Path(write), bl.baseline_text(report, bl.fingerprints(report, json.loads(
        render(report, "sarif", **_sarif_extra(report))))))] if write is not None else []
    return report, [*also_write, *extra], [Path(given)] if given is not None else []


def _sarif_extra(report: Any) -> dict[str, Any]:
    """The keyword arguments of the SARIF renderer for this run: the roots of its inputs, the settings file's
    ``[tool.mtp-audit]`` line as the anchor, the ``--sarif-category``."""
    extra: dict[str, Any] = {"roots": sarif_roots(report)}
    anchor = _config_anchor()
    if anchor is not None:
        extra["anchor"], extra["anchor_line"] = anchor
    ctx = current()
    extra["category"] = ctx.meta.get(META_CATEGORY) if ctx is not None else None
    return extra


def _shown() -> Shown:
    ctx = current()
    found = ctx.meta.get(META_SHOWN) if ctx is not None else None
    return found if isinstance(found, Shown) else Shown()


def _render_for(report: Any, fmt: str, path: Path | str, threshold: Any) -> str:
    """``report`` in ``fmt`` for ``path``: colour only for a UTF-8 terminal on stdout; SARIF locations
    relative to the inputs the command read (:func:`sarif_roots`)."""
    from mtp_audit.cli.config import verbose
    from mtp_audit.formats import render

    on_stdout = is_stdout(path) or std_stream_of(Path(path)) is sys.stdout
    color = (on_stdout and fmt == "text" and use_color(sys.stdout)
             and (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "") == "utf8")
    extra: dict[str, Any] = _sarif_extra(report) if fmt == "sarif" else {}
    shown = _shown()
    width = _terminal_width() if on_stdout and fmt == "text" else None
    return render(report, fmt, verbose=verbose(), color=color, fail_on=threshold,
                  shown=shown if shown.active else None, width=width, **extra)


def _terminal_width() -> int | None:
    """The width of the terminal stdout is (``COLUMNS`` wins), or ``None`` for a file, a pipe or a CI log."""
    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    import shutil  # a terminal only (shutil imports bz2 and lzma)

    return shutil.get_terminal_size((100, 24)).columns


#: click parameter -> the analyzer whose finding paths are relative to it, per command.
_ROOT_PARAMS = {
    "checkpoint": {"target": "checkpoint"},
    "compare": {"derived": "compare"},
    "sglang": {"targets": "sglang"},
    "vllm": {"targets": "vllm"},
    "preflight": {"env_dumps": "preflight", "facts_file": "preflight"},
    "launch": {"sglang_targets": "sglang", "compare_sglang": "sglang", "vllm_target": "vllm", "env_dumps": "preflight",
               "facts_file": "preflight", "launch_file": "launch"},
}


def sarif_roots(report: Any) -> dict[str, str]:
    """Analyzer -> the local file or folder its finding paths are relative to, from the running
    command's parameters (the last of several: NEW of OLD NEW) and the report's targets; only paths
    that exist (a hub id or the live machine has none)."""
    roots: dict[str, str] = {}
    for t in report.targets:
        if _exists(t.name):
            roots[t.analyzer] = t.name
    ctx = current()
    if ctx is None or ctx.command is None:
        return roots
    for key, analyzer in _ROOT_PARAMS.get(ctx.command.name or "", {}).items():
        value = ctx.params.get(key)
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        local = [os.fspath(v) for v in values if isinstance(v, (str, os.PathLike)) and _exists(os.fspath(v))]
        if local:
            roots[analyzer] = local[-1]
    return roots


def _config_anchor() -> tuple[str, int | None] | None:
    """The settings file the command read and the line of its ``[tool.mtp-audit]`` table, where findings
    with no file of their own are shown in code scanning when no input file fits."""
    from mtp_audit.cli.config import config_files

    files = config_files()
    if not files:
        return None
    line = None
    try:
        with open(files[0], encoding="utf-8", errors="replace") as fh:
            for n, text in enumerate(fh, 1):
                if text.strip().startswith("[tool.mtp-audit"):
                    line = n
                    break
                if n > 100_000:
                    break
    except OSError:
        pass
    return os.fspath(files[0]), line


def _exists(name: str) -> bool:
    try:
        return bool(name) and name != STDOUT and os.path.exists(name)
    except (OSError, ValueError, TypeError):
        return False
