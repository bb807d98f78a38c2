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


class Unavailable(Exception):
    """A source the audit needs could not be reached and nothing is cached (the package index for an engine
    release named by version): "could not tell", not the user's mistake.

    The CLI prints ``INCONCLUSIVE: could not tell: <problem> (exit 3)`` on stderr and exits with 3.

    Attributes:
        problem: what could not be reached and what to do instead, one line.
    """

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
