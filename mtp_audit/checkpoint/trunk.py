"""The trunk's linear formats counted per *class* of modules instead of module by module.

With shard headers, :func:`mtp_audit.checkpoint.accounting.linear_formats` decides each trunk module from its
parameter suffixes, its weight's dtype and rank and its leaf name (46k modules in DeepSeek-V3, built from 92k
tensors with a Python step each). A quantized trunk is mostly modules of one kind, whose format follows from a
suffix alone (``weight_scale_inv`` = FP8 block, ``weight_scale_2`` = NVFP4, ``qweight``, ``weight_packed``). The
census takes those at once and decides them once: from the joined names text when it can
(:func:`_anchored_in_text`: one regex over the reversed text removes every block of consecutive lines
``X.weight``, ``X.weight_scale_inv``; no Python step, list item or string per name), else from the name list
(:func:`_anchored`: one ``str.endswith`` pass, companion tensors proven by position and one list comparison). The
other names (norms, routers, unquantized layers) are split with ``map`` over ``str.rpartition`` and partitioned by
suffix set with set algebra; only the classes whose format depends on each module's weight dtype, rank or leaf name
are looked at per module, through ``Counter`` over ``zip``, the dtypes and ranks of the projection-named ones read
from the shard headers' columns (:func:`_dtypes_ranks`).

The census certifies or declines, like the safetensors fast header reader: it answers only when its counts are
the ones ``linear_formats`` gives, and returns ``None`` (the caller then builds every module) when no such bulk
exists (a BF16 or per-tensor-scaled trunk: splitting every name at C speed measured no faster than building the
modules), a tensor has no header, the bulk's modules are not alike or not side by side, a module's last name
component is a number (``linear_formats`` memoises per last component), a module holds both MTP and trunk
tensors, or a format depends on a per-module declaration.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Callable, Mapping
from itertools import compress, filterfalse, repeat
from operator import add, and_, itemgetter, not_, sub
from typing import Any

from mtp_audit.checkpoint.tensors import PARAM_SUFFIXES, SCALE_SUFFIXES, is_linear_leaf
from mtp_audit.sources.local import TensorColumns, TensorInfo

_FIRST, _LAST = itemgetter(0), itemgetter(2)
_DTYPE, _SHAPE = itemgetter(1), itemgetter(2)
_ANY_INFO = TensorInfo("", "BF16", (1, 1), 0)  # stands for a header entry whose dtype and shape do not matter
_BY_NAME = frozenset({"weight_packed", "qweight", "weight_scale_2", "weight_scale_inv"})
_ANCHORS = ("weight_packed", "qweight", "weight_scale_2", "weight_scale_inv")  # module_format's order

#: ``(tensor -> shard, shard -> header)``: where each tensor's header entry is (see :func:`census`).
Shards = tuple[Mapping[str, str], Mapping[str, Any]]

#: ``decide(module name, params)`` -> ``(format, inferred)``, ``False`` (not a linear layer), or ``None`` when the
#: format depends on the module's own declaration (then the census declines).
Decide = Callable[[str, Mapping[str, Any]], "tuple[str, bool] | bool | None"]


def census(tensors: Mapping[str, Any], infos: Mapping[str, TensorInfo], mtp: Mapping[str, Any],
           mtp_modules: Mapping[str, Any], ends_with: Callable[[str], bool], decide: Decide,
           joined: str | None = None, shards: Shards | None = None) -> Counter[tuple[str, bool]] | None:
    """Trunk linear modules per ``(format, inferred)``, as ``Counter(linear_formats(facts, trunk).values())``.

    Args:
        tensors: every tensor name (index and headers) -> shard.
        infos: tensor name -> header info; the census needs one for every tensor.
        mtp: the MTP tensors (left out of the trunk).
        mtp_modules: the MTP modules (a trunk tensor inside one makes the census decline).
        ends_with: whether some tensor name ends with ``"." + suffix`` (``CheckpointFacts.name_ends_with``: never a
            false ``False``).
        decide: how one module is decided (see :data:`Decide`).
        joined: every name of ``tensors`` in order, each followed by a newline, when no name holds a newline
            (``CheckpointFacts.joined_names``): the bulk is then taken from this text (:func:`_anchored_in_text`);
            ``None`` (or a layout that text pass does not take) leaves it to the name-list passes of :func:`_anchored`.
        shards: ``(tensor -> shard, shard -> header)`` when ``infos[name]`` is the entry of ``name`` in the header of
            the shard it maps to (``HeaderInfos``): the few dtypes and ranks the census reads come from those headers'
            columns (:func:`_dtypes_ranks`).

    Returns:
        The counts, or ``None`` when the census cannot certify them (see the module docstring).
    """
    if len(infos) != len(tensors):
        return None
    group = _anchored_in_text(joined, tensors, mtp, mtp_modules) if joined else None
    if group is None:
        group = _anchored(tensors, list(tensors), mtp, mtp_modules, ends_with)
    if group is None:
        return None  # no bulk to take at once: splitting every name costs what building the modules does
    params, n_modules, rest, dotted = group
    if _dtype_decides(params):
        return None
    got = decide("m", dict.fromkeys(params, _ANY_INFO))
    classes = _classes(rest, tensors, mtp, mtp_modules, dotted)
    if got is None or classes is None:  # another tensor of an anchored module, or a per-module declaration
        return None
    out: Counter[tuple[str, bool]] = Counter({got: n_modules} if isinstance(got, tuple) else {})
    table, split = classes
    for params, members in table.items():
        counts = _class_counts(params, members, split, infos, shards, decide)
        if counts is None:
            return None
        out.update(counts)
    return out


def _anchored(tensors: Mapping[str, Any], names: list[str], mtp: Mapping[str, Any], mtp_modules: Mapping[str, Any],
              ends_with: Callable[[str], bool]) -> tuple[frozenset[str], int, list[str], str] | None:
    """The bulk of a quantized trunk in a few C-speed passes: the trunk modules holding the first suffix of
    :data:`_ANCHORS` that occurs, when every one of them holds the suffixes the first one holds, each at the same
    distance from its anchor tensor in ``names`` (``x.weight`` just before ``x.weight_scale_inv`` in a sorted index;
    the names are compared, never hashed, and no module name is built). ``(their suffix set, how many, every other
    trunk name, "." + anchor)``; ``None`` when no anchor occurs or the layout differs (the census then declines). Whether
    another trunk tensor (an extra suffix) falls into one of these modules is checked by the caller
    (:func:`_classes`)."""
    anchor = next((a for a in _ANCHORS if ends_with(a)), None)
    if anchor is None:
        return None
    dotted = "." + anchor
    idx = list(compress(range(len(names)), map(str.endswith, names, repeat(dotted))))
    if mtp:
        own = {n for n in mtp if n.endswith(dotted)}  # a few hundred: cheaper lookups than in every MTP name
        idx = list(compress(idx, map(not_, map(own.__contains__, map(names.__getitem__, idx)))))
    anchors = list(map(names.__getitem__, idx))
    if not anchors or dotted in anchors or _anchor_in_mtp_module(tensors, mtp, mtp_modules, dotted):
        return None  # (dotted in anchors: a name that is the suffix alone, whose module would be "")
    first = anchors[0][: -len(dotted)]
    params = {anchor}
    keep = bytearray(b"\x01") * len(names)
    deque(map(keep.__setitem__, idx, repeat(0)), maxlen=0)
    for param in PARAM_SUFFIXES - params:
        if first + "." + param in tensors:
            at = _companions(names, idx, anchors, dotted, "." + param)
            if at is None:  # (no MTP tensor among them: its module would be an MTP module, refused above)
                return None
            deque(map(keep.__setitem__, at, repeat(0)), maxlen=0)
            params.add(param)
    rest = list(compress(names, keep))
    return frozenset(params), len(anchors), list(filterfalse(mtp.__contains__, rest)) if mtp else rest, dotted


_HEAD = 1 << 16  # where the text pass looks for a first anchor: a quantized trunk's first linear is near the top


def _anchored_in_text(joined: str, tensors: Mapping[str, Any], mtp: Mapping[str, Any], mtp_modules: Mapping[str, Any]
                      ) -> tuple[frozenset[str], int, list[str], str] | None:
    """What :func:`_anchored` answers, from ``joined`` (every name followed by a newline, no name holding one) with
    no Python step and no list item per name; ``None`` where this pass cannot prove it (then :func:`_anchored` runs).

    The first anchor line in the text (the first :data:`_ANCHORS` suffix found in its first :data:`_HEAD`
    characters) gives a module ``X``, its parameter suffixes (``X.p`` in ``tensors``) and the order of the block of
    consecutive lines they form there (``X.weight``, ``X.weight_scale_inv``). One regex over the reversed text
    removes every such block of one module (:func:`_without_blocks`). The answer is exact because every line is
    then either in a removed block, whose suffixes are known, or in the short remainder, which is read name by name:

    - no anchor line is left: every name ending with the anchor is in a block, so the modules holding the anchor are
      exactly the blocks' modules, each holding the block's suffixes (a further tensor of such a module is in the
      remainder, where :func:`_classes` refuses it, as after :func:`_anchored`);
    - no earlier suffix of :data:`_ANCHORS` is in the block or ends a remaining line: no name ends with it, so the
      anchor is the one :func:`_anchored` takes (the first whose ``ends_with`` is true);
    - no MTP module holds a trunk anchor (:func:`_anchored`'s own test), so no trunk anchor's block holds an MTP
      tensor; and the removed MTP tensors number the MTP anchors times the block's size, so each MTP anchor's block
      holds MTP tensors only. The blocks less the MTP anchors' are then :func:`_anchored`'s modules, and its "every
      other name" the remaining trunk names.
    """
    anchor = next((a for a in _ANCHORS if joined.find("." + a + "\n", 0, _HEAD) >= 0), None)
    if anchor is None:
        return None
    dotted = "." + anchor
    block = _first_block(joined, tensors, dotted)
    if block is None:
        return None
    left, lines = _without_blocks(joined, block)
    if "\n" + dotted[::-1] in left or any(a in block or "\n" + a[::-1] + "." in left
                                          for a in _ANCHORS[: _ANCHORS.index(anchor)]):
        return None  # a name ending with the anchor outside a block, or an earlier anchor: left to _anchored
    rest = left[::-1].split("\n")
    rest.pop()  # the text ends with a newline: the last piece is empty
    blocks, odd = divmod(len(tensors) - lines, len(block))
    if mtp:
        trunk_rest = list(filterfalse(mtp.__contains__, rest))
        mtp_anchors = sum(map(str.endswith, mtp, repeat(dotted)))
        if len(rest) - len(trunk_rest) != len(mtp) - mtp_anchors * len(block) or _anchor_in_mtp_module(tensors, mtp, mtp_modules, dotted):
            return None
        rest, blocks = trunk_rest, blocks - mtp_anchors
    if odd or not blocks:  # (odd cannot be: every block is len(block) whole lines; kept as a guard)
        return None
    return frozenset(block), blocks, rest, dotted


def _first_block(joined: str, tensors: Mapping[str, Any], dotted: str) -> list[str] | None:
    """The parameter suffixes of the module of the first line ending with ``dotted`` (``"." + anchor``), in the
    order of the consecutive lines they fill there; ``None`` when that module is ``""`` or its tensors are not side
    by side."""
    at = joined.find(dotted + "\n")
    start = joined.rfind("\n", 0, at) + 1
    module = joined[start:at]
    if not module:
        return None
    want = {module + "." + p for p in PARAM_SUFFIXES} & tensors.keys()
    size = len(want)
    lo, hi = start, at  # widened to the (size - 1) lines before the anchor's line and after it
    for _ in range(size - 1):
        lo = joined.rfind("\n", 0, lo - 1) + 1 if lo else 0
    for _ in range(size):
        end = joined.find("\n", hi + 1)
        if end < 0:
            break
        hi = end
    lines = joined[lo:hi].split("\n")
    for i in range(len(lines) - size + 1):
        if set(lines[i : i + size]) == want:
            return [line[len(module) + 1 :] for line in lines[i : i + size]]
    return None


def _without_blocks(joined: str, block: list[str]) -> tuple[str, int]:
    """``joined`` reversed, less every block (one module's lines ``module + "." + p`` for ``p`` in ``block``, in
    that order), and how many lines are left. Reversed, every line follows a newline and a block begins with its
    last suffix: a literal prefix, so the regex engine jumps from block to block (a run of blocks is one match); the
    module is captured once and compared with a backreference on each further line, each line matched whole."""
    first, *others = [re.escape(p[::-1]) for p in reversed(block)]
    one = "\n" + first + r"\.([^\n]++)" + "".join("\n" + p + r"\.\1" for p in others) + r"(?![^\n])"
    left = re.sub("(?:" + one + ")++", "", joined[::-1])
    return left, left.count("\n")


def _anchor_in_mtp_module(tensors: Mapping[str, Any], mtp: Mapping[str, Any], mtp_modules: Mapping[str, Any],
                          dotted: str) -> bool:
    """Whether some MTP module ``m`` has a trunk tensor ``m + dotted`` (then the census declines)."""
    return any(m + dotted in tensors and m + dotted not in mtp for m in mtp_modules)


def _companions(names: list[str], idx: list[int], anchors: list[str], dotted: str, param: str) -> list[int] | None:
    """Positions of each anchor's module + ``param`` in ``names`` (the module being the anchor ``names[idx[j]]``
    without its suffix ``dotted``), each at the same distance from its anchor as the first one's (within 32 places);
    ``None`` when they are not all there. Compared without building a name when ``param`` begins ``dotted``'s
    suffix (``.weight`` of ``.weight_scale_inv``: the companion is then a prefix of its anchor, of known length)."""
    cut = len(dotted)
    first = anchors[0][:-cut] + param
    try:
        offset = names.index(first, max(idx[0] - 32, 0), idx[0] + 33) - idx[0]
    except ValueError:
        return None
    at = list(map(add, idx, repeat(offset)))
    if at[-1] >= len(names):
        return None
    found = list(map(names.__getitem__, at))
    if dotted.startswith(param):
        same = all(map(str.startswith, anchors, found)) and set(map(sub, map(len, anchors), map(len, found))) == {cut - len(param)}
    else:
        same = found == list(map(add, map(itemgetter(slice(None, -cut)), anchors), repeat(param)))
    return at if same else None


_Split = tuple[list[str], list[str], list[str]]  # names, their modules, their parameter suffixes


def _classes(names: list[str], tensors: Mapping[str, Any], mtp: Mapping[str, Any], mtp_modules: Mapping[str, Any],
             anchored: str) -> tuple[dict[frozenset[str], set[str]], _Split] | None:
    """Trunk modules of ``names`` (trunk tensors only) partitioned by their set of parameter suffixes (split as
    ``tensors.split_param`` splits a name), with the split itself; ``None`` when one of these tensors would fall
    into an MTP module, or into a module taken by :func:`_anchored` (one whose ``module + anchored`` is a trunk
    tensor)."""
    parts = list(map(str.rpartition, names, repeat(".")))
    mods = list(map(_FIRST, parts))
    params = list(map(_LAST, parts))
    del parts
    odd = set(params) - PARAM_SUFFIXES
    if odd or "" in mods:  # not a parameter suffix, or no dot: the whole name is the module, its suffix ""
        flags = map(_is_odd, params, mods) if "" in mods else map(odd.__contains__, params)
        for i in list(compress(range(len(names)), flags)):
            mods[i], params[i] = names[i], ""
    if mtp_modules and any(map(mtp_modules.__contains__, mods)):
        return None
    universe = set(mods).difference(mtp_modules)
    if any(m + anchored in tensors and m + anchored not in mtp for m in universe):
        return None
    classes: dict[frozenset[str], set[str]] = {frozenset(): universe}
    for suffix in set(params):
        having = set(compress(mods, map(suffix.__eq__, params)))
        split: dict[frozenset[str], set[str]] = {}
        for key, members in classes.items():
            inside = members & having
            if inside:
                split[key | {suffix}] = inside
            if len(inside) < len(members):
                split[key] = members - inside
        classes = split
    classes.pop(frozenset(), None)
    return classes, (names, mods, params)


def _dtype_decides(params: frozenset[str]) -> bool:
    """Whether the format of modules with these suffixes depends on a header dtype the census does not read: a
    ``weight_packed`` without ``weight_global_scale`` is MXFP4 when declared so and stored ``U8``, else INT4/INT8
    (:func:`tensors.module_format`); the census then declines and every module is decided on its own."""
    return "weight_packed" in params and "weight_global_scale" not in params


def _is_odd(param: str, module: str) -> bool:
    """Whether a name split into ``(module, param)`` is its own module (see :func:`tensors.split_param`)."""
    return not module or param not in PARAM_SUFFIXES


def _class_counts(params: frozenset[str], members: set[str], split: _Split, infos: Mapping[str, TensorInfo],
                  shards: Shards | None, decide: Decide) -> Counter[tuple[str, bool]] | None:
    """``(format, inferred)`` counts of one class of modules sharing the suffix set ``params`` (see
    :func:`tensors.is_linear` and :func:`tensors.module_format` for what each answer depends on)."""
    scaled = len(params) > 1 and bool(params & SCALE_SUFFIXES or "qweight" in params or "weight_packed" in params)
    if not scaled and "weight" not in params:
        return Counter()  # not a linear layer
    if _dtype_decides(params):
        return None
    if scaled and (params & _BY_NAME or {"scales", "biases"} <= params):
        got = decide("m", dict.fromkeys(params, _ANY_INFO))  # the suffixes decide; every header entry is there
        return None if got is None else Counter({got: len(members)}) if isinstance(got, tuple) else Counter()
    names, mods, suffixes = split
    if "weight" in params:  # each member's own "weight" name (already hashed: no name is built)
        mask = list(map(and_, map(members.__contains__, mods), map("weight".__eq__, suffixes)))
        weights = list(compress(names, mask))
        leaves = list(map(_LAST, map(str.rpartition, compress(mods, mask), repeat("."))))
    else:
        leaves = list(map(_LAST, map(str.rpartition, members, repeat("."))))
    if any(map(str.isdigit, set(leaves))):
        return None  # linear_formats memoises per last component: "a.fc.0" and "b.norm.0" share one answer
    if "weight" in params:
        if not scaled:  # a leaf that names no projection is no linear layer, whatever its weight (tensors.is_linear
            # returns before reading it): only the projections' dtypes and ranks are read (none of the norms')
            linear = set(filter(is_linear_leaf, set(leaves)))
            if len(linear) < len(set(leaves)):
                keep = list(map(linear.__contains__, leaves))
                weights, leaves = list(compress(weights, keep)), list(compress(leaves, keep))
        dtypes, ranks = _dtypes_ranks(weights, infos, shards)
        keys: Counter[tuple[Any, ...]] = Counter(zip(leaves, dtypes, ranks))
    else:
        keys = Counter(zip(leaves))
    out: Counter[tuple[str, bool]] = Counter()
    for key, n in keys.items():
        rep: dict[str, Any] = dict.fromkeys(params)
        if len(key) > 1:
            rep["weight"] = TensorInfo("", key[1], (1,) * key[2], 0)
        got = decide("m." + key[0], rep)
        if got is None:
            return None
        if isinstance(got, tuple):  # False: not a linear layer
            out[got] += n
    return out


_FEW = 8  # up to this many names in one header, a list.index each beats one membership pass over the header


def _dtypes_ranks(names: list[str], infos: Mapping[str, TensorInfo], shards: Shards | None
                  ) -> tuple[list[str], list[int]]:
    """Each name's header dtype and rank (``len(shape)``). With ``shards``, read from the columns of the header that
    holds it (:class:`TensorColumns`: a ``list.index`` per name, or one membership pass over the header's names
    for more than :data:`_FEW`; :func:`fast_header` certified that no name occurs twice in a header) instead of
    ``infos[name]``, whose first lookup in a header builds that header's name -> position map: the few hundred norms
    and routers of a trunk sit in most shards, so that built maps for ~60k names to read a few hundred."""
    if shards is None:
        got = list(map(infos.__getitem__, names))
        return list(map(_DTYPE, got)), list(map(len, map(_SHAPE, got)))
    shard_of, headers = shards
    where: dict[str, dict[str, int]] = {}
    for i, name in enumerate(names):
        where.setdefault(shard_of[name], {})[name] = i
    dtypes: list[Any] = [None] * len(names)
    ranks = [0] * len(names)
    for shard, want in where.items():
        cols = headers[shard].tensors
        if isinstance(cols, TensorColumns):
            held = cols.names
            at: list[int] | None = None
            if len(want) <= _FEW:  # list.index: a C-speed scan that stops at the name (a header holds no name twice)
                try:
                    at = list(map(held.index, want))
                except ValueError:  # not in this header (cannot be with HeaderInfos): the pass below skips it
                    pass
            if at is None:
                at = list(compress(range(len(held)), map(want.__contains__, held)))
            for i, j in zip(map(want.__getitem__, map(held.__getitem__, at)), at):
                dtypes[i], ranks[i] = cols.dtypes[j], len(cols.shapes[j])
    for i in [i for i, d in enumerate(dtypes) if d is None]:  # a header kept as a dict (the strict reader's)
        info = infos[names[i]]
        dtypes[i], ranks[i] = info.dtype, len(info.shape)
    return dtypes, ranks
