"""The ``mtp-audit`` command line: the click group (:mod:`mtp_audit.cli.main`), shared plumbing
(:mod:`mtp_audit.cli.kit`: output options, atomic writes, exit codes) and one module per command.

Command modules import only click and :mod:`mtp_audit.cli.kit` at start-up; each analyzer is imported
when its command runs, so ``mtp-audit --help`` stays fast.
"""
