"""Build real ``vllm.config.SpeculativeConfig`` objects for a grid of checkpoint configs x ``--speculative-config``
forms, in ONE process, and write what vLLM decided as JSON (the oracle for the statement-order replay).

Run with the interpreter of a virtual environment that has the real ``vllm==X`` installed (never mtp-audit's own):

    /work/oracle-venvs/vllm-0.33.0/bin/python tests/oracle/build_vllm_oracle.py CONFIG_DIR... > tests/data/oracle/vllm-0.33.0.json

``MTP_AUDIT_ORACLE_WIDE=1`` adds grid.FORMS_WIDE; ``MTP_AUDIT_ORACLE_GRID3=1`` builds only the third grid
(:func:`grid.grid3`, recorded in ``vllm-X-grid3.json``), ``MTP_AUDIT_ORACLE_GRID4=1`` only the fourth
(:func:`grid.grid4`, ``vllm-X-grid4.json``): pass every config folder it names, the drafts' too.

Each CONFIG_DIR holds a ``config.json`` (copied into a scratch folder, never anything else). It imports vllm; it is
not part of the test suite and is not imported by it (tests/oracle/test_vllm_oracle.py runs it in a subprocess).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import traceback

from grid import FORMS, FORMS_4, FORMS_NEW, FORMS_WIDE, grid3, grid4  # noqa: E402  (tests/oracle/grid.py: the same forms the replay test uses)

#: The distributions of the oracle's environment that decide what ``SpeculativeConfig`` accepts (``arctic-inference``:
#: ``has_arctic_inference()``, suffix decoding; ``transformers``: the defaults of the config class a checkpoint's
#: ``hf_config`` is built from, hence its ``max_model_len``), recorded so that the replay is given the same machine.
PACKAGES = ("arctic-inference", "transformers")


def packages() -> dict[str, str | None]:
    """Distribution -> its version in this interpreter's environment (``importlib.metadata``), ``None`` when not
    installed: the whole answer for each name of :data:`PACKAGES`."""
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _where(tb: traceback.StackSummary) -> str | None:
    frames = [f for f in tb if "/vllm/" in f.filename]
    if not frames:
        return None
    f = frames[-1]
    return f"vllm/{f.filename.split('/vllm/', 1)[1]}:{f.lineno}"


def _arg(value, folder):
    """``<target>`` -> the served model's folder; ``<draft:NAME>`` -> the scratch folder of config NAME."""
    if value == "<target>":
        return folder
    if isinstance(value, str) and value.startswith("<draft:"):
        return os.path.join(os.path.dirname(folder), value[len("<draft:"):-1])
    return value


def _one(SpeculativeConfig, ParallelConfig, target, folder, spec):
    args = {k: _arg(v, folder) for k, v in spec.items()}
    try:
        sc = SpeculativeConfig(target_model_config=target, target_parallel_config=ParallelConfig(), **args)
    except Exception as exc:  # noqa: BLE001 - the oracle records every refusal
        tb = traceback.extract_tb(exc.__traceback__)
        cause = exc
        # pydantic wraps errors raised inside __post_init__ / validators
        inner = getattr(exc, "errors", None)
        msg = str(exc)
        if inner is not None:
            try:
                errs = exc.errors()
                if errs and errs[0].get("ctx", {}).get("error") is not None:
                    cause = errs[0]["ctx"]["error"]
                    tb = traceback.extract_tb(cause.__traceback__)
                    msg = str(cause)
            except Exception:  # noqa: BLE001
                pass
        return {"ok": False, "exc_type": type(cause).__name__, "exc_msg": msg[:400], "where": _where(tb)}
    d = sc.draft_model_config
    archs = None
    if d is not None and getattr(d, "hf_config", None) is not None:
        archs = list(getattr(d.hf_config, "architectures", None) or [])
    return {"ok": True, "method": sc.method, "num_speculative_tokens": sc.num_speculative_tokens, "draft_architectures": archs}


def main(dirs: list[str]) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # vLLM's logger writes to stdout: keep stdout for the JSON alone
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    import vllm
    from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig

    out = {"vllm": vllm.__version__, "packages": packages(), "cases": []}
    scratch = tempfile.mkdtemp(prefix="vllm-oracle-")
    # every folder first: a form may name another config's folder as its draft (``<draft:NAME>``)
    for src in dirs:
        folder = os.path.join(scratch, os.path.basename(src.rstrip("/")))
        os.makedirs(folder, exist_ok=True)
        for f in ("config.json", "hf_quant_config.json"):
            if os.path.exists(os.path.join(src, f)):
                shutil.copy(os.path.join(src, f), folder)
    every = {**FORMS, **FORMS_WIDE, **FORMS_NEW, **FORMS_4}
    only = grid3() if os.environ.get("MTP_AUDIT_ORACLE_GRID3") else grid4() if os.environ.get("MTP_AUDIT_ORACLE_GRID4") else None
    for src in dirs:
        name = os.path.basename(src.rstrip("/"))
        folder = os.path.join(scratch, name)
        if only is not None and not any(c == name for c, _f in only):
            continue
        try:
            target = ModelConfig(model=folder, tokenizer=folder, skip_tokenizer_init=True)
        except Exception as exc:  # noqa: BLE001
            out["cases"].append({"config": name, "target_error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            continue
        forms = {**FORMS, **FORMS_WIDE} if os.environ.get("MTP_AUDIT_ORACLE_WIDE") else FORMS
        if only is not None:
            forms = {f: every[f] for c, f in only if c == name}
        for form_id, spec in forms.items():
            res = _one(SpeculativeConfig, ParallelConfig, target, folder, spec)
            out["cases"].append({"config": name, "form": form_id, "spec": spec, "result": res})
            print(name, form_id, res, file=sys.stderr, flush=True)
    json.dump(out, real_stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
