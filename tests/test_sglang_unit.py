"""Rule examples, bad input and the CLI, on small hand-written trees (no network)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.engines.sglang import audit_sglang
from mtp_audit.engines.sglang.rules import RULES
from mtp_audit.errors import InputError
from mtp_audit.report.rules import run_rule_example


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MTP_AUDIT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_examples(rule, tmp_path):
    assert any(e.fires for e in rule.examples) and any(not e.fires for e in rule.examples)
    for i, ex in enumerate(rule.examples):
        root = tmp_path / f"ex{i}"
        root.mkdir()
        report = run_rule_example(rule, ex, root)
        fired = any(f.rule_id == rule.id for f in report.findings)
        assert fired == ex.fires, (rule.id, ex.note)
    assert "## What it does" in rule.doc()


SA = '''class ServerArgs:
    def _handle(self):
        if self.speculative_algorithm == "NEXTN":
            self.speculative_algorithm = "EAGLE"

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--speculative-algorithm", choices=["EAGLE", "NEXTN"])
'''


def _tree(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    for rel, content in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return tmp_path


def test_python2_file_is_a_blocking_gap(tmp_path):
    root = _tree(tmp_path, {"sglang/srt/server_args.py": SA, "sglang/srt/arg_groups/old.py": 'print "x"\ndef f(self):\n    self.speculative_algorithm = "EAGLE"\n'})
    rep = audit_sglang(root)
    (gap,) = [g for g in rep.gaps if g.path == "sglang/srt/arg_groups/old.py"]
    assert gap.blocking and "does not parse" in gap.message and "line 1" in gap.message
    assert rep.status.value == "inconclusive"


def test_non_utf8_file_is_a_gap(tmp_path):
    root = _tree(tmp_path, {"sglang/srt/server_args.py": SA.encode() + b"# caf\xe9\n"})
    rep = audit_sglang(root)
    assert any("not UTF-8" in g.message for g in rep.gaps)


def test_huge_file_noted_not_read(tmp_path, monkeypatch):
    import mtp_audit.sources.tree as target

    monkeypatch.setattr(target, "MAX_SOURCE_BYTES", 1000)
    root = _tree(tmp_path, {"sglang/srt/server_args.py": SA, "sglang/srt/gen.py": "X = 1\n" * 500})
    rep = audit_sglang(root)
    (gap,) = [g for g in rep.gaps if g.path == "sglang/srt/gen.py"]
    assert not gap.blocking and "limit" in gap.message


def test_symlink_leaving_tree_not_followed(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text('SGLANG_SPEC_SECRET = EnvBool(False)\n')
    root = _tree(tmp_path / "t", {"sglang/srt/server_args.py": SA})
    (root / "sglang/srt/evil.py").symlink_to(outside)
    rep = audit_sglang(root)
    assert any("leaves the tree" in g.message for g in rep.gaps)
    assert not rep.facts["sglang"]["env_vars"]


def test_not_sglang_and_corrupt_wheel_exit_2(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    assert main(["sglang", str(tmp_path / "x")]) == 2
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    assert main(["sglang", str(bad)]) == 2
    assert main(["sglang", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("mtp-audit: error:") == 3 and "Traceback" not in err
    with pytest.raises(InputError):
        audit_sglang(tmp_path / "x")


def test_wheel_read_in_memory_and_helper_shape(tmp_path):
    hook = '''def _resolve(speculative_algorithm):
    if speculative_algorithm == "NEXTN":
        logger.info("promoting")
        return "EAGLE"
    return speculative_algorithm


def handle(server_args):
    declare_resolution(server_args, "h", speculative_algorithm=_resolve(cfg.speculative_algorithm))
'''
    whl = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("sglang/srt/arg_groups/speculative_hook.py", hook)
        zf.writestr("sglang/srt/server_args.py", SA)
        zf.writestr("sglang-9.9.9.dist-info/METADATA", "Metadata-Version: 2.1\nName: sglang\nVersion: 9.9.9\n")
    rep = audit_sglang(whl)
    f = rep.facts["sglang"]
    assert f["version"] == "9.9.9"
    (r,) = [x for x in f["remaps"] if x["location"].startswith("sglang/srt/arg_groups/")]
    assert (r["from"], r["to"], r["logged"], r["location"]) == ("NEXTN", ["EAGLE"], True, "sglang/srt/arg_groups/speculative_hook.py:4")
    assert r["via"].endswith("speculative_hook.py:9")


def test_unknown_helper_is_blocking_gap(tmp_path):
    root = _tree(tmp_path, {"sglang/srt/server_args.py": SA.replace('self.speculative_algorithm = "EAGLE"', "self.speculative_algorithm = mystery(self.speculative_algorithm)")})
    rep = audit_sglang(root)
    assert any(g.blocking and "not understood" in g.message for g in rep.gaps)
    assert any(f.rule_id == "MTP102" for f in rep.findings)


def test_cache_warm_run_same_facts(tmp_path):
    root = _tree(tmp_path / "t", {"sglang/srt/server_args.py": SA})
    a = audit_sglang(root).facts["sglang"]
    b = audit_sglang(root).facts["sglang"]
    assert b["scan"]["tree_cache"] == "hit" and a["remaps"] == b["remaps"]


def test_command_help(capsys):
    assert main(["sglang", "--help"]) == 0
    assert "--baseline" in capsys.readouterr().out


def test_folder_with_sglang_subfolder_but_no_server_args_is_not_sglang(tmp_path, capsys):
    # the shape of mtp_audit/ itself: a package with an ``sglang`` subfolder holding __init__.py
    root = _tree(tmp_path / "pkg", {"sglang/__init__.py": "", "sglang/audit.py": "EntryClass = [FooMTP]\n",
                                    "sglang/srt/models/x.py": "X = 1\n"})
    assert main(["sglang", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0
    assert err.startswith(f"mtp-audit: error: {root}: not an SGLang tree: no sglang/srt/server_args.py")
    ck = _tree(tmp_path / "co", {"python/sglang/srt/environ.py": "X = 1\n"})
    with pytest.raises(InputError, match="no python/sglang/srt/server_args.py"):
        audit_sglang(ck)
    whl = tmp_path / "sglang-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("sglang/srt/environ.py", "X = 1\n")
    with pytest.raises(InputError, match="no sglang/srt/server_args.py"):
        audit_sglang(whl)


def test_this_repository_is_not_sglang(capsys):
    pkg = Path(__file__).resolve().parents[1] / "mtp_audit" / "engines"
    assert (pkg / "sglang" / "__init__.py").is_file()
    assert main(["sglang", str(pkg)]) == 2
    assert "not an SGLang tree" in capsys.readouterr().err


@pytest.mark.parametrize(("content", "status"), [
    (b"", "empty"),
    (b"# only a comment\n\n", "empty"),
    (b'print "python 2"\n', "unparseable"),
    (b'print "python 2"\nparser.add_argument("--quantization")\n', "unparseable"),
    (b"X = 'caf\xe9'\n", "unparseable"),
])
def test_unreadable_server_args_is_blocking_and_never_mtp103(tmp_path, content, status):
    root = _tree(tmp_path / "t", {"sglang/srt/server_args.py": content, "sglang/srt/environ.py": "X = 1\n"})
    rep = audit_sglang(root)
    f = rep.facts["sglang"]
    assert f["server_args"]["status"] == status and f["server_args"]["path"] == "sglang/srt/server_args.py"
    assert [x.rule_id for x in rep.findings] == []
    assert any(g.blocking and g.path == "sglang/srt/server_args.py" for g in rep.gaps)
    assert rep.status.value == "inconclusive" and f["summary"]["speculative_decoding"] is None
    assert main(["sglang", str(root), "-o", str(tmp_path / "r.txt")]) == 3


def test_oversize_server_args_is_blocking(tmp_path, monkeypatch):
    import mtp_audit.sources.tree as target

    monkeypatch.setattr(target, "MAX_SOURCE_BYTES", 100)
    root = _tree(tmp_path / "t", {"sglang/srt/server_args.py": "X = 1\n" * 100})
    rep = audit_sglang(root)
    assert rep.facts["sglang"]["server_args"]["status"] == "unreadable"
    assert not rep.findings and rep.status.value == "inconclusive"


def test_parsed_server_args_without_spec_flag_is_mtp103(tmp_path):
    root = _tree(tmp_path / "t", {"sglang/srt/server_args.py": 'class ServerArgs:\n    port: int = 30000\n'})
    rep = audit_sglang(root)
    assert rep.facts["sglang"]["server_args"]["status"] == "ok"
    assert [x.rule_id for x in rep.findings] == ["MTP103"] and not rep.gaps
    assert rep.facts["sglang"]["summary"]["speculative_decoding"] is False


def test_help_does_not_import_the_analyzer():
    import subprocess
    import sys

    code = ("import sys\nfrom mtp_audit.cli.main import main\nmain(['--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith(('mtp_audit.engines', 'libcst', 'concurrent.futures'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.strip().splitlines()[-1]
    assert out == "[]"
    from mtp_audit.engines import sglang

    assert sglang.audit_sglang.__module__ == "mtp_audit.engines.sglang.audit"
    assert sglang.diff_sglang.__module__ == "mtp_audit.engines.sglang.diff"
    with pytest.raises(AttributeError):
        sglang.nope  # noqa: B018


def test_mtp101_message_says_alias_and_names_the_mtp_class(tmp_path):
    cfg = """class ModelConfig:
    def _config_draft_model(self):
        if is_draft_model and self.hf_config.architectures[0] == "DeepseekV3ForCausalLM":
            self.hf_config.architectures[0] = "DeepseekV3ForCausalLMNextN"
"""
    root = _tree(tmp_path / "t", {"sglang/srt/server_args.py": SA, "sglang/srt/configs/model_config.py": cfg,
                                  "sglang/srt/models/deepseek_nextn.py": "class DeepseekV3ForCausalLMNextN:\n    pass\n\n\nEntryClass = [DeepseekV3ForCausalLMNextN]\n"})
    (f,) = [x for x in audit_sglang(root).findings if x.rule_id == "MTP101"]
    assert f.message == ("--speculative-algorithm NEXTN is an alias of EAGLE, draft = the target checkpoint "
                         "(architecture -> DeepseekV3ForCausalLMNextN); silent rewrite (no log line)")
    assert (f.location.path, f.location.line) == ("sglang/srt/server_args.py", 4)
    from mtp_audit.engines.sglang.rules import BY_ID

    assert BY_ID["MTP101"].why.startswith("Informational: NEXTN is an alias.")


def test_unresolvable_choices_noted_only_for_mtp_fp4_flags(tmp_path):
    sa = '''from x import BACKENDS, PARSERS


class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--speculative-algorithm", choices=["EAGLE", "NEXTN"])
        parser.add_argument("--moe-runner-backend", choices=BACKENDS)
        parser.add_argument("--reasoning-parser", choices=list(PARSERS.keys()))
'''
    rep = audit_sglang(_tree(tmp_path / "t", {"sglang/srt/server_args.py": sa}))
    assert [g.message for g in rep.gaps] == [
        "sglang/srt/server_args.py:8: choices of --moe-runner-backend (BACKENDS) not statically resolvable"]
    f = rep.facts["sglang"]
    assert [(u["flag"], u["location"]) for u in f["unresolved_choices"]] == [
        ("--moe-runner-backend", "sglang/srt/server_args.py:8"), ("--reasoning-parser", "sglang/srt/server_args.py:9")]
    assert (f["scan"]["unresolved_choices"], f["scan"]["unresolved_choices_noted"]) == (2, 1)


FIELD_DEFAULTS = '''from dataclasses import dataclass, field

@dataclass
class ServerArgs:
    speculative_algorithm: str = None
    moe_runner_backend: str = "auto"
    fp4_gemm_runner_backend: str = field(default="flashinfer_cutlass")
    tp_size: int = 1
    dp_size: int = 10 * 1000
    json_model_override_args: dict = field(default_factory=dict)

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--speculative-algorithm", choices=["EAGLE"], default=ServerArgs.speculative_algorithm)
        parser.add_argument("--moe-runner-backend", type=str, default=ServerArgs.moe_runner_backend)
        parser.add_argument("--fp4-gemm-backend", default=ServerArgs.fp4_gemm_runner_backend)
        parser.add_argument("--dp-size", default=ServerArgs.dp_size)
        parser.add_argument("--json-model-override-args", default=ServerArgs.json_model_override_args)
        parser.add_argument("--page-size", default=16)

    @classmethod
    def more(cls, parser):
        parser.add_argument("--tensor-parallel-size", "--tp-size", default=cls.tp_size)
        parser.add_argument("--tp-self", default=self.tp_size)
'''


def test_default_from_serverargs_field_is_the_field_literal(tmp_path):
    cli = audit_sglang(_tree(tmp_path, {"sglang/srt/server_args.py": FIELD_DEFAULTS})).facts["sglang"]["cli_arguments"]
    got = {k: (r["default"], r["default_expr"], r["default_location"]) for k, r in cli.items()}
    p = "sglang/srt/server_args.py:"
    assert got == {
        "--speculative-algorithm": (None, "ServerArgs.speculative_algorithm", p + "5"),
        "--moe-runner-backend": ("auto", "ServerArgs.moe_runner_backend", p + "6"),
        "--fp4-gemm-backend": ("flashinfer_cutlass", "ServerArgs.fp4_gemm_runner_backend", p + "7"),
        # not a literal (arithmetic, default_factory): the expression is kept
        "--dp-size": ("ServerArgs.dp_size", "ServerArgs.dp_size", p + "9"),
        "--json-model-override-args": ("ServerArgs.json_model_override_args", None, p + "18"),
        "--page-size": ("16", None, p + "19"),
        "--tensor-parallel-size": ("1", "cls.tp_size", p + "8"),
        "--tp-self": ("1", "self.tp_size", p + "8"),
    }
    assert cli["--moe-runner-backend"]["location"] == p + "15"


def test_a_set_inside_a_constant_is_written_in_one_order_whatever_the_hash_seed() -> None:
    """A set literal nested in a dict constant (as 0.5.23 ``srt/arg_groups/hisparse_hook.py:20``): the cached per-file
    result is the same in every process, not the string-hash order of the one that parsed it."""
    import json
    import subprocess
    import sys

    code = ("import json; from mtp_audit.engines.sglang.scan import scan_file; "
            "print(json.dumps(scan_file('sglang/srt/server_args.py', "
            "b'MODEL_OVERRIDES = {\"a\": {\"p\", \"q\", \"r\", \"s\", \"t\"}}\\n', ('server',))['consts']))")
    got = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in range(6)}
    assert len(got) == 1
    assert json.loads(got.pop())["MODEL_OVERRIDES"]["dict"] == {"a": ["p", "q", "r", "s", "t"]}


def test_an_mtp_model_file_that_does_not_parse_is_named_in_a_note(tmp_path):
    """SGLang's registry skips a model module that fails to import: a file registering an MTP class that does not
    parse (3.12 syntax here, read by an older Python) was counted silently; it is now a note naming the file, the
    class still listed (a newer serving Python may import it)."""
    nextn = ("class DeepseekV3ForCausalLMNextN:\n    pass\n\n\nEntryClass = [DeepseekV3ForCausalLMNextN]\n\n"
             "def _f[T](x: T) -> T:\n    return x\n")
    if __import__("sys").version_info >= (3, 12):
        nextn = nextn.replace("def _f[T](x: T) -> T:", "def _f(x:")
    root = _tree(tmp_path / "t", {"sglang/srt/server_args.py": SA, "sglang/srt/models/deepseek_nextn.py": nextn,
                                  "sglang/srt/models/llama.py": "class LlamaForCausalLM(\n\nEntryClass = [LlamaForCausalLM]\n"})
    rep = audit_sglang(root)
    (gap,) = [g for g in rep.gaps if g.path == "sglang/srt/models/deepseek_nextn.py"]
    assert not gap.blocking and gap.message.startswith("sglang/srt/models/deepseek_nextn.py: does not parse as Python 3 at line 7")
    assert gap.message.endswith(": SGLang's model registry skips a module that fails to import, so whether "
                                "DeepseekV3ForCausalLMNextN is registered depends on the serving Python")
    assert "DeepseekV3ForCausalLMNextN" in {e["class"] for e in rep.facts["sglang"]["mtp_classes"]}
    # a model file without an MTP class is not parsed (nor noted): the MTP question does not depend on it
    assert not [g for g in rep.gaps if g.path == "sglang/srt/models/llama.py"]


def test_upgrade_summary_sorts_findings_by_what_they_concern_not_their_words() -> None:
    """The SGLang upgrade's summary lines read what diff_facts said each finding concerns (Concerns), never its message:
    a rewrite of an MTP/FP4 argument whose words happen to say "not an MTP/FP4 argument" is not secondary, and a guarded
    one is counted whatever its words."""
    from mtp_audit.engines.sglang.diff import Concerns, _guarded_line, _secondary
    from mtp_audit.engines.sglang.rules import BY_ID
    from mtp_audit.report import Severity

    rule = BY_ID["MTP110"]
    worded = rule.finding("new silent rewrite: x 'not an MTP/FP4 argument' -> y", severity=Severity.INFO)
    other = rule.finding("new silent rewrite: log_level None -> info", severity=Severity.INFO)
    env = BY_ID["MTP112"].finding("new environment variable SGLANG_SPEC_X", severity=Severity.INFO)
    concerns = {worded: Concerns(mtp=True), other: Concerns(mtp=False), env: Concerns(mtp=False)}
    assert _secondary([worded, other, env], concerns) == [["MTP110", other.message], ["MTP112", env.message]]
    guarded = rule.finding("new silent rewrite: speculative_num_steps None -> 3", severity=Severity.WARNING)
    assert _guarded_line([guarded], {guarded: Concerns(mtp=True, guarded=True)}, "0.5.9", "0.5.23")[0].startswith(
        "1 new MTP/FP4 rewrite(s) apply only under a guard")
    assert _guarded_line([guarded], {guarded: Concerns(mtp=True)}, "0.5.9", "0.5.23") == []
