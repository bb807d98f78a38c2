"""The code-analysis layer shared by the engine analyzers: the content-addressed scan cache
(:mod:`~mtp_audit.engines.code.cache`). Engine knowledge (file names, class names, what a finding
means) stays in each engine's package.
"""
