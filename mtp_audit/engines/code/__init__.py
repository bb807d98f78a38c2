"""The code-analysis layer shared by the engine analyzers: the content-addressed scan cache
(:mod:`~mtp_audit.engines.code.cache`) and the ``ast`` helpers for audited source (:mod:`~mtp_audit.engines.code.pyast`:
parse without raising, dotted names, log calls, module-level string sets and ``Literal`` resolution). Engine knowledge (file names, class names, what a finding
means) stays in each engine's package.
"""
