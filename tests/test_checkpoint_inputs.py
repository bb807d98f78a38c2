"""Input kinds, bad input and the CLI contract of ``mtp-audit checkpoint``: one line on stderr naming
the file and the problem, exit 2, no traceback, nothing written; or a finding / gap when the defect is
the checkpoint's own."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from mtp_audit.checkpoint import audit_checkpoint
from mtp_audit.cli.main import main
from mtp_audit.errors import InputError
from mtp_audit.sources.local import (
    CheckpointSource,
    ReadProblem,
    ShardHeader,
    header_from_dict,
)
from mtp_audit.synth.shards import tiny

CFG = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "num_hidden_layers": 2,
    "num_nextn_predict_layers": 1,
    "n_routed_experts": 0,
}
TENSORS = {"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8]), "model.layers.2.eh_proj.weight": ("BF16", [8, 16])}


def folder(tmp: Path, *, config: Any = CFG, shard: bytes | None = None, index: Any = None) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (tmp / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    if shard is not None:
        (tmp / "model.safetensors").write_bytes(shard)
    if index is not None:
        (tmp / "model.safetensors.index.json").write_text(index if isinstance(index, str) else json.dumps(index))
    return tmp


def run_cli(capsys, args: list[str]) -> tuple[int, str, str]:
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def assert_input_error(capsys, tmp_path: Path, target: Path, needle: str) -> None:
    out_file = tmp_path / "report.json"
    rc, out, err = run_cli(capsys, ["checkpoint", str(target), "-f", "json", "-o", str(out_file)])
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("mtp-audit: error: ")
    assert needle in err
    assert "Traceback" not in err and out == ""
    assert not out_file.exists()


# --- input kinds ---------------------------------------------------------------------------------


def test_single_safetensors_file(tmp_path):
    d = folder(tmp_path / "c", shard=tiny(TENSORS))
    rep = audit_checkpoint(d / "model.safetensors")
    f = rep.facts["checkpoint"]
    assert f["mode"] == "single-file"
    assert f["summary"]["tensors"] == 2
    # the config.json beside the file is read: model.layers.2 is the declared MTP layer, eh_proj alone (MTP020)
    assert f["mtp"]["declared_layers"] == 1 and f["mtp"]["tensors"] == 1
    assert [x.rule_id for x in rep.findings] == ["MTP020"] and not rep.gaps


def test_one_shard_of_a_set_reads_the_config_beside_it(capsys, tmp_path):
    """The shard holding the whole MTP layer answers with the folder's config.json; the other shard cannot tell
    (the MTP layer may be in a shard not read), never MTP001."""
    d = _two_shards(tmp_path / "c")
    (d / "model-00002-of-00002.safetensors").write_bytes(tiny(MTP_LAYER))
    rep = audit_checkpoint(d / "model-00002-of-00002.safetensors")
    assert rep.facts["checkpoint"]["mtp"]["declared_layers"] == 1 and rep.facts["checkpoint"]["mtp"]["tensors"] == 5
    assert rep.findings == () and rep.gaps == ()
    assert run_cli(capsys, ["checkpoint", str(d / "model-00002-of-00002.safetensors")])[0] == 0
    rep = audit_checkpoint(d / "model-00001-of-00002.safetensors")
    assert rep.findings == ()
    assert [(g.message.split(":")[0], g.blocking) for g in rep.gaps] == [("MTP001 not decided", True)]
    assert rep.gaps[0].message.endswith("only model-00001-of-00002.safetensors (shard 1 of 2) was read, the rest may be "
                                        "in the other shards")
    assert run_cli(capsys, ["checkpoint", str(d / "model-00001-of-00002.safetensors")])[0] == 3


def test_single_file_with_prefix_mtp_is_conclusive(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    (d / "mtp.safetensors").write_bytes(tiny({"mtp.fc.weight": ("BF16", [4, 8])}))
    rep = audit_checkpoint(d / "mtp.safetensors")
    assert rep.facts["checkpoint"]["mtp"]["tensors"] == 1
    assert not rep.inconclusive


def test_index_file_reads_config_beside_it_but_no_shards(tmp_path):
    d = folder(tmp_path / "c", shard=tiny(TENSORS), index={"weight_map": {k: "model.safetensors" for k in TENSORS}})
    rep = audit_checkpoint(d / "model.safetensors.index.json")
    f = rep.facts["checkpoint"]
    assert f["mode"] == "index-file"
    assert f["shards"]["read"] == 0
    assert f["mtp"]["tensors"] == 1 and f["mtp"]["declared_layers"] == 1


def test_config_json_path(tmp_path):
    d = folder(tmp_path / "c")
    rep = audit_checkpoint(d / "config.json")
    assert rep.facts["checkpoint"]["mode"] == "config-only" and rep.inconclusive


def test_full_folder_with_headers(tmp_path):
    full = {**TENSORS, "model.layers.2.self_attn.o_proj.weight": ("BF16", [8, 8]),  # the MTP layer with its block (MTP020)
            **{f"model.layers.2.{n}.weight": ("BF16", [8]) for n in ("enorm", "hnorm", "shared_head.norm")}}  # and glue (MTP021)
    d = folder(tmp_path / "c", shard=tiny(full), index={"metadata": {"total_size": 560},
                                                        "weight_map": {k: "model.safetensors" for k in full}})
    rep = audit_checkpoint(d)
    f = rep.facts["checkpoint"]
    assert f["mode"] == "shards" and f["mtp"]["bytes"] == {"value": 432, "estimated": False}
    assert rep.findings == () and rep.gaps == ()


class MemorySource(CheckpointSource):
    """An in-memory source: the analyzer must work through the CheckpointSource methods only."""

    def __init__(self, files: dict[str, Any], headers: dict[str, dict[str, Any]]) -> None:
        self.display = "memory/test"
        self._files = files
        self._headers = headers

    def list_files(self) -> tuple[str, ...]:
        return tuple(sorted([*self._files, *self._headers]))

    def read_json(self, rel: str) -> Any:
        if rel not in self._files:
            raise ReadProblem(rel, "no such file", "missing")
        return self._files[rel]

    def read_header(self, rel: str) -> ShardHeader:
        return header_from_dict(rel, self._headers[rel], 100)


def test_source_agnostic():
    hdr = {"mtp.fc.weight": {"dtype": "BF16", "shape": [4, 8], "data_offsets": [0, 64]}}
    cfg = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "num_hidden_layers": 2}
    rep = audit_checkpoint(MemorySource({"config.json": cfg}, {"mtp.safetensors": hdr}))
    assert rep.targets[0].name == "memory/test"
    f = rep.facts["checkpoint"]
    assert f["mtp"]["tensors"] == 1 and f["mtp"]["declared_by"] == "implicit"
    assert f["mtp"]["dtypes"] == {"BF16": 1}


def test_hub_like_id_without_hub_module(tmp_path, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name.endswith(".hub") else real(name, *a))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as ei:
        audit_checkpoint("deepseek-ai/DeepSeek-V3@main")
    assert ei.value.problem == "no such file or folder"
    rc, _, err = run_cli(capsys, ["checkpoint", "nobody/nothing"])
    assert rc == 2 and "nobody/nothing: no such file or folder" in err


# --- bad input: the user's own input -> exit 2 ---------------------------------------------------


def test_missing_path(capsys, tmp_path):
    assert_input_error(capsys, tmp_path, tmp_path / "nope", "no such file or folder")


def test_truncated_config(capsys, tmp_path):
    d = folder(tmp_path / "c", config='{"architectures": ["X"], "num_hid')
    assert_input_error(capsys, tmp_path, d, "config.json: invalid JSON")


def test_config_without_architectures(capsys, tmp_path):
    d = folder(tmp_path / "c", config={"model_type": "deepseek_v3"})
    assert_input_error(capsys, tmp_path, d, "config.json: /architectures: missing")


def test_config_bad_mtp_value(capsys, tmp_path):
    d = folder(tmp_path / "c", config={**CFG, "num_nextn_predict_layers": "one"})
    assert_input_error(capsys, tmp_path, d, "/num_nextn_predict_layers: expected a non-negative integer")


def test_invalid_index_json(capsys, tmp_path):
    d = folder(tmp_path / "c", index="{not json")
    assert_input_error(capsys, tmp_path, d, "model.safetensors.index.json: invalid JSON")


@pytest.mark.parametrize("wm", [[], "x", 3, None])
def test_weight_map_wrong_type(capsys, tmp_path, wm):
    d = folder(tmp_path / "c", index={"weight_map": wm})
    assert_input_error(capsys, tmp_path, d, "/weight_map: expected an object")


def test_weight_map_value_wrong_type(capsys, tmp_path):
    d = folder(tmp_path / "c", index={"weight_map": {"a.weight": ["x"]}})
    assert_input_error(capsys, tmp_path, d, "/weight_map/a.weight: expected a shard file name, got list")


def test_not_a_checkpoint(capsys, tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "README.md").write_text("hi")
    assert_input_error(capsys, tmp_path, tmp_path / "c", "not a checkpoint")


def test_symlink_loop_target(capsys, tmp_path):
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    assert_input_error(capsys, tmp_path, loop, "symlink loop")


def test_config_symlink_loop(capsys, tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    os.symlink(d / "config.json", d / "config.json")
    assert_input_error(capsys, tmp_path, d, "config.json")


def test_config_is_a_directory(capsys, tmp_path):
    d = tmp_path / "c"
    (d / "config.json").mkdir(parents=True)
    assert_input_error(capsys, tmp_path, d, "config.json")


def test_single_file_bad_header_is_input_error(capsys, tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    (d / "x.safetensors").write_bytes(struct.pack("<Q", 10**9) + b"{}")
    assert_input_error(capsys, tmp_path, d / "x.safetensors", "exceeds")


# --- defects of the checkpoint: findings or gaps --------------------------------------------------


def _bad(prefix_len: int | None = None, header: bytes | None = None) -> bytes:
    good = tiny(TENSORS)
    if header is not None:
        return struct.pack("<Q", len(header)) + header
    return struct.pack("<Q", prefix_len) + good[8:]


@pytest.mark.parametrize(
    "data, needle",
    [
        (_bad(prefix_len=10**6), "exceeds the file size"),
        (_bad(prefix_len=200_000_000), "exceeds the 100000000-byte limit"),
        (_bad(header=b'{"a": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}, "\xff": 1}'), "not UTF-8"),
        (
            _bad(header=b'{"a": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}, '
                 b'"a": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}'),
            "more than once",
        ),
        (b"1234", "too short"),
    ],
)
def test_malformed_shard_in_folder_is_a_finding(capsys, tmp_path, data, needle):
    d = folder(tmp_path / "c", shard=data)
    rep = audit_checkpoint(d)
    hits = [x for x in rep.findings if x.rule_id == "MTP013"]
    assert len(hits) == 1 and needle in hits[0].message
    assert hits[0].location.path == "model.safetensors"
    rc, _, err = run_cli(capsys, ["checkpoint", str(d)])
    assert rc == 1 and "Traceback" not in err


def test_shard_symlink_loop_is_a_gap(tmp_path):
    d = folder(tmp_path / "c", index={"weight_map": {k: "model-00001-of-00002.safetensors" for k in TENSORS}})
    (d / "model-00001-of-00002.safetensors").write_bytes(tiny(TENSORS))
    os.symlink(d / "loop.safetensors", d / "loop.safetensors")
    rep = audit_checkpoint(d)
    gaps = [g for g in rep.gaps if g.path == "loop.safetensors"]
    assert len(gaps) == 1 and gaps[0].blocking  # an unindexed shard we could not read might hold MTP
    assert "symlink loop" in gaps[0].message


def test_unreadable_indexed_shard_is_non_blocking_gap(tmp_path):
    wm = {"model.layers.0.self_attn.o_proj.weight": "model-00001-of-00002.safetensors",
          "model.layers.2.eh_proj.weight": "model-00002-of-00002.safetensors"}
    d = folder(tmp_path / "c", index={"weight_map": wm})
    (d / "model-00001-of-00002.safetensors").write_bytes(tiny({"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8])}))
    os.symlink(d / "model-00002-of-00002.safetensors", d / "model-00002-of-00002.safetensors")  # unreadable, even for root
    rep = audit_checkpoint(d)
    # the index still names the MTP tensor, so presence is decided: the gap does not block
    assert [(g.path, g.blocking) for g in rep.gaps] == [("model-00002-of-00002.safetensors", False)]
    assert rep.facts["checkpoint"]["mtp"]["tensors"] == 1
    assert not rep.inconclusive


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied_shard(tmp_path):
    d = folder(tmp_path / "c", shard=tiny(TENSORS), index={"weight_map": {k: "model.safetensors" for k in TENSORS}})
    (d / "model.safetensors").chmod(0)
    rep = audit_checkpoint(d)
    assert [(g.path, g.blocking) for g in rep.gaps] == [("model.safetensors", False)]


def test_escaping_weight_map_never_opened(tmp_path):
    secret = tmp_path / "outside.safetensors"
    secret.write_bytes(tiny({"mtp.fc.weight": ("BF16", [2, 2])}))
    wm = {k: "model.safetensors" for k in TENSORS}
    wm["model.norm.weight"] = "../outside.safetensors"
    wm["lm_head.weight"] = "/etc/passwd"
    d = folder(tmp_path / "c", shard=tiny(TENSORS), index={"weight_map": wm})
    rep = audit_checkpoint(d)
    hits = sorted(x.location.symbol for x in rep.findings if x.rule_id == "MTP010")
    assert hits == ["/weight_map/lm_head.weight", "/weight_map/model.norm.weight"]
    assert "mtp.fc.weight" not in rep.facts["checkpoint"]["mtp"]["tensors_per_layer"]
    assert rep.facts["checkpoint"]["mtp"]["tensors"] == 1  # only model.layers.2.eh_proj


def test_missing_shard_and_sidecar(tmp_path):
    wm = {"model.layers.0.self_attn.o_proj.weight": "model-00001-of-00002.safetensors",
          "model.layers.1.self_attn.o_proj.weight": "model-00002-of-00002.safetensors"}
    d = folder(tmp_path / "c", index={"weight_map": wm})
    (d / "model-00001-of-00002.safetensors").write_bytes(tiny({"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8])}))
    (d / "mtp.safetensors").write_bytes(tiny({"model.layers.2.eh_proj.weight": ("BF16", [8, 16])}))
    rep = audit_checkpoint(d)
    ids = sorted(x.rule_id for x in rep.findings)
    assert ids == ["MTP008", "MTP009", "MTP020"]  # the sidecar's MTP layer is eh_proj alone
    m9 = [x for x in rep.findings if x.rule_id == "MTP009"][0]
    assert m9.location.path == "mtp.safetensors" and m9.location.symbol == "model.layers.2.eh_proj.weight"
    assert rep.facts["checkpoint"]["shards"]["unindexed"] == ["mtp.safetensors"]
    assert rep.facts["checkpoint"]["summary"]["sglang_mtp_usable"] is False


def test_first_line_agrees_with_the_findings(tmp_path):
    """Found by a fresh-user run: a malformed shard gave 'FAIL: ... there is no index and no shard to check ...
    could not tell', and an MTP-only shard with no config.json said 'no MTP layers declared and no MTP tensors'."""
    from mtp_audit.cli.main import main
    from mtp_audit.formats import render

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"architectures": ["MiMoForCausalLM"], "model_type": "mimo",
                                                 "num_hidden_layers": 2, "num_nextn_predict_layers": 1}))
    head = json.dumps({"model.mtp_layers.0.x": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 99999]}}).encode()
    (bad / "model.safetensors").write_bytes(struct.pack("<Q", len(head)) + head + b"\0" * 4)
    rep = audit_checkpoint(bad)
    assert [f.rule_id for f in rep.findings] == ["MTP013"]
    first = render(rep, "text").splitlines()[0]
    assert first.startswith("FAIL: config.json declares 1 MTP layer, but no shard header could be read (model.safetensors)")
    assert "no shard to check" not in first and "(MTP013)" in first
    assert main(["checkpoint", str(bad), "-o", str(tmp_path / "r.txt")]) == 1

    solo = tmp_path / "solo"
    solo.mkdir()
    (solo / "mtp.safetensors").write_bytes(tiny({"mtp.fc.weight": ("BF16", [4, 8])}))
    first = render(audit_checkpoint(solo / "mtp.safetensors"), "text").splitlines()[0]
    # mtp.fc alone: the glue without its decoder block (MTP020), and no config.json to declare it
    assert first.startswith("FAIL: 1 MTP tensor ships but it is not usable; --speculative-algorithm NEXTN will not get working MTP heads (MTP020)")


@pytest.mark.parametrize("odd", ["junk\nmodel.layers.0.enorm.weight", "junk\nmodel.layers.1.eh_proj.weight"])
def test_a_tensor_name_holding_a_newline_is_not_read_as_two_names(tmp_path: Path, odd: str) -> None:
    """A trunk tensor named ``"junk\\nmodel.layers.0.enorm.weight"``: its second line is not a misplaced MTP-only
    tensor of its own (that crashed MTP014 with StopIteration, exit 4); the audit answers as without it."""
    cfg = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 2,
           "num_nextn_predict_layers": 1, "torch_dtype": "bfloat16", "hidden_size": 8}
    names = {"model.layers.0.mlp.down_proj.weight": ("BF16", [8, 8]), "model.layers.1.mlp.down_proj.weight": ("BF16", [8, 8]),
             **{f"model.layers.2.{leaf}.weight": ("BF16", [8, 8]) for leaf in ("enorm", "hnorm", "eh_proj")},
             "model.layers.2.mlp.down_proj.weight": ("BF16", [8, 8]), odd: ("BF16", [8])}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "model.safetensors").write_bytes(tiny(names))
    report = audit_checkpoint(str(tmp_path))
    assert "MTP014" not in {f.rule_id for f in report.findings}


MTP_LAYER = {f"model.layers.2.{n}.weight": ("BF16", [8, 16] if n == "eh_proj" else [8])
             for n in ("eh_proj", "enorm", "hnorm", "shared_head.norm", "self_attn.o_proj")}


def _two_shards(d: Path) -> Path:
    """A DeepSeek-V3 folder whose second shard holds the 5 tensors of its MTP layer (model.layers.2)."""
    wm = {"model.layers.0.self_attn.o_proj.weight": "model-00001-of-00002.safetensors"}
    wm.update({n: "model-00002-of-00002.safetensors" for n in MTP_LAYER})
    folder(d, index={"weight_map": wm})
    (d / "model-00001-of-00002.safetensors").write_bytes(tiny({"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8])}))
    return d


def test_dangling_shard_link_is_mtp008(capsys, tmp_path):
    d = _two_shards(tmp_path / "c")
    os.symlink("model-nothere.safetensors", d / "model-00002-of-00002.safetensors")
    rep = audit_checkpoint(d)
    hits = [x.message for x in rep.findings if x.rule_id == "MTP008"]
    assert hits == ["model.safetensors.index.json maps 5 tensor(s) to model-00002-of-00002.safetensors, "
                    "which is a symlink to no file, 5 of them MTP tensors"]
    assert not rep.gaps
    assert run_cli(capsys, ["checkpoint", str(d)])[0] == 1


def test_shard_link_outside_the_folder_is_a_blocking_gap(capsys, tmp_path):
    d = _two_shards(tmp_path / "c")
    outside = tmp_path / "outside.safetensors"
    outside.write_bytes(tiny(MTP_LAYER))
    os.symlink(outside, d / "model-00002-of-00002.safetensors")
    os.symlink(tmp_path / "gone.safetensors", d / "model-00003-of-00003.safetensors")  # outside and dangling: never looked at
    rep = audit_checkpoint(d)
    assert [(g.path, g.blocking) for g in rep.gaps] == [("model-00002-of-00002.safetensors", True),
                                                        ("model-00003-of-00003.safetensors", True)]
    assert rep.inconclusive
    rc, out, _ = run_cli(capsys, ["checkpoint", str(d)])
    assert rc == 3 and out.startswith("INCONCLUSIVE")


def test_shard_under_a_symlinked_folder_outside_is_the_same_blocking_gap(capsys, tmp_path):
    """The index names ``sub/model-00002-of-00002.safetensors`` (the 5 MTP tensors) and ``sub`` is a symlink out of the
    folder: the same blocking gap as a symlinked shard file, naming the link (it was a note, 'names 1 shard file(s),
    none read', with the trunk shard present it was MTP008 'not in the folder'), and no MTP008 'not in the folder'. The
    one MTP008 is for the sub-folder name itself, which no engine loads (vLLM 0.33.0 compares the joined path with its
    top-level glob: default_loader.py:230, weight_utils.py:603-613)."""
    d = tmp_path / "c"
    wm = {"model.layers.0.self_attn.o_proj.weight": "model-00001-of-00002.safetensors"}
    wm.update({n: "sub/model-00002-of-00002.safetensors" for n in MTP_LAYER})
    folder(d, index={"weight_map": wm})
    (d / "model-00001-of-00002.safetensors").write_bytes(tiny({"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8])}))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "model-00002-of-00002.safetensors").write_bytes(tiny(MTP_LAYER))
    os.symlink(tmp_path / "elsewhere", d / "sub")
    rep = audit_checkpoint(d)
    assert [f.rule_id for f in rep.findings] == ["MTP008"]
    assert "not a top-level shard name" in rep.findings[0].message and "not in the folder" not in rep.findings[0].message
    assert [(g.path, g.blocking, g.message) for g in rep.gaps] == [
        ("sub/model-00002-of-00002.safetensors", True, "resolves outside the checkpoint folder (symlink sub); not opened; "
         "tensor dtypes and shapes in this shard unknown")]
    rc, out, _ = run_cli(capsys, ["checkpoint", str(d)])
    assert rc == 1 and out.startswith("FAIL")  # the error outranks the could-not-tell (was exit 3, INCONCLUSIVE)


@pytest.mark.parametrize("drop, missing", [
    (("eh_proj", "enorm", "hnorm", "shared_head.norm"),
     "model.layers.2.eh_proj.weight, model.layers.2.enorm.weight, model.layers.2.hnorm.weight, "
     "model.layers.2.shared_head.norm.weight"),
    (("hnorm",), "model.layers.2.hnorm.weight"),
])
def test_deepseek_mtp_layer_without_its_glue_is_mtp021(capsys, tmp_path, drop, missing):
    """The decoder block ships, the NextN glue (eh_proj, enorm, hnorm, shared_head.norm) does not: vLLM's and SGLang's
    DeepSeek NextN module builds those parameters for every MTP layer, so the draft cannot load (vLLM) or is garbage."""
    kept = {n: v for n, v in MTP_LAYER.items() if n.split(".", 3)[3].rsplit(".", 1)[0] not in drop}
    d = _two_shards(tmp_path / "c")
    (d / "model-00002-of-00002.safetensors").write_bytes(tiny(kept))
    wm = {"model.layers.0.self_attn.o_proj.weight": "model-00001-of-00002.safetensors",
          **{n: "model-00002-of-00002.safetensors" for n in kept}}
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wm}))
    rep = audit_checkpoint(d)
    hits = [f for f in rep.findings if f.rule_id == "MTP021"]
    assert [f.severity.label for f in hits] == ["error"]
    assert hits[0].message.startswith(f"model.layers.2 holds {len(kept)} MTP tensor(s) of its decoder block but not {missing}: ")
    assert run_cli(capsys, ["checkpoint", str(d)])[0] == 1


def test_deepseek_mtp_layer_with_its_glue_has_no_mtp021(tmp_path):
    d = _two_shards(tmp_path / "c")
    (d / "model-00002-of-00002.safetensors").write_bytes(tiny(MTP_LAYER))
    assert [f.rule_id for f in audit_checkpoint(d).findings] == []


def _one_indexed_shard(d: Path) -> Path:
    """A DeepSeek-V3 folder whose index maps the trunk tensor and the 5 MTP tensors to one shard, not written."""
    wm = {n: "model-00001-of-00001.safetensors" for n in ["model.layers.0.self_attn.o_proj.weight", *MTP_LAYER]}
    return folder(d, index={"weight_map": wm})


@pytest.mark.parametrize("with_trunk_shard", [False, True])
def test_a_folder_in_a_shards_place_is_mtp008_not_not_downloaded(capsys, tmp_path, with_trunk_shard):
    """A directory named like the indexed shard (``mkdir model-00001-of-00001.safetensors``): every loader's open
    fails on it (IsADirectoryError). It was walked into, never listed, and read as "not downloaded": PASS, exit 0."""
    d = _one_indexed_shard(tmp_path / "c")
    if with_trunk_shard:  # another shard present: the folder mode reads headers
        idx = json.loads((d / "model.safetensors.index.json").read_text())
        idx["weight_map"]["model.layers.0.self_attn.o_proj.weight"] = "model-00000-of-00001.safetensors"
        (d / "model.safetensors.index.json").write_text(json.dumps(idx))
        (d / "model-00000-of-00001.safetensors").write_bytes(tiny({"model.layers.0.self_attn.o_proj.weight": ("BF16", [8, 8])}))
    (d / "model-00001-of-00001.safetensors").mkdir()
    rep = audit_checkpoint(d)
    (f,) = [x for x in rep.findings if x.rule_id == "MTP008"]
    n = 5 if with_trunk_shard else 6
    assert f.message == (f"model.safetensors.index.json maps {n} tensor(s) to model-00001-of-00001.safetensors, which is a "
                         "directory, not a file (the loader's open fails on it), 5 of them MTP tensors")
    assert not [g for g in rep.gaps if g.path == "model-00001-of-00001.safetensors"]
    rc, out, _ = run_cli(capsys, ["checkpoint", str(d)])
    assert rc == 1 and out.startswith("FAIL") and "(MTP008)" in out.splitlines()[0]


def test_a_fifo_in_an_indexed_shards_place_blocks(capsys, tmp_path):
    """A FIFO the index names is never read: a blocking gap (it was a note, PASS exit 0, because the index covers the
    shard's names)."""
    d = _one_indexed_shard(tmp_path / "c")
    os.mkfifo(d / "model-00001-of-00001.safetensors")
    rep = audit_checkpoint(d)
    assert [(g.path, g.blocking) for g in rep.gaps] == [("model-00001-of-00001.safetensors", True)]
    assert rep.gaps[0].message.startswith("is a FIFO, expected a regular file; not read")
    rc, out, _ = run_cli(capsys, ["checkpoint", str(d)])
    assert rc == 3 and out.startswith("INCONCLUSIVE")


def test_a_symlink_out_of_the_folder_names_its_target(tmp_path):
    """The message says where the link points and that the target was not looked at (it said only "resolves
    outside the checkpoint folder (symlink)", also for a link to a path that does not exist)."""
    d = _one_indexed_shard(tmp_path / "c")
    os.symlink("/nonexistent", d / "model-00001-of-00001.safetensors")
    rep = audit_checkpoint(d)
    assert [(g.blocking, g.message) for g in rep.gaps] == [(True, (
        "resolves outside the checkpoint folder (symlink to /nonexistent; whether a file is there was not checked); not "
        "opened; tensor dtypes and shapes in this shard unknown"))]


@pytest.mark.parametrize("name", ["moonshotai--Kimi-K3", "mistralai--Mixtral-8x22B-v0.1"])
def test_a_config_only_folder_does_not_claim_no_mtp_tensors(capsys, name):
    """config.json alone, declaring no MTP layer: the tensors were not inspected, so the headline does not say "no MTP
    tensors" (it did); the answer stays no (exit 0: nothing declared, engines load no MTP layer)."""
    d = Path(__file__).resolve().parent.parent / "fixtures" / "checkpoint" / name
    rc, out, _ = run_cli(capsys, ["checkpoint", str(d)])
    assert rc == 0 and out.splitlines()[0] == (
        "PASS: no MTP layers declared (tensors not inspected: no index and no shard): speculative decoding would need a "
        "separate draft model (exit 0)")


def test_an_empty_path_is_refused_not_read_as_the_current_folder(capsys, tmp_path, monkeypatch):
    """``audit_checkpoint("")`` audited the current folder (Path("") is "."): it is one line, exit 2, naming it."""
    monkeypatch.chdir(folder(tmp_path / "c", shard=tiny(TENSORS)))  # a checkpoint there: "" must not audit it
    with pytest.raises(InputError, match=r"^'': empty path: name a checkpoint folder, a file or a hub repo id$"):
        audit_checkpoint("")
    rc, out, err = run_cli(capsys, ["checkpoint", ""])
    assert (rc, out, err) == (2, "", "mtp-audit: error: '': empty path: name a checkpoint folder, a file or a hub repo id\n")


def test_glue_shortcut_is_never_a_false_all_present() -> None:
    """``_glue_everywhere`` skips MTP021's pass only where every layer holds all four glue tensors as its own: a layer
    missing one, or a glue name that another layer's label claims, makes it decline (the full pass then decides)."""
    from mtp_audit.checkpoint.checks import _DEEPSEEK_GLUE, _glue_everywhere

    full = {f"model.layers.{i}.{g}": (f"model.layers.{i}", None) for i in (61, 62) for g in _DEEPSEEK_GLUE}
    full["model.layers.61.self_attn.o_proj.weight"] = ("model.layers.61", None)
    assert _glue_everywhere(full)
    assert not _glue_everywhere({n: v for n, v in full.items() if n != "model.layers.62.hnorm.weight"})
    assert not _glue_everywhere({**full, "model.layers.62.enorm.weight": ("model.layers.61", None)})
    assert _glue_everywhere({})
