"""Which GPU architectures a shared object carries, read from its ELF fatbin without loading it.

CUDA code in a ``.so`` lives in the ELF section ``.nv_fatbin`` (or ``__nv_relfatbin`` for relocatable
device code). That section is a sequence of fatbin blocks; each block holds entries, one per cubin
(kind 2, "ELF") or PTX text (kind 1). Layout and flag bits: ``../shared/research/blackwell_fp4.md``
§7.5 and Appendix A (validated there against ``cuobjdump`` 13.5 on sgl-kernel 0.3.21, sglang-kernel
0.4.10 and vLLM 0.33.0), re-validated here against ``cuobjdump --list-elf`` on the lent H200 and
against ``nvcc 13.0`` builds with known ``-gencode`` lists (tests/test_preflight_elf.py).

Block header (16 bytes): ``<I magic=0xBA55ED50><H version><H header_size><Q payload_size>``.
Entry header: ``<H kind><H ?><I header_size><Q payload_size>``, arch ``<I>`` at +28, flags ``<Q>`` at
+40. Flag ``0x100000`` = arch-specific ``a`` (sm_120a), ``0x200000`` = family ``f`` (sm_120f);
``cuobjdump --list-elf`` prints ``sm_100f`` as plain ``sm_100``, so this reader is the more exact one.

Every read is bounded: only the ELF header, the section-header table, the section-name table and
64-byte entry headers are read; payloads are skipped with ``seek``. Nothing is loaded or executed.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY_SPECIFIC = 0x200000
KIND_PTX = 1
KIND_ELF = 2

#: Upper bounds that keep a hostile or corrupt file from making the reader loop or allocate much.
MAX_SECTIONS = 65536
MAX_ENTRIES = 200_000
MAX_SHSTRTAB_BYTES = 16 * 1024 * 1024


class ElfError(ValueError):
    """The file is not a 64-bit little-endian ELF, or its section table is corrupt."""


@dataclass(frozen=True)
class FatbinEntry:
    """One embedded GPU image.

    Attributes:
        kind: ``"elf"`` (a cubin: machine code for one SM) or ``"ptx"`` (virtual ISA, JIT-compiled).
        arch: the number, e.g. ``120`` for SM 12.0.
        suffix: ``"a"`` (arch-specific), ``"f"`` (family-specific) or ``""``.
        flags: raw 64-bit flags word.
        section: ``".nv_fatbin"`` (images the CUDA runtime registers) or ``"__nv_relfatbin"``
            (relocatable device code kept for device linking).
    """

    kind: str
    arch: int
    suffix: str
    flags: int
    section: str = ".nv_fatbin"

    @property
    def target(self) -> str:
        """``"sm_120a"`` for a cubin, ``"compute_120a"`` for PTX."""
        return f"{'sm' if self.kind == 'elf' else 'compute'}_{self.arch}{self.suffix}"


def _sections(fh: BinaryIO, size: int) -> dict[str, tuple[int, int]]:
    head = fh.read(64)
    if len(head) < 64 or head[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    if head[4] != 2 or head[5] != 1:
        raise ElfError("not a 64-bit little-endian ELF (only x86-64 / aarch64 Linux objects are read)")
    (shoff,) = struct.unpack_from("<Q", head, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    if shnum == 0 or shentsize < 64 or shnum > MAX_SECTIONS or shstrndx >= shnum:
        raise ElfError("no usable section header table")
    if shoff + shnum * shentsize > size:
        raise ElfError("section header table runs past the end of the file")
    fh.seek(shoff)
    table = fh.read(shnum * shentsize)
    sh = [struct.unpack_from("<IIQQQQ", table, i * shentsize) for i in range(shnum)]
    str_off, str_size = sh[shstrndx][4], sh[shstrndx][5]
    if str_off + str_size > size or str_size > MAX_SHSTRTAB_BYTES:
        raise ElfError("section name table out of bounds")
    fh.seek(str_off)
    names = fh.read(str_size)
    out: dict[str, tuple[int, int]] = {}
    for name_off, sh_type, _flags, _addr, off, sz in sh:
        if name_off >= len(names) or sh_type == 8:  # SHT_NOBITS has no bytes in the file
            continue
        end = names.find(b"\0", name_off)
        name = names[name_off : end if end >= 0 else len(names)].decode("latin-1")
        if name in FATBIN_SECTIONS and off + sz <= size:
            out[name] = (off, sz)
    return out


def fatbin_entries(path: Path) -> tuple[FatbinEntry, ...]:
    """All cubin and PTX entries of ``path``'s fatbin sections, in file order.

    Returns an empty tuple for an ELF without a fatbin (a CPU-only library).

    Raises:
        ElfError: not a readable 64-bit ELF or a corrupt section table.
        OSError: the file cannot be opened, or is not a regular file
            (:class:`mtp_audit.sources.bounded.NotRegularFile`).
    """
    from mtp_audit.sources.bounded import open_regular

    entries: list[FatbinEntry] = []
    with os.fdopen(open_regular(path), "rb") as fh:  # a FIFO never blocks; recorded as read (never an output)
        size = fh.seek(0, 2)
        fh.seek(0)
        for section, (off, sz) in sorted(_sections(fh, size).items(), key=lambda kv: kv[0] != ".nv_fatbin"):
            p, end = off, off + sz
            while p + 16 <= end and len(entries) < MAX_ENTRIES:
                fh.seek(p)
                blk = fh.read(16)
                magic, _ver, hsz, payload = struct.unpack("<IHHQ", blk)
                if magic != FATBIN_MAGIC:
                    p += 8  # alignment padding between blocks
                    continue
                q, qend = p + hsz, min(p + hsz + payload, end)
                while q + 48 <= qend and len(entries) < MAX_ENTRIES:
                    fh.seek(q)
                    eh = fh.read(48)
                    kind, _u, ehsz, psize = struct.unpack_from("<HHIQ", eh, 0)
                    if ehsz < 48 or kind not in (KIND_PTX, KIND_ELF):
                        break  # corrupt entry: stop this block rather than guess
                    (arch,) = struct.unpack_from("<I", eh, 28)
                    (flags,) = struct.unpack_from("<Q", eh, 40)
                    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY_SPECIFIC else ""
                    entries.append(FatbinEntry("ptx" if kind == KIND_PTX else "elf", int(arch), suffix, int(flags), section))
                    q += ehsz + psize
                p = max(qend, p + 16)
    return tuple(entries)


def sm_targets(path: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Sorted unique ``(cubin targets, PTX targets)`` of ``path``,
    e.g. ``(("sm_90", "sm_100a", "sm_120a"), ("compute_90",))``.

    Only ``.nv_fatbin`` is used when the file has one (the images the runtime registers);
    ``__nv_relfatbin`` is used when it is the only fatbin section (a ``-rdc=true`` object without a
    device link). Why: on the H200, torch 2.11's ``libtorch_nvshmem.so`` was the one file of 16 where
    this reader (then reading both sections) listed more than ``cuobjdump --list-elf`` (an extra sm_89
    cubin and compute_120 PTX); that they sit in ``__nv_relfatbin`` is the likely explanation but was
    not re-checked on the device.

    Raises:
        ElfError, OSError: as :func:`fatbin_entries`.
    """
    es = fatbin_entries(path)
    if any(e.section == ".nv_fatbin" for e in es):
        es = tuple(e for e in es if e.section == ".nv_fatbin")
    key = lambda t: (int("".join(c for c in t.split("_")[1] if c.isdigit())), t)  # noqa: E731
    cubins = tuple(sorted({e.target for e in es if e.kind == "elf"}, key=key))
    ptx = tuple(sorted({e.target for e in es if e.kind == "ptx"}, key=key))
    return cubins, ptx


def parse_target(target: str) -> tuple[int, int, str]:
    """``"sm_120a"`` -> ``(12, 0, "a")``; ``"compute_90"`` -> ``(9, 0, "")``.

    Raises:
        ValueError: not of the form ``sm_<digits>[a|f]`` / ``compute_<digits>[a|f]``.
    """
    try:
        _, rest = target.split("_", 1)
    except ValueError:
        raise ValueError(f"not an SM target: {target!r}") from None
    digits = rest.rstrip("af")
    suffix = rest[len(digits) :]
    if not digits.isdigit() or len(digits) < 2 or len(suffix) > 1:
        raise ValueError(f"not an SM target: {target!r}")
    return int(digits[:-1]), int(digits[-1]), suffix


def cubin_loads_on(target: str, cc: tuple[int, int]) -> bool:
    """Whether an ELF cubin built for ``target`` loads on a GPU of compute capability ``cc``.

    NVIDIA's rule (blackwell_fp4.md §1.3, §7.5): an ``a`` cubin loads only on the exact CC;
    ``f`` and plain cubins load on the same major with minor >= the target's. So ``sm_120a`` does
    **not** load on GB10 (12.1) while ``sm_120f`` and ``sm_121a`` do.
    """
    major, minor, suffix = parse_target(target)
    if suffix == "a":
        return (major, minor) == tuple(cc)
    return major == cc[0] and minor <= cc[1]


def fp4_capable_cubins(targets: tuple[str, ...] | list[str], cc: tuple[int, int]) -> tuple[str, ...]:
    """The cubins in ``targets`` that both load on ``cc`` and can hold FP4 tensor-core code.

    FP4 MMA needs an ``a`` or ``f`` target on Blackwell: plain ``sm_120`` FP4 code compiles to trap
    stubs or a software E2M1 path that produced NaN (SGLang ``arch.py`` docstring; gh:vllm-project/vllm#37725).
    """
    out = []
    for t in targets:
        try:
            major, _minor, suffix = parse_target(t)
        except ValueError:
            continue
        if major >= 10 and suffix in ("a", "f") and cubin_loads_on(t, cc):
            out.append(t)
    return tuple(out)
