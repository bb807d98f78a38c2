"""Issue 10 §5: an explicit flag value rewritten to None after parsing and re-filled downstream (MTP106), on the
real SGLang wheels from PyPI (tests/conftest.py ``sglang_wheel``).

Expected locations were read by hand in each wheel (``unzip -p WHEEL FILE | sed -n A,Bp``):

- 0.5.9 ``srt/server_args.py:884`` ``elif self.speculative_draft_model_quantization == "unquant":``, 885 ``= None``;
  ``srt/configs/model_config.py:241`` reads it into ``quantization`` (``from_server_args``), 918
  ``self.quantization = quant_method`` under ``if self.quantization is None:`` (917) in ``_verify_quantization``.
- 0.5.23 ``srt/arg_groups/serving_hook.py:704`` ``if cfg.speculative_draft_model_quantization == "unquant":``,
  705 ``declare_resolution(..., speculative_draft_model_quantization=None)``; ``model_config.py:946`` read,
  595 ``self.quantization = quantization``, 2107 re-fill.
- 0.5.4 has no ``unquant`` choice at all.
"""

from __future__ import annotations

import pytest

from mtp_audit.cli.main import main
from mtp_audit.engines.sglang import audit_sglang
from mtp_audit.engines.sglang.checks import flow_findings
from mtp_audit.engines.sglang.flow import analyze_flows
from mtp_audit.engines.sglang.target import open_target
from mtp_audit.engines.sglang.treescan import scan_tree

pytestmark = pytest.mark.network

# version -> (draft rewrite, draft read, target rewrite or None, re-fill), all under sglang/srt/
EXPECTED = {
    "0.5.9": ("server_args.py:885", "configs/model_config.py:241", None, "configs/model_config.py:918"),
    "0.5.12": ("server_args.py:1195", "configs/model_config.py:381", "server_args.py:893", "configs/model_config.py:1200"),
    "0.5.15": ("server_args.py:3048", "configs/model_config.py:495", "server_args.py:3043", "configs/model_config.py:1362"),
    "0.5.18": ("server_args.py:4293", "configs/model_config.py:572", "server_args.py:4288", "configs/model_config.py:1546"),
    "0.5.20": ("arg_groups/serving_hook.py:648", "configs/model_config.py:734", "arg_groups/serving_hook.py:639",
               "configs/model_config.py:1820"),
    "0.5.23": ("arg_groups/serving_hook.py:705", "configs/model_config.py:946", "arg_groups/serving_hook.py:696",
               "configs/model_config.py:2107"),
}


def _mtp106(version: str):
    """MTP106 findings of the flow analysis alone (the full audit is exercised once, below)."""
    from conftest import sglang_wheel

    tree = open_target(sglang_wheel(version))
    try:
        return flow_findings({"cli_arguments": {}, "value_flows": analyze_flows(scan_tree(tree)[0])})
    finally:
        tree.close()


@pytest.mark.parametrize("version", sorted(EXPECTED, key=lambda v: tuple(map(int, v.split(".")))))
def test_unquant_rewrite_and_refill_on_real_wheels(version):
    draft_rw, draft_read, target_rw, refill = EXPECTED[version]
    hits = _mtp106(version)
    by_flag = {f.message.split(" ")[0]: f for f in hits}
    assert set(by_flag) == {"--speculative-draft-model-quantization"} | ({"--quantization"} if target_rw else set())
    d = by_flag["--speculative-draft-model-quantization"]
    assert d.severity.label == "warning"
    assert f"{d.location.path}:{d.location.line}" == "sglang/srt/" + draft_rw
    ev = {e.label: e for e in d.evidence}
    assert ev["user value rewritten"].value == "--speculative-draft-model-quantization unquant -> None"
    assert f"{ev['consumed as'].location.path}:{ev['consumed as'].location.line}" == "sglang/srt/" + draft_read
    assert ev["consumed as"].value == "ModelConfig(quantization=...) in from_server_args()"
    re = ev["re-filled when None"]
    assert f"{re.location.path}:{re.location.line}" == "sglang/srt/" + refill
    assert re.value == "self.quantization = quant_method in ModelConfig._verify_quantization()"
    assert d.message == ("--speculative-draft-model-quantization unquant is undone: None here, re-filled with "
                         f"quant_method at {refill.rsplit('/', 1)[1]}")
    if target_rw:
        t = by_flag["--quantization"]
        assert f"{t.location.path}:{t.location.line}" == "sglang/srt/" + target_rw


def test_no_unquant_choice_no_finding():
    hits = _mtp106("0.5.4")
    assert hits == []


def test_full_audit_and_cli_exit_codes_on_a_real_wheel():
    from conftest import sglang_wheel

    w = str(sglang_wheel("0.5.9"))
    rep = audit_sglang(w)
    hits = [f for f in rep.findings if f.rule_id == "MTP106"]
    assert [f"{f.location.path}:{f.location.line}" for f in hits] == ["sglang/srt/server_args.py:885"]
    ev = {e.label: e for e in hits[0].evidence}
    # the literal is a declared choice of the flag (SPECULATIVE_DRAFT_MODEL_QUANTIZATION_CHOICES, server_args.py:120)
    assert ev["accepted choices include"].value == "unquant"
    assert rep.facts["sglang"]["value_flows"][0]["refill"]["location"] == "sglang/srt/configs/model_config.py:918"
    assert main(["sglang", w]) == 0  # a warning: status findings, exit 0 by default
    assert main(["sglang", w, "--fail-on", "warning"]) == 1


# --- which consumer-only files are parsed -------------------------------------------------------------------------

HOOK = '''class ServerArgs:
    def _handle(self):
        if self.speculative_draft_model_quantization == "unquant":
            self.speculative_draft_model_quantization = None

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--speculative-draft-model-quantization", choices=["unquant", "fp8"])
'''
CONSUMER = '''from x import DraftConfig
def from_server_args(server_args):
    q = server_args.speculative_draft_model_quantization
    return DraftConfig(quantization=q)
'''
REFILL = '''class DraftConfig:  # is_draft_model
    def __init__(self, quantization=None):
        self.quantization = quantization

    def verify(self, cfg):
        if self.quantization is None:
            self.quantization = cfg.quant_method
        return cfg.speculative_algorithm
'''
OTHER = '''def from_server_args(server_args):  # reads tracked fields, but none a hook rewrites to None
    return Other(algo=server_args.speculative_algorithm)
'''


def test_consumer_only_files_are_parsed_when_a_flow_can_need_them(tmp_path):
    """The consumer (it reads the rewritten field) and the class it builds (its re-fill) are parsed; a file that only
    the consumer pass wants and that neither reads a rewritten field nor defines such a class is not."""
    files = {"sglang/srt/server_args.py": HOOK, "sglang/srt/configs/draft.py": CONSUMER, "sglang/srt/layers/refill.py": REFILL,
             "sglang/srt/managers/other.py": OTHER}
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    tree = open_target(tmp_path)
    try:
        results, stats = scan_tree(tree)
    finally:
        tree.close()
    parsed = sorted(rel for rel, r in results.items() if r.get("passes"))
    assert parsed == ["sglang/srt/configs/draft.py", "sglang/srt/layers/refill.py", "sglang/srt/server_args.py"]
    assert stats["parsed"] == 3
    (flow,) = analyze_flows(results)
    assert flow["consumer"]["read_location"] == "sglang/srt/configs/draft.py:3"
    assert flow["refill"]["location"] == "sglang/srt/layers/refill.py:7"


def test_consumer_and_refill_files_pass_the_text_tests_on_the_real_wheel():
    """Every consumer and re-fill that the pass finds in 0.5.23, in every file it wants, is seen by the text tests that
    decide which of those files are parsed (they may say yes for more)."""
    import zipfile

    from conftest import sglang_wheel

    from mtp_audit.engines.sglang.flow import consumers, may_consume, may_refill, refills
    from mtp_audit.engines.sglang.scan import index_source, passes_for

    found = 0
    with zipfile.ZipFile(sglang_wheel("0.5.23")) as zf:
        for name in zf.namelist():
            data = zf.read(name) if name.endswith(".py") else b""
            if "flow-consumer" not in passes_for(name, data):
                continue
            ix = index_source(name, data)
            for c in consumers(ix):
                assert may_consume(data, {c["field"]}), (name, c)
                found += 1
            for r in refills(ix):
                assert may_refill(data, {r["class"]}), (name, r)
                found += 1
    assert found == 10
