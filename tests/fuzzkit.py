"""Hypothesis strategies and the invariant harness of the fuzz suite (tests/test_fuzz.py, issue 13).

Every strategy builds one bad (or merely unusual) input of one kind *on disk* inside a workspace
folder: a safetensors shard, an index, a config.json dialect, a quantization config, an env dump
(the real ones in fixtures/preflight/envdumps/ mutated, and free-form lines), an SGLang tree or wheel
(zip edge cases included), or a set of output paths. :func:`run_cli` runs the CLI in-process and
asserts the invariants every run must hold (see its docstring).

Default: ``EXAMPLES`` examples per input kind (a few hundred, about 90 s for the whole suite on two
cores); ``MTP_AUDIT_FUZZ_EXAMPLES=N`` runs N per kind (the long run before a release).
"""

from __future__ import annotations

import contextlib
import hashlib
import html.parser
import io
import json
import os
import resource
import shutil
import stat
import struct
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
ENVDUMPS = FIXTURES / "preflight" / "envdumps"
SCHEMA = json.loads((REPO / "mtp_audit" / "schema" / "report.schema.json").read_text())

#: Examples per input kind: the default run keeps the suite fast; the env var makes a long run.
EXAMPLES = int(os.environ.get("MTP_AUDIT_FUZZ_EXAMPLES", "0") or 0) or None

#: Stated bounds per example: wall seconds, and the process's peak resident memory (MiB) after it.
MAX_SECONDS = 20.0
MAX_RSS_MIB = 2048


def fuzz_settings(default: int) -> settings:
    """Hypothesis settings for one input kind: ``default`` examples (``MTP_AUDIT_FUZZ_EXAMPLES``
    overrides), no deadline (the harness checks its own time bound), no example database (the
    repository stays clean), and the health checks that a file-writing fuzzer trips turned off.

    The default run draws the same examples every time (``derandomize``): the test command gives the same answer on
    every clean clone; a run with ``MTP_AUDIT_FUZZ_EXAMPLES`` set explores new ones (docs/fuzzing.md)."""
    return settings(
        max_examples=EXAMPLES or default,
        deadline=None,
        database=None,
        derandomize=not EXAMPLES,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much, HealthCheck.large_base_example],
    )


# --- the harness -------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one CLI run did: exit code, captured streams, seconds."""

    code: int
    out: str
    err: str
    seconds: float


@dataclass
class Workspace:
    """A fresh folder per example: ``root/in`` holds the inputs, ``root/mark`` must stay empty (code in
    the inputs would write marker files there if it ever ran), ``root/out`` is free for outputs."""

    root: Path
    inputs: Path = field(init=False)
    marks: Path = field(init=False)
    outs: Path = field(init=False)

    def __post_init__(self) -> None:
        if self.root.exists():
            _rmtree(self.root)
        self.inputs = self.root / "in"
        self.marks = self.root / "mark"
        self.outs = self.root / "out"
        for p in (self.inputs, self.marks, self.outs):
            p.mkdir(parents=True)

    def marker_code(self, tag: str) -> str:
        """Python source that, if it ever ran (import, exec, unpickle), writes ``mark/<tag>``."""
        return f"open({str(self.marks / tag)!r}, 'w').write('ran')\n"


def _rmtree(p: Path) -> None:
    def onerror(func: Any, path: str, exc: Any) -> None:
        try:
            os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass

    shutil.rmtree(p, onerror=onerror)


def snapshot(root: Path) -> dict[str, tuple[str, str]]:
    """``relative path -> (kind, digest)`` of everything under ``root`` (symlinks by target, files by
    SHA-256, FIFOs by kind only); never follows a symlink or opens a FIFO."""
    out: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(os.fsencode(root), followlinks=False):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.fsdecode(os.path.relpath(full, os.fsencode(root)))
            try:
                st_ = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISLNK(st_.st_mode):
                out[rel] = ("link", os.fsdecode(os.readlink(full)))
            elif stat.S_ISREG(st_.st_mode):
                try:
                    with open(full, "rb") as fh:
                        out[rel] = ("file", hashlib.sha256(fh.read()).hexdigest())
                except OSError:
                    out[rel] = ("file", f"unreadable {st_.st_size} {st_.st_mtime_ns}")
            elif stat.S_ISDIR(st_.st_mode):
                out[rel] = ("dir", "")
            else:
                out[rel] = ("other", str(stat.S_IFMT(st_.st_mode)))
    return out


def run_cli(argv: Sequence[str], ws: Workspace, *, outputs: Iterable[str | os.PathLike[str]] = (),
            json_stdout: bool = False) -> Outcome:
    """Run ``mtp-audit argv`` in-process (``mtp_audit.cli.main.main``) with cwd = ``ws.root`` and assert:

    - the exit code is in {0, 1, 2, 3} (never 4, an internal error; never a traceback);
    - exit 2 prints exactly one stderr line ``mtp-audit: error: ...`` and nothing on stdout, and writes
      nothing (the workspace is unchanged);
    - no file changes except the planned ``outputs`` (every input is hashed before and after);
    - no marker file appears (no audited code ran);
    - with ``json_stdout`` and a report on stdout, it validates against ``report.schema.json``;
    - the run took at most :data:`MAX_SECONDS` and the process's peak RSS stays under :data:`MAX_RSS_MIB`.
    """
    from mtp_audit.cli.main import main

    planned: set[str] = set()
    for o in outputs:  # an output path, and the file it lands on when it is a symlink
        planned.add(os.path.normpath(os.fspath(o)))
        with contextlib.suppress(OSError, ValueError):
            planned.add(os.path.relpath(os.path.realpath(ws.root / o), os.path.realpath(ws.root)))
    before = snapshot(ws.root)
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    t0 = time.monotonic()
    try:
        os.chdir(ws.root)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        os.chdir(cwd)
    seconds = time.monotonic() - t0
    res = Outcome(code, out.getvalue(), err.getvalue(), seconds)
    where = f"argv={list(argv)!r}\nexit={code}\nstderr={res.err[-2000:]!r}\nstdout={res.out[:300]!r}"
    event(f"exit {code}")
    assert code in (0, 1, 2, 3), where
    assert "Traceback" not in res.err, where
    after = snapshot(ws.root)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    marks = [k for k in after if k.startswith("mark" + os.sep)]
    assert not marks, f"audited code ran: {marks}\n{where}"
    if code == 2:
        assert res.out == "", where
        assert res.err.count("\n") == 1 and res.err.startswith("mtp-audit: error: ") and res.err.endswith("\n"), where
        assert not changed, f"exit 2 but the workspace changed: {sorted(changed)}\n{where}"
    else:
        stray = sorted(k for k in changed if os.path.normpath(k) not in planned and not _is_tmp(k))
        assert not stray, f"files outside the outputs changed: {stray}\n{where}"
        if json_stdout and res.out.strip():
            import jsonschema

            jsonschema.validate(json.loads(res.out), SCHEMA)
    assert seconds <= MAX_SECONDS, f"took {seconds:.1f} s (bound {MAX_SECONDS} s)\n{where}"
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert rss_mib <= MAX_RSS_MIB, f"peak RSS {rss_mib:.0f} MiB (bound {MAX_RSS_MIB} MiB)\n{where}"
    return res


def _is_tmp(rel: str) -> bool:
    return os.path.basename(rel).startswith(".mtp-audit-")  # never left behind; listed only if a write failed midway


# --- Markdown as GitHub renders it ------------------------------------------------------------------

#: Pieces of Markdown and HTML syntax a hostile value is made of (tests/test_fuzz_hostile.py).
MARKDOWN_PIECES = st.sampled_from(list("<>[]()!`|\\*_~&#:/.@ \"'=x") + [
    "http://", "www.", "<img src=x>", "</td>", "&amp;", "<h1>", "```", "](", "<!--", "-->", "\n"])


class Tags(html.parser.HTMLParser):
    """Start tags (with their attributes) and the text of every ``<td>``; GitHub's ``mailto:`` autolinks of an
    ``a@b.c`` text apart (made after escapes are read, so no escaping prevents them; their target is the text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.mailto: list[str] = []
        self.cells: list[str] = []
        self._in_td = False

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        if tag == "a" and len(attrs) == 1 and attrs[0][0] == "href" and (attrs[0][1] or "").startswith("mailto:"):
            self.mailto.append(attrs[0][1][len("mailto:"):])
            return
        self.tags.append((tag, attrs))
        if tag == "td":
            self._in_td, _ = True, self.cells.append("")

    def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
        self._in_td = self._in_td and tag != "td"

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        if self._in_td:
            self.cells[-1] += data


def github_html(markdown: str) -> Tags:
    """``markdown`` rendered by cmark-gfm (the C library GitHub's renderer is built on) with raw HTML passed through
    (GitHub's sanitizer keeps ``<img>``, ``<a>``, ``<h1>`` and tables), parsed into :class:`Tags`."""
    import cmarkgfm
    from cmarkgfm.cmark import Options

    parsed = Tags()
    parsed.feed(cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE))
    return parsed



# --- engine option YAMLs (trtllm-serve --config) ------------------------------------------------------

YAML_SCALARS = [
    "MTP", "3", "0", "-1", "1" * 4400, "0x" + "f" * 3000, "0o17", "0b101", "1_000", "190:20:30", ".nan", "-.inf", ".inf",
    "1e400", "~", "null", "yes", "off", "2024-01-01", "2001-12-14t21:59:43.10-05:00", "!!binary aGVsbG8=",
    "!!str 3", "'quoted'", '"\\u202e"', "!!float 1", "!!python/object/apply:os.system ['true']", "[a, b]", "{a: 1}",
    "!!set {a, b}", "!!omap [a: 1, b: 2]", "!!pairs [a: 1, a: 2]", "<img src=x>", "[x](http://e.example)",
]
YAML_KEYS = ["decoding_type", "max_draft_len", "num_nextn_predict_layers", "1", "true", "null", "2024-01-01", "'1'",
             "acceptance_rate_threshold", "use_relaxed_acceptance_for_thinking", "? [a, b]", "<<", "max_num_tokens",
             "tensor_parallel_size"]


def alias_bomb(levels: int, width: int) -> str:
    """Anchors ``a0`` .. ``a<levels>``, each a list of ``width`` aliases of the one below: ``width ** levels`` items
    once expanded, ``levels * width`` aliases in a few hundred bytes."""
    lines = ["a0: &a0 [" + ",".join(["x"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


@st.composite
def trtllm_yaml(draw: Any) -> str:
    """A ``--config`` YAML: a speculative_config of keys and scalars of every YAML type (huge integers in every base,
    timestamps, sets, binary, NaN, Python tags, non-string keys, merge keys), sometimes with an alias bomb, a
    recursive alias, a second document, or cut short."""
    spec = {draw(st.sampled_from(YAML_KEYS)): draw(st.sampled_from(YAML_SCALARS)) for _ in range(draw(st.integers(0, 5)))}
    lines = ["speculative_config:"] + [f"  {k}: {v}" for k, v in spec.items()]
    if draw(st.booleans()):
        lines.insert(1, "  decoding_type: MTP")
    top = [f"{draw(st.sampled_from(YAML_KEYS))}: {draw(st.sampled_from(YAML_SCALARS))}" for _ in range(draw(st.integers(0, 3)))]
    text = "\n".join(lines + top) + "\n"
    shape = draw(st.sampled_from(["plain", "plain", "bomb", "recursive", "merge", "documents", "cut"]))
    if shape == "bomb":
        text += alias_bomb(draw(st.integers(2, 9)), draw(st.integers(2, 12))) + "big: *a" + "\n"
        text = text.replace("big: *a\n", f"big: *a{text.count('&a') - 1}\n")
    elif shape == "recursive":
        text += "r: &r {x: *r}\n" if draw(st.booleans()) else "r: &r [1, *r]\n"
    elif shape == "merge":
        text += "base: &b {decoding_type: MTP, max_draft_len: 2}\nm:\n  <<: *b\n  max_draft_len: 3\n"
    elif shape == "documents":
        text += "---\nb: 2\n"
    elif shape == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    return text


# --- JSON values -------------------------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, 2, 3, 61, 64, 65, 128, 10**6, 10**12, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["", "mtp", "NEXTN", "model.layers.61*", "re:(", "*", "fp8", "modelopt", "NVFP4", "MIXED_PRECISION"]),
)
JSON_VALUES = st.recursive(_SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                            st.dictionaries(st.text(max_size=8), kids, max_size=4)),
                           max_leaves=12)


def dumps(value: Any) -> str:
    """JSON text, with NaN/Infinity as Python writes them (transformers writes bare Infinity too)."""
    return json.dumps(value, allow_nan=True)


# --- checkpoints -------------------------------------------------------------------------------------

DTYPES = ["BF16", "F16", "F32", "F8_E4M3", "U8", "I8", "F64", "BOOL", "F4", "Q", "", "bf16"]
TENSOR_NAMES = [
    "model.embed_tokens.weight", "model.layers.0.mlp.gate_proj.weight", "model.layers.1.mlp.experts.0.up_proj.weight",
    "model.layers.61.eh_proj.weight", "model.layers.61.mlp.experts.3.down_proj.weight_scale_inv",
    "mtp.layers.0.mlp.experts.0.gate_proj.weight", "mtp.fc.weight", "mtp.layers.0.input_layernorm.weight",
    "model.mtp_layers.0.enorm.weight", "model.layers.2.self_attn.q_proj.weight_scale", "lm_head.weight",
    "mtp.layers.0.mlp.experts.0.up_proj.weight_scale_2", "", "../x", "a" * 300, "\u00e9\u4e2d",
]


@st.composite
def tensor_entries(draw: Any) -> dict[str, Any]:
    """A header dict of tensor records, some well-formed, some not (offsets, shapes, dtypes)."""
    n = draw(st.integers(0, 6))
    header: dict[str, Any] = {}
    off = 0
    for _ in range(n):
        name = draw(st.sampled_from(TENSOR_NAMES) | st.text(max_size=30))
        dtype = draw(st.sampled_from(DTYPES))
        shape = draw(st.lists(st.integers(0, 9000) | st.sampled_from([-1, 2**63, 2**40]), max_size=3))
        size = draw(st.integers(0, 64))
        rec: dict[str, Any] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + size]}
        if draw(st.booleans()):
            rec = draw(st.sampled_from([{}, {"dtype": dtype}, {"dtype": 1, "shape": "x", "data_offsets": None},
                                        {"dtype": dtype, "shape": shape, "data_offsets": [size, 0]},
                                        {"dtype": dtype, "shape": shape, "data_offsets": [0, 2**64]}]))
        header[name] = rec
        off += size
    if draw(st.booleans()):
        header["__metadata__"] = draw(st.sampled_from([{"format": "pt"}, {"format": 1}, [], "x", {"a": {"b": 1}}]))
    return header


@st.composite
def shard_bytes(draw: Any) -> bytes:
    """A ``.safetensors`` file: 8-byte length (right, too big, zero, huge), header JSON (valid, truncated,
    not JSON, not a dict, not UTF-8, deeply nested), then data (missing or short)."""
    kind = draw(st.sampled_from(["ok", "ok", "notjson", "list", "nested", "binary", "empty", "short"]))
    if kind in ("ok",):
        text = json.dumps(draw(tensor_entries())).encode()
    elif kind == "notjson":
        text = draw(st.binary(max_size=64)) + b"{"
    elif kind == "list":
        text = dumps(draw(JSON_VALUES)).encode()
    elif kind == "nested":
        depth = draw(st.integers(1, 100_000))
        text = b"[" * depth + b"]" * draw(st.integers(0, depth))
    elif kind == "binary":
        text = draw(st.binary(max_size=200))
    elif kind == "empty":
        return draw(st.sampled_from([b"", b"\x00", b"\x00" * 7]))
    else:
        text = b'{"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}'
    length = draw(st.sampled_from(["right", "right", "big", "zero", "huge", "odd"]))
    n = {"right": len(text), "big": len(text) + draw(st.integers(1, 10**6)), "zero": 0, "huge": 2**63 + 5,
         "odd": max(0, len(text) - draw(st.integers(1, 8)))}[length]
    pad = b" " * draw(st.integers(0, 7))
    data = draw(st.binary(max_size=96))
    return struct.pack("<Q", n % 2**64) + text + pad + data


INDEX_SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "../outside.safetensors",
                "/etc/passwd", "", ".", "sub/dir.safetensors", "config.json", "model.safetensors.index.json",
                "fifo.safetensors", "loop.safetensors", "escape.safetensors", "missing.safetensors", "x\x00y"]


@st.composite
def index_doc(draw: Any) -> Any:
    """A ``model.safetensors.index.json``: weight_map names pointing at real shards, special files
    (the index itself, config.json, a FIFO, a symlink loop, a link out of the folder), missing or
    escaping paths; metadata.total_size of any JSON type; sometimes not a dict at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON_VALUES)
    wm = draw(st.dictionaries(st.sampled_from(TENSOR_NAMES) | st.text(max_size=12),
                              st.sampled_from(INDEX_SHARDS) | JSON_VALUES, max_size=8))
    doc: dict[str, Any] = {"weight_map": wm if draw(st.integers(0, 7)) else draw(JSON_VALUES)}
    if draw(st.booleans()):
        doc["metadata"] = {"total_size": draw(JSON_VALUES | st.integers(0, 2**80))}
    return doc


CONFIG_KEYS = ["num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers", "num_mtp_modules", "use_mtp",
               "num_hidden_layers", "n_routed_experts", "num_experts", "num_local_experts", "architectures", "model_type",
               "text_config", "mtp_config", "quantization_config", "mtp_num_experts", "layer_types", "hidden_size",
               "moe_intermediate_size", "first_k_dense_replace", "quantization", "torch_dtype"]


def fixture_configs() -> list[dict[str, Any]]:
    """The real config.json files of fixtures/checkpoint (parsed with Infinity allowed)."""
    out = []
    for p in sorted((FIXTURES / "checkpoint").glob("*/config.json")):
        out.append(json.loads(p.read_text()))
    return out


_REAL_CONFIGS = fixture_configs()


@st.composite
def config_doc(draw: Any) -> Any:
    """A config.json dialect: a real fixture config with keys set, deleted or moved under
    ``text_config``, their values any JSON; sometimes not a dict, sometimes huge numbers."""
    if draw(st.integers(0, 11)) == 0:
        return draw(JSON_VALUES)
    cfg = json.loads(json.dumps(draw(st.sampled_from(_REAL_CONFIGS)), allow_nan=True))
    for _ in range(draw(st.integers(0, 5))):
        key = draw(st.sampled_from(CONFIG_KEYS))
        action = draw(st.sampled_from(["set", "set", "del", "nest"]))
        if action == "del":
            cfg.pop(key, None)
        elif action == "nest":
            tc = cfg.setdefault("text_config", {})
            if isinstance(tc, dict):
                tc[key] = draw(JSON_VALUES | st.integers(0, 100))
        else:
            cfg[key] = draw(JSON_VALUES | st.integers(0, 100) | st.sampled_from([["DeepseekV3ForCausalLM"], ["Qwen3_5MoeForCausalLM"],
                                                                                 ["MiMoForCausalLM"], ["X" * 500]]))
    return cfg


@st.composite
def quant_doc(draw: Any) -> tuple[Any, Any]:
    """``(hf_quant_config.json document or None, config.json quantization_config or None)`` in the
    ModelOpt, compressed-tensors, FP8-block, GPTQ/AWQ, Quark and MLX dialects, with hostile values
    (block sizes with 0, group sizes of any type, exclude patterns that are bad regexes)."""
    patterns = st.lists(st.sampled_from(["mtp*", "mtp.layers.0*", "re:(", "re:mtp\\..*", "*", "", "[", "lm_head",
                                         "model.layers.61*", "\\"]) | st.text(max_size=10), max_size=5)
    hf = None
    if draw(st.booleans()):
        hf = {"producer": draw(st.sampled_from([{"name": "modelopt", "version": "0.1"}, "x", None])),
              "quantization": {"quant_algo": draw(st.sampled_from(["NVFP4", "FP8", "MIXED_PRECISION", "W4A8_AWQ", "", 7])),
                               "kv_cache_quant_algo": draw(st.sampled_from([None, "FP8", 3])),
                               "group_size": draw(JSON_VALUES | st.integers(-5, 64)),
                               "exclude_modules": draw(patterns | JSON_VALUES),
                               "quantized_layers": draw(st.dictionaries(st.text(max_size=10),
                                                                        st.sampled_from([{"quant_algo": "NVFP4"}, {"quant_algo": 1}, 3]),
                                                                        max_size=3))}}
        if draw(st.integers(0, 6)) == 0:
            hf = draw(JSON_VALUES)
    qc = None
    if draw(st.booleans()):
        qc = {"quant_method": draw(st.sampled_from(["fp8", "modelopt", "compressed-tensors", "gptq", "awq", "quark", "mlx",
                                                    "auto-round", "bitsandbytes", 5, ""])),
              "weight_block_size": draw(st.lists(st.integers(-2, 256) | st.sampled_from([0, 0.5, "128", None, 2**70]), max_size=3)
                                        | JSON_VALUES),
              "group_size": draw(st.integers(-3, 256) | JSON_VALUES),
              "format": draw(st.sampled_from(["nvfp4-pack-quantized", "float-quantized", "pack-quantized", "", 3])),
              "ignore": draw(patterns), "modules_to_not_convert": draw(patterns | JSON_VALUES),
              "exclude": draw(patterns), "dynamic": draw(st.dictionaries(st.sampled_from(["-:.*mtp.*", "-:(", "+:x", "k"]),
                                                                         JSON_VALUES, max_size=3)),
              "config_groups": draw(st.sampled_from([{}, {"g": {"weights": {"group_size": 0}}}, {"g": {"weights": 3}}, []]))}
        if draw(st.integers(0, 6)) == 0:
            qc = draw(JSON_VALUES)
    return hf, qc


def write_special(folder: Path, ws: Workspace) -> None:
    """Special files a weight map may name: a FIFO, a symlink loop, a symlink out of the folder, a folder."""
    with contextlib.suppress(OSError):
        os.mkfifo(folder / "fifo.safetensors")
    with contextlib.suppress(OSError):
        os.symlink("loop.safetensors", folder / "loop.safetensors")
    (ws.root / "secret.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    with contextlib.suppress(OSError):
        os.symlink(ws.root / "secret.safetensors", folder / "escape.safetensors")
    (folder / "sub").mkdir(exist_ok=True)


def write_pickle_marker(path: Path, ws: Workspace, tag: str) -> None:
    """A ``pytorch_model.bin`` whose unpickling would write ``mark/<tag>`` (checkpoints are never unpickled)."""
    target = str(ws.marks / tag).encode()
    path.write_bytes(b"\x80\x02cbuiltins\nopen\nq\x00X" + struct.pack("<I", len(target)) + target
                     + b"X\x01\x00\x00\x00w\x86R.")


# --- env dumps ---------------------------------------------------------------------------------------

REAL_DUMPS = sorted(p for p in ENVDUMPS.rglob("*.txt") if p.name != "SOURCE.txt")

FREEFORM_LINES = [
    "GPU 0: NVIDIA B200", "GPU 0,1: NVIDIA GeForce RTX 5090", "GPU 0 Compute Capability: 12.0", "Compute Capability: 10.0",
    "CUDA Driver Version: 580.95.05", "Driver Version: 570.133.07", "PyTorch: 2.9.1+cu129", "torch==2.7.0+cu128",
    "sglang: 0.5.10", "sgl_kernel: 0.3.21", "flashinfer_python: 0.6.3", "NVCC: Cuda compilation tools, release 12.9, V12.9.86",
    "| NVIDIA-SMI 580.95.05   Driver Version: 580.95.05   CUDA Version: 13.0 |",
    "|   0  NVIDIA B200    On  | 00000000:18:00.0 Off |    0 |", "| N/A 30C P0 140W / 1000W | 0MiB / 183359MiB | 0% Default |",
    "PyTorch version: 2.9.0+cu130", "Is debug build: False", "CUDA used to build PyTorch: 12.8", "GPU models and configuration:",
    "Nvidia driver version: 575.57.08", "[pip3] torch==2.8.0", "[conda] flashinfer-python 0.6.8 pypi_0 pypi",
    "vLLM Version: 0.33.0", "```", "## Environment", "- GPU: RTX PRO 6000 Blackwell", "* torch 2.8 / CUDA 12.8",
    "FLASHINFER_CUDA_ARCH_LIST=12.0", "$(touch mark)", "`rm -rf /`", "Not Supported", "N/A", "Module Not Found",
    "Python: 3.12.3", "CUDA available: True", "OS: Microsoft Windows 11", "WSL2", "warnings.warn(", "\t", "",
    "Is XPU available: True", "Intel GPU models onboard:", "* Intel(R) Data Center GPU Max 1550", "GPU: 8 x Gaudi 3 (HL-325L)",
    "Hardware: 2x Intel Arc Pro B60", "--device xpu", "--device hpu", "|   0  HL-225              N/A  | 0000:9a:00.0     N/A |",
    "[level_zero:gpu][level_zero:0] Intel(R) Level-Zero, Intel(R) Arc(TM) A770 Graphics 1.3 [1.3.26241]",
    "  Device Name                                     Intel(R) Graphics [0x56a1]",
]


@st.composite
def env_dump_text(draw: Any, ws: Workspace | None = None) -> str:
    """A real dump from fixtures/preflight/envdumps mutated (lines deleted, duplicated, swapped with
    free-form lines, numbers replaced by huge or odd ones, CRLF, truncation, binary junk), two dumps
    concatenated, or free-form Markdown / prose lines only."""
    mode = draw(st.sampled_from(["real", "real", "real", "concat", "free"]))
    if mode == "free":
        lines = draw(st.lists(st.sampled_from(FREEFORM_LINES) | st.text(max_size=40), min_size=0, max_size=25))
    else:
        text = draw(st.sampled_from(REAL_DUMPS)).read_text(errors="surrogateescape")
        if mode == "concat":
            text += "\n" + draw(st.sampled_from(REAL_DUMPS)).read_text(errors="surrogateescape")
        lines = text.splitlines()
        for _ in range(draw(st.integers(0, 8))):
            if not lines:
                break
            i = draw(st.integers(0, len(lines) - 1))
            op = draw(st.sampled_from(["del", "dup", "free", "num", "junk", "cut"]))
            if op == "del":
                del lines[i]
            elif op == "dup":
                lines.insert(i, lines[i])
            elif op == "free":
                lines[i] = draw(st.sampled_from(FREEFORM_LINES))
            elif op == "num":
                import re

                lines[i] = re.sub(r"\d+", lambda m: draw(st.sampled_from(["0", "9" * 40, "1" * 5000, "-1", "12.0", "x", ""])),
                                  lines[i], count=draw(st.integers(1, 3)))
            elif op == "junk":
                lines[i] = draw(st.text(max_size=60))
            else:
                lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
    if ws is not None and draw(st.booleans()):
        lines.append("Python: 3.12 " + ws.marker_code("envdump").strip())
    text = ("\r\n" if draw(st.integers(0, 5)) == 0 else "\n").join(lines)
    if draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text


# --- SGLang trees and wheels -------------------------------------------------------------------------

SERVER_ARGS_SNIPPETS = [
    "import argparse\nimport os\n",
    "class ServerArgs:\n    speculative_algorithm: str = None\n    speculative_draft_model_path: str = None\n",
    "    def __post_init__(self):\n        if self.speculative_algorithm == \"NEXTN\":\n            self.speculative_algorithm = \"EAGLE\"\n",
    "            if self.speculative_draft_model_path is None:\n                self.speculative_draft_model_path = self.model_path\n",
    "    @staticmethod\n    def add_cli_args(parser):\n        parser.add_argument(\"--speculative-algorithm\", type=str, choices=[\"EAGLE\", \"NEXTN\", \"NGRAM\"])\n",
    "        parser.add_argument('--moe-runner-backend', choices=MOE_CHOICES, default='auto')\n",
    "MOE_CHOICES = ['auto', 'flashinfer_cutlass', 'flashinfer_trtllm']\n",
    "SGLANG_ENABLE_SPEC_V2 = EnvBool(False)\nx = os.environ.get('SGLANG_NVFP4_X')\n",
    "def prepare_server_args(argv):\n    return ServerArgs(**vars(argv))\n",
    "EntryClass = [DeepseekV3ForCausalLMNextN]\n",
    "if hf_config.architectures[0] == 'DeepseekV3ForCausalLM' and is_draft:\n    hf_config.architectures[0] = 'DeepseekV3ForCausalLMNextN'\n",
    "def f(:\n", "\x00\x01", "\udcff", "(" * 500, "x = " + "[" * 200 + "]" * 200 + "\n", "lambda: " * 300 + "0\n",
    "class SpeculativeConfig:\n    method: SpeculativeMethod | None = None\n    num_speculative_tokens: int = None\n",
    "    def __post_init__(self):\n        if self.method in ('deepseek_mtp', 'mimo_mtp', 'qwen3_next_mtp'):\n            self.method = 'mtp'\n",
    "        if hf_config.model_type == 'deepseek_v3':\n            hf_config.model_type = 'deepseek_mtp'\n"
    "        if hf_config.model_type == 'deepseek_mtp':\n            hf_config.update({'architectures': ['DeepSeekMTPModel']})\n",
    "environment_variables = {\n    'VLLM_USE_V2_MODEL_RUNNER': lambda: os.getenv('VLLM_USE_V2_MODEL_RUNNER'),\n}\n",
    "SpeculativeMethod = Literal['ngram', 'eagle', 'eagle3', 'mtp', f'{x}_mtp']\n",
    "\"\"\"unterminated", "# -*- coding: latin-1 -*-\n", "# -*- coding: bogus -*-\n", "\t  \tmixed = 1\n",
]


@st.composite
def python_source(draw: Any, ws: Workspace | None = None, tag: str = "py") -> bytes:
    """A .py file built from real server_args.py shapes and broken fragments (bad syntax, deep nesting,
    odd encodings, NUL bytes), with code that would write a marker file if it were ever run."""
    parts = draw(st.lists(st.sampled_from(SERVER_ARGS_SNIPPETS), max_size=10))
    if ws is not None and draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), ws.marker_code(tag))
    text = "".join(parts)
    data = text.encode("utf-8", errors="surrogateescape")
    if draw(st.integers(0, 7)) == 0:
        data += draw(st.binary(max_size=40))
    return data


@st.composite
def sglang_tree_files(draw: Any, ws: Workspace) -> dict[str, bytes]:
    """Files of an SGLang package (``sglang/...`` relative paths) incl. the marker file most of the time."""
    files: dict[str, bytes] = {}
    if draw(st.integers(0, 9)):
        files["sglang/srt/server_args.py"] = draw(python_source(ws, "server_args"))
    for _ in range(draw(st.integers(0, 4))):
        name = draw(st.sampled_from(["sglang/__init__.py", "sglang/version.py", "sglang/srt/models/deepseek_nextn.py",
                                     "sglang/srt/environ.py", "sglang/srt/arg_groups/choices.py", "sglang/cli/main.py",
                                     "sglang/launch_server.py", "sglang/srt/tests/test_x.py", "sglang/srt/x.pyc",
                                     "sglang/srt/configs/model_config.py"]))
        files[name] = draw(python_source(ws, name.replace("/", "_")))
    if "sglang/version.py" in files and draw(st.booleans()):
        files["sglang/version.py"] = draw(st.sampled_from([b'__version__ = "0.5.9"\n', b'__version__ = "' + b"9" * 5000 + b'"\n',
                                                           b"__version__ = 'x'\n", b"__version__ = \n"]))
    return files


def write_sglang_folder(ws: Workspace, files: Mapping[str, bytes], extras: Sequence[str]) -> Path:
    """Write ``files`` under ``in/tree`` with ``extras``: symlinks out of the tree, symlink loops,
    non-UTF-8 names, unreadable files, FIFOs, setup.py / conftest.py / .pth that would run code."""
    root = ws.inputs / "tree"
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    srt = root / "sglang" / "srt"
    srt.mkdir(parents=True, exist_ok=True)
    (ws.root / "outside.py").write_text(ws.marker_code("outside"))
    for extra in extras:
        with contextlib.suppress(OSError):
            if extra == "link-out":
                os.symlink(ws.root / "outside.py", srt / "linked.py")
            elif extra == "dir-link-out":
                os.symlink(ws.root, srt / "up")
            elif extra == "loop":
                os.symlink("loop.py", srt / "loop.py")
            elif extra == "non-utf8":
                with open(os.fsencode(srt) + b"/bad\xff\xfe.py", "wb") as fh:
                    fh.write(b"speculative_algorithm = '\xff'\n")
            elif extra == "unreadable":
                (srt / "secret.py").write_text("x = 1\n")
                os.chmod(srt / "secret.py", 0)
            elif extra == "fifo":
                os.mkfifo(srt / "pipe.py")
            elif extra == "setup":
                (root / "setup.py").write_text(ws.marker_code("setup"))
                (root / "conftest.py").write_text(ws.marker_code("conftest"))
                (root / "sglang" / "x.pth").write_text("import os; " + ws.marker_code("pth"))
            elif extra == "checkout":
                (root / "pyproject.toml").write_text('[project]\nname = "sglang"\nversion = "0.5.9"\n')
                (root / ".git").mkdir()
    return root


WHEEL_EDGES = ["symlink-member", "dotdot", "absolute", "duplicate", "corrupt-deflate", "huge-declared", "bad-method",
               "encrypted-flag", "dir-named-py", "metadata", "bomb", "truncated", "not-zip", "empty-zip"]


VLLM_PATHS = ["vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py", "vllm/envs.py",
              "vllm/model_executor/models/registry.py", "vllm/v1/worker/gpu_model_runner.py", "vllm/engine/arg_utils.py",
              "vllm/transformers_utils/config.py", "vllm/__init__.py", "vllm/version.py"]


def as_vllm(files: Mapping[str, bytes], pick: Sequence[int]) -> dict[str, bytes]:
    """The same generated sources laid out as a vLLM package (the paths its reader looks up)."""
    out = {}
    for (rel, data), i in zip(sorted(files.items()), pick):
        out["vllm/config/speculative.py" if rel.endswith("server_args.py") else VLLM_PATHS[i % len(VLLM_PATHS)]] = data
    return out


def write_wheel(ws: Workspace, files: Mapping[str, bytes], edges: Sequence[str], package: str = "sglang") -> Path:
    """See :func:`_write_wheel`; zipfile's "Duplicate name" warning is expected here (duplicates are an edge case)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return _write_wheel(ws, files, edges, package)


def _write_wheel(ws: Workspace, files: Mapping[str, bytes], edges: Sequence[str], package: str = "sglang") -> Path:
    """A ``.whl`` of ``files`` with zip edge cases: symlink members, ``..`` and absolute names,
    duplicate names, a corrupt deflate stream, a member declaring a huge size, an unknown compression
    method, the encryption flag, a directory entry named ``*.py``, a compressible bomb, a truncated
    archive, a file that is not a zip at all."""
    path = ws.inputs / f"{package}-0.5.9-py3-none-any.whl"
    victim = "sglang/srt/victim.py" if package == "sglang" else "vllm/engine/arg_utils.py"
    files = {k: v for k, v in files.items() if k != victim}
    if "not-zip" in edges:
        path.write_bytes(b"PK\x03\x04 not really a zip" + bytes(range(256)))
        return path
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        if "empty-zip" not in edges:
            for rel, data in files.items():
                z.writestr(rel, data)
        if "symlink-member" in edges:
            info = zipfile.ZipInfo(f"{package}/srt/link.py" if package == "sglang" else "vllm/envs.py")
            info.external_attr = (0o120777 << 16)
            z.writestr(info, str(ws.root / "outside.py"))
        if "dotdot" in edges:
            z.writestr(f"{package}/../../escape.py", ws.marker_code("dotdot"))
        if "absolute" in edges:
            z.writestr(f"/{package}/srt/abs.py", ws.marker_code("abs"))
        if "duplicate" in edges:
            z.writestr("sglang/srt/server_args.py" if package == "sglang" else "vllm/config/speculative.py",
                       b"class ServerArgs:\n    pass\n")
        if "dir-named-py" in edges:
            z.writestr(zipfile.ZipInfo(f"{package}/srt/folder.py/"), b"")
        if "metadata" in edges:
            z.writestr(f"{package}-0.5.9.dist-info/METADATA", b"Metadata-Version: 2.1\nName: x\nVersion: " + b"7" * 5000 + b"\n")
        if "bomb" in edges:
            z.writestr(f"{package}/srt/bomb.py" if package == "sglang" else "vllm/v1/worker/gpu_model_runner.py",
                       b"if speculative_algorithm == 'NEXTN': pass\n" * 200_000)
        if "corrupt-deflate" in edges or "huge-declared" in edges or "bad-method" in edges or "encrypted-flag" in edges:
            z.writestr(victim, b"import os\n" + os.urandom(512).hex().encode() + b"\n")
    raw = bytearray(path.read_bytes())
    if any(e in edges for e in ("corrupt-deflate", "huge-declared", "bad-method", "encrypted-flag")):
        with zipfile.ZipFile(io.BytesIO(bytes(raw))) as z:
            info = z.getinfo(victim)
        local = info.header_offset
        start = local + 30 + len(info.filename.encode()) + len(info.extra)
        cd = _central_entry(raw, victim)
        if "corrupt-deflate" in edges:
            for i in range(start + 2, start + info.compress_size - 2):
                raw[i] = 0xFF
        if "huge-declared" in edges and cd >= 0:
            raw[cd + 24: cd + 28] = struct.pack("<I", 0xFFFFFFF0)  # uncompressed size in the central directory
        if "bad-method" in edges and cd >= 0:
            raw[cd + 10: cd + 12] = struct.pack("<H", 99)
            raw[local + 8: local + 10] = struct.pack("<H", 99)
        if "encrypted-flag" in edges and cd >= 0:
            raw[cd + 8] |= 0x01
            raw[local + 6] |= 0x01
    if "truncated" in edges:
        raw = raw[: max(22, len(raw) * 2 // 3)]
    path.write_bytes(bytes(raw))
    return path


def _central_entry(raw: bytearray, name: str) -> int:
    """Offset of ``name``'s central-directory record, or -1."""
    pos = 0
    want = name.encode()
    while True:
        pos = raw.find(b"PK\x01\x02", pos)
        if pos < 0:
            return -1
        n = struct.unpack("<H", raw[pos + 28: pos + 30])[0]
        if bytes(raw[pos + 46: pos + 46 + n]) == want:
            return pos
        pos += 4


# --- output paths ------------------------------------------------------------------------------------

OUTPUT_CHOICES = ["new", "new-in-input-folder", "input-file", "file-in-input-folder", "symlink-to-input",
                  "hardlink-to-input", "dash", "devnull", "dir", "missing-folder", "long-name", "newline-name",
                  "non-utf8-name", "dangling-symlink", "same-as-other", "dot"]
