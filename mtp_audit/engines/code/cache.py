"""Content-addressed cache of per-file scan results in the user cache folder.

Folder: ``$MTP_AUDIT_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/mtp-audit``, else
``~/.cache/mtp-audit``; entries live under ``<engine>-scan-v<version>/`` keyed by the SHA-1 of
the file's bytes, so an edited file is re-scanned and an unchanged one across versions is not.
Setting ``MTP_AUDIT_CACHE_DIR`` to an empty string disables the cache. Cache failures are ignored
(the scan just runs again).

Every entry is validated on read (:func:`load`), and anything that fails is a miss, never an error: it is
opened once without following a symlink and without blocking (a FIFO, a device such as ``/dev/zero`` or a
symlink out of the cache is refused), bounded (:data:`MAX_ENTRY_BYTES`), and must be the envelope
:func:`store` writes: one line ``{"entry": ENTRY_FORMAT, "key": <its own key>, "sha256": <hash of the value's
bytes>}``, then the value, a JSON object, as compact canonical JSON (sorted keys, ASCII); so a truncated or
bit-flipped entry, one copied under another key, or valid JSON of another shape (``{}``) is scanned again. The hash
is checked on the stored bytes before they are decoded, so a read never serialises the value again (a whole-tree
entry of 0.66 MB took 9 ms to re-encode) and a write serialises it once. Whole-tree entries (keys ``tree-...``, ``whl-...``) must also
have the shape their readers use (``facts`` a mapping with a ``scan`` mapping, ``gaps`` a list of
:class:`~mtp_audit.report.Gap` fields).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

#: Largest cache entry read back (bytes); a whole-tree entry of sglang 0.5.23 is ~1 MB.
MAX_ENTRY_BYTES = 64 * 1024 * 1024

#: Envelope version of an entry (see the module docstring).
ENTRY_FORMAT = 3


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


def _canonical(value: Any) -> bytes:
    """``value`` as the bytes an entry stores: compact strict JSON, sorted keys, ASCII (the C encoder).

    Raises:
        ValueError: a NaN or infinite float (strict JSON has none; :func:`store` then keeps no entry, so the value is
            scanned again rather than read back changed)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("ascii")


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
        head, sep, body = raw.partition(b"\n")
        doc = json.loads(head.decode("utf-8"))
        if not (sep and isinstance(doc, dict) and doc.get("entry") == ENTRY_FORMAT and doc.get("key") == key
                and doc.get("sha256") == hashlib.sha256(body).hexdigest()):
            return None
        value = json.loads(body.decode("ascii"))
    except (InputError, OSError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
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
    import tempfile  # only a write needs it (with shutil, random, bz2 and lzma: ~5 ms of a 0.15 s warm run)

    sub = folder / key[:2]
    try:
        sub.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=sub)
    except OSError:
        return
    try:
        body = _canonical(value)
        head = json.dumps({"entry": ENTRY_FORMAT, "key": key, "sha256": hashlib.sha256(body).hexdigest()})
        with os.fdopen(fd, "wb") as fh:
            fh.write(head.encode("ascii") + b"\n" + body)
        os.replace(tmp, sub / f"{key}.json")
    except BaseException as exc:  # a signal or a failed write: never leave the temporary file
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if not isinstance(exc, (OSError, ValueError, TypeError)):
            raise
