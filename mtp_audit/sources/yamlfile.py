"""YAML files people pass to an engine (TensorRT-LLM's ``--config``): read bounded, parsed with PyYAML's ``safe_load``
only (a YAML is data: no Python tags, no object construction), with a bound on its events and aliases so that an
alias bomb cannot expand into gigabytes when the document is walked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtp_audit.errors import InputError
from mtp_audit.sources.bounded import read_bytes_bounded

#: Largest YAML file read (engine option files are a few KB).
MAX_YAML_BYTES = 1 << 20
#: Most parser events (scalars, collections) and aliases accepted in one document.
MAX_YAML_EVENTS = 100_000
MAX_YAML_ALIASES = 100


def read_yaml_bounded(path: Path, *, display: str | None = None) -> Any:
    """Parse one YAML file with ``yaml.safe_load`` after bounding its size, events and aliases.

    Returns the document (``None`` for an empty file).

    Raises:
        InputError: unreadable, over :data:`MAX_YAML_BYTES`, not UTF-8, not YAML, several documents, or more events or
            aliases than the bounds (the message names the file and the problem).
    """
    import yaml

    name = display or str(path)
    raw = read_bytes_bounded(path, MAX_YAML_BYTES, display=name)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(name, f"not UTF-8 (byte {exc.start})") from None
    try:
        _check_events(text, name)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(name, f"invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise InputError(name, "invalid YAML: nested too deeply") from None


def _check_events(text: str, name: str) -> None:
    """Count the parser's events and aliases before anything is built.

    Raises:
        InputError: over a bound, or more than one document.
    """
    import yaml

    events = aliases = documents = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        events += 1
        aliases += isinstance(event, yaml.AliasEvent)
        documents += isinstance(event, yaml.DocumentStartEvent)
        if events > MAX_YAML_EVENTS or aliases > MAX_YAML_ALIASES:
            raise InputError(name, f"YAML over the bounds ({MAX_YAML_EVENTS} events, {MAX_YAML_ALIASES} aliases)")
    if documents > 1:
        raise InputError(name, f"{documents} YAML documents in one file; trtllm-serve reads one")
