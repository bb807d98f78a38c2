"""``LocalSource._path``: the one-``lstat`` answer for a plain file at the root equals ``Path.resolve``'s, and every
other name (a symlink in or out of the folder, a missing file, a subfolder, a root reached through a symlink) takes
the resolving path and is refused or followed as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mtp_audit.sources.local import LocalSource, ReadProblem


def _slow(src: LocalSource, rel: str) -> object:
    """What ``_path`` answered before the shortcut: resolve, then the containment test."""
    target = (src.root / rel).resolve()
    return target if src._fence in target.parents else "escapes"


def _fast(src: LocalSource, rel: str) -> object:
    try:
        return src._path(rel)
    except ReadProblem as exc:
        return exc.kind


@pytest.mark.parametrize("through_link", [False, True])
def test_path_shortcut_equals_resolve(tmp_path: Path, through_link: bool) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "a.safetensors").write_bytes(b"x")
    (real / "sub" / "b.safetensors").write_bytes(b"x")
    (tmp_path / "outside.safetensors").write_bytes(b"x")
    os.symlink(real / "a.safetensors", real / "inside-link.safetensors")
    os.symlink(tmp_path / "outside.safetensors", real / "outside-link.safetensors")
    root = real
    if through_link:
        root = tmp_path / "link-to-real"
        os.symlink(real, root)
    src = LocalSource(root)
    for rel in ("a.safetensors", "missing.safetensors", "sub", "sub/b.safetensors", "inside-link.safetensors",
                "outside-link.safetensors"):
        assert _fast(src, rel) == _slow(src, rel), rel
    assert _fast(src, "a.safetensors") == real.resolve() / "a.safetensors"
    assert _fast(src, "inside-link.safetensors") == real.resolve() / "a.safetensors"  # followed inside the folder
    assert _fast(src, "outside-link.safetensors") == "escapes"
