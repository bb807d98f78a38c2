"""``mtp-audit rules`` and ``mtp-audit explain``: the rule catalogue and each rule's doc."""

from __future__ import annotations

import json

import click


def _analyzers() -> list[str]:
    """Every analyzer that declares rules (the registry's keys: checkpoint, compare, sglang, preflight, launch, vllm,
    llamacpp, trtllm, log)."""
    from mtp_audit.report.rules import ANALYZER_RULE_MODULES

    return list(ANALYZER_RULE_MODULES)


@click.command()
@click.option("--analyzer", type=click.Choice(_analyzers()), default=None)
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
    """Print RULE_ID's documentation: what it checks, why it matters, an example and the fix.

    RULE_ID is an id (MTP325) or a rule's name (vllm-torch-pin-mismatch)."""
    from mtp_audit.cli.suggest import did_you_mean
    from mtp_audit.errors import InputError
    from mtp_audit.report.rules import all_rules, get_rule

    try:
        rule = get_rule(rule_id)
    except KeyError:
        by_name = {r.name: r for r in all_rules()}
        if rule_id.strip().lower() not in by_name:
            known = [r.id for r in all_rules()] + list(by_name)
            raise InputError(rule_id, "no such rule" + did_you_mean(rule_id.strip(), known) + " (see 'mtp-audit rules')") from None
        rule = by_name[rule_id.strip().lower()]
    click.echo(rule.doc(), nl=False)
    return 0
