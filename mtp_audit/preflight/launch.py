"""The intended launch: an SGLang or vLLM command line, the checkpoint's quantization, and what SGLang will
make of the flags (choices, defaults, ``auto`` resolutions).

vLLM commands (``vllm serve MODEL ...``, ``python -m vllm.entrypoints.openai.api_server --model MODEL ...``) are
parsed for the flags that decide FP4 kernels (:data:`VLLM_FLAGS`), the way vLLM's ``FlexibleArgumentParser`` reads
them (``--tensor_parallel_size`` == ``--tensor-parallel-size``; wheel:vllm-0.20.0:vllm/utils/argparse_utils.py:300-320);
``KEY=VALUE`` tokens before the program are environment variables of the launch (:attr:`Launch.env`). The
``mtp_audit.launch`` package can reuse :func:`parse_launch` for the same purpose.

Flag semantics come from the sglang analyzer (``mtp_audit.engines.sglang.audit_sglang``) when that package is
present and an SGLang tree is at hand: its public report's ``facts["sglang"]`` gives ``version``,
``cli_arguments`` (choices/default/location) and ``auto_resolutions``. Otherwise they come from the
capability matrix's per-version rows (``mtp_audit/data/matrix.json``, ``blackwell_fp4.md`` §3).
The checkpoint is read from ``--model-path`` when it is a local folder: ``hf_quant_config.json``
(ModelOpt) and ``config.json`` ``quantization_config``, both with ``read_json_bounded``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtp_audit.errors import InputError
from mtp_audit.sources.bounded import read_json_bounded

#: Flags interpreted, with their aliases (SGLang server_args names).
FLAGS: dict[str, tuple[str, ...]] = {
    "--model-path": ("--model-path", "--model"),
    "--quantization": ("--quantization",),
    "--fp4-gemm-backend": ("--fp4-gemm-backend",),
    "--moe-runner-backend": ("--moe-runner-backend",),
    "--speculative-algorithm": ("--speculative-algorithm",),
    "--tp": ("--tp", "--tp-size", "--tensor-parallel-size"),
    "--ep": ("--ep", "--ep-size", "--expert-parallel-size"),
    "--attention-backend": ("--attention-backend",),
    "--kv-cache-dtype": ("--kv-cache-dtype",),
    "--device": ("--device",),  # wheel:sglang-0.5.9:sglang/srt/server_args.py:3296 (cuda, xpu, hpu, npu, cpu)
}
BOOL_FLAGS = ("--enable-pdmux",)

#: vLLM flags the preflight interprets: canonical name -> option strings (wheel:vllm-0.20.0:vllm/engine/arg_utils.py:
#: ``--quantization``/``-q`` line 768, ``--tensor-parallel-size``/``-tp`` line 925, ``--moe-backend`` line 1368;
#: ``--linear-backend`` from 0.24.0, arg_utils.py:1485). The model is ``--model`` or ``vllm serve``'s positional.
VLLM_FLAGS: dict[str, tuple[str, ...]] = {
    "--model-path": ("--model",),
    "--quantization": ("--quantization", "-q"),
    "--tp": ("--tensor-parallel-size", "-tp"),
    "--kv-cache-dtype": ("--kv-cache-dtype",),
    "--moe-backend": ("--moe-backend",),
    "--linear-backend": ("--linear-backend",),
    "--speculative-config": ("--speculative-config",),
    "--device": ("--device",),  # DeviceConfig.device through get_kwargs: wheel:vllm-0.9.2:vllm/engine/arg_utils.py:397,813
}
#: vLLM lower-cases these values and turns '-' into '_' (arg_utils.py:1367 in 0.20.0; KernelConfig validators).
VLLM_NORMALIZED_VALUES = ("--moe-backend", "--linear-backend")


def split_env_prefix(toks: list[str]) -> tuple[dict[str, str], list[str]]:
    """``["VLLM_X=1", "env", "Y=2", "vllm", "serve", ...]`` -> ``({"VLLM_X": "1", "Y": "2"}, ["vllm", "serve", ...])``.

    Leading ``NAME=VALUE`` tokens (a POSIX shell's assignments, optionally after ``env``) are the launch's
    environment; the program starts at the first other token.
    """
    import re

    env: dict[str, str] = {}
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "env" and not env and i == 0:
            i += 1
            continue
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", t, re.S)
        if not m:
            break
        env[m.group(1)] = m.group(2)
        i += 1
    return env, toks[i:]


def engine_of(toks: list[str]) -> str:
    """``"sglang"``, ``"vllm"`` or the program's name, from the tokens after any environment prefix."""
    if not toks:
        return ""
    joined = " ".join(toks[:4])
    first = Path(toks[0]).name
    if "sglang.launch_server" in joined or (first == "sglang" and len(toks) > 1 and toks[1] in ("serve", "launch_server")):
        return "sglang"
    if first == "vllm" or "vllm.entrypoints" in joined:
        return "vllm"
    return first


@dataclass(frozen=True)
class Launch:
    """A parsed launch command.

    Attributes:
        argv: the tokens as given.
        is_sglang: whether it starts SGLang (``python -m sglang.launch_server``, ``sglang serve``).
        engine: ``"sglang"``, ``"vllm"`` or the first token.
        flags: canonical flag (:data:`FLAGS`) -> value as typed.
        bools: boolean flags present (``--enable-pdmux``).
        options: every ``--name`` token as typed (``--name=value`` cut at ``=``), in order, interpreted
            or not: the preflight checks them against the SGLang option table when it has one. vLLM options are
            listed with ``_`` turned into ``-`` (as vLLM reads them).
        env: ``NAME=VALUE`` assignments written before the program (``VLLM_USE_FLASHINFER_MOE_FP4=1 vllm serve ...``).
    """

    argv: tuple[str, ...]
    is_sglang: bool
    engine: str
    flags: dict[str, str] = field(default_factory=dict)
    bools: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    @property
    def is_vllm(self) -> bool:
        """Whether it starts vLLM (``vllm serve``, ``python -m vllm.entrypoints...``)."""
        return self.engine == "vllm"

    def get(self, flag: str) -> str | None:
        """Value of a canonical flag, or ``None``."""
        return self.flags.get(flag)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"argv": list(self.argv), "is_sglang": self.is_sglang, "engine": self.engine,
                "flags": dict(sorted(self.flags.items())), "bools": list(self.bools), "options": list(self.options),
                "env": dict(sorted(self.env.items()))}


def parse_launch(argv: list[str] | tuple[str, ...]) -> Launch:
    """Parse the tokens after ``--``. A single token with spaces is split like a shell would.

    Raises:
        InputError: nothing after ``--``, or unbalanced quotes in a single-string command.
    """
    toks = list(argv)
    if len(toks) == 1 and " " in toks[0]:
        try:
            toks = shlex.split(toks[0])
        except ValueError as exc:
            raise InputError("launch command", f"cannot split: {exc}") from None
    if not toks:
        raise InputError("launch command", "nothing after '--' (expected e.g. python -m sglang.launch_server --model-path ...)")
    env, prog = split_env_prefix(toks)
    engine = engine_of(prog)
    vllm = engine == "vllm"
    table = VLLM_FLAGS if vllm else FLAGS
    alias = {a: canon for canon, names in table.items() for a in names}
    flags: dict[str, str] = {}
    bools: list[str] = []
    options: list[str] = []
    i = 0
    if vllm and len(prog) > 2 and Path(prog[0]).name == "vllm" and prog[1] == "serve" and not prog[2].startswith("-"):
        flags["--model-path"] = prog[2]  # vllm serve MODEL: model_tag (wheel:vllm-0.20.0:vllm/entrypoints/cli/serve.py:45-46)
        i = 3
    while i < len(prog):
        t = prog[i]
        name, eq, val = t.partition("=")
        if vllm and name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        if name.startswith("--") and len(name) > 2:
            options.append(name)
        if name in alias:
            value = val if eq else (prog[i + 1] if i + 1 < len(prog) else None)
            if value is not None:
                canon = alias[name]
                flags[canon] = value.lower().replace("-", "_") if vllm and canon in VLLM_NORMALIZED_VALUES else value
                if not eq:
                    i += 1
        elif name in BOOL_FLAGS and not vllm:
            bools.append(name)
        i += 1
    return Launch(tuple(toks), engine == "sglang", engine, flags, tuple(bools), tuple(options), env)


@dataclass(frozen=True)
class CheckpointQuant:
    """What the checkpoint's quantization metadata says.

    Attributes:
        algo: ``"NVFP4"``, ``"MXFP4"``, ``"FP8"``, ... or ``None`` when unquantized/unknown.
        weight_only: ``True`` for W4A16 (activations not quantized), ``False`` for W4A4, ``None`` unknown.
        kv_cache: ``kv_cache_quant_algo`` (``"FP8"``) or ``None``.
        source: the file(s) read.
        problem: why the metadata could not be read, or ``None``.
    """

    algo: str | None = None
    weight_only: bool | None = None
    kv_cache: str | None = None
    source: str = ""
    problem: str | None = None

    @property
    def is_fp4(self) -> bool:
        """NVFP4 or MXFP4 (any activation precision)."""
        return bool(self.algo) and "FP4" in str(self.algo).upper()

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"algo": self.algo, "weight_only": self.weight_only, "kv_cache": self.kv_cache,
                "source": self.source, "problem": self.problem}


def read_checkpoint_quant(folder: Path) -> CheckpointQuant:
    """Read ``hf_quant_config.json`` (ModelOpt) and ``config.json`` ``quantization_config``.

    A file that exists but does not parse is reported in ``problem`` (the launch analysis goes on).
    Sources: ../shared/research/checkpoint_formats.md; nvidia/*-NVFP4 files in shared/realdata.
    """
    algo = kv = None
    weight_only: bool | None = None
    sources = []
    problems = []
    hq = folder / "hf_quant_config.json"
    if hq.is_file():
        try:
            d = read_json_bounded(hq, limit=16 * 1024 * 1024, display="hf_quant_config.json")
            q = d.get("quantization", d) if isinstance(d, dict) else {}
            if isinstance(q, dict):
                algo = q.get("quant_algo") or algo
                kv = q.get("kv_cache_quant_algo") or kv
            sources.append("hf_quant_config.json")
        except InputError as exc:
            problems.append(str(exc))
    cfg = folder / "config.json"
    if cfg.is_file():
        try:
            d = read_json_bounded(cfg, limit=16 * 1024 * 1024, display="config.json")
            qc = d.get("quantization_config") if isinstance(d, dict) else None
            if isinstance(qc, dict):
                sources.append("config.json quantization_config")
                method = str(qc.get("quant_method", "")).lower()
                algo = algo or qc.get("quant_algo") or ("MXFP4" if method == "mxfp4" else None)
                groups = qc.get("config_groups")
                if isinstance(groups, dict):
                    for g in groups.values():
                        if not isinstance(g, dict):
                            continue
                        w, a = g.get("weights") or {}, g.get("input_activations")
                        if isinstance(w, dict) and w.get("num_bits") == 4 and w.get("type") == "float":
                            algo = algo or ("MXFP4" if w.get("group_size") == 32 else "NVFP4")
                            weight_only = not (isinstance(a, dict) and a.get("num_bits") == 4)
                kvs = qc.get("kv_cache_scheme")
                if isinstance(kvs, dict) and kvs.get("num_bits") == 8 and not kv:
                    kv = "FP8"
        except InputError as exc:
            problems.append(str(exc))
    if algo and weight_only is None and str(algo).upper() == "NVFP4":
        weight_only = False  # ModelOpt NVFP4 is W4A4 unless the metadata says otherwise
    if algo and "W4A16" in str(algo).upper():
        weight_only = True
    if not sources and not problems:
        problems.append("no hf_quant_config.json and no quantization_config in config.json")
    return CheckpointQuant(str(algo) if algo else None, weight_only, str(kv) if kv else None,
                           " + ".join(sources), "; ".join(problems) or None)
