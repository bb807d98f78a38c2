"""The environment people write by hand in bug reports: Markdown bullets and tables, prose, container
tags and package lines. Samples: ``fixtures/preflight/envdumps/freeform/`` (SOURCE.txt
names the public report of each).

Read line by line (linear in the text), each fact with its provenance ``"free-form line N (...)"``:

- GPUs: hand-written text is not a device listing. Every product it names, wherever it stands (alone, in prose,
  after a key), is evidence that such a GPU is in question; the short names that are also ordinary tokens (one letter
  and one or two digits: ``A2``, ``T4``, ``L40``) only in a GPU context (a GPU key, the word GPU, ``NVIDIA``, a count
  or an SM written). Two different products named (``GPU: 8x B200, previously 8x H100``) do not say which the machine
  has together: the GPU list is then a conflict (missing, both named), never a mixed machine; English
  ("previously", "cancelled") is not parsed. Read from: a line whose key names the hardware (``- GPU: 8x NVIDIA RTX
  PRO 6000 Blackwell Server Edition, SM120``, ``| GPU | NVIDIA GB10 (SM 12.1) |``, ``Hardware: 8x NVIDIA B300 SXM6
  AC (SM103, 267.7 GiB)``), ``GPU 0: <name>`` lines (a device listing), torch's ``Found GPU0 <name> which is of cuda
  capability X.Y`` wherever it sits (one too), or prose (``2x DGX Spark``, ``8xH100``, ``H20x4``, ``4×L40S``,
  ``8-way B200``, ``8 cards MI300X``, ``we rent an H200 box``) or inside a system token (``dgx-b300``). The
  compute capability is the one written (``SM120``, ``sm_121a``, ``SM 12.1``, ``compute capability 7.0``,
  ``compute_cap 12.1``) or else the product table (:mod:`mtp_audit.preflight.gpus`); when both are
  there and disagree the fact is missing with both values (a conflict, shown). Memory only in GiB/MiB
  (``GB`` does not say which). The count is the one written (``8x``, ``x8``, ``8 GPUs``): then the GPU count
  is exact. A GPU line without one is read as one GPU and the count is only a lower bound (``gpu_list.extent``
  ``"at least"``; the source says the count was not written); so are ``GPU N:`` lines, whose list has no end.
- Driver (``Driver: 595.58.03``, ``driver 580.159.03``), the driver's CUDA (``CUDA Version: 12.8`` as
  nvidia-smi prints it, ``Host CUDA: 13.0``), the toolkit (``nvcc 12.9``, ``CUDA toolkit 13.0``);
  a bare ``CUDA 13.0`` does not say which CUDA it is and is kept as a note only.
- Package versions: ``sglang-kernel 0.4.4+cu130``, ``torch==2.12.1+cu130``, ``FlashInfer 0.6.17 commit:``,
  ``SGLang v0.5.12``, ``vLLM 0.20.0``, ``PyTorch 2.11``; a requirement (``requires vLLM 0.12.0+``,
  ``>=0.5``) is not a version. Container tags: ``lmsysorg/sglang:v0.5.12-cu130`` (SGLang version and the
  image's CUDA build), ``vllm/vllm-openai:v0.12.0`` (vLLM version).
- Engine: ``sglang`` or ``vllm`` from the versions, images and launch commands mentioned
  (``python -m sglang.launch_server``, ``vllm serve``); both mentioned is no answer.

Never invented: the last line of a text that does not end in a newline may be cut off, and a GPU read
from it whose name is not a complete product name (``GPU 3: NVIDIA H``) is dropped with a note. Two
different values of one fact in one text (three vLLM images tried in one report) are a conflict: the
fact is missing, its reason lists the values and lines, and a note says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mtp_audit.known import AT_LEAST, EXACT
from mtp_audit.preflight import freeform_vendors as vendors
from mtp_audit.preflight import gpus as gputable
from mtp_audit.preflight.facts import Fact, GpuFacts, MachineFacts, same_value
from mtp_audit.preflight.freeform_vendors import unglue

FMT = "free-form"

_MD_PREFIX = re.compile(r"^(?:[>#]+\s*|[-*+•]\s+|\d{1,3}[.)]\s+|\[[ xX]\]\s+)+")
_TABLE_SEP = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$")
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9 _./()+-]{0,40}?)\s*(?:[:：]|\s=\s|\s-\s|\s—\s)\s*(.*)$")
_GPU_KEYS = re.compile(r"^(?:gpus?|gpu\s*\(s\)|gpu\s*(?:model|type|name|models?)|hardware|hw|devices?|accelerators?|graphics(?: card)?|card|"
                       r"machine|node|system|platform|instance|server|box)\b", re.I)
_GPU_PROPER = re.compile(r"^(?:gpus?|gpu\s*\(s\)|gpu\s*(?:model|type|name|models?)|graphics(?: card)?|card|accelerators?)\b", re.I)
_NOT_GPU_KEYS = re.compile(r"^(?:os|cpu|l\d\w*\s*cache|model|python|image|docker|command|cmd|kernel|libc|gcc|clang|cmake|ram|memory)\b", re.I)
_GPUISH = re.compile(r"nvidia|geforce|rtx|tesla|quadro|jetson|dgx|hgx|gpu|grace|spark|thor|orin|"
                     r"(?<![a-z0-9])(?:[abhlvt]|gh|gb)\s?\d|sm[_ ]?\d", re.I)
#: A product glued to a count or a host name (``8xH100``, ``root@b200-node``): what _GPUISH's word boundary misses.
_GLUED = re.compile(r"\d\s*[x×*]\s*(?:[abhlvt]|gh|gb)\s?\d|@[\w.-]*?(?:[abhlvt]|gh|gb)\d", re.I)
_INDEXED_GPU = re.compile(r"^GPU\s+(\d{1,3})\s*:\s*(.+?)\s*(?:\(UUID:.*)?$")
_SM3 = re.compile(r"(?<![a-z0-9])sm[_ ]?(\d{2,3})[af]?(?![0-9.])", re.I)
_SMDOT = re.compile(r"(?<![a-z0-9])sm[_ ]?(\d{1,2})\.(\d)(?!\d)", re.I)
_CCDOT = re.compile(r"(?:compute[ _]cap(?:ability)?|(?<![a-z])cc)\s*[:=]?\s*(\d{1,2})\.(\d)(?!\d)", re.I)
_MEM = re.compile(r"(?<![\d.])(\d{1,4}(?:\.\d{1,2})?)\s*(GiB|MiB|GB|TB)(?![a-z])", re.I)
_COUNT_BEFORE = re.compile(r"(?<![\d.])(\d{1,3})\s*(?:[x×*]|-way|\s+cards?|\s*-?gpus?)\s*(?:(?:nvidia|geforce)\s+)?$", re.I)
#: torch's warning for a GPU outside its build's range, and any line of that shape (torch/cuda/__init__.py):
#: ``Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.`` -- a GPU, its index and its compute capability.
_FOUND_GPU = re.compile(r"Found GPU\s?(\d{1,3}) (.{1,80}?) which is of cuda capability (\d{1,2})\.(\d)(?!\d)")
#: A DGX / HGX system named in a host or product token (``dgx-b300``, ``hgx_h100``): the line is about the machine.
_SYSTEM = re.compile(r"(?<![a-z0-9])[dh]gx[-_ ]?(?:[abhlvt]|gh|gb)\d", re.I)
_COUNT_AFTER = re.compile(r"^\s*(?:[x×*]\s*(\d{1,3})(?!\d)|\((\d{1,3})\)|,?\s*(\d{1,3})\s*gpus?\b)", re.I)
#: A table alias that is also an ordinary token (one letter and one or two digits: A2, T4, L40, H20; GB10 and L40S are not):
#: read as a GPU only in a GPU context (a GPU key, the word GPU, NVIDIA, a count, an SM written).
_SHORT_ALIAS = re.compile(r"[a-z]\d{1,2}", re.I)
_COUNT_GPUS = re.compile(r"(?<![\d.])(\d{1,3})\s*(?:x\s*)?gpus\b", re.I)
_DRIVER = re.compile(r"(?<![a-z])(?:(?:nvidia |cuda |kmd )?driver(?: version)?|kmd version)\s*[:=]?\s*v?(\d{3}\.\d{1,3}(?:\.\d{1,3})?)(?![\d.])", re.I)
_CUDA_DRIVER = re.compile(r"(?:host cuda|cuda (?:umd )?version|driver cuda|cuda driver(?: api)?)(?: version)?\s*[:=]?\s*(\d{1,2}\.\d{1,2})(?![\d.])", re.I)
_TOOLKIT = re.compile(r"(?:cuda toolkit|nvcc|cuda compilation tools, release|cuda_home[^\n]*?cuda-)\s*[:=]?\s*(?:version\s*)?v?(\d{1,2}\.\d{1,2})(?![\d])", re.I)
_CUDA_BARE = re.compile(r"(?<![a-z_-])cuda\s*[:=]?\s*v?(\d{1,2}\.\d{1,2})(?![\d])", re.I)
_VERSION = r"v?(\d{1,4}(?:\.\d{1,6}){1,3}(?:(?:\.?(?:post|dev|rc|a|b)\d{0,9})*(?:\+[a-z0-9.]{1,40})?)?\+?)"
_PKG = re.compile(r"(?<![\w./-])(sglang[-_]kernel|sgl[-_]kernel|sglang|flashinfer[-_]jit[-_]cache|flashinfer[-_]cubin|flashinfer[-_]python|flashinfer|"
                  r"vllm|pytorch|torch|triton|nvidia[-_]cudnn[-_]cu1[23]|nvidia[-_]cudnn[-_]frontend|nvidia[-_]cutlass[-_]dsl)"
                  r"(?![\w-]|\.[a-z])\s*(?:==|=|:|\s+version\s*[:=]?|\s)\s*" + _VERSION + r"(?![\w.])", re.I | re.A)
_PKG_NAMES = {"sglang": "sglang", "sglang-kernel": "sglang-kernel", "sgl-kernel": "sgl-kernel", "flashinfer": "flashinfer-python",
              "flashinfer-python": "flashinfer-python", "flashinfer-cubin": "flashinfer-cubin", "flashinfer-jit-cache": "flashinfer-jit-cache",
              "vllm": "vllm", "torch": "torch", "pytorch": "torch", "triton": "triton", "nvidia-cudnn-cu12": "nvidia-cudnn-cu12",
              "nvidia-cudnn-cu13": "nvidia-cudnn-cu13", "nvidia-cudnn-frontend": "nvidia-cudnn-frontend", "nvidia-cutlass-dsl": "nvidia-cutlass-dsl"}
_IMAGE = re.compile(r"(?<![\w/.-])((?:docker\.io/)?(?:lmsysorg/sglang|vllm/vllm-openai)):([A-Za-z0-9][\w.\-]{0,80})")
_TAG_VERSION = re.compile(r"^v?(\d{1,4}\.\d{1,4}\.\d{1,4}(?:\.post\d{1,4}|rc\d{1,4}|\.dev\d{1,9})?)(?![\d])")
_TAG_CUDA = re.compile(r"(?:^|-)cu(\d{2})(\d)?(?![\d])")
_ENGINE = {
    "sglang": re.compile(r"sglang\.launch_server|(?<![\w-])sglang serve|lmsysorg/sglang|(?<![\w./-])sglang(?![\w-]|\.[a-z])", re.I),
    "vllm": re.compile(r"(?<![\w-])vllm serve|vllm\.entrypoints|vllm/vllm-openai|nvcr\.io/nvidia/vllm|(?<![\w./-])vllm(?![\w-]|\.[a-z])", re.I),
}
#: Lower-case substrings one of which every :data:`_PKG` match contains: a line without any skips that regex.
_PKG_HINTS = ("sgl", "flashinfer", "vllm", "torch", "triton", "cudnn", "cutlass")
_NOT_INSTALLED = re.compile(r"module not found|not installed|n/a\b", re.I)
_MIB = 1024 * 1024

#: Free-form reading looks at the first this many lines (hand-written environment sections are short;
#: a 64 MiB paste is a tool dump, whose parsers read it whole). Lines over 8 KiB are skipped.
MAX_LINES = 20_000


@dataclass
class _Seen:
    """All values read for one scalar fact: value -> first line."""

    label: str
    values: dict[str, tuple[int, str]] = field(default_factory=dict)

    def add(self, value: str, line: int, how: str) -> None:
        self.values.setdefault(value, (line, how))

    def fact(self, notes: list[str]) -> Fact:
        if not self.values:
            return Fact.absent(f"the free-form text shows no {self.label}")
        # one value spelt two ways ('2.9.1' and '2.9.1+cu128') is one value: the more specific spelling, first line
        kept: dict[str, tuple[int, str]] = {}
        for v, seen in sorted(self.values.items(), key=lambda kv: kv[1][0]):
            same = next((k for k in kept if same_value(k, v)), None)
            if same is None:
                kept[v] = seen
            elif len(v) > len(same):
                kept[v] = kept.pop(same)
        if len(kept) == 1:
            (v, (ln, how)), = kept.items()
            return Fact.of(v, f"{FMT} line {ln} ({how})")
        listed = ", ".join(f"{v} (line {ln})" for v, (ln, _) in sorted(kept.items(), key=lambda kv: kv[1][0]))
        notes.append(f"conflict: the free-form text gives {len(kept)} values of {self.label}: {listed}; not used")
        return Fact.absent(f"conflict: {listed}", source=FMT)


@dataclass
class _Group:
    name: str
    cc: Fact
    mem: Fact
    count: int | None
    line: int
    key: str
    arch: Fact = field(default_factory=lambda: Fact.absent("not observed"))
    how: str = ""


def _cc_written(text: str) -> tuple[tuple[int, int], str] | None:
    found: dict[tuple[int, int], str] = {}
    for m in _SMDOT.finditer(text):
        found.setdefault((int(m.group(1)), int(m.group(2))), m.group(0))
    for m in _CCDOT.finditer(text):
        found.setdefault((int(m.group(1)), int(m.group(2))), m.group(0))
    for m in _SM3.finditer(text):
        d = m.group(1)
        found.setdefault((int(d[:-1]), int(d[-1])), m.group(0))
    if len(found) != 1:
        return None  # none, or several different ones on one line: not attributable
    (cc, how), = found.items()
    return cc, how


def _mem(text: str) -> Fact:
    m = _MEM.search(text)
    if not m:
        return Fact.absent("free-form text shows no GPU memory")
    n, unit = float(m.group(1)), m.group(2)
    if unit.lower() == "gib":
        return Fact.of(int(n * 1024 * _MIB), f"'{m.group(0)}'")
    if unit.lower() == "mib":
        return Fact.of(int(n * _MIB), f"'{m.group(0)}'")
    return Fact.absent(f"written as '{m.group(0)}' (GB or GiB is not said)")


def _clean(raw: str) -> tuple[str, str, str]:
    """(cleaned line, key, value); key is '' for prose."""
    s = raw.strip().replace("**", "").replace("__", "").replace("`", "")
    if s.startswith("|") or (s.count("|") >= 2 and not s.startswith("+")):
        if _TABLE_SEP.match(s):
            return "", "", ""
        cells = [c.strip() for c in s.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0] and not cells[0][0].isdigit():
            return " ".join(cells), cells[0], cells[1]
        return " ".join(cells), "", ""
    s = _MD_PREFIX.sub("", s)
    m = _KEY.match(s)
    if m and not re.search(r"[=<>]$", m.group(1)):
        return s, m.group(1).strip(), m.group(2).strip()
    return s, "", ""


@dataclass
class _State:
    """What :func:`parse_freeform` has read so far (one per text)."""

    notes: list[str] = field(default_factory=list)
    driver: _Seen = field(default_factory=lambda: _Seen("driver version"))
    cuda_drv: _Seen = field(default_factory=lambda: _Seen("driver CUDA version"))
    toolkit: _Seen = field(default_factory=lambda: _Seen("CUDA toolkit version"))
    torch_cuda: _Seen = field(default_factory=lambda: _Seen("torch/image CUDA build"))
    pkgs: dict[str, _Seen] = field(default_factory=dict)
    engines: dict[str, tuple[int, str]] = field(default_factory=dict)
    groups: list[_Group] = field(default_factory=list)
    indexed: dict[int, GpuFacts] = field(default_factory=dict)
    bare_cuda: list[str] = field(default_factory=list)
    #: AMD / Ascend sightings (:mod:`mtp_audit.preflight.freeform_vendors`): ROCm and CANN versions, the platform.
    vendor: dict[str, _Seen] = field(default_factory=lambda: {"rocm": _Seen("ROCm version"), "cann": _Seen("CANN version"),
                                                              "platform": _Seen("platform")})

    #: Character spans of the current line an AMD / Ascend device name took (the NVIDIA reader skips them).
    claimed: list[tuple[int, int]] = field(default_factory=list)
    #: ROCm / Ascend switches the text exports (``export VLLM_ROCM_USE_AITER=1``).
    env: dict[str, str] = field(default_factory=dict)

    def pkg(self, name: str) -> _Seen:
        """The sightings of package ``name``'s version."""
        return self.pkgs.setdefault(name, _Seen(f"{name} version"))


def parse_freeform(text: str) -> MachineFacts:
    """Read every fact the free-form text states (see the module docstring).

    Returns a :class:`MachineFacts` with ``origin="env-dump:free-form"``; facts not stated are missing
    with a reason. Never raises on content (the caller decides whether anything was found, see
    :func:`found_anything`).
    """
    lines = text.split("\n")
    cut_last = not text.endswith("\n")
    st = _State()
    last = len(lines)
    if len(lines) > MAX_LINES:
        st.notes.append(f"free-form reading stopped after line {MAX_LINES} of {len(lines)} (bound); tool-dump formats were read whole")
        lines = lines[:MAX_LINES]
    for ln, raw in enumerate(lines, 1):
        if not raw.strip() or len(raw) > 8192:
            continue
        line, key, value = _clean(raw)
        if not line:
            continue
        low = line.lower()
        whole = _whole_tokens(line) if cut_last and ln == last else line  # a version cut mid-way reads as another one
        _read_cuda_versions(st, ln, whole, whole.lower())
        _read_packages(st, ln, whole, whole.lower())
        _read_images(st, ln, whole, whole.lower())
        if not _NOT_INSTALLED.search(value or ""):
            for eng, rx in _ENGINE.items():
                em = rx.search(line) if eng in low else None
                if em and eng not in st.engines:
                    st.engines[eng] = (ln, em.group(0))
        not_gpu_key = bool(key) and bool(_NOT_GPU_KEYS.match(key))
        st.claimed.clear()
        vendors.read_line(st, ln, line, key, value, cut_last and ln == last, _count, _vendor_group, devices=not not_gpu_key)
        if not_gpu_key or not (_GPUISH.search(line) or _GLUED.search(line)):
            continue
        _read_gpu_line(st, ln, line, low, key, value, cut_last and ln == last)
    gpus_out, gpu_list = _assemble_gpus(st)
    return _machine(st, text, gpus_out, gpu_list)


def _whole_tokens(line: str) -> str:
    """The last line of a text that does not end in a newline without its final token, which may be cut off
    (``torch 2.11.0+cu13`` of ``+cu130`` reads as CUDA 1.3): only what is followed by a separator is read."""
    cut = max(line.rfind(c) for c in " \t,;|()[]")  # linear: no regex anchored at the end of a long line
    return line[:cut + 1]


def _read_cuda_versions(st: _State, ln: int, line: str, low: str) -> None:
    """Driver, driver CUDA, toolkit and bare CUDA versions of one line."""
    has_cuda = "cuda" in low
    for m in (_DRIVER.finditer(line) if ("driver" in low or "kmd" in low) else ()):
        st.driver.add(m.group(1), ln, f"'{m.group(0).strip()}'")
    for m in (_CUDA_DRIVER.finditer(line) if has_cuda else ()):
        st.cuda_drv.add(m.group(1), ln, f"'{m.group(0).strip()}'")
    for m in (_TOOLKIT.finditer(line) if (has_cuda or "nvcc" in low) else ()):
        st.toolkit.add(m.group(1), ln, f"'{m.group(0).strip()}'")
    if has_cuda and not _CUDA_DRIVER.search(line) and not _TOOLKIT.search(line):
        for m in _CUDA_BARE.finditer(line):
            if "cu1" not in line[m.start():m.end()].lower():
                st.bare_cuda.append(f"line {ln}: '{m.group(0).strip()}'")


def _read_packages(st: _State, ln: int, line: str, low: str) -> None:
    """Package versions of one line (a requirement or a change is not a version); torch's +cu tag."""
    for m in (_PKG.finditer(line) if any(k in low for k in _PKG_HINTS) else ()):
        name = _PKG_NAMES[m.group(1).lower().replace("_", "-")]
        ver = m.group(2).rstrip(".")  # a version that ends a sentence
        before = low[max(0, m.start() - 14):m.start()]
        if ver.endswith("+") or re.search(r"requir|need|>=|<|than|at least|upgrade to|from|used to build|built", before):
            continue  # a requirement, a change, or what a package was built with (collect_env's "CUDA used to build
            # PyTorch : 13.2"), not the installed version
        st.pkgs.setdefault(name, _Seen(f"{name} version")).add(ver, ln, f"'{m.group(0).strip()}'")
        if name == "torch":
            t = re.search(r"\+cu(\d{1,2})(\d)(?![\d])", ver)
            if t:
                st.torch_cuda.add(f"{int(t.group(1))}.{t.group(2)}", ln, f"torch {ver} (+cu tag)")


def _read_images(st: _State, ln: int, line: str, low: str) -> None:
    """Engine container tags of one line: the engine version and the image's CUDA build."""
    for m in (_IMAGE.finditer(line) if ("lmsysorg/" in low or "vllm-openai" in low) else ()):
        repo, tag = m.group(1), m.group(2)
        eng = "sglang" if "sglang" in repo else "vllm"
        tv = _TAG_VERSION.match(tag)
        if tv:
            st.pkgs.setdefault(eng, _Seen(f"{eng} version")).add(tv.group(1), ln, f"container tag {repo}:{tag}")
        else:
            st.notes.append(f"free-form line {ln}: container tag {repo}:{tag} names no {eng} version")
        tc = _TAG_CUDA.search(tag)
        if tc and tc.group(2) is not None and eng == "sglang":
            st.torch_cuda.add(f"{int(tc.group(1))}.{tc.group(2)}", ln, f"container tag {repo}:{tag} (image built for CUDA {int(tc.group(1))}.{tc.group(2)})")
        elif tc:
            st.notes.append(f"free-form line {ln}: container tag {repo}:{tag} says CUDA {int(tc.group(1))} (major only)")


def _cut_note(st: _State, ln: int, line: str) -> None:
    st.notes.append(f"free-form line {ln}: '{line[:60]}' may be cut off (last line, no newline) and names no known GPU; not counted")


#: An environment list, not running text: the line opens with the GPU (after a bullet, a count, the vendor or a system
#: name) and goes on with comma-separated stack items ("NVIDIA GeForce RTX 5090, CUDA 12.8, vllm 0.11.0",
#: "DGX Spark (GB10), CUDA 13.0", "RTX PRO 6000 Blackwell, driver 580.65, torch 2.9.1"), so the product is the machine's.
_ENV_ITEMS = re.compile(r",\s*(?:cuda|driver|torch|pytorch|vllm|sglang|nvcc|rocm)\b", re.I)
_LINE_OPENING = re.compile(r"\s*(?:[-*\u2022]\s*)?(?:\d+\s*[x\u00d7*]\s*)?(?:nvidia\s+)?(?:geforce\s+)?(?:dgx\s+spark\s*\(\s*)?", re.I)


def _env_list_line(scope: str, first_hit: int) -> bool:
    """Whether ``scope`` is an environment list whose first product (at ``first_hit``) opens the line."""
    return _ENV_ITEMS.search(scope) is not None and _LINE_OPENING.fullmatch(scope[:first_hit]) is not None


def _read_gpu_line(st: _State, ln: int, line: str, low: str, key: str, value: str, truncated_line: bool) -> None:
    """The GPUs one line names: torch's ``Found GPU<i> <name> which is of cuda capability X.Y``, a ``GPU N:`` line,
    a GPU key's value, or products in prose."""
    if _read_found_gpus(st, ln, line):
        return
    im = _INDEXED_GPU.match(line)
    if im:
        name = im.group(2).strip()
        hit = gputable.lookup(name)
        w = _cc_written(name)
        if truncated_line and hit is None and w is None:
            _cut_note(st, ln, line)
            return
        idx = int(im.group(1))
        st.indexed.setdefault(idx, GpuFacts(index=idx, name=Fact.of(name, f"{FMT} line {ln}"),
                                            compute_capability=_gpu_cc(name, hit, w, ln, st.notes),
                                            memory_bytes=_mem_fact(name, ln)))
        return
    gpu_key = bool(key) and bool(_GPU_KEYS.match(key))
    scope = value if gpu_key else line
    off = line.rfind(scope) if gpu_key else 0
    hits = [h for h in gputable.find_all(unglue(scope)) if not any(s < off + h.end and off + h.start < e for s, e in st.claimed)]
    written = _cc_written(scope)
    if not hits:
        if gpu_key and value and (written or re.search(r"nvidia|geforce|tesla|quadro|rtx", value, re.I)):
            if truncated_line and written is None:
                _cut_note(st, ln, line)
                return
            name = re.split(r"\s*[,(;]\s*", _strip_count(value), maxsplit=1)[0].strip()
            st.groups.append(_Group(name, _gpu_cc(name, None, written, ln, st.notes), _mem_fact(value, ln), _count(value, 0, 0), ln, key))
        return
    context = (gpu_key or written is not None or re.search(r"\bgpus?\b|nvidia|hardware|device", low) is not None or "@" in scope
               or _SYSTEM.search(scope) is not None or _env_list_line(scope, hits[0].start))
    for h in hits:
        c = _count(scope, h.start, h.end)
        if not (context or c is not None) and _SHORT_ALIAS.fullmatch(h.alias):
            continue  # 'step A2', 'T4 tier': a short name that is also an ordinary token needs a GPU context
        name = ""
        if gpu_key and len(hits) == 1:
            name = re.split(r"\s*[,(;]\s*|\s+-\s+", _strip_count(value), maxsplit=1)[0].strip()
            name = re.sub(r"\s+gpus?$|(?<=\d)\s*[x×*]\s*\d{1,3}$", "", name, flags=re.I) or scope[h.start:h.end]
            if scope[h.start:h.end].lower() not in name.lower():
                name = ""  # the value opens with another product ("8x MI300X, previously H100"): this one is named where it stands
        if not name:
            pre = re.search(r"(?:nvidia\s+(?:geforce\s+)?)$", scope[:h.start], re.I)
            name = scope[pre.start() if pre else h.start:h.end]
        cc = _gpu_cc(name, h, written if len(hits) == 1 else None, ln, st.notes)
        st.groups.append(_Group(name, cc, _mem_fact(scope, ln) if len(hits) == 1 else Fact.absent("not attributable"), c, ln, key))


def _read_found_gpus(st: _State, ln: int, line: str) -> bool:
    """torch's ``Found GPU<i> <name> which is of cuda capability X.Y`` (torch/cuda/__init__.py, wherever it sits in
    the line): an indexed GPU with the compute capability written. Whether any was read."""
    found = False
    for m in _FOUND_GPU.finditer(line) if "Found GPU" in line else ():
        idx, name = int(m.group(1)), m.group(2).strip()
        written = ((int(m.group(3)), int(m.group(4))), f"cuda capability {m.group(3)}.{m.group(4)}")
        st.indexed.setdefault(idx, GpuFacts(index=idx, name=Fact.of(name, f"{FMT} line {ln} (torch 'Found GPU{idx}')"),
                                            compute_capability=_gpu_cc(name, gputable.lookup(name), written, ln, st.notes),
                                            memory_bytes=Fact.absent("torch's warning does not give memory")))
        found = True
    return found


def _assemble_gpus(st: _State) -> tuple[tuple[GpuFacts, ...], Fact]:
    """The GPU list: ``GPU N:`` lines when there are any, else the named groups (merged, counted)."""
    if st.indexed:
        gpus_out = tuple(st.indexed[i] for i in sorted(st.indexed))
        # the lines of one GPU each, with no end of the list in sight: a lower bound
        return gpus_out, Fact.of(len(gpus_out), f"{FMT}: 'GPU N:' lines (no end of the list: at least {len(gpus_out)})", AT_LEAST)
    merged = _merge_groups(_prefer_gpu_lines(st.groups, st.notes), st.notes)
    # Hand-written text is not a device listing: several different products named in it ("GPU: 8x B200, previously
    # 8x H100", "my friend has an RTX 5090 and a GB10") do not say which of them this machine has together. Reading
    # them as one mixed machine would invent facts (and an MTP202 error); English is not parsed for "previously" or
    # "cancelled". They become a conflict: "could not tell" which GPUs the machine has. A mixed machine is told by a
    # device listing (nvidia-smi, 'GPU N:' lines, torch's 'Found GPU<i>').
    prose_conflict = None
    if len(merged) > 1:
        listed = "; ".join(f"{g.name} (line {g.line})" for g in merged[:6])
        prose_conflict = (f"conflict: the free-form text names {len(merged)} different GPU products and is not a device listing "
                          f"({listed}); which of them this machine has is not said")
        st.notes.append(prose_conflict + "; not used")
        nvidia = next((g for g in merged if not g.arch.present), None)
        if nvidia is not None and any(g.arch.present for g in merged):
            # an NVIDIA product among AMD / Ascend / Intel ones: which platform this is is not said either
            st.vendor["platform"].add("cuda", nvidia.line, f"'{nvidia.name}' named")
        merged = []
    out: list[GpuFacts] = []
    how: list[str] = []
    for g in merged:
        n = g.count if g.count is not None else 1
        how.append(f"{n}x {g.name} (line {g.line}{'' if g.count is not None else ', count not written: 1'})")
        for _ in range(n):
            out.append(GpuFacts(index=len(out), name=Fact.of(g.name, f"{FMT} line {g.line}" + (f" ({g.how})" if g.how else "")),
                                compute_capability=g.cc, memory_bytes=g.mem, arch=g.arch))
    counted = all(g.count is not None for g in merged)
    gpu_list = (Fact.of(len(out), f"{FMT}: " + "; ".join(how), EXACT if counted else AT_LEAST) if out else
                Fact.absent(prose_conflict, source=FMT) if prose_conflict else Fact.absent("the free-form text names no GPU"))
    return tuple(out), gpu_list


def _prefer_gpu_lines(groups: list[_Group], notes: list[str]) -> list[_Group]:
    """With a proper GPU line, a system named elsewhere ("Device: DGX Spark") is the GPU of the GPU line when
    they agree or one is unknown: those other groups are dropped (with a note)."""
    proper = [g for g in groups if g.key and _GPU_PROPER.match(g.key)]
    if not proper:
        return groups
    pid = {id(g) for g in proper}
    dropped = [g for g in groups if id(g) not in pid and any(not g.cc.present or not p.cc.present or g.cc.value == p.cc.value for p in proper)]
    for g in dropped:
        notes.append(f"free-form line {g.line} names {g.name}; the GPU line(s) {', '.join(str(p.line) for p in proper)} are used for the GPU list")
    did = {id(g) for g in dropped}
    return [g for g in groups if id(g) not in did]


def _merge_groups(groups: list[_Group], notes: list[str]) -> list[_Group]:
    """Groups naming one product merged: the first count and compute capability kept, disagreements noted."""
    merged: list[_Group] = []
    for g in groups:
        same = next((m for m in merged if _same_product(m, g)), None)
        if same is None:
            merged.append(g)
            continue
        if g.count is not None and same.count is not None and g.count != same.count:
            notes.append(f"conflict: free-form line {same.line} says {same.count}x {same.name}, line {g.line} says {g.count}x; line {same.line} used")
        if same.count is None:
            same.count = g.count
        if not same.cc.present and g.cc.present and "conflict" not in str(same.cc.missing):
            same.cc = g.cc
        elif same.cc.present and g.cc.present and same.cc.value != g.cc.value:
            same.cc = Fact.absent(f"conflict: line {same.line} gives {_ccs(same.cc.value)}, line {g.line} gives {_ccs(g.cc.value)}", source=FMT)
        if not same.mem.present and g.mem.present:
            same.mem = g.mem
    return merged


def _machine(st: _State, text: str, gpus_out: tuple[GpuFacts, ...], gpu_list: Fact) -> MachineFacts:
    """The :class:`MachineFacts` of everything read (conflicting values become missing facts with a note)."""
    notes = st.notes
    if st.bare_cuda:
        notes.append("free-form CUDA version(s) without saying which CUDA (driver, toolkit or torch build); not used: " + ", ".join(st.bare_cuda[:5]))
    packages = {name: seen.fact(notes) for name, seen in sorted(st.pkgs.items())}
    torch_version = packages.get("torch") or Fact.absent("the free-form text shows no torch version")
    if len(st.engines) == 1:
        (eng, (ln, what)), = st.engines.items()
        engine = Fact.of(eng, f"{FMT} line {ln} (mentions '{what}')")
    elif st.engines:
        engine = Fact.absent("the free-form text mentions both " + " and ".join(f"{e} (line {ln})" for e, (ln, _) in sorted(st.engines.items())), source=FMT)
    else:
        engine = Fact.absent("the free-form text mentions no serving engine")
    return MachineFacts(
        origin=f"env-dump:{FMT}",
        gpus=gpus_out,
        gpu_list=gpu_list,
        driver_version=st.driver.fact(notes),
        cuda_driver_version=st.cuda_drv.fact(notes),
        toolkit=st.toolkit.fact(notes),
        cuda_home=Fact.absent("the free-form text shows no CUDA_HOME"),
        torch_version=torch_version,
        torch_cuda=st.torch_cuda.fact(notes),
        torch_arch_list=Fact.absent("the free-form text shows no torch arch list"),
        packages=packages,
        platform=_platform(text),
        engine=engine,
        accelerator=vendors.platform_fact(st.vendor["platform"], notes, st),
        rocm_version=st.vendor["rocm"].fact(notes),
        cann_version=st.vendor["cann"].fact(notes),
        env=dict(st.env),
        notes=tuple(dict.fromkeys(notes)),
    )


def found_anything(f: MachineFacts) -> bool:
    """Whether the free-form reader found at least one fact (a GPU, a version, a driver, the engine), or GPUs whose
    list it could not tell (several products named: a conflict)."""
    if "conflict" in str(f.gpu_list.missing or ""):
        return True
    scalars = (f.driver_version, f.cuda_driver_version, f.toolkit, f.torch_version, f.torch_cuda, f.engine, f.accelerator,
               f.rocm_version, f.cann_version)
    return bool(f.gpus) or any(x.present for x in scalars) or any(p.present for p in f.packages.values())


def _platform(text: str) -> Fact:
    m = re.search(r"\bwsl ?2?\b", text[:200_000], re.I) or re.search(r"\bwindows 1[01]\b", text[:200_000], re.I)
    if not m:
        return Fact.absent("the free-form text does not say the platform")
    return Fact.of("wsl2" if "wsl" in m.group(0).lower() else "windows", f"{FMT} (mentions '{m.group(0)}')")


def _vendor_group(name: str, arch: Fact, count: int | None, ln: int, key: str, how: str) -> _Group:
    """The group of an AMD / Ascend device read by :mod:`mtp_audit.preflight.freeform_vendors`."""
    return _Group(name, Fact.absent("not an NVIDIA GPU"), Fact.absent("free-form text shows no device memory"), count, ln, key, arch, how)


def _strip_count(v: str) -> str:
    return re.sub(r"^\s*\d{1,3}\s*(?:[x×*]|-way)\s*", "", v).strip()


def _count(scope: str, start: int, end: int) -> int | None:
    m = _COUNT_BEFORE.search(scope[:start]) if start else None
    if m is None and start == 0:
        m = re.match(r"^\s*(\d{1,3})\s*(?:[x×*]|-way)\s*", scope)
    if m is None and end:
        m = _COUNT_AFTER.match(scope[end:])
    if m is None:
        m = _COUNT_GPUS.search(scope)
    if m is None:
        return None
    n = int(next(g for g in m.groups() if g))
    return n if 0 < n <= 256 else None


def _mem_fact(text: str, ln: int) -> Fact:
    f = _mem(text)
    return Fact.of(f.value, f"{FMT} line {ln} ({f.source})") if f.present else f


def _ccs(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def _gpu_cc(name: str, hit: gputable.GpuMatch | None, written: tuple[tuple[int, int], str] | None, ln: int, notes: list[str]) -> Fact:
    if hit is None and name:
        hit = gputable.lookup(name)
    if written and hit and written[0] != hit.cc:
        notes.append(f"conflict: free-form line {ln} writes {written[1]} ({_ccs(written[0])}) but '{name}' is {_ccs(hit.cc)} in the GPU table")
        return Fact.absent(f"conflict: line {ln} writes '{written[1]}' but '{name}' is {_ccs(hit.cc)} ({hit.source})", source=f"{FMT} line {ln}")
    if written:
        return Fact.of(written[0], f"{FMT} line {ln} ('{written[1]}' written)")
    if hit:
        return Fact.of(hit.cc, f"GPU name table ({hit.source}; '{name}' matched '{hit.alias}', {FMT} line {ln})")
    return Fact.absent(f"'{name}' is not in the GPU table and no compute capability is written")


def _same_product(a: _Group, b: _Group) -> bool:
    ha, hb = gputable.lookup(a.name), gputable.lookup(b.name)
    if ha and hb:
        return ha.product == hb.product
    return a.name.lower() == b.name.lower()
