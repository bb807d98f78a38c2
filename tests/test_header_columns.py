"""Shard headers kept as per-shard columns (:class:`mtp_audit.sources.local.TensorColumns`) and the audit's tensor
infos as a view over them (:class:`mtp_audit.checkpoint.facts.HeaderInfos`): the same answers, in the same order, as
the ``{name: TensorInfo}`` dicts they replace, for every lookup the analyzer makes."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from mtp_audit.checkpoint.facts import HeaderInfos, gather
from mtp_audit.sources.local import LocalSource, TensorColumns, TensorInfo, fast_header, header_from_dict, tensor_infos

#: bytes per element of the dtypes used below
_BYTES = {"BF16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1}


def _header(tensors: list[tuple[str, str, list[int]]]) -> tuple[bytes, int]:
    """A safetensors header laying ``tensors`` out back to back; ``(JSON bytes, data bytes)``."""
    obj: dict[str, object] = {"__metadata__": {"format": "pt"}}
    at = 0
    for name, dtype, shape in tensors:
        n = _BYTES[dtype]
        for d in shape:
            n *= d
        obj[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + n]}
        at += n
    return json.dumps(obj).encode(), at


def _write(root: Path, shards: dict[str, list[tuple[str, str, list[int]]]], weight_map: dict[str, str]) -> None:
    """Sparse shards (length prefix, header, data as a hole) and the index, plus a DeepSeek-V3-like config."""
    root.mkdir(parents=True, exist_ok=True)
    for fname, tensors in shards.items():
        raw, data = _header(tensors)
        with open(root / fname, "wb") as fh:
            fh.write(struct.pack("<Q", len(raw)) + raw)
            fh.truncate(8 + len(raw) + data)
    (root / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (root / "config.json").write_text(json.dumps({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                                                  "num_hidden_layers": 2, "num_nextn_predict_layers": 1,
                                                  "hidden_size": 8}))


TENSORS = [("model.layers.0.mlp.up_proj.weight", "F8_E4M3", [16, 8]),
           ("model.layers.0.mlp.up_proj.weight_scale_inv", "F32", [1, 1]),
           ("model.embed_tokens.weight", "BF16", [32, 8]),
           ("model.norm.weight", "BF16", [8]),
           ("lm_head.weight", "BF16", [32, 8])]


def test_columns_answer_as_the_dict_of_the_strict_reader() -> None:
    raw, data = _header(TENSORS)
    fast = fast_header("x.safetensors", raw, 8 + len(raw) + data)
    assert fast is not None and isinstance(fast.tensors, TensorColumns)
    strict = header_from_dict("x.safetensors", json.loads(raw), len(raw))
    cols, want = fast.tensors, strict.tensors
    assert cols._names is None and cols.text == "\n".join(t[0] for t in TENSORS) and len(cols) == 5  # one text kept
    assert cols == want and want == cols and fast == strict
    assert list(cols) == [t[0] for t in TENSORS] and len(cols) == 5
    assert cols["model.layers.0.mlp.up_proj.weight"] == TensorInfo("model.layers.0.mlp.up_proj.weight", "F8_E4M3", (16, 8), 128)
    assert cols["model.norm.weight"].shape == (8,) and cols["lm_head.weight"].nbytes == 512
    assert "model.norm.weight" in cols and "model.norm" not in cols and cols.get("nope") is None
    with pytest.raises(KeyError):
        cols["nope"]
    assert cols.infos() == want and tensor_infos(cols) == want and type(tensor_infos(cols)) is dict
    assert fast.data_bytes == data == strict.data_bytes and fast.elements == strict.elements == 128 + 1 + 256 + 8 + 256


def _checkpoint(tmp_path: Path, weight_map_override: dict[str, str] | None = None) -> tuple[Path, dict[str, str]]:
    a, b = TENSORS[:2] + [("model.layers.2.eh_proj.weight", "BF16", [8, 16])], TENSORS[2:]
    wm = {t[0]: "model-00001-of-00002.safetensors" for t in a} | {t[0]: "model-00002-of-00002.safetensors" for t in b}
    wm = dict(sorted({**wm, **(weight_map_override or {})}.items()))
    _write(tmp_path, {"model-00001-of-00002.safetensors": a, "model-00002-of-00002.safetensors": b}, wm)
    return tmp_path, wm


def test_infos_are_a_view_over_the_headers_when_they_match_the_index(tmp_path: Path) -> None:
    root, wm = _checkpoint(tmp_path)
    facts = gather(LocalSource(root, display="x"))
    assert facts.cache["headers_match_index"] is True
    infos = facts.infos
    assert isinstance(infos, HeaderInfos) and len(infos) == 6
    merged = {}
    for hdr in facts.headers.values():  # what the merged dict held: sorted shards, each in header order
        merged.update(hdr.tensors.infos())  # type: ignore[attr-defined]
    assert list(infos) == list(merged) and infos == merged and infos.as_dict() == merged
    assert infos["model.layers.2.eh_proj.weight"] == TensorInfo("model.layers.2.eh_proj.weight", "BF16", (8, 16), 256)
    assert "lm_head.weight" in infos and "lm_head" not in infos and infos.get("lm_head") is None
    assert set(facts.mtp) == {"model.layers.2.eh_proj.weight"}
    assert facts.mtp_modules["model.layers.2.eh_proj"].params["weight"] == infos["model.layers.2.eh_proj.weight"]
    assert facts.trunk_modules["model.norm"] == {"weight": TensorInfo("model.norm.weight", "BF16", (8,), 16)}


def test_a_header_that_disagrees_with_the_index_gets_merged_infos(tmp_path: Path) -> None:
    """The index names the wrong shard for one tensor: infos are a plain dict again (each tensor from the header that
    holds it), and the tensor map keeps the index's shard."""
    root, wm = _checkpoint(tmp_path, {"model.norm.weight": "model-00001-of-00002.safetensors"})
    facts = gather(LocalSource(root, display="x"))
    assert facts.cache["headers_match_index"] is False
    assert type(facts.infos) is dict and len(facts.infos) == 6
    assert facts.infos["model.norm.weight"] == TensorInfo("model.norm.weight", "BF16", (8,), 16)
    assert facts.tensors["model.norm.weight"] == "model-00001-of-00002.safetensors"


def test_sizes_the_fast_reader_let_go_are_computed_again_on_first_use() -> None:
    """:func:`fast_header` keeps no size column (it checked the sizes against the spans and let them go); the first
    use computes them from the dtypes and shapes, equal to the strict reader's for every dtype, sub-byte ones
    included."""
    from mtp_audit.sources.local import DTYPE_BITS

    obj: dict[str, object] = {}
    at = 0
    for i, (dtype, bits) in enumerate(sorted(DTYPE_BITS.items())):
        shape = [2, 3 + i, 8]  # 48 + 16 i elements: whole bytes for 4- and 6-bit dtypes too
        n = 2 * (3 + i) * 8 * bits // 8
        obj[f"t{i}"] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + n]}
        at += n
    raw = json.dumps(obj).encode()
    fast = fast_header("x.safetensors", raw, 8 + len(raw) + at)
    assert fast is not None and isinstance(fast.tensors, TensorColumns)
    cols = fast.tensors
    assert cols._nbytes is None and fast.data_bytes == at
    strict = header_from_dict("x.safetensors", json.loads(raw), len(raw)).tensors
    assert cols["t0"] == strict["t0"] and cols._nbytes is not None  # the first lookup computed the column
    assert cols.nbytes == [info.nbytes for info in strict.values()] and cols.infos() == strict
    assert sum(cols.nbytes) == at


def test_names_kept_as_one_text_split_back_exactly() -> None:
    """The names the fast reader keeps as one text come back as they were: an empty name, a lone one, non-ASCII."""
    for names in ([""], ["", ""], ["a"], ["a", "", "b"], ["é.weight", "x:y[0]"]):
        obj = {n: {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i, n in enumerate(names)}
        if len(obj) != len(names):
            continue
        raw = json.dumps(obj, ensure_ascii=False).encode()
        fast = fast_header("x.safetensors", raw, 8 + len(raw) + len(names))
        assert fast is not None and fast.tensors.text == "\n".join(names)  # type: ignore[attr-defined]
        assert list(fast.tensors) == names and len(fast.tensors) == len(names)
    empty = TensorColumns(None, [], [], None, "")
    assert list(empty) == [] and len(empty) == 0
