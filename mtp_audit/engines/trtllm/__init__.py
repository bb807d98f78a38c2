"""TensorRT-LLM as a launch engine: ``trtllm-serve MODEL --config|--extra_llm_api_options YAML`` with the YAML's
``speculative_config`` (``decoding_type: MTP``) held against the checkpoint and the machine, from a sourced knowledge
table (:mod:`mtp_audit.engines.trtllm.knowledge`; the package on PyPI is a stub, so no release is read from source).

Rules MTP700-MTP749 (:mod:`mtp_audit.engines.trtllm.rules`); the engine itself is
:class:`mtp_audit.engines.trtllm.launch.TrtllmEngine`.
"""
