"""The library contract of the top-level functions (``mtp_audit.audit_checkpoint(...)`` and friends).

Each public function is served through :func:`public`, which, before the analyzer runs:

- binds the arguments to the function's signature, so an unknown keyword argument (``audit_launch(argv,
  sglnag=...)``) raises ``TypeError`` naming it instead of being ignored (the old names of
  :data:`DEPRECATED` are bound as their new names; the function itself warns; the names a function takes as
  ``**keywords``, ``audit_launch``'s release keywords named by engine id, are checked against their spec here and
  by the function itself);
- checks each argument against :data:`SPECS` and raises ``TypeError`` with one clear line
  (``audit_launch(argv=...): expected a sequence of str (a launch command split into words), got str``)
  instead of an ``AttributeError`` or ``KeyError`` from deep inside;
- takes a release version wherever the CLI does (``audit_sglang("0.5.23")``: :func:`with_release`);
- runs the call as one run (:func:`mtp_audit.sources.bounded.run_budget`): totals of bytes read, JSON parsed
  and network time, as the CLI has.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mtp_audit.deprecation import ENGINE_FACT_KEYWORDS, folded

#: What each kind of argument accepts: (test, words for the message).
_PATH = (lambda v: isinstance(v, (str, os.PathLike)), "a path (str or os.PathLike)")
_OPT_PATH = (lambda v: v is None or isinstance(v, (str, os.PathLike)), "a path (str or os.PathLike) or None")
_STR = (lambda v: isinstance(v, str), "str")
_OPT_STR = (lambda v: v is None or isinstance(v, str), "str or None")
_BOOL = (lambda v: isinstance(v, bool), "bool")
_OPT_BOOL = (lambda v: v is None or isinstance(v, bool), "bool or None")
_NUMBER = (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0, "a positive number of seconds")
_OPT_INT = (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)), "int or None")
_ANY = (lambda v: True, "anything")
_MODEL_DIRS = (lambda v: isinstance(v, Sequence) and not isinstance(v, (str, bytes)) and all(
    isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(x, (str, os.PathLike)) for x in p) for p in v),
    "a sequence of (SRC, DST) pairs of paths (str or os.PathLike), e.g. [('/models', 'fixtures/checkpoint')]")


def _words(v: Any) -> bool:
    return isinstance(v, Sequence) and not isinstance(v, (str, bytes)) and all(isinstance(x, str) for x in v)


def _paths(v: Any) -> bool:
    if isinstance(v, (str, os.PathLike)):
        return True
    return isinstance(v, Sequence) and not isinstance(v, bytes) and all(isinstance(x, (str, os.PathLike)) for x in v)


def _str_map(v: Any) -> bool:
    return v is None or (isinstance(v, Mapping) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()))


def _instance(v: Any, module: str, cls: str) -> bool:
    """``isinstance(v, module.cls)`` without importing ``module``: if it was never imported, ``v`` cannot be
    one of its instances (and this module stays free of the analyzers' import graph)."""
    mod = sys.modules.get(module)
    return mod is not None and isinstance(v, getattr(mod, cls))


def _report_or(extra: Callable[[Any], bool]) -> Callable[[Any], bool]:
    def test(v: Any) -> bool:
        return _instance(v, "mtp_audit.report.model", "Report") or extra(v)

    return test


def _source_or_path(v: Any) -> bool:
    return isinstance(v, (str, os.PathLike)) or _instance(v, "mtp_audit.sources.local", "CheckpointSource")


_WORDS = (lambda v: isinstance(v, str) or _words(v), "a sequence of str (a launch command split into words) or one command string")
_OPT_WORDS = (lambda v: v is None or _words(v), "a sequence of str or None")
_PATHS = (_paths, "a path or a sequence of paths")
_OPT_PATHS = (lambda v: v is None or _paths(v), "a path, a sequence of paths, or None")
_STR_MAP = (_str_map, "a mapping of str to str, or None")
_OPT_MAP = (lambda v: v is None or isinstance(v, Mapping), "a mapping or None")
_TARGET = (_source_or_path, "a path, a hub id (str) or a CheckpointSource")
_SGLANG = (_report_or(lambda v: v is None or isinstance(v, (str, os.PathLike))), "a path, a Report or None")
_REPORT_DOC = (_report_or(lambda v: isinstance(v, Mapping)), "a Report or its to_dict() mapping")


def _report(v: Any) -> bool:
    return _instance(v, "mtp_audit.report.model", "Report")


#: ``fail_on`` as the CLI's ``--fail-on`` spells it (``never`` is ``None``), accepted by the library too.
FAIL_ON_WORDS = ("info", "warning", "error", "never")


def _opt_severity(v: Any) -> bool:
    return v is None or _instance(v, "mtp_audit.report.model", "Severity") or (isinstance(v, str) and v.lower() in FAIL_ON_WORDS)


_FAIL_ON = (_opt_severity, "a Severity, None, or one of 'info', 'warning', 'error', 'never'")
#: The formats :func:`mtp_audit.formats.render` writes (``mtp_audit.formats.FORMATS``; not imported here).
_FORMAT = (lambda v: v in ("text", "json", "markdown", "sarif"), "one of 'text', 'json', 'markdown', 'sarif'")
_IGNORES = (lambda v: _words(v), "a sequence of str (RULE or RULE=reason)")


def _machine_facts(v: Any) -> bool:
    return v is None or _instance(v, "mtp_audit.preflight.facts", "MachineFacts")


#: Function name -> parameter -> (test, expected).
_PREFLIGHT: dict[str, tuple[Callable[[Any], bool], str]] = {"env_dumps": _PATHS, "facts_file": _OPT_PATH,
              "machine_facts": (_machine_facts, "a MachineFacts or None"), "launch": _OPT_WORDS, "probe": _BOOL,
              "import_torch": _BOOL, "timeout": _NUMBER, "cwd": _OPT_PATH, "use_engine_analyzer": _BOOL,
              "probe_result": _ANY, "engine_facts": _OPT_MAP, "engine": _OPT_STR, "use_nvml": _OPT_BOOL,
              "no_machine": _BOOL}

#: Function name -> parameter -> (test, expected). Functions not listed get the signature check only.
SPECS: dict[str, dict[str, tuple[Callable[[Any], bool], str]]] = {
    "audit_checkpoint": {"target": _TARGET, "offline": _BOOL, "jobs": _OPT_INT, "token": _OPT_STR, "revision": _OPT_STR,
                         "hf_cache_dir": _OPT_PATH, "cache_dir": _OPT_PATH, "use_cache": _BOOL},
    "audit_sglang": {"target": _OPT_PATH},
    "diff_sglang": {"old_report": _REPORT_DOC, "new_report": _REPORT_DOC},
    "audit_vllm": {"target": _OPT_PATH},
    "diff_vllm": {"old_report": _REPORT_DOC, "new_report": _REPORT_DOC},
    "preflight": _PREFLIGHT,
    "audit_machine": _PREFLIGHT,
    "compare_checkpoints": {"base": _TARGET, "derived": _TARGET, "offline": _BOOL, "jobs": _OPT_INT},
    "audit_launch": {"argv": _WORDS, "sglang": _SGLANG, "compare_sglang": _SGLANG, "env_dumps": _OPT_PATHS,
                     "facts_file": _OPT_PATH, "machine_facts": (_machine_facts, "a MachineFacts or None"), "env": _STR_MAP, "environ": _STR_MAP,
                     "cwd": _OPT_PATH, "engine": _OPT_STR, "vllm": _OPT_PATH, "llamacpp": _OPT_STR, "model_dirs": _MODEL_DIRS,
                     "no_machine": _BOOL},
    "get_rule": {"rule_id": _STR},
    "exit_code": {"report": (_report, "a Report"), "fail_on": _FAIL_ON},
    "render": {"report": (_report, "a Report"), "fmt": _FORMAT, "fail_on": _FAIL_ON},
    "launch_result": {"report": (_report, "a Report")},
    "checkpoint_facts": {"report": (_report, "a Report")},
    "fp4_readiness": {"report": (_report, "a Report")},
    "apply_config": {"report": (_report, "a Report"), "config": _OPT_PATH, "ignore": _IGNORES, "fail_on": _OPT_STR},
}

#: Old keyword names still accepted (with a DeprecationWarning, :mod:`mtp_audit.deprecation`): old -> new.
DEPRECATED: dict[str, dict[str, str]] = {
    "audit_launch": {"env_dump": "env_dumps", "facts": "facts_file"},
    "preflight": {"facts": "machine_facts", "env_dump": "env_dumps", "use_sglang_analyzer": "use_engine_analyzer"},
    "audit_machine": {"facts": "machine_facts", "env_dump": "env_dumps", "use_sglang_analyzer": "use_engine_analyzer"},
}

#: Old keywords that became entries of a mapping keyword (:func:`mtp_audit.deprecation.folded`): function name ->
#: (the mapping keyword, old keyword -> (key, field)).
FOLDED: dict[str, tuple[str, Mapping[str, tuple[str, str | None]]]] = {
    "preflight": ("engine_facts", ENGINE_FACT_KEYWORDS),
    "audit_machine": ("engine_facts", ENGINE_FACT_KEYWORDS),
}


#: Functions whose ``target`` may be a release version, as the CLI's TARGET: function name -> package on the index.
RELEASE_TARGETS: dict[str, str] = {"audit_sglang": "sglang", "audit_vllm": "vllm"}


def with_release(name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` with the ``target`` of a :data:`RELEASE_TARGETS` function that is a release version
    (``"0.5.23"``, ``"0.33"``) and not an existing path replaced by the local wheel
    :func:`mtp_audit.sources.pypi.by_version` fetches or finds in the cache (what ``mtp-audit sglang 0.5.23`` does).

    Raises:
        InputError / IndexUnavailable: as :func:`mtp_audit.sources.pypi.release_wheel`.
    """
    package = RELEASE_TARGETS.get(name)
    if package is None:
        return args, kwargs
    bound = inspect.signature(fn).bind(*args, **kwargs)
    target = bound.arguments.get("target")
    if not isinstance(target, str):
        return args, kwargs
    from mtp_audit.sources.pypi import by_version

    bound.arguments["target"] = by_version(package, target)
    return bound.args, bound.kwargs


def check_call(name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Raise ``TypeError`` (one line naming the function, the argument and what it expects) for an unknown
    keyword argument, a missing or extra positional argument, or an argument of the wrong type."""
    if name in FOLDED:
        kwargs = folded(kwargs, *FOLDED[name])
    renames = DEPRECATED.get(name, {})
    for old, new in renames.items():
        if old in kwargs and new in kwargs:
            raise TypeError(f"{name}() got both {old!r} (deprecated) and {new!r}")
    kwargs = {renames.get(k, k): v for k, v in kwargs.items()}
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{name}(): {exc}") from None
    specs = SPECS.get(name, {})
    for pname, value in bound.arguments.items():
        param = inspect.signature(fn).parameters[pname]
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            for key, v in value.items():
                _check_one(name, key, v, specs)
        else:
            _check_one(name, pname, value, specs)


#: Specs whose accepted values are some strings: another string is a wrong value (``ValueError``), not a wrong type.
VALUE_SPECS = (_FORMAT, _FAIL_ON)


def _check_one(name: str, pname: str, value: Any, specs: Mapping[str, tuple[Callable[[Any], bool], str]]) -> None:
    spec = specs.get(pname)
    if spec is not None and not spec[0](value):
        kind = ValueError if isinstance(value, str) and spec in VALUE_SPECS else TypeError
        raise kind(f"{name}({pname}=...): expected {spec[1]}, got {_described(value)}")


def _described(value: Any) -> str:
    """The type of ``value`` as a message names it: a sequence names its first element of another type than the
    others' (``list with int at [2]``), a string its value when short (``str 'xml'``)."""
    if isinstance(value, str):
        return f"str {value!r}" if len(value) <= 40 else "str"
    if isinstance(value, (list, tuple)):
        odd = next(((i, x) for i, x in enumerate(value) if not isinstance(x, (str, os.PathLike))), None)
        if odd is not None and len(value) > 1:
            return f"{type(value).__name__} with {type(odd[1]).__name__} at [{odd[0]}]"
    return type(value).__name__


def public(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` served as the top-level ``mtp_audit.<name>``: arguments checked (:func:`check_call`), then run as
    one run (:func:`mtp_audit.sources.bounded.run_budget`)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        check_call(name, fn, args, kwargs)
        # in a copy of the caller's context: the run's context variables never replace the host's own
        # context mapping (an object a host may have frozen with gc.freeze())
        return contextvars.copy_context().run(_run, name, fn, args, kwargs)

    return call


def _run(name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    from mtp_audit.sources.bounded import run_budget

    with run_budget():
        args, kwargs = with_release(name, fn, args, kwargs)
        return fn(*args, **kwargs)
