"""The checkpoint analyzer: does a checkpoint carry its MTP / NextN heads, complete, and stored the
way its quantization config says?

Public API: :func:`audit_checkpoint`. The analyzer reads metadata only (``config.json``, quantization
configs, the index, safetensors headers) through a
:class:`~mtp_audit.sources.local.CheckpointSource`; tensor data is never read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtp_audit.errors import InputError

if TYPE_CHECKING:
    from mtp_audit.report import Report
    from mtp_audit.sources.local import CheckpointSource

__all__ = ["audit_checkpoint"]

#: ``org/name`` or ``org/name@revision`` (Hugging Face repo id syntax); compiled on first use (``re``'s own cache): only
#: a target that is not a local path is matched against it.
_REPO_ID = r"^[A-Za-z0-9][\w.-]*/[\w.-]+(?:@[\w./-]+)?$"

#: Files worth reading next to a single index file (metadata only, no shard headers).
_SIDE_FILES = ("config.json", "hf_quant_config.json")


def audit_checkpoint(target: str | os.PathLike[str] | CheckpointSource, *, offline: bool = False, jobs: int | None = None,
                     token: str | None = None, revision: str | None = None, hf_cache_dir: str | os.PathLike[str] | None = None,
                     cache_dir: str | os.PathLike[str] | None = None, use_cache: bool = True) -> Report:
    """Audit a checkpoint's MTP heads and return the :class:`~mtp_audit.report.Report` the CLI renders.

    Args:
        target: one of
            - a checkpoint folder (config + index + shards; shards the index does not name are read too);
            - a metadata-only folder (``config.json`` + ``model.safetensors.index.json``, no shards);
            - a config-only folder (``config.json`` and quantization configs);
            - a single ``.safetensors`` file (its header only);
            - a ``.gguf`` file (with the other parts of its split set) or a folder of GGUF files
              (see :mod:`mtp_audit.checkpoint.gguf_audit`);
            - an index file (``*.safetensors.index.json``; the ``config.json`` and ``hf_quant_config.json``
              beside it are read, shards are not);
            - a :class:`~mtp_audit.sources.local.CheckpointSource` (e.g. the hub source);
            - a string ``org/name[@revision]`` that is not an existing path: handed to
              ``mtp_audit.sources.hub.audit_source_for`` when that module is installed.
        offline: hub ids: never touch the network (the Hugging Face cache and the mtp-audit cache only).
        jobs: hub ids: shard headers read concurrently (1-64; default 8).
        token: hub ids: the hub token (default: ``HF_TOKEN`` or the stored token, as huggingface_hub does).
        revision: hub ids: branch, tag or commit (the same as ``org/name@revision``).
        hf_cache_dir: hub ids: the Hugging Face cache folder (default ``HF_HUB_CACHE``).
        cache_dir: hub ids: the mtp-audit cache root (default ``$MTP_AUDIT_CACHE_DIR`` or ``~/.cache/mtp-audit``).
        use_cache: hub ids: ``False`` neither reads nor writes the mtp-audit cache.
        The hub options are ignored for a local path; any other keyword is a ``TypeError``.

    Returns:
        The report; status ``inconclusive`` (exit 3) when MTP is declared but tensors could not be
        inspected (config-only folder), ``findings`` when a rule fired, else ``pass``.

    Raises:
        InputError: the path is empty, does not exist, is a symlink loop, is not a checkpoint, or its
            ``config.json`` / index is invalid JSON, lacks ``architectures`` or has a ``weight_map``
            of the wrong type; a single ``.safetensors`` file with a malformed header.
    """
    from mtp_audit.checkpoint.analyze import analyze
    from mtp_audit.sources.local import CheckpointSource, LocalSource

    if isinstance(target, CheckpointSource):
        return analyze(target)
    text = os.fspath(target)
    if not text:  # Path("") is ".": an empty name would audit the current folder
        raise InputError(repr(text), "empty path: name a checkpoint folder, a file or a hub repo id")
    path = Path(text)
    if not os.path.lexists(path):
        return _audit_missing_path(target, text, {"offline": offline, "jobs": jobs, "token": token, "revision": revision,
                                                  "hf_cache_dir": hf_cache_dir, "cache_dir": cache_dir,
                                                  "use_cache": use_cache})
    try:
        path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise InputError(text, "symlink loop or unreadable path") from None
    if _is_gguf(path):
        from mtp_audit.checkpoint.gguf_audit import audit_gguf_path

        return audit_gguf_path(path, text)
    if path.is_dir():
        _check_special_files(path, text)
        return analyze(LocalSource(path, display=text))
    if not path.is_file():
        raise InputError(text, "not a regular file or folder")
    name = path.name
    parent = path.parent
    if name.endswith(".safetensors.index.json"):
        only = [name] + [f for f in _SIDE_FILES if (parent / f).is_file()]
        return analyze(LocalSource(parent, only=only, display=text), mode_hint="index-file")
    if name.endswith(".safetensors"):
        # The shard with its folder's config.json and quantization config (never the index: it names other shards).
        only = [name] + [f for f in _SIDE_FILES if (parent / f).is_file()]
        return analyze(LocalSource(parent, only=only, display=text), mode_hint="single-file")
    if name == "config.json":
        # The config's own folder, without its shards: config + quantization config + the index.
        side = (*_SIDE_FILES[1:], "model.safetensors.index.json")
        only = [name] + [f for f in side if (parent / f).is_file()]
        return analyze(LocalSource(parent, only=only, display=text))
    raise InputError(text, "expected a checkpoint folder, a .safetensors file, a .gguf file, an index file or config.json")


def _audit_missing_path(target: Any, text: str, hub_kwargs: dict[str, Any]) -> Report:
    """A target that is not a local path: a hub repo id ``ORG/NAME`` (when the hub source is installed), unless its
    first component is a folder here (a mistyped local path).

    Raises:
        InputError: no such file or folder.
    """
    if isinstance(target, str) and re.match(_REPO_ID, text) and _local_first_component(text):
        raise InputError(text, f"no such file or folder ('{text.split('/', 1)[0]}' is a folder here, so this is read "
                               "as a local path, not a hub repo id; run from another folder to audit the hub repo)")
    if isinstance(target, str) and re.match(_REPO_ID, text):
        import importlib.util

        if importlib.util.find_spec("mtp_audit.sources.hub") is not None:
            return _audit_hub(text, hub_kwargs)
    raise InputError(text, "no such file or folder")


def _local_first_component(text: str) -> bool:
    """Whether the first component of ``ORG/NAME`` is a folder here: the path is then a mistyped local path
    (``fixtures/nonexist``), not a hub repo id."""
    return os.path.isdir(text.split("/", 1)[0])


def _audit_hub(text: str, hub_kwargs: dict[str, Any]) -> Report:
    """A hub repo id: its safetensors checkpoint, or its GGUF files when the repo holds GGUF only
    (:func:`mtp_audit.checkpoint.gguf_audit.audit_gguf_source`).

    Raises:
        InputError: see :func:`mtp_audit.sources.hub.audit_source_for`; a malformed GGUF header.
    """
    from mtp_audit.checkpoint.analyze import analyze
    from mtp_audit.checkpoint.gguf_audit import audit_gguf_source, is_gguf_listing
    from mtp_audit.sources import hub

    try:
        source = hub.audit_source_for(text, **hub_kwargs)
    except hub.HubUnavailable as exc:  # unreachable, 5xx, or offline with nothing cached: exit 3
        from mtp_audit.report import Gap, Report

        return Report.build("checkpoint", text, gaps=[Gap("checkpoint", exc.problem)])
    if is_gguf_listing(source.list_files()):
        return audit_gguf_source(source)
    return analyze(source)


def _check_special_files(path: Path, text: str) -> None:
    """``config.json``, the index and ``hf_quant_config.json`` must be regular files when present.

    Raises:
        InputError: one of them is a folder, FIFO or device.
    """
    for special in ("config.json", "model.safetensors.index.json", "hf_quant_config.json"):
        sp = path / special
        if os.path.lexists(sp) and sp.exists() and not sp.is_file():
            kind = "a directory" if sp.is_dir() else "not a regular file"
            raise InputError(os.path.join(text, special), f"is {kind}, expected a JSON file")


def _is_gguf(path: Path) -> bool:
    """A ``.gguf`` file, or a folder of GGUF files without a safetensors checkpoint."""
    if path.is_file():
        return path.name.endswith(".gguf")
    if path.is_dir():
        try:  # a cheap look first: the GGUF reader and llama.cpp's tables are imported only for a folder that has .gguf files
            if not any(n.endswith(".gguf") for n in os.listdir(path)):
                return False
        except OSError:
            return False
        from mtp_audit.checkpoint.gguf_audit import is_gguf_folder

        return is_gguf_folder(path)
    return False
