"""Checkpoint facts: read ``config.json``, the quantization configs, the index and the shard headers from a
:class:`~mtp_audit.sources.local.CheckpointSource` into one :class:`CheckpointFacts` (:func:`gather`).

Only the ``CheckpointSource`` methods are used, so local folders and the hub look the same. Derived here:
MTP layers declared vs found, MTP tensors total and per layer, the modules they form, and what could not be
examined (gaps). Sources: ``../shared/research/checkpoint_formats.md`` (§1 how to find MTP, §2 layouts,
§4 quantization, §7 failure modes).
"""

from __future__ import annotations

import math
import posixpath
import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, KeysView, Mapping
from dataclasses import dataclass, field
from itertools import chain, compress, groupby, islice, repeat
from operator import countOf, itemgetter
from typing import Any

from mtp_audit.checkpoint.config import (
    ConfigError,
    ModelConfig,
    QuantScheme,
    mlx_scheme,
    parse_config,
    parse_hf_quant_config,
    parse_quantization_config,
)
from mtp_audit.checkpoint.layouts import (
    classify,
)
from mtp_audit.checkpoint.tensors import (
    PARAM_SUFFIXES,
    is_linear_leaf,
)
from mtp_audit.errors import InputError
from mtp_audit.report import Gap
from mtp_audit.report.questions import MTP_HEADS
from mtp_audit.sources.bounded import contained_relpath
from mtp_audit.sources.local import (
    CheckpointSource,
    ReadProblem,
    ShardHeader,
    TensorColumns,
    TensorInfo,
    tensor_infos,
)

ANALYZER = "checkpoint"

# C callables for map()/filter() over tensor names (the per-name work of a 92k-tensor index)
_LAST = itemgetter(2)
_FIRST, _SECOND = itemgetter(0), itemgetter(1)  # an MTP tensor's layer label and layer index
_WEIGHT = ".weight"
_NO_WEIGHT = itemgetter(slice(None, -len(".weight")))


CONFIG = "config.json"


HF_QUANT = "hf_quant_config.json"


INDEX = "model.safetensors.index.json"

#: ``CheckpointFacts.cache`` key of every tensor name's count per last dotted component (:func:`suffix_counts`), kept
#: by the metadata-only trunk count (:func:`_count_trunk`) for :meth:`CheckpointFacts.name_ends_with`.
NAME_SUFFIXES = "name_suffixes"

#: Tensor leaves that exist only in an appended (DeepSeek-style) MTP layer: the embedding/hidden norms, the projection
#: that joins them and the shared head (checkpoint_formats.md §2; vLLM 0.33.0 deepseek_mtp.py:85 ``self.enorm``). MTP014
#: (``mtp_audit.checkpoint.checks.check_misplaced``) looks for them inside trunk layers.
MTP_ONLY_LEAVES = ("enorm", "hnorm", "eh_proj", "shared_head")

#: ``CheckpointFacts.cache`` key of ``(num_hidden_layers, line starts)``: the lines of the joined names holding an MTP-only
#: leaf in a layer below ``num_hidden_layers``, taken by the appended layout's candidate scan
#: (:meth:`CheckpointFacts.mtp_only_leaf_lines`).
MTP_ONLY_LEAF_LINES = "mtp_only_leaf_lines"

#: ``CheckpointFacts.cache`` key of :attr:`CheckpointFacts.mtp_infos`.
MTP_INFOS = "mtp_infos"


def pointer(*parts: str) -> str:
    """RFC 6901 JSON pointer from raw keys (``"~"`` -> ``"~0"``, ``"/"`` -> ``"~1"``); control
    characters are shown as ``\\uXXXX`` so messages stay on one line."""
    return "".join("/" + _printable(p.replace("~", "~0").replace("/", "~1")) for p in parts)


def _printable(text: str) -> str:
    """``text`` with control characters escaped (``"\\n"`` -> ``"\\u000a"``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


@dataclass
class Module:
    """One module (a linear layer, a norm...) assembled from its parameter tensors.

    Attributes:
        name: dotted module path (``"mtp.layers.0.mlp.experts.7.up_proj"``).
        params: parameter suffix -> header info, or None when only the index names it.
        shard: shard file of its main tensor, when known.
    """

    name: str
    params: dict[str, TensorInfo | None] = field(default_factory=dict)
    shard: str | None = None


@dataclass
class CheckpointFacts:
    """Everything the rule checks look at. Built by :func:`gather`; rule checks never read files.

    Attributes:
        display: how the target is named in the report.
        mode: ``"shards"`` (headers read), ``"metadata-only"`` (config + index, no shards),
            ``"config-only"``, ``"single-file"`` or ``"index-file"``.
        files: every file of the source.
        config: parsed ``config.json`` (None when absent).
        schemes: quantization schemes found, primary first (``hf_quant_config.json`` before
            ``config.json#/quantization_config``).
        index_file: the index used, or None.
        index_names: every tensor name in the index, in file order (the keys of its ``weight_map``, not copied).
        weight_map: tensor -> shard for the entries whose path is contained in the folder.
        escaping: ``(tensor, raw_path)`` for weight_map entries that are absolute or leave the folder.
        total_size: ``metadata.total_size`` when it is an integer.
        shards_present: ``.safetensors`` files at the root of the source.
        headers: shard -> header for every shard read successfully.
        problems: shard -> read problem for shards that could not be read.
        tensors: tensor name -> shard (index first, then headers).
        infos: tensor name -> header info (only for tensors whose shard header was read): a :class:`HeaderInfos`
            view over the headers' columns when they match the index, else a dict.
        mtp: MTP tensor name -> (layer label, layer index or None).
        mtp_modules: MTP modules assembled from their tensors.
        trunk_suffixes: metadata-only mode: trunk tensors per parameter suffix (the last name component).
        trunk_linear_weights: metadata-only mode: trunk tensors named ``<module>.<leaf>.weight`` whose leaf names a
            projection (:func:`~mtp_audit.checkpoint.tensors.is_linear_leaf`).
        source: where the metadata came from and the I/O it cost (:meth:`CheckpointSource.describe`
            plus :meth:`CheckpointSource.stats`).
    """

    display: str
    mode: str
    files: tuple[str, ...]
    config: ModelConfig | None = None
    schemes: list[QuantScheme] = field(default_factory=list)
    index_file: str | None = None
    index_names: Collection[str] = field(default_factory=list)
    weight_map: dict[str, str] = field(default_factory=dict)
    escaping: list[tuple[str, str]] = field(default_factory=list)
    total_size: int | None = None
    shards_present: tuple[str, ...] = ()
    headers: dict[str, ShardHeader] = field(default_factory=dict)
    problems: dict[str, ReadProblem] = field(default_factory=dict)
    tensors: dict[str, str | None] = field(default_factory=dict)
    infos: Mapping[str, TensorInfo] = field(default_factory=dict)
    mtp: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    mtp_modules: dict[str, Module] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)
    trunk_suffixes: dict[str, int] = field(default_factory=dict)
    trunk_linear_weights: int = 0
    source: dict[str, Any] = field(default_factory=dict)
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    # -- derived, cached -------------------------------------------------------------------------

    @property
    def indexed_shards(self) -> set[str]:
        """Shard files named by the (contained) weight_map entries (computed once)."""
        got = self.cache.get("indexed_shards")
        if got is None:
            got = self.cache["indexed_shards"] = set(self.weight_map.values())
        return got

    @property
    def joined_names(self) -> str:
        """Every tensor name of :attr:`tensors`, in order, each followed by a newline (computed once): the text the
        C-speed scans (``str.count``, ``re.finditer``) read instead of a Python step per name."""
        got = self.cache.get("joined_names")
        if got is None:
            # one join with an empty last name for the final newline: ``join(...) + "\n"`` copied all 4.8 MB again
            got = self.cache["joined_names"] = "\n".join(chain(self.tensors, ("",)))
        return got

    @property
    def names_newline_free(self) -> bool:
        """Whether no tensor name holds a newline, so that each line of :attr:`joined_names` is one name (one
        ``str.count``, computed once)."""
        got = self.cache.get("names_newline_free")
        if got is None:
            got = self.cache["names_newline_free"] = self.joined_names.count("\n") == len(self.tensors)
        return got

    @property
    def mtp_infos(self) -> dict[str, TensorInfo]:
        """MTP tensor -> header info, for the MTP tensors (:attr:`mtp`, in its order) whose header was read: kept by
        :func:`_classify_and_group` from the lookups it makes to group them (each a Python call through
        :class:`HeaderInfos`), else built on first use; the byte sums and dtype counts read it instead of asking
        :attr:`infos` again per MTP tensor. It holds every MTP tensor exactly when every MTP tensor's header was read."""
        got = self.cache.get(MTP_INFOS)
        if got is None:
            infos = self.infos
            got = self.cache[MTP_INFOS] = {n: infos[n] for n in self.mtp if n in infos}
        return got

    def mtp_only_leaf_lines(self, n_layers: int) -> list[int] | None:
        """Start offsets in :attr:`joined_names`, ascending, of every line holding ``layers.<i>.<leaf>`` followed by ``.``
        or the line's end, with ``<leaf>`` one of :data:`MTP_ONLY_LEAVES` and the decimal ``<i>`` (leading zeros
        allowed) below ``n_layers``: found by the MTP candidate scan of an appended layout (:func:`_layer_lines`, no scan
        of its own); ``None`` where that scan did not take them (another layout, another depth, a name holding a
        newline). Exact: every such occurrence is found, whatever comes before ``layers.`` on its line."""
        got = self.cache.get(MTP_ONLY_LEAF_LINES)
        return got[1] if got is not None and got[0] == n_layers else None

    def name_ends_with(self, suffix: str) -> bool:
        """Whether some tensor name ends with ``"." + suffix`` (``suffix`` holding no dot), or may (only when a name
        holds a newline): from every name's suffix counts where the metadata-only count took them (:data:`NAME_SUFFIXES`,
        no scan; exact), else one ``in`` scan of :attr:`joined_names` for ``"." + suffix + "\n"``, computed once per
        suffix (exact when no name holds a newline; never a false ``False``)."""
        key = ("name_ends_with", suffix)
        got = self.cache.get(key)
        if got is None:
            counts = self.cache.get(NAME_SUFFIXES)
            if counts is not None:  # a name equal to the suffix is counted under it without ending in "." + suffix
                got = counts.get(suffix, 0) - (suffix in self.tensors) > 0
            else:
                got = "." + suffix + "\n" in self.joined_names
            self.cache[key] = got
        return got

    @property
    def trunk_modules(self) -> dict[str, dict[str, TensorInfo | None]]:
        """Trunk module -> parameter suffix -> header info (``None`` where no header was read), in tensor order;
        built on first use (plain dicts: 46k of them in DeepSeek-V3, a Python step per tensor), empty in
        metadata-only mode, where the trunk is only counted (:attr:`trunk_suffixes`)."""
        got = self.cache.get("trunk_modules")
        if got is None:
            got = self.cache["trunk_modules"] = _group_trunk(self) if self.infos else {}
        return got

    @property
    def missing_shards(self) -> list[str]:
        """Indexed shards absent from a folder that has at least one shard, or present only as a symlink to no file
        (a dangling link: the loader's open fails just the same); empty in metadata-only mode."""
        folders = set(self.folder_shards)  # a folder where the shard should be is not "not downloaded"
        if not self.shards_present:
            return sorted(folders)
        present = set(self.shards_present) - set(self.dangling_shards) - folders
        linked_out = {rel for rel, prob in self.problems.items() if prob.kind in ("escapes", "not-a-file")}  # gaps, never opened
        return sorted(s for s in self.indexed_shards if s not in present and s not in linked_out)

    @property
    def folder_shards(self) -> list[str]:
        """Indexed shards that are folders (a directory named like the shard: every loader's open fails on it)."""
        return sorted(rel for rel, prob in self.problems.items() if prob.kind == "directory" and rel in self.indexed_shards)

    @property
    def dangling_shards(self) -> list[str]:
        """Shards listed in the folder whose open found no file (a symlink to a missing file inside the folder)."""
        return sorted(rel for rel, prob in self.problems.items() if prob.kind == "missing")

    @property
    def unindexed_shards(self) -> list[str]:
        """Shards present in the folder but not named by the index (empty when there is no index)."""
        if self.index_file is None:
            return []
        idx = self.indexed_shards
        return sorted(s for s in self.shards_present if s not in idx)

    @property
    def primary_scheme(self) -> QuantScheme | None:
        """The quantization scheme engines read first (``hf_quant_config.json`` when present)."""
        return self.schemes[0] if self.schemes else None

    @property
    def tensors_known(self) -> bool:
        """Whether tensor names are known at all (an index, or at least one readable header)."""
        return self.index_file is not None or bool(self.headers)

    @property
    def dspark(self) -> dict[str, Any]:
        """The config's ``dspark_*`` keys (a DSpark drafter is declared), ``{}`` without."""
        return dict(self.config.dspark) if self.config else {}

    @property
    def declared_layers(self) -> int:
        """Declared (or implicit) MTP depth; 0 without a config."""
        return self.config.declaration.layers if self.config else 0

    def mtp_layer_labels(self) -> dict[str, int]:
        """Tensors per MTP layer label (``{"model.layers.61": 1564}``, ``{"mtp": 4, "mtp.layers.0": 1549}``)."""
        return dict(sorted(Counter(map(_FIRST, self.mtp.values())).items()))

    def found_layers(self) -> int:
        """MTP layers found: distinct numbered MTP layers divided by blocks per layer (Nemotron-H
        stores one MTP layer as ``mtp.layers.0`` + ``mtp.layers.1``)."""
        idx = set(map(_SECOND, self.mtp.values()))
        idx.discard(None)
        bpl = self.config.blocks_per_layer if self.config else 1
        return math.ceil(len(idx) / max(bpl, 1)) if idx else 0


def _read_json(source: CheckpointSource, rel: str, facts: CheckpointFacts | None = None) -> Any:
    """Read a metadata JSON file; the user's input cannot be audited when it is broken.

    A file the *transport* could not deliver (``ReadProblem.kind == "network"``: offline and not
    cached, 5xx, time-out) is not the user's mistake: when ``facts`` is given it becomes a blocking
    gap and ``None`` is returned, so the audit goes on and ends inconclusive (exit 3).

    Raises:
        InputError: missing, unreadable, too large or invalid JSON (one line naming the file).
    """
    try:
        return source.read_json(rel)
    except ReadProblem as exc:
        if exc.kind == "network" and facts is not None:
            facts.gaps.append(Gap(ANALYZER, f"{rel}: {exc.problem}", rel))
            return None
        raise InputError(_where(source, rel), exc.problem) from None


def _where(source: CheckpointSource, rel: str) -> str:
    disp = source.display.rstrip("/")
    return f"{disp}/{rel}" if disp and not disp.endswith(rel) else rel


def gather(source: CheckpointSource, *, mode_hint: str | None = None) -> CheckpointFacts:
    """Collect the facts of one checkpoint.

    Args:
        source: where the metadata comes from; only its public methods are used.
        mode_hint: ``"single-file"`` or ``"index-file"`` when the user named one file.

    Raises:
        InputError: the source lists nothing auditable, or ``config.json`` / the index is not valid
            JSON, ``config.json`` lacks ``architectures``, or ``weight_map`` has the wrong type.
    """
    files = source.list_files()
    fset = set(files)
    root_shards = tuple(sorted(f for f in files if f.endswith(".safetensors") and "/" not in f))
    index_candidates = sorted(f for f in files if f.endswith(".safetensors.index.json") and "/" not in f)
    index_file = INDEX if INDEX in fset else (index_candidates[0] if index_candidates else None)
    if CONFIG not in fset and not root_shards and index_file is None:
        raise InputError(source.display, "no config.json, no *.safetensors.index.json and no *.safetensors: not a checkpoint")

    facts = CheckpointFacts(display=source.display, mode="", files=files, shards_present=root_shards)
    _read_config_and_schemes(source, fset, facts)
    if index_file is not None:
        _read_index(source, index_file, facts)
        _note_linked_out(source, facts)
        _note_not_files(source, facts)
    facts.mode = _mode(mode_hint, root_shards, index_file)
    if facts.mode in ("shards", "single-file"):
        _read_shard_headers(source, root_shards, mode_hint, facts)
    facts.tensors = _tensor_shards(facts)
    _classify_and_group(facts, facts.config.num_hidden_layers if facts.config else None)
    _gaps(facts)
    return facts


def _read_config_and_schemes(source: CheckpointSource, fset: set[str], facts: CheckpointFacts) -> None:
    """``config.json`` into ``facts.config``; every quantization scheme found (``hf_quant_config.json``, the config's
    ``quantization_config``, an MLX ``quantization`` block) into ``facts.schemes``, in that order.

    Raises:
        InputError: ``config.json`` is not valid JSON or not a valid config.
    """
    raw = _read_json(source, CONFIG, facts) if CONFIG in fset else None
    if raw is not None or (CONFIG in fset and not any(g.path == CONFIG for g in facts.gaps)):  # JSON null: not a config
        if raw is not None:
            facts.cache[CONFIG] = raw  # read once: the typed answer's config (mtp_audit.checkpoint.typed.RAW_CONFIG)
        try:
            facts.config = parse_config(raw)
        except ConfigError as exc:
            raise InputError(_where(source, CONFIG), f"{exc.pointer or '/'}: {exc.problem}") from None
        extra = mlx_scheme(raw) if isinstance(raw, dict) else None
    else:
        extra = None
    if HF_QUANT in fset:
        scheme = parse_hf_quant_config(_read_json(source, HF_QUANT, facts))
        if scheme is not None:
            facts.schemes.append(scheme)
    if facts.config is not None:
        scheme = parse_quantization_config(facts.config.raw_quantization)
        if scheme is not None:
            facts.schemes.append(scheme)
    if extra is not None:
        facts.schemes.append(extra)


def _note_not_files(source: CheckpointSource, facts: CheckpointFacts) -> None:
    """An indexed shard that is in the folder but is not a regular file and so is not listed (a directory named like
    the shard) is a problem of kind ``directory`` (MTP008: the loader's open fails on it), never "not downloaded"."""
    listed = set(facts.files)
    for rel in sorted(s for s in facts.indexed_shards if s not in listed and s not in facts.problems):
        prob = source.not_a_file(rel)
        if prob is not None:
            facts.problems[rel] = prob


def _note_linked_out(source: CheckpointSource, facts: CheckpointFacts) -> None:
    """An indexed shard in a subfolder that is a symlink out of the checkpoint (``sub -> /elsewhere``) is a problem of
    kind ``escapes`` naming the link, as a symlinked shard file is: never opened, and a blocking gap when it holds MTP
    tensors (:func:`_shard_gaps`). The file itself is not listed: folders that are symlinks are not walked."""
    listed = set(facts.files)
    for rel in sorted(s for s in facts.indexed_shards if "/" in s and s not in listed):
        link = source.linked_out(rel)
        if link is not None:
            facts.problems[rel] = ReadProblem(rel, f"resolves outside the checkpoint folder (symlink {link}); not opened",
                                              "escapes")


def _mode(mode_hint: str | None, root_shards: tuple[str, ...], index_file: str | None) -> str:
    """How the checkpoint is audited: ``index-file`` / ``single-file`` (the user named one file), ``shards`` (headers
    read), ``metadata-only`` (index without shards), ``config-only``."""
    if mode_hint == "index-file":
        return "index-file"
    if root_shards:
        return "single-file" if mode_hint == "single-file" else "shards"
    return "metadata-only" if index_file is not None else "config-only"


def _read_shard_headers(source: CheckpointSource, root_shards: tuple[str, ...], mode_hint: str | None, facts: CheckpointFacts) -> None:
    """Every root shard's header into ``facts.headers`` (problems into ``facts.problems``).

    Raises:
        InputError: the one file the user named is not a readable shard.
    """
    for rel, res in sorted(source.read_headers(root_shards).items()):
        if isinstance(res, ShardHeader):
            facts.headers[rel] = res
        else:
            facts.problems[rel] = res
    if mode_hint == "single-file" and facts.problems:
        rel, prob = next(iter(facts.problems.items()))
        raise InputError(_where(source, rel), prob.problem)


def _tensor_shards(facts: CheckpointFacts) -> dict[str, str | None]:
    """Tensor name -> the shard holding it (``None``: named by the index, shard unknown), from the index and the headers;
    fills ``facts.infos`` from the headers (the first shard naming a tensor wins). When every header tensor sits in the
    shard the index names and the headers hold every indexed tensor (the common case, checked at C speed), the
    ``weight_map`` itself is the answer and ``facts.cache["headers_match_index"]`` is set for MTP012."""
    wm = facts.weight_map
    if len(wm) == len(facts.index_names) and (not facts.headers or _headers_match(facts)):
        if facts.headers:  # each tensor in the one shard the index names: looked up there, nothing merged
            facts.infos = HeaderInfos(facts.headers, wm)
        return wm  # type: ignore[return-value]  # read-only from here on
    if len(wm) == len(facts.index_names):
        tensors: dict[str, str | None] = dict(wm)
    else:
        tensors = dict.fromkeys(facts.index_names)
        tensors.update(wm)
    infos: dict[str, TensorInfo] = {}
    facts.infos = infos
    holes = None in tensors.values()
    for rel, hdr in facts.headers.items():  # sorted: the first shard naming a tensor wins
        got = tensor_infos(hdr.tensors)
        if infos.keys().isdisjoint(got):
            infos.update(got)  # the common case, at C speed: no tensor in two shards
        else:
            for name, info in got.items():
                infos.setdefault(name, info)
        if holes or not got.keys() <= tensors.keys():
            for name in got:
                if tensors.get(name) is None:
                    tensors[name] = rel
    return tensors


def _headers_match(facts: CheckpointFacts) -> bool:
    """Whether every header tensor is indexed to the shard it sits in and the headers hold every indexed tensor
    (``{tensor: shard}`` from the headers equals ``weight_map``; a C-speed items-view test per header). The answer
    is kept in ``facts.cache["headers_match_index"]``."""
    wm, headers = facts.weight_map, facts.headers
    ok = sum(len(h.tensors) for h in headers.values()) == len(wm) and (
        _runs_match(headers, wm) or all(_all_in_shard(hdr.tensors, rel, wm) for rel, hdr in headers.items()))
    facts.cache["headers_match_index"] = ok
    return ok


def _runs_match(headers: Mapping[str, ShardHeader], wm: Mapping[str, str]) -> bool:
    """True when ``wm``, read in order, is a sequence of runs, each run one header's names in that header's order, every
    one mapped to that header's shard (an index written shard by shard, as the headers list their tensors); False when
    that is not shown (the lookups of :func:`_all_in_shard` then decide). Per run: one ``countOf`` over its shard
    values and one comparison of its names (sequential, no hashing: ~half the cost of a ``wm.get`` per name), as texts
    when the header kept its names as one (:attr:`~mtp_audit.sources.local.TensorColumns.text`: no name holds a
    newline, so the run's names joined by newlines equal that text exactly when they are the same names: the text
    has ``n - 1`` newlines, all of them separators, so no index name holds one), else as lists.

    Exact for :func:`_headers_match`, which first holds the header sizes' sum equal to ``len(wm)``: the runs cover
    every ``wm`` entry, each run's header holds exactly the run's names, each mapped to that header's shard; a header
    cannot fill two runs (the second would repeat the first's names, and ``wm``'s keys are unique), so the headers
    of the runs hold ``len(wm)`` names, all there are, and every other header is empty."""
    names_of, shards = iter(wm), iter(wm.values())
    for rel in shards:
        hdr = headers.get(rel)
        if hdr is None:
            return False
        tensors = hdr.tensors
        n = len(tensors)
        if not n or countOf(islice(shards, n - 1), rel) != n - 1:
            return False
        text = tensors.text if isinstance(tensors, TensorColumns) else None
        if text is not None:  # names joined by newlines, none holding one: equal texts, equal names
            if "\n".join(islice(names_of, n)) != text:
                return False
        elif list(islice(names_of, n)) != list(tensors):
            return False
    return True


def _all_in_shard(tensors: Mapping[str, TensorInfo], rel: str, wm: Mapping[str, str]) -> bool:
    """Whether ``wm`` maps every tensor name of ``tensors`` to ``rel`` (one C-speed ``map`` of ``wm.get`` over the
    names, counted with ``operator.countOf``: as ``dict.fromkeys(tensors, rel).items() <= wm.items()``, without the
    dict)."""
    names = tensors.names if isinstance(tensors, TensorColumns) else list(tensors)
    return countOf(map(wm.get, names), rel) == len(names)


class HeaderInfos(Mapping[str, TensorInfo]):
    """Tensor name -> header info over the shard headers when they match the index (every header tensor indexed to
    its own shard, every indexed tensor in a header): ``weight_map`` names the one header to look in, so nothing is
    merged. Iterates in header order (sorted shards, then each header's order), as the merged dict did.
    :meth:`as_dict` gives the merged dict (built once) for a caller that looks up most tensors."""

    def __init__(self, headers: Mapping[str, ShardHeader], weight_map: Mapping[str, str]) -> None:
        self._headers, self._wm = headers, weight_map
        self._merged: dict[str, TensorInfo] | None = None

    def __getitem__(self, name: str) -> TensorInfo:
        return self._headers[self._wm[name]].tensors[name]

    def __contains__(self, name: object) -> bool:
        return name in self._wm

    def __iter__(self) -> Iterator[str]:
        return chain.from_iterable(h.tensors for h in self._headers.values())

    def __len__(self) -> int:
        return len(self._wm)

    def as_dict(self) -> dict[str, TensorInfo]:
        """Every tensor's info in one dict (built once, at C speed per header: :func:`tensor_infos`)."""
        if self._merged is None:
            self._merged = {}
            for hdr in self._headers.values():
                self._merged.update(tensor_infos(hdr.tensors))
        return self._merged


def _read_index(source: CheckpointSource, index_file: str, facts: CheckpointFacts) -> None:
    """Parse the index: ``weight_map`` (tensor -> shard) and ``metadata.total_size``.

    Raises:
        InputError: not JSON, not an object, or ``weight_map`` not an object of strings.
    """
    obj = _read_json(source, index_file, facts)
    if obj is None and any(g.path == index_file for g in facts.gaps):
        return  # not delivered (offline, network): a blocking gap already says so
    where = _where(source, index_file)
    if not isinstance(obj, dict):
        raise InputError(where, f"expected a JSON object, got {type(obj).__name__}")
    wm = obj.get("weight_map")
    if not isinstance(wm, dict):
        got = "nothing" if wm is None else type(wm).__name__
        raise InputError(where, f"/weight_map: expected an object mapping tensor names to shard files, got {got}")
    facts.index_file = index_file
    facts.index_names = wm.keys()
    distinct = _distinct_values(wm)  # a 92k-entry index names ~163 distinct shards
    if distinct is None or not all(isinstance(v, str) for v in distinct):
        name, shard = next((k, v) for k, v in wm.items() if not isinstance(v, str))
        raise InputError(where, f"{pointer('weight_map', name)}: expected a shard file name, got {type(shard).__name__}")
    checked: dict[str, str | None] = {}
    for shard in distinct:
        checked[shard] = _index_relpath(shard)
    _note_unglobbed(facts, wm, {v: r for v, r in checked.items() if r is not None and (r != v or "/" in r)})
    if all(checked[v] == v for v in distinct):
        facts.weight_map = wm  # the common case: no copy
        facts.cache["indexed_shards"] = distinct
    else:
        out = facts.weight_map
        for name, shard in wm.items():
            rel = checked[shard]
            if rel is None:
                facts.escaping.append((name, shard))
            else:
                out[name] = rel
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        ts = meta.get("total_size")
        if isinstance(ts, int) and not isinstance(ts, bool) and ts >= 0:
            facts.total_size = ts
        elif isinstance(ts, float) and ts.is_integer() and ts >= 0:
            facts.total_size = int(ts)


#: Runs of equal adjacent values beyond which :func:`_distinct_values` hashes every value instead.
MAX_VALUE_RUNS = 4096


def _distinct_values(wm: Mapping[str, Any]) -> set[Any] | None:
    """The distinct values of ``wm`` (``set(wm.values())``), or ``None`` when one is unhashable (a list or an object).

    An index lists each shard's tensors together (163 runs of equal values in DeepSeek-V3's 92k entries), and the values
    ``json`` decodes are distinct objects, each hashed once when put in a set (~2.4 ms in a fresh process). The set is
    built from the first value of each run instead (``itertools.groupby``: one ``==`` between neighbours, no hash), when
    there are at most :data:`MAX_VALUE_RUNS` runs; past that, from every value, as before (the runs taken so far are
    dropped). Exact: every value is ``==`` to its run's first value (or is it), so both sets hold the same elements; an
    unhashable value fails either ``set`` with ``TypeError``, as before."""
    values = wm.values()
    firsts = list(islice(map(_FIRST, groupby(values)), MAX_VALUE_RUNS + 1))
    try:
        return set(firsts) if len(firsts) <= MAX_VALUE_RUNS else set(values)
    except TypeError:
        return None


def _note_unglobbed(facts: CheckpointFacts, wm: Mapping[str, str], rewritten: dict[str, str]) -> None:
    """Keep ``facts.cache["index_paths_unglobbed"]``: raw ``weight_map`` value -> ``(path inside the folder, tensors
    mapped to it, first such tensor)`` for each value that is not a plain top-level file name (``sub/x``,
    ``sub/../x``, ``./x``): the loaders join it to the folder and compare the string with their top-level glob of
    ``*.safetensors`` (MTP008). One pass over the map, only when such a value exists."""
    if not rewritten:
        return
    got: dict[str, tuple[str, int, str]] = {}
    for name, shard in wm.items():
        if shard in rewritten:
            rel, n, first = got.get(shard, (rewritten[shard], 0, name))
            got[shard] = (rel, n + 1, first)
    facts.cache["index_paths_unglobbed"] = got


def _index_relpath(shard: str) -> str | None:
    """A ``weight_map`` value as a POSIX path inside the checkpoint folder, normalised first (``sub/../x.safetensors``
    is ``x.safetensors``, inside; ``../x.safetensors`` stays outside), or None when it is absolute, has a drive, a
    URL, a backslash or a NUL, or leaves the folder (:func:`~mtp_audit.sources.bounded.contained_relpath` on the
    normalised name). A plain file name (no ``/``, the common case) is checked without building a path. Nothing is
    opened."""
    if not shard or "\x00" in shard or "\\" in shard or shard[0] == "/":
        return None
    if "/" not in shard:
        ok = shard not in (".", "..") and not (len(shard) > 1 and shard[1] == ":")
        return shard if ok else None
    p = contained_relpath(posixpath.normpath(shard))
    return None if p is None else p.as_posix()


def _lines_matching(pattern: str, joined: str) -> set[str]:
    """Whole lines of ``joined`` that contain a match of ``pattern`` (a pattern that never matches a newline). Each
    regex match takes a run of such lines (:func:`_run_of`), cut into lines at C speed: the 1.5k names of an MTP layer,
    consecutive in a sorted index, are one match and one ``split`` instead of a Python step per name."""
    out: set[str] = set()
    rfind = joined.rfind
    for m in re.finditer(_run_of(pattern), joined):
        out.update(joined[rfind("\n", 0, m.start()) + 1 : m.end()].split("\n"))
    return out


def _run_of(pattern: str) -> str:
    """A regex that matches where ``pattern`` (never matching a newline) does, then the rest of that line and each
    following line that holds a match of ``pattern``, whole, up to the first line that holds none.

    Exact for :func:`_lines_matching`: a continued line is taken when ``[^\\n]*?`` reaches a match of ``pattern`` in
    it, i.e. exactly when it holds one; a run ends before its line's newline, so the scan goes on at the first line
    left out, and every line holding a match is in a run (found there or taken by the run before it)."""
    return r"(?:" + pattern + r")[^\n]*(?:\n[^\n]*?(?:" + pattern + r")[^\n]*)*"


def _at_least(n: int) -> str:
    """A regex alternation matching the decimal numbers ``>= n`` written without leading zeros
    (``_at_least(61)`` -> ``6[1-9]|[7-9]\\d{1}|[1-9]\\d{2,}``), so that one C-speed scan finds
    the decoder layers at or past the trunk depth without collecting every layer number first."""
    digits = str(max(n, 0))
    alts = [r"[1-9]\d{" + str(len(digits)) + ",}"]  # more digits than n
    for i, ch in enumerate(digits):
        d, rest = int(ch), len(digits) - i - 1
        low = d if rest == 0 else d + 1
        if low <= 9:
            first = f"[{low}-9]" if (i or low) else "[1-9]"
            alts.append(digits[:i] + first + (r"\d{" + str(rest) + "}" if rest else ""))
    if n <= 0:
        alts.append("0")
    return "|".join(alts)


def _number_at_least(n: int) -> str:
    """A regex matching a decimal number ``>= n``, leading zeros allowed, and the dot after it: what
    ``0*(?:`` + :func:`_at_least` ``(n))\\.`` matches, with fewer steps where it fails (at each of the 92k ``layers.``
    of DeepSeek-V3's names, ~0.35 ms less over the scan).

    Exact: for ``n >= 1`` the zeros are taken possessively (``0*+``): no alternative of ``_at_least(n)`` begins with a
    ``0`` (each begins with ``[1-9]``, a class from n's first digit up, or n's own nonzero first digit), so giving a
    zero back never lets one match. For ``n <= 0`` every run of digits is a number ``>= n`` (``\\d++``)."""
    if n <= 0:
        return r"\d++\."
    return r"0*+(?:" + _at_least(n) + r")\."


def _mtp_candidates(joined: str, names: Collection[str], n_layers: int | None, plain: bool,
                    leaves: bool = False) -> tuple[list[str], list[int] | None]:
    """Names that may be MTP tensors: those containing ``mtp`` and those of decoder layers with index
    ``>= n_layers``. Found with regex scans over ``joined`` (the names, each followed by a newline: C speed,
    only the rare hits touched from Python) instead of a Python-level test per name; :func:`layouts.classify`
    then decides each candidate. A superset of what ``classify`` accepts, so no MTP tensor is missed;
    names that themselves contain a newline (``plain`` false) are checked one by one. With ``leaves`` (an appended
    layout, ``plain`` and ``n_layers`` given) the decoder-layer scan also takes the line starts of
    :meth:`CheckpointFacts.mtp_only_leaf_lines` (second of the pair; else ``None``)."""
    cands = _lines_matching("mtp", joined)  # no ``"mtp" in joined`` first: the regex scan alone is faster (2.3 ms
    # against 3.7 ms for ``in`` over DeepSeek-V3's 4.8 MB of names, where it finds nothing)
    starts: list[int] | None = None
    if n_layers is not None and "layers." in joined:
        more, starts = _layer_lines(joined, n_layers, leaves and plain)
        cands |= more
    elif n_layers is not None and leaves and plain:
        starts = []  # no "layers." at all: no such line
    if not plain:  # a name holds a newline: its pieces are not names
        known = set(names)
        cands = {c for c in cands if c in known} | {n for n in names if "\n" in n}
    return sorted(cands), starts


def _layer_lines(joined: str, n_layers: int, leaves: bool) -> tuple[set[str], list[int] | None]:
    """The lines of ``joined`` holding ``layers.<i>.`` with ``i >= n_layers`` (:func:`_at_least`; leading zeros
    allowed) and, with ``leaves``, the start offsets (ascending, each once) of the lines holding
    ``layers.<i>.<leaf>`` + ``.`` or newline with ``i < n_layers`` and ``<leaf>`` in :data:`MTP_ONLY_LEAVES` (else
    ``None``): one regex scan that stops at each ``layers.`` (92k in DeepSeek-V3) and tries both there, instead of a
    second scan for MTP014 that stops at each of ~500k dots. A hit of the first kind takes its run of such lines
    (:func:`_run_of`), which is then searched for the second kind alone (a few hundred ``layers.`` in an MTP layer).

    Exact: no match of the second kind holds an ``l`` but its first character (digits, dots, the leaves and the
    newline hold none), and a run ends at a line's end, so the scan tries every ``layers.`` outside the runs; inside a
    run the leaf search tries every one too. At each, the first kind matches when the digit run up to a dot is a
    number ``>= n_layers``; where it does not, the second kind matches exactly when a leaf follows that dot (a number
    below ``n_layers``); so each line of either kind holds a match of its kind, found."""
    number = _number_at_least(n_layers)
    if not leaves:
        return _lines_matching(r"layers\." + number, joined), None
    leaf = r"(\d++\.(?:" + "|".join(MTP_ONLY_LEAVES) + r")[.\n])"  # possessive: a dot never follows a shorter run
    run = number + r"[^\n]*(?:\n[^\n]*?layers\." + number + r"[^\n]*)*"  # _run_of(r"layers\." + number), less its start
    scan = re.compile(r"layers\.(?:" + run + "|" + leaf + ")")
    first, second = re.compile(r"layers\." + number), re.compile(r"layers\." + leaf)
    lines: set[str] = set()
    starts: list[int] = []
    rfind = joined.rfind
    for m in scan.finditer(joined):
        start = rfind("\n", 0, m.start()) + 1
        if m.lastindex:  # the second kind: an MTP-only leaf below the trunk depth
            starts.append(start)
            continue
        end = m.end()
        lines.update(joined[start:end].split("\n"))
        starts += [rfind("\n", 0, x.start()) + 1 for x in second.finditer(joined, m.start(), end + 1)
                   if not first.match(joined, x.start())]
    return lines, sorted(set(starts))


def _classify_and_group(facts: CheckpointFacts, n_layers: int | None) -> None:
    """Split tensors into MTP (:func:`layouts.classify`) and trunk. MTP tensors are grouped into
    :class:`Module` objects. The trunk is not grouped here: with shard headers its modules are built on first
    use (:attr:`CheckpointFacts.trunk_modules`, which the format census of ``mtp_audit.checkpoint.trunk`` mostly
    avoids); in metadata-only mode its tensors are only counted by parameter suffix and by the leaf name of
    their ``.weight`` tensors, which is all :func:`trunk_format_counts` needs. Candidates are found by
    :func:`_mtp_candidates` over :attr:`CheckpointFacts.joined_names`; the counts are taken from that text too
    (:func:`_count_trunk`: ``str.count`` per suffix, one regex scan for the leaves; no Python frame per name)."""
    infos = facts.infos
    mtp = facts.mtp
    mtp_mods = facts.mtp_modules
    tensors = facts.tensors
    suffixes = PARAM_SUFFIXES
    get_info = infos.get
    names = tensors.keys()
    cfg = facts.config
    appended = cfg is not None and cfg.layout is not None and cfg.layout.placement == "appended"
    cands, starts = _mtp_candidates(facts.joined_names, names, n_layers, facts.names_newline_free, appended)
    if starts is not None:
        facts.cache[MTP_ONLY_LEAF_LINES] = (n_layers, starts)
    found: dict[str, TensorInfo] = {}
    for name in cands:
        hit = classify(name, n_layers)
        if hit is None:
            continue
        module, _, param = name.rpartition(".")
        if not module or param not in suffixes:
            module, param = name, ""
        mtp[name] = hit
        mod = mtp_mods.get(module)
        if mod is None:
            mod = mtp_mods[module] = Module(module)
        info = mod.params[param] = get_info(name)
        if info is not None:  # an info is never None: None is "not in infos"
            found[name] = info
        if param in ("weight", "weight_packed", "qweight", "") or mod.shard is None:
            mod.shard = tensors[name]
    facts.cache[MTP_INFOS] = found
    if infos:
        facts.trunk_suffixes = {}
        facts.trunk_linear_weights = 0
        return
    _count_trunk(facts, names)


def _count_trunk(facts: CheckpointFacts, names: KeysView[str]) -> None:
    """Metadata-only mode: :attr:`CheckpointFacts.trunk_suffixes` and :attr:`CheckpointFacts.trunk_linear_weights`,
    counted over every name (from :attr:`CheckpointFacts.joined_names` when no name holds a newline:
    :func:`suffix_counts_joined`, :func:`weight_counts_joined`), then the MTP tensors' own counts taken off (a
    few thousand names)."""
    mtp = facts.mtp
    joined = facts.joined_names
    plain = facts.names_newline_free
    own = suffix_counts(mtp) if mtp else {}
    if plain:
        weights, facts.trunk_linear_weights = weight_counts_joined(joined)  # the suffix counts need the first
        counted = {"weight": weights}
        # candidates first from the MTP tensors' suffixes (an MTP layer is a decoder layer: the trunk's kinds) and the
        # index's two ends (embeddings, first layers, head), then, should they miss one, from the wider sample; the
        # counts taken the first time are handed to the second
        got = suffix_counts_joined(joined, facts.tensors, chain(own, islice(names, 512), islice(reversed(names), 128)),  # type: ignore[call-overload]  # dict key views reverse
                                   counted)
        if got is None:
            got = suffix_counts_joined(joined, facts.tensors, _sample(names), counted)
    else:
        got = None
        facts.trunk_linear_weights = linear_weight_count(names)
    facts.trunk_suffixes = suffix_counts(names) if got is None else got
    facts.cache[NAME_SUFFIXES] = dict(facts.trunk_suffixes)  # every name's, before the MTP tensors' are taken off
    if mtp:
        _take_off(facts.trunk_suffixes, own)
        facts.trunk_linear_weights -= linear_weight_count(mtp)


def _sample(names: KeysView[str], head: int = 2048, tail: int = 512, spread: int = 2048) -> Iterable[str]:
    """Names to take candidate suffixes from: the first ``head`` (embeddings and the first layers, dense and MoE, in
    a sorted index), the last ``tail`` and ``spread`` names evenly spaced between (``islice`` walks, no copy of the
    names). Speed only: a suffix the sample misses makes :func:`suffix_counts_joined` decline, never count wrong."""
    n = len(names)
    if n <= head + tail + spread:
        return names
    step = max(1, (n - head - tail) // spread)
    return chain(islice(names, head), islice(names, head, n - tail, step), islice(reversed(names), tail))  # type: ignore[call-overload]  # dict key views reverse


def suffix_counts(names: Iterable[str]) -> dict[str, int]:
    """Names per last dotted component (``"a.b.weight"`` -> ``"weight"``; a name without a dot is its own), sorted
    by component (a ``Counter`` over C-level maps: one ``rpartition`` per name)."""
    return dict(sorted(Counter(map(_LAST, map(str.rpartition, names, repeat(".")))).items()))


def weight_leaf_counts(names: Iterable[str]) -> dict[str, int]:
    """The names ending in ``.weight`` per last dotted component before it (``"a.up_proj.weight"`` -> ``"up_proj"``;
    ``"lm_head.weight"`` -> ``"lm_head"``), sorted by component (:func:`suffix_counts` of the names cut short)."""
    names = list(names)
    return suffix_counts(map(_NO_WEIGHT, compress(names, map(str.endswith, names, repeat(_WEIGHT)))))


def linear_weight_count(names: Iterable[str]) -> int:
    """How many of ``names`` end in ``.<leaf>.weight`` (or are ``<leaf>.weight``) with a projection leaf
    (:func:`~mtp_audit.checkpoint.tensors.is_linear_leaf`): the ``.weight`` tensors of linear layers a weight-only
    count sees (from :func:`weight_leaf_counts`)."""
    return sum(n for leaf, n in weight_leaf_counts(names).items() if is_linear_leaf(leaf))


#: Candidate suffixes beyond which :func:`suffix_counts_joined` declines: each costs one ``str.count`` over the
#: joined names (~1.5 ms at 92k names), a ``Counter`` over every name ~15 ms.
MAX_COUNTED_SUFFIXES = 6


def suffix_counts_joined(joined: str, names: Collection[str], sample: Iterable[str],
                         dotted: dict[str, int] | None = None) -> dict[str, int] | None:
    """:func:`suffix_counts` of the names of ``joined`` (each followed by a newline, none holding one; ``names`` holds
    the same names, for membership tests), counted with one ``str.count`` per candidate suffix taken from ``sample``
    (names, or suffixes themselves: a suffix holds no dot) instead of a split per name; ``None`` (decline) when the
    sample holds more than :data:`MAX_COUNTED_SUFFIXES` or the counts do not add up to every name. ``dotted``: suffix
    -> how many names end in ``"." + suffix``, where the caller has counted that already (exactly:
    :func:`weight_counts_joined` counts every name ending in ``.weight``), in place of that suffix's ``str.count``;
    the counts taken here are added to it, so a second call with another sample does not take them again.

    Exact when it answers: a candidate ``s`` (never holding a dot) is the last component of a name iff the name ends
    in ``"." + s`` (one ``".s\\n"`` in ``joined``, ending at that name's newline, so occurrences never overlap and no
    name is counted for two candidates) or is ``s`` itself (a membership test). So each name is counted at most once,
    and when the counts add up to the number of names every name is counted, under its own suffix."""
    cands = set(map(_LAST, map(str.rpartition, sample, repeat("."))))
    if len(cands) > MAX_COUNTED_SUFFIXES:
        return None
    known = {} if dotted is None else dotted
    for s in cands.difference(known):
        known[s] = joined.count("." + s + "\n")
    got = {s: known[s] + (s in names) for s in sorted(cands)}
    if sum(got.values()) != len(names):
        return None
    return {s: n for s, n in got.items() if n}


#: The ``ght`` and newline ending each name's ``.weight`` where the component before ``.weight`` does not end in
#: ``_proj``, in the joined names: the literal ``"ght\n"`` the scan jumps to (the regex engine's prefix search stops at
#: each ``g``, ~120k in DeepSeek-V3's names, where ``".weight\n"`` stopped at each of ~640k dots), then two fixed-width
#: looks back, the rarer miss first: not ``_proj.weight``, then ``.weight``. Each occurrence of ``".weight\n"`` ends with
#: exactly one ``"ght\n"`` and each ``"ght\n"`` preceded by ``.wei`` is the end of one, so the matches are those of
#: ``\.weight\n(?<!_proj\.weight\n)``, each ending where that one's does.
_OTHER_WEIGHT = re.compile(r"ght\n(?<!_proj\.weight\n)(?<=\.weight\n)")


def weight_counts_joined(joined: str) -> tuple[int, int]:
    """How many of the names of ``joined`` (each followed by a newline, none holding one) end in ``.weight``, and
    :func:`linear_weight_count` of them: one ``str.count`` of ``"_proj.weight\\n"`` and one regex scan
    (:data:`_OTHER_WEIGHT`: the end of each ``".weight\\n"``, then a look back for ``_proj``) that returns only at the
    names whose leaf does not end in ``_proj`` (norms, routers, embeddings: a few hundred in DeepSeek-V3's 46k
    ``.weight`` names), each leaf cut out from Python, instead of a test and a split per name, a string per leaf, or a reversed copy of the text.

    Exact: each name is a line, so ``".weight\\n"`` occurs once for every name ending in ``.weight`` (ending at its
    newline; the literal cannot overlap itself) and nowhere else. Either the five characters before it are
    ``_proj`` (an occurrence of ``"_proj.weight\\n"``, which cannot overlap itself either: counted once by
    ``str.count``) or the look back refuses none and the scan matches it: the two add up to the ``.weight`` names. The
    ``_proj`` characters lie inside the leaf (the last component before ``.weight``, after the previous dot or the
    line's start: neither holds a dot or a newline), and such a leaf always names a projection (``is_linear_leaf``
    accepts ``.*_proj``); of the matches, those whose leaf ``is_linear_leaf`` accepts (``fc1``, ``dense``, ``w1``...)
    are added."""
    proj = joined.count("_proj" + _WEIGHT + "\n")
    rfind = joined.rfind
    others: Counter[str] = Counter()
    for m in _OTHER_WEIGHT.finditer(joined):
        end = m.end() - len(_WEIGHT) - 1  # where ``.weight`` begins
        others[joined[max(rfind(".", 0, end), rfind("\n", 0, end)) + 1 : end]] += 1
    return proj + sum(others.values()), proj + sum(n for leaf, n in others.items() if is_linear_leaf(leaf))


def _take_off(counts: dict[str, int], part: dict[str, int]) -> None:
    """Subtract the counts ``part`` (a subset's) from ``counts``, dropping the keys that reach 0."""
    for key, n in part.items():
        left = counts[key] - n
        if left:
            counts[key] = left
        else:
            del counts[key]


def _group_trunk(facts: CheckpointFacts) -> dict[str, dict[str, TensorInfo | None]]:
    """Trunk module -> parameter suffix -> header info, in tensor order (a Python step per trunk tensor)."""
    mtp = facts.mtp
    names = [n for n in facts.tensors if n not in mtp] if mtp else list(facts.tensors)
    suffixes = PARAM_SUFFIXES
    trunk: dict[str, dict[str, TensorInfo | None]] = {}
    get = trunk.get
    infos = facts.infos.as_dict() if isinstance(facts.infos, HeaderInfos) else facts.infos
    for name, (module, _, param), info in zip(names, map(str.rpartition, names, repeat(".")), map(infos.get, names)):
        if param not in suffixes or not module:
            module, param = name, ""
        params = get(module)
        if params is None:
            trunk[module] = {param: info}
        else:
            params[param] = info
    return trunk


def _gaps(facts: CheckpointFacts) -> None:
    """What could not be examined, and whether it blocks the answer (see docs/checkpoint.md
    "Inconclusive")."""
    cfg = facts.config
    decl = cfg.declaration if cfg else None
    layout = cfg.layout if cfg else None
    for scheme in facts.schemes:
        for defect in scheme.defects:
            facts.gaps.append(Gap(ANALYZER, defect, scheme.source.partition("#")[0], blocking=False))
    if cfg is None:
        facts.gaps.append(
            Gap(
                ANALYZER,
                "config.json missing: the MTP declaration and the trunk depth are unknown, so MTP layers appended "
                "as model.layers.N+i cannot be recognised",
                CONFIG,
                blocking=not facts.mtp,
                question=MTP_HEADS,
            )
        )
    elif (
        cfg.num_hidden_layers is None
        and layout is not None
        and layout.placement == "appended"
        and facts.tensors_known
    ):
        facts.gaps.append(
            Gap(ANALYZER, "config.json has no num_hidden_layers: appended MTP layers cannot be located", CONFIG,
                question=MTP_HEADS)
        )
    if facts.mode == "config-only":
        if decl is not None and decl.declared:
            how = "implicitly (family always ships MTP)" if decl.implicit else f"at {decl.key}"
            facts.gaps.append(
                Gap(
                    ANALYZER,
                    f"config.json declares {decl.layers} MTP layer(s) {how}, but there is no "
                    "model.safetensors.index.json and no *.safetensors: whether the MTP tensors ship cannot be checked",
                    question=MTP_HEADS,
                )
            )
        elif layout is None or layout.placement != "none":
            facts.gaps.append(
                Gap(
                    ANALYZER,
                    "no index and no shards: MTP tensors not inspected (none declared, so engines will not load any)",
                    blocking=False,
                    question=MTP_HEADS,
                )
            )
    if facts.mode in ("metadata-only", "index-file") and facts.index_file is not None:
        n = len(facts.indexed_shards)
        facts.gaps.append(
            Gap(
                ANALYZER,
                f"{facts.index_file} names {n} shard file(s), none read: MTP presence decided from tensor names; "
                "dtypes inferred from sibling scale-tensor names and bytes estimated from config.json",
                facts.index_file,
                blocking=False,
                question=MTP_HEADS,
            )
        )
    _shard_gaps(facts)


def _shard_gaps(facts: CheckpointFacts) -> None:
    """A gap per shard that could not be opened or read (outside the folder, unreadable, over a budget). It blocks
    unless the index covers the shard's names; a shard that resolves outside the folder and holds MTP tensors (per
    the index) always blocks: it is never opened, so whether the draft's weights exist at all is unknown. A
    malformed shard is MTP013 and a dangling link or a folder the index names is MTP008, so neither is a gap; a FIFO,
    socket or device in a shard's place always blocks (never read)."""
    for rel, prob in sorted(facts.problems.items()):
        if prob.kind == "malformed":
            continue
        if prob.kind in ("missing", "directory") and rel in facts.indexed_shards:
            continue  # MTP008
        covered = facts.index_file is not None and rel in facts.indexed_shards
        if (prob.kind == "escapes" and _holds_mtp(facts, rel)) or prob.kind == "not-a-file":
            covered = False  # a FIFO, socket or device is never read: what a loader makes of it is not told
        facts.gaps.append(
            Gap(
                ANALYZER,
                f"{prob.problem}; tensor dtypes and shapes in this shard unknown",
                rel,
                blocking=not covered,
            )
        )


def _holds_mtp(facts: CheckpointFacts, shard: str) -> bool:
    """Whether the index maps any MTP tensor to ``shard``."""
    wm = facts.weight_map
    return any(wm.get(n) == shard for n in facts.mtp)
