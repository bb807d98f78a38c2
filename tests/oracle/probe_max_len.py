"""Real vLLM on ``"max_model_len"`` in the speculative config: for each config folder and value, what
``SpeculativeConfig(method="mtp", num_speculative_tokens=1, max_model_len=V)`` does on the target ``ModelConfig``
(built as build_vllm_oracle.py builds it; ``--target-max-len N`` gives the target ``max_model_len=N``). Prints one JSON
line per case. Run with an oracle venv's interpreter (never mtp-audit's own):

    /work/oracle-venvs/vllm-0.34.0/bin/python tests/oracle/probe_max_len.py [--target-max-len N] V1,V2 CONFIG_DIR...

The values it printed are written by hand into tests/test_launch_vllm_max_len.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

from build_vllm_oracle import _one


def main(argv: list[str]) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    target_len = None
    if argv[0] == "--target-max-len":
        target_len, argv = int(argv[1]), argv[2:]
    values = [int(v) for v in argv[0].split(",")]
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    import vllm
    from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig

    scratch = tempfile.mkdtemp(prefix="vllm-probe-")
    for src in argv[1:]:
        name = os.path.basename(src.rstrip("/"))
        folder = os.path.join(scratch, name)
        os.makedirs(folder, exist_ok=True)
        for f in ("config.json", "hf_quant_config.json"):
            if os.path.exists(os.path.join(src, f)):
                shutil.copy(os.path.join(src, f), folder)
        target = ModelConfig(model=folder, tokenizer=folder, skip_tokenizer_init=True, max_model_len=target_len)
        for v in values:
            res = _one(SpeculativeConfig, ParallelConfig, target, folder,
                       {"method": "mtp", "num_speculative_tokens": 1, "max_model_len": v})
            print(json.dumps({"vllm": vllm.__version__, "config": name, "target_max_len": target_len,
                              "target_derived": target.max_model_len, "max_model_len": v, "result": res}),
                  file=real_stdout, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
