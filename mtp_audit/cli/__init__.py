"""The ``mtp-audit`` command line: the click group (:mod:`mtp_audit.cli.main`), the shared plumbing, one module a
job (:mod:`~mtp_audit.cli.options`: the output options and display filter; :mod:`~mtp_audit.cli.outputs`: pairing
``-f`` with ``-o``, staged atomic writes; :mod:`~mtp_audit.cli.protect`: the guard that never overwrites an input;
:mod:`~mtp_audit.cli.emit`: rendering, settings and the exit code; :mod:`~mtp_audit.cli.targets`: engine TARGET
arguments), and one module per command.

Command modules import only click and that plumbing at start-up; each analyzer is imported when its command runs,
so ``mtp-audit --help`` stays fast.
"""
