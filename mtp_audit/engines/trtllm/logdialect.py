"""TensorRT-LLM's log dialect: the lines ``mtp-audit log`` reads and the ``trtllm-serve`` command read by TensorRT-LLM's
command parser (:mod:`mtp_audit.engines.trtllm.command`).

TensorRT-LLM is not installable from the package index (the ``tensorrt-llm`` entry is a stub sdist), so its lines are
a sourced table: the ``[TRT-LLM]`` / ``[TensorRT-LLM]`` logger prefixes (``tensorrt_llm/logger.py``), its C++
exception shapes (``[TensorRT-LLM][ERROR] Assertion failed: %s (%s:%d)`` from ``cpp/include/tensorrt_llm/common/assert.h``
``TLLM_CHECK``, thrown as ``tensorrt_llm::common::TllmException`` and printed by ``std::terminate`` as
``terminate called after throwing an instance of '...'`` / ``what():``), and ``MTPDecodingConfig`` (1.4.0rc4 LLM API
reference). The speculative method of a ``trtllm-serve`` launch sits in its YAML (``--config`` /
``--extra_llm_api_options``), which a log does not hold: the command gives the file's name only.
"""

from __future__ import annotations

from mtp_audit.engines.base import LogCommand, LogDialect, LogLineFormat
from mtp_audit.engines.trtllm import logread

LINES = (
    LogLineFormat("prefix", "[TRT-LLM] [%s] %s", "tensorrt_llm/logger.py (1.4.0rc4)", "RT-LLM"),
    LogLineFormat("fatal", "[TensorRT-LLM][ERROR] Assertion failed: %s", "cpp/include/tensorrt_llm/common/assert.h (1.4.0rc4)",
                  "ssert"),
    LogLineFormat("config", "MTPDecodingConfig(", "LLM API reference, MTPDecodingConfig (1.4.0rc4)", "MTP"),
)

#: Substrings only TensorRT-LLM prints.
WORDS = ("[TRT-LLM]", "[TensorRT-LLM]", "tensorrt_llm/", "TensorRT-LLM version", "trtllm-serve", "tensorrt_llm::")


def log_command(toks: list[str]) -> LogCommand | None:
    """The ``trtllm-serve`` command that ``toks`` start (its model and YAML file), or None."""
    from mtp_audit.engines.trtllm.command import parse_trtllm_command, trtllm_entry

    if trtllm_entry(toks) is None:
        return None
    cmd = parse_trtllm_command(toks)
    return LogCommand(logread.ENGINE, cmd.entry, model=cmd.model, config_file=cmd.yaml_path,
                      notes=tuple(f"option without its value: {o}" for o in cmd.missing_value))


DIALECT = LogDialect(
    logread.ENGINE, "TensorRT-LLM", WORDS, (), LINES, log_command, ("trtllm-serve",),
    read=logread.read, recognise=logread.recognise,
    deciding="TensorRT-LLM's per-iteration statistics (not parsed by this release, nor are its /metrics counters)",
    mtp_methods=("mtp",),
    known_zero=(("use_kv_cache_manager_v2", lambda v: str(v).lower() == "false",
                 "DSA model with use_kv_cache_manager_v2: false accepts no MTP draft (NVIDIA/TensorRT-LLM#18662)"),))
