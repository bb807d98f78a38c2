"""The SGLang names the extraction passes look up (regular-expression sources), in one place so that the byte
pre-filter (:data:`mtp_audit.engines.sglang.scan.PASSES`) and the passes that query the parsed files
(:mod:`~mtp_audit.engines.sglang.flow`, :mod:`~mtp_audit.engines.sglang.startup_facts`) use the same words.
"""

from __future__ import annotations

import re

#: Version of the per-file scan results (:mod:`mtp_audit.engines.sglang.scan`) and of the cache folder that holds
#: them: bump it when the extraction changes, so cached results are recomputed. Kept here, with no parser imported,
#: so that a warm audit finds its cache entry without loading the passes.
SCAN_VERSION = 27

#: Server-args hook files (SGLang <= 0.5.18: ``srt/server_args.py``; 0.5.20 on: ``srt/arg_groups/``).
HOOK_PATHS = re.compile(r"(^|/)srt/(server_args\.py|arg_groups/[^/]+\.py)$")
#: Where the server arguments are declared (the linker's CLI table reads these files' declarations first).
CLI_PATHS = re.compile(r"(^|/)srt/(server_args\.py|arg_groups/)")
#: ServerArgs fields whose value flow is followed (speculative decoding, quantization, FP4 / MoE backends).
TRACKED_SOURCE = r"speculative_\w+|quantization|\w*fp4\w*|moe_runner_backend|moe_a2a_backend"
#: Fields whose accepted values an ``assert`` at start-up may restrict (attention, MoE, FP4 backends).
ASSERTED_SOURCE = r"attention_backend|moe_runner_backend|moe_a2a_backend|fp4_gemm_backend|speculative_algorithm"
