"""Wheel members inflated straight from the file (``SourceTree._inflate_direct``) give exactly what the zipfile reader
gives: the same bytes, the same notes for defective members, the same count of bytes read against the tree's bound."""

from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path

import pytest

from mtp_audit.engines.sglang.target import open_target
from mtp_audit.sources import tree as tree_mod
from tests.conftest import sglang_wheel

SERVER_ARGS = b"class ServerArgs:\n    speculative_algorithm: str = None\n"


def _read_all(path: Path, *, direct: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, bytes | None], list, int]:
    """Every listed member's bytes, the notes and the bytes counted, with or without the direct path."""
    with monkeypatch.context() as m:
        if not direct:
            m.setattr(tree_mod.SourceTree, "_inflate_direct", lambda self, info, bound: None)
        t = open_target(path)
        try:
            got = {rel: t.read(rel) for rel in sorted(t.files)}
        finally:
            t.close()
        return got, list(t.notes), t._read_total


def _same_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, bytes | None], list]:
    direct = _read_all(path, direct=True, monkeypatch=monkeypatch)
    plain = _read_all(path, direct=False, monkeypatch=monkeypatch)
    assert direct == plain
    return direct[0], direct[1]


def test_real_wheel_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """SGLang 0.5.23: all 3,985 members, byte for byte; the direct path is taken for every member but the 49 empty
    ones (an empty member is left to zipfile: zlib reads a limit of 0 as no limit)."""
    wheel = sglang_wheel("0.5.23")
    got, notes = _same_both_ways(wheel, monkeypatch)
    assert len(got) == 3985 and all(v is not None for v in got.values()) and notes == []
    calls = []
    real = tree_mod.SourceTree._inflate_direct

    def spy(self: tree_mod.SourceTree, info: zipfile.ZipInfo, bound: int) -> bytes | None:
        out = real(self, info, bound)
        calls.append((info.file_size, out is not None))
        return out

    monkeypatch.setattr(tree_mod.SourceTree, "_inflate_direct", spy)
    t = open_target(wheel)
    try:
        for rel in sorted(t.files):
            t.read(rel)
    finally:
        t.close()
    assert len(calls) == 3985
    assert all(direct for size, direct in calls if size) and sum(1 for size, direct in calls if not direct) == 49


def _wheel(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as z:
        z.writestr("sglang/srt/server_args.py", SERVER_ARGS)
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _patch(path: Path, name: str, edit) -> None:  # noqa: ANN001 - edit(raw bytearray, info)
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name)
    raw = bytearray(path.read_bytes())
    edit(raw, info)
    path.write_bytes(bytes(raw))


def _data_start(raw: bytearray, info: zipfile.ZipInfo) -> int:
    n, e = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
    return info.header_offset + 30 + n + e


def _corrupt_stream(raw: bytearray, info: zipfile.ZipInfo) -> None:
    start = _data_start(raw, info)
    for i in range(start + 2, start + info.compress_size - 2):
        raw[i] = 0xFF


def _rename_in_local_header(raw: bytearray, info: zipfile.ZipInfo) -> None:
    raw[info.header_offset + 30] ^= 0x01


def _bad_crc(raw: bytearray, info: zipfile.ZipInfo) -> None:
    """Change one byte of the central directory's CRC-32 of the member (the local header keeps the right one)."""
    raw[_central_entry(raw, info) + 16] ^= 0xFF


def _central_entry(raw: bytearray, info: zipfile.ZipInfo) -> int:
    """Offset of the member's central directory entry (its name sits 46 bytes in)."""
    at = raw.find(info.filename.encode(), raw.find(b"PK\x01\x02"))
    assert at != -1 and raw[at - 46:at - 42] == b"PK\x01\x02"
    return at - 46


def _declare_smaller(raw: bytearray, info: zipfile.ZipInfo) -> None:
    """The central directory declares one byte less than the member inflates to."""
    at = _central_entry(raw, info) + 24
    raw[at:at + 4] = struct.pack("<I", struct.unpack("<I", raw[at:at + 4])[0] - 1)


def _declare_larger(raw: bytearray, info: zipfile.ZipInfo) -> None:
    at = _central_entry(raw, info) + 24
    raw[at:at + 4] = struct.pack("<I", struct.unpack("<I", raw[at:at + 4])[0] + 7)


@pytest.mark.parametrize("edit", [None, _corrupt_stream, _rename_in_local_header, _bad_crc, _declare_smaller,
                                  _declare_larger])
def test_defective_members_read_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit) -> None:  # noqa: ANN001
    """A healthy member, a corrupt deflate stream, a local header naming another file, a wrong CRC-32, a declared size
    one byte short or 7 bytes long: bytes and notes as the zipfile reader gives them (it reads a member whose stream
    ends before its declared size when the CRC-32 matches: so does the audit, through the zipfile path)."""
    body = os.urandom(3000).hex().encode()
    whl = _wheel(tmp_path / "sglang-0.0.1-py3-none-any.whl", {"sglang/srt/x.py": body, "sglang/srt/y.py": b"y = 1\n"})
    if edit is not None:
        _patch(whl, "sglang/srt/x.py", edit)
    got, notes = _same_both_ways(whl, monkeypatch)
    assert got["sglang/srt/y.py"] == b"y = 1\n"
    if edit in (None, _declare_larger):
        assert got["sglang/srt/x.py"] == body and notes == []
    else:
        assert got["sglang/srt/x.py"] is None and [rel for rel, _ in notes] == ["sglang/srt/x.py"]


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_other_methods_take_the_zipfile_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: int) -> None:
    whl = _wheel(tmp_path / "sglang-0.0.1-py3-none-any.whl", {"sglang/srt/x.py": b"x = 1\n" * 500}, method)
    got, notes = _same_both_ways(whl, monkeypatch)
    assert got["sglang/srt/x.py"] == b"x = 1\n" * 500 and notes == []


def test_the_tree_bound_is_met_at_the_same_member(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the tree's byte bound lowered to 2.5 MB, 1 MB members: the same members are read (two; the third would pass the bound), the same note given."""
    monkeypatch.setattr(tree_mod, "MAX_TREE_PY_BYTES", 5 * 512 * 1024)
    body = b"x = 1\n" * (1024 * 1024 // 6)
    whl = _wheel(tmp_path / "sglang-0.0.1-py3-none-any.whl", {f"sglang/srt/m{i}.py": body for i in range(5)})
    got, notes = _same_both_ways(whl, monkeypatch)
    assert [rel for rel, v in got.items() if v is not None] == ["sglang/srt/m0.py", "sglang/srt/m1.py"]
    assert len(notes) == 1 and "zip-bomb bound" in notes[0][1]
