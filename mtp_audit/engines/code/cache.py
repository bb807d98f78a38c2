"""Content-addressed cache of per-file scan results in the user cache folder.

Folder: ``$MTP_AUDIT_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/mtp-audit``, else
``~/.cache/mtp-audit``; entries live under ``sglang-scan-v<SCAN_VERSION>/`` keyed by the SHA-1 of
the file's bytes, so an edited file is re-scanned and an unchanged one across versions is not.
Setting ``MTP_AUDIT_CACHE_DIR`` to an empty string disables the cache. Cache failures are ignored
(the scan just runs again).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

def cache_dir(namespace: str) -> Path | None:
    """The cache folder for one engine's scan results (``namespace``: e.g. ``"sglang-scan-v7"``, the engine's
    name and scan version), or ``None`` when disabled (``MTP_AUDIT_CACHE_DIR`` set to an empty string)."""
    env = os.environ.get("MTP_AUDIT_CACHE_DIR")
    if env is not None:
        if not env.strip():
            return None
        base = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) / "mtp-audit" if xdg else Path.home() / ".cache" / "mtp-audit"
    return base / namespace


def key_for(data: bytes, passes: tuple[str, ...] | bool) -> str:
    """Cache key: SHA-1 of the file bytes plus the passes run on them (``True``/``False``: the server pass or none)."""
    if isinstance(passes, bool):
        passes = ("server",) if passes else ()
    return hashlib.sha1(data + b"\x00" + ",".join(passes).encode()).hexdigest()


def load(folder: Path | None, key: str) -> dict[str, Any] | None:
    """A cached result, or ``None`` (missing, unreadable or corrupt entries are misses)."""
    if folder is None:
        return None
    try:
        with open(folder / key[:2] / f"{key}.json", encoding="utf-8") as fh:
            value = json.load(fh)
        return value if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None


def store(folder: Path | None, key: str, value: dict[str, Any]) -> None:
    """Write one entry atomically; errors (read-only home, full disk) are ignored."""
    if folder is None:
        return
    sub = folder / key[:2]
    try:
        sub.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=sub)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(value, fh, separators=(",", ":"))
        os.replace(tmp, sub / f"{key}.json")
    except OSError:
        pass
