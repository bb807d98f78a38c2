"""llama.cpp's answers to the parity matrix's checks (:mod:`mtp_audit.engines.parity`)."""

from __future__ import annotations

from collections.abc import Mapping

from mtp_audit.engines.base import Coverage

PLATFORMS = ("cuda", "rocm", "cann", "cpu")
PLATFORMS_SOURCE = ("ggml back-ends ggml-cuda, ggml-hip, ggml-cann, ggml-cpu (llama-cpp-python 0.3.36 sdist "
                    "vendor/llama.cpp/ggml/src)")
PARITY: dict[str, Coverage | Mapping[str, Coverage]] = {
    "what runs": Coverage(rules=("MTP600", "MTP601", "MTP602", "MTP603", "MTP604", "MTP608")),
    "speculation shape": Coverage(rules=("MTP606", "MTP607")),
    "draft memory": Coverage(rules=("MTP612",)),
    "release pins": Coverage(na="a llama.cpp build is self-contained (ggml compiled in, no torch to pin)"),
    "fp4 verdict": {"cuda": Coverage(rules=("MTP611",)),
                    "*": Coverage(na="llama.cpp's native FP4 path is NVIDIA-only (blackwell_mma_available); other "
                                     "back-ends dequantize MXFP4/NVFP4 with no hardware requirement")},
    "parallelism": Coverage(rules=("MTP605", "MTP610")),
}
