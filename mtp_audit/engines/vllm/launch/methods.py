"""Speculative methods by what they draft with (shared by the launch evaluation, the outcome and the replays)."""

from __future__ import annotations

#: methods whose proposer loads no draft model (no ``model`` to build a draft ``ModelConfig`` from): vLLM 0.34.0
#: ``vllm/config/speculative.py`` sets ``draft_model_config`` to the target's for ngram / suffix ("Unused fields").
NO_DRAFT = ("ngram", "[ngram]", "ngram_gpu", "suffix", "extract_hidden_states", "custom_class")
