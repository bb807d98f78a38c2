"""``mtp-audit launch -- vllm serve M --speculative-config '{"method": "suffix"}'``: decided from the machine's packages.

Values checked by hand in the 0.33.0 / 0.24.0 wheels: ``_validate_suffix_decoding`` raises
``ImportError("Arctic Inference is required for suffix decoding. Install via `pip install arctic-inference==0.1.1`.")``
at ``vllm/config/speculative.py:1728`` (0.24.0: :852) when ``not has_arctic_inference()`` (:1727 / :851; the
``arctic_inference`` module, ``vllm/utils/import_utils.py:612`` / :506), else defaults ``num_speculative_tokens`` to
``suffix_decoding_max_tree_depth`` (field default 24, ``speculative.py:538`` / :176; :1735). The oracle venvs recorded that
ImportError at those lines (tests/data/oracle/vllm-0.33.0-grid3.json, ``packages: {"arctic-inference": null}``).

The machine: a facts file (the H200's, fixtures/preflight/h200-live-facts.json, with ``arctic-inference`` recorded or
not), a pip listing (fixtures/preflight/envdumps/pip/pip-freeze-vllm-0.33.0-cpu.txt: ``pip freeze`` of that oracle venv, 140
packages, no arctic-inference), or nothing (``--no-machine``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, vllm_wheel

from mtp_audit.launch import audit_launch

pytestmark = pytest.mark.network

QWEN35 = FIXTURES / "oracle-configs" / "Qwen--Qwen3.5-27B"
H200 = FIXTURES / "preflight" / "h200-live-facts.json"
FREEZE = FIXTURES / "preflight" / "envdumps" / "pip" / "pip-freeze-vllm-0.33.0-cpu.txt"
MESSAGE = "ImportError: Arctic Inference is required for suffix decoding. Install via `pip install arctic-inference==0.1.1`."


def _facts(tmp_path: Path, arctic: dict | None) -> Path:
    """The H200's facts with ``arctic-inference`` recorded as ``arctic`` (``None``: not recorded, as the file has it)."""
    d = json.loads(H200.read_text())
    if arctic is not None:
        d["packages"]["arctic-inference"] = arctic
    out = tmp_path / "facts.json"
    out.write_text(json.dumps(d))
    return out


def _suffix(version: str, spec: dict | None = None, **machine):
    spec = spec or {"method": "suffix"}
    return audit_launch(["vllm", "serve", str(QWEN35), "--speculative-config", json.dumps(spec)], vllm=vllm_wheel(version),
                        environ={}, cwd=QWEN35, **machine)


def _refusals(r) -> list:
    return [f for f in r.findings if f.rule_id == "MTP320"]


@pytest.mark.parametrize(("version", "line"), [("0.33.0", 1728), ("0.24.0", 852)])
def test_facts_saying_arctic_inference_not_installed_is_vllms_import_error(tmp_path: Path, version: str, line: int) -> None:
    facts = _facts(tmp_path, {"missing": "not installed", "source": "importlib.metadata"})
    [f] = _refusals(_suffix(version, facts_file=facts))
    assert f.message == (f"vLLM {version} rejects the speculative config (the server will not start): {MESSAGE} "
                         f"(vllm/config/speculative.py:{line}) while SpeculativeConfig is built")
    ev = {e.label: e.value for e in f.evidence}
    assert ev["machine: arctic-inference"] == "not installed [live (importlib.metadata: not installed)]"  # the facts file keeps its origin
    assert f.remediation is not None and f.remediation.startswith("install arctic-inference on the serving machine")


def test_facts_saying_arctic_inference_installed_runs_suffix_with_its_tree_depth(tmp_path: Path) -> None:
    facts = _facts(tmp_path, {"value": "0.1.1", "source": "importlib.metadata"})
    r = _suffix("0.33.0", facts_file=facts)
    sp = r.facts["launch"]["speculative"]
    assert _refusals(r) == [] and (sp["runs_as"], sp["num_speculative_tokens"]) == ("suffix", 24)
    r = _suffix("0.33.0", {"method": "suffix", "suffix_decoding_max_tree_depth": 16}, facts_file=facts)
    sp = r.facts["launch"]["speculative"]
    assert _refusals(r) == [] and (sp["runs_as"], sp["num_speculative_tokens"]) == ("suffix", 16)
    assert not [g for g in r.gaps if "has_arctic_inference" in g.message]


@pytest.mark.parametrize("machine", ["facts-without-it", "no-machine"])
def test_arctic_inference_not_recorded_is_could_not_tell(tmp_path: Path, machine: str) -> None:
    kw = {"facts_file": _facts(tmp_path, None)} if machine == "facts-without-it" else {"no_machine": True}
    r = _suffix("0.33.0", **kw)
    assert _refusals(r) == [] and r.facts["launch"]["speculative"]["runs_as"] is None
    [g] = [g for g in r.gaps if "not has_arctic_inference() (vllm/config/speculative.py:1727)" in g.message]
    assert "one outcome is a refusal (ImportError" in g.message


def test_a_whole_pip_freeze_without_it_is_the_import_error() -> None:
    [f] = _refusals(_suffix("0.33.0", env_dumps=[FREEZE]))
    assert "(vllm/config/speculative.py:1728)" in f.message
    ev = {e.label: e.value for e in f.evidence}
    assert ev["machine: arctic-inference"] == ("not installed [env-dump:pip-list line 2 (pip-list line 2: not installed (the "
                                               "pip listing, lines 2-141, 'agent-detector' .. 'yarl', is in name order and "
                                               "does not list it))]")


def test_a_pip_freeze_cut_before_where_it_would_be_is_could_not_tell(tmp_path: Path) -> None:
    lines = FREEZE.read_text().splitlines(keepends=True)
    # the first 8 packages: agent-detector .. anyio; arctic-inference would come after anyio
    cut = tmp_path / "cut.txt"
    cut.write_text("".join(lines[:9]))
    assert lines[8] == "anyio==4.16.0\n"
    r = _suffix("0.33.0", env_dumps=[cut])
    assert _refusals(r) == []
    assert [g for g in r.gaps if "not has_arctic_inference() (vllm/config/speculative.py:1727)" in g.message]


def test_a_pip_freeze_that_lists_it_runs_suffix(tmp_path: Path) -> None:
    lines = FREEZE.read_text().splitlines(keepends=True)
    at = lines.index("attrs==26.1.0\n")
    dump = tmp_path / "with-arctic.txt"
    dump.write_text("".join(lines[:at] + ["arctic_inference==0.1.1\n"] + lines[at:]))
    r = _suffix("0.33.0", env_dumps=[dump])
    sp = r.facts["launch"]["speculative"]
    assert _refusals(r) == [] and (sp["runs_as"], sp["num_speculative_tokens"]) == ("suffix", 24)


def test_vllm_collect_env_pip_lines_do_not_say_absent() -> None:
    # vllm collect-env lists only packages matching DEFAULT_PIP_PATTERNS (torch, nvidia, flashinfer-python, ...): a name it
    # does not list may be installed (fixtures/preflight/envdumps/vllm-21274.txt, a real dump with 22 [pip3] lines)
    r = _suffix("0.33.0", env_dumps=[FIXTURES / "preflight" / "envdumps" / "vllm-21274.txt"])
    assert _refusals(r) == []
    assert [g for g in r.gaps if "not has_arctic_inference() (vllm/config/speculative.py:1727)" in g.message]
