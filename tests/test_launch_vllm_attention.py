"""The attention backend of a vLLM launch, replayed from the real releases' selection code (cached wheels 0.33.0, 0.24.0,
0.11.0; conftest.vllm_wheel). Every expected value was checked by hand in the unpacked wheels:

- 0.33.0 ``vllm/platforms/cuda.py``: ``_get_backend_priorities`` (:84) puts FLASH_ATTN first for non-MLA below SM100 and
  TRITON_MLA first for MLA on SM12x; ``get_attn_backend_cls`` returns at :518 (auto) / :449 (explicit), raises the
  selected-backend ValueError at :443; ``FlashInferMLABackend.supports_compute_capability`` is ``major == 10``
  (``vllm/v1/attention/backends/mla/flashinfer_mla.py:220``); the unknown-name ValueError is the enum metaclass's
  ``__getitem__`` (``vllm/v1/attention/backends/registry.py:28``).
- 0.24.0: auto returns at ``cuda.py:490``, the selected-backend ValueError at :415; FlashInfer's ``supports_sink`` is
  false on SM120 there ('attention sinks not supported', ``vllm/v1/attention/backend.py`` ``validate_configuration``).
- 0.11.0: ``VLLM_ATTENTION_BACKEND=FLASH_ATTN`` returns the FlashAttention class path at ``cuda.py:326``.

Machines: the SM120 RTX PRO 6000 env dump of vllm#57932 and the H200 (SM90) live facts (fixtures/preflight)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.launch import audit_launch
from mtp_audit.report import Severity, exit_code

pytestmark = pytest.mark.network

SM120 = FIXTURES / "preflight" / "envdumps" / "vllm-57932.txt"
H200 = FIXTURES / "preflight" / "h200-live-facts.json"
CONFIGS = FIXTURES / "oracle-configs"
GPT_OSS = FIXTURES / "launch" / "vllm-40153-gpt-oss-20b"


def _launch(version: str, *cmd: str, machine=SM120, env: dict | None = None):
    kw = {"facts_file": machine} if machine.suffix == ".json" else {"env_dumps": [machine]}
    r = audit_launch(["vllm", "serve", *cmd], vllm=vllm_wheel(version), environ=env or {}, cwd=FIXTURES, **kw)
    return r, r.facts["launch"]["summary"]["backends"]


def test_auto_selection_non_mla_on_sm120_is_flash_attn() -> None:
    r, backends = _launch("0.33.0", str(CONFIGS / "Qwen--Qwen3-30B-A3B"), "-tp", "1")
    assert "attention FLASH_ATTN (auto; decided at vllm/platforms/cuda.py:518)" in backends
    assert not any(f.rule_id == "MTP332" for f in r.findings)


def test_auto_selection_mla_on_sm120_is_triton_mla_on_both_newer_releases() -> None:
    # vllm#32732 (January 2026): 0.14.0 found no valid attention backend for DeepSeek-R1-0528-NVFP4 on an RTX PRO 6000;
    # 0.24.0 and 0.33.0 list TRITON_MLA first for MLA on SM12x and it accepts the model (DeepSeek-V3.1-NVFP4: same MLA dims)
    for version, line in (("0.24.0", 490), ("0.33.0", 518)):
        r, backends = _launch(version, str(CONFIGS / "nvidia--DeepSeek-V3.1-NVFP4"), "-tp", "1")
        assert f"attention MLA TRITON_MLA (auto; decided at vllm/platforms/cuda.py:{line})" in backends, (version, backends)
        assert not any(f.rule_id == "MTP332" for f in r.findings)


def test_flashinfer_mla_forced_on_sm90_is_refused_with_vllms_reason() -> None:
    r, _ = _launch("0.33.0", str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "-tp", "1", "--attention-backend", "FLASHINFER_MLA", machine=H200)
    f = next(f for f in r.findings if f.rule_id == "MTP332")
    assert f.severity == Severity.ERROR and exit_code(r, Severity.ERROR) == 1
    assert ("ValueError: Selected backend AttentionBackendEnum.FLASHINFER_MLA is not valid for this configuration. "
            "Reason: ['compute capability not supported'] (vllm/platforms/cuda.py:443)") in f.message
    assert "SM 9.0, head size 576" in f.message and "MLA" in f.message


def test_gpt_oss_on_sm120_report_40153() -> None:
    # https://github.com/vllm-project/vllm/issues/40153 (vLLM 0.17.0, 2026): GPT-OSS-20B on an RTX PRO 6000 (SM120) runs
    # TRITON_ATTN by default ("Using TRITON_ATTN attention backend out of potential backends: ['TRITON_ATTN']"), and
    # attention_backend="FLASHINFER" fails at start-up for attention sinks. FLASH_ATTN: sinks need FA3/FA4
    # (fa_utils.flash_attn_supports_sinks), FA2 only on SM12x; FLASHINFER: sinks only through TRTLLM attention, whose
    # availability vLLM checks with vllm.envs and the cubins (vllm/utils/flashinfer.py:675-697)
    r, backends = _launch("0.24.0", str(GPT_OSS))
    assert "attention TRITON_ATTN (auto; decided at vllm/platforms/cuda.py:490)" in backends
    for version, raise_line, forced_list in (("0.24.0", 415, ("FLASHINFER", "FLASH_ATTN")), ("0.33.0", 443, ("FLASH_ATTN",))):
        for forced in forced_list:
            r, backends = _launch(version, str(GPT_OSS), "--attention-backend", forced)
            f = next(f for f in r.findings if f.rule_id == "MTP332")
            assert (f"Selected backend AttentionBackendEnum.{forced} is not valid for this configuration. Reason: "
                    f"['attention sinks not supported'] (vllm/platforms/cuda.py:{raise_line})") in f.message, (version, f.message)
            assert exit_code(r, Severity.ERROR) == 1 and f"attention refused (--attention-backend {forced}): MTP332" in backends
    # 0.33.0 lets FlashInfer serve sinks through TRTLLM attention when its cubins are at hand (pre-downloaded
    # flashinfer-cubin, or NVIDIA's artifactory reachable): only the running process knows, so auto is not decided
    r, backends = _launch("0.33.0", str(GPT_OSS))
    assert "attention not decided (auto; possible outcomes: FLASHINFER, TRITON_ATTN;" in backends
    assert "has_nvidia_artifactory() (vllm/utils/flashinfer.py:687)" in backends
    assert not any(f.rule_id == "MTP332" for f in r.findings)


def test_unknown_backend_name_is_the_enum_lookup_error() -> None:
    r, _ = _launch("0.33.0", str(CONFIGS / "Qwen--Qwen3-30B-A3B"), "--attention-backend", "FLASH_ATTN_V9")
    f = next(f for f in r.findings if f.rule_id == "MTP332")
    assert "Unknown attention backend: 'FLASH_ATTN_V9'" in f.message and "vllm/v1/attention/backends/registry.py:28" in f.message


def test_0_11_reads_the_environment_variable() -> None:
    _r, backends = _launch("0.11.0", str(CONFIGS / "Qwen--Qwen3-30B-A3B"), env={"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"})
    assert "FlashAttentionBackend (VLLM_ATTENTION_BACKEND FLASH_ATTN; decided at vllm/platforms/cuda.py:326)" in backends


def test_sm90_mla_is_flash_attn_mla_when_the_wheel_ships_fa3() -> None:
    # DeepSeek-V3 on SM90: FLASH_ATTN_MLA ranks first (cuda.py:84-181) and is valid when the flash-attn build supports MLA
    # (flashattn_mla.py:85 -> fa_utils.flash_attn_supports_mla -> FA3_AVAILABLE, set at import time when
    # vllm/vllm_flash_attn/_vllm_fa3_C imports; the 0.33.0 wheel ships _vllm_fa3_C.abi3.so)
    r, backends = _launch("0.33.0", str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "-tp", "1", machine=H200)
    assert "attention MLA FLASH_ATTN_MLA (auto; decided at vllm/platforms/cuda.py:518)" in backends
    att = r.facts["launch"]["attention"]
    assert any("_vllm_fa3_C loads (vllm/vllm_flash_attn/flash_attn_interface.py:" in a for a in att["assumed"])
    assert att["values"]["head_size"] == 576 and att["values"]["use_mla"] is True and att["values"]["capability"] == [9, 0]
    # the NVFP4 checkpoint's FP8 KV cache (kv_cache_quant_algo FP8) is not one FLASH_ATTN_MLA takes (flashattn_mla.py:42-46):
    # FLASHMLA, next in line, runs (its compiled _flashmla_C ships in the wheel)
    _r, nvfp4 = _launch("0.33.0", str(CONFIGS / "nvidia--DeepSeek-V3.1-NVFP4"), "-tp", "1", machine=H200)
    assert "attention MLA FLASHMLA (auto; decided at vllm/platforms/cuda.py:518)" in nvfp4


def test_undecided_selection_names_the_test_it_depends_on() -> None:
    # GLM-5 (MLA + sparse indexer) on SM120: the only sparse MLA candidate needs a FlashInfer kernel that only the running
    # process can look up (flashinfer_mla_sparse.py:211 has_flashinfer_sparse_mla_sm120()); vLLM may then find none
    r, backends = _launch("0.33.0", str(CONFIGS / "zai-org--GLM-5-FP8"), "-tp", "1")
    assert "attention MLA not decided" in backends and "has_flashinfer_sparse_mla_sm120() (vllm/v1/attention/backends/mla/flashinfer_mla_sparse.py:211)" in backends
    assert not any(f.rule_id == "MTP332" for f in r.findings)
    gap = next(g for g in r.gaps if "attention backend" in g.message)
    assert gap.blocking and "ValueError (vllm/platforms/cuda.py:472)" in gap.message  # one possible outcome is "no valid backend"


def test_draft_backend_override_is_checked_for_the_mtp_layers() -> None:
    # 0.33.0 lets speculative_config.attention_backend replace the draft's attention_config.backend
    # (vllm/config/speculative.py:396-403 _DRAFT_VLLM_CONFIG_OVERRIDES); FLASH_ATTN for DeepSeek's MLA MTP layer: head size
    # 576 > 256 without FA4 on SM120 (flash_attn.py:425-435) and not an MLA backend
    spec = '{"method":"mtp","num_speculative_tokens":1,"attention_backend":"FLASH_ATTN"}'
    r, backends = _launch("0.33.0", str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "-tp", "1", "--speculative-config", spec)
    f = next(f for f in r.findings if f.rule_id == "MTP332")
    assert "refuses the draft model's attention backend (speculative_config.attention_backend FLASH_ATTN)" in f.message
    assert "Reason: ['head_size not supported', 'MLA not supported'] (vllm/platforms/cuda.py:443)" in f.message
    assert "attention MLA TRITON_MLA (auto; decided at vllm/platforms/cuda.py:518); draft: MLA refused" in backends


def test_mtp_draft_shares_the_targets_selection() -> None:
    spec = '{"method":"mtp","num_speculative_tokens":1}'
    r, backends = _launch("0.33.0", str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "-tp", "1", "--speculative-config", spec)
    assert backends.endswith("attention MLA TRITON_MLA (auto; decided at vllm/platforms/cuda.py:518); draft: the same (its layers "
                             "select with the same values)")


def test_0_11_unknown_environment_value_is_the_selectors_error() -> None:
    r, _ = _launch("0.11.0", str(CONFIGS / "Qwen--Qwen3-30B-A3B"), env={"VLLM_ATTENTION_BACKEND": "flash_attn"})
    f = next(f for f in r.findings if f.rule_id == "MTP332")
    assert "ValueError: Invalid attention backend: 'flash_attn'. Valid backends are: ['FLASH_ATTN'," in f.message
    assert "(vllm/attention/selector.py:202)" in f.message


def test_0_11_mla_on_sm100_depends_on_the_block_size_the_platform_picks() -> None:
    # 0.11.0 cuda.py:257-262: CUTLASS_MLA when block_size == 128, FLASHINFER_MLA for 32/64 on SM100; the platform sets the
    # default block size itself, so only --block-size decides it here (B200 machine: no dump at hand, SM120's MLA is Triton)
    _r, backends = _launch("0.11.0", str(CONFIGS / "deepseek-ai--DeepSeek-V3"), "-tp", "1", "--block-size", "128")
    assert "attention MLA TritonMLABackend" in backends  # SM120: neither CUTLASS nor FlashInfer MLA (is_device_capability(100))


def test_modelopt_fp8_kv_cache_moves_sm120_to_flashinfer() -> None:
    # hf_quant_config.json declares kv_cache_quant_algo FP8: resolve_kv_cache_dtype_string (0.33.0
    # vllm/utils/torch_utils.py:498) makes `auto` fp8_e4m3; FLASH_ATTN takes an FP8 KV cache only on SM90 (FA3) or SM100
    # (FA4) (vllm/v1/attention/backends/fa_utils.py:282-312), so on SM120 the next in line, FLASHINFER, runs
    r, backends = _launch("0.33.0", str(CONFIGS / "nvidia--Qwen3.5-397B-A17B-NVFP4"), "-tp", "1")
    assert "attention FLASHINFER (auto; decided at vllm/platforms/cuda.py:518)" in backends
    _r, given = _launch("0.33.0", str(CONFIGS / "nvidia--Qwen3.5-397B-A17B-NVFP4"), "-tp", "1", "--kv-cache-dtype", "auto")
    assert "attention FLASHINFER (auto; decided at vllm/platforms/cuda.py:518)" in given  # `auto` given is resolved too
    _r, bf16 = _launch("0.33.0", str(CONFIGS / "nvidia--Qwen3.5-397B-A17B-NVFP4"), "-tp", "1", "--kv-cache-dtype", "bfloat16")
    assert "attention FLASH_ATTN (auto; decided at vllm/platforms/cuda.py:518)" in bf16


def test_0_11_automatic_choice_is_flash_attention_below_sm100() -> None:
    # 0.11.0 cuda.py:358-368: SM80+ without sinks or FP8 KV -> FLASH_ATTN_V1 when is_attn_backend_supported() says the head
    # size (128 in [32..256], flash_attn.py:47-48) and dtype (bfloat16) are supported (_IsSupported.__bool__, selector.py:89)
    for machine in (SM120, H200):
        _r, backends = _launch("0.11.0", str(CONFIGS / "Qwen--Qwen3-30B-A3B"), "-tp", "1", machine=machine)
        assert "attention FlashAttentionBackend (auto; decided at vllm/platforms/cuda.py:368)" in backends
