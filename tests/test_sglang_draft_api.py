"""EAGLE3 with the target checkpoint as its draft: the EAGLE3 worker calls ``model.set_embed`` and reads
``model.hot_token_id`` on the draft at start-up, which SGLang's MTP classes do not define (read from real wheels:
0.5.9 ``speculative/eagle_worker.py:168/171``, 0.5.23 ``speculative/eagle_worker_v2.py:363/366``). Checked by hand
by reading the wheels with ``zipfile``: ``DeepseekV3ForCausalLMNextN`` (deepseek_nextn.py) -> ``DeepseekV3ForCausalLM``
-> ``DeepseekV2ForCausalLM`` (deepseek_v2.py) -> ``DeepseekV2WeightLoaderMixin`` defines neither; ``Qwen3_5ForCausalLMMTP``
(qwen3_5_mtp.py, ``nn.Module``) neither."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, sglang_wheel

from mtp_audit.cli.main import main
from mtp_audit.engines.sglang.draft_api import draft_api
from mtp_audit.engines.sglang.target import SGLANG
from mtp_audit.sources.tree import open_tree

pytestmark = pytest.mark.network

DSV3 = FIXTURES / "checkpoint" / "deepseek-ai--DeepSeek-V3"


def _launch(capsys, version: str, algo: str) -> tuple[int, str]:
    rc = main(["launch", "--no-machine", "--sglang", str(sglang_wheel(version)), "--", "python", "-m", "sglang.launch_server",
               "--model-path", str(DSV3), "--speculative-algorithm", algo])
    return rc, capsys.readouterr().out


@pytest.mark.parametrize(("version", "where"), [("0.5.9", "sglang/srt/speculative/eagle_worker.py:168"),
                                                ("0.5.23", "sglang/srt/speculative/eagle_worker_v2.py:363")])
def test_eagle3_on_the_mtp_class_will_not_start(capsys, version, where) -> None:
    rc, out = _launch(capsys, version, "EAGLE3")
    assert rc == 1
    assert out.startswith("FAIL: fix first: 1 error(s) (MTP314)")
    assert (f"EAGLE3 worker calls model.set_embed, model.hot_token_id on the draft model at start-up, and the draft class "
            f"DeepseekV3ForCausalLMNextN does not define them: the server will not start (AttributeError at {where})") in out


def test_nextn_and_standalone_need_nothing_the_class_lacks(capsys) -> None:
    for algo in ("NEXTN", "STANDALONE"):
        rc, out = _launch(capsys, "0.5.9", algo)
        assert rc == 3 and "MTP314" not in out, (algo, out)


def test_requirements_and_class_chain_from_the_wheel() -> None:
    tree = open_tree(sglang_wheel("0.5.9"), SGLANG)
    api = draft_api(tree, [{"class": "Qwen3_5ForCausalLMMTP", "file": "sglang/srt/models/qwen3_5_mtp.py"},
                           {"class": "DeepseekV3ForCausalLMNextN", "file": "sglang/srt/models/deepseek_nextn.py"}])
    req = sorted((r["attribute"], r["location"], tuple(r["unless_has"])) for r in api["requires"]
                 if r["file"].endswith("/eagle_worker.py"))
    assert req == [("hot_token_id", "sglang/srt/speculative/eagle_worker.py:171", ()),
                   ("set_embed", "sglang/srt/speculative/eagle_worker.py:168", ("load_lm_head_from_target",))]
    assert {r["algorithm"] for r in api["requires"]} == {"EAGLE3"}
    q, d = api["classes"]["Qwen3_5ForCausalLMMTP"], api["classes"]["DeepseekV3ForCausalLMNextN"]
    assert q == {"missing": ["hot_token_id", "load_lm_head_from_target", "set_embed"],
                 "chain": ["sglang/srt/models/qwen3_5_mtp.py:37"], "unresolved": None}
    assert d["chain"] == ["sglang/srt/models/deepseek_nextn.py:191", "sglang/srt/models/deepseek_v2.py:2978",
                          "sglang/srt/models/deepseek_v2.py:2781", "sglang/srt/models/deepseek_common/deepseek_weight_loader.py:87"]
    assert d["missing"] == q["missing"] and d["unresolved"] is None


def _example_tree(tmp_path, model_file: str):
    """The MTP314 example tree (hand-written SGLang shape) with ``qwen3_5_mtp.py`` replaced by ``model_file``."""
    from mtp_audit.engines.sglang.launch.rules import RULES_BY_ID

    example = RULES_BY_ID["MTP314"].examples[0]
    files = dict(example.files(), **{"sg/sglang/srt/models/qwen3_5_mtp.py": model_file})
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return example.args


@pytest.mark.parametrize(("model_file", "why"), [
    ("from vendor_pkg import DraftBase\n\n\nclass Qwen3_5ForCausalLMMTP(DraftBase):\n    pass\n\n\n"
     "EntryClass = [Qwen3_5ForCausalLMMTP]\n",
     "base DraftBase of Qwen3_5ForCausalLMMTP (sglang/srt/models/qwen3_5_mtp.py:4) comes from outside the tree (vendor_pkg.DraftBase)"),
    ("class Qwen3_5ForCausalLMMTP:\n    def __getattr__(self, name):\n        return getattr(self.inner, name)\n\n\n"
     "EntryClass = [Qwen3_5ForCausalLMMTP]\n", "Qwen3_5ForCausalLMMTP defines __getattr__"),
])
def test_an_unresolvable_class_is_could_not_tell(tmp_path, monkeypatch, capsys, model_file, why) -> None:
    args = _example_tree(tmp_path, model_file)
    monkeypatch.chdir(tmp_path)
    rc = main(["launch", "--no-machine", "--sglang", "sg", "--", *args])
    out = capsys.readouterr().out
    assert rc == 3 and "MTP314" not in out
    assert (f"whether the EAGLE3 worker finds hot_token_id, set_embed on the draft class Qwen3_5ForCausalLMMTP could not "
            f"be told: {why}") in out


def test_nn_module_ends_the_chain_and_self_assignments_count(tmp_path, monkeypatch, capsys) -> None:
    model = ("from torch import nn\n\n\nclass Qwen3_5ForCausalLMMTP(nn.Module):\n    def __init__(self):\n"
             "        self.hot_token_id = None\n\n    def set_embed(self, embed):\n        pass\n\n\n"
             "EntryClass = [Qwen3_5ForCausalLMMTP]\n")
    args = _example_tree(tmp_path, model)
    monkeypatch.chdir(tmp_path)
    main(["launch", "--no-machine", "--sglang", "sg", "--", *args])
    out = capsys.readouterr().out
    assert "MTP314" not in out and "whether the EAGLE3 worker finds" not in out
    assert out.startswith("PASS: go: ")


@pytest.mark.parametrize(("flag", "value", "decl"), [("--speculative-num-steps", "-1", "sglang/srt/server_args.py:3954"),
                                                     ("--speculative-eagle-topk", "0", "sglang/srt/server_args.py:3960"),
                                                     ("--speculative-num-draft-tokens", "0", "sglang/srt/server_args.py:3966")])
def test_a_speculative_size_below_one_is_could_not_tell(tmp_path, capsys, flag, value, decl) -> None:
    """SGLang 0.5.9 has no range check on these (checked by hand in server_args.py); the same launch with 3 is go."""
    from mtp_audit.synth.launch import checkpoint_files

    for rel, text in checkpoint_files(str(tmp_path / "ckpt")).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    base = ["launch", "--no-machine", "--sglang", str(sglang_wheel("0.5.9")), "--", "python", "-m", "sglang.launch_server",
            "--model-path", str(tmp_path / "ckpt"), "--speculative-algorithm", "NEXTN"]
    assert main([*base, flag, "3"]) == 0
    assert capsys.readouterr().out.startswith("PASS: go: ")
    assert main([*base, flag, value]) == 3
    assert (f"[launch, blocking] {flag} {value}: a speculative size below 1; SGLang 0.5.9 declares it type=int ({decl}) and "
            "no replayed start-up check refuses it") in capsys.readouterr().out
