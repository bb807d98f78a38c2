"""The engine interface: a fake engine registered in a few lines is picked by ``mtp-audit launch`` for the command it
starts, lent the checkpoint and machine analyzers, and its outcome becomes the launch report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mtp_audit.checkpoint.heads import MtpQuantOverride
from mtp_audit.engines import registry
from mtp_audit.engines.base import Engine, EngineOutcome, LaunchRequest
from mtp_audit.errors import InputError
from mtp_audit.launch import audit_launch
from mtp_audit.preflight import preflight
from mtp_audit.preflight.kernels import KernelChecks
from mtp_audit.report import Gap

ROOT = Path(__file__).resolve().parents[1]
REAP = ROOT / "fixtures" / "checkpoint" / "bryce-hoehn--Qwen3.5-25B-REAP-A3B-Coding"
H200 = ROOT / "fixtures" / "preflight" / "envdumps" / "h200-nvidia-smi.txt"


class FakeEngine(Engine):
    name = "fake"
    label = "Fake"
    target_option = "--fake"
    rules_module = "mtp_audit.engines.trtllm.rules"
    entry_examples = ("fake-serve MODEL",)

    def entry(self, toks: Sequence[str]) -> str | None:
        return "fake-serve" if toks and toks[0] == "fake-serve" else None

    def release(self, target: Any) -> tuple[Any, Gap | None]:
        return {"release": target}, None

    def evaluate(self, request: LaunchRequest, release: Any, gap: Gap | None) -> EngineOutcome:
        ck, ck_gap = request.analyzers.checkpoint(request.toks[1], "MODEL")
        pf = request.analyzers.preflight(None, engine=None)
        mtp = (ck.facts["checkpoint"]["mtp"] if ck else {}).get("declared_layers")
        return EngineOutcome(name=" ".join(request.toks), version="1.0", findings=[], gaps=[],
                             reports=[r for r in (ck, pf) if r is not None],
                             facts={"summary": {"verdict": "go", "mtp_layers": mtp}, "verdict": "go"})


def _fake_check(ctx: Any) -> None:
    ctx.gap(f"fake kernels looked at {len(ctx.gpus)} GPU(s)")


class FakeEngineWithKernels(FakeEngine):
    """The fake engine with one more hook: its FP4 kernel checks (one gap) and its wording."""

    def kernels(self) -> KernelChecks:
        return KernelChecks(label="Fake", checks=(_fake_check,), fp4_quantizations=("fakefp4",),
                            device_choice="Fake picks kernels per GPU")


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(registry, "EXTRA", [FakeEngine()])


def test_a_registered_engine_is_picked_and_lent_the_analyzers(fake):
    r = audit_launch(["fake-serve", str(REAP)], env_dumps=[H200], environ={})
    assert [t.analyzer for t in r.targets] == ["launch", "checkpoint", "preflight"]
    assert r.facts["launch"]["summary"] == {"verdict": "go", "mtp_layers": 1}
    assert r.facts["preflight"]["machine"]["gpus"][0]["name"]["value"] == "NVIDIA H200"


def test_an_unregistered_command_lists_every_engine():
    with pytest.raises(InputError) as exc:
        audit_launch(["fake-serve", str(REAP)], env_dumps=[H200], environ={})
    msg = str(exc.value)
    assert "'fake-serve' is not a server launch of any engine mtp-audit knows" in msg
    assert all(e.label in msg for e in registry.engines())


def test_another_engines_release_option_is_refused(fake):
    with pytest.raises(InputError) as exc:
        audit_launch(["fake-serve", str(REAP)], sglang="x", env_dumps=[H200], environ={})
    assert str(exc.value) == "--sglang: the command starts Fake, not SGLang: use --fake TARGET"


class FakeIndexedEngine(FakeEngine):
    """The fake engine released on a package index: a version string is its release (``by_version``)."""

    index_package = "fake-serve"

    def release(self, target: Any) -> tuple[Any, Gap | None]:
        return {"release": target}, None

    def evaluate(self, request: LaunchRequest, release: Any, gap: Gap | None) -> EngineOutcome:
        return EngineOutcome(name=" ".join(request.toks), version=None, findings=[], gaps=[], reports=[],
                             facts={"summary": {"verdict": "go", "release": release["release"]}, "verdict": "go"})

    def compare(self, request: LaunchRequest, old: EngineOutcome, new: EngineOutcome) -> EngineOutcome:
        new.facts["summary"]["compared_with"] = old.facts["summary"]["release"]
        return new


def test_a_registered_engine_takes_its_release_and_a_second_one_by_its_id(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "EXTRA", [FakeIndexedEngine()])
    wheel = tmp_path / "1.0"  # an existing path is a path, never a version looked up on the index
    wheel.mkdir()
    # the report is the one for the second (new) release, compared with the first
    r = audit_launch(["fake-serve", "m"], fake=str(wheel), compare_fake="new-tree", no_machine=True, environ={})
    assert r.facts["launch"]["summary"] == {"verdict": "go", "release": "new-tree", "compared_with": str(wheel)}
    asked = []
    monkeypatch.setattr("mtp_audit.sources.pypi.by_version", lambda package, target: asked.append((package, target)) or "w.whl")
    r = audit_launch(["fake-serve", "m"], fake="2.0", no_machine=True, environ={})
    assert asked == [("fake-serve", "2.0")] and r.facts["launch"]["summary"]["release"] == "w.whl"


def test_release_keywords_are_engine_ids_and_nothing_else(fake):
    with pytest.raises(TypeError, match=r"^audit_launch\(\) got an unexpected keyword argument 'compare_fak'$"):
        audit_launch(["fake-serve", str(REAP)], compare_fak="x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'releases'"):
        audit_launch(["fake-serve", str(REAP)], releases={"fake": "x"})
    # a second release of another engine is refused like its first one, before any version is looked up
    with pytest.raises(InputError) as exc:
        audit_launch(["fake-serve", str(REAP)], compare_vllm="0.33.0", no_machine=True, environ={})
    assert str(exc.value) == "--vllm: the command starts Fake, not vLLM: use --fake TARGET"
    with pytest.raises(InputError) as exc:  # comparing is the engine's: Fake cannot
        audit_launch(["fake-serve", str(REAP)], compare_fake="x", no_machine=True, environ={})
    assert str(exc.value) == "--fake: comparing two Fake releases is not supported"


class FakeEngineWithCheckpointHooks(FakeEngine):
    """The fake engine with the checkpoint hooks: its quantization method and its exclusion-list override row."""

    def quantization_method(self, method: str, quant_algo: str) -> dict[str, str] | None:
        return {"method": f"fake-{method}-{quant_algo}", "source": "fake 1.0 fake.py:1", "replaces_flag": ""}

    def list_overrides(self) -> tuple[MtpQuantOverride, ...]:
        return (MtpQuantOverride("Fake", "1.0", "fake/mtp.py", (3, 4), ("qwen3.5-moe",), ("modelopt",), ("NVFP4",),
                                 ("mtp.*",), needle="", what="builds the MTP module BF16"),)


def test_the_checkpoint_asks_every_engine_that_answers_its_hooks(monkeypatch):
    monkeypatch.setattr(registry, "EXTRA", [FakeEngineWithCheckpointHooks()])
    assert [e for e, _ in registry.checkpoint_hooks("quantization_method")] == ["vllm", "fake"]
    assert [e for e, _ in registry.checkpoint_hooks("list_overrides")] == ["sglang", "vllm", "fake"]
    assert [e for e, _ in registry.checkpoint_hooks("gguf_mtp_graph")] == ["llamacpp"]  # Fake does not read GGUF
    from mtp_audit.checkpoint import audit_checkpoint
    from mtp_audit.checkpoint.overrides import overrides_for

    q = audit_checkpoint(ROOT / "fixtures" / "checkpoint" / "nvidia--Qwen3.5-397B-A17B-NVFP4").facts["checkpoint"]["quantization"][0]
    assert q["fake_method"] == {"method": "fake-modelopt-NVFP4", "source": "fake 1.0 fake.py:1", "replaces_flag": ""}
    assert q["vllm_method"]["method"] == "modelopt_fp4"
    assert list(q)[-3:] == ["vllm_method", "fake_method", "mtp_linear_excluded"]
    assert [o.where for o in overrides_for("qwen3.5-moe", "modelopt", "NVFP4")] == [
        "SGLang 0.5.23 sglang/srt/models/qwen3_5_mtp.py:65-69", "vLLM 0.20.0 vllm/model_executor/models/qwen3_5_mtp.py:80-88",
        "Fake 1.0 fake/mtp.py:3-4"]


def test_a_registered_engine_lends_its_kernel_checks_to_the_preflight(monkeypatch):
    monkeypatch.setattr(registry, "EXTRA", [FakeEngineWithKernels()])
    r = preflight(env_dumps=[H200], engine="fake")
    assert r.facts["preflight"]["engine"]["engine"] == "fake"
    assert "fake kernels looked at 1 GPU(s)" in [g.message for g in r.gaps]
    # the machine's own checks still ran: the H200 has no FP4 tensor cores, and the verdict is for Fake
    assert r.facts["preflight"]["summary"]["verdict"] == "not capable"
    assert r.facts["preflight"]["answer"] == ["GPU 0 (NVIDIA H200, compute capability 9.0) cannot run native FP4 on Fake "
                                              "(version unknown): SM90 has no FP4 tensor-core instructions (FP8 is the narrowest)"]
    # SGLang's own MTP200 (its Marlin fallback wording) is SGLang's kernel check, not the machine's
    assert [f.rule_id for f in r.findings] == ["MTP228"]


def test_engines_without_the_hook_add_nothing_and_aliases_name_one_engine():
    assert registry.engine_named("llamacpp").kernels() is None
    assert registry.engine_named("tensorrt-llm").name == "trtllm"
    assert registry.engine_named("llama.cpp").name == "llamacpp"
    assert registry.engine_ids() == ("sglang", "vllm", "llamacpp", "trtllm")
