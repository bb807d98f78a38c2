"""``pip list`` and ``pip freeze`` output pasted as an environment dump: which of the preflight's distributions
(:data:`mtp_audit.preflight.facts.PACKAGES`) are installed, and which are surely not.

Both commands print every installed distribution, one a line, in name order: ``pip list`` after its ``Package  Version``
header and dashes, sorted by canonical name (pip 23.2 ``pip/_internal/commands/list.py:271-274``); ``pip freeze``
``name==version`` (or ``name @ url``) lines sorted by lower-case name (``pip/_internal/operations/freeze.py:142``). A
listed name is installed (exact). A name not listed is not installed (exact) only where the listing is seen whole
around it: the lines are in name order and the name falls between the first line (or the ``pip list`` header) and the
last one. A paste cut after its last line says nothing of the names after it; one cut before its first line, nothing
of the names before; a listing not in name order (edited, or several pasted together), nothing of absent names. A
listing that shows only some packages on purpose (``vllm collect-env``'s ``[pip3]`` lines, filtered by name) is not
read here: :func:`mtp_audit.preflight.envdump._packages_from_lines` records only what it lists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from mtp_audit.preflight.facts import NOT_INSTALLED, PACKAGES, Fact, MachineFacts

FORMAT = "pip-list"

#: ``pip freeze`` / ``pip list --format=freeze`` line: ``name==version``, ``name===version``, ``name @ url``
_FREEZE = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,200}[A-Za-z0-9])?(?:\[[^\]\n]{0,200}\])?[ \t]*(?:===?[ \t]*\S+|[ \t]+@[ \t]+\S+)[ \t]*"
_FREEZE_LINE = re.compile(rf"^({_FREEZE})$")
_HEADER = r"^Package[ \t]+Version\b[^\n]*\n-{3,}[ \t]+-{3,}[ -]*$"
#: three ``pip freeze`` lines in a row, or the ``pip list`` header (how :func:`mtp_audit.preflight.envdump.detect_formats` finds one)
SIGNATURE = re.compile(rf"{_HEADER}|(?:^{_FREEZE}\n){{3}}", re.M)
_HEADER_RE = re.compile(_HEADER, re.M)
#: a ``pip list`` row: name, version (a version pip prints starts with a digit), optional location columns
_ROW = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]{0,200}[A-Za-z0-9])?)[ \t]+(\d\S*)(?:[ \t]+\S.*)?$")
_NAME_VERSION = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]{0,200}[A-Za-z0-9])?)(?:\[[^\]]*\])?[ \t]*(?:===?[ \t]*(\S+)|[ \t]+@[ \t]+(\S+))")


@dataclass(frozen=True)
class Listing:
    """One run of listing lines.

    Attributes:
        rows: ``(canonical name, lower-case name as printed, version, 1-based line)`` in the order printed.
        header: whether it is a ``pip list`` table (from its header: nothing before its first row was cut; sorted by
            canonical name), else ``pip freeze`` lines (sorted by lower-case name).
    """

    rows: tuple[tuple[str, str, str, int], ...]
    header: bool

    def _key(self, row: tuple[str, str, str, int]) -> str:
        return row[0] if self.header else row[1]

    @property
    def ordered(self) -> bool:
        """Whether the rows are in the order pip prints them (canonical names for ``pip list``, lower-case names for
        ``pip freeze``), with no repeats."""
        keys = [self._key(r) for r in self.rows]
        return all(a < b for a, b in zip(keys, keys[1:]))

    def covers(self, name: str) -> bool:
        """Whether the listing is seen whole where canonical ``name`` would be printed, whatever separators (``-``,
        ``.``, ``_``) the installed distribution spells its name with (``pip freeze`` sorts the spelling)."""
        if not self.rows or not self.ordered:
            return False
        first, last = self._key(self.rows[0]), self._key(self.rows[-1])
        if self.header:
            return name < last
        low, high = name, name.replace("-", "_")  # every spelling sorts between these two
        return first < low and high < last

    def span(self) -> str:
        """``"lines 3-240, 'accelerate' .. 'zipp'"``."""
        return f"lines {self.rows[0][3]}-{self.rows[-1][3]}, {self.rows[0][1]!r} .. {self.rows[-1][1]!r}"


def listings(text: str) -> list[Listing]:
    """Every ``pip list`` table (from its header to the first line that is not a row) and every run of ``pip freeze``
    lines (comment and ``-e`` lines inside it kept in the run) in ``text``."""
    out: list[Listing] = []
    lines = text.split("\n")
    header_at = {text.count("\n", 0, m.start()) for m in _HEADER_RE.finditer(text)}
    i = 0
    while i < len(lines):
        if i in header_at:
            rows, i = _run(lines, i + 2, _ROW)
            out.append(Listing(tuple(rows), True))
        elif _FREEZE_LINE.match(lines[i]):
            rows, i = _run(lines, i, _NAME_VERSION, freeze=True)
            if len(rows) >= 3:
                out.append(Listing(tuple(rows), False))
        else:
            i += 1
    return out


def _run(lines: list[str], i: int, row: re.Pattern[str], freeze: bool = False) -> tuple[list[tuple[str, str, str, int]], int]:
    """The rows from line index ``i`` on (``row`` reads one), and the index of the first line after them."""
    rows: list[tuple[str, str, str, int]] = []
    while i < len(lines):
        line = lines[i].rstrip()
        m = row.match(line)
        if freeze and m is None and (line.startswith(("-e ", "# ")) and rows):
            i += 1
            continue
        if m is None:
            break
        rows.append((canonicalize_name(m.group(1)), m.group(1).lower(), m.group(2) or _wheel_version(m.group(3) or ""), i + 1))
        i += 1
    return rows, i


#: no version has such a number (and ``int()`` refuses more than 4300 digits): such a value is not read as a version
_HUGE_NUMBER = re.compile(r"\d{33}")
_WHEEL = re.compile(r"/[A-Za-z0-9_.]{1,200}-([0-9][A-Za-z0-9_.!+%]{0,100})-[^/]*\.whl(?:#|$)")


def _wheel_version(url: str) -> str:
    """The version in the wheel file name of a ``name @ url`` line (``torch @ file:///w/torch-2.13.0%2Bcpu-cp311-...whl``
    -> ``2.13.0+cpu``), ``""`` when the URL names no wheel (a folder, a VCS URL: installed, version not shown)."""
    from urllib.parse import unquote

    m = _WHEEL.search(url)
    return unquote(m.group(1)) if m else ""


def parse_pip_list(text: str) -> MachineFacts:
    """The preflight's distributions as a pip listing shows them: the version of each one listed; "not installed" for
    one a whole, ordered part of the listing leaves out (:meth:`Listing.covers`); nothing for the others (unknown).
    The torch version is the listed torch distribution's (its CUDA build is not shown unless its ``+cuXXX`` tag is)."""
    found = listings(text)
    packages: dict[str, Fact] = {}
    for dist in PACKAGES:
        key = canonicalize_name(dist)
        hit = next(((v, ln) for lst in found for n, _low, v, ln in lst.rows if n == key), None)
        if hit is not None and _HUGE_NUMBER.search(hit[0]):
            packages[dist] = Fact.absent("the listed version is not a version (it holds a number of more than 32 digits)",
                                         f"{FORMAT} line {hit[1]}")
            continue
        if hit is not None and hit[0]:
            packages[dist] = Fact.of(hit[0], f"{FORMAT} line {hit[1]}")
            continue
        if hit is not None:
            # installed, but the line shows no version: its presence is not told apart from unknown (never "not installed")
            packages[dist] = Fact.absent("installed from a URL that names no version", f"{FORMAT} line {hit[1]}")
            continue
        whole = next((lst for lst in found if lst.covers(key)), None)
        if whole is not None:
            packages[dist] = Fact.absent(f"{NOT_INSTALLED} (the pip listing, {whole.span()}, is in name order and does not "
                                         "list it)", f"{FORMAT} line {whole.rows[0][3]}")
    return MachineFacts(origin=f"env-dump:{FORMAT}", packages=packages,
                        torch_version=packages.get("torch") or Fact.absent("the part of the pip listing shown does not list torch"),
                        gpu_list=Fact.absent("a pip listing shows no GPU"))
