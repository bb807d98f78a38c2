"""Whether the shard headers match the index (:func:`mtp_audit.checkpoint.facts._headers_match`): its run shortcut
(:func:`~mtp_audit.checkpoint.facts._runs_match`, an index written shard by shard, compared run by run) must give
exactly the answer of the per-name lookups it shortcuts (every header tensor indexed to its own shard, the header sizes
summing to the index's), on generated headers and indexes in every order and with every kind of disagreement."""

from __future__ import annotations

import random
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from mtp_audit.checkpoint.facts import CheckpointFacts, _headers_match, _runs_match
from mtp_audit.sources.local import ShardHeader, TensorColumns, TensorInfo


def _header(rel: str, names: list[str], columns: bool | str) -> ShardHeader:
    """A header holding ``names``: as per-shard columns (``"text"``: the names kept as one text, as the fast reader
    keeps them; ``True``: as a list), or as the strict reader's dict (``False``)."""
    n = len(names)
    if columns == "text":
        return ShardHeader(file=rel, tensors=TensorColumns(None, ["BF16"] * n, [[1]] * n, None, "\n".join(names)))
    if columns:
        return ShardHeader(file=rel, tensors=TensorColumns(list(names), ["BF16"] * n, [[1]] * n, [2] * n))
    return ShardHeader(file=rel, tensors={n: TensorInfo(n, "BF16", (1,), 2) for n in names})


def _reference(headers: Mapping[str, ShardHeader], wm: Mapping[str, str]) -> bool:
    """The answer by lookups alone: as many header tensors as indexed ones, each indexed to its own shard."""
    return sum(len(h.tensors) for h in headers.values()) == len(wm) and all(
        wm.get(name) == rel for rel, h in headers.items() for name in h.tensors)


def _facts(headers: dict[str, ShardHeader], wm: dict[str, str]) -> CheckpointFacts:
    facts = CheckpointFacts(display="x", mode="shards", files=(), shards_present=tuple(headers))
    facts.headers, facts.weight_map = headers, wm
    return facts


def _answer(headers: dict[str, ShardHeader], wm: dict[str, str]) -> bool:
    facts = _facts(headers, wm)
    got = _headers_match(facts)
    assert facts.cache["headers_match_index"] is got
    return got


def _shards(sizes: list[int]) -> dict[str, list[str]]:
    """Shard file -> tensor names (distinct across shards)."""
    out, k = {}, 0
    for i, n in enumerate(sizes):
        out[f"model-{i + 1:05d}-of-{len(sizes):05d}.safetensors"] = [f"model.layers.{k + j}.w" for j in range(n)]
        k += n
    return out


def _in_runs(shards: dict[str, list[str]], order: list[str]) -> dict[str, str]:
    """The index written shard by shard, in ``order``, each shard's names in its header's order."""
    return {name: rel for rel in order for name in shards[rel]}


def test_an_index_written_shard_by_shard_is_matched_run_by_run() -> None:
    shards = _shards([3, 1, 4])
    for kept in (True, "text"):
        headers = {rel: _header(rel, names, kept) for rel, names in shards.items()}
        for order in (list(shards), list(reversed(shards))):
            wm = _in_runs(shards, order)
            assert _runs_match(headers, wm) is True and _answer(headers, wm) is True
    text = {rel: _header(rel, names, "text") for rel, names in shards.items()}
    assert all(h.tensors._names is None for h in text.values())  # type: ignore[attr-defined]  # compared as texts
    # the same headers read by the strict reader (dicts, not columns)
    dict_headers = {rel: _header(rel, names, False) for rel, names in shards.items()}
    assert _runs_match(dict_headers, _in_runs(shards, list(shards))) is True


def test_an_index_name_holding_a_newline_is_no_match_of_the_text() -> None:
    """A header's text has one newline fewer than names; index names that hold newlines never join to it."""
    rel = "model-00001-of-00001.safetensors"
    headers = {rel: _header(rel, ["a", "b", "c"], "text")}
    for wm in ({"a\nb": rel, "c": rel, "d": rel}, {"a": rel, "b\nc": rel, "": rel}, {"a\nb\nc": rel, "x": rel, "y": rel}):
        assert _runs_match(headers, wm) is False and _answer(headers, wm) is False
    # a run whose text is a prefix or an extension of the header's: its last name is cut or longer
    for wm in ({"a": rel, "b": rel, "": rel}, {"a": rel, "b": rel, "c.weight": rel}):
        assert _runs_match(headers, wm) is False and _answer(headers, wm) is False
    cut = {rel: _header(rel, ["a.weight_scale"], "text")}
    assert _runs_match(cut, {"a.weight": rel}) is False and _answer(cut, {"a.weight": rel}) is False


def test_runs_that_do_not_show_a_match_leave_it_to_the_lookups() -> None:
    """Each case: the run shortcut does not answer True, and the final answer is the lookups'."""
    shards = _shards([3, 2])
    a, b = shards
    headers = {rel: _header(rel, names, "text") for rel, names in shards.items()}
    interleaved = {shards[a][0]: a, shards[b][0]: b, shards[a][1]: a, shards[b][1]: b, shards[a][2]: a}
    cases = {
        # a run's middle name indexed to the other shard (the run's names are right, one shard value is not)
        "value in run": ({**_in_runs(shards, [a, b]), "model.layers.1.w": b}, False),
        # a header's names in another order than the index's: still a match, found by the lookups
        "order within run": ({n: a for n in reversed(shards[a])} | {n: b for n in shards[b]}, True),
        # an index entry naming a tensor no header holds, one header tensor left out
        "renamed": ({**{k: v for k, v in _in_runs(shards, [a, b]).items() if k != "model.layers.4.w"},
                     "model.layers.9.w": b}, False),
        # a shard the headers do not have
        "unknown shard": ({**_in_runs(shards, [a, b]), "model.layers.4.w": "other.safetensors"}, False),
        # an index whose shards interleave (sorted by name, when each shard holds a part of every layer)
        "interleaved": (interleaved, True),
    }
    for what, (wm, want) in cases.items():
        assert _runs_match(headers, wm) is False, what
        assert _reference(headers, wm) is want and _answer(headers, wm) is want, what


def test_a_run_longer_or_shorter_than_its_header_is_no_match() -> None:
    shards = _shards([2, 2])
    a, b = shards
    headers = {rel: _header(rel, names, True) for rel, names in shards.items()}
    # the first shard's header holds one name fewer than its run: the run's last name is indexed to it, held by b
    short = {a: _header(a, shards[a][:1], True), b: _header(b, shards[a][1:] + shards[b], True)}
    wm = _in_runs(shards, [a, b])
    assert _runs_match(short, wm) is False and _answer(short, wm) is False
    # an empty header and a header whose names run past the index
    empty = {a: _header(a, [], True), b: headers[b]}
    assert _runs_match(empty, _in_runs(shards, [b])) is True and _answer(empty, _in_runs(shards, [b])) is True
    assert _runs_match(headers, {shards[a][0]: a}) is False and _answer(headers, {shards[a][0]: a}) is False


@st.composite
def _checkpoints(draw: st.DrawFn) -> tuple[dict[str, ShardHeader], dict[str, str]]:
    sizes = draw(st.lists(st.integers(0, 5), min_size=1, max_size=6))
    shards = _shards(sizes)
    rng = random.Random(draw(st.integers(0, 2**32)))
    order = list(shards)
    if draw(st.booleans()):
        rng.shuffle(order)
    wm = _in_runs(shards, order)
    names = list(wm)
    kind = draw(st.sampled_from(["none", "sort", "shuffle", "move", "drop", "add", "rename", "swap", "reorder"]))
    if kind == "sort":
        wm = dict(sorted(wm.items()))
    elif kind == "shuffle":
        rng.shuffle(names)
        wm = {n: wm[n] for n in names}
    elif kind == "move" and names:
        wm[rng.choice(names)] = rng.choice(order)
    elif kind == "drop" and names:
        del wm[rng.choice(names)]
    elif kind == "add":
        wm[f"extra.{rng.randrange(9)}"] = rng.choice(order)
    elif kind == "rename" and names:  # another name, or the same name cut short
        n = rng.choice(names)
        new = n[: rng.randrange(len(n))] if rng.random() < 0.5 else "renamed"
        wm = {(new if k == n else k): v for k, v in wm.items()}
    elif kind == "swap" and len(names) > 1:  # two neighbouring names of the index trade places
        i = rng.randrange(len(names) - 1)
        names[i], names[i + 1] = names[i + 1], names[i]
        wm = {n: wm[n] for n in names}
    elif kind == "reorder":  # one header lists its names in another order
        rel = rng.choice(order)
        shards[rel] = list(reversed(shards[rel]))
    columns = draw(st.sampled_from([True, False, "text"]))
    return {rel: _header(rel, shards[rel], columns) for rel in sorted(shards)}, wm


@settings(max_examples=600, deadline=None)
@given(_checkpoints())
def test_the_answer_is_the_lookups_answer(case: tuple[dict[str, ShardHeader], dict[str, str]]) -> None:
    headers, wm = case
    want = _reference(headers, wm)
    if sum(len(h.tensors) for h in headers.values()) == len(wm) and _runs_match(headers, wm):  # as _headers_match asks
        assert want is True
    assert _answer(headers, wm) is want
