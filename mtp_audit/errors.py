"""Exceptions that the CLI turns into one-line messages and exit code 2."""

from __future__ import annotations


class InputError(Exception):
    """The user's input cannot be audited at all: a path that does not exist, a file that is not
    JSON, a folder that is neither a checkpoint nor an SGLang tree.

    The CLI prints ``mtp-audit: error: <where>: <problem>`` on one line and exits with 2.
    A defect *of the audited artifact* that still allows an answer is a finding, not an InputError.

    Attributes:
        where: the file, folder or argument concerned, as the user named it.
        problem: what is wrong, one line, no trailing period.
    """

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem
