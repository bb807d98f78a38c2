"""The package-folder walk (``mtp_audit.sources.tree._walk``, one ``os.scandir`` per folder) lists the same files in the
same order, with the same notes, as the ``os.walk`` code it replaced (kept here as the specification)."""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mtp_audit.sources import tree as tree_mod
from mtp_audit.sources.bounded import resolve_inside
from tests.conftest import sglang_wheel


def _walk_by_os_walk(pkg: Path, prefix: str, tree: tree_mod.SourceTree) -> Iterator[tuple[str, Path]]:
    """The former walk, verbatim."""
    real_pkg = pkg.resolve()
    for dirpath, dirnames, filenames in os.walk(pkg, followlinks=False):
        rel_dir = os.path.relpath(dirpath, pkg)
        keep = []
        for d in sorted(dirnames):
            full = Path(dirpath, d)
            if d in tree_mod.SKIP_DIRS or d.startswith("."):
                continue
            if full.is_symlink():
                rel = _join(prefix, rel_dir, d)
                if resolve_inside(real_pkg, os.path.relpath(full, pkg)) is None:
                    tree.notes.append((rel, "symlinked folder leaves the tree; not followed"))
                else:
                    tree.notes.append((rel, "symlinked folder; not followed (its target is scanned in place)"))
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            if not f.endswith(".py"):
                continue
            full = Path(dirpath, f)
            rel = _join(prefix, rel_dir, f)
            try:
                st = full.lstat()
            except OSError as exc:
                tree.notes.append((rel, f"cannot stat ({exc.strerror}); not examined"))
                continue
            if stat.S_ISLNK(st.st_mode):
                if resolve_inside(real_pkg, os.path.relpath(full, pkg)) is None:
                    tree.notes.append((rel, "symlink leaves the tree; not followed"))
                    continue
            yield rel, full


def _join(prefix: str, rel_dir: str, name: str) -> str:
    parts = [prefix] + ([] if rel_dir in (".", "") else rel_dir.split(os.sep)) + [name]
    return "/".join(parts)


def _both(pkg: Path) -> tuple[list[tuple[str, Path]], list[tuple[str, str]]]:
    new, old = tree_mod.SourceTree("x", "package"), tree_mod.SourceTree("x", "package")
    got = list(tree_mod._walk(pkg, "sglang", new))
    want = list(_walk_by_os_walk(pkg, "sglang", old))
    assert got == want and list(new.notes) == list(old.notes)
    return got, list(new.notes)


def test_a_real_tree(tmp_path: Path) -> None:
    """SGLang 0.5.23 unpacked: 3,983 files in the same order (the wheel lists 3,985: a folder walk skips hidden
    folders, here `multimodal_gen/.agents/`)."""
    with zipfile.ZipFile(sglang_wheel("0.5.23")) as zf:
        zf.extractall(tmp_path, [n for n in zf.namelist() if n.startswith("sglang/")])
    got, notes = _both(tmp_path / "sglang")
    assert len(got) == 3983 and notes == []


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symlinks")
def test_symlinks_skipped_and_hidden_folders(tmp_path: Path) -> None:
    pkg = tmp_path / "sglang"
    for rel in ("srt/server_args.py", "srt/a/b.py", "srt/a/c.txt", "srt/tests/t.py", "srt/.hidden/h.py",
                "srt/__pycache__/x.py", "srt/z/zz/deep.py", "A.py", "b.py"):
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text("x = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.py").write_text("o = 1\n")
    os.symlink(outside, pkg / "srt" / "out_dir")
    os.symlink(pkg / "srt" / "a", pkg / "srt" / "in_dir")
    os.symlink(outside / "o.py", pkg / "srt" / "out.py")
    os.symlink(pkg / "srt" / "a" / "b.py", pkg / "srt" / "in.py")
    os.symlink(tmp_path / "missing.py", pkg / "srt" / "broken.py")
    os.symlink(tmp_path / "missing", pkg / "srt" / "broken_dir")
    got, notes = _both(pkg)
    assert [rel for rel, _ in got] == ["sglang/A.py", "sglang/b.py", "sglang/srt/in.py", "sglang/srt/server_args.py",
                                       "sglang/srt/a/b.py", "sglang/srt/z/zz/deep.py"]
    assert notes == [("sglang/srt/in_dir", "symlinked folder; not followed (its target is scanned in place)"),
                     ("sglang/srt/out_dir", "symlinked folder leaves the tree; not followed"),
                     ("sglang/srt/broken.py", "symlink leaves the tree; not followed"),
                     ("sglang/srt/out.py", "symlink leaves the tree; not followed")]
