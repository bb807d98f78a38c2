"""GGUF checkpoints on the hub (loopback FakeHub, nothing reaches the internet): headers are read with HTTP Range
requests of about 1 MiB; tensor data is never requested."""

from __future__ import annotations

from pathlib import Path

from hubfixture import FakeHub, FakeRepo

from mtp_audit.checkpoint.gguf_audit import audit_gguf_source, is_gguf_listing
from mtp_audit.sources.gguf import CHUNK
from mtp_audit.sources.hub import open_hub_source
from mtp_audit.synth.gguf import gguf_bytes, gguf_header, model_kv, nextn_tensors, trunk_tensors

REPO = "unsloth/Qwen3.6-27B-MTP-GGUF"


def _files() -> dict[str, bytes]:
    kv = model_kv("qwen35", blocks=65, nextn=1) + [("tokenizer.ggml.tokens", (9, 8), [f"tok{i}" for i in range(150_000)])]
    tensors = trunk_tensors(range(65), vocab=1024) + nextn_tensors(64) + [("blk.0.ffn_up_exps.weight", (4096, 2048), 1)]
    header, data = gguf_header(kv, tensors)
    return {"Qwen3.6-27B-Q8_0.gguf": header + b"\x07" * data, "README.md": b"# test\n",
            "mmproj-F16.gguf": gguf_bytes([("general.architecture", 8, "clip")], [])}


def test_hub_gguf_header_by_ranges(tmp_path: Path) -> None:
    files = _files()
    repo = FakeRepo(REPO, files)
    with FakeHub([repo]) as hub:
        source = open_hub_source(REPO, None, endpoint=hub.endpoint, cache_dir=tmp_path / "c", hf_cache_dir=tmp_path / "hf")
        assert is_gguf_listing(source.list_files())
        r = audit_gguf_source(source)
        model = r.facts["checkpoint"]["gguf"]["models"][0]
        assert (model["name"], model["block_count"], list(model["nextn_blocks"])) == ("Qwen3.6-27B-Q8_0.gguf", 65, ["64"])
        assert r.facts["checkpoint"]["gguf"]["skipped"] == ["mmproj-F16.gguf"]
        ranges = hub.served_ranges(REPO, "Qwen3.6-27B-Q8_0.gguf")
        size = len(files["Qwen3.6-27B-Q8_0.gguf"])
        head_end = r.facts["checkpoint"]["gguf"]["models"][0]["header_bytes"]
        assert ranges and all(first < head_end for first, _ in ranges)  # nothing starts past the header
        assert max(last for _, last in ranges) < head_end + CHUNK < size  # the tensor data is not read
