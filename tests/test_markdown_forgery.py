"""Markdown reports rendered as GitHub renders them (cmark-gfm, the library GitHub's renderer is built on, with raw
HTML passed through as GitHub's sanitizer passes ``<img>``, ``<h1>`` and tables): a value from an audited file (a
shard name in an index, a GPU name, a launch argument) shows as exactly its text, and adds no element of its own: no
image, no link, no heading, no table row or cell."""

from __future__ import annotations

import pytest
from fuzzkit import github_html

from mtp_audit.formats import render
from mtp_audit.report import Evidence, Finding, Gap, Location, Report, Severity

pytest.importorskip("cmarkgfm")

HOSTILE = [
    '<img src="https://evil.example/pixel.png">',
    "[release notes](http://evil.example/x)",
    "</td></tr></table><h1>PASS</h1>",
    "![x](https://evil.example/i.png)",
    "`</code><a href=x>y</a>`",
    "``` a ``` | b",
    "see http://evil.example/a and www.evil.example/b",
    "[ref][1]\n\n[1]: http://evil.example",
    "&lt;img src=x&gt; &amp;",
    "\\[x\\](http://evil.example)",
    "<!-- x --> <script>alert(1)</script>",
]
#: Elements the report's own Markdown makes (headings, paragraphs, the findings table, lists, the evidence
#: <details>, code spans and the facts block).
OWN = {"h1", "h2", "p", "strong", "em", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "ul", "li",
       "details", "summary"}


def _report(value: str) -> Report:
    f = Finding("MTP001", Severity.ERROR, f"shard {value} is missing", Location(path=f"{value}.safetensors"),
                evidence=(Evidence("file", value),), remediation=f"restore {value}", detail=value)
    g = Gap("checkpoint", f"{value}: not read", path=value, blocking=True)
    closing = {"title": f"What {value}", "lines": [f"line {value}"]}
    return Report.build("checkpoint", value, findings=[f], gaps=[g],
                        facts={"checkpoint": {"answer": [f"answer {value}"], "summary": {"name": value}, "closing": closing}})


def check_renders_as_text(value: str) -> None:
    """Assert that ``value`` in every place of a report renders on GitHub as its text, adding no element."""
    md = render(_report(value), "markdown")
    plain = github_html(render(_report("x"), "markdown"))
    got = github_html(md)
    assert [t for t, _ in got.tags] == [t for t, _ in plain.tags], md  # the same elements as a harmless value makes
    assert {t for t, _ in got.tags} <= OWN
    assert not any(attrs for _, attrs in got.tags), md  # no href, no src: no element of ours has attributes
    shown = value.replace("\n", "\\n")
    assert all(address in shown for address in got.mailto)
    # the findings row: rule, severity, location, message, fix; each cell the value's exact text
    assert got.cells == ["MTP001", "error", f"{shown}.safetensors", f"shard {shown} is missing", f"restore {shown}"], md


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_value_renders_as_text(value: str) -> None:
    check_renders_as_text(value)
