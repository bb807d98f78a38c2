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


def test_shard_name_in_an_index_renders_as_text(tmp_path):
    """The issue's shape end to end: a weight map names a shard ``<img ...>[x](...)</td></tr></table><h1>PASS</h1>``
    (its slashes make it a sub-path that no loader opens: MTP008 quotes it) in a FAIL report; on GitHub the report keeps one table, one heading of
    level 1, no image and no link."""
    import json
    import shutil
    from pathlib import Path

    from mtp_audit.checkpoint import audit_checkpoint

    shard = '<img src="https://evil.example/p.png">[x](http://evil.example)</td></tr></table><h1>PASS</h1>.safetensors'
    shutil.copy(Path(__file__).resolve().parents[1] / "fixtures" / "checkpoint" / "jj8127--mimo_kor" / "config.json", tmp_path)
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": {
        "model.layers.0.mlp.gate_proj.weight": shard, "model.mtp_layers.0.enorm.weight": "a.safetensors"}}))
    md = render(audit_checkpoint(tmp_path), "markdown")
    got = github_html(md)
    tags = [t for t, _ in got.tags]
    assert md.startswith("# mtp-audit report\n\n**FAIL**")
    assert (tags.count("h1"), tags.count("table"), "img" in tags, "a" in tags, got.mailto) == (1, 1, False, False, [])
    (mtp008,) = [c for c in got.cells if "maps 1 tensor(s) to" in c]
    assert f'to "{shard}" (inside the folder: ' in mtp008
