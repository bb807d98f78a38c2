"""Content-addressed cache of per-file scan results in the user cache folder.

Folder: ``$MTP_AUDIT_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/mtp-audit``, else
``~/.cache/mtp-audit``; entries live under ``<engine>-scan-v<version>/`` keyed by the SHA-1 of
the file's bytes, so an edited file is re-scanned and an unchanged one across versions is not.
Setting ``MTP_AUDIT_CACHE_DIR`` to an empty string disables the cache. Cache failures are ignored
(the scan just runs again).

Every entry is validated on read (:func:`load`), and anything that fails is a miss, never an error: it is
opened once without following a symlink and without blocking (a FIFO, a device such as ``/dev/zero`` or a
symlink out of the cache is refused), bounded (:data:`MAX_ENTRY_BYTES`), and must be the envelope
:func:`store` writes: ``{"entry": ENTRY_FORMAT, "key": <its own key>, "sha256": <hash of the value's
canonical JSON>, "value": {...}}``, so a truncated or bit-flipped entry, one copied under another key, or
valid JSON of another shape (``{}``) is scanned again. Whole-tree entries (keys ``tree-...``, ``whl-...``) must also
have the shape their readers use (``facts`` a mapping with a ``scan`` mapping, ``gaps`` a list of
:class:`~mtp_audit.report.Gap` fields).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

#: Largest cache entry read back (bytes); a whole-tree entry of sglang 0.5.23 is ~1 MB.
MAX_ENTRY_BYTES = 64 * 1024 * 1024

#: Envelope version of an entry (see the module docstring).
ENTRY_FORMAT = 2


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


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8", "surrogatepass")).hexdigest()


def load(folder: Path | None, key: str) -> dict[str, Any] | None:
    """A cached result, or ``None``: missing, unreadable, not a regular file, too large, not the envelope of
    this key with a matching hash, or (whole-tree keys) not of the shape the readers use (see the module
    docstring). Never raises."""
    if folder is None:
        return None
    from mtp_audit.errors import InputError
    from mtp_audit.sources.bounded import read_bytes_bounded

    try:
        raw = read_bytes_bounded(folder / key[:2] / f"{key}.json", MAX_ENTRY_BYTES, follow=False)
        doc = json.loads(raw.decode("utf-8"))
    except (InputError, OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("entry") != ENTRY_FORMAT or doc.get("key") != key:
        return None
    value = doc.get("value")
    if not isinstance(value, dict) or doc.get("sha256") != _digest(value):
        return None
    if key.startswith(("tree-", "whl-")) and not _tree_shape(value):
        return None
    if key.startswith("whl-") and not (isinstance(value.get("display"), str) and isinstance(value.get("version"), (str, type(None)))):
        return None
    return value


def _tree_shape(value: dict[str, Any]) -> bool:
    """Whether a whole-tree entry has the shape ``audit_tree`` reads: ``facts`` a dict with a ``scan`` dict,
    ``gaps`` a list of dicts holding exactly :class:`~mtp_audit.report.Gap`'s fields with their types."""
    facts, gaps = value.get("facts"), value.get("gaps")
    if not isinstance(facts, dict) or not isinstance(facts.get("scan", {}), dict) or not isinstance(gaps, list):
        return False
    for g in gaps:
        if not isinstance(g, dict) or set(g) != {"analyzer", "message", "path", "blocking"}:
            return False
        if not (isinstance(g["analyzer"], str) and isinstance(g["message"], str) and isinstance(g["blocking"], bool)
                and (g["path"] is None or isinstance(g["path"], str))):
            return False
    return True


def store(folder: Path | None, key: str, value: dict[str, Any]) -> None:
    """Write one entry atomically in its envelope (see the module docstring); errors (read-only home, full
    disk) are ignored."""
    if folder is None:
        return
    sub = folder / key[:2]
    try:
        sub.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=sub)
    except OSError:
        return
    try:
        doc = {"entry": ENTRY_FORMAT, "key": key, "sha256": _digest(value), "value": value}
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(doc, separators=(",", ":")))  # the C encoder: json.dump(doc, fh) runs the Python one
        os.replace(tmp, sub / f"{key}.json")
    except BaseException as exc:  # a signal or a failed write: never leave the temporary file
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if not isinstance(exc, (OSError, ValueError, TypeError)):
            raise
