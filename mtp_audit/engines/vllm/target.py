"""Locate and read the few vLLM source files the rules need, without importing or executing any of it.

Accepted targets (same rules as ``mtp-audit sglang``):

- a git checkout (a folder holding ``vllm/`` next to ``setup.py`` / ``pyproject.toml``);
- a package folder (``.../site-packages/vllm``) or an unpacked wheel (a folder holding ``vllm/``);
- a ``.whl`` file, read from the zip in memory (nothing is extracted to disk);
- ``None``: the installed vllm, located with :func:`importlib.util.find_spec` (which, for a
  top-level package, finds the folder without running its ``__init__``).

Unlike the SGLang tree, the vLLM tree (~3,000 ``.py`` files in 0.33.0) is never listed as a whole
for a folder: only the paths in :data:`WANTED` are looked up. A wheel's zip directory is read once
(member count bounded by :data:`MAX_MEMBERS`). Paths are always reported as ``vllm/...``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import stat
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from mtp_audit.engines.vllm._shared import ZIP_ERRORS, InputError, read_bytes_bounded
from mtp_audit.sources.tree import content_stamp, open_wheel, source_encoding_problem

#: Largest source file read (bytes). The largest file read, ``v1/worker/gpu_model_runner.py`` of
#: 0.33.0, is ~330 KB.
MAX_SOURCE_BYTES = 8 * 1024 * 1024
#: Largest total of bytes read from one target (all :data:`WANTED` files together).
MAX_TOTAL_BYTES = 64 * 1024 * 1024
#: Largest .whl accepted (bytes); vLLM 0.11.0's wheel is 438 MB.
MAX_WHEEL_BYTES = 2 * 1024 * 1024 * 1024
#: Most zip members accepted in a wheel (0.33.0 has 5,802).
MAX_MEMBERS = 200_000
#: Wall-clock budget for reading one target (seconds); past it the remaining files become gaps.
READ_BUDGET_S = 60.0

#: Logical name -> candidate paths under ``vllm/`` (first existing wins). Sources:
#: ``SpeculativeConfig`` lives in ``vllm/config.py`` (0.7-0.10.0), ``vllm/config/__init__.py``
#: (0.10.1-0.10.2), ``vllm/config/speculative.py`` (0.11.0 on).
WANTED: dict[str, tuple[str, ...]] = {
    "spec": ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py"),
    "registry": ("vllm/model_executor/models/registry.py",),
    "runner_v1": ("vllm/v1/worker/gpu_model_runner.py",),
    "runner_v2": ("vllm/v1/worker/gpu/spec_decode/__init__.py",),
    "envs": ("vllm/envs.py",),
    "arg_utils": ("vllm/engine/arg_utils.py",),
    "tu_config": ("vllm/transformers_utils/config.py",),
    "config_utils": ("vllm/config/utils.py",),
    "vllm_config": ("vllm/config/vllm.py",),
    "v0_worker": ("vllm/spec_decode/spec_decode_worker.py",),
    "platform": ("vllm/platforms/interface.py",),
}
#: files (not scanned by the analyzer) that the launch's statement-order replay starts from
#: (mtp_audit.engines.vllm.launch.spec_config_replay / .quant); the modules they import are read on demand
#: (:meth:`VllmTree.add_file`)
REPLAY_FILES = ("vllm/transformers_utils/configs/eagle.py", "vllm/config/model.py",
                "vllm/transformers_utils/model_arch_config_convertor.py",
                "vllm/model_executor/layers/quantization/__init__.py")

_METADATA_VERSION_RE = re.compile(rb"^Version:\s*(\S+)\s*$", re.M)
_VERSION_RE = re.compile(rb"""^\s*(?:__version__|version)\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", re.M)
_SPEC_CLASS = re.compile(rb"^class SpeculativeConfig\b", re.M)


@dataclass
class VllmTree:
    """A readable vLLM tree.

    Attributes:
        display: what the user named (folder, wheel file name, or ``"installed vllm (<path>)"``).
        kind: ``"checkout"``, ``"package"``, ``"wheel"`` or ``"installed"``.
        files: reported path (``"vllm/envs.py"``) -> opaque handle (a ``ZipInfo`` or a ``Path``) for
            each :data:`WANTED` file that exists.
        roles: logical name (``"spec"``, ``"registry"``, ...) -> reported path, for the files found.
        version: vLLM version (wheel/dist-info ``METADATA``, ``vllm/_version.py``), ``None`` if none.
        notes: ``(path, message)`` for files not examined (oversize, symlink leaving the tree, budget).
    """

    display: str
    kind: str
    files: dict[str, object] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    version: str | None = None
    #: the ``Requires-Dist`` values of the release's ``METADATA`` (``"torch==2.14.0"``); ``None``: no METADATA read
    requires: list[str] | None = None
    notes: list[tuple[str, str]] = field(default_factory=list)
    bytes_read: int = 0
    digest: str = ""
    _zip: zipfile.ZipFile | None = None
    _fh: object = None
    _started: float = field(default_factory=time.monotonic)
    #: a folder tree's ``vllm`` package directory (``None`` for a wheel)
    _pkg: Path | None = None
    #: a wheel's ``.py`` members that are not symlinks, by name (``None`` for a folder tree)
    _members: dict[str, zipfile.ZipInfo] | None = None
    #: a wheel's ``.so`` member names (``None`` for a folder tree)
    _compiled: list[str] | None = None

    def read(self, rel: str) -> bytes | None:
        """Bytes of ``rel`` (bounded by :data:`MAX_SOURCE_BYTES`, :data:`MAX_TOTAL_BYTES` and
        :data:`READ_BUDGET_S`), or ``None`` with a note when it cannot be read."""
        handle = self.files.get(rel)
        if handle is None:
            return None
        if time.monotonic() - self._started > READ_BUDGET_S:
            self.notes.append((rel, f"read budget of {READ_BUDGET_S:.0f} s spent; not examined"))
            return None
        try:
            if isinstance(handle, zipfile.ZipInfo):
                assert self._zip is not None
                size = handle.file_size
                if size > MAX_SOURCE_BYTES:
                    self.notes.append((rel, f"{size} bytes, over the {MAX_SOURCE_BYTES}-byte limit; not examined"))
                    return None
                if self.bytes_read + size > MAX_TOTAL_BYTES:
                    self.notes.append((rel, f"total read limit of {MAX_TOTAL_BYTES} bytes reached; not examined"))
                    return None
                with self._zip.open(handle) as fh:
                    data = fh.read(MAX_SOURCE_BYTES + 1)
                if len(data) > MAX_SOURCE_BYTES:
                    self.notes.append((rel, "member larger than its directory entry says; not examined"))
                    return None
            else:
                assert isinstance(handle, Path)
                data = read_bytes_bounded(handle, MAX_SOURCE_BYTES, display=rel)
                if self.bytes_read + len(data) > MAX_TOTAL_BYTES:
                    self.notes.append((rel, f"total read limit of {MAX_TOTAL_BYTES} bytes reached; not examined"))
                    return None
        except InputError as exc:
            self.notes.append((rel, f"{exc.problem}; not examined"))
            return None
        except ZIP_ERRORS as exc:  # corrupt member, bad CRC, corrupt deflate stream (zlib.error), unknown method
            self.notes.append((rel, f"cannot read ({type(exc).__name__}: {exc}); not examined"))
            return None
        self.bytes_read += len(data)
        problem = source_encoding_problem(data)
        if problem is not None:
            self.notes.append((rel, problem))
            return None
        return data

    def stamp(self, rel: str) -> str:
        """Content stamp of one file: ``size:CRC`` for wheel members (the wheel's own SHA-256 is not part of
        it), ``size:sha1`` of the bytes for files (:func:`mtp_audit.sources.tree.content_stamp`)."""
        handle = self.files[rel]
        if isinstance(handle, zipfile.ZipInfo):
            return f"{handle.file_size}:{handle.CRC}"
        return content_stamp(handle)  # type: ignore[arg-type]

    def add_file(self, rel: str) -> bool:
        """Make ``rel`` (a ``vllm/...`` path of a ``.py`` file) readable, for the launch replay that follows imports;
        ``False`` when the tree has no such regular file (symlinks and paths leaving the tree are refused)."""
        if rel in self.files:
            return True
        if not rel.startswith("vllm/") or not rel.endswith(".py") or ".." in rel.split("/"):
            return False
        members = self._members
        if members is not None:
            if rel in members:
                self.files[rel] = members[rel]
                return True
            return False
        pkg = self._pkg
        if pkg is None:
            return False
        full = pkg / rel[len("vllm/"):]
        try:
            st = full.lstat()
            inside = pkg.resolve() in full.resolve(strict=True).parents
        except (OSError, RuntimeError):
            return False
        if not stat.S_ISREG(st.st_mode) or not inside:
            return False
        self.files[rel] = full
        return True

    def has_compiled(self, stem: str) -> bool:
        """Whether the tree ships a compiled extension module ``stem`` (``vllm/vllm_flash_attn/_vllm_fa3_C`` ->
        ``..._vllm_fa3_C.abi3.so`` or ``....cpython-312-x86_64-linux-gnu.so``); a source checkout has none."""
        if not stem.startswith("vllm/") or ".." in stem.split("/"):
            return False
        compiled = self._compiled
        if compiled is not None:
            return any(c.startswith(stem + ".") for c in compiled)
        pkg = self._pkg
        if pkg is None:
            return False
        folder, _, name = (pkg / stem[len("vllm/"):]).as_posix().rpartition("/")
        try:
            return any(p.name.startswith(name + ".") and p.name.endswith(".so") and p.is_file() for p in Path(folder).iterdir())
        except OSError:
            return False

    def fingerprint(self) -> str:
        """SHA-1 over the found files' paths and stamps: the whole-audit cache key."""
        h = hashlib.sha1(f"{self.kind}\0{self.version}\0{self.digest}\0".encode())
        for role in sorted(self.roles):
            rel = self.roles[role]
            h.update(f"{role}\0{rel}\0{self.stamp(rel)}\n".encode())
        for rel, note in self.notes:
            h.update(f"note {rel} {note}\n".encode())
        return h.hexdigest()

    def close(self) -> None:
        """Release the zip handle, if any."""
        if self._zip is not None:
            self._zip.close()
            self._zip = None
        if self._fh is not None:
            self._fh.close()  # type: ignore[attr-defined]
            self._fh = None


def open_target(target: str | Path | None) -> VllmTree:
    """Open ``target`` (see the module docstring) and find the :data:`WANTED` files.

    Raises:
        InputError: missing path, not a vLLM tree (no ``vllm/`` package holding a
            ``SpeculativeConfig`` source or ``envs.py``), a corrupt/oversize wheel, or (``None``) vllm
            not installed.
    """
    if target is None:
        try:
            spec = importlib.util.find_spec("vllm")
        except (ImportError, ValueError) as exc:
            raise InputError("vllm", f"cannot locate the installed package: {exc}") from None
        if spec is None or not spec.submodule_search_locations:
            raise InputError("vllm", "not installed in this Python; pass a checkout, package folder or .whl")
        pkg = Path(list(spec.submodule_search_locations)[0])
        return _folder(pkg, f"installed vllm ({pkg})", "installed")
    p = Path(target)
    shown = str(target)
    if not os.path.lexists(p):
        raise InputError(shown, "no such file or folder")
    if p.is_file():
        if p.suffix != ".whl" and not zipfile.is_zipfile(p):
            raise InputError(shown, "not a vLLM tree: expected a folder or a .whl file")
        return _wheel(p, shown)
    if not p.is_dir():
        raise InputError(shown, "not a regular file or folder")
    if (p / "vllm").is_dir() and _looks_like_pkg(p / "vllm"):
        kind = "checkout" if (p / "setup.py").is_file() or (p / "pyproject.toml").is_file() else "package"
        return _folder(p / "vllm", shown, kind)
    if p.name == "vllm" and _looks_like_pkg(p):
        return _folder(p, shown, "package")
    raise InputError(shown, "not a vLLM tree: no vllm/ package folder (with envs.py or config/) found")


def _looks_like_pkg(pkg: Path) -> bool:
    return (pkg / "envs.py").is_file() or (pkg / "config").is_dir() or (pkg / "config.py").is_file()


def _folder(pkg: Path, shown: str, kind: str) -> VllmTree:
    tree = VllmTree(display=shown, kind=kind)
    tree._pkg = pkg
    real_pkg = pkg.resolve()
    for role, cands in WANTED.items():
        for rel in cands:
            full = pkg / rel[len("vllm/"):]
            try:
                st = full.lstat()
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                try:
                    real = full.resolve(strict=True)
                except (OSError, RuntimeError):
                    tree.notes.append((rel, "broken symlink; not followed"))
                    continue
                if real != real_pkg and real_pkg not in real.parents:
                    tree.notes.append((rel, "symlink leaves the tree; not followed"))
                    continue
            elif not stat.S_ISREG(st.st_mode):
                continue
            tree.files[rel] = full
            if role == "spec" and not _holds_spec(tree, rel):
                del tree.files[rel]
                continue
            tree.roles[role] = rel
            break
    for rel in REPLAY_FILES:
        f = pkg / rel[len("vllm/"):]
        if f.is_file() and not f.is_symlink():
            tree.files[rel] = f
    tree.version = _folder_version(pkg)
    tree.requires = _folder_requires(pkg)
    _require(tree, shown)
    return tree


_REQUIRES_RE = re.compile(rb"^Requires-Dist:\s*(.+?)\s*$", re.M)


def requires_dist(metadata: bytes) -> list[str]:
    """The ``Requires-Dist`` values of a ``METADATA`` file (``"torch==2.14.0"``, markers kept)."""
    return [m.group(1).decode("utf-8", "replace") for m in _REQUIRES_RE.finditer(metadata)]


def _folder_requires(pkg: Path) -> list[str] | None:
    """``Requires-Dist`` of the ``vllm-*.dist-info/METADATA`` beside a package folder (``None``: none there)."""
    for meta in sorted(pkg.parent.glob("vllm-*.dist-info/METADATA")):
        try:
            return requires_dist(read_bytes_bounded(meta, 1 << 20))
        except InputError:
            continue
    return None


def _holds_spec(tree: VllmTree, rel: str) -> bool:
    """``vllm/config/__init__.py`` of 0.11+ only re-exports; keep the candidate that defines the class."""
    data = tree.read(rel)
    tree.bytes_read = 0  # the probe is re-read (and counted) by the scan
    return bool(data and _SPEC_CLASS.search(data))


def _require(tree: VllmTree, shown: str) -> None:
    if "spec" not in tree.roles and "envs" not in tree.roles:
        tree.close()
        raise InputError(shown, "not a vLLM tree: no vllm/envs.py and no SpeculativeConfig source "
                                "(vllm/config/speculative.py, vllm/config/__init__.py or vllm/config.py)")


def _folder_version(pkg: Path) -> str | None:
    for name in ("_version.py", "version.py"):
        f = pkg / name
        if f.is_file():
            try:
                m = _VERSION_RE.search(read_bytes_bounded(f, 65536))
            except InputError:
                m = None
            if m:
                return m.group(1).decode("ascii", "replace")
    for meta in sorted(pkg.parent.glob("vllm-*.dist-info/METADATA")):
        try:
            m = _METADATA_VERSION_RE.search(read_bytes_bounded(meta, 1 << 20))
        except InputError:
            m = None
        if m:
            return m.group(1).decode("ascii", "replace")
    return None


def _wheel(path: Path, shown: str) -> VllmTree:
    zf, digest = open_wheel(path, shown, MAX_WHEEL_BYTES)  # one descriptor; its SHA-256 keys the cache
    infos = zf.infolist()
    tree = VllmTree(display=path.name, kind="wheel", _zip=zf, digest=digest, _fh=zf.fp)
    if len(infos) > MAX_MEMBERS:
        tree.close()
        raise InputError(shown, f"wheel has {len(infos)} members, over the {MAX_MEMBERS}-member limit")
    tree._members = {i.filename: i for i in infos if i.filename.endswith(".py") and not i.is_dir()
                     and (i.external_attr >> 16) & 0o170000 != 0o120000}
    tree._compiled = [i.filename for i in infos if i.filename.endswith(".so") and not i.is_dir()]
    by_name = {i.filename: i for i in infos}
    for role, cands in WANTED.items():
        for rel in cands:
            info = by_name.get(rel)
            if info is None or info.is_dir():
                continue
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                tree.notes.append((rel, "symlink entry in the wheel; not followed"))
                continue
            tree.files[rel] = info
            if role == "spec" and not _holds_spec(tree, rel):
                del tree.files[rel]
                continue
            tree.roles[role] = rel
            break
    for info in infos:
        if info.filename in REPLAY_FILES and info.filename.endswith(".py") and not info.is_dir() and (info.external_attr >> 16) & 0o170000 != 0o120000:
            tree.files[info.filename] = info
    for info in infos:
        if info.filename.endswith(".dist-info/METADATA") and info.filename.startswith("vllm-") and info.file_size < (1 << 20):
            try:
                meta = zf.read(info)
            except ZIP_ERRORS:
                meta = b""
            m = _METADATA_VERSION_RE.search(meta)
            if m:
                tree.version = m.group(1).decode("ascii", "replace")
                tree.requires = requires_dist(meta)
                break
    _require(tree, shown)
    return tree
