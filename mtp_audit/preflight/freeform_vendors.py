"""AMD, Ascend, Intel GPU (XPU) and Intel Gaudi (HPU) facts in hand-written environment text (the free-form reader's
second pass per line).

Read (each with its provenance ``"free-form line N (...)"``):

- devices: AMD products (``8x MI300X``, ``AMD Instinct MI355X (gfx950)``, ``Radeon 8060S``) and Ascend NPUs
  (``Ascend 910B3``, ``8*910B``, ``Atlas 800I A2``), Intel GPUs (``Intel Data Center GPU Max 1550``, ``2x Arc Pro
  B60``) and Gaudi accelerators (``8x Gaudi 3``, ``HL-225``) named in a GPU/NPU line, with a count, a gfx target, or words
  that say the machine has them (``on a``, ``NPU``, ``node``, a ``user@host`` prompt); the gfx target written wins
  over the table, a disagreement is a conflict (:func:`mtp_audit.preflight.platforms.amd_arch`).
- versions: ROCm (``ROCm 6.3.1``, ``rocm7.0``), CANN (``CANN 8.1.RC1``, ``CANN==8.0.T63``), torch_npu, vllm-ascend,
  AITER, sgl-kernel-npu.
- the platform of container images (``rocm/vllm``, ``vllm/vllm-openai-rocm:v0.16.0`` with its vLLM version,
  ``quay.io/ascend/vllm-ascend:v0.9.1`` with its vllm-ascend version, ``lmsysorg/sglang:*-rocm*``) and of a pasted
  launch's ``--device npu`` / ``--device hip`` / ``--device xpu`` / ``--device hpu``.

A device read from the last line of a text that does not end in a newline is dropped when its name touches the end
of that line (it may be cut: ``MI300`` of ``MI300X``), as the NVIDIA reader drops a cut name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mtp_audit.preflight import platforms as pf
from mtp_audit.preflight.facts import Fact
from mtp_audit.preflight.gpus import word_spans

FMT = "free-form"

_ROCM = re.compile(r"(?<![\w/-])(?:rocm|hip)[ _-]?(?:version|sdk)?\s*[:=v]?\s*(\d{1,2}\.\d{1,2}(?:\.\d{1,6})?)(?![\d])", re.I | re.A)
_ROCM_TAG = re.compile(r"\+rocm(\d{1,2}\.\d{1,2}(?:\.\d{1,2})?)", re.I | re.A)
_CANN = re.compile(r"(?<![\w/-])cann[ _-]?(?:version|toolkit)?\s*(?:==|[:=])?\s*v?(\d{1,2}\.\d{1,2}(?:\.(?:rc\d{1,2}|t\d{1,4}|\d{1,3}))?(?:\.?rc\d{0,2})?)(?![A-Za-z0-9_])", re.I | re.A)
_VPKG = re.compile(r"(?<![\w./-])(torch[-_]npu|vllm[-_]ascend|amd[-_]aiter|aiter|sgl[-_]kernel[-_]npu|triton[-_]ascend)"
                   r"(?:\s*(?:==|=|:|\s+version\s*[:=]?)\s*|[-\s]v?)(\d{1,4}(?:\.\d{1,6}){1,3}(?:(?:\.?(?:post|dev|rc)\d{0,9}))*)(?![A-Za-z0-9_.])", re.I | re.A)
_VPKG_NAMES = {"torch-npu": "torch-npu", "vllm-ascend": "vllm-ascend", "amd-aiter": "aiter", "aiter": "aiter",
               "sgl-kernel-npu": "sgl-kernel-npu", "triton-ascend": "triton-ascend"}
_DEVICE_FLAG = re.compile(r"--device[= ](npu|hip|rocm|cuda|cpu|xpu|hpu)\b", re.I)
_CONTEXT = re.compile(r"\b(?:gpus?|npus?|xpus?|hpus?|on an?|hardware|device|accelerators?|cards?|nodes?|servers?|instinct|ascend|atlas|"
                      r"gaudi|environment|setup|tested)\b", re.I)
#: A table alias that is also an ordinary token (at most 4 characters, ``910B``, or letters only, ``Gaudi``): read as a
#: device only in a device context (:data:`_CONTEXT`, a count, a device key).
_SHORT_ALIAS = re.compile(r".{1,4}|[a-z ]+", re.I | re.S)
#: Each table's vendor -> the platform its devices are on.
VENDOR_PLATFORM = {"amd": pf.ROCM, "ascend": pf.CANN, "intel": pf.XPU, "gaudi": pf.HPU}
_HOST = re.compile(r"[\w.-]*@([\w.-]+)")
_VENDOR_PREFIX = re.compile(r"(?:(?:amd\s+)?(?:instinct\s+)?|(?:huawei\s+)?(?:ascend\s*)?|(?:intel(?:\(r\))?\s+)?(?:habana\s+)?)$", re.I)
_KEYS = re.compile(r"^(?:gpus?|npus?|gpu\s*(?:model|type|name)|npu\s*(?:model|type|name)|hardware|hw|devices?|accelerators?|card|"
                   r"machine|node|system|platform|instance|server|host(?:name)?)\b", re.I)
#: ``export NAME=VALUE`` (or a bare assignment) of the ROCm / Ascend switches the platform checks read.
_EXPORT = re.compile(r"(?:^|\s)(?:export\s+)?(VLLM_ROCM_[A-Z0-9_]{1,60}|SGLANG_USE_AITER|HIP_VISIBLE_DEVICES|ASCEND_RT_VISIBLE_DEVICES)=([^\s`'\"]{1,200})")
#: A container image reference (``quay.io/ascend/sglang:v0.5.13.post1-cann9.0.0-910b``): its tag names builds, not devices.
_IMAGE_REF = re.compile(r"[\w.-]{1,100}/[\w./-]{1,200}:[\w.-]{1,120}")
_TAG_VERSION = re.compile(r"^v?(\d{1,4}\.\d{1,4}\.\d{1,4}(?:\.post\d{1,4}|rc\d{1,4}|\.dev\d{1,9})?)(?![\d])")


_GLUED_COUNT = re.compile(r"(?<![a-z0-9.])(\d{1,3})[x×*](?=[a-z])", re.I)

#: What follows the last product named on a cut last line when the line was a list that may go on: a separator
#: (``/``, ``,``, ``|``, ``+``, ``&``, ``or``, ``and``, ``vs``) and nothing after it but the start of a word the cut
#: may have ended (``MI300X / MI35``: the next product cut short).
_LIST_GOES_ON = re.compile(r"^\s*(?:[/,|+&]|or|and|vs\.?)\s*[\w-]{0,40}$", re.I)


def unglue(text: str) -> str:
    """``text`` with a count glued to a product (``8xH100``, ``2*910B``) split by a space in place of the ``x``, so
    the word matcher sees ``8 H100``; same length, so match offsets hold for ``text``."""
    return _GLUED_COUNT.sub(lambda m: m.group(1) + " ", text) if any(c in text for c in "xX×*") else text


def find_devices(text: str) -> list[tuple[str, pf.DeviceMatch, int, int]]:
    """Every AMD (``"amd"``), Ascend (``"ascend"``), Intel GPU (``"intel"``) and Gaudi (``"gaudi"``) product named in
    ``text``, left to right, each the longest alias at its position, with its character span:
    ``[(vendor, match, start, end)]``. Linear in ``len(text)``."""
    spans = word_spans(text)
    ws = [w for w, _, _ in spans]
    out = []
    for vendor in ("amd", "ascend", "intel", "gaudi"):
        idx = pf._index(vendor)
        longest = max(len(k) for k in idx)
        firsts = {k[0] for k in idx}
        rows = pf._table(vendor)["products"]
        i = 0
        while i < len(ws):
            hit = None
            if ws[i] in firsts:
                for n in range(min(longest, len(ws) - i), 0, -1):
                    h = idx.get(tuple(ws[i:i + n]))
                    if h is not None:
                        hit = (n, h)
                        break
            if hit is None:
                i += 1
                continue
            n, (alias, r) = hit
            row = rows[r]
            out.append((vendor, pf.DeviceMatch(row["product"], alias, row, row["source"]), spans[i][1], spans[i + n - 1][2]))
            i += n
    return sorted(out, key=lambda h: h[2])


def read_line(st: Any, ln: int, line: str, key: str, value: str, truncated: bool,
              count: Callable[[str, int, int], int | None], group: Callable[..., Any], *, devices: bool = True) -> None:
    """The AMD / Ascend devices, versions, images and ``--device`` of one cleaned line, added to the reader state
    ``st`` (``st.vendor`` holds the version and platform sightings). ``count`` is the NVIDIA reader's count parser,
    ``group`` builds its per-product group."""
    low = line.lower()
    _read_versions(st, ln, line, low)
    _read_images(st, ln, line, low)
    for m in _DEVICE_FLAG.finditer(line) if "--device" in low else ():
        plat = pf.DEVICE_FLAG.get(m.group(1).lower())
        if plat:
            st.vendor["platform"].add(plat, ln, f"'{m.group(0)}'")
    if not devices:
        return
    gpu_key = bool(key) and bool(_KEYS.match(key))
    scope = value if gpu_key else line
    hits = find_devices(_IMAGE_REF.sub(lambda m: " " * len(m.group(0)), unglue(scope)) if "/" in scope else unglue(scope))
    if not hits:
        return
    off = line.rfind(scope) if gpu_key else 0
    # the NVIDIA reader skips these spans ("Ascend A2" is not an NVIDIA A2)
    st.claimed.extend((off + s, off + e) for _, _, s, e in hits)
    end = len(scope.rstrip())
    host = {m.start(1) for m in _HOST.finditer(scope)}
    ok = gpu_key or bool(_CONTEXT.search(scope)) or pf.gfx_in(scope) is not None
    if truncated and _LIST_GOES_ON.match(scope[max(e for _, _, _, e in hits):]):
        # "MI300X /" at the end of a cut last line: a list of alternatives that may go on ("/ MI350X / MI355X")
        st.notes.append(f"free-form line {ln}: '{line[:60]}' may be cut off inside a list (last line, no newline); "
                        "its products are not used")
        return
    if len({h.product for _, h, _, _ in hits}) > 1 and all(count(scope, s, e) is None for _, _, s, e in hits):
        # "MI300X / MI350X / MI355X": products listed without counts are alternatives tried, not one machine
        st.notes.append(f"conflict: free-form line {ln} lists {len(hits)} AMD/Ascend/Intel/Gaudi products without counts "
                        f"({', '.join(scope[s:e] for _, _, s, e in hits[:6])}); which one this machine has is not said; not used")
        st.vendor["platform"].add(VENDOR_PLATFORM[hits[0][0]], ln, f"'{scope[hits[0][2]:hits[0][3]]}' named")
        return
    named: set[str] = set()
    for vendor, h, s, e in hits:
        if h.product in named and count(scope, s, e) is None:
            continue  # "8 x Gaudi 3 (HL-325L)": the same product named again, without a count of its own
        if truncated and (e >= end or scope[e:].count("(") > scope[e:].count(")")):
            # the name, or a parenthesis after it ("MI355X (gfx1201)": its architecture), runs into the cut
            st.notes.append(f"free-form line {ln}: '{line[:60]}' may be cut off (last line, no newline); '{scope[s:e]}' not counted")
            continue
        pre = _VENDOR_PREFIX.search(scope[:s])
        start = pre.start() if pre and pre.group(0).strip() else s
        c = count(scope, start, e)
        in_host = any(hs <= s for hs in host) and "@" in scope[:s]
        if not (ok or c is not None or in_host or not _SHORT_ALIAS.fullmatch(h.alias)):
            continue  # a product name is evidence wherever it stands; a short one that is also an ordinary token needs a context
        name = scope[start:e].strip()
        where = f"{FMT} line {ln}"
        arch = (pf.amd_arch(name, pf.gfx_in(scope) if len(hits) == 1 else None, where) if vendor == "amd" else
                {"ascend": pf.ascend_arch, "intel": pf.intel_arch, "gaudi": pf.gaudi_arch}[vendor](name))
        st.groups.append(group(name, arch, c, ln, key, "host name" if in_host and not ok else ""))
        st.vendor["platform"].add(VENDOR_PLATFORM[vendor], ln, f"'{name}' named")
        named.add(h.product)


def _read_versions(st: Any, ln: int, line: str, low: str) -> None:
    """ROCm, CANN and the AMD / Ascend package versions of one line, and the platform switches it exports."""
    if "rocm" in low or "hip" in low:
        for rx in (_ROCM, _ROCM_TAG):
            for m in rx.finditer(line):
                st.vendor["rocm"].add(m.group(1), ln, f"'{m.group(0).strip()}'")
    if "cann" in low:
        for m in _CANN.finditer(line):
            st.vendor["cann"].add(m.group(1), ln, f"'{m.group(0).strip()}'")
    if any(k in low for k in ("npu", "ascend", "aiter")):
        for m in _VPKG.finditer(line):
            name = _VPKG_NAMES[m.group(1).lower().replace("_", "-")]
            before = low[max(0, m.start() - 14):m.start()]
            if re.search(r"requir|need|>=|<|than|at least|upgrade to|from", before):
                continue
            st.pkg(name).add(m.group(2), ln, f"'{m.group(0).strip()}'")
            if name == "vllm-ascend":
                st.engines.setdefault("vllm", (ln, m.group(0).strip()))
    for m in _EXPORT.finditer(line) if "=" in line else ():
        st.env.setdefault(m.group(1), m.group(2))


def _read_images(st: Any, ln: int, line: str, low: str) -> None:
    if not any(k in low for k in ("rocm/", "-rocm", "ascend/", "ascendai/", "lmsysorg/sglang")):
        return
    for m in pf.IMAGE_PLATFORM.finditer(line):
        repo, tag = m.group(1), m.group(2) or ""
        plat = pf.image_platform(repo, tag)
        if plat is None:
            continue
        st.vendor["platform"].add(plat, ln, f"container image {repo}{':' + tag if tag else ''}")
        tv = _TAG_VERSION.match(tag)
        names = {"vllm/vllm-openai-rocm": "vllm", "ascend/vllm-ascend": "vllm-ascend", "ascendai/vllm-ascend": "vllm-ascend", "ascend/sglang": "sglang"}
        name = names.get(repo.lower())
        if tv and name:
            st.pkg(name).add(tv.group(1), ln, f"container tag {repo}:{tag}")
            st.engines.setdefault("sglang" if name == "sglang" else "vllm", (ln, repo))


def platform_fact(seen: Any, notes: list[str], st: Any) -> Fact:
    """The platform the text states (images, ``--device``, devices named), or what its ROCm / CANN versions imply;
    two platforms stated are a conflict (missing, with a note)."""
    f = seen.fact(notes)
    if f.present or (f.missing and f.missing.startswith("conflict")):
        return f
    rocm, cann = st.vendor["rocm"], st.vendor["cann"]
    if rocm.values and not cann.values:
        v, (ln, how) = next(iter(rocm.values.items()))
        return Fact.of(pf.ROCM, f"{FMT} line {ln} (ROCm {v}: {how})")
    if cann.values and not rocm.values:
        v, (ln, how) = next(iter(cann.values.items()))
        return Fact.of(pf.CANN, f"{FMT} line {ln} (CANN {v}: {how})")
    return Fact.absent("the free-form text does not say the platform")



