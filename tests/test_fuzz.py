"""Fuzz suite (issue 13): generated bad inputs for every reader, run through the CLI in-process, with
the invariants of :func:`fuzzkit.run_cli` asserted on each (exit code in {0,1,2,3}; exit 2 is one
stderr line and nothing on stdout, nothing written; no file but the outputs changes; JSON validates;
no audited code runs; time and memory bounded).

Default run: a few hundred examples per input kind (see each test's ``fuzz_settings``).
Longer run before a release: ``MTP_AUDIT_FUZZ_EXAMPLES=2000 python -m pytest -q tests/test_fuzz.py``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from fuzzkit import (
    FIXTURES,
    OUTPUT_CHOICES,
    WHEEL_EDGES,
    Workspace,
    as_vllm,
    config_doc,
    dumps,
    env_dump_text,
    fuzz_settings,
    index_doc,
    quant_doc,
    run_cli,
    sglang_tree_files,
    shard_bytes,
    write_pickle_marker,
    write_sglang_folder,
    write_special,
    write_wheel,
)
from hypothesis import given
from hypothesis import strategies as st

from mtp_audit.synth.shards import tiny

MIMO = FIXTURES / "checkpoint" / "jj8127--mimo_kor"
FACTS = FIXTURES / "preflight" / "h200-live-facts.json"
FORMATS = st.sampled_from(["json", "json", "text", "sarif", "markdown"])
SG = ["--", "python", "-m", "sglang.launch_server"]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _fmt_args(fmt: str) -> list[str]:
    return ["-f", fmt]


def _ckpt_folder(ws: Workspace) -> Path:
    ck = ws.inputs / "ck"
    ck.mkdir()
    return ck


def _valid_shard() -> bytes:
    return tiny({"model.embed_tokens.weight": ("BF16", [4, 4]), "mtp.layers.0.mlp.experts.0.up_proj.weight": ("BF16", [4, 4]),
                 "mtp.fc.weight": ("BF16", [4, 8]), "model.layers.0.mlp.gate_proj.weight": ("U8", [4, 2]),
                 "model.layers.0.mlp.gate_proj.weight_scale": ("F8_E4M3", [4, 1])})


def _target(draw, ck: Path, ws: Workspace) -> str:  # type: ignore[no-untyped-def]
    files = sorted(p.name for p in ck.iterdir() if p.is_file() and not p.is_symlink())
    choice = draw(st.sampled_from(["folder", "folder", *files] if files else ["folder"]))
    return os.path.relpath(ck if choice == "folder" else ck / choice, ws.root)


# --- checkpoint readers ------------------------------------------------------------------------------


@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_shard_header(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "shard")
    ck = _ckpt_folder(ws)
    if data.draw(st.booleans()):
        shutil.copy(MIMO / "config.json", ck / "config.json")
    names = data.draw(st.lists(st.sampled_from(["model.safetensors", "model-00001-of-00002.safetensors",
                                                "model-00002-of-00002.safetensors", "mtp.safetensors"]),
                               min_size=1, max_size=3, unique=True))
    for name in names:
        (ck / name).write_bytes(data.draw(shard_bytes()) if data.draw(st.integers(0, 3)) else _valid_shard())
    if data.draw(st.integers(0, 4)) == 0:
        write_pickle_marker(ck / "pytorch_model.bin", ws, "pickle")
    fmt = data.draw(FORMATS)
    run_cli(["checkpoint", _target(data.draw, ck, ws), *_fmt_args(fmt)], ws, json_stdout=fmt == "json")


@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_index(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "index")
    ck = _ckpt_folder(ws)
    write_special(ck, ws)
    if data.draw(st.booleans()):
        shutil.copy(MIMO / "config.json", ck / "config.json")
    for name in data.draw(st.lists(st.sampled_from(["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]),
                                   max_size=2, unique=True)):
        (ck / name).write_bytes(_valid_shard() if data.draw(st.booleans()) else data.draw(shard_bytes()))
    raw = dumps(data.draw(index_doc()))
    if data.draw(st.integers(0, 9)) == 0:
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    (ck / "model.safetensors.index.json").write_text(raw, errors="surrogateescape")
    fmt = data.draw(FORMATS)
    run_cli(["checkpoint", _target(data.draw, ck, ws), *_fmt_args(fmt)], ws, json_stdout=fmt == "json")


@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_config_dialects(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "config")
    ck = _ckpt_folder(ws)
    raw = dumps(data.draw(config_doc()))
    mode = data.draw(st.sampled_from(["ok", "ok", "ok", "cut", "bom", "binary", "dupkeys", "deep"]))
    if mode == "cut":
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    elif mode == "bom":
        raw = "\ufeff" + raw
    elif mode == "binary":
        raw = raw + "\x00\udcff"
    elif mode == "dupkeys":
        raw = '{"num_nextn_predict_layers": 1, "num_nextn_predict_layers": "x", ' + raw.lstrip("{")
    elif mode == "deep":
        raw = '{"text_config": ' * 5000 + "{}" + "}" * 5000
    (ck / "config.json").write_text(raw, errors="surrogateescape")
    if data.draw(st.booleans()):
        shutil.copy(MIMO / "model.safetensors.index.json", ck / "model.safetensors.index.json")
    elif data.draw(st.booleans()):
        (ck / "model.safetensors").write_bytes(_valid_shard())
    fmt = data.draw(FORMATS)
    run_cli(["checkpoint", _target(data.draw, ck, ws), *_fmt_args(fmt)], ws, json_stdout=fmt == "json")


@fuzz_settings(200)
@given(data=st.data())
def test_fuzz_quant_configs(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "quant")
    ck = _ckpt_folder(ws)
    cfg = json.loads((MIMO / "config.json").read_text())
    hf, qc = data.draw(quant_doc())
    if qc is not None:
        cfg["quantization_config"] = qc
    (ck / "config.json").write_text(dumps(cfg))
    if hf is not None:
        (ck / "hf_quant_config.json").write_text(dumps(hf))
    (ck / "model.safetensors").write_bytes(_valid_shard())
    fmt = data.draw(FORMATS)
    run_cli(["checkpoint", _target(data.draw, ck, ws), *_fmt_args(fmt)], ws, json_stdout=fmt == "json")


# --- env dumps and facts -----------------------------------------------------------------------------


@fuzz_settings(300)
@given(data=st.data())
def test_fuzz_env_dumps(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "envdump")
    args = ["preflight"]
    for i in range(data.draw(st.integers(1, 2))):
        text = data.draw(env_dump_text(ws))
        p = ws.inputs / f"dump{i}.txt"
        raw = text.encode("utf-8", errors="surrogateescape")
        if data.draw(st.integers(0, 11)) == 0:
            raw = raw[:100] + data.draw(st.binary(max_size=64)) + raw[100:]
        p.write_bytes(raw)
        args += ["--env-dump", os.path.relpath(p, ws.root)]
    fmt = data.draw(FORMATS)
    args += _fmt_args(fmt)
    if data.draw(st.booleans()):
        args += SG + data.draw(st.lists(st.sampled_from(["--quantization", "modelopt_fp4", "--fp4-gemm-backend", "auto",
                                                         "flashinfer_cudnn", "--moe-runner-backend", "flashinfer_trtllm",
                                                         "--tp", "8", "--enable-pdmux", "--kv-cache-dtype", "fp8_e4m3",
                                                         "--model-path", "in/nowhere", "--attention-backend", "trtllm_mha"]),
                                        max_size=8))
    run_cli(args, ws, json_stdout=fmt == "json")


@fuzz_settings(200)
@given(data=st.data())
def test_fuzz_facts_file(base: Path, data: st.DataObject) -> None:
    from fuzzkit import JSON_VALUES

    ws = Workspace(base / "facts")
    facts = json.loads(FACTS.read_text())
    for _ in range(data.draw(st.integers(0, 4))):
        key = data.draw(st.sampled_from(sorted(facts) + ["gpus", "gpus", "driver_version"]))
        if key == "gpus" and isinstance(facts.get("gpus"), list) and facts["gpus"] and data.draw(st.booleans()):
            g = facts["gpus"][0]
            if isinstance(g, dict):
                g[data.draw(st.sampled_from(sorted(g) or ["index"]))] = data.draw(JSON_VALUES)
        else:
            facts[key] = data.draw(JSON_VALUES)
    p = ws.inputs / "facts.json"
    p.write_text(dumps(facts) if data.draw(st.integers(0, 9)) else dumps(data.draw(JSON_VALUES)))
    fmt = data.draw(FORMATS)
    run_cli(["preflight", "--facts", "in/facts.json", *_fmt_args(fmt)], ws, json_stdout=fmt == "json")


# --- SGLang targets ----------------------------------------------------------------------------------


@fuzz_settings(200)
@given(data=st.data())
def test_fuzz_sglang_folders(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "sgfolder")
    files = data.draw(sglang_tree_files(ws))
    extras = data.draw(st.lists(st.sampled_from(["link-out", "dir-link-out", "loop", "non-utf8", "unreadable", "fifo",
                                                 "setup", "checkout"]), max_size=4, unique=True))
    root = write_sglang_folder(ws, files, extras)
    target = data.draw(st.sampled_from([root, root / "sglang"]))
    fmt = data.draw(FORMATS)
    run_cli(["sglang", os.path.relpath(target, ws.root), *_fmt_args(fmt)], ws, json_stdout=fmt == "json")


@fuzz_settings(200)
@given(data=st.data())
def test_fuzz_sglang_wheels(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "sgwheel")
    (ws.root / "outside.py").write_text(ws.marker_code("outside"))
    files = data.draw(sglang_tree_files(ws))
    edges = data.draw(st.lists(st.sampled_from(WHEEL_EDGES), max_size=4, unique=True))
    whl = write_wheel(ws, files, edges)
    fmt = data.draw(FORMATS)
    args = ["sglang", os.path.relpath(whl, ws.root), *_fmt_args(fmt)]
    if data.draw(st.integers(0, 5)) == 0:  # the same wheel through launch
        args = ["launch", "--sglang", os.path.relpath(whl, ws.root), "--facts", str(FACTS), *_fmt_args(fmt), *SG,
                "--model-path", "in/nowhere", "--speculative-algorithm", "NEXTN"]
    run_cli(args, ws, json_stdout=fmt == "json")


@fuzz_settings(150)
@given(data=st.data())
def test_fuzz_vllm_targets(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "vllm")
    (ws.root / "outside.py").write_text(ws.marker_code("outside"))
    files = data.draw(sglang_tree_files(ws))
    files = as_vllm(files, data.draw(st.lists(st.integers(0, 50), min_size=len(files), max_size=len(files))))
    fmt = data.draw(FORMATS)
    if data.draw(st.booleans()):
        edges = data.draw(st.lists(st.sampled_from(WHEEL_EDGES), max_size=4, unique=True))
        target = write_wheel(ws, files, edges, package="vllm")
    else:
        root = ws.inputs / "tree"
        for rel, body in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(body)
        (root / "vllm").mkdir(parents=True, exist_ok=True)
        if data.draw(st.booleans()):
            import contextlib

            with contextlib.suppress(OSError):
                os.symlink(ws.root / "outside.py", root / "vllm" / "envs.py")
        target = data.draw(st.sampled_from([root, root / "vllm"]))
    run_cli(["vllm", os.path.relpath(target, ws.root), *_fmt_args(fmt)], ws, json_stdout=fmt == "json")


# --- output paths ------------------------------------------------------------------------------------


def _output_path(ws: Workspace, choice: str, other: str | None, command: str) -> str:
    """A path of the kind ``choice`` (see fuzzkit.OUTPUT_CHOICES), relative to the workspace; "input"
    means a file ``command`` reads (the env dump, or the index of the checkpoint)."""
    ck = ws.inputs / "ck"
    dump = ws.inputs / "d.txt" if command != "checkpoint" else ck / "model.safetensors.index.json"
    rel = {
        "new": "out/report.txt", "new-in-input-folder": "in/ck/new-report.txt", "input-file": os.path.relpath(dump, ws.root),
        "file-in-input-folder": "in/ck/config.json", "dash": "-", "devnull": os.devnull, "dir": "in/ck",
        "missing-folder": "out/none/x.txt", "long-name": "out/" + "n" * 256, "newline-name": "out/a\nb.txt",
        "non-utf8-name": os.fsdecode(b"out/r\xff.txt"), "dot": ".",
    }.get(choice)
    if rel is not None:
        return rel
    if choice == "symlink-to-input":
        link = ws.outs / "link-to-config"
        if not os.path.lexists(link):
            os.symlink(ck / "config.json", link)
        return "out/link-to-config"
    if choice == "hardlink-to-input":
        link = ws.outs / "hard-dump"
        if not os.path.lexists(link):
            os.link(dump, link)
        return "out/hard-dump"
    if choice == "dangling-symlink":
        link = ws.outs / "dangling"
        if not os.path.lexists(link):
            os.symlink(ws.outs / "nowhere" / "x", link)
        return "out/dangling"
    return other or "out/report.txt"  # same-as-other


def _aliases_input(ws: Workspace, rel: str, inputs: list[str]) -> bool:
    """Whether writing ``rel`` would change an existing file that the command reads (``inputs``: files
    and folders, relative to the workspace): the same inode, through a symlink or a hard link. A new
    file, even inside an input folder, is a legitimate output."""
    try:
        st_ = os.stat(ws.root / rel)
    except (OSError, ValueError):
        return False
    ids = set()
    for name in inputs:
        for p in [ws.root / name, *(ws.root / name).rglob("*")]:
            if p.is_file():
                ids.add((p.stat().st_dev, p.stat().st_ino))
    return (st_.st_dev, st_.st_ino) in ids


@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_output_paths(base: Path, data: st.DataObject) -> None:
    ws = Workspace(base / "outputs")
    shutil.copytree(MIMO, ws.inputs / "ck")
    shutil.copy(FIXTURES / "preflight" / "envdumps" / "sglang-18943.txt", ws.inputs / "d.txt")
    command = data.draw(st.sampled_from(["checkpoint", "checkpoint-index", "preflight", "preflight-launch", "launch"]))
    reads = "checkpoint" if command.startswith("checkpoint") else command
    first = _output_path(ws, data.draw(st.sampled_from(OUTPUT_CHOICES)), None, reads)
    second = _output_path(ws, data.draw(st.sampled_from(OUTPUT_CHOICES)), first, reads) if data.draw(st.booleans()) else None
    fmt = data.draw(FORMATS)
    out_args = ["-o", first] if data.draw(st.integers(0, 5)) else []
    if command == "checkpoint":
        args = ["checkpoint", "in/ck", *out_args]
    elif command == "checkpoint-index":
        args = ["checkpoint", "in/ck/model.safetensors.index.json", *out_args]
    elif command.startswith("preflight"):
        save = ["--save-facts", second] if second is not None else []
        args = ["preflight", "--env-dump", "in/d.txt", *save, *out_args]
        if command == "preflight-launch":
            args += [*SG, data.draw(st.sampled_from(["--model-path=in/ck", "--model-path"])), "in/ck"]
    else:
        args = ["launch", "--env-dump", "in/d.txt", *out_args, *SG, "--model-path", "in/ck",
                "--speculative-algorithm", "NEXTN", "--speculative-draft-model-path", "in/ck"]
    inputs = {"checkpoint": ["in/ck"], "checkpoint-index": ["in/ck"], "preflight": ["in/d.txt"]}.get(command, ["in/ck", "in/d.txt"])
    outputs = [o for o in (first if out_args else None, second if command.startswith("preflight") else None)
               if o is not None and o not in ("-", os.devnull) and not _aliases_input(ws, o, inputs)]
    run_cli([*args[:1], *_fmt_args(fmt), *args[1:]], ws, outputs=outputs, json_stdout=fmt == "json" and not out_args)
