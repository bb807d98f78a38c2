"""Real llama.cpp MTP reports from the trackers, replayed: the command line each reporter pasted (trimmed of
flags that do not bear on MTP only where noted), the build they named, and a GGUF with the architecture,
block count and nextn blocks their file has (tensor shapes are toy-sized; names, keys and counts are real).
Each test asserts what mtp-audit says before the load, checked by hand against what the reporter saw."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit.launch import audit_launch
from mtp_audit.synth.gguf import model_kv, nextn_tensors, trunk_tensors, write_gguf


def _gguf(path: Path, arch: str, trunk: int, heads: int, *, sidecar: bool = False, ggml_type: int = 8) -> None:
    """A model of ``trunk`` blocks plus ``heads`` MTP blocks (``blk.{trunk}..``); a sidecar holds only the heads."""
    blocks = trunk + heads
    tensors = [] if sidecar else trunk_tensors(range(min(trunk, 4)))
    for b in range(trunk, blocks):
        tensors += nextn_tensors(b, ggml_type=ggml_type)
    write_gguf(path, model_kv(arch, blocks=blocks if heads else trunk, nextn=heads or None), tensors)


def _ids(report, severity: str | None = None) -> list[str]:
    """Rule ids of a report, without MTP612 (the head's memory note of every drafting launch; asserted in
    test_llamacpp_fp4.py)."""
    return sorted({f.rule_id for f in report.findings if f.rule_id != "MTP612" and (severity is None or f.severity.label == severity)})


def test_27151_sidecar_with_spec_draft_model_runs(tmp_path: Path) -> None:
    """ggml-org/llama.cpp #27151 (2026-08-15, 'MTP draft acceptance 1 of 633'), build 10444: Qwen3.8-27B trunk +
    mtp-Qwen3.8-27B-Q4_0.gguf via --spec-draft-model, --spec-type draft-mtp, -np 1, n_max 3. The launch itself is
    right (the low acceptance is a runtime matter): no error, the head is the sidecar's."""
    _gguf(tmp_path / "Qwen3.8-27B-Q4_K_M.gguf", "qwen35", 64, 0)
    _gguf(tmp_path / "mtp-Qwen3.8-27B-Q4_0.gguf", "qwen35", 64, 1, sidecar=True, ggml_type=2)
    cmd = ("llama-server --jinja -m Qwen3.8-27B-Q4_K_M.gguf --n-gpu-layers 666 --cache-prompt --load-mode none "
           "--no-kv-unified --spec-draft-model mtp-Qwen3.8-27B-Q4_0.gguf --device Vulkan0 --ubatch-size 512 "
           "--ctx-size 196608 --spec-draft-type-v f16 --cache-type-v q8_0 --spec-draft-p-min 0.2 --parallel 1 "
           "--spec-type draft-mtp --top-k 20 --port 9931 --spec-draft-n-max 3 --flash-attn on --no-mmproj")
    version = "version: 0.1.0-dev (build 10444, commit 037f2f344)\nbuilt with Clang 22.1.8 for FreeBSD amd64\n"
    dump = tmp_path / "version.txt"
    dump.write_text(version)
    r = audit_launch([cmd], env_dumps=[dump], cwd=tmp_path)
    s = r.facts["launch"]["summary"]
    assert (s["build"], s["mtp_runs"], s["verdict"], s["mtp_head"]) == (10444, True, "go", "mtp-Qwen3.8-27B-Q4_0.gguf (--spec-draft-model)")
    assert _ids(r, "error") == [] and _ids(r, "warning") == []


def test_22673_spec_default_is_not_mtp(tmp_path: Path) -> None:
    """ggml-org/llama.cpp PR #22673 comment (2026-05-17): Qwen3.6-35B-A3B-MTP-UD-Q4_K_XL.gguf launched with
    --spec-default and no --spec-type: the n-gram preset runs, the MTP head (blk.40.nextn.*) never drafts."""
    _gguf(tmp_path / "Qwen3.6-35B-A3B-MTP-UD-Q4_K_XL.gguf", "qwen35moe", 40, 1)
    cmd = ("llama-server -m Qwen3.6-35B-A3B-MTP-UD-Q4_K_XL.gguf -c 65536 --mlock --no-mmap --flash-attn on --no-mmproj "
           "--fit-target 1280 --spec-default --cache-type-k q8_0 --cache-type-v q8_0 --cache-ram 4096 --parallel 1 --host 0.0.0.0")
    r = audit_launch([cmd], llamacpp="9190", cwd=tmp_path)
    assert _ids(r) == ["MTP600"]
    f = r.findings[0]
    assert "no --spec-type (--spec-default is an n-gram preset)" in f.message and "1 MTP head(s)" in f.message
    assert r.facts["launch"]["summary"]["corrected_command"].endswith("--spec-type draft-mtp")
    assert r.facts["launch"]["verdict"] == "go without MTP"
    assert r.facts["launch"]["corrected_check"] == {"verdict": "go", "mtp_runs": True, "findings": ["MTP607"]}


def _gemma_drafter(path: Path, arch: str = "gemma4_assistant") -> None:
    """A Gemma-4 assistant drafter as the public GGUFs lay it out: its own 4 blocks (blk.0-3, MTP layers from block 0,
    ggml-org/llama.cpp PR #28183) and the pre/post projections (``mtp_pre_proj`` / ``mtp_post_proj``, ik_llama.cpp
    PR #1925); no blk.N.nextn.* tensors."""
    tensors = trunk_tensors(range(4)) + [("mtp_pre_proj.weight", (128, 64), 1), ("mtp_post_proj.weight", (64, 128), 1)]
    write_gguf(path, model_kv(arch, blocks=4, nextn=None), tensors)


def test_24443_model_draft_without_spec_type(tmp_path: Path) -> None:
    """ggml-org/llama.cpp #24443 comment (2026-07-28): Gemma-4 12B with --model-draft mtp-gemma-4-12B-it.gguf and
    no --spec-type: the assistant drafter is loaded and the default spec type (none) leaves it unused."""
    _gguf(tmp_path / "gemma-4-12B-it-qat-UD-Q4_K_XL.gguf", "gemma4", 48, 0)
    _gemma_drafter(tmp_path / "mtp-gemma-4-12B-it.gguf")
    (tmp_path / "mmproj-F16.gguf").write_bytes(b"")  # named by the command, never read
    cmd = ("llama-server --model gemma-4-12B-it-qat-UD-Q4_K_XL.gguf --mmproj mmproj-F16.gguf --model-draft "
           "mtp-gemma-4-12B-it.gguf --temp 1.0 --top-p 0.95 --top-k 64 --alias unsloth/gemma-4-12b-it-qat-GGUF --port 8001")
    r = audit_launch([cmd], llamacpp="10400", cwd=tmp_path)
    assert _ids(r) == ["MTP600"]
    assert "mtp-gemma-4-12B-it.gguf (--model-draft)" in r.findings[0].message
    assert r.facts["launch"]["corrected_command"].endswith("--spec-type draft-mtp")


def test_23161_gemma4_assistant_before_its_support(tmp_path: Path) -> None:
    """ggml-org/llama.cpp #23161 comment (2026-05-17), b9190: --spec-draft-model gemma-4-E4B-it-assistant.Q4_K_M.gguf
    --spec-type draft-mtp fails with "unknown model architecture: 'gemma4_assistant'" (support came with PR #23398,
    2026-05-20). The drafter is recognised without an mtp- file name; after the support the same launch runs."""
    _gguf(tmp_path / "google_gemma-4-E4B-it-IQ4_NL.gguf", "gemma4", 42, 0)
    _gemma_drafter(tmp_path / "gemma-4-E4B-it-assistant.Q4_K_M.gguf")
    cmd = ("llama-server -m google_gemma-4-E4B-it-IQ4_NL.gguf --spec-draft-model gemma-4-E4B-it-assistant.Q4_K_M.gguf "
           "--spec-type draft-mtp --spec-draft-n-max 3 -ngl all -np 1 --kv-unified")
    early = audit_launch([cmd], llamacpp="b9190", cwd=tmp_path)
    assert _ids(early, "error") == ["MTP604"]
    assert "gemma4_assistant" in next(f.message for f in early.findings if f.rule_id == "MTP604")
    later = audit_launch([cmd], llamacpp="b9400", cwd=tmp_path)
    assert _ids(later) == [] and later.facts["launch"]["summary"]["mtp_runs"] is True


def test_28196_b10741_cannot_start_draft_mtp(tmp_path: Path) -> None:
    """ggml-org/llama.cpp #28196 comment (2026-09-03): on b10741 (#28159) draft-mtp cannot start on any GGUF with an
    MTP head (the qwen3.8:27b blob has blk.64.nextn.*); fixed in b10749."""
    _gguf(tmp_path / "qwen3.8-27b.gguf", "qwen35", 64, 1)
    cmd = "llama-server -m qwen3.8-27b.gguf --spec-type draft-mtp --spec-draft-n-max 4 -ngl 99"
    broken = audit_launch([cmd], llamacpp="b10741", cwd=tmp_path)
    assert _ids(broken, "error") == ["MTP608"]
    assert broken.facts["launch"]["summary"]["mtp_runs"] is False
    fixed = audit_launch([cmd], llamacpp="b10749", cwd=tmp_path)
    assert _ids(fixed, "error") == [] and fixed.facts["launch"]["summary"]["mtp_runs"] is True


def test_club3090_102_old_spelling_mtp(tmp_path: Path) -> None:
    """noonghunna/club-3090 #102 (2026-05-10): '--spec-type mtp' from am17an's pre-merge branch; on a released
    llama.cpp the type is draft-mtp (renamed 2026-05-13), so the server refuses the argument."""
    _gguf(tmp_path / "Qwen3.6-27B-MTP-Q4_K_M.gguf", "qwen35", 64, 1)
    r = audit_launch(["llama-server", "-m", "Qwen3.6-27B-MTP-Q4_K_M.gguf", "--spec-type", "mtp", "-ngl", "99"],
                              llamacpp="9305", cwd=tmp_path)
    assert _ids(r, "error") == ["MTP602"]
    assert "spells it draft-mtp" in r.findings[0].message
    assert r.facts["launch"]["corrected_command"].endswith("--spec-type draft-mtp -ngl 99")


def test_lemonade_2451_glm4moe_has_no_mtp_graph(tmp_path: Path) -> None:
    """lemonade-sdk/lemonade #2451: GLM-4-MoE GGUFs carry nextn tensors; draft-mtp on them crashes: no merged
    llama.cpp build has a glm4moe MTP graph (GLM-4.5-Air: 46 blocks + 1 nextn block)."""
    _gguf(tmp_path / "GLM-4.5-Air-Q4_K_M.gguf", "glm4moe", 46, 1)
    r = audit_launch(["llama-server", "-m", "GLM-4.5-Air-Q4_K_M.gguf", "--spec-type", "draft-mtp"], llamacpp="10444",
                              cwd=tmp_path)
    assert _ids(r, "error") == ["MTP604"]
    assert any(f.rule_id == "MTP033" for f in r.findings)  # the checkpoint side says it too


def test_24340_step37_n_max_above_three_heads(tmp_path: Path) -> None:
    """ggml-org/llama.cpp PR #24340 (2026-06-14): Step-3.7 with Step3.7-flash-mtp-Q8_0.gguf (3 chained heads,
    blk.45-47) and --spec-draft-n-max {n}: above 3 the value is clamped."""
    _gguf(tmp_path / "Step-3.7-IQ4_XS.gguf", "step35", 45, 0)
    _gguf(tmp_path / "Step3.7-flash-mtp-Q8_0.gguf", "step35", 45, 3, sidecar=True)
    base = ["llama-server", "-m", "Step-3.7-IQ4_XS.gguf", "--spec-type", "draft-mtp", "--spec-draft-model",
            "Step3.7-flash-mtp-Q8_0.gguf", "-ngl", "all", "--spec-draft-ngl", "all", "-c", "35000", "-np", "1"]
    r = audit_launch(base + ["--spec-draft-n-max", "5"], llamacpp="10444", cwd=tmp_path)
    assert _ids(r) == ["MTP606"]
    assert "clamped to 3" in next(f.message for f in r.findings if f.rule_id == "MTP606")
    # the head sits in the -md sidecar: MTP612 names it (3 Q8_0 nextn blocks)
    assert next(f.location.symbol for f in r.findings if f.rule_id == "MTP612") == "--spec-draft-model"
    assert _ids(audit_launch(base + ["--spec-draft-n-max", "3"], llamacpp="10444", cwd=tmp_path)) == []


def test_22673_parallel_four_slots(tmp_path: Path) -> None:
    """ggml-org/llama.cpp PR #22673 comment (2026-05-16): Qwen3.6-35B-A3B-MTP (MXFP4_MOE) with --parallel 4 and
    draft-mtp; later reports (#27572, buun-llama-cpp PR #110) show acceptance collapsing on slots > 0."""
    _gguf(tmp_path / "Qwen3.6-35B-A3B-MTP-MXFP4_MOE.gguf", "qwen35moe", 40, 1)
    cmd = ("llama-server -m Qwen3.6-35B-A3B-MTP-MXFP4_MOE.gguf --ctx-size 1048576 --parallel 4 --batch-size 2048 "
           "--ubatch-size 2048 --cache-type-k q8_0 --cache-type-v q8_0 --flash-attn on --kv-offload --spec-type draft-mtp "
           "--spec-draft-n-max 2 --spec-draft-p-min 0.75")
    r = audit_launch([cmd], llamacpp="b9180", cwd=tmp_path)
    assert _ids(r) == ["MTP605"]
    assert r.findings[0].severity.label == "warning"


@pytest.mark.parametrize(("text", "build", "fork"), [
    ("version: 10444 (037f2f344)\nbuilt with GNU 13.3.0 for Linux x86_64", 10444, "llama.cpp"),
    ("llama.cpp b9305 (63248fc3e)\nbuilt with GNU 13.3.0 for Linux x86_64", 9305, "llama.cpp"),
    ("version: 0.1.0-dev (build 10444, commit 037f2f344)", 10444, "llama.cpp"),
    ("ik:4100", 4100, "ik_llama.cpp"),
])
def test_build_from_version_text(text: str, build: int, fork: str) -> None:
    from mtp_audit.engines.llamacpp.command import parse_build

    info = parse_build(text)
    assert (info.build, info.fork) == (build, fork)


def test_ik_spelling_on_mainline_keeps_its_options_as_flags(tmp_path: Path) -> None:
    """The ik_llama.cpp spelling ``--spec-type mtp:n_max=3,p_min=0.5`` (ik_llama.cpp PR #2369) given to mainline
    llama.cpp: MTP602, and the corrected command says the same in mainline's words instead of dropping n_max
    (it read ``--spec-type draft-mtp,p_min=0.5`` before)."""
    _gguf(tmp_path / "Qwen3.6-35B-A3B-MTP-Q4_K_M.gguf", "qwen35moe", 40, 1)
    cmd = "llama-server -m Qwen3.6-35B-A3B-MTP-Q4_K_M.gguf --spec-type mtp:n_max=3,p_min=0.5 -ngl 99"
    r = audit_launch([cmd], llamacpp="10444", cwd=tmp_path)
    assert "MTP602" in _ids(r, "error")
    fixed = r.facts["launch"]["corrected_command"]
    assert fixed.endswith("--spec-type draft-mtp -ngl 99 --spec-draft-n-max 3 --spec-draft-p-min 0.5"), fixed
    assert r.facts["launch"]["corrected_check"]["mtp_runs"] is True
