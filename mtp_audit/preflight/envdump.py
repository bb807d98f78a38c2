"""Parsers for the environment dumps people paste into bug reports.

Formats (samples in ``fixtures/preflight/envdumps``; descriptions in
``../shared/research/blackwell_fp4.md`` §7.6):

- ``python3 -m sglang.check_env``: ``Key: value`` lines, ``GPU 0,1: <name>`` and
  ``GPU 0,1 Compute Capability: 12.0``; sometimes flattened into one line by the issue tracker
  (gh:sgl-project/sglang#13198).
- ``python -m torch.utils.collect_env``: the old flat ``Key: value`` format and the new boxed
  ``==== Section ====`` / ``Key : value`` format, with ``[pip3] name==version`` lines.
- ``vllm collect-env``: the boxed torch format plus ``vLLM Version``.
- ``python -m flashinfer.collect_env``: ``==== FlashInfer ====`` with ``name : version`` and
  ``⚠ MISMATCH`` markers.
- ``nvidia-smi``: the box table, with the R5xx header (``Driver Version`` / ``CUDA Version``) or the
  R610+ header (``KMD Version`` / ``CUDA UMD Version``, gh:sgl-project/sglang#27487); ``nvidia-smi -q``;
  and ``nvidia-smi --query-gpu=... --format=csv``.

A fact that a dump does not show is reported missing with the reason; nothing is guessed. The only
inference is GPU product name -> compute capability through the matrix's table of NVIDIA's published
list, and the fact's ``source`` says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from mtp_audit.engines.registry import engine_distributions
from mtp_audit.errors import InputError
from mtp_audit.known import AT_LEAST
from mtp_audit.preflight import piplist, vendor_dumps
from mtp_audit.preflight.facts import (
    PACKAGES,
    PARTIAL_GPU_LIST,
    Fact,
    GpuFacts,
    MachineFacts,
    same_value,
)
from mtp_audit.preflight.freeform import found_anything, parse_freeform
from mtp_audit.preflight.lineindex import index_for
from mtp_audit.preflight.matrix import cc_from_name
from mtp_audit.sources.bounded import MAX_TEXT_BYTES, read_bytes_bounded

#: Name as printed by a dump -> distribution name.
_PKG_ALIASES = {
    "sglang": "sglang",
    "sgl_kernel": "sgl-kernel",
    "sgl-kernel": "sgl-kernel",
    "sglang-kernel": "sglang-kernel",
    "sglang_kernel": "sglang-kernel",
    "flashinfer": "flashinfer-python",
    "flashinfer_python": "flashinfer-python",
    "flashinfer-python": "flashinfer-python",
    "flashinfer_cubin": "flashinfer-cubin",
    "flashinfer-cubin": "flashinfer-cubin",
    "flashinfer_jit_cache": "flashinfer-jit-cache",
    "flashinfer-jit-cache": "flashinfer-jit-cache",
    "vllm": "vllm",
    "triton": "triton",
    "torch": "torch",
    "nvidia-cudnn-cu12": "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13": "nvidia-cudnn-cu13",
    "nvidia-cudnn-frontend": "nvidia-cudnn-frontend",
    "nvidia-cutlass-dsl": "nvidia-cutlass-dsl",
    "nvidia-ml-py": "nvidia-ml-py",
    "aiter": "aiter",
    "amd-aiter": "aiter",
    "petit-kernel": "petit-kernel",
    "torch-npu": "torch-npu",
    "torch_npu": "torch-npu",
    "vllm-ascend": "vllm-ascend",
    "vllm_ascend": "vllm-ascend",
    "sgl-kernel-npu": "sgl-kernel-npu",
    "sgl_kernel_npu": "sgl-kernel-npu",
    "triton-ascend": "triton-ascend",
}
#: every engine's own distributions (:func:`mtp_audit.engines.registry.engine_distributions`: vLLM's optional ones too)
#: under their name and its ``_`` spelling
_PKG_ALIASES.update({alias: dist for dist in engine_distributions() for alias in (dist, dist.replace("-", "_"))
                     if alias not in _PKG_ALIASES})

FREEFORM = "free-form"

FORMATS = ("sglang-check-env", "torch-collect-env", "vllm-collect-env", "flashinfer-collect-env", "nvidia-smi", "nvidia-smi-q", "nvidia-smi-csv",
           *vendor_dumps.FORMATS, piplist.FORMAT)

class _FirstOf:
    """Several patterns searched one after the other (each with a literal start, so fast), as one signature."""

    def __init__(self, *patterns: re.Pattern[str]) -> None:
        self.patterns = patterns

    def search(self, text: str) -> re.Match[str] | None:
        """The first pattern's match in ``text``, else the next one's, ..., or ``None``."""
        return next((m for p in self.patterns if (m := p.search(text))), None)


_SIGNATURES: dict[str, re.Pattern[str] | _FirstOf] = {
    "sglang-check-env": re.compile(r"(^|\s)(sglang|sgl_kernel|sglang-kernel): \S|GPU [\d,]+ Compute Capability:", re.M),
    "torch-collect-env": re.compile(r"PyTorch version\s*:|CUDA used to build PyTorch\s*:", re.M),
    "vllm-collect-env": re.compile(r"vLLM Version\s*:", re.M),
    "flashinfer-collect-env": re.compile(r"==== FlashInfer ====|^flashinfer-cubin\s+:", re.M),
    # the banner, or (a paste that lost its top lines) the table's column header or a GPU row with its bus id
    "nvidia-smi": _FirstOf(re.compile(r"NVIDIA-SMI \d"), re.compile(r"GPU[ \t]+Name[ \t]+Persistence-M"),
                           re.compile(r"\|[ \t]+\d{1,3}[ \t]+\S[^|\n]{0,80}?[ \t]+(?:On|Off)[ \t]+\|[ \t]+[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d")),
    "nvidia-smi-q": re.compile(r"^\s*Product Name\s+: ", re.M),
    # not used by detect_formats, which reads any header (_csv_header); mtp-audit's own query's header
    "nvidia-smi-csv": re.compile(r"^index, name, compute_cap", re.M),
    **vendor_dumps.SIGNATURES,
    piplist.FORMAT: piplist.SIGNATURE,
}


#: What only a known environment tool prints although no fact is read from it: collect_env's banner, section titles and
#: fixed keys (torch/utils/collect_env.py ``env_info_fmt``; vllm/collect_env.py), sglang check_env's fixed keys
#: (sglang/check_env.py), vLLM's platform line (vllm/platforms/__init__.py ``Automatically detected platform``), the
#: nvidia-smi table's column header, the tools' own module names. A paste holding only these (cut before its first
#: fact) is an environment dump with nothing answered: "could not tell", not an input error.
_TOOL_MARKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("collect_env", re.compile(
        r"Collecting environment(?: information)?|^[ \t]*(?:System Info|PyTorch Info|Python Environment|CUDA / GPU Info|CPU Info|"
        r"Versions of relevant libraries|vLLM Info)[ \t]*:?[ \t]*$|"
        r"^(?:Is debug build|CUDA used to build PyTorch|ROCM used to build PyTorch|GCC version|Clang version|CMake version|"
        r"Libc version|Python version|Python platform|Is CUDA available|CUDA runtime version|CUDA_MODULE_LOADING set to|"
        r"cuDNN version|HIP runtime version|MIOpen runtime version|Is XNNPACK available|Is XPU available)[ \t]*:", re.M)),
    ("vLLM", re.compile(r"Automatically detected platform \w")),
    ("sglang check_env", re.compile(r"^(?:CUDA available|NVCC|CUDA_HOME|CUDA Driver Version|Hypervisor vendor|ulimit soft limit)[ \t]*:|"
                                    r"^Python: \d+\.\d+\.\d+ \(", re.M)),
    ("nvidia-smi", re.compile(r"NVIDIA-SMI |Persistence-M|Bus-Id\s+Disp\.A|Volatile Uncorr\. ECC")),
    ("xpu-smi", re.compile(r"xpu-smi |XPU Discovery:|^\|\s*Device ID\s*\|\s*Device Information", re.M)),
    ("rocminfo", re.compile(r"^Agent \d{1,3}[ \t]*\n\*{7}", re.M)),
    ("clinfo", re.compile(r"^[ \t]*(?:Number of platforms[ \t]+\d|Platform Name[ \t]{2,}\S)", re.M)),
    ("a tool named by its module or command", re.compile(
        r"sglang\.check_env|torch\.utils\.collect_env|flashinfer\.collect_env|vllm collect-env|"
        r"(?<![\w-])(?:nvidia-smi|rocm-smi|amd-smi|npu-smi|xpu-smi|rocminfo|sycl-ls|clinfo)(?![\w-])")),
)


def recognised_tool(text: str) -> str | None:
    """The known tool whose output ``text`` shows (see :data:`_TOOL_MARKS`) with the line of its first mark, or ``None``."""
    for tool, rx in _TOOL_MARKS:
        m = rx.search(text)
        if m:
            return f"{tool} (line {_line_of(text, m.start())}: {m.group(0).strip()[:40]!r})"
    return None


def detect_formats(text: str) -> tuple[str, ...]:
    """Every known dump format found in ``text`` (several can be pasted together), in FORMATS order."""
    return tuple(f for f in FORMATS if (_csv_header(text) is not None if f == "nvidia-smi-csv" else _SIGNATURES[f].search(text)))


#: A line of ``nvidia-smi --query-gpu=... --format=csv``'s header: query field names (lower case, ``.`` and ``_``), each
#: with its unit in brackets where it has one (``memory.total [MiB]``, also under ``nounits``), separated by ``, ``.
#: Unambiguous (a field holds no comma or blank), so linear.
_CSV_HEADER = re.compile(r"^(?=[^\n]*(?:name|compute_cap))[ \t]*[a-z][a-z0-9_.]{0,40}(?:[ \t]*\[[^\]\n]{0,12}\])?(?:[ \t]*,[ \t]*[a-z][a-z0-9_.]{0,40}(?:[ \t]*\[[^\]\n]{0,12}\])?){0,40}[ \t]*$", re.M)
#: NVIDIA's field names (``nvidia-smi --help-query-gpu``) the preflight reads, with their documented aliases.
_CSV_FIELDS = {"index": "index", "name": "name", "gpu_name": "name", "compute_cap": "compute_cap", "driver_version": "driver_version",
               "memory.total": "memory.total", "uuid": "uuid", "gpu_uuid": "uuid", "pci.bus_id": "pci.bus_id", "gpu_bus_id": "pci.bus_id"}


def _csv_header(text: str) -> tuple[int, list[str], list[str]] | None:
    """The first ``nvidia-smi --query-gpu ... --format=csv`` header of ``text``: (offset of its line end, the fields as
    :data:`_CSV_FIELDS` names them, each field's unit in brackets or ``""``), or ``None``. A header names the GPU or its
    compute capability (``name`` / ``gpu_name`` / ``compute_cap``) and no field twice."""
    if "name" not in text and "compute_cap" not in text:
        return None
    for m in _CSV_HEADER.finditer(text):
        cells = [c.strip() for c in m.group(0).split(",")]
        fields = [re.sub(r"\s*\[.*$", "", c) for c in cells]
        if len(set(fields)) != len(fields) or not {"name", "gpu_name", "compute_cap"} & set(fields):
            continue
        units = [c[len(f):].strip(" []") for c, f in zip(cells, fields)]
        return m.end(), [_CSV_FIELDS.get(f, f) for f in fields], units
    return None


def read_dump(path: Path) -> str:
    """Read a dump file as text; ``-`` reads standard input (``nvidia-smi | mtp-audit preflight --env-dump -``).

    Raises:
        InputError: missing, unreadable, larger than 64 MiB, empty, or binary (a NUL byte or not
            decodable as UTF-8/Latin-1 text) — the user's own input mistake, exit 2.
    """
    if str(path) == "-":
        raw = _read_stdin_bounded(MAX_TEXT_BYTES)
        path = Path("standard input")
    else:
        raw = read_bytes_bounded(path, MAX_TEXT_BYTES, display=str(path))
    if not raw.strip():
        raise InputError(str(path), "is empty, expected the text of an environment dump")
    if b"\x00" in raw[:65536]:
        raise InputError(str(path), "is a binary file, expected the text of an environment dump")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _read_stdin_bounded(limit: int) -> bytes:
    """At most ``limit`` bytes of standard input.

    Raises:
        InputError: standard input is closed or a terminal (nothing piped), unreadable, or larger than ``limit``.
    """
    import sys

    stream = getattr(sys.stdin, "buffer", None)
    try:
        if sys.stdin is None or stream is None:
            raise InputError("--env-dump -", "standard input is closed: pipe a dump in (nvidia-smi | mtp-audit preflight --env-dump -)")
        if sys.stdin.isatty():
            raise InputError("--env-dump -", "standard input is a terminal: pipe a dump in (nvidia-smi | mtp-audit preflight --env-dump -)")
        raw = stream.read(limit + 1)
    except (OSError, ValueError) as exc:
        raise InputError("--env-dump -", f"cannot read standard input: {exc}") from None
    if len(raw) > limit:
        raise InputError("--env-dump -", f"standard input is larger than {limit} bytes; not an environment dump")
    return bytes(raw)


#: The first line of mtp-audit's own text report (:mod:`mtp_audit.formats.text`): ``FAIL: ... (exit 1)``.
_OWN_TEXT_REPORT = re.compile(r"(?:FAIL|INCONCLUSIVE|WARN|PASS): [^\n]*\(exit \d(?:; \d+ ignored)?\)\n")


#: Longest run of blanks (whitespace other than a newline) the parsers see; a longer run is cut to this.
#: Real dumps pad columns with at most ~40 spaces (nvidia-smi's box table).
MAX_BLANK_RUN = 64

_BLANK_RUN = re.compile(rf"[^\S\n]{{{MAX_BLANK_RUN + 1},}}")


def clip_blank_runs(text: str) -> str:
    """``text`` with every run of more than :data:`MAX_BLANK_RUN` blanks (spaces, tabs, other non-newline
    whitespace) cut to its first :data:`MAX_BLANK_RUN` characters; newlines (so line numbers) are kept.

    Why: the format parsers match a lazily extended field followed by ``\\s+`` (``GPU 0: <name>`` up to the
    next ``GPU n Compute Capability``; an nvidia-smi row up to ``On``/``Off``). On a line of k blanks each
    extension re-scans the run, so a pasted ``GPU 0: x`` followed by 200,000 spaces took minutes (an
    nvidia-smi row, longer). With runs bounded, every parser is linear in the dump's length."""
    return _BLANK_RUN.sub(lambda m: m.group()[:MAX_BLANK_RUN], text)


def parse_dump(text: str, *, display: str = "dump") -> MachineFacts:
    """Parse one pasted dump (possibly several formats concatenated) into :class:`MachineFacts`.

    Raises:
        InputError: no known format found (the message lists what is accepted).
    """
    text, cut_note = _unterminated_tail(clip_blank_runs(text.replace("\r\n", "\n")))
    head = text.lstrip()[:200]
    if (head.startswith(("mtp-audit ", "# mtp-audit report")) or _OWN_TEXT_REPORT.match(head)
            or ('"schema_version"' in text[:4096] and '"mtp-audit"' in text)):
        raise InputError(display, "is an mtp-audit report, not an environment dump (pass the output of 'python3 -m sglang.check_env' or 'nvidia-smi')")
    formats = detect_formats(text)
    free = parse_freeform(text)
    tool = None if formats or found_anything(free) else recognised_tool(text)
    if tool is not None:
        free = replace(free, notes=(*free.notes, f"the text is the output of {tool} but holds none of its facts (cut before them?)"))
    elif not formats and not found_anything(free):
        raise InputError(
            display,
            "nothing recognisable as an environment: no tool dump ('python3 -m sglang.check_env', "
            "'python -m torch.utils.collect_env', 'vllm collect-env', 'python -m flashinfer.collect_env', 'nvidia-smi', "
            "'amd-smi', 'rocm-smi', 'npu-smi info') and no GPU, NPU, driver, CUDA, ROCm, CANN or package version written out "
            "(not a recognised environment dump)",
        )
    facts: MachineFacts | None = None
    for fmt in formats:
        f = _PARSERS[fmt](text)
        facts = f if facts is None else _merged_one_dump(facts, f)
    if facts is None:
        return _noted(free, cut_note)
    facts = replace(facts, engine=_engine_of_tools(text, formats))
    facts = _with_freeform(facts, free)
    if not facts.accelerator.present:
        cpu = vendor_dumps.cpu_only(text, facts)
        if cpu.present:
            facts = replace(facts, accelerator=cpu)
    return _noted(facts, cut_note)


#: The machine's single-valued facts two tool dumps of one text must agree on.
_ONE_VALUE = (("driver_version", "driver version"), ("cuda_driver_version", "driver CUDA version"), ("toolkit", "CUDA toolkit"),
              ("torch_version", "torch version"), ("torch_cuda", "torch CUDA build"))


def _merged_one_dump(a: MachineFacts, b: MachineFacts) -> MachineFacts:
    """Two tool dumps of one text merged (:meth:`MachineFacts.merged_with`); a single-valued fact (driver, driver CUDA,
    toolkit, torch and its CUDA build) they give two different values of is missing with both values and sources (a
    conflict), never the first one silently. One value spelt two ways (``2.9.1`` and ``2.9.1+cu128``) agrees."""
    return _one_value_each(a.merged_with(b), a, b, "the dump gives")


def _one_value_each(merged: MachineFacts, a: MachineFacts, b: MachineFacts, who: str) -> MachineFacts:
    """``merged`` with each fact of :data:`_ONE_VALUE` that ``a`` and ``b`` give two values of made missing, naming both."""
    for name, label in _ONE_VALUE:
        fa, fb = getattr(a, name), getattr(b, name)
        if fa.present and fb.present and not same_value(str(fa.value), str(fb.value)):
            why = f"conflict: {who} two values of the {label}: {fa.value} ({fa.source}), {fb.value} ({fb.source})"
        elif fa.present and str(fb.missing or "").startswith("conflict: "):
            why = f"conflict: {who} several values of the {label}: {fa.value} ({fa.source}); {fb.missing}"  # the free-form text's own conflict
        else:
            continue
        changes: dict[str, Any] = {name: Fact.absent(why, source=merged.origin), "notes": (*merged.notes, why)}
        merged = replace(merged, **changes)
    return merged


def _unterminated_tail(text: str) -> tuple[str, str | None]:
    """A dump that stops inside a word (no line end, no blank after its last word) may be a cut paste whose last value
    is cut short (``sglang: 0.5`` of ``sglang: 0.5.5.post1`` reads as a release): that last word is not read, and the
    note says so. A dump ending in a line end or a blank is read whole."""
    if not text or text[-1].isspace():
        return text, None
    start = max(text.rfind(" "), text.rfind("\t"), text.rfind("\n")) + 1
    word = text[start:]
    shown = word if len(word) <= 40 else word[:40] + "..."
    return text[:start], f"the dump ends inside a line (no line end after {shown!r}): that last word is not read (it may be cut short)"


def _noted(facts: MachineFacts, note: str | None) -> MachineFacts:
    return facts if note is None else replace(facts, notes=(*facts.notes, note))


#: Dump format -> the engine whose own tool prints it (the preflight's engine hint, :mod:`mtp_audit.preflight.engine`).
FORMAT_ENGINE = {"sglang-check-env": "sglang", "vllm-collect-env": "vllm"}


def _engine_of_tools(text: str, formats: tuple[str, ...]) -> Fact:
    """``sglang`` for a check_env dump, ``vllm`` for a vllm collect-env dump (both: no answer)."""
    found = {eng: fmt for fmt, eng in FORMAT_ENGINE.items() if fmt in formats}
    if len(found) == 1:
        (eng, fmt), = found.items()
        m = _SIGNATURES[fmt].search(text)
        return Fact.of(eng, f"{fmt} format (line {_line_of(text, m.start()) if m else '?'})")
    if found:
        return Fact.absent("the text holds both an sglang check_env and a vllm collect-env dump")
    return Fact.absent(f"a {'/'.join(formats)} dump does not say which serving engine runs")


def _with_freeform(facts: MachineFacts, free: MachineFacts) -> MachineFacts:
    """Tool-dump facts win; free-form lines fill what the tools left missing. GPUs from free-form text are
    used only when the tools list none or a list known to be partial; a disagreement is a note."""
    why = facts.conflict_with(free)
    notes = facts.notes
    if why and why.startswith("GPU"):  # a driver that differs is a conflict of its own (_one_value_each), not the tool's
        notes += (f"conflict: the tool dump and the free-form lines of this file disagree ({why}); the tool dump is used",)
    if why or (facts.gpus and not facts.gpu_list_partial):
        free = replace(free, gpus=(), gpu_list=Fact.absent("not used"))
    if not facts.engine.present and free.engine.present:
        facts = replace(facts, engine=free.engine)
    merged = replace(facts.merged_with(free), origin=facts.origin, notes=notes + tuple(n for n in free.notes if n not in notes))
    merged = _one_value_each(merged, facts, free, "the tool dump and the free-form lines of this file give")
    if replace(merged, notes=facts.notes).to_dict() != facts.to_dict():
        merged = replace(merged, origin=f"{facts.origin}+{FREEFORM}")
    return merged


# --- helpers -----------------------------------------------------------------------------------


_HUGE_NUMBER = re.compile(r"\d{33}")


def _line_of(text: str, pos: int) -> int:
    """1-based line of offset ``pos``: bisect in a line-start index built once per text (linear parsing)."""
    return index_for(text).line_of(pos)


def _key_search(text: str, key: str, tail: str, *, line_start: bool = False) -> re.Match[str] | None:
    """The first ``key`` + ``tail`` match whose ``key`` starts the text, a line (``line_start``) or follows
    whitespace (otherwise): what a multi-line ``re.search`` for start-or-whitespace, KEY, TAIL finds, in time
    linear in ``len(text)``.

    ``str.find`` locates each occurrence of the literal key and the compiled pattern is tried only there, so
    a key absent from a 64 MB dump costs one ``find``, not a regex attempt at every position.
    """
    return next(_key_matches(text, key, tail, line_start=line_start), None)


@lru_cache(maxsize=256)
def _key_pattern(key: str, tail: str) -> re.Pattern[str]:
    return re.compile(re.escape(key) + tail, re.M)


def _key_matches(text: str, key: str, tail: str, *, line_start: bool = False) -> Iterator[re.Match[str]]:
    """Every match :func:`_key_search` would find, in order (the same linear ``str.find`` scan)."""
    rx = _key_pattern(key, tail)
    pos = text.find(key)
    while pos != -1:
        prev = text[pos - 1] if pos else "\n"
        if prev == "\n" or (not line_start and prev.isspace()):
            m = rx.match(text, pos)
            if m:
                yield m
        pos = text.find(key, pos + 1)


#: Most ``Key: value`` lines of one fact :func:`_kv` compares (a 64 MiB paste of one dump repeated stays bounded).
MAX_KEY_LINES = 64


def _kv(text: str, key: str, fmt: str, *, value: str = r"(\S+)") -> Fact:
    """``Key: value`` or ``Key   : value`` (boxed). A fact has one value: when the dump gives the key twice with
    different values (two environments pasted together, before and after an upgrade), the fact is missing and its
    reason names both values and their lines (a conflict: "could not tell"), never the first silently."""
    facts: list[Fact] = []
    for n, m in enumerate(_key_matches(text, key, rf"\s*:[ \t]*{value}")):
        if n >= MAX_KEY_LINES:
            break
        facts.append(_kv_value(text, m, key, fmt))
    if not facts:
        return Fact.absent(f"the {fmt} dump has no '{key}' line", source=fmt)
    values: dict[str, Fact] = {}
    for f in facts:
        if f.present:
            values.setdefault(str(f.value), f)
    if len(values) > 1:
        listed = ", ".join(f"{v} ({f.source})" for v, f in values.items())
        return Fact.absent(f"conflict: the dump gives {len(values)} values of '{key}': {listed}", source=fmt)
    return next(iter(values.values())) if values else facts[0]


def _kv_value(text: str, m: re.Match[str], key: str, fmt: str) -> Fact:
    """The fact of one ``Key: value`` match of :func:`_kv`."""
    if not m.group(1).strip():
        return Fact.absent(f"the {fmt} dump has no '{key}' line", source=fmt)
    v = m.group(1).strip()
    if m.end(1) >= len(text.rstrip(" \t")) and not text.endswith("\n"):
        # the text stops inside this value: '2.11.0+cu13' of '2.11.0+cu130' would be read as another version
        return Fact.absent(f"the {fmt} dump is cut off in its '{key}' line (last line)", source=f"{fmt} line {_line_of(text, m.start(1))}")
    rest = text[m.start(1):m.start(1) + 17].lower()
    if rest.startswith(("could not", "no cuda")):
        v = "Could not collect" if rest.startswith("could") else "No CUDA"  # the default value pattern stops at the first space
    if v.lower() in ("could not collect", "n/a", "none", "not set", "no cuda"):
        return Fact.absent(f"{fmt} says '{key}: {v}'", source=f"{fmt} line {_line_of(text, m.start(1))}")
    if _HUGE_NUMBER.search(v):  # no version has such a number (and int() refuses more than 4300 digits)
        return Fact.absent(f"{fmt} '{key}' value is not a version (it holds a number of more than 32 digits)",
                           source=f"{fmt} line {_line_of(text, m.start(1))}")
    return Fact.of(v, f"{fmt} line {_line_of(text, m.start(1))}")


def _cuda_from_torch_tag(version: Fact) -> Fact:
    m = re.search(r"\+cu(\d{1,6})(\d)$", str(version.value or ""))
    if not version.present:
        return Fact.absent(f"torch version unknown ({version.missing})" if "conflict" in str(version.missing) else "torch version not shown")
    if not m:
        return Fact.absent(f"torch {version.value} has no +cuXXX tag (PyPI default builds do not show their CUDA)")
    return Fact.of(f"{int(m.group(1))}.{m.group(2)}", f"{version.source} (+cu tag)")


def _gpu_cc(name: Fact) -> Fact:
    if not name.present:
        return Fact.absent("GPU name not shown")
    hit = cc_from_name(str(name.value))
    if hit is None:
        return Fact.absent(f"the dump does not show the compute capability and '{name.value}' is not in the GPU table")
    return Fact.of(hit[0], f"GPU name table ({hit[1]})")


def _packages_from_lines(text: str, fmt: str) -> dict[str, Fact]:
    out: dict[str, Fact] = {}
    # "[pip3] name==version" (torch/vllm collect_env) and "[conda] name version"
    for m in re.finditer(r"^\[(?:pip3?|conda)\]\s+([A-Za-z0-9_.\-]+)(?:==|\s+)(\S+)", text, re.M):
        name = _PKG_ALIASES.get(m.group(1).lower().replace("_", "-")) or _PKG_ALIASES.get(m.group(1).lower())
        if name and name not in out:
            out[name] = Fact.of(m.group(2), f"{fmt} line {_line_of(text, m.start())}")
    return out


# --- sglang check_env --------------------------------------------------------------------------

#: A complete ``Key:`` of sglang check_env after its GPU lines (``CUDA_HOME:``, ``NVCC:``, ``PyTorch:``; a
#: flattened dump keeps them on one line): the GPU list above it is whole. ``GPU 2,3:`` (another GPU line) is not one.
_CHECK_ENV_NEXT_KEY = re.compile(r"(?:^|\s)(?!GPU\s*[\d,]+\s*:)[A-Za-z_][\w.()-]{1,40}(?: [A-Za-z_][\w.()-]{0,40}){0,3}:(?:\s|$)")


def _listed(n: int, source: str, end_seen: bool, cut: str) -> Fact:
    """The GPU count ``n`` read from a list: exact when the list's end was seen, else a lower bound whose
    source says why (``cut``)."""
    if end_seen:
        return Fact.of(n, source)
    return Fact.of(n, f"{source} ({cut}: {PARTIAL_GPU_LIST} {n} GPU(s))", AT_LEAST)



def parse_sglang_check_env(text: str) -> MachineFacts:
    """``python3 -m sglang.check_env`` output (multi-line or flattened into one line)."""
    fmt = "sglang-check-env"
    gpus: dict[int, GpuFacts] = {}
    name_re = re.compile(r"GPU ([\d,]+): (.+?)(?=\s+GPU [\d,]+ Compute Capability|\s+CUDA_HOME:|\n|$)")
    cc_re = re.compile(r"GPU ([\d,]+) Compute Capability: (\d+)\.(\d+)")
    names: dict[int, Fact] = {}
    ccs: dict[int, Fact] = {}
    last_end = 0
    for m in name_re.finditer(text):
        last_end = max(last_end, m.end())
        for i in m.group(1).split(","):
            if i.strip().isdigit():
                names.setdefault(int(i), Fact.of(m.group(2).strip(), f"{fmt} line {_line_of(text, m.start())}"))
    for m in cc_re.finditer(text):
        last_end = max(last_end, m.end())
        for i in m.group(1).split(","):
            if i.strip().isdigit():
                ccs.setdefault(int(i), Fact.of((int(m.group(2)), int(m.group(3))), f"{fmt} line {_line_of(text, m.start())}"))
    for i in sorted(set(names) | set(ccs)):
        name = names.get(i, Fact.absent("no GPU name line"))
        cc = ccs.get(i) or _gpu_cc(name)
        gpus[i] = GpuFacts(index=i, name=name, compute_capability=cc,
                           memory_bytes=Fact.absent("sglang check_env does not print GPU memory"))
    packages: dict[str, Fact] = {}
    for key, dist in _PKG_ALIASES.items():
        if dist == "torch":
            continue
        seen = _check_env_versions(text, key, fmt)
        if not seen:
            continue
        if len({str(f.value) for f in seen if f.present} | ({"not installed"} if any(not f.present for f in seen) else set())) > 1:
            listed = ", ".join(f"{f.value or 'not installed'} ({f.source})" for f in seen)
            packages.setdefault(dist, Fact.absent(f"conflict: the dump gives two values of '{key}': {listed}", source=fmt))
        else:
            packages.setdefault(dist, seen[0])
    torch_version = _kv(text, "PyTorch", fmt)
    if torch_version.present:
        packages["torch"] = torch_version
    nvcc = _kv(text, "NVCC", fmt, value=r"Cuda compilation tools, release (\d+\.\d+)")
    if not nvcc.present and re.search(r"NVCC: Not Available", text):
        nvcc = Fact.absent("check_env: NVCC Not Available", source=fmt)
    driver = _kv(text, "CUDA Driver Version", fmt)
    return MachineFacts(
        origin=f"env-dump:{fmt}",
        gpus=tuple(gpus[i] for i in sorted(gpus)),
        gpu_list=_listed(len(gpus), fmt, _CHECK_ENV_NEXT_KEY.search(text, last_end) is not None, "no check_env line after the GPU lines")
        if gpus else Fact.absent("the check_env dump lists no GPU"),
        driver_version=driver,
        cuda_driver_version=Fact.absent("sglang check_env does not print the CUDA version the driver supports"),
        toolkit=nvcc,
        cuda_home=_kv(text, "CUDA_HOME", fmt),
        torch_version=torch_version,
        torch_cuda=_cuda_from_torch_tag(torch_version),
        torch_arch_list=Fact.absent("sglang check_env does not print torch's arch list"),
        packages=packages,
        platform=Fact.absent("sglang check_env does not print the platform"),
    )


def _check_env_versions(text: str, key: str, fmt: str) -> list[Fact]:
    """The distinct values of check_env's ``key: version`` lines (``Module Not Found`` is a missing fact), first of each."""
    out: dict[str, Fact] = {}
    for n, km in enumerate(_key_matches(text, key, r": (.+?)(?=\s+[A-Za-z_][\w\-]*: |\n|$)")):
        if n >= MAX_KEY_LINES:
            break
        val = km.group(1).strip()
        src = f"{fmt} line {_line_of(text, km.start(1))}"
        if val.lower().startswith("module not found"):
            out.setdefault("", Fact.absent("not installed (check_env: Module Not Found)", source=src))
        else:
            out.setdefault(val.split()[0], Fact.of(val.split()[0], src))
    return list(out.values())


# --- torch / vllm collect_env -----------------------------------------------------------------


def parse_torch_collect_env(text: str, fmt: str = "torch-collect-env") -> MachineFacts:
    """``python -m torch.utils.collect_env`` (old flat or new boxed) and ``vllm collect-env``."""
    packages = _packages_from_lines(text, fmt)
    torch_version = _kv(text, "PyTorch version", fmt).or_(packages.get("torch") or Fact.absent(""))
    torch_cuda = _kv(text, "CUDA used to build PyTorch", fmt)
    if not torch_cuda.present:
        torch_cuda = torch_cuda.or_(_cuda_from_torch_tag(torch_version))
    gpus: list[GpuFacts] = []
    truncated_gpu = ""
    m = re.search(r"GPU models and configuration\s*:\s*(.*(?:\n\s*GPU \d+:.*)*)", text)
    if m:
        for g in re.finditer(r"GPU (\d{1,3}): ([^\n]+)", m.group(1)):
            end = m.start(1) + g.end()
            if end >= len(text.rstrip(" \t")) and not text.endswith("\n") and cc_from_name(g.group(2)) is None:
                truncated_gpu = f"{fmt} line {_line_of(text, end)}: 'GPU {g.group(1)}: {g.group(2).strip()}' is cut off (last line); not counted"
                continue
            name = Fact.of(g.group(2).strip(), f"{fmt} line {_line_of(text, m.start(1) + g.start())}")
            gpus.append(GpuFacts(index=int(g.group(1)), name=name, compute_capability=_gpu_cc(name),
                                 memory_bytes=Fact.absent("collect_env does not print GPU memory")))
    warn = re.search(r"with CUDA capability sm_(\d+)(\d) is not compatible", text)
    if warn and len(gpus) == 1 and not gpus[0].compute_capability.present:
        gpus[0] = GpuFacts(gpus[0].index, gpus[0].name,
                           Fact.of((int(warn.group(1)), int(warn.group(2))), f"{fmt} torch warning line {_line_of(text, warn.start())}"),
                           gpus[0].memory_bytes)
    driver = _kv(text, "Nvidia driver version", fmt)
    if torch_version.present:
        packages.setdefault("torch", torch_version)
    vllm = _kv(text, "vLLM Version", fmt)
    if vllm.present:
        packages["vllm"] = vllm
    arch_env = re.search(r"CUDA Archs:\s*([^;\n]+)", text)
    env = {}
    if arch_env and arch_env.group(1).strip() not in ("Not Set",):
        env["TORCH_CUDA_ARCH_LIST"] = arch_env.group(1).strip()
    # vllm collect-env's "Environment Variables" section prints VLLM_* variables as NAME=value (vllm/collect_env.py get_env_vars)
    for ev in re.finditer(r"^(VLLM_[A-Z0-9_]+)=(\S*)\s*$", text, re.M) if "VLLM_" in text else ():
        env.setdefault(ev.group(1), ev.group(2))
    platform = _kv(text, "Python platform", fmt, value=r"([^\n]+)")
    plat = Fact.absent("platform not shown")
    if platform.present:
        p = str(platform.value).lower()
        plat = Fact.of("wsl2" if "microsoft" in p or "wsl" in p else "windows" if p.startswith("windows") else "linux", platform.source)
    truncated_note: tuple[str, ...] = () if m else (f"{fmt}: no 'GPU models and configuration' line (dump truncated?)",)
    says = re.match(r"\s*(No CUDA|Could not collect)", m.group(1)) if m and not gpus else None
    if truncated_gpu:
        truncated_note += (truncated_gpu,)
    end_seen = m is not None and not truncated_gpu and _COLLECT_ENV_NEXT.match(text, m.end()) is not None
    return MachineFacts(
        origin=f"env-dump:{fmt}",
        gpus=tuple(gpus),
        gpu_list=_listed(len(gpus), fmt, end_seen, "no collect_env key or section after the GPU lines") if gpus else Fact.absent(
            f"{fmt} says 'GPU models and configuration: {says.group(1)}' (torch sees no GPU)" if says else
            f"the {fmt} dump lists no GPU (truncated before 'GPU models and configuration'?)"),
        driver_version=driver,
        cuda_driver_version=Fact.absent(f"{fmt} does not print the CUDA version the driver supports"),
        toolkit=_toolkit_from_runtime(_kv(text, "CUDA runtime version", fmt, value=r"([^\n]+)")),
        cuda_home=Fact.absent(f"{fmt} does not print CUDA_HOME"),
        torch_version=torch_version,
        torch_cuda=torch_cuda,
        torch_arch_list=Fact.absent(f"{fmt} does not print torch's arch list"),
        packages=packages,
        env=env,
        platform=plat,
        notes=truncated_note,
    )


#: The next line of collect_env after its ``GPU n:`` lines: a ``Key:`` (``Nvidia driver version:``) or a ``====``
#: section header. Only blank lines may come between; a ``GPU 2`` cut before its colon is not one.
_COLLECT_ENV_NEXT = re.compile(r"(?:[ \t]*\n)+[ \t]*(?!GPU\s*\d)(?:[A-Za-z][^\n:]{0,80}:|={3,})")


def _toolkit_from_runtime(f: Fact) -> Fact:
    if not f.present:
        return f
    m = re.match(r"(\d+\.\d+)", str(f.value))
    return Fact.of(m.group(1), f.source) if m else Fact.absent(f"CUDA runtime version shown as '{f.value}'", source=f.source)


def parse_vllm_collect_env(text: str) -> MachineFacts:
    """``vllm collect-env`` (the boxed torch format plus vLLM's section)."""
    return parse_torch_collect_env(text, "vllm-collect-env")


# --- flashinfer collect_env --------------------------------------------------------------------


def parse_flashinfer_collect_env(text: str) -> MachineFacts:
    """``python -m flashinfer.collect_env``: package trio, MISMATCH markers, resolved target archs."""
    fmt = "flashinfer-collect-env"
    packages: dict[str, Fact] = {}
    notes: list[str] = []
    for key, dist in (("flashinfer", "flashinfer-python"), ("flashinfer-cubin", "flashinfer-cubin"), ("flashinfer-jit-cache", "flashinfer-jit-cache")):
        m = _key_search(text, key, r"\s+: (.+)$", line_start=True)
        if m:
            val = m.group(1).strip()
            src = f"{fmt} line {_line_of(text, m.start(1))}"
            if val.lower().startswith(("not installed", "module not found")):
                packages[dist] = Fact.absent("not installed", source=src)
            else:
                packages[dist] = Fact.of(val.split()[0], src)
            if "MISMATCH" in val:
                notes.append(f"flashinfer collect_env: {key} : {val}")
    archs = re.search(r"Target CUDA archs \(resolved\)\s*: (.+)", text)
    env = {"FLASHINFER_RESOLVED_ARCHS": archs.group(1).strip()} if archs else {}
    for key, dist in (("torch", "torch"), ("triton", "triton"), ("nvidia-cudnn-frontend", "nvidia-cudnn-frontend")):
        m = _key_search(text, key, r"\s+: (\S+)", line_start=True)
        if m:
            packages.setdefault(dist, Fact.of(m.group(1), f"{fmt} line {_line_of(text, m.start(1))}"))
    gpu_section = "==== GPU / Driver ====" in text
    driver = _kv(text, "Driver", fmt)
    return MachineFacts(
        origin=f"env-dump:{fmt}",
        gpu_list=Fact.absent("the flashinfer collect_env dump shows no GPU (truncated in the GPU / Driver section)" if gpu_section else "no GPU section"),
        driver_version=driver if driver.present else Fact.absent("the flashinfer collect_env dump shows no driver version"),
        packages=packages,
        env=env,
        notes=tuple(notes),
    )


# --- nvidia-smi --------------------------------------------------------------------------------

_MIB = 1024 * 1024


def parse_nvidia_smi(text: str) -> MachineFacts:
    """The ``nvidia-smi`` box table, R5xx (``Driver Version``/``CUDA Version``) or R610+ header
    (``KMD Version``/``CUDA UMD Version``)."""
    fmt = "nvidia-smi"
    hm = re.search(r"(Driver|KMD) Version:\s*(\S+)\s+CUDA (?:UMD )?Version:\s*(\S+)", text)
    driver = Fact.of(hm.group(2), f"{fmt} header '{hm.group(1)} Version' line {_line_of(text, hm.start())}") if hm else Fact.absent("no nvidia-smi header line")
    if hm and hm.group(3).upper() != "N/A":
        cuda = Fact.of(hm.group(3), f"{fmt} header line {_line_of(text, hm.start())}")
    else:
        cuda = Fact.absent("nvidia-smi prints 'CUDA Version: N/A'" if hm else "no nvidia-smi header line", source=fmt)
    gpus: list[GpuFacts] = []
    last_row_end = first_row_start = 0
    row = re.compile(r"^\|\s+(\d{1,3})\s+(.+?)\s+(On|Off)\s+\|[^\n]*(?:\n\|[^|\n]*\|\s*(?:(\d{1,9})MiB\s*/\s*(\d{1,9})MiB|([^|\n]*?))\s*\||[^\n]*$)", re.M)
    for m in row.finditer(text):
        name = Fact.of(m.group(2).strip(), f"{fmt} line {_line_of(text, m.start())}")
        if m.group(5):
            mem = Fact.of(int(m.group(5)) * _MIB, f"{fmt} line {_line_of(text, m.start()) + 1}")
        elif m.group(4) is None and m.group(6) is None:
            mem = Fact.absent("the nvidia-smi table is cut after this GPU's name row (no memory row)")
        else:
            shown = (m.group(6) or "").strip() or "blank"
            mem = Fact.absent(f"nvidia-smi reports memory as '{shown}' (unified memory on GB10)" if "Not Supported" in shown or "N/A" in shown else f"nvidia-smi memory column: '{shown}'")
        gpus.append(GpuFacts(index=int(m.group(1)), name=name, compute_capability=_gpu_cc(name), memory_bytes=mem))
        first_row_start = first_row_start or m.start()
        last_row_end = m.end()
    truncated = not gpus or text.rstrip().endswith(("+----", "|"))
    # the rows are the whole table only between its column header (or banner) and its Processes block: a paste that lost
    # its top lines may have lost the first GPUs' rows too
    partial = bool(gpus) and not (_SMI_TABLE_START.search(text, 0, first_row_start) and _smi_table_end_seen(text, last_row_end))
    return MachineFacts(
        origin=f"env-dump:{fmt}",
        gpus=tuple(gpus),
        gpu_list=(Fact.of(len(gpus), f"{fmt} (table cut: {PARTIAL_GPU_LIST} {len(gpus)} GPU row(s))", AT_LEAST) if partial else Fact.of(len(gpus), fmt))
        if gpus else Fact.absent("the nvidia-smi dump lists no GPU row"),
        driver_version=driver,
        cuda_driver_version=cuda,
        notes=(f"{fmt}: the table may be truncated; {len(gpus)} GPU row(s) read",) if truncated and gpus else (),
    )


_SMI_TABLE_START = re.compile(r"NVIDIA-SMI \d|Persistence-M")


def _smi_table_end_seen(text: str, after: int) -> bool:
    """Whether the nvidia-smi GPU table is seen to end after offset ``after`` (the last GPU row read): nvidia-smi
    always prints its ``Processes:`` block after the GPU table, so that block is the end. A closing border alone
    is not: it is also the border between two GPUs of a table cut there, followed perhaps by the rest of a
    bug report; the list is then a lower bound."""
    return text.find("Processes:", after) != -1


_SMI_Q_BLOCK = re.compile(r"^GPU [0-9A-Fa-f]{8}:", re.M)
_SMI_Q_FB = re.compile(r"FB Memory Usage\s*\n\s*Total\s+: (\d{1,9}) MiB")
_SMI_Q_UUID = re.compile(r"^[ \t]*GPU UUID[ \t]+: (GPU-[0-9A-Fa-f-]{1,64})[ \t]*$", re.M)


def parse_nvidia_smi_q(text: str) -> MachineFacts:
    """``nvidia-smi -q`` (``Key : value`` blocks per GPU)."""
    fmt = "nvidia-smi-q"
    driver = _kv(text, "Driver Version", fmt).or_(_kv(text, "KMD Version", fmt))
    cuda = _kv(text, "CUDA Version", fmt, value=r"(\d+\.\d+)").or_(_kv(text, "CUDA UMD Version", fmt, value=r"(\d+\.\d+)"))
    gpus = []
    for i, m in enumerate(re.finditer(r"^\s*Product Name\s+: (.+)$", text, re.M)):
        name = Fact.of(m.group(1).strip(), f"{fmt} line {_line_of(text, m.start(1))}")
        nxt = _SMI_Q_BLOCK.search(text, m.end())
        fb = _SMI_Q_FB.search(text, m.end(), nxt.start() if nxt else len(text))
        mem = Fact.of(int(fb.group(1)) * _MIB, f"{fmt} FB Memory Usage") if fb else Fact.absent("no 'FB Memory Usage / Total' in nvidia-smi -q")
        um = _SMI_Q_UUID.search(text, m.end(), nxt.start() if nxt else len(text))
        uuid = Fact.of(um.group(1), f"{fmt} GPU UUID") if um else Fact.absent("no 'GPU UUID' in this nvidia-smi -q block", fmt)
        gpus.append(GpuFacts(index=i, name=name, compute_capability=_gpu_cc(name), memory_bytes=mem, uuid=uuid))
    attached = re.search(r"^Attached GPUs\s+: (\d{1,4})\s*$", text, re.M)
    return MachineFacts(origin=f"env-dump:{fmt}", gpus=tuple(gpus),
                        gpu_list=_listed(len(gpus), fmt, attached is not None and int(attached.group(1)) == len(gpus),
                                         f"'Attached GPUs : {attached.group(1)}'" if attached else "no 'Attached GPUs' line")
                        if gpus else Fact.absent("nvidia-smi -q lists no Product Name"),
                        driver_version=driver, cuda_driver_version=cuda)


def parse_nvidia_smi_csv(text: str, *, source: str = "nvidia-smi-csv", complete: bool = False) -> MachineFacts:
    """``nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]``: one row per GPU.

    With its header the columns are read by name, in any order and subset (NVIDIA's field names: ``index``, ``name``,
    ``compute_cap``, ``driver_version``, ``memory.total``, ``uuid``, ``pci.bus_id``; others are skipped); a listing whose
    header is there and whose last row is whole (every column, a line end after it) is every GPU (exact count), else a
    lower bound. Without a header (``noheader``) only rows of mtp-audit's own query are read (``index, name,
    compute_cap, driver_version, memory.total[, uuid]``, the index first) and the count is a lower bound.

    ``complete``: ``text`` is the whole output of the command (a live run), so its rows are every GPU."""
    head = _csv_header(text)
    if head is None:
        fields, units, start, has_header = ["index", "name", "compute_cap", "driver_version", "memory.total", "uuid"], [""] * 6, 0, False
    else:
        (start, fields, units), has_header = head, True
    gpus: list[GpuFacts] = []
    driver = Fact.absent("no GPU rows in the nvidia-smi CSV" if "driver_version" in fields else "the nvidia-smi CSV has no driver_version column", source)
    notes: list[str] = []
    lines = text[start:].split("\n")[1:] if has_header else text.split("\n")
    first_line = _line_of(text, start) + 1 if has_header else 1
    whole = has_header
    for k, line in enumerate(lines):
        cols = [c.strip() for c in line.split(",")]
        if not has_header:
            if len(cols) < 5 or not cols[0].isdigit():
                continue
        elif len(cols) != len(fields) or not line.strip():
            whole = whole and len(cols) == 1  # a row with some of its columns: cut short
            break
        row = dict(zip(fields, cols))
        where = f"{source} line {first_line + k}"
        if has_header and k == len(lines) - 1:
            whole = False  # the last row has no line end after it: it may be cut
            if cc_from_name(row.get("name", "")) is None:
                notes.append(f"{where}: '{line.strip()[:60]}' may be cut off (last line, no line end) and names no known GPU; not counted")
                break
        gpus.append(_csv_gpu(row, units[fields.index("memory.total")] if "memory.total" in fields else "", len(gpus), where, source))
        drv = row.get("driver_version", "")
        if not driver.present and re.fullmatch(r"\d{2,4}(?:\.\d{1,4}){1,3}", drv):
            driver = Fact.of(drv, where)
    ended = complete or (has_header and whole)
    return MachineFacts(origin=f"env-dump:{source}", gpus=tuple(gpus),
                        gpu_list=_listed(len(gpus), source, ended, "a pasted CSV without its header line shows no start" if not has_header
                                         else "the CSV's last row is cut") if gpus
                        else Fact.absent("no GPU rows in the nvidia-smi CSV"),
                        driver_version=driver,
                        cuda_driver_version=Fact.absent("nvidia-smi --query-gpu does not print the CUDA version"), notes=tuple(notes))


def _csv_gpu(row: dict[str, str], mem_unit: str, n: int, where: str, source: str) -> GpuFacts:
    """One GPU of an nvidia-smi CSV row (field name -> cell); ``n``: its position when the row has no ``index``."""
    name = row.get("name", "")
    cc_m = re.fullmatch(r"(\d{1,2})\.(\d)", row.get("compute_cap", ""))
    mem = row.get("memory.total", "")
    mem_m = re.fullmatch(r"(\d{1,9})\s*MiB", mem) or (re.fullmatch(r"(\d{1,9})", mem) if mem_unit == "MiB" else None)
    name_fact = Fact.of(name, where) if name and not name.startswith("[") else Fact.absent(f"the nvidia-smi CSV row shows no name ({name or 'no name column'})", where)
    cc = (Fact.of((int(cc_m.group(1)), int(cc_m.group(2))), where) if cc_m
          else _gpu_cc(name_fact) if name_fact.present else Fact.absent("the nvidia-smi CSV shows neither compute_cap nor a name", where))
    uuid = row.get("uuid", "")
    return GpuFacts(
        index=int(row["index"]) if row.get("index", "").isdigit() else n,
        name=name_fact,
        compute_capability=cc,
        memory_bytes=(Fact.of(int(mem_m.group(1)) * _MIB, where) if mem_m
                      else Fact.absent(f"nvidia-smi reports memory.total as '{mem}'" if "memory.total" in row else "the nvidia-smi CSV has no memory.total column")),
        uuid=Fact.of(uuid, where) if uuid.upper().startswith("GPU-") else Fact.absent("the nvidia-smi CSV has no uuid column", source),
    )


_PARSERS = {
    "sglang-check-env": parse_sglang_check_env,
    "torch-collect-env": parse_torch_collect_env,
    "vllm-collect-env": parse_vllm_collect_env,
    "flashinfer-collect-env": parse_flashinfer_collect_env,
    "nvidia-smi": parse_nvidia_smi,
    "nvidia-smi-q": parse_nvidia_smi_q,
    "nvidia-smi-csv": parse_nvidia_smi_csv,
    **vendor_dumps.PARSERS,
    piplist.FORMAT: piplist.parse_pip_list,
}

assert set(_PARSERS) == set(FORMATS)
assert set(_PKG_ALIASES.values()) <= set(PACKAGES)
