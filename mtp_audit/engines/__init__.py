"""Engine source analyzers: what SGLang (:mod:`~mtp_audit.engines.sglang`) and vLLM
(:mod:`~mtp_audit.engines.vllm`) do with the flags they are given, read from their Python source with
``ast``, never imported or run. :mod:`~mtp_audit.engines.code` is the code-analysis layer they
share.
"""
