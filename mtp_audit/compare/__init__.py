"""``mtp-audit compare BASE DERIVED``: what an export (quantized, pruned, merged) did to the MTP heads of
its base checkpoint. Public API: :func:`compare_checkpoints` (:mod:`mtp_audit.compare.analyze`)."""


def __getattr__(name: str):
    if name in ("compare_checkpoints", "compare_reports", "compare_facts"):
        from mtp_audit.compare import analyze

        return getattr(analyze, name)
    raise AttributeError(name)
