"""``mtp-audit launch``: paste an engine's launch command, get one cross-checked verdict before the model loads.

Engine-neutral: the command picks its engine (:mod:`mtp_audit.engines.registry`); the engine's release is opened, the
checkpoint and machine analyzers are lent to it (:mod:`mtp_audit.launch.analyzers`), the engine says what will run
(:meth:`mtp_audit.engines.base.Engine.evaluate`), and the launch report is built from its outcome and merged with the
sub-reports (each finding keeps its analyzer's rule id). See docs/launch.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtp_audit.deprecation import renamed_keywords
from mtp_audit.report import Report

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from mtp_audit.engines.release_keywords import ReleaseKeywords

__all__ = ["audit_launch"]


@renamed_keywords({"env_dump": "env_dumps", "facts": "facts_file"})
def audit_launch(
    argv: Sequence[str] | str,
    *,
    env_dumps: str | Path | Sequence[str | Path] | None = None,
    facts_file: str | Path | None = None,
    machine_facts: Any = None,
    env: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    engine: str | None = None,
    model_dirs: Sequence[tuple[str, str]] = (),
    no_machine: bool = False,
    **releases: Unpack[ReleaseKeywords],
) -> Report:
    """Audit one engine launch command on one machine with one (or, comparing, two) releases of that engine.

    Args:
        argv: the command's tokens (``["python", "-m", "sglang.launch_server", "--model-path", ...]``,
            ``["vllm", "serve", MODEL, ...]``), or one string that is split like a POSIX shell; ``KEY=VALUE`` tokens
            before the program are environment variables of the launch.
        releases: the release of the command's engine to check against, as the keyword of the engine's id
            (:func:`mtp_audit.engines.registry.engine_ids`); only the engine the command starts may be given one.
            What a target may be is the engine's own (:meth:`~mtp_audit.engines.base.Engine.release`): for
            ``sglang=`` / ``vllm=`` a release version (``"0.33.0"``, fetched from the package index or the cache
            like the CLI's: :meth:`~mtp_audit.engines.base.Engine.by_version`), a ``.whl``, an unpacked wheel, a
            package folder, a checkout (for SGLang also an already computed
            :func:`mtp_audit.engines.sglang.audit_sglang` report), or ``None`` for the installed package (not
            installed: a blocking gap); for ``llamacpp=`` (``llama-server`` / ``llama-cli``) the build
            (``--llamacpp-build``: ``10444``, ``b10444``, ``ik:4100``, or ``--version`` text; ``None``: read from
            ``env_dumps``, else unknown). ``compare_<id>=`` (``compare_sglang=``) is a second release of that
            engine (same kinds): the report is the one for this NEW release plus what changes in "what will
            happen" (SGLang: MTP310 findings and ``facts["launch"]["diff"]``;
            :meth:`~mtp_audit.engines.base.Engine.compare`).
        env_dumps: environment dump(s) of the serving machine (``--env-dump``); ``facts_file``: stored preflight
            facts (``--facts``); ``machine_facts``: a :class:`~mtp_audit.preflight.facts.MachineFacts`. At most one;
            none: the live machine. The old names ``env_dump`` and ``facts`` still work (DeprecationWarning).
        env: extra environment variables of the launch (``--env KEY=VALUE``), applied last.
        environ: the current environment (default ``os.environ``); only variables the engine reads are used.
        cwd: folder that relative model paths are resolved against (default: the current directory).
        model_dirs: ``--model-dir SRC=DST`` pairs: a model path of the command under folder ``SRC`` (the serving
            container's) is read from ``DST`` here (a folder that exists: else an :class:`InputError`). A model path
            found neither here nor as a hub repo id is a blocking gap on the checkpoint questions, never an input error.
        engine: ``--engine`` for the preflight's verdict (it wins over the engine the command starts; a disagreement
            is shown as evidence on MTP228).
        no_machine: ``--no-machine``: audit off the serving machine (CI, pre-commit, a laptop): this machine is never
            read; the machine is ``env_dumps`` only, or nothing. The machine questions left open are notes ("not
            examined: not the serving machine"), not blocking: a correct launch is ``go`` (exit 0) and says which
            machine checks it did not make (:mod:`mtp_audit.preflight.nomachine`).

    Returns:
        The merged report; ``facts["launch"]["summary"]`` has the headline of "what will happen" (``verdict`` is
        ``go`` / ``fix first`` / ``could not tell``, ``corrected_command`` when a fix is known),
        ``facts["launch"]["closing"]`` the same in sentences.

    Raises:
        TypeError: a keyword that is neither a parameter above nor an engine id (or ``compare_`` and one);
            (through ``mtp_audit.audit_launch``) ``model_dirs`` that is not a sequence of ``(SRC, DST)`` pairs.
        InputError: an empty command, a command no registered engine starts, a release option of another engine
            than the command's, two machine sources (or ``no_machine`` with stored facts), a model path that exists but
            is not a checkpoint, an unreadable release target or env dump, a ``model_dirs`` folder here that does not exist.
        IndexUnavailable: comparing two releases, one of which is a version the package index cannot give now (one
            release by version that cannot be fetched is a blocking gap on its questions instead: :func:`_fetched`).
    """
    from mtp_audit.engines.argv import split_command
    from mtp_audit.engines.registry import engine_for

    given, compares = _release_keywords(releases)
    toks = split_command([argv] if isinstance(argv, str) else list(argv))
    chosen = engine_for(toks)
    target, compare = _release_targets(chosen, given, compares)
    target, unfetched = _fetched(chosen, target, comparing=compare is not None)
    request = _request(toks, env_dumps, facts_file, machine_facts, engine, env, environ, cwd, model_dirs, no_machine)
    if compare is not None:
        old = chosen.evaluate(request, *chosen.release(target))
        new = chosen.evaluate(request, *chosen.release(chosen.by_version(compare)))
        outcome = chosen.compare(request, old, new)
    else:
        outcome = chosen.evaluate(request, *(chosen.release(target) if unfetched is None else (None, unfetched)))
    return _report(chosen, outcome)


def _fetched(chosen: Any, target: Any, *, comparing: bool) -> tuple[Any, Any]:
    """``(target as the engine's release takes it, None)`` (:meth:`~mtp_audit.engines.base.Engine.by_version`), or
    ``(None, blocking gap)`` for a release version the package index cannot give now and the cache does not hold: like
    a missing installed engine (:func:`mtp_audit.engines.base.unfetched_release_gap`), the release's questions could
    not be told while the checkpoint and machine analyzers still run, so a definite failure still outranks it.

    Raises:
        InputError: as :meth:`~mtp_audit.engines.base.Engine.by_version`. IndexUnavailable: only when ``comparing``
            (two releases are compared or nothing is).
    """
    from mtp_audit.engines.base import unfetched_release_gap
    from mtp_audit.sources.pypi import IndexUnavailable

    try:
        return chosen.by_version(target), None
    except IndexUnavailable as exc:
        if comparing:
            raise
        return None, unfetched_release_gap(chosen.label, chosen.target_option, str(target), exc.problem)


#: The keyword of a second release to compare with: ``compare_`` and the engine's id.
COMPARE_PREFIX = "compare_"


def _release_keywords(releases: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``releases`` split into (engine id -> release target, engine id -> second release to compare with), each
    without the ``None`` ones (the same as not given).

    Raises:
        TypeError: a keyword that is no engine's id (nor ``compare_`` and one), worded as Python words an unknown
            keyword argument.
    """
    from mtp_audit.engines.registry import engine_ids

    ids = engine_ids()
    given: dict[str, Any] = {}
    compares: dict[str, Any] = {}
    for key, target in releases.items():
        compared = key[len(COMPARE_PREFIX):] if key.startswith(COMPARE_PREFIX) else None
        if (compared or key) not in ids:
            raise TypeError(f"audit_launch() got an unexpected keyword argument {key!r}")
        if target is not None:
            (compares if compared else given)[compared or key] = target
    return given, compares


def _release_targets(chosen: Any, given: Mapping[str, Any], compares: Mapping[str, Any]) -> tuple[Any, Any]:
    """The command's engine's (release target, second release to compare with) after checking that no other engine
    was given one.

    Raises:
        InputError: a release (or a second one) of an engine that the command does not start (``--sglang`` for a
            vLLM command), naming that engine's option and the command's.
    """
    from mtp_audit.engines.registry import engine_ids, engine_named
    from mtp_audit.errors import InputError

    wrong = [i for i in engine_ids() if i != chosen.name and (i in given or i in compares)]
    if wrong:
        other = engine_named(wrong[0])
        fix = f"use {chosen.target_option} TARGET" if chosen.target_option else f"drop {other.target_option}"
        raise InputError(other.target_option or other.name, f"the command starts {chosen.label}, not {other.label}: {fix}")
    return given.get(chosen.name), compares.get(chosen.name)


def _request(toks: list[str], env_dump: Any, facts: Any, machine_facts: Any, engine: str | None, env: Any, environ: Any,
             cwd: Path | None, model_dirs: Sequence[tuple[str, str]] = (), no_machine: bool = False) -> Any:
    """The :class:`~mtp_audit.engines.base.LaunchRequest` with its one machine source and lent analyzers.

    Raises:
        InputError: more than one machine source, or ``no_machine`` with stored facts.
    """
    from mtp_audit.engines.base import LaunchRequest, Machine
    from mtp_audit.errors import InputError
    from mtp_audit.launch.analyzers import LaunchAnalyzers

    dumps = (env_dump,) if isinstance(env_dump, (str, Path)) else tuple(env_dump or ())
    if len([x for x in (dumps, facts, machine_facts) if x]) > 1:
        raise InputError("--env-dump/--facts", "use one machine source: --env-dump, or --facts")
    if no_machine and (facts or machine_facts):
        raise InputError("--no-machine", "use either --no-machine or --facts (stored facts describe a machine)")
    machine = Machine(tuple(Path(p) for p in dumps), Path(facts) if facts else None, machine_facts, engine, no_machine)
    here = Path(cwd) if cwd is not None else Path.cwd()
    _check_model_dirs(model_dirs, here)
    envmap = dict(os.environ) if environ is None else dict(environ)
    return LaunchRequest(toks=toks, machine=machine, env=env, environ=envmap, cwd=here, analyzers=LaunchAnalyzers(machine, here, model_dirs))


def _check_model_dirs(model_dirs: Sequence[tuple[str, str]], here: Path) -> None:
    """Each ``--model-dir SRC=DST`` names a folder here (``DST``, relative to ``here``): a mapping to nothing would
    send every model path under ``SRC`` to a folder that is not there.

    Raises:
        InputError: a ``DST`` that does not exist, or is not a folder (naming the pair and the folder).
    """
    from mtp_audit.errors import InputError

    for src, dst in model_dirs:
        folder = here / Path(dst)
        if not folder.exists():
            raise InputError(f"--model-dir {src}={dst}", f"{dst} does not exist")
        if not folder.is_dir():
            raise InputError(f"--model-dir {src}={dst}", f"{dst} is not a folder")


def _report(chosen: Any, outcome: Any) -> Report:
    """The launch report (the engine's cross-checks, its gaps and ``facts["launch"]``) merged with the sub-reports."""
    import importlib

    rules = importlib.import_module(chosen.rules_module).RULES
    facts = outcome.facts if "engine" in outcome.facts else {**outcome.facts, "engine": chosen.name}
    launch = Report.build("launch", outcome.name, findings=outcome.findings, gaps=outcome.gaps, facts=facts,
                          rule_ids=[r.id for r in rules])
    return launch.merge(*outcome.reports)
