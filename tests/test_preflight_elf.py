"""ELF fatbin reader: nvcc-built fixtures with known -gencode lists, the cuobjdump cross-check recorded
on the lent H200, loadability rules, corrupt input, and a real sgl-kernel wheel (network)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from mtp_audit.preflight.elf import (
    ElfError,
    cubin_loads_on,
    fatbin_entries,
    fp4_capable_cubins,
    parse_target,
    sm_targets,
)

E = Path(__file__).resolve().parent.parent / "fixtures" / "preflight" / "elf"


def test_known_gencode_lists():
    # from the nvcc command lines in fixtures/preflight/elf/SOURCE.txt
    assert sm_targets(E / "libfb_a.so") == (("sm_90", "sm_90a", "sm_100a", "sm_120a", "sm_121a"), ("compute_120",))
    assert sm_targets(E / "libfb_f.so") == (("sm_100f", "sm_103a", "sm_120f"), ())
    assert sm_targets(E / "libfb_plain.so") == (("sm_100", "sm_120"), ())
    assert sm_targets(E / "libfb_sm120a_only.so") == (("sm_90", "sm_100a", "sm_120a"), ())


def test_flags_bits():
    es = [e for e in fatbin_entries(E / "libfb_f.so") if e.arch == 120]
    assert es and all(e.suffix == "f" and e.flags & 0x200000 for e in es)
    es = [e for e in fatbin_entries(E / "libfb_a.so") if e.arch == 121]
    assert es and all(e.suffix == "a" and e.flags & 0x100000 for e in es)


def test_matches_cuobjdump_recorded_on_h200():
    rows = [ln.split("\t") for ln in (E / "cuobjdump-h200.tsv").read_text().splitlines()]
    by = {r[0]: dict(kv.split("=", 1) for kv in r[1:8] if "=" in kv) for r in rows}
    for name in ("libfb_a.so", "libfb_f.so", "libfb_plain.so", "libfb_sm120a_only.so"):
        mine = [t.rstrip("f") if t.endswith("f") else t for t in sm_targets(E / name)[0]]
        assert ",".join(mine) == by[name]["cuobjdump"], name  # cuobjdump prints sm_100f as sm_100
    # torch 2.11.0+cu130's libtorch_cuda.so (456 MB) on the H200: the two readers agree
    assert by["libtorch_cuda.so"]["agree"] == "True"
    assert by["libtorch_cuda.so"]["cuobjdump"] == "sm_75,sm_80,sm_86,sm_89,sm_90,sm_90a,sm_100,sm_100a,sm_103a,sm_120,sm_120a,sm_121a"


@pytest.mark.parametrize("target,cc,ok", [
    ("sm_120a", (12, 0), True), ("sm_120a", (12, 1), False), ("sm_120f", (12, 1), True), ("sm_121a", (12, 1), True),
    ("sm_120", (12, 1), True), ("sm_100a", (10, 3), False), ("sm_100f", (10, 3), True), ("sm_100", (12, 0), False),
    ("sm_90a", (9, 0), True), ("sm_90", (10, 0), False),
])
def test_loadability(target, cc, ok):
    assert cubin_loads_on(target, cc) is ok


def test_fp4_capable_excludes_plain():
    assert fp4_capable_cubins(("sm_100", "sm_120"), (12, 0)) == ()
    assert fp4_capable_cubins(("sm_90", "sm_100a", "sm_120a"), (12, 1)) == ()
    assert fp4_capable_cubins(("sm_120f",), (12, 1)) == ("sm_120f",)
    assert parse_target("compute_120a") == (12, 0, "a")
    with pytest.raises(ValueError):
        parse_target("sm_x")


def test_not_elf_and_truncated(tmp_path):
    p = tmp_path / "x.so"
    p.write_bytes(b"not an elf at all" * 10)
    with pytest.raises(ElfError):
        fatbin_entries(p)
    good = (E / "libfb_a.so").read_bytes()
    q = tmp_path / "t.so"
    q.write_bytes(good[: len(good) // 3])
    with pytest.raises(ElfError):
        fatbin_entries(q)  # section table is at the end of the file


def test_cpu_only_elf_has_no_entries(tmp_path):
    import sys

    exe = Path(sys.executable).resolve()
    assert sm_targets(exe) == ((), ())


CACHE = Path(os.environ.get("MTP_AUDIT_TEST_CACHE", os.path.expanduser("~/.cache/mtp-audit-tests")))


@pytest.mark.network
@pytest.mark.slow
def test_real_sgl_kernel_wheel():
    """sgl-kernel 0.3.21 (PyPI, x86-64): blackwell_fp4.md §3.4 records cuobjdump 13.5 listing
    sm_80, sm_89, sm_90, sm_90a, sm_100a, sm_120a in sgl_kernel/sm100/common_ops.abi3.so."""
    import subprocess
    import sys

    d = CACHE / "sgl-kernel-0.3.21"
    whl = next(iter(d.glob("sgl_kernel-0.3.21-*.whl")), None) if d.is_dir() else None
    if whl is None:
        from conftest import skip_big_download

        skip_big_download("sgl-kernel 0.3.21", "about 500 MB")
        d.mkdir(parents=True, exist_ok=True)
        cp = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--platform", "manylinux2014_x86_64",
                             "--python-version", "3.10", "sgl-kernel==0.3.21", "-d", str(d)], capture_output=True, text=True, timeout=900)
        whl = next(iter(d.glob("sgl_kernel-0.3.21-*.whl")), None)
        if whl is None:
            pytest.skip(f"could not download sgl-kernel 0.3.21: {cp.stderr.strip()[-200:]}")
    so = d / "sm100_common_ops.so"
    if not so.is_file():
        with zipfile.ZipFile(whl) as z:
            name = next(n for n in z.namelist() if n.startswith("sgl_kernel/sm100/common_ops") and n.endswith(".so"))
            so.write_bytes(z.read(name))
    cubins, _ = sm_targets(so)
    assert cubins == ("sm_80", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120a")
    assert cubin_loads_on("sm_120a", (12, 1)) is False and not fp4_capable_cubins(cubins, (12, 1))
