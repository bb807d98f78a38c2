"""What a command must never overwrite: every input it read (:func:`input_paths`) and the checks that refuse an
output plan that would destroy an input or collide (:func:`check_outputs`)."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mtp_audit.cli.invocation import current
from mtp_audit.cli.outputs import STDOUT, is_stdout, std_stream_of
from mtp_audit.errors import InputError

#: Most entries walked in one protected folder when looking for a hard link to an output file.
MAX_PROTECTED_WALK = 200_000


def input_paths(report: Any, *, extra: Iterable[str | os.PathLike[str]] = ()) -> list[str]:
    """Every existing local path the running command reads: ``extra`` (what the command module knows
    it reads), every target of ``report``, and each parameter value of the running click command
    (``--env-dump``, ``--sglang``, ``--facts``, ``--baseline``, the tokens of a launch command and the
    ``VALUE`` of its ``--option=VALUE`` tokens), except the output options themselves. A checkpoint
    target that is a file (an index, a shard, a ``config.json``) stands for its folder: the audit reads
    its siblings. Names are returned as given (relative names stay relative)."""
    names: list[str] = [os.fspath(x) for x in extra]
    ctx = current()
    if ctx is not None:
        for key, value in ctx.params.items():
            if key in OUTPUT_PARAMS:
                continue
            values = value if isinstance(value, (list, tuple)) else (value,)
            for v in values:
                if not isinstance(v, (str, os.PathLike)):
                    continue
                text = os.fspath(v)
                names.append(text)
                if text.startswith("-") and "=" in text:
                    names.append(text.partition("=")[2])
                if key in ("target", "base", "derived") and _is_file(text):
                    names.append(os.path.dirname(text) or ".")
    for t in report.targets:  # after the names the user typed, so messages name the input as typed
        names.append(t.name)
        if t.analyzer in ("checkpoint", "compare") and _is_file(t.name):
            names.append(os.path.dirname(t.name) or ".")
    out: list[str] = []
    for name in names:
        try:
            if name and name != STDOUT and os.path.lexists(name) and name not in out:
                out.append(name)
        except (OSError, ValueError, TypeError):
            continue
    return out


def _is_file(name: str) -> bool:
    try:
        return os.path.isfile(name)
    except (OSError, ValueError, TypeError):
        return False


#: click parameter names of output options: never "inputs" themselves.
OUTPUT_PARAMS = frozenset({"output", "save_facts", "write_baseline"})


def check_outputs(protected: Iterable[str | os.PathLike[str]], outputs: Mapping[str, Path | str | None], *,
                  read: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Refuse, before anything is written, an output plan that would destroy an input or collide.

    Args:
        protected: files and folders the command read or audited. A file is protected itself; a
            folder protects every file already inside it (a new file beside them is allowed).
            Identity is checked by real path (symlinks resolved) and by ``(st_dev, st_ino)``, so a
            symlink or a hard link to a protected file is refused too.
        outputs: option name (``"--output"``, ``"--save-facts"``) -> the path it will write, ``"-"`` for
            standard output, or ``None`` (not given). Devices and FIFOs (``/dev/null``, a pipe) are
            written through and are never "protected" nor "colliding".
        read: every file and folder the run read on its own (:func:`mtp_audit.sources.bounded.files_read`:
            an installed package's files, ``torch/version.py``), protected like ``protected``; checked after
            it, so a refusal names the input as the user typed it when it can.

    Raises:
        InputError: ``<output>: is the audited input X ...`` / ``would overwrite a file of the audited
            input X ...``; two outputs naming the same file (or both ``-``); an output whose name
            cannot even be examined (too long, a loop of symlinks).
    """
    indexed: tuple[Any, ...] | None = None  # built for the first output that is not "-": nothing to check for stdout
    seen: dict[object, str] = {}
    for option, out in outputs.items():
        if out is None:
            continue
        what = "the facts" if option == "--save-facts" else "the report"
        keys: set[object]
        if is_stdout(out):
            keys = {"stdout"}
        else:
            if indexed is None:
                indexed = _indexes(protected, read)
            files, real_files, folders, read_index = indexed
            path = os.fspath(out)
            try:
                st_out: os.stat_result | None = os.stat(path)
            except FileNotFoundError:
                st_out = None
            except (OSError, ValueError) as exc:
                raise InputError(path, f"cannot write: {getattr(exc, 'strerror', None) or exc}") from None
            if st_out is not None and stat.S_ISDIR(st_out.st_mode):
                raise InputError(path, f"is a directory, cannot write {what} there")
            if st_out is not None and not stat.S_ISREG(st_out.st_mode):
                if std_stream_of(Path(path)) is not sys.stdout:
                    continue  # a device or FIFO other than our stdout: written through, nothing to lose
                keys = {"stdout"}
            else:
                real = os.path.realpath(path)
                hit = real_files.get(real)
                if hit is None and st_out is not None:
                    hit = files.get((st_out.st_dev, st_out.st_ino))
                if hit is not None:
                    raise InputError(path, f"is the audited input {hit}; refusing to write {what} there")
                if st_out is not None:
                    _refuse_inside(path, real, st_out, folders, what)
                    _refuse_read(path, real, st_out, read_index, what)
                else:
                    _refuse_new_checkpoint_file(path, real, folders, what)
                keys = {real} | ({(st_out.st_dev, st_out.st_ino)} if st_out is not None else set())
        clash = next((seen[k] for k in keys if k in seen), None)
        if clash is not None:
            if keys == {"stdout"}:
                raise InputError(option, f"{clash} and {option} both go to standard output; send one of them to a file")
            raise InputError(os.fspath(out), f"{clash} and {option} name the same file; give them different files")
        seen.update(dict.fromkeys(keys, option))


def _indexes(protected: Iterable[str | os.PathLike[str]], read: Iterable[str | os.PathLike[str]]) -> tuple[Any, ...]:
    """``(files, real files, folders, read index)`` of :func:`check_outputs`: :func:`_protected_index` of
    ``protected`` with standard input's file added, and of ``read``."""
    files, real_files, folders = _protected_index(protected)
    _protect_stdin(files)
    return files, real_files, folders, _protected_index(read)


def _protect_stdin(files: dict[tuple[int, int], str]) -> None:
    """The regular file behind this process's standard input (``< my.log``) is an input too: ``-o /dev/stdin`` (or any
    other name of it) must not replace it."""
    try:
        st = os.fstat(0)
    except (OSError, ValueError):
        return
    if stat.S_ISREG(st.st_mode):
        files.setdefault((st.st_dev, st.st_ino), "standard input")


def _protected_index(items: Iterable[str | os.PathLike[str]]) -> tuple[dict[tuple[int, int], str], dict[str, str], list[tuple[str, str]]]:
    """``(files by (st_dev, st_ino), files by real path, [(folder real path, name)])`` of the existing
    ``items``; the first name given for a file is kept."""
    files: dict[tuple[int, int], str] = {}
    real_files: dict[str, str] = {}
    folders: list[tuple[str, str]] = []
    real_dirs: dict[str, str] = {}
    for item in items:
        name = os.fspath(item)
        try:
            lst = os.lstat(name)  # not a symlink (4,000 files of an engine tree): this is os.stat's answer too
            st = os.stat(name) if stat.S_ISLNK(lst.st_mode) else lst
        except (OSError, ValueError):
            continue
        real = _realpath(name, real_dirs, lst)
        if stat.S_ISDIR(st.st_mode):
            folders.append((real, name))
        elif stat.S_ISREG(st.st_mode):
            files.setdefault((st.st_dev, st.st_ino), name)
            real_files.setdefault(real, name)
    return files, real_files, folders


def _realpath(name: str, real_dirs: dict[str, str], lst: os.stat_result | None = None) -> str:
    """``os.path.realpath(name)`` of an existing path, with the real path of its folder memoised in ``real_dirs``: a
    last component that is not a symlink resolves to itself, so the 4,000 files of an engine tree cost one
    ``lstat`` each (``lst``, when the caller has it: none) instead of one per path component."""
    head, tail = os.path.split(name)
    if not head or tail in ("", ".", ".."):
        return os.path.realpath(name)
    if lst is None:
        try:
            lst = os.lstat(name)
        except (OSError, ValueError):
            return os.path.realpath(name)
    if stat.S_ISLNK(lst.st_mode):
        return os.path.realpath(name)
    return os.path.join(_real_folder(head, real_dirs), tail)


def _real_folder(folder: str, real_dirs: dict[str, str]) -> str:
    """``os.path.realpath(folder)``, memoised in ``real_dirs`` and built from its parent's: a component that is not a
    symlink resolves to itself, so each folder of a tree costs one ``lstat`` instead of one per path component."""
    got = real_dirs.get(folder)
    if got is None:
        parent, base = os.path.split(folder)
        try:
            plain = bool(parent) and parent != folder and base not in ("", ".", "..") \
                and not stat.S_ISLNK(os.lstat(folder).st_mode)
        except (OSError, ValueError):
            plain = False
        got = real_dirs[folder] = os.path.join(_real_folder(parent, real_dirs), base) if plain else os.path.realpath(folder)
    return got


def _refuse_inside(path: str, real: str, st_out: os.stat_result, folders: list[tuple[str, str]], what: str) -> None:
    """Refuse an existing output file inside a protected folder (or a hard link to a file inside one). In a checkpoint
    folder (:func:`is_checkpoint_folder`) only the files the checkpoint audit reads are its input: an earlier report
    there (``CKPT/report.json`` written by the last run) may be replaced, so a re-run does not fail."""
    for folder_real, folder_name in folders:
        inside = _under(real, folder_real) and not (
            st_out.st_nlink == 1 and not is_checkpoint_file(real) and is_checkpoint_folder(folder_real))
        if inside or (st_out.st_nlink > 1 and _linked_inside(folder_real, st_out)):
            raise InputError(path, f"would overwrite a file of the audited input {folder_name}; "
                                   f"refusing to write {what} there")


def _refuse_new_checkpoint_file(path: str, real: str, folders: list[tuple[str, str]], what: str) -> None:
    """Refuse a new output file inside a checkpoint folder whose name the checkpoint audit would read
    (``-f json -o CKPT/model.safetensors`` made a shard that the next audit reported as MTP013)."""
    for folder_real, folder_name in folders:
        if _under(real, folder_real) and is_checkpoint_file(real) and is_checkpoint_folder(folder_real):
            raise InputError(path, f"would add a file that the audit of {folder_name} reads (a checkpoint's own kind of "
                                   f"file); refusing to write {what} there")


#: File names the checkpoint audit reads (mtp_audit.checkpoint.facts CONFIG, HF_QUANT, the index and shards;
#: params.json, whose presence MTP022 reads) and suffixes (shards, indexes, GGUF files and sidecars).
CHECKPOINT_NAMES = frozenset({"config.json", "hf_quant_config.json", "params.json"})
CHECKPOINT_SUFFIXES = (".safetensors", ".safetensors.index.json", ".gguf")

#: Most entries looked at in a folder's top level when deciding whether it is a checkpoint folder.
MAX_TOP_ENTRIES = 10_000


def is_checkpoint_file(path: str) -> bool:
    """Whether the checkpoint audit reads a file of this name (:data:`CHECKPOINT_NAMES`, :data:`CHECKPOINT_SUFFIXES`)."""
    name = os.path.basename(path)
    return name in CHECKPOINT_NAMES or name.endswith(CHECKPOINT_SUFFIXES)


def is_checkpoint_folder(folder: str) -> bool:
    """Whether ``folder`` holds, at its top level, a file the checkpoint audit reads (a model folder, or the folder of
    a ``.gguf`` / ``.safetensors`` target); the first :data:`MAX_TOP_ENTRIES` entries are looked at. An engine's
    source tree is not one, so every file in it stays protected."""
    try:
        with os.scandir(folder) as it:
            for i, entry in enumerate(it):
                if i >= MAX_TOP_ENTRIES:
                    return False
                if is_checkpoint_file(entry.name):
                    return True
    except OSError:
        return False
    return False


def _refuse_read(path: str, real: str, st_out: os.stat_result, index: tuple[dict[tuple[int, int], str], dict[str, str],
                 list[tuple[str, str]]], what: str) -> None:
    """Refuse an output over a file (or into a folder) the run read without being told to."""
    files, real_files, folders = index
    hit = real_files.get(real) or files.get((st_out.st_dev, st_out.st_ino))
    if hit is not None:
        raise InputError(path, f"is {hit}, a file this audit read; refusing to write {what} there")
    for folder_real, folder_name in folders:
        if _under(real, folder_real):
            raise InputError(path, f"would overwrite a file of {folder_name}, which this audit read; refusing to write {what} there")


def _under(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder and path != folder
    except ValueError:
        return False


def _linked_inside(folder: str, st_out: os.stat_result) -> bool:
    """Whether a file inside ``folder`` is a hard link to ``st_out`` (bounded walk, symlinks not followed)."""
    seen = 0
    for dirpath, _dirnames, filenames in os.walk(folder, followlinks=False):
        for f in filenames:
            seen += 1
            if seen > MAX_PROTECTED_WALK:
                return True  # cannot tell within the bound: refuse rather than risk an input
            try:
                st = os.lstat(os.path.join(dirpath, f))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (st_out.st_dev, st_out.st_ino):
                return True
    return False
