"""TensorRT-LLM's answers to the parity matrix's checks (:mod:`mtp_audit.engines.parity`)."""

from __future__ import annotations

from collections.abc import Mapping

from mtp_audit.engines.base import Coverage

PLATFORMS = ("cuda",)
PLATFORMS_SOURCE = "NVIDIA GPUs only: MTP713"
PARITY: dict[str, Coverage | Mapping[str, Coverage]] = {
    "what runs": Coverage(rules=("MTP700", "MTP703", "MTP707", "MTP715")),
    "speculation shape": Coverage(rules=("MTP701", "MTP704", "MTP716")),
    "draft memory": Coverage(rules=("MTP719",)),
    "release pins": Coverage(open="no release is read (the PyPI package is a stub): its torch/CUDA pins are not checked"),
    "fp4 verdict": Coverage(rules=("MTP718",)),
    "parallelism": Coverage(rules=("MTP714",)),
}
