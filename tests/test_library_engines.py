"""The library takes what the CLI takes and types every engine's answer: a release version for ``vllm=`` (found in
the cache as the CLI finds it), ``launch_result()`` on llama.cpp and TensorRT-LLM launches (engine id, the
``go without MTP`` verdict), and typed FP4 backends. Each was wrong before: ``InputError: 0.33.0: no such file or
folder``, ``ValueError: 'go without MTP' is not a valid LaunchVerdict``, engine ``"sglang"`` for llama.cpp and
TensorRT-LLM, backends as prose."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import vllm_wheel

import mtp_audit
from mtp_audit.synth.gguf import gguf_bytes, model_kv, nextn_tensors, trunk_tensors

ROOT = Path(__file__).resolve().parents[1]
CK = ROOT / "fixtures" / "checkpoint"
H200 = ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"
GB200 = ROOT / "fixtures" / "preflight" / "envdumps" / "sglang-11208.txt"


def test_audit_launch_takes_a_release_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whl = vllm_wheel("0.33.0")
    folder = tmp_path / "engines" / "vllm" / "0.33.0"
    folder.mkdir(parents=True)
    (folder / whl.name).symlink_to(whl)
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path))
    r = mtp_audit.audit_launch("vllm serve " + str(CK / "deepseek-ai--DeepSeek-V3"), vllm="0.33.0", env_dumps=[H200],
                               environ={})
    assert r.facts["launch"]["summary"]["vllm"] == "0.33.0"
    assert mtp_audit.launch_result(r).engine == "vllm"
    r = mtp_audit.audit_launch(["vllm", "serve", str(CK / "deepseek-ai--DeepSeek-V3"), "--speculative-config",
                                '{"method":"mtp","num_speculative_tokens":2}'], vllm="0.33.0", env_dumps=[H200], environ={})
    assert mtp_audit.launch_result(r).draft_tokens == 2


def test_launch_result_of_a_llamacpp_launch_without_mtp(tmp_path: Path) -> None:
    tensors = trunk_tensors(range(3)) + nextn_tensors(3)
    (tmp_path / "model.gguf").write_bytes(gguf_bytes(model_kv("qwen35moe", blocks=4, nextn=1), tensors))
    r = mtp_audit.audit_launch(["llama-server", "-m", "model.gguf"], llamacpp="10444", cwd=tmp_path, environ={})
    res = mtp_audit.launch_result(r)
    assert res is not None and res.verdict is mtp_audit.LaunchVerdict.GO_WITHOUT_MTP and res.engine == "llamacpp"
    assert (res.speculative_requested, res.speculative_runs_as) == (None, None)
    r = mtp_audit.audit_launch(["llama-server", "-m", "model.gguf", "--spec-type", "draft-mtp"], llamacpp="10444",
                               cwd=tmp_path, environ={})
    res = mtp_audit.launch_result(r)
    assert res.engine == "llamacpp" and (res.speculative_requested, res.speculative_runs_as) == ("draft-mtp", "draft-mtp")
    assert res.draft_tokens is None  # --spec-draft-n-max not given: the build's default (MTP607)
    r = mtp_audit.audit_launch(["llama-server", "-m", "model.gguf", "--spec-type", "draft-mtp", "--spec-draft-n-max", "2"],
                               llamacpp="10444", cwd=tmp_path, environ={})
    assert mtp_audit.launch_result(r).draft_tokens == 2


def test_launch_result_and_fp4_of_a_tensorrt_llm_launch() -> None:
    r = mtp_audit.audit_launch(["trtllm-serve", str(CK / "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"), "--config",
                                str(ROOT / "fixtures" / "trtllm" / "threshold.yaml")], env_dumps=[H200], environ={})
    assert mtp_audit.launch_result(r).engine == "trtllm" and mtp_audit.launch_result(r).draft_tokens == 1
    fp4 = mtp_audit.fp4_readiness(r)
    assert (fp4.engine, fp4.native_fp4, fp4.compute_capabilities, fp4.gpus) == ("trtllm", "not capable", ("9.0",), 1)


def test_fp4_backends_are_typed() -> None:
    cmd = ["python", "-m", "sglang.launch_server", "--model-path", str(CK / "nvidia--DeepSeek-V3.1-NVFP4"),
           "--fp4-gemm-backend", "flashinfer_cutlass"]
    fp4 = mtp_audit.fp4_readiness(mtp_audit.preflight(env_dumps=[GB200], launch=cmd))
    assert fp4.fp4_gemm_backend == mtp_audit.BackendChoice("flashinfer_cutlass", "explicit", "launch command")
    assert fp4.moe_runner_backend is not None and (fp4.moe_runner_backend.name, fp4.moe_runner_backend.how) == ("cutlass", "auto")


def test_launch_result_of_tensorrt_llm_names_the_requested_decoding_type() -> None:
    """The YAML's ``decoding_type: MTP`` is what the command asks for; TensorRT-LLM accepts it and runs MTP."""
    r = mtp_audit.audit_launch(["trtllm-serve", str(CK / "deepseek-ai--DeepSeek-V3"), "--config",
                                str(ROOT / "fixtures" / "trtllm" / "r1-nextn-3.yaml")], no_machine=True, environ={})
    res = mtp_audit.launch_result(r)
    assert (res.engine, res.speculative_requested, res.speculative_runs_as, res.draft_tokens) == ("trtllm", "MTP", "MTP", 3)


def _release_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The release wheels by version come from the test download cache (``--vllm 0.33.0`` members, fetched once)."""
    from conftest import cache_dir, vllm_members

    vllm_members("0.33.0")
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(cache_dir()))


def test_library_takes_release_versions_like_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """``audit_vllm("0.33.0")`` is what ``mtp-audit vllm 0.33.0`` audits; ``"0.33"`` is the same release (PEP 440)."""
    _release_cache(monkeypatch)
    full, short = mtp_audit.audit_vllm("0.33.0"), mtp_audit.audit_vllm("0.33")
    assert full.facts["vllm"]["version"] == short.facts["vllm"]["version"] == "0.33.0"
    assert [f.rule_id for f in full.findings] == [f.rule_id for f in short.findings]


def test_launch_result_of_a_vllm_launch_names_the_draft_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM rewrites MiMo's draft config to ``MiMoMTPModel`` (vllm/config/speculative.py:796 at 0.33.0): the class."""
    _release_cache(monkeypatch)
    r = mtp_audit.audit_launch(["vllm", "serve", "/models/jj8127--mimo_kor", "--speculative-config",
                                '{"method":"mtp","num_speculative_tokens":1}'], vllm="0.33.0", no_machine=True,
                               model_dirs=[("/models", str(CK))], environ={})
    res = mtp_audit.launch_result(r)
    assert (res.verdict, res.draft_class, res.speculative_requested) == (mtp_audit.LaunchVerdict.GO, "MiMoMTPModel", "mtp")


def test_launch_with_a_release_version_leaves_no_file_open(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc
    import warnings

    _release_cache(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        r = mtp_audit.audit_launch(["vllm", "serve", str(CK / "jj8127--mimo_kor"), "--speculative-config",
                                    '{"method":"mtp","num_speculative_tokens":1}'], vllm="0.33.0", no_machine=True, environ={})
        del r
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


@pytest.mark.parametrize("bad", [["/models=fixtures/checkpoint"], "/models=fixtures/checkpoint", [("/models",)]])
def test_bad_model_dirs_is_a_type_error_naming_it(bad: object) -> None:
    with pytest.raises(TypeError, match=r"^audit_launch\(model_dirs=\.\.\.\): expected a sequence of \(SRC, DST\) pairs"):
        mtp_audit.audit_launch(["vllm", "serve", "/models/x"], model_dirs=bad, no_machine=True)  # type: ignore[arg-type]


def test_model_dir_to_a_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(mtp_audit.InputError, match="^--model-dir /models=nope: nope does not exist$"):
        mtp_audit.audit_launch(["vllm", "serve", "/models/x"], model_dirs=[("/models", "nope")], cwd=tmp_path, no_machine=True)


def test_model_dir_mapping_to_a_folder_without_the_model_names_both_paths(tmp_path: Path) -> None:
    """The advice for a mapped path asks for the mapping to be fixed; it never suggests mapping the mapped path again."""
    r = mtp_audit.audit_launch(["vllm", "serve", "/models/x"], model_dirs=[("/models", str(tmp_path))], cwd=tmp_path,
                               no_machine=True, environ={})
    gap = next(g.message for g in r.gaps if g.message.startswith("model /models/x"))
    assert gap == (f"model /models/x (read at {tmp_path}/x through --model-dir): no such file or folder on this machine, so "
                   "the checkpoint questions (MTP heads, quantization, weights per GPU) could not be told; fix --model-dir "
                   "so that /models/x maps to a local copy of it")
    assert "LOCAL_FOLDER" not in " ".join(g.message for g in r.gaps)
