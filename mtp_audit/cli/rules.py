"""``mtp-audit rules`` and ``mtp-audit explain``: the rule catalogue and each rule's doc."""

from __future__ import annotations

import json

import click


@click.command()
@click.option("--analyzer", type=click.Choice(["checkpoint", "compare", "sglang", "preflight", "launch"]), default=None)
@click.option("--format", "-f", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
def rules(analyzer: str | None, fmt: str) -> int:
    """List every rule: id, severity, analyzer, name and one-line summary."""
    from mtp_audit.report.rules import all_rules

    selected = [r for r in all_rules() if analyzer is None or r.analyzer == analyzer]
    if fmt == "json":
        rows = [
            {
                "id": r.id,
                "name": r.name,
                "analyzer": r.analyzer,
                "severity": r.severity.label,
                "summary": r.summary,
                "basis": r.basis,
                "sources": list(r.sources),
            }
            for r in selected
        ]
        click.echo(json.dumps(rows, indent=2))
    elif fmt == "markdown":
        click.echo("| id | name | analyzer | severity | summary |\n|---|---|---|---|---|")
        for r in selected:
            click.echo(f"| {r.id} | {r.name} | {r.analyzer} | {r.severity.label} | {r.summary} |")
    else:
        for r in selected:
            click.echo(f"{r.id}  {r.severity.label:<7}  {r.analyzer:<10}  {r.name}: {r.summary}")
    return 0


@click.command()
@click.argument("rule_id")
def explain(rule_id: str) -> int:
    """Print RULE_ID's documentation: what it checks, why it matters, an example and the fix."""
    from mtp_audit.errors import InputError
    from mtp_audit.report.rules import get_rule

    try:
        rule = get_rule(rule_id)
    except KeyError:
        raise InputError(rule_id, "no such rule (see 'mtp-audit rules')") from None
    click.echo(rule.doc(), nl=False)
    return 0
