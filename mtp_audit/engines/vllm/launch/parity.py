"""vLLM's answers to the parity matrix's checks (:mod:`mtp_audit.engines.parity`): the rules that implement each,
per platform where they differ."""

from __future__ import annotations

from collections.abc import Mapping

from mtp_audit.engines.base import Coverage

PLATFORMS = ("cuda", "rocm", "cann", "xpu", "hpu", "cpu")
PLATFORMS_SOURCE = ("vllm/platforms (cuda, rocm, xpu, cpu); Ascend through the vllm-ascend plugin, Gaudi through the "
                    "vllm-gaudi plugin")
PARITY: dict[str, Coverage | Mapping[str, Coverage]] = {
    "what runs": Coverage(rules=("MTP320", "MTP321", "MTP322", "MTP324", "MTP325")),
    "speculation shape": Coverage(rules=("MTP323",)),
    "draft memory": Coverage(rules=("MTP338",)),
    "release pins": Coverage(rules=("MTP339",)),
    "fp4 verdict": {"cuda": Coverage(rules=("MTP228", "MTP231")), "rocm": Coverage(rules=("MTP242", "MTP243", "MTP244")),
                    "cann": Coverage(rules=("MTP233", "MTP245")), "xpu": Coverage(rules=("MTP236", "MTP237")),
                    "hpu": Coverage(rules=("MTP236", "MTP237")), "cpu": Coverage(rules=("MTP241",))},
    "parallelism": Coverage(rules=("MTP328", "MTP337")),
}
