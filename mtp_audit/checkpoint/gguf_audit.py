"""Audit GGUF checkpoints: read every part's header (:mod:`mtp_audit.sources.gguf`), gather the MTP facts
(:mod:`mtp_audit.checkpoint.gguf`), run the MTP030-MTP039 checks and build the report.

The report has the checkpoint analyzer's shape: ``facts["checkpoint"]`` with ``mode: "gguf"``, a ``summary``
with the keys the safetensors path fills where they mean the same (architecture, MTP layers declared and
found, MTP tensors and bytes, ``mtp_available``), the one-line ``answer``, and ``gguf``: one entry per model
(files, version, block count, nextn blocks with types and bytes, split and sidecar facts).

Whether the engine that loads GGUF files (llama.cpp) has a ``draft-mtp`` graph for the architecture is that
engine's own knowledge, lent through its :meth:`~mtp_audit.engines.base.Engine.gguf_mtp_graph` hook
(:func:`mtp_audit.engines.registry.checkpoint_hooks`; the newest known build unless one is given).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mtp_audit.checkpoint import gguf_rules as R
from mtp_audit.checkpoint.gguf import (
    GGUFModel,
    NextnBlock,
    drafter_kind,
    group_models,
    low_bit_parts,
    nextn_blocks,
    nvfp4_nextn,
    split_problems,
    type_counts,
)
from mtp_audit.checkpoint.rules import MTP013
from mtp_audit.errors import InputError
from mtp_audit.report import Evidence, Finding, Gap, Location, Report
from mtp_audit.report.questions import MTP_HEADS
from mtp_audit.sources.gguf import GGUFHeader, read_gguf_file
from mtp_audit.sources.local import ReadProblem

ANALYZER = "checkpoint"

#: Most GGUF files audited in one folder (a hub repository of quants holds 10-40).
MAX_GGUF_FILES = 256

#: ``rel -> header`` reader for the files of one audit.
Reader = Callable[[str], GGUFHeader]


def is_gguf_folder(root: Path) -> bool:
    """Whether a folder is a GGUF checkpoint: ``*.gguf`` at its top level and no safetensors checkpoint."""
    try:
        names = [p.name for p in root.iterdir()]
    except OSError:
        return False
    ggufs = [n for n in names if n.endswith(".gguf") and not n.startswith(".")]
    safetensors = any(n.endswith((".safetensors", ".safetensors.index.json")) or n == "config.json" for n in names)
    return bool(ggufs) and not safetensors


def local_reader(root: Path, display: str) -> Reader:
    """A reader for ``rel`` names under ``root``; refuses names that resolve outside it."""
    fence = root.resolve()

    def read(rel: str) -> GGUFHeader:
        path = (root / rel).resolve()
        if fence != path.parent and fence not in path.parents:
            raise ReadProblem(rel, "resolves outside the checkpoint folder (symlink); not opened", "escapes")
        return read_gguf_file(path, display=os.path.join(display, rel) if display else rel)

    return read


def audit_gguf_path(path: Path, display: str, *, build: int | None = None, as_model: bool = False) -> Report:
    """Audit a ``.gguf`` file (with the other parts of its split set) or a folder of GGUF files.

    ``as_model``: the file is the model a launch loads (llama-server ``-m``), not the audit's own input: a part that
    cannot be read is then the launch's defect, as in a folder (MTP013 for a malformed header, else a blocking gap).

    Raises:
        InputError: a header is malformed or unreadable (one line naming the file; not with ``as_model``), or no
            GGUF file.
    """
    if path.is_dir():
        root, names, shown = path, _folder_ggufs(path, display), display
    else:
        root, names, shown = path.parent, _related_parts(path), os.path.dirname(display)
    return audit_gguf(names, local_reader(root, shown), display, build=build, folder=path.is_dir() or as_model)


def _folder_ggufs(root: Path, display: str) -> list[str]:
    names = sorted(p.name for p in root.iterdir() if p.name.endswith(".gguf") and not p.name.startswith("."))
    if len(names) > MAX_GGUF_FILES:
        raise InputError(display, f"more than {MAX_GGUF_FILES} .gguf files; name one file or a smaller folder")
    if not names:
        raise InputError(display, "no .gguf file")
    return names


def _related_parts(path: Path) -> list[str]:
    from mtp_audit.checkpoint.gguf import SPLIT_RE

    m = SPLIT_RE.match(path.name)
    if not m:
        return [path.name]
    prefix, suffix = f"{m['base']}-", f"-of-{m['count']}.gguf"
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(prefix) and p.name.endswith(suffix)
                  and SPLIT_RE.match(p.name))


def is_gguf_listing(files: Iterable[str]) -> bool:
    """Whether a hub repository's files are a GGUF checkpoint (``.gguf`` files, no safetensors checkpoint)."""
    files = list(files)
    return any(f.endswith(".gguf") for f in files) and not any(
        f.endswith((".safetensors", ".safetensors.index.json")) or f == "config.json" for f in files)


def audit_gguf_source(source: Any, *, build: int | None = None) -> Report:
    """Audit the GGUF files of a hub repository (:class:`mtp_audit.sources.hub.HubSource`: ``list_files`` and
    ``read_gguf_header``, range requests only); at most :data:`MAX_GGUF_FILES` files.

    Raises:
        InputError: more files than that, or a malformed header.
    """
    names = [f for f in source.list_files() if f.endswith(".gguf")]
    if len(names) > MAX_GGUF_FILES:
        raise InputError(source.display, f"more than {MAX_GGUF_FILES} .gguf files; download the quant you want and audit it")
    report = audit_gguf(names, source.read_gguf_header, source.display, build=build, folder=True)
    import dataclasses

    facts = dict(report.facts["checkpoint"])
    facts["source"] = {**source.describe(), **source.stats()}
    return dataclasses.replace(report, facts={**report.facts, "checkpoint": facts})


def audit_gguf(names: Iterable[str], read: Reader, display: str, *, build: int | None = None,
               folder: bool = False) -> Report:
    """Audit the GGUF files ``names`` read through ``read``; see the module docstring for the facts.

    ``folder``: the user named a folder (or a hub repository), not a file. A part that cannot be read is then a defect
    of the checkpoint, as a safetensors shard inside a folder is (docs/checkpoint.md): a malformed header is MTP013
    (llama.cpp refuses the file: ggml/src/gguf.cpp ``gguf_init_from_file_impl``), any other problem a blocking gap;
    that model is left out and the others are audited.

    Raises:
        InputError: a malformed or unreadable header of a file the user named (``mtp-audit`` exits 2 with this one
            line).
    """
    models, skipped = group_models(list(names))
    findings: list[Finding] = []
    gaps: list[Gap] = []
    for model in list(models):
        problem = _read_parts(model, read, folder)
        if problem is not None:
            models.remove(model)
            _broken_part(problem, findings, gaps)
        elif drafter_kind(model):
            model.kind = "sidecar"
    entries = []
    for model in models:
        blocks = nextn_blocks(model)
        findings += check_model(model, blocks, models, build)
        gaps += _gaps(model, blocks, build)
        entries.append(model_facts(model, blocks))
    return Report.build(ANALYZER, display, findings=findings, gaps=gaps,
                        facts=_facts(models, entries, [f for f in findings if f.rule_id != MTP013.id], skipped, build,
                                     unread=sum(f.rule_id == MTP013.id for f in findings) + len(gaps)),
                        rule_ids=[r.id for r in R.GGUF_RULES] + [MTP013.id])


def _read_parts(model: GGUFModel, read: Reader, folder: bool) -> ReadProblem | None:
    """Read every part's header into ``model.headers``; the first problem, when the user named a folder.

    Raises:
        InputError: a part that cannot be read when the user named a file (one line naming it).
    """
    for rel in model.files:
        try:
            model.headers[rel] = read(rel)
        except ReadProblem as exc:
            if not folder:
                where = exc.file if exc.file.endswith(rel) else rel
                raise InputError(where, exc.problem) from None
            return ReadProblem(rel, exc.problem, exc.kind)
    return None


def _broken_part(problem: ReadProblem, findings: list[Finding], gaps: list[Gap]) -> None:
    """A part of a GGUF folder that could not be read: MTP013 when its header is malformed, else a blocking gap."""
    if problem.kind == "malformed":
        findings.append(MTP013.finding(f"{problem.file}: {problem.problem}", Location(problem.file)))
    else:
        gaps.append(Gap(ANALYZER, f"{problem.file}: {problem.problem}; that model was not audited", problem.file,
                        question=MTP_HEADS))


# -- checks ---------------------------------------------------------------------------------------------


def check_model(model: GGUFModel, blocks: dict[int, NextnBlock], models: list[GGUFModel], build: int | None) -> list[Finding]:
    """Every GGUF rule on one model."""
    out: list[Finding] = []
    for check in (_check_version, _check_split, _check_declared, _check_blocks, _check_graph, _check_nvfp4,
                  _check_low_bit):
        out += check(model, blocks, build)
    out += _check_sidecar_and_absent(model, blocks, models, build)
    return out


def _loc(model: GGUFModel, symbol: str | None = None, file: str | None = None) -> Location:
    return Location(path=file or model.files[0], symbol=symbol)


def _check_version(model: GGUFModel, blocks: dict[int, NextnBlock], build: int | None) -> list[Finding]:
    return [R.MTP039.finding(f"{f} is GGUF version 1; llama.cpp refuses it ('GGUFv1 is no longer supported')", _loc(model, file=f))
            for f, h in model.headers.items() if h.version == 1]


def _check_split(model: GGUFModel, blocks: dict[int, NextnBlock], build: int | None) -> list[Finding]:
    return [R.MTP035.finding(f"{p.model}: {p.problem}; llama.cpp cannot load the split set", _loc(model, file=p.model))
            for p in split_problems(model)]


def _declared(model: GGUFModel) -> int | None:
    return model.arch_int("nextn_predict_layers")


def _check_declared(model: GGUFModel, blocks: dict[int, NextnBlock], build: int | None) -> list[Finding]:
    k = _declared(model) or 0
    key = f"{model.arch}.nextn_predict_layers"
    if k > 0 and not blocks and model.kind == "model":
        return [R.MTP030.finding(
            f"{key} = {k} but none of the {len(model.tensors()):,} tensors is blk.N.nextn.*; --spec-type draft-mtp "
            "asserts on this file", _loc(model, key),
            evidence=[Evidence(key, str(k)), Evidence(f"{model.arch}.block_count", str(model.arch_int("block_count")))])]
    if blocks and k == 0:
        names = ", ".join(f"blk.{b}.nextn.*" for b in list(blocks)[:3])
        return [R.MTP031.finding(
            f"{names} ship ({sum(len(b.parts) for b in blocks.values())} weights) but {key} is "
            f"{'0' if _declared(model) == 0 else 'absent'}; llama.cpp loads the file as trunk-only and never drafts with them",
            _loc(model, key))]
    return []


def _check_blocks(model: GGUFModel, blocks: dict[int, NextnBlock], build: int | None) -> list[Finding]:
    k, n = _declared(model) or 0, model.arch_int("block_count")
    if not blocks or k <= 0:
        return []
    out = []
    if n is not None and model.kind == "model":
        lo = n - k
        stray = [b for b in blocks if not lo <= b < n]
        inside = len(blocks) - len(stray)
        if stray or inside < k:
            want = f"blk.{lo}..blk.{n - 1}" if k > 1 else f"blk.{lo}"
            first = stray[0] if stray else next((b for b in range(max(lo, 0), n) if b not in blocks), lo)
            out.append(R.MTP032.finding(
                f"{model.arch}.block_count = {n} and nextn_predict_layers = {k} put the MTP blocks at {want}, but "
                f"blk.N.nextn.* is in {_blocks_text(list(blocks))} ({inside} of {k} in place)",
                _loc(model, f"blk.{first}.nextn")))
    elif len(blocks) < k:
        out.append(R.MTP032.finding(f"{k} MTP layers declared, {len(blocks)} nextn block(s) present", _loc(model)))
    for b in blocks.values():
        if b.missing:
            out.append(R.MTP032.finding(
                f"blk.{b.block}.nextn lacks {', '.join(b.missing)} (has {', '.join(sorted(b.parts)) or 'nothing'}); "
                "the draft-mtp graph cannot be built", _loc(model, f"blk.{b.block}.nextn")))
    return out


def _blocks_text(blocks: list[int]) -> str:
    return ", ".join(f"blk.{b}" for b in blocks[:4]) + (f" (+{len(blocks) - 4})" if len(blocks) > 4 else "") or "none"


def _mtp_graph(arch: str | None, build: int | None) -> tuple[bool | None, Any]:
    """``(answer, row)`` of the first engine whose :meth:`~mtp_audit.engines.base.Engine.gguf_mtp_graph` hook
    knows ``arch`` (answer ``None``: could not tell; ``row``: its table row, ``None`` when no engine knows the
    architecture)."""
    from mtp_audit.engines.registry import checkpoint_hooks

    for _engine, hook in checkpoint_hooks("gguf_mtp_graph"):
        has, row = hook(arch, build)
        if row is not None or has is not None:
            return has, row
    return None, None


def _check_graph(model: GGUFModel, blocks: dict[int, NextnBlock], build: int | None) -> list[Finding]:
    if not blocks:
        return []
    has, row = _mtp_graph(model.arch, build)
    if has is False and row is not None:
        when = f"build b{build} has" if build else "no merged llama.cpp build has a draft-mtp graph for it"
        when = f"build b{build} has no draft-mtp graph for it" if build else when
        return [R.MTP033.finding(
            f"{model.arch} ({row.family}) carries {len(blocks)} nextn block(s), but {when}: {row.note}", _loc(model, "general.architecture"), evidence=[Evidence("source", row.source)])]
    return []


def _check_nvfp4(model: GGUFModel, blocks: dict[int, NextnBlock], build: int | None) -> list[Finding]:
    parts = nvfp4_nextn(model, blocks)
    if not parts:
        return []
    return [R.MTP034.finding(
        f"{len(parts)} NVFP4 MTP weight(s) carry .scale/.input_scale tensors ({', '.join(parts[:3])}): builds before "
        "PR #23563 refuse the file, builds before PR #27736 miscount them when MTP is not enabled "
        "('wrong number of tensors')", _loc(model, parts[0]))]


def _check_low_bit(model: GGUFModel, blocks: dict[int, NextnBlock], build: int | None) -> list[Finding]:
    low = low_bit_parts(blocks)
    if not low:
        return []
    return [R.MTP038.finding(f"{len(low)} MTP projection weight(s) at 4 bits or fewer: {', '.join(low[:3])}",
                             _loc(model, low[0].split(" ")[0]))]


def _check_sidecar_and_absent(model: GGUFModel, blocks: dict[int, NextnBlock], models: list[GGUFModel],
                              build: int | None) -> list[Finding]:
    sidecars = [m for m in models if m.kind == "sidecar"]
    if model.kind == "sidecar":
        what = f"{len(blocks)} nextn block(s), {sum(b.block_tensors for b in blocks.values())} tensors" if blocks else "no nextn tensor"
        if drafter_kind(model):
            what = f"a Gemma-4 assistant drafter, {model.arch_int('block_count') or '?'} layers, {len(model.tensors())} tensors"
        trunks = [m.name for m in models if m.kind == "model"]
        return [R.MTP036.finding(
            f"{model.name} is an MTP-only GGUF ({model.arch}, {what}); llama-server uses it only with "
            f"-md {model.name} --spec-type draft-mtp" + (f" next to -m {trunks[0]}" if trunks else ""), _loc(model))]
    has, row = _mtp_graph(model.arch, build)
    if not blocks and not (_declared(model) or 0) and has and not sidecars:
        need = ("its MTP head is always a separate assistant GGUF, passed with -md" if row and row.sidecar else
                "--spec-type draft-mtp needs a release that keeps the head, or an MTP-only GGUF passed with -md")
        where = "" if len(models) > 1 else " (only this file was read)"
        return [R.MTP037.finding(f"{model.arch} has a llama.cpp draft-mtp graph, but {model.name} carries no MTP head and "
                                 f"none was found beside it{where}: {need}", _loc(model))]
    return []


def _gaps(model: GGUFModel, blocks: dict[int, NextnBlock], build: int | None) -> list[Gap]:
    has, row = _mtp_graph(model.arch, build)
    if not blocks:
        return []
    if row is None:
        return [Gap(ANALYZER, f"{model.name}: architecture {model.arch!r} is not in the llama.cpp MTP table; whether a "
                              "draft-mtp graph exists for it could not be told", model.name, blocking=False,
                    question=MTP_HEADS)]
    if has is None:
        return [Gap(ANALYZER, f"{model.name}: build b{build} is within the estimated range of {row.source}; whether it "
                              "has the draft-mtp graph could not be told", model.name, blocking=False,
                    question=MTP_HEADS)]
    return []


# -- facts ----------------------------------------------------------------------------------------------


def model_facts(model: GGUFModel, blocks: dict[int, NextnBlock]) -> dict[str, Any]:
    """The JSON facts of one model (``facts["checkpoint"]["gguf"]["models"][i]``)."""
    first = model.first
    return {
        "name": model.name,
        "kind": model.kind,
        "files": list(model.files),
        "parts_expected": model.expected_parts,
        "version": first.version if first else None,
        "architecture": model.arch,
        "block_count": model.arch_int("block_count"),
        "nextn_predict_layers": _declared(model),
        "tensors": len(model.tensors()),
        "tensor_types": dict(sorted(Counter(t.type_name for _, t in model.tensors()).items())),
        "data_bytes": sum(h.data_bytes for h in model.headers.values()),
        "header_bytes": sum(h.header_bytes for h in model.headers.values()),
        "nextn_blocks": {str(b.block): {"parts": b.parts, "scales": b.scales, "nextn_bytes": b.nbytes,
                                        "block_tensors": b.block_tensors, "block_bytes": b.block_bytes}
                         for b in blocks.values()},
        "drafter": drafter_kind(model),
        "nextn_types": type_counts(blocks),
        "nextn_projection_types": sorted({t for b in blocks.values() for p, t in b.parts.items() if not p.endswith("norm")}),
        "mtp_tensor_names": sorted(t.name for _, t in model.tensors() if ".nextn." in t.name),
    }


def _facts(models: list[GGUFModel], entries: list[dict[str, Any]], findings: list[Finding], skipped: list[str],
           build: int | None, *, unread: int = 0) -> dict[str, Any]:
    """``facts["checkpoint"]`` of the models read; ``findings`` are theirs (MTP013 of a file left out is not), and
    ``unread`` counts the files of a folder that could not be read (their models are not in ``models``)."""
    main = next((e for e in entries if e["kind"] == "model"), entries[0] if entries else None)
    sidecar = next((e for e in entries if e["kind"] == "sidecar"), None)
    usable = _usable(main, sidecar, findings, build)
    summary = {
        "architecture": main["architecture"] if main else None,
        "mode": "gguf",
        "mtp_layers_declared": main["nextn_predict_layers"] if main else None,
        "mtp_layers_found": len(main["nextn_blocks"]) if main else None,
        "mtp_tensors": len(main["mtp_tensor_names"]) if main else None,
        "mtp_bytes": sum(b["block_bytes"] for b in main["nextn_blocks"].values()) if main else None,
        "tensors": main["tensors"] if main else None,
        "mtp_sidecar": sidecar["name"] if sidecar else None,
        "llamacpp_mtp_usable": usable,
    }
    answer = _answer(main, sidecar, usable, findings, build) if main or not unread else "no GGUF model could be read"
    if unread:
        answer += f"; {unread} GGUF file(s) of the folder could not be read"
    return {"summary": summary, "mode": "gguf", "answer": [answer],
            "gguf": {"models": entries, "skipped": skipped, "llamacpp_build": build}}


def _usable(main: dict[str, Any] | None, sidecar: dict[str, Any] | None, findings: list[Finding],
            build: int | None) -> bool | None:
    if main is None:
        return None
    errors = [f for f in findings if f.severity.label == "error"]
    head = main if main["nextn_blocks"] else sidecar if sidecar and (sidecar["nextn_blocks"] or sidecar["drafter"]) else None
    if head is None or errors or any(f.rule_id in ("MTP031", "MTP033") for f in findings):
        return False
    return _mtp_graph(head["architecture"], build)[0]


def _answer(main: dict[str, Any] | None, sidecar: dict[str, Any] | None, usable: bool | None, findings: list[Finding],
            build: int | None) -> str:
    if main is None:
        return "no GGUF model"
    arch, k, n = main["architecture"], main["nextn_predict_layers"], len(main["nextn_blocks"])
    decl = f"{arch}.nextn_predict_layers = {k}" if k is not None else f"no {arch}.nextn_predict_layers"
    ships = (f"{n} nextn block(s) ship ({len(main['mtp_tensor_names'])} nextn tensors, "
             f"{', '.join(main['nextn_projection_types']) or 'no projection weights'})" if n else "no nextn tensor ships")
    if sidecar is not None and not n and (sidecar["nextn_blocks"] or sidecar["drafter"]):
        ships += f"; the head is in {sidecar['name']} (-md)"
    ids = sorted({f.rule_id for f in findings if f.severity.label in ("error", "warning")})
    if usable is True:
        return f"{decl} and {ships}: llama.cpp --spec-type draft-mtp can use the MTP head"
    if usable is None:
        return f"{decl} and {ships}; whether this llama.cpp build has a draft-mtp graph for {arch} could not be told"
    why = f" ({', '.join(ids)})" if ids else ""
    return f"{decl} and {ships}: llama.cpp --spec-type draft-mtp will not get a working MTP head{why}"
