"""The intended launch: an SGLang command line, the checkpoint's quantization, and what SGLang will
make of the flags (choices, defaults, ``auto`` resolutions).

Flag semantics come from the sglang analyzer (``mtp_audit.engines.sglang.audit_sglang``) when that package is
present and an SGLang tree is at hand: its public report's ``facts["sglang"]`` gives ``version``,
``cli_arguments`` (choices/default/location) and ``auto_resolutions``. Otherwise they come from the
capability matrix's per-version rows (``mtp_audit/data/matrix.json``, ``blackwell_fp4.md`` §3).
The checkpoint is read from ``--model-path`` when it is a local folder: ``hf_quant_config.json``
(ModelOpt) and ``config.json`` ``quantization_config``, both with ``read_json_bounded``.
"""

from __future__ import annotations

import importlib
import importlib.util
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
}
BOOL_FLAGS = ("--enable-pdmux",)


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
            or not: the preflight checks them against the SGLang option table when it has one.
    """

    argv: tuple[str, ...]
    is_sglang: bool
    engine: str
    flags: dict[str, str] = field(default_factory=dict)
    bools: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    def get(self, flag: str) -> str | None:
        """Value of a canonical flag, or ``None``."""
        return self.flags.get(flag)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"argv": list(self.argv), "is_sglang": self.is_sglang, "engine": self.engine,
                "flags": dict(sorted(self.flags.items())), "bools": list(self.bools), "options": list(self.options)}


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
    joined = " ".join(toks[:4])
    if "sglang.launch_server" in joined or (Path(toks[0]).name == "sglang" and len(toks) > 1 and toks[1] in ("serve", "launch_server")):
        engine = "sglang"
    elif "vllm" in Path(toks[0]).name or "vllm.entrypoints" in joined:
        engine = "vllm"
    else:
        engine = Path(toks[0]).name
    alias = {a: canon for canon, names in FLAGS.items() for a in names}
    flags: dict[str, str] = {}
    bools: list[str] = []
    options: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        name, eq, val = t.partition("=")
        if name.startswith("--") and len(name) > 2:
            options.append(name)
        if name in alias:
            if eq:
                flags[alias[name]] = val
            elif i + 1 < len(toks):
                flags[alias[name]] = toks[i + 1]
                i += 1
        elif name in BOOL_FLAGS:
            bools.append(name)
        i += 1
    return Launch(tuple(toks), engine == "sglang", engine, flags, tuple(bools), tuple(options))


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


def sglang_facts_from_analyzer(target: Path) -> dict[str, Any] | None:
    """Call the sglang analyzer's public function on ``target`` and return ``facts["sglang"]``.

    Returns ``None`` when ``mtp_audit.engines.sglang`` is not installed, or when it cannot analyze the target
    (its report is then ignored and the matrix is used). Never imports it at module level.
    """
    try:
        if importlib.util.find_spec("mtp_audit.engines.sglang") is None:
            return None
    except (ImportError, ValueError):
        return None
    try:
        mod = importlib.import_module("mtp_audit.engines.sglang")
        report = mod.audit_sglang(target)
    except Exception:  # noqa: BLE001 - another analyzer's failure must not break the preflight
        return None
    facts = getattr(report, "facts", {}) or {}
    sg = facts.get("sglang")
    return dict(sg) if isinstance(sg, dict) else None


def installed_sglang_root() -> Path | None:
    """Folder of the installed ``sglang`` package (located, not imported), or ``None``."""
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])
