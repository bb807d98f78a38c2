"""YAML files people pass to an engine (TensorRT-LLM's ``--config``): read bounded, parsed with PyYAML's ``safe_load``
constructors only (a YAML is data: no Python tags, no object construction), with bounds that hold before anything is
built and a document that is plain JSON data afterwards.

The bounds, in the order they are checked:

- the file's bytes (:data:`MAX_YAML_BYTES`);
- the parser's events, aliases and nesting depth (:data:`MAX_YAML_EVENTS`, :data:`MAX_YAML_ALIASES`,
  :data:`MAX_YAML_DEPTH`), counted on PyYAML's own event stream before composing: the stream is lazy, so the
  scanner stops within its simple-key lookahead (1,024 characters) of the bound; its work at depth ``d`` costs
  ``d`` per token (the open simple keys of every flow level), so a document of 30,000 nested ``[`` took 53 s before
  the recursion limit refused it, and now stops at depth 101 in a fraction of a second;
- the size the document has once every alias is written out (:data:`MAX_YAML_EXPANDED_NODES`,
  :data:`MAX_YAML_EXPANDED_CHARS`), counted on the composed node graph with each shared node measured once, so a
  "billion laughs" file of a few hundred bytes (80 aliases, 10^8 items once expanded) is refused before a Python
  object is built; an alias inside its own anchor (a recursive document) is refused there too;
- integer scalars longer than :data:`MAX_YAML_INT_CHARS` characters (decimal, hex, octal, binary or base 60), refused
  before ``int()`` sees them: CPython refuses to format integers of more than 4,300 decimal digits, and base-60 or
  hex text of a megabyte builds integers whose formatting is quadratic.

After construction every value is one JSON can hold (:func:`as_json_data`): timestamps and ``!!binary`` keep the text
the file has, ``!!set`` is the list of its members in document order, ``!!omap`` / ``!!pairs`` lists of
``[key, value]`` pairs, non-string keys the JSON text of the key; two keys that become one text are refused.
Floats stay floats (``.nan`` and ``.inf`` included: the report writers turn them into strict JSON).
"""

from __future__ import annotations

import datetime
import functools
from pathlib import Path
from typing import Any

from mtp_audit.errors import InputError
from mtp_audit.sources.bounded import read_bytes_bounded

#: Largest YAML file read (engine option files are a few KB).
MAX_YAML_BYTES = 1 << 20
#: Most parser events (scalars, collections) and aliases accepted in one document.
MAX_YAML_EVENTS = 100_000
MAX_YAML_ALIASES = 100
#: Deepest nesting of collections accepted (engine option files and deployment manifests nest a few levels, about
#: 20 at most; composing recurses once per level, under Python's recursion limit of 1,000 frames).
MAX_YAML_DEPTH = 100
#: Most nodes (scalars and collections) and scalar characters the document may have once its aliases are expanded:
#: twice the event bound, and eight times the byte bound (a few aliases of a real anchor stay far below both).
MAX_YAML_EXPANDED_NODES = 2 * MAX_YAML_EVENTS
MAX_YAML_EXPANDED_CHARS = 8 * MAX_YAML_BYTES
#: Longest integer scalar (characters as written, sign and base prefix included) accepted.
MAX_YAML_INT_CHARS = 100

_INT_TAG = "tag:yaml.org,2002:int"


def read_yaml_bounded(path: Path, *, display: str | None = None) -> Any:
    """Parse one YAML file with PyYAML's safe constructors after bounding its size, events, aliases, expanded size
    and integer lengths; return it as JSON data (:func:`as_json_data`).

    Returns the document (``None`` for an empty file): dicts with ``str`` keys, lists, ``str``, ``int`` (at most
    :data:`MAX_YAML_INT_CHARS` characters as written), ``float`` (NaN and the infinities possible), ``bool``, ``None``.

    Raises:
        InputError: unreadable, over :data:`MAX_YAML_BYTES`, not UTF-8, not YAML, several documents, more events,
            aliases, nesting levels or expanded nodes / characters than the bounds, a recursive alias, an over-long integer, or two
            keys of one mapping that are the same text (the message names the file and the problem).
    """
    import yaml

    name = display or str(path)
    raw = read_bytes_bounded(path, MAX_YAML_BYTES, display=name)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(name, f"not UTF-8 (byte {exc.start})") from None
    try:
        _check_events(text, name)
        return as_json_data(_compose_and_build(text, name), name)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(name, f"invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise InputError(name, "invalid YAML: nested too deeply") from None


def _check_events(text: str, name: str, *, single: bool = True) -> None:
    """Count the parser's events, aliases and nesting depth before anything is built (the event stream is lazy:
    counting stops the scanner near the first event over a bound).

    Raises:
        InputError: over a bound (the depth one with the line and column where it is passed), or (``single``) more
            than one document.
    """
    import yaml

    events = aliases = documents = depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        events += 1
        aliases += isinstance(event, yaml.AliasEvent)
        documents += isinstance(event, yaml.DocumentStartEvent)
        depth += isinstance(event, yaml.CollectionStartEvent) - isinstance(event, yaml.CollectionEndEvent)
        if events > MAX_YAML_EVENTS or aliases > MAX_YAML_ALIASES:
            raise InputError(name, f"YAML over the bounds ({MAX_YAML_EVENTS} events, {MAX_YAML_ALIASES} aliases)")
        if depth > MAX_YAML_DEPTH:
            mark = event.start_mark
            where = f" (at line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            raise InputError(name, f"YAML nested deeper than {MAX_YAML_DEPTH} levels{where}")
    if single and documents > 1:
        raise InputError(name, f"{documents} YAML documents in one file; trtllm-serve reads one")


def compose_documents_bounded(text: str, name: str, *, check_ints: bool = False) -> list[Any]:
    """The composed node graph of every document of a YAML text (``yaml.Node`` objects with their line marks; no
    Python object is built), after the event, alias and depth bounds (:func:`_check_events`, any number of
    documents) and, per document, the expanded-size and recursive-alias checks of :func:`check_nodes` (integer
    lengths too with ``check_ints``). Empty documents are left out. For readers that need where a value is written
    (``mtp-audit hook launch``); walking a returned graph may meet a node more than once (aliases), never in a cycle.

    Raises:
        InputError: over a bound, or a recursive alias (the message names ``name`` and the problem).
        yaml.YAMLError: the text is not YAML (its ``problem_mark`` says where).
    """
    import yaml

    _check_events(text, name, single=False)
    loader = yaml.SafeLoader(text)
    try:
        nodes = []
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                check_nodes(node, name, check_ints=check_ints)
                nodes.append(node)
        return nodes
    except RecursionError:
        raise InputError(name, "invalid YAML: nested too deeply") from None
    finally:
        loader.dispose()


def _compose_and_build(text: str, name: str) -> Any:
    """Compose the node graph, check its expanded size and integers (:func:`check_nodes`), then construct it with
    the safe constructors (timestamps, ``!!binary`` and ``!!set`` as JSON data, see :func:`_loader_class`)."""
    loader = _json_safe_loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_nodes(node, name)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def check_nodes(root: Any, name: str, *, check_ints: bool = True) -> None:
    """Measure the composed YAML node graph ``root`` as it would be with every alias written out, each shared node
    measured once (so the work is linear in the file, not in the expansion).

    Raises:
        InputError: more than :data:`MAX_YAML_EXPANDED_NODES` nodes or :data:`MAX_YAML_EXPANDED_CHARS` scalar
            characters once expanded; an alias used inside its own anchor; an integer scalar longer than
            :data:`MAX_YAML_INT_CHARS` characters (with its line and column; only with ``check_ints``).
    """
    import yaml

    sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes, scalar characters) once expanded
    open_: set[int] = set()  # collections being measured: meeting one again is a recursive alias

    def measure(node: Any) -> tuple[int, int]:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if isinstance(node, yaml.ScalarNode):
            if check_ints:
                _check_int(node, name)
            size = (1, len(node.value))
        else:
            if key in open_:
                raise InputError(name, f"a recursive alias at {_where(node)}: the anchor is used inside itself, and an "
                                 "engine's options cannot be a recursive document")
            open_.add(key)
            size = _sum(measure(k) for k in _children(node))
            size = (size[0] + 1, size[1])
            open_.discard(key)
        if size[0] > MAX_YAML_EXPANDED_NODES or size[1] > MAX_YAML_EXPANDED_CHARS:
            raise InputError(name, f"YAML over the bounds once its aliases are expanded (at {_where(node)}: at least "
                             f"{size[0]:,} nodes, {size[1]:,} characters; bounds {MAX_YAML_EXPANDED_NODES:,} nodes, "
                             f"{MAX_YAML_EXPANDED_CHARS:,} characters)")
        sizes[key] = size
        return size

    measure(root)


def _children(node: Any) -> list[Any]:
    """The child nodes of a sequence node, or the keys and values of a mapping node."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value)


def _sum(sizes: Any) -> tuple[int, int]:
    nodes = chars = 0
    for n, c in sizes:
        nodes, chars = nodes + n, chars + c
        if nodes > MAX_YAML_EXPANDED_NODES or chars > MAX_YAML_EXPANDED_CHARS:
            break  # over already: the caller refuses; summing further members could take as long as the expansion
    return nodes, chars


def _check_int(node: Any, name: str) -> None:
    """Refuse an integer scalar longer than :data:`MAX_YAML_INT_CHARS` characters before ``int()`` sees it."""
    if node.tag == _INT_TAG and len(node.value) > MAX_YAML_INT_CHARS:
        raise InputError(name, f"an integer of {len(node.value):,} characters at {_where(node)}: over the bound of "
                         f"{MAX_YAML_INT_CHARS} (no engine option takes one)")


def _where(node: Any) -> str:
    mark = node.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _loader_class() -> type:
    """``yaml.SafeLoader`` with the timestamp, ``!!binary`` and ``!!set`` constructors replaced by ones that build
    JSON data: the scalar's text (``2024-01-01``; the base64 text without its line breaks), and the set's members as
    a list in document order."""
    import yaml

    class JsonSafeLoader(yaml.SafeLoader):
        """See :func:`_loader_class`."""

    def text_of(loader: Any, node: Any) -> str:
        return str(loader.construct_scalar(node))

    def binary_text(loader: Any, node: Any) -> str:
        return "".join(str(loader.construct_scalar(node)).split())

    def set_members(loader: Any, node: Any) -> Any:
        members: list[Any] = []
        yield members
        members.extend(loader.construct_object(k) for k, _ in node.value)

    JsonSafeLoader.add_constructor("tag:yaml.org,2002:timestamp", text_of)
    JsonSafeLoader.add_constructor("tag:yaml.org,2002:binary", binary_text)
    JsonSafeLoader.add_constructor("tag:yaml.org,2002:set", set_members)
    return JsonSafeLoader


@functools.lru_cache(maxsize=1)
def _json_safe_loader() -> type:
    """The loader class of :func:`_loader_class`, built once on first use (PyYAML is imported only when a YAML is read)."""
    return _loader_class()


def as_json_data(value: Any, name: str) -> Any:
    """A YAML value rebuilt as JSON data: dicts with ``str`` keys, lists (tuples and ``!!pairs`` too), scalars.
    A non-string key becomes its JSON text (``1`` -> ``"1"``, ``true`` -> ``"true"``, ``null`` -> ``"null"``); a
    date or ``datetime`` the ISO text. Shared values (aliases) are copied, so the result is a tree; its size is
    bounded by :func:`check_nodes`.

    Raises:
        InputError: two keys of one mapping are the same text once converted (``1`` and ``"1"``), or a value of a type
            JSON has no form for (PyYAML's safe constructors build none other).
    """
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        given: dict[str, Any] = {}
        for key, item in value.items():
            text = _key_text(key, name)
            if text in out:
                raise InputError(name, f"the keys {given[text]!r} and {key!r} of one mapping are the same text once "
                                 "written as JSON")
            out[text], given[text] = as_json_data(item, name), key
        return out
    if isinstance(value, (list, tuple)):
        return [as_json_data(v, name) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    raise InputError(name, f"a YAML value of type {type(value).__name__} has no JSON form")


def _key_text(key: Any, name: str) -> str:
    """A mapping key as text: itself for a string, the JSON text for a scalar, the ISO text for a date."""
    import json

    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)  # NaN -> "NaN", infinities -> "Infinity": text, never a number
    if isinstance(key, (datetime.date, datetime.datetime)):
        return key.isoformat()
    if isinstance(key, tuple):
        return json.dumps([_key_text(k, name) for k in key])
    raise InputError(name, f"a mapping key of type {type(key).__name__} has no JSON form")
