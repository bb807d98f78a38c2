"""``LocalSource._path``: the one-``lstat`` answer for a plain file at the root equals ``Path.resolve``'s, and every
other name (a symlink in or out of the folder, a missing file, a subfolder, a root reached through a symlink) takes
the resolving path and is refused or followed as before."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from mtp_audit.checkpoint.facts import gather
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


def _not_a_file_resolving(src: LocalSource, rel: str) -> object:
    """``not_a_file`` as it answered before the one-``lstat`` shortcut: ``os.stat`` of the resolved, contained path."""
    import stat as st_

    try:
        mode = os.stat(src._path(rel)).st_mode
    except (ReadProblem, OSError):
        return None
    if st_.S_ISREG(mode):
        return None
    return "directory" if st_.S_ISDIR(mode) else "not-a-file"


def _kind(prob: ReadProblem | None) -> object:
    return None if prob is None else prob.kind


def _odd_folder(real: Path, outside: Path) -> list[str]:
    """A folder holding every kind of entry ``not_a_file`` tells apart; the names to ask about."""
    (real / "dir.safetensors").mkdir(parents=True)
    (real / "a.safetensors").write_bytes(b"x")
    os.mkfifo(real / "fifo.safetensors")
    outside.mkdir()
    os.mkfifo(outside / "fifo")
    links = {"in-dir.safetensors": real / "dir.safetensors", "in-fifo.safetensors": real / "fifo.safetensors",
             "in-file.safetensors": real / "a.safetensors", "out-dir.safetensors": outside,
             "out-fifo.safetensors": outside / "fifo", "dangling.safetensors": real / "gone", "loop.safetensors":
             real / "loop.safetensors"}
    for name, target in links.items():
        os.symlink(target, real / name)
    return ["a.safetensors", "dir.safetensors", "fifo.safetensors", "missing.safetensors", *links, ".", "..", "",
            "a:b", "C:x", "sub\\x", "nul\x00x", "dir.safetensors/x", "../a.safetensors"]


@pytest.mark.parametrize("through_link", [False, True])
def test_not_a_file_shortcut_equals_the_resolving_answer(tmp_path: Path, through_link: bool) -> None:
    """Every kind of entry (regular file, folder, FIFO, a symlink to each inside and outside the folder, a dangling
    link, a loop, nothing, names the containment test refuses): the one-``lstat`` answer is the resolving one, and it
    never follows a link out of the folder (``out-dir`` is a symlink to an outside folder: None, not "directory")."""
    real = tmp_path / "real"
    names = _odd_folder(real, tmp_path / "outside")
    root = real
    if through_link:
        root = tmp_path / "link-to-real"
        os.symlink(real, root)
    src = LocalSource(root)
    got = {rel: _kind(src.not_a_file(rel)) for rel in names}
    assert got == {rel: _not_a_file_resolving(src, rel) for rel in names}
    assert got["dir.safetensors"] == got["in-dir.safetensors"] == "directory"
    assert got["fifo.safetensors"] == got["in-fifo.safetensors"] == "not-a-file"
    assert got["out-dir.safetensors"] is None and got["out-fifo.safetensors"] is None and got["missing.safetensors"] is None


def test_not_a_file_of_a_plain_missing_name_is_one_lstat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name indexed but absent (every shard of a metadata-only folder) costs one ``lstat`` and no ``Path.resolve``."""
    (tmp_path / "config.json").write_text("{}")
    src = LocalSource(tmp_path)
    want = [str(tmp_path.resolve() / "model-00001-of-000163.safetensors")]
    calls: list[str] = []
    real_lstat = os.lstat
    monkeypatch.setattr(os, "lstat", lambda p, *a, **k: calls.append(os.fspath(p)) or real_lstat(p, *a, **k))
    monkeypatch.setattr(Path, "resolve", lambda self, strict=False: pytest.fail(f"resolved {self}"))
    assert src.not_a_file("model-00001-of-000163.safetensors") is None
    assert calls == want


def test_an_index_naming_a_lone_surrogate_is_a_missing_shard(tmp_path: Path) -> None:
    """A ``weight_map`` value with a lone surrogate (``"\\ud800.safetensors"``, valid JSON) spells no file name of this
    system: nothing is there, which ``not_a_file`` and ``linked_out`` say, instead of an internal ``UnicodeEncodeError``
    (the audit ended with "internal error" before)."""
    (tmp_path / "sub").mkdir()
    src = LocalSource(tmp_path)
    for rel in ("\ud800.safetensors", "sub/\ud800.safetensors", "\udc80x.safetensors"):
        assert src.not_a_file(rel) is None, rel
        assert src.linked_out(rel) is None, rel
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                                                      "num_hidden_layers": 2, "hidden_size": 8}))
    (tmp_path / "model.safetensors.index.json").write_text(
        '{"metadata": {}, "weight_map": {"a.weight": "\\ud800.safetensors", "b.weight": "sub/\\ud800.safetensors"}}')
    facts = gather(LocalSource(tmp_path))
    assert facts.mode == "metadata-only" and facts.indexed_shards == {"\ud800.safetensors", "sub/\ud800.safetensors"}
    assert facts.problems == {}
    raw = b'{"c.weight":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}'
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0\0")
    facts = gather(LocalSource(tmp_path))
    assert facts.mode == "shards" and facts.missing_shards == ["sub/\ud800.safetensors", "\ud800.safetensors"]
