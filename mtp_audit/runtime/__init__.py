"""Runtime evidence: read an engine's own log (and Prometheus metrics) and say whether MTP ran,
what was accepted, and whether that matches the launch audit's prediction.

Entry point: :func:`mtp_audit.runtime.analyze.analyze_log`.
"""
