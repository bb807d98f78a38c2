"""Fixture building, not auditing: write real safetensors shards and an index from a compact spec
(:mod:`mtp_audit.synth.shards`). Used by tests, rule examples and benchmarks; the audit never imports it."""
