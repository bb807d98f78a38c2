"""A typed, read-only view of one SGLang release's facts (``facts["sglang"]`` of the sglang analyzer,
:mod:`mtp_audit.engines.sglang.audit`), for the launch cross-checks: each part is read once, here, with its shape
checked, instead of each check guessing it from the document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mtp_audit.readonly import ReadOnlyMap

_EMPTY: Mapping[str, Any] = ReadOnlyMap({})


def _rows(doc: Mapping[str, Any], key: str) -> tuple[Mapping[str, Any], ...]:
    """``doc[key]`` as a tuple of its mapping rows (empty when absent or not a list)."""
    v = doc.get(key)
    return tuple(r for r in v if isinstance(r, Mapping)) if isinstance(v, list) else ()


@dataclass(frozen=True)
class Release:
    """What the launch checks read of one SGLang release.

    Attributes:
        known: whether a release was analyzed (``False``: no sglang facts; every part is empty).
        version: the release (``"0.5.23"``), or ``None`` when unknown.
        cli: option string (first name) -> its argparse record (``dest``, ``choices``, ``default``, ``action``,
            ``aliases``, ``location`` as ``"file:line"``); empty without an option table.
        cli_read: whether the facts hold an option table at all (an empty one included).
        parser: the parser's record (``allow_abbrev``, ``location``).
        entry_points: console command -> module (``None``: the release has no such command); ``None`` when not read.
        entry_classes: the ``EntryClass`` registrations (``class``, ``file``, ``entry_location``).
        mtp_classes: the MTP draft classes (``class``, ...).
        aliases: the speculative-algorithm alias tables (``enum_members``, ``members``, ``unknown_raises``, ``function``,
            ``location``).
        env_vars: the environment variables the release reads (``name``, ``location``, ...).
        draft_arch_overrides: the draft-architecture overrides (``from``, ``to``, ``location``).
        draft_model_path_fills: where the draft model path is filled in (``kind``, ``location``).
        worker_requires: what the speculative workers read on the draft model at start-up (``algorithm``,
            ``attribute``, ``location``, ``unless_has``, ``file``; :mod:`mtp_audit.engines.sglang.draft_api`).
        draft_class_api: MTP class -> ``missing`` (attributes of ``worker_requires`` its chain lacks), ``chain``,
            ``unresolved`` (why the chain could not be followed, or ``None``).
    """

    known: bool
    version: str | None
    cli: Mapping[str, Mapping[str, Any]]
    cli_read: bool
    parser: Mapping[str, Any]
    entry_points: Mapping[str, Any] | None
    entry_classes: tuple[Mapping[str, Any], ...]
    mtp_classes: tuple[Mapping[str, Any], ...]
    aliases: tuple[Mapping[str, Any], ...]
    env_vars: tuple[Mapping[str, Any], ...]
    draft_arch_overrides: tuple[Mapping[str, Any], ...]
    draft_model_path_fills: tuple[Mapping[str, Any], ...]
    worker_requires: tuple[Mapping[str, Any], ...]
    draft_class_api: Mapping[str, Mapping[str, Any]]

    @classmethod
    def of(cls, doc: Mapping[str, Any] | None) -> Release:
        """From ``facts["sglang"]`` (``None``: no release analyzed)."""
        d = doc if isinstance(doc, Mapping) else _EMPTY
        cli = d.get("cli_arguments")
        parser = d.get("parser")
        eps = d.get("entry_points")
        version = d.get("version")
        api_doc = d.get("draft_api")
        api: Mapping[str, Any] = api_doc if isinstance(api_doc, Mapping) else _EMPTY
        classes = api.get("classes")
        return cls(
            known=doc is not None,
            version=str(version) if version else None,
            cli=ReadOnlyMap({str(k): v for k, v in cli.items() if isinstance(v, Mapping)}) if isinstance(cli, Mapping) else _EMPTY,
            cli_read=isinstance(cli, Mapping),
            parser=parser if isinstance(parser, Mapping) else _EMPTY,
            entry_points=eps if isinstance(eps, Mapping) else None,
            entry_classes=_rows(d, "entry_classes"),
            mtp_classes=_rows(d, "mtp_classes"),
            aliases=_rows(d, "aliases"),
            env_vars=_rows(d, "env_vars"),
            draft_arch_overrides=_rows(d, "draft_arch_overrides"),
            draft_model_path_fills=_rows(d, "draft_model_path_fills"),
            worker_requires=_rows(api, "requires"),
            draft_class_api=classes if isinstance(classes, Mapping) else _EMPTY,
        )

    def option(self, flag: str | None) -> Mapping[str, Any]:
        """The argparse record of ``flag``, its first option string as the command parser resolves it (``--tp-size``, not
        its alias ``--tensor-parallel-size``); empty when the release does not declare it."""
        return self.cli.get(flag or "") or _EMPTY

    def dest(self, flag: str | None) -> str | None:
        """The ``dest`` of ``flag`` (the server-argument field it sets), or ``None`` (not declared)."""
        dest = self.option(flag).get("dest")
        return dest if isinstance(dest, str) else None

    def choices(self, flag: str | None) -> list[str] | None:
        """The argparse ``choices`` of ``flag``, or ``None`` (free-form, or not declared)."""
        c = self.option(flag).get("choices")
        return list(c) if isinstance(c, (list, tuple)) else None
