"""The parity matrix: each launch check x each engine x each platform, generated from the engines' own declarations
(:attr:`mtp_audit.engines.base.Engine.parity`, :attr:`~mtp_audit.engines.base.Engine.platforms`) and checked against
the rule registry. ``python -m mtp_audit.engines.parity`` prints ``docs/parity.md``; ``tests/test_parity.py`` fails
when a cell names no registered rule, no reason why the check does not apply and no open item, or when the file is
stale.
"""

from __future__ import annotations

from dataclasses import dataclass

from mtp_audit.engines.base import Coverage, Engine

#: The checks every engine should answer for a launch, in the order of the matrix: check -> what it asks.
CHECKS: dict[str, str] = {
    "what runs": "which speculative method runs with which draft, and the refusals that stop it",
    "speculation shape": "the draft length after the engine's own resolution (k, steps, max_draft_len, n_max)",
    "draft memory": "the draft's bytes per GPU (load-time peak, steady state where derived)",
    "release pins": "the release's torch / CUDA pins against the machine",
    "fp4 verdict": "whether the machine runs the FP4 kernels the launch needs, for this engine's own kernels",
    "parallelism": "parallel sizes the engine refuses, and GPUs it cannot place",
}


#: Checks an engine can answer through a hook of :class:`~mtp_audit.engines.base.Engine`: check -> hook name.
HOOKS: dict[str, str] = {"fp4 verdict": "fp4_verdict", "draft memory": "draft_memory", "release pins": "release_pins"}


def hooked(engine: Engine, check: str) -> bool:
    """Whether ``engine`` implements the hook of ``check`` (overrides the default of ``Engine``)."""
    hook = HOOKS.get(check)
    return hook is not None and getattr(type(engine), hook) is not getattr(Engine, hook)


@dataclass(frozen=True)
class Cell:
    """One cell: ``check`` x ``engine`` x ``platform`` and its :class:`~mtp_audit.engines.base.Coverage`.

    Attributes:
        problem: why the cell is not valid (an unknown rule id, a coverage that says nothing), ``""`` when it is.
    """

    check: str
    engine: str
    platform: str
    coverage: Coverage
    problem: str = ""
    hook: str = ""

    @property
    def text(self) -> str:
        """The cell as the document shows it (``via Engine.HOOK`` when the engine answers through a hook)."""
        c = self.coverage
        if self.problem:
            return f"INVALID: {self.problem}"
        via = f" (via Engine.{self.hook})" if self.hook else ""
        return ", ".join(c.rules) + via if c.rules else f"n/a: {c.na}" if c.na else f"open: {c.open}"


def platforms() -> tuple[str, ...]:
    """The platforms the preflight recognises (:data:`mtp_audit.preflight.platforms.LABELS`)."""
    from mtp_audit.preflight.platforms import LABELS

    return tuple(LABELS)


def coverage(engine: Engine, check: str, platform: str) -> Coverage:
    """What ``engine`` declares for ``check`` on ``platform``: "n/a" on a platform it does not run on."""
    if platform not in engine.platforms:
        return Coverage(na=f"{engine.label} does not run on {platform} ({engine.platforms_source})")
    declared = engine.parity.get(check)
    if isinstance(declared, Coverage) or declared is None:
        return declared or Coverage()
    return declared.get(platform) or declared.get("*") or Coverage()


def _problem(c: Coverage, known: set[str]) -> str:
    """Why a coverage is not a valid cell (``""``: valid); ``known``: the rules this engine's launch reports."""
    given = [bool(c.rules), bool(c.na), bool(c.open)]
    if sum(given) != 1:
        return "names no rule, no reason and no open item" if not any(given) else "gives more than one answer"
    unknown = [r for r in c.rules if r not in known]
    return f"rule(s) {', '.join(unknown)} not in this engine's launch report" if unknown else ""


def reported_rules(engine: Engine) -> set[str]:
    """The rule ids an ``engine``'s launch report can carry: its own rule module's and the preflight's (whose findings
    a launch merges)."""
    import importlib

    from mtp_audit.preflight.rules import preflight_rules

    return {r.id for r in importlib.import_module(engine.rules_module).RULES} | {r.id for r in preflight_rules()}


def matrix(engines: tuple[Engine, ...] | None = None) -> list[Cell]:
    """Every cell, checks x engines x platforms, in that order (``engines``: the registry's by default)."""
    from mtp_audit.engines.registry import engines as registered

    out = []
    for engine in engines or registered():
        known = reported_rules(engine)
        for check in CHECKS:
            hook = HOOKS[check] if hooked(engine, check) else ""
            for platform in platforms():
                c = coverage(engine, check, platform)
                problem = _problem(c, known) or (f"implements Engine.{hook} but names no rule" if hook and c.open else "")
                out.append(Cell(check, engine.name, platform, c, problem, hook if c.rules else ""))
    return sorted(out, key=lambda c: list(CHECKS).index(c.check))


def render(cells: list[Cell] | None = None) -> str:
    """``docs/parity.md``: one table per check, engines as rows and platforms as columns."""
    from mtp_audit.engines.registry import engines as registered

    cells = cells if cells is not None else matrix()
    plats = platforms()
    lines = ["# Parity: every launch check, for every engine, on every platform", "",
             "Generated by `python -m mtp_audit.engines.parity` from each engine's declarations (`Engine.parity`,",
             "`Engine.platforms`) and the rule registry; `tests/test_parity.py` fails when this file is stale or a cell",
             "names no registered rule, no reason why the check does not apply (n/a) and no open item. `mtp-audit explain",
             "RULE` documents each rule.", ""]
    labels = {e.name: e.label for e in registered()}
    for check, what in CHECKS.items():
        lines += [f"## {check}", "", what[0].upper() + what[1:] + ".", "", "| engine | " + " | ".join(plats) + " |",
                  "|---|" + "---|" * len(plats)]
        for engine in dict.fromkeys(c.engine for c in cells if c.check == check):
            row = {c.platform: c.text for c in cells if c.check == check and c.engine == engine}
            lines.append(f"| {labels.get(engine, engine)} | " + " | ".join(row[p].replace("|", "/") for p in plats) + " |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
