"""mtp-audit's side of the SGLang oracle: the launch analyzer's answer for every case of tests/oracle/sglang_grid.py,
through the public :func:`mtp_audit.launch.audit_launch` with ``--sglang`` the cached wheel and the declared machine's
environment dump, compared field by field with what real SGLang recorded (tests/data/oracle/sglang-X.json, built by
build_sglang_oracle.py).

``python tests/oracle/replay_sglang_grid.py 0.5.23`` prints the agreement per field and every disagreement.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FIXTURES = ROOT / "fixtures"
ENVDUMPS = FIXTURES / "preflight" / "envdumps"
RECORDED = ROOT / "tests" / "data" / "oracle"

#: the compared fields, in report order
COMPARED = ("starts", "speculative_algorithm", "draft_model", "draft_architecture", "moe_runner_backend",
            "fp4_gemm_backend", "speculative_parameters")
#: recorded but not compared: the analyzer does not predict them (docs/sglang.md "Oracle")
NOT_PREDICTED = ("attention_backend",)
#: the speculative fields SGLang's hook decides, compared together as ``speculative_parameters``
SPECULATIVE_PARAMETERS = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
#: findings that say the server does not start (argparse refusal, parallel sizes refused, a backend assert that certainly
#: fails), besides the certain start-up asserts of ``facts["launch"]["startup_asserts"]``
_REFUSALS = ("MTP300", "MTP312", "MTP313")


def _value(text: str | None) -> str | None:
    """The backend name of a summary text (``"flashinfer_cutedsl (auto; ...)"`` -> ``flashinfer_cutedsl``); ``None`` when
    the analyzer gives no value (``not checked``, ``unknown``, ``not resolved``)."""
    if not text or text.startswith(("not ", "unknown")):
        return None
    return text.split(" ", 1)[0].split(";", 1)[0]


#: where real SGLang stops because transformers cannot read the target's config.json without its remote code (MiMo-7B:
#: ``model_type: mimo``): the oracle has no network and the grid passes no --trust-remote-code
TARGET_CONFIG_UNREADABLE = "sglang/srt/utils/hf_transformers/config.py"


def predict_case(sg_report: Any, folder: Path, flags: list[str], env_dump: Path) -> dict[str, Any]:
    """What mtp-audit says SGLang does for ``python -m sglang.launch_server --model-path FOLDER FLAGS`` on the machine of
    ``env_dump``: ``starts`` (false with ``refusal`` when a finding or a certain start-up assert says the server stops),
    the resolved speculative algorithm, the draft checkpoint (``"<target>"``), the draft class, and the MoE runner and
    FP4 GEMM backends (``None`` where the analyzer gives no value)."""
    from mtp_audit.launch import audit_launch

    toks = ["python", "-m", "sglang.launch_server", "--model-path", str(folder)]
    toks += [str(folder) if f == "<target>" else f for f in flags]
    rep = audit_launch(toks, sglang=sg_report, env_dumps=env_dump, environ={}, cwd=folder)
    launch = rep.facts["launch"]
    refusals = [f"{f.rule_id}: {f.message}" for f in rep.findings if f.rule_id in _REFUSALS]
    refusals += [f"assert {a.get('location')}: {a.get('message')}" for a in launch.get("startup_asserts") or []]
    d = launch.get("draft") or {}
    summary = launch.get("summary") or {}
    draft = None
    if d.get("uses_draft"):
        draft = "<target>" if str(d.get("path")) == str(folder) else str(d.get("path"))
    return {
        "starts": not refusals,
        "refusal": refusals,
        "speculative_algorithm": (launch.get("speculative") or {}).get("runs_as"),
        "draft_model": draft,
        "draft_architecture": d.get("draft_class") if d.get("uses_draft") else None,
        "moe_runner_backend": _value(summary.get("moe_runner_backend")),
        "fp4_gemm_backend": _value(summary.get("fp4_gemm_backend")),
        "verdict": summary.get("verdict"),
        "speculative_parameters": _parameters(summary.get("speculative_parameters")),
    }


def _parameters(text: str | None) -> tuple[Any, ...] | None:
    """``(steps, topk, draft tokens)`` of the launch answer's ``speculative_parameters`` (``"steps 3, topk 1, draft
    tokens 4 ..."``; an ``unknown`` part is ``None``), or ``None`` when the answer states none."""
    m = re.match(r"steps (\S+), topk (\S+), draft tokens ([^\s(]+)", text or "")
    if m is None:
        return None
    return tuple(int(x) if re.fullmatch(r"-?\d+", x) else None if x == "unknown" else x for x in m.groups())


def modelopt_nvfp4(folder: Path) -> bool:
    """Whether the checkpoint in ``folder`` is ModelOpt NVFP4 (``hf_quant_config.json`` ``quantization.quant_algo``)."""
    f = folder / "hf_quant_config.json"
    if not f.exists():
        return False
    q = json.loads(f.read_text()).get("quantization") or {}
    return str(q.get("quant_algo") or "").upper() == "NVFP4"


def moe_runner_effective(resolved: str | None, modelopt_fp4: bool, cc: tuple[int, int]) -> str | None:
    """The MoE runner that runs: the resolved ``moe_runner_backend``, except where resolution leaves ``auto`` on a
    ModelOpt NVFP4 checkpoint, whose MoE method picks it when the layer is built (SGLang 0.5.23
    ``layers/quantization/modelopt_quant.py:3117-3123`` ``create_moe_runner``: ``marlin`` on CUDA compute capability
    8.0 to 9.x, else ``flashinfer_trtllm``). The oracle stops before the model runner, so this one step is transcribed
    here from the release's source rather than run."""
    if resolved != "auto" or not modelopt_fp4:
        return resolved
    return "marlin" if (8, 0) <= cc < (10, 0) else "flashinfer_trtllm"


def real_values(res: dict[str, Any]) -> dict[str, Any]:
    """The compared fields of one recorded case (``res``: the ``result`` of build_sglang_oracle.py; the MoE runner as
    :func:`moe_runner_effective` when the caller sets ``res["moe_runner_effective"]``)."""
    if not res.get("ok"):
        return {"starts": False, "where": res.get("where"), "exc": f"{res.get('exc_type')}: {res.get('exc_msg')}"}
    f = res["fields"]
    algo = f.get("speculative_algorithm")
    uses_draft = "draft_architectures" in res or "draft_error" in res
    archs = res.get("draft_architectures") or [None]
    return {
        "starts": True,
        "speculative_algorithm": algo,
        # SGLang keeps the path None and builds the draft ModelConfig from --model-path (model_config.py
        # ``model_path or cfg.model_path``)
        "draft_model": (f.get("speculative_draft_model_path") or "<target>") if uses_draft else None,
        "draft_architecture": archs[0] if uses_draft else None,
        "moe_runner_backend": res.get("moe_runner_effective", f.get("moe_runner_backend")),
        # what fp4_utils.initialize_fp4_gemm_config picks for the resolved value on this GPU
        "fp4_gemm_backend": res.get("fp4_gemm_effective"),
        "speculative_parameters": tuple(f.get(k) for k in SPECULATIVE_PARAMETERS) if algo else None,
        **{k: f.get(k) for k in NOT_PREDICTED},
    }


def compare_case(real: dict[str, Any], ours: dict[str, Any]) -> dict[str, str | None]:
    """Per compared field: ``None`` when both agree, ``"not compared"`` when the analyzer gives no value (or the
    real server stops), else the disagreement in words. The analyzer's values are compared even where it says the
    server stops (that is scored once, in ``starts``)."""
    out: dict[str, str | None] = {}
    if real["starts"] != ours["starts"]:
        out["starts"] = (f"real stops: {real['exc'][:200]} at {real['where']} | analyzer says it starts" if not real["starts"]
                         else f"real starts | analyzer: {'; '.join(ours['refusal'])[:250]}")
    else:
        out["starts"] = None
    for k in COMPARED[1:]:
        if not real["starts"]:
            out[k] = "not compared"
        elif ours.get(k) is None and k in ("moe_runner_backend", "fp4_gemm_backend", "speculative_parameters"):
            out[k] = "not compared"
        elif real.get(k) != ours.get(k):
            out[k] = f"real {real.get(k)!r}, analyzer {ours.get(k)!r}"
        else:
            out[k] = None
    return out


def compare(version: str, cases: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Agreement per field over the recorded oracle of ``version``: ``{"fields": {field: [agree, compared]},
    "overall": [agree, compared], "lines": [disagreement lines], "not_compared": {field: count}}``."""
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(HERE))
    from conftest import sglang_wheel
    from sglang_grid import CONFIGS, GPUS

    from mtp_audit.engines.sglang import audit_sglang

    data = json.loads((RECORDED / f"sglang-{version}.json").read_text())
    sg_report = audit_sglang(sglang_wheel(version))
    fields = {k: [0, 0] for k in COMPARED}
    skipped = {k: 0 for k in COMPARED}
    lines = []
    for case in cases if cases is not None else data["cases"]:
        if str(case["result"].get("where") or "").startswith(TARGET_CONFIG_UNREADABLE):
            lines.append(f"{case['config']} {case['form']} {case['gpu']}: not compared, real SGLang cannot read the "
                         f"target's config ({case['result']['exc_msg'][:90]})")
            continue
        folder = FIXTURES / CONFIGS[case["config"]] / case["config"]
        ours = predict_case(sg_report, folder, case["flags"], ENVDUMPS / GPUS[case["gpu"]]["env_dump"])
        res = dict(case["result"])
        if res.get("ok"):
            res["moe_runner_effective"] = moe_runner_effective(res["fields"].get("moe_runner_backend"), modelopt_nvfp4(folder),
                                                               tuple(GPUS[case["gpu"]]["cc"]))
        real = real_values(res)
        for k, why in compare_case(real, ours).items():
            if why == "not compared":
                skipped[k] += 1
                continue
            fields[k][1] += 1
            fields[k][0] += why is None
            if why is not None:
                lines.append(f"{case['config']} {case['form']} {case['gpu']} {k}: {why}")
    overall = [sum(v[0] for v in fields.values()), sum(v[1] for v in fields.values())]
    return {"fields": fields, "overall": overall, "lines": lines, "not_compared": skipped}


if __name__ == "__main__":
    res = compare(sys.argv[1])
    for k, (ok, n) in res["fields"].items():
        print(f"{k:22} {ok}/{n} agree ({100 * ok / max(n, 1):.1f} %), {res['not_compared'][k]} not compared")
    ok, n = res["overall"]
    print(f"{'overall':22} {ok}/{n} agree ({100 * ok / max(n, 1):.1f} %)")
    print("\n".join(res["lines"]))
