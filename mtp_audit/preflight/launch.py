"""The intended launch as the preflight reads it: the engine the command starts, the options that decide its FP4
kernels, the launch's environment, and the checkpoint's quantization.

Which engine a command starts is each registered engine's own answer (its ``entry``); which options matter and how
they are spelled is the engine's :class:`~mtp_audit.preflight.kernels.LaunchSyntax` (its ``kernels`` hook: SGLang's
server_args names, vLLM's ``FlexibleArgumentParser`` that reads ``--tensor_parallel_size`` as
``--tensor-parallel-size``). ``KEY=VALUE`` tokens before the program are environment variables of the launch
(:attr:`Launch.env`). The checkpoint is read from the model path when it is a local folder:
``hf_quant_config.json`` (ModelOpt) and ``config.json`` ``quantization_config``, both with ``read_json_bounded``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtp_audit.errors import InputError
from mtp_audit.preflight.kernels import LaunchSyntax
from mtp_audit.sources.bounded import read_json_bounded


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


def engine_syntax(toks: list[str]) -> tuple[str, LaunchSyntax | None]:
    """``(engine id, how the preflight reads its command)`` of the engine whose server ``toks`` starts (each
    registered engine's own :meth:`~mtp_audit.engines.base.Engine.entry` decides); the syntax is ``None`` when that
    engine has no kernel checks for the preflight (its ``kernels`` hook answers ``None``), and for a command no engine
    starts (then the engine is the program's name)."""
    from mtp_audit.engines.registry import engines

    for engine in engines():
        if engine.entry(toks) is not None:
            kernels = engine.kernels()
            return engine.name, kernels.syntax if kernels is not None else None
    _env, prog = split_env_prefix(toks)
    return (Path(prog[0]).name if prog else ""), None


@dataclass(frozen=True)
class Launch:
    """A parsed launch command.

    Attributes:
        argv: the tokens as given.
        engine: the id of the engine it starts (:func:`engine_syntax`), or the program's name.
        flags: canonical flag (the engine's :class:`~mtp_audit.preflight.kernels.LaunchSyntax`) -> value as typed.
        bools: boolean flags present (``--enable-pdmux``).
        options: every ``--name`` token as typed (``--name=value`` cut at ``=``), in order, interpreted
            or not: the preflight checks them against the SGLang option table when it has one. vLLM options are
            listed with ``_`` turned into ``-`` (as vLLM reads them).
        env: ``NAME=VALUE`` assignments written before the program (``VLLM_USE_FLASHINFER_MOE_FP4=1 vllm serve ...``).
        model_label: how the command names the model (``"--model-path"``, or ``"model"`` for a positional one).
        checked: whether the engine it starts has FP4 kernel checks the preflight applies (SGLang, vLLM): the
            preflight reads only those commands (:func:`engine_syntax`).
    """

    argv: tuple[str, ...]
    engine: str
    flags: dict[str, str] = field(default_factory=dict)
    bools: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    model_label: str = "model"
    checked: bool = False

    def get(self, flag: str) -> str | None:
        """Value of a canonical flag, or ``None``."""
        return self.flags.get(flag)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        # ``is_sglang``: kept for readers of reports written before ``engine`` (schema 1)
        return {"argv": list(self.argv), "is_sglang": self.engine == "sglang", "engine": self.engine,
                "flags": dict(sorted(self.flags.items())), "bools": list(self.bools), "options": list(self.options),
                "env": dict(sorted(self.env.items()))}


def parse_launch(argv: list[str] | tuple[str, ...]) -> Launch:
    """Parse the tokens after ``--`` with the syntax of the engine the command starts (:func:`engine_syntax`). A
    single token with spaces is split like a shell would.

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
    engine, syntax = engine_syntax(toks)
    flags, bools, options = _read_options(prog, syntax or LaunchSyntax())
    return Launch(tuple(toks), engine, flags, tuple(bools), tuple(options), env, (syntax or LaunchSyntax()).model_label,
                  syntax is not None)


def _read_options(prog: list[str], syntax: LaunchSyntax) -> tuple[dict[str, str], list[str], list[str]]:
    """``(canonical flag -> value, boolean flags present, every --option as typed)`` of the program's tokens."""
    alias = {a: canon for canon, names in syntax.flags.items() for a in names}
    flags: dict[str, str] = {}
    bools: list[str] = []
    options: list[str] = []
    i = 0
    lead = len(syntax.positional_model)
    if lead and len(prog) > lead and tuple(Path(t).name if k == 0 else t for k, t in enumerate(prog[:lead])) == \
            syntax.positional_model and not prog[lead].startswith("-"):
        flags["--model-path"] = prog[lead]
        i = lead + 1
    while i < len(prog):
        name, eq, val = prog[i].partition("=")
        if syntax.underscores and name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        if name.startswith("--") and len(name) > 2:
            options.append(name)
        if name in alias:
            value = val if eq else (prog[i + 1] if i + 1 < len(prog) else None)
            if value is not None:
                canon = alias[name]
                flags[canon] = value.lower().replace("-", "_") if canon in syntax.lowered else value
                if not eq:
                    i += 1
        elif name in syntax.bool_flags:
            bools.append(name)
        i += 1
    return flags, bools, options


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
