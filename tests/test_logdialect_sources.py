"""Each engine's log dialect against the engine's own source at the release it cites.

For every :class:`~mtp_audit.engines.base.LogLineFormat` of SGLang (0.5.23 wheel), vLLM (v0.33.0 wheel) and llama.cpp
(the tree vendored in the ``llama-cpp-python`` 0.3.36 sdist): the format string is read back from the string literals
at the cited ``file:line`` (adjacent literals joined, as Python and C join them), and a line printed from it (every
conversion filled with a sample value) is read by ``mtp-audit log``: handed on by the reader, recognised as that
engine, and the fact the dialect says the line gives is there. TensorRT-LLM is not installable from the index: its
dialect is a sourced table and is not checked here. Downloads are cached like the other network tests (conftest.py).
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import cache_dir, sglang_wheel, vllm_wheel

from mtp_audit.engines.base import LogLineFormat, MetricSample
from mtp_audit.engines.registry import log_dialects
from mtp_audit.runtime import reader
from mtp_audit.runtime.analyze import read_log

pytestmark = pytest.mark.network

LLAMA_CPP_PYTHON = "0.3.36"
_LITERAL = re.compile(r'''[rRbBuUfF]{0,2}("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')''')


def llamacpp_sdist(version: str) -> Path:
    """The ``llama-cpp-python`` sdist (it vendors llama.cpp) in ``<cache>/llamacpp-sdist``, downloaded once."""
    folder = cache_dir() / "llamacpp-sdist"
    found = folder / f"llama_cpp_python-{version}.tar.gz"
    if found.exists():
        return found
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                           "--no-build-isolation", f"llama-cpp-python=={version}", "-d", str(folder)],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or not found.exists():
        pytest.skip(f"cannot download llama-cpp-python {version}: {proc.stderr.strip()[-200:]}")
    return found


def _llama_file(path: str) -> str:
    """One file of the vendored llama.cpp tree, extracted once into the cache (the sdist is read as a stream)."""
    out = cache_dir() / "llamacpp-sdist" / LLAMA_CPP_PYTHON / path
    if not out.exists():
        member = f"llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp/{path}"
        with tarfile.open(llamacpp_sdist(LLAMA_CPP_PYTHON), "r|gz") as tar:
            for info in tar:
                if info.name == member:
                    fh = tar.extractfile(info)
                    assert fh is not None
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(fh.read())
                    break
    return out.read_text(encoding="utf-8", errors="replace")


def _wheel_file(engine: str, path: str) -> str:
    whl = sglang_wheel("0.5.23") if engine == "sglang" else vllm_wheel("0.33.0")
    with zipfile.ZipFile(whl) as zf:
        return zf.read(path).decode("utf-8")


def _source_text(engine: str, source: str) -> tuple[str, int, int]:
    """(file text, first line, last line) of ``path:line[-line]`` in ``source``."""
    m = re.match(r"([\w./-]+):(\d+)(?:-(\d+))?", source)
    assert m, source
    path, a, b = m.group(1), int(m.group(2)), int(m.group(3) or m.group(2))
    text = _llama_file(path) if engine == "llamacpp" else _wheel_file(engine, path)
    return text, a, b


def _literals(text: str, a: int, b: int) -> str:
    """The string literals of lines ``a``..``b`` joined, escapes of ``\\n`` and quotes undone."""
    lines = text.splitlines()[a - 1:b]
    parts = [m.group(1)[1:-1] for ln in lines for m in _LITERAL.finditer(ln)]
    return "".join(parts).replace("\\n", "\n").replace('\\"', '"').replace("\\'", "'")


_SAMPLES = {"length": "2.50", "rate": "0.75", "num": "3", "iter": "", "token_usage": "token usage: 0.10, ",
            "traceback": "Traceback (most recent call last):", "server_args": "ServerArgs(model_path='m')"}


def render(fmt: str) -> str:
    """A line printed from ``fmt``: printf conversions and f-string fields filled with sample values."""
    def field(m: re.Match[str]) -> str:
        name = m.group(1)
        return next((v for k, v in _SAMPLES.items() if k in name), "x")

    def conv(m: re.Match[str]) -> str:
        spec = m.group(0)
        if spec == "%%":
            return "%"
        if spec.endswith("s"):
            before = fmt[:m.start()]
            if before.endswith("non-default args: "):
                return "{'model_tag': 'm', 'speculative_config': {'method': 'deepseek_mtp', 'num_speculative_tokens': 1}}"
            return ("0.33.0" if before.endswith("(v") else "blk.3.nextn.eh_proj.weight" if "tensor" in fmt
                    else "6e0ab5b" if before.endswith("build %d (") else "x")
        if spec.endswith(("d", "u")):
            return "6000" if "build" in fmt else "12"
        return "0.50000" if ".5" in spec else "0.50"

    out = re.sub(r"\{([^{}:]+)(?::[^{}]*)?\}", field, fmt)
    return re.sub(r"%%|%[-+ 0-9.]*(?:z|l|ll)?[sdfu]", conv, out)


def _dialect_lines() -> list[tuple[str, LogLineFormat]]:
    return [(d.engine, ln) for d in log_dialects() if d.engine != "trtllm" for ln in d.lines]


@pytest.mark.parametrize(("engine", "line"), _dialect_lines(), ids=lambda x: x if isinstance(x, str) else x.source)
def test_format_string_is_in_the_release(engine: str, line: LogLineFormat) -> None:
    text, a, b = _source_text(engine, line.source)
    assert line.fmt in _literals(text, a, b), f"{line.source}: {line.fmt!r} not in {_literals(text, a, b)!r}"
    assert line.literal in line.fmt


#: What each kind of line must give the reader, given the facts of a log made of that one printed line.
CHECKS = {
    "statistics": lambda f, e: f.series.intervals == 1 or "Decode batch" in f.__dict__.get("_probe", ""),
    "config": lambda f, e: bool(f.runs) or bool(f.version),
    "draft-class": lambda f, e: "model_class" in f.config or e == "sglang",
    "draft-shared": lambda f, e: any(k.startswith("shared_") for k in f.draft),
    "unused-tensor": lambda f, e: f.unused == {3: [1, 12, 1, True]},
    "draft-load-failure": lambda f, e: f.draft_failure is not None and f.draft_failure["draft"] == "x",
    "arch-unknown": lambda f, e: True,
    "load-failure": lambda f, e: bool(f.crashes) and f.crashes[-1].message == "x",
    "version": lambda f, e: f.version.get(e) is not None,
    "fatal": lambda f, e: True,
    "command": lambda f, e: f.command is not None and f.command.value.method == "mtp",
}


@pytest.mark.parametrize(("engine", "line"), _dialect_lines(), ids=lambda x: x if isinstance(x, str) else x.source)
def test_printed_line_is_read(engine: str, line: LogLineFormat) -> None:
    printed = render(line.fmt).rstrip("\n")
    if line.key == "statistics" and engine == "sglang":  # the two halves of one Decode batch line (metrics_reporter.py:963,1005)
        printed = render(next(x.fmt for x in _dialect_lines_of("sglang") if x.fmt.startswith("Decode batch"))) + \
            render(next(x.fmt for x in _dialect_lines_of("sglang") if x.fmt.startswith("accept len")))
    if line.key == "arch-unknown":
        printed += "x'"
    assert reader.MARKERS.search(printed.encode()), printed
    facts, _ = read_log(io.BytesIO(printed.encode() + b"\n"), "t")
    assert CHECKS[line.key](facts, engine), (printed, line.key)
    if line.key not in ("fatal", "arch-unknown", "load-failure", "draft-load-failure"):
        assert facts.engine == engine, (printed, dict(facts.votes))


def _dialect_lines_of(engine: str) -> list[LogLineFormat]:
    return [ln for e, ln in _dialect_lines() if e == engine]


def _metric_samples() -> list[tuple[str, MetricSample]]:
    return [(d.engine, s) for d in log_dialects() if d.metrics is not None for s in d.metrics.samples]


def test_every_engine_with_a_metrics_endpoint_names_its_samples() -> None:
    assert {e: sorted(s.key for e2, s in _metric_samples() if e2 == e) for e, _ in _metric_samples()} == {
        "sglang": ["accept_length", "accept_rate", "verify_calls"], "vllm": ["accepted", "drafted", "drafts", "per_pos"],
        "llamacpp": ["accepted", "drafted", "drafts", "per_pos"]}


@pytest.mark.parametrize(("engine", "sample"), _metric_samples(), ids=lambda x: x if isinstance(x, str) else x.name)
def test_metric_name_is_in_the_release(engine: str, sample: MetricSample) -> None:
    """The sample's name, without its engine prefix and the ``_total`` that prometheus_client adds to a counter, is a
    string literal at the cited line (llama-server writes the ``llamacpp:`` prefix apart, at server-task.cpp:1596-1598)."""
    text, a, b = _source_text(engine, sample.source)
    stem = sample.name.split(":", 1)[1]
    written = _literals(text, a, b)
    assert stem in written or stem.removesuffix("_total") in written, f"{sample.source}: {stem!r} not in {written!r}"
    prefix = sample.name.split(":", 1)[0] + ":"
    assert prefix in written or (engine == "llamacpp" and all(prefix in _literals(text, n, n) for n in (1596, 1597, 1598)))
