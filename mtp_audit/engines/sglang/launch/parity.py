"""SGLang's answers to the parity matrix's checks (:mod:`mtp_audit.engines.parity`): the rules that implement each,
per platform where they differ."""

from __future__ import annotations

from collections.abc import Mapping

from mtp_audit.engines.base import Coverage

PLATFORMS = ("cuda", "rocm", "cann", "xpu", "hpu", "cpu")
PLATFORMS_SOURCE = ("SGLang's CUDA, ROCm, Ascend NPU, Intel XPU, Gaudi HPU and CPU builds (--device cuda|npu|xpu|hpu|cpu); "
                    "the preflight's AMD, Ascend, Intel and Gaudi tables")
PARITY: dict[str, Coverage | Mapping[str, Coverage]] = {
    "what runs": Coverage(rules=("MTP302", "MTP303", "MTP304", "MTP305")),
    "speculation shape": Coverage(open="the effective speculative_num_steps, eagle_topk and num_draft_tokens after "
                                       "SGLang's resolution are stated (facts.launch.summary.speculative_parameters) "
                                       "but no rule holds them against the checkpoint's MTP layers"),
    "draft memory": Coverage(rules=("MTP307",)),
    "release pins": {"cuda": Coverage(rules=("MTP209",)),
                     "*": Coverage(open="the torch pin (MTP209) is checked by the NVIDIA preflight only")},
    "fp4 verdict": {"cuda": Coverage(rules=("MTP200", "MTP201", "MTP228")), "rocm": Coverage(rules=("MTP242", "MTP243")),
                    "cann": Coverage(rules=("MTP233", "MTP245", "MTP248")), "xpu": Coverage(rules=("MTP236",)),
                    "hpu": Coverage(rules=("MTP236",)), "cpu": Coverage(rules=("MTP241",))},
    "parallelism": Coverage(rules=("MTP311", "MTP312")),
}
