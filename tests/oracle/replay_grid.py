"""mtp-audit's side of the vLLM oracle: the launch analyzer's answer for every (config, form) of tests/oracle/grid.py,
and the comparison with what real vLLM recorded (tests/data/oracle/vllm-X.json, built by build_vllm_oracle.py).

``python tests/oracle/replay_grid.py 0.33.0`` prints the agreement and every disagreement.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CONFIGS = ROOT / "fixtures" / "oracle-configs"
RECORDED = ROOT / "tests" / "data" / "oracle"
H200 = ROOT / "fixtures" / "preflight" / "h200-live-facts.json"


def _arg(value: Any, folder: Path) -> Any:
    """``<target>`` -> the served model's folder; ``<draft:NAME>`` -> the folder of config NAME (as the recording did)."""
    if value == "<target>":
        return str(folder)
    if isinstance(value, str) and value.startswith("<draft:"):
        return str(folder.parent / value[len("<draft:"):-1])
    return value


def oracle_machine(packages: dict[str, str | None] | None) -> Any:
    """The machine the replay is given: the H200's facts (``fixtures/preflight/h200-live-facts.json``) with the oracle
    environment's recorded packages (``"packages"`` of the oracle JSON, ``importlib.metadata`` there: a version, or
    ``None`` for not installed, the whole answer for that name) in place of the H200's; a file without the record
    leaves them as the H200 facts say (for ``arctic-inference``: not recorded, so unknown)."""
    import dataclasses

    from mtp_audit.engines.base import Machine
    from mtp_audit.preflight.facts import NOT_INSTALLED, Fact, MachineFacts

    facts = MachineFacts.from_dict(json.loads(H200.read_text()))
    if not packages:
        return Machine(facts_file=H200)
    src = "the oracle environment's importlib.metadata"
    recorded = {name: Fact.of(v, src) if v is not None else Fact.absent(NOT_INSTALLED, src) for name, v in packages.items()}
    return Machine(facts=dataclasses.replace(facts, packages={**facts.packages, **recorded}))


def replay_case(engine: Any, release: Any, analyzers: Any, folder: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """What mtp-audit says vLLM does for ``vllm serve FOLDER --speculative-config SPEC``: ``ok`` with ``method``,
    ``num_speculative_tokens``, ``draft_architectures``; or the refusal (``exc_type``, ``where``); or ``undecided``."""
    from mtp_audit.engines.base import LaunchRequest

    args = {k: _arg(v, folder) for k, v in spec.items()}
    toks = ["vllm", "serve", str(folder), "--speculative-config", json.dumps(args)]
    req = LaunchRequest(toks=toks, machine=analyzers.machine, env=None, environ={}, cwd=folder, analyzers=analyzers)
    out = engine.evaluate(req, release, None)
    f = out.facts
    refusals = [x for x in out.findings if x.rule_id == "MTP320"]
    if refusals:
        msg = refusals[0].message
        exc = msg.split("(the server will not start): ", 1)[-1]
        where = None
        if " (vllm/" in exc:
            where = "vllm/" + exc.rsplit(" (vllm/", 1)[1].split(")", 1)[0]
        head = exc.split(":", 1)[0]
        # a pydantic ValidationError has no vLLM file:line (pydantic raises it); the class is still the first word
        kind = head if where or (head.isidentifier() and head.endswith("Error")) else None
        return {"ok": False, "exc_type": kind, "where": where, "message": msg}
    sp, d = f["speculative"], f["draft"]
    if sp.get("runs_as") is None:
        return {"undecided": True, "gaps": [g.message for g in out.gaps if "speculative" in g.message.lower() or "replay" in g.message]}
    archs = d.get("architectures_replayed", d.get("architectures"))
    return {"ok": True, "method": sp["runs_as"], "num_speculative_tokens": sp["num_speculative_tokens"], "draft_architectures": archs}


def replay_all(version: str, cases: list[dict[str, Any]] | None = None,
               packages: dict[str, str | None] | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    """The replay's answer for the whole grid at one vLLM release (the cached wheel), or for the recorded ``cases`` only
    (each with its ``config``, ``form`` and ``spec``), on the H200 with the oracle's recorded ``packages``
    (:func:`oracle_machine`)."""
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(HERE))
    from conftest import vllm_wheel
    from grid import CONFIGS as NAMES
    from grid import FORMS

    from mtp_audit.engines.vllm.launch import VllmEngine
    from mtp_audit.launch.analyzers import LaunchAnalyzers

    engine = VllmEngine()
    release, _gap = engine.release(vllm_wheel(version))
    out = {}
    todo = [(c["config"], c["form"], c["spec"]) for c in cases if "result" in c] if cases is not None else \
        [(name, form, spec) for name in NAMES for form, spec in FORMS.items()]
    analyzers: dict[str, Any] = {}
    for name, form, spec in todo:
        folder = CONFIGS / name
        if name not in analyzers:
            analyzers[name] = LaunchAnalyzers(oracle_machine(packages), folder)
        out[(name, form)] = replay_case(engine, release, analyzers[name], folder, spec)
    return out


def agrees(real: dict[str, Any], ours: dict[str, Any]) -> tuple[bool, str]:
    """Whether the replay says what real vLLM did: the same exception class raised at the same ``file:line``, or the
    same method, ``num_speculative_tokens`` and draft architectures."""
    if ours.get("undecided"):
        return False, "replay undecided: " + "; ".join(ours.get("gaps") or [])[:300]
    if real["ok"] != ours["ok"]:
        return False, f"real {'runs' if real['ok'] else real['exc_type'] + ' at ' + str(real['where'])}, replay " + (
            "runs" if ours["ok"] else str(ours.get("message"))[:300])
    if not real["ok"]:
        same = real["exc_type"] == ours["exc_type"] and real["where"] == ours["where"]
        return same, "" if same else f"real {real['exc_type']} at {real['where']}: {real['exc_msg'][:150]} | replay {ours['message'][:250]}"
    diffs = [k for k in ("method", "num_speculative_tokens", "draft_architectures") if real.get(k) != ours.get(k)]
    return not diffs, "; ".join(f"{k}: real {real.get(k)!r}, replay {ours.get(k)!r}" for k in diffs)


def compare(version: str, grid: str = "") -> tuple[int, int, list[str]]:
    """``(agreeing, compared, disagreement lines)`` for the recorded oracle of ``version`` (``grid``: ``""`` for
    vllm-X.json, ``"grid3"`` for vllm-X-grid3.json)."""
    data = json.loads((RECORDED / f"vllm-{version}{'-' + grid if grid else ''}.json").read_text())
    ours = replay_all(version, data["cases"], data.get("packages"))
    n = ok = 0
    lines = []
    for case in data["cases"]:
        if "result" not in case:
            lines.append(f"{case['config']}: not compared, real vLLM cannot build the target ModelConfig ({case['target_error'][:160]})")
            continue
        res = case["result"]
        if not res["ok"] and "failed to be inspected" in (res.get("exc_msg") or ""):
            # the oracle's own environment could not import the model class (a CPU-only venv lacks its imports): vLLM's
            # registry then refuses every architecture of that module; this says nothing about the config decision
            lines.append(f"{case['config']} {case['form']}: not compared, the oracle venv could not import the model class "
                         f"({res['exc_msg'][:80]})")
            continue
        n += 1
        good, why = agrees(res, ours[(case["config"], case["form"])])
        ok += good
        if not good:
            lines.append(f"{case['config']} {case['form']}: {why}")
    return ok, n, lines


if __name__ == "__main__":
    ok, n, lines = compare(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
    print(f"vLLM {sys.argv[1]} {' '.join(sys.argv[2:])}: {ok}/{n} agree ({100 * ok / max(n, 1):.1f} %)")
    print("\n".join(lines))
