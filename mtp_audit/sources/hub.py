"""Audit a checkpoint on the Hugging Face hub from its metadata alone: :class:`HubSource`.

``mtp-audit checkpoint org/name[@revision]`` reads ``config.json``, the quantization configs, the
index and each shard's safetensors header, never tensor data. The analyzer talks to this
module only through the :class:`~mtp_audit.sources.local.CheckpointSource` contract and
:func:`audit_source_for`, so a hub audit gives the same report as a local one.

What one audit does, in order:

1. Resolve the revision to a commit sha with ``HfApi.model_info`` (``GET
   /api/models/{repo}/revision/{rev}``, one request that also returns the file list, so shards the
   index does not name, such as an MTP sidecar, are seen). Everything after that is read *at that
   sha*, so a branch that moves during the audit cannot mix two commits.
2. Small JSON files: from the Hugging Face cache (``HF_HUB_CACHE``, ``try_to_load_from_cache``), else
   from the mtp-audit cache, else one ``GET`` each, then put into both caches (the Hugging Face cache only
   for the hub it belongs to; :func:`mtp_audit.sources.hubcache.fill_hf_cache`).
3. Shard headers: from the Hugging Face cache (a shard downloaded earlier is read like a local file),
   else from the mtp-audit header cache, else HTTP Range requests as huggingface_hub's
   ``parse_safetensors_file_metadata`` makes them: ``bytes=0-100000`` first, which holds the 8-byte
   length ``n`` and, in the common case, the whole header; a second, exact range only when ``8 + n``
   is longer (:data:`DEFAULT_PREFETCH_BYTES`). The library call itself is not used: it returns no
   raw bytes and no file size, so duplicate names, bad UTF-8 and the file-length check could not be
   verified (docs/hub.md "Header reads"). ``prefetch_bytes=0`` reads ``bytes=0-7`` then exactly the
   header instead: nothing past a header, two requests per shard.
4. ``--jobs`` threads read headers concurrently; a progress bar (:mod:`mtp_audit.progress`) goes to
   stderr only when stderr is a terminal and ``CI`` is unset.

Offline (``--offline`` or ``HF_HUB_OFFLINE=1``): no request at all; the revision is resolved from the
Hugging Face cache refs or the mtp-audit cache, and every file that is not cached is a
:class:`ReadProblem` of kind ``network`` (the analyzer turns it into a blocking Gap, exit 3).

Environment honoured through huggingface_hub 2.4 (``constants.py``): ``HF_ENDPOINT`` (mirrors),
``HF_TOKEN`` (and the stored token), ``HF_HUB_OFFLINE``, ``HF_HUB_CACHE``/``HF_HOME``,
``HF_HUB_DOWNLOAD_TIMEOUT`` (per-request time-out, default 10 s). huggingface_hub reads these when it
is first imported; :func:`open_hub_source` takes explicit ``endpoint``/``hf_cache_dir``/``timeout``
arguments for programs (and tests) that need to override them later.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import struct
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mtp_audit.errors import InputError
from mtp_audit.progress import Progress
from mtp_audit.sources.bounded import (
    MAX_JSON_BYTES,
    BudgetSpent,
    charge_header_json,
    contained_relpath,
    parse_json_bytes,
)
from mtp_audit.sources.hubcache import HubCache, default_cache_dir, fill_hf_cache
from mtp_audit.sources.huberrors import HubUnavailable, NotCached  # noqa: F401  (re-exported: callers catch them from here)
from mtp_audit.sources.local import (
    DTYPE_BITS,
    MAX_FILES,
    MAX_HEADER_BYTES,
    CheckpointSource,
    LocalSource,
    ReadProblem,
    ShardHeader,
    fast_header,
    header_from_dict,
    parse_header_json,
)

#: Default number of concurrent shard-header reads (``--jobs``).
DEFAULT_JOBS = 8

#: Upper bound for ``--jobs``: more threads only add load on the hub.
MAX_JOBS = 64

#: Speculative first range per shard header (bytes): ``Range: bytes=0-100000``, the window
#: huggingface_hub 2.4 ``HfApi.parse_safetensors_file_metadata`` asks for first ("97% of safetensors
#: files have a metadata size < 100kb"), so one request per shard in the common case and a second,
#: exact one (``bytes=len-(7+n)``) only for a longer header. At most ``100_001 - (8 + n)`` bytes past
#: a header are read per shard (none when the header is longer). 0 = exact reads: ``bytes=0-7`` then
#: the header, nothing past it, two requests per shard. See docs/hub.md "Header reads".
DEFAULT_PREFETCH_BYTES = 100_001

#: The hub source's log (``-v``: what was resolved and fetched; ``-vv``: every file and where it came from).
_LOG = logging.getLogger(__name__)

_MISS: Any = object()  # not in the cache (or an entry that did not parse)

#: The hub's commit ids are 40 hex digits (git SHA-1).
SHA_RE = re.compile(r"^[0-9a-f]{40}$")

# huggingface_hub 2.4 ``utils/_validators.py`` REPO_ID_REGEX and ``validate_repo_id`` rules
# (1-96 chars of [A-Za-z0-9_.-] per part, no leading/trailing '-' or '.', no '--' or '..',
# no '.git' suffix), restated so that recognising a hub id does not import huggingface_hub.
_REPO_PART = r"(?![-.])[\w.-]{1,96}(?<![-.])"
_REPO_RE = re.compile(rf"^{_REPO_PART}/{_REPO_PART}$", re.ASCII)
# Branch, tag, commit or "refs/pr/N" / "refs/convert/parquet".
_REV_RE = re.compile(r"^[\w.+-]+(/[\w.+-]+)*$", re.ASCII)

#: What a file that was neither cached nor fetchable in offline mode says.
OFFLINE_PROBLEM = "offline: not in the Hugging Face cache or the mtp-audit cache; not fetched"


def parse_spec(spec: str) -> tuple[str, str | None]:
    """Split ``"org/name[@revision]"`` into ``(repo_id, revision or None)``.

    Raises:
        InputError: not a hub model id (wrong shape, characters huggingface_hub refuses, an empty or
            malformed revision).
    """
    text = spec.strip()
    repo, sep, revision = text.partition("@")
    if not _REPO_RE.match(repo) or "--" in repo or ".." in repo or repo.endswith(".git"):
        raise InputError(spec, "not a hub model id: expected org/name[@revision] (letters, digits, '-', '_', '.')")
    if sep:
        if not revision:
            raise InputError(spec, "empty revision after '@'")
        if len(revision) > 255 or not _REV_RE.match(revision) or not _git_ref_shaped(revision):
            raise InputError(spec, f"not a valid revision: {revision!r}")
        return repo, revision
    return repo, None


def _git_ref_shaped(revision: str) -> bool:
    """Whether ``revision`` keeps git's ref-name rules that matter in a URL path (``git check-ref-format``):
    no component is empty, ``.`` or ``..``, starts with ``.`` or ends with ``.lock`` / ``.``. ``@.`` or
    ``a/./b`` would otherwise be normalised by the URL layer into another revision."""
    for part in revision.split("/"):
        if not part or part.startswith(".") or part.endswith(".") or part.endswith(".lock"):
            return False
    return ".." not in revision


def is_hub_spec(text: str) -> bool:
    """Whether ``text`` has the shape of a hub model id (``org/name`` or ``org/name@rev``). The caller
    decides first whether it is an existing path; nothing is looked up here."""
    try:
        parse_spec(text)
    except InputError:
        return False
    return True


@dataclass(frozen=True)
class HubSettings:
    """Options a CLI command sets for every hub source opened inside :func:`hub_settings`.

    Attributes:
        offline: never touch the network.
        jobs: concurrent shard-header reads (None: the caller's value).
        token: hub token (None: ``HF_TOKEN`` or the stored token, as huggingface_hub does).
        hf_cache_dir: the Hugging Face cache folder (None: ``HF_HUB_CACHE``).
        cache_dir: the mtp-audit cache root (None: :func:`default_cache_dir`).
        use_cache: False: the mtp-audit cache is neither read nor written.
    """

    offline: bool = False
    jobs: int | None = None
    token: str | None = None
    hf_cache_dir: str | Path | None = None
    cache_dir: str | Path | None = None
    use_cache: bool = True


_SETTINGS: contextvars.ContextVar[HubSettings | None] = contextvars.ContextVar("mtp_audit_hub_settings", default=None)


@contextlib.contextmanager
def hub_settings(*, offline: bool = False, jobs: int | None = None, token: str | None = None,
                 hf_cache_dir: str | Path | None = None, cache_dir: str | Path | None = None,
                 use_cache: bool = True) -> Iterator[HubSettings]:
    """Apply ``--offline``/``--jobs``/``--token``/``--cache-dir`` to every :func:`audit_source_for` call in the
    block, so a command can pass them without the analyzer's signature knowing about them::

        with hub_settings(offline=offline, jobs=jobs):
            report = audit_checkpoint(target)
    """
    settings = HubSettings(offline=offline, jobs=jobs, token=token, hf_cache_dir=hf_cache_dir, cache_dir=cache_dir,
                           use_cache=use_cache)
    handle = _SETTINGS.set(settings)
    try:
        yield settings
    finally:
        _SETTINGS.reset(handle)


def check_jobs(jobs: int) -> int:
    """Validate a ``--jobs`` value.

    Raises:
        InputError: outside 1..:data:`MAX_JOBS`.
    """
    if not 1 <= jobs <= MAX_JOBS:
        raise InputError("--jobs", f"must be between 1 and {MAX_JOBS}, got {jobs}")
    return jobs


def _validate_like_safetensors(rel: str, obj: dict[str, Any], n: int, file_size: int) -> None:
    """The checks ``safetensors.safe_open`` makes on a header (Rust ``Metadata::validate`` and
    ``read_metadata`` in safetensors ``src/tensor.rs``), for a remote file whose bytes we do not
    have: tensors sorted by ``data_offsets`` must tile the data area from 0 with no gap or overlap,
    each span must equal ``prod(shape) * bits / 8`` (whole bytes), and the last end must be the file
    size minus ``8 + n``. Messages repeat safetensors' own, prefixed like
    :meth:`LocalSource.read_header`'s, so a local and a hub audit of a bad shard report the same text.

    Raises:
        ReadProblem: the header does not describe the file.
    """
    lead = "safetensors rejects the file: Error while deserializing header: "
    spans: list[tuple[int, int, str, str, tuple[int, ...]]] = []
    for name, entry in obj.items():
        if name == "__metadata__":
            meta = entry
            if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
                raise ReadProblem(rel, lead + "invalid JSON in header: __metadata__ must map strings to strings")
            continue
        if not isinstance(entry, dict):
            raise ReadProblem(rel, lead + f"invalid JSON in header: tensor `{name}` is not an object")
        dtype = entry.get("dtype")
        shape = entry.get("shape")
        offsets = entry.get("data_offsets")
        if dtype not in DTYPE_BITS:
            raise ReadProblem(rel, lead + f"invalid JSON in header: unknown variant `{dtype}`")
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            raise ReadProblem(rel, lead + f"invalid JSON in header: tensor `{name}` has an invalid shape")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(type(o) is int and o >= 0 for o in offsets)
        ):
            raise ReadProblem(rel, lead + f"invalid JSON in header: tensor `{name}` has invalid data_offsets")
        spans.append((offsets[0], offsets[1], name, dtype, tuple(shape)))
    spans.sort(key=lambda s: (s[0], s[1]))
    start = 0
    for begin, end, name, dtype, shape in spans:
        if begin != start or end < begin:
            raise ReadProblem(rel, lead + f"invalid offset for tensor `{name}`")
        start = end
        nbits = _checked_bits(shape, DTYPE_BITS[dtype])
        if nbits is None:
            raise ReadProblem(rel, lead + "overflow computing buffer size from shape and/or element type")
        if nbits % 8:
            raise ReadProblem(
                rel,
                lead + "The slice is slicing for subbytes dtypes, and the slice does not end up at a byte "
                "boundary, this is invalid.",
            )
        if end - begin != nbits // 8:
            raise ReadProblem(rel, lead + "invalid shape, data type, or offset for tensor")
    if start + 8 + n != file_size:
        raise ReadProblem(rel, lead + "incomplete metadata, file not fully covered")


#: Rust ``usize`` on the 64-bit platforms safetensors runs on: a count at or past this overflows ``checked_mul``.
_USIZE_LIMIT = 1 << 64


def _checked_bits(shape: tuple[int, ...], bits: int) -> int | None:
    """``prod(shape) * bits`` as safetensors computes it (``Metadata::validate`` in ``src/tensor.rs``: the element count
    folded with ``usize::checked_mul`` from 1, then ``checked_mul`` by the dtype's bit size), or ``None`` where Rust
    overflows: each partial product is checked as it is made, so a shape of many large dimensions stops at the first
    overflow (a plain product of 40,000 such dimensions took seconds, quadratic in the rank) and a 0 after an
    overflowing prefix does not hide it."""
    count = 1
    for d in shape:
        count *= d
        if count >= _USIZE_LIMIT:
            return None
    total = count * bits
    return total if total < _USIZE_LIMIT else None


def shard_header_from_prefix(rel: str, prefix: bytes, file_size: int) -> ShardHeader:
    """Parse a shard's first ``8 + n`` bytes into a :class:`ShardHeader`, with the same strict checks
    and messages as :meth:`LocalSource.read_header` (UTF-8, duplicate names, safetensors' offset
    rules against ``file_size``).

    Raises:
        ReadProblem: malformed header, or the run's JSON total is spent.
    """
    n = len(prefix) - 8
    raw = prefix[8:]
    try:
        counts = charge_header_json(raw, rel)
    except BudgetSpent as exc:
        raise ReadProblem(rel, exc.problem, "unreadable") from None
    fast = fast_header(rel, raw, file_size, counts)
    if fast is not None:
        return fast
    obj, dups = parse_header_json(rel, raw)
    if dups:
        shown = ", ".join(dups[:3])
        raise ReadProblem(rel, f"header names {len(dups)} tensor(s) more than once: {shown}")
    _validate_like_safetensors(rel, obj, n, file_size)
    return header_from_dict(rel, obj, n)


def _visible(rel: str) -> bool:
    """Files :class:`LocalSource` would list: no path part starting with ``.``, contained."""
    return contained_relpath(rel) is not None and not any(p.startswith(".") for p in rel.split("/"))


class HubSource(CheckpointSource):
    """One commit of a hub model repo, read through HTTP metadata requests and local caches.

    Build it with :func:`open_hub_source` or :func:`audit_source_for` (they resolve the revision);
    the constructor itself makes no request.

    Args:
        repo: ``org/name``.
        commit: the 40-hex commit sha everything is read at.
        files: the repo's files at ``commit`` (relative POSIX paths).
        revision: what the user asked for (``"main"``, a tag, a sha).
        endpoint: hub base URL (``HF_ENDPOINT``).
        token: hub token, or None for huggingface_hub's default (``HF_TOKEN`` / stored token).
        offline: never touch the network.
        jobs: concurrent header reads.
        timeout: per-request time-out in seconds (connect and each read).
        cache: the mtp-audit cache, or None to disable it.
        hf_cache_dir: the Hugging Face cache folder (``HF_HUB_CACHE``).
        listing_complete: False when ``files`` was pieced together offline (see :meth:`gaps`).
        prefetch_bytes: N > 0 (default :data:`DEFAULT_PREFETCH_BYTES`, 100,001) to ask for the first
            N bytes in one request and a second request only for longer headers: one request per shard
            in most cases, at the cost of reading up to ``N - 8 - n`` bytes of tensor data per shard;
            0 for exact header reads (two requests per shard, nothing past the header). See
            ``docs/hub.md`` "Header reads".
        meter: HTTP counters to continue (the resolution request of :func:`open_hub_source`).
    """

    def __init__(
        self,
        repo: str,
        commit: str,
        files: Iterable[str],
        *,
        revision: str | None = None,
        endpoint: str = "https://huggingface.co",
        token: str | None = None,
        offline: bool = False,
        jobs: int = DEFAULT_JOBS,
        timeout: float = 10.0,
        cache: HubCache | None = None,
        hf_cache_dir: str | Path | None = None,
        listing_complete: bool = True,
        prefetch_bytes: int = DEFAULT_PREFETCH_BYTES,
        meter: Any = None,
    ) -> None:
        if not SHA_RE.match(commit):
            raise InputError(f"{repo}@{commit}", "not a 40-hex commit sha")
        self.repo = repo
        self.commit = commit
        self.revision = revision or commit
        self.endpoint = endpoint.rstrip("/")
        self.offline = offline
        self.jobs = check_jobs(jobs)
        self.timeout = float(timeout)
        self.cache = cache
        self.hf_cache_dir = Path(hf_cache_dir) if hf_cache_dir is not None else None
        self.listing_complete = listing_complete
        self.prefetch_bytes = max(0, int(prefetch_bytes))
        self.display = f"{repo}@{commit}"
        visible = sorted({f for f in files if _visible(f)})
        if len(visible) > MAX_FILES:
            raise InputError(self.display, f"more than {MAX_FILES} files; not a checkpoint repo?")
        self._files = tuple(visible)
        self._fileset = frozenset(visible)
        self._token = token
        self._meter = meter
        self._headers_http: dict[str, str] | None = None
        self._lock = threading.Lock()
        self._json_memo: dict[str, Any] = {}
        self._header_memo: dict[str, ShardHeader | ReadProblem] = {}
        self._snapshot: LocalSource | Literal[False] | None = None
        #: file -> where its bytes came from: "hub", "hf-cache" or "mtp-audit-cache".
        self.served_from: dict[str, str] = {}

    # -- helpers -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _metered(self) -> Iterator[None]:
        from mtp_audit.sources import hubhttp

        if self._meter is None:
            self._meter = hubhttp.Meter()
        with hubhttp.metering(self._meter):
            yield

    def _http_headers(self) -> dict[str, str]:
        if self._headers_http is None:
            from huggingface_hub.utils import build_hf_headers

            from mtp_audit import __version__

            self._headers_http = build_hf_headers(
                token=self._token, library_name="mtp-audit", library_version=__version__
            )
        return self._headers_http

    def _url(self, rel: str) -> str:
        from huggingface_hub import hf_hub_url

        return hf_hub_url(self.repo, rel, revision=self.commit, endpoint=self.endpoint)

    def _check_rel(self, rel: str) -> None:
        """Same refusals, kinds and messages as :meth:`LocalSource._path` / ``read_json``."""
        if contained_relpath(rel) is None:
            raise ReadProblem(rel, "is not a relative path inside the checkpoint folder; not opened", "escapes")
        if rel not in self._fileset:
            raise ReadProblem(rel, "no such file", "missing")

    def _hf_snapshot(self) -> LocalSource | None:
        """The Hugging Face cache snapshot folder of this commit as a :class:`LocalSource`, if any."""
        if self._snapshot is None:
            self._snapshot = False
            if self.hf_cache_dir is not None:
                snap = self.hf_cache_dir / f"models--{self.repo.replace('/', '--')}" / "snapshots" / self.commit
                if snap.is_dir():
                    self._snapshot = LocalSource(snap, display=self.display)
        return self._snapshot or None

    def _hf_cached(self, rel: str) -> bool:
        """Whether ``rel`` of this commit is in the Hugging Face cache (``try_to_load_from_cache``)."""
        if self.hf_cache_dir is None or self._hf_snapshot() is None:
            return False
        from huggingface_hub import try_to_load_from_cache

        try:
            found = try_to_load_from_cache(self.repo, rel, cache_dir=self.hf_cache_dir, revision=self.commit)
        except (ValueError, OSError):
            return False
        return isinstance(found, str)

    # -- the CheckpointSource contract ---------------------------------------------------------

    def list_files(self) -> tuple[str, ...]:
        """See :meth:`CheckpointSource.list_files`: the repo's files at the commit, as listed by the hub
        (or the cached listing offline); hidden files are skipped like :class:`LocalSource` does."""
        return self._files

    def read_json(self, rel: str) -> Any:
        """See :meth:`CheckpointSource.read_json`. Order: memo, Hugging Face cache, mtp-audit cache,
        then one ``GET`` (none offline). Parsed by :func:`mtp_audit.sources.bounded.read_json_bounded`, exactly
        as locally. A file fetched from the hub that parsed is also put into the Hugging Face cache
        (:func:`mtp_audit.sources.hubcache.fill_hf_cache`; only from the hub that cache belongs to:
        :meth:`_hf_fill_dir`), so ``hf cache scan``, transformers offline and ``--offline`` audits see it.

        Raises:
            ReadProblem: missing, offline and not cached, network failure, too large or invalid JSON.
            InputError: the repo turned out gated or private.
        """
        with self._lock:
            if rel in self._json_memo:
                return self._json_memo[rel]
        self._check_rel(rel)
        if self._hf_cached(rel):
            snap = self._hf_snapshot()
            assert snap is not None
            value = snap.read_json(rel)
            origin = "hf-cache"
        elif (value := self._cached_json(rel)) is not _MISS:
            origin = "mtp-audit-cache"
        elif self.offline:
            raise ReadProblem(rel, OFFLINE_PROBLEM, "network")
        else:
            from mtp_audit.sources import hubhttp

            with self._metered():
                data = hubhttp.read_small_file(
                    self._url(rel), self._http_headers(), limit=MAX_JSON_BYTES, file=rel,
                    display=self.display, timeout=self.timeout,
                )
            value = self._parse_json_bytes(rel, data)
            if self.cache is not None:  # only once it parsed: a proxy's HTML "200" is never cached
                self.cache.put_file(self.repo, self.commit, rel, data)
            if (hf_dir := self._hf_fill_dir()) is not None:  # the whole file, as huggingface_hub would have stored it
                fill_hf_cache(hf_dir, self.repo, self.commit, rel, data, self.revision)
            origin = "hub"
        _LOG.debug("%s: %s from %s", self.display, rel, origin)
        with self._lock:
            self._json_memo[rel] = value
            self.served_from[rel] = origin
        return value

    def _hf_fill_dir(self) -> Path | None:
        """The Hugging Face cache folder files fetched here go into, or ``None`` when they do not: only from the hub
        huggingface_hub itself uses with that cache (``HF_ENDPOINT``, else huggingface.co). The cache has no notion
        of endpoint, so another endpoint's answers (a mirror, a test hub) would later be served as that hub's."""
        if self.hf_cache_dir is not None and self.endpoint == str(hub_constants().ENDPOINT).rstrip("/"):
            return self.hf_cache_dir
        return None

    def _cached_json(self, rel: str) -> Any:
        """The parsed value of ``rel`` from the mtp-audit cache, or :data:`_MISS` when there is no valid
        entry or the entry does not parse (it is then fetched again)."""
        if self.cache is None:
            return _MISS
        data = self.cache.get_file(self.repo, self.commit, rel)
        if data is None:
            return _MISS
        try:
            return self._parse_json_bytes(rel, data)
        except ReadProblem:
            return _MISS

    def _parse_json_bytes(self, rel: str, data: bytes) -> Any:
        """Parse ``data`` exactly as a local file is parsed (:func:`mtp_audit.sources.bounded.parse_json_bytes`).

        Raises:
            ReadProblem: not UTF-8, not JSON, or the run's JSON total is spent.
        """
        try:
            return parse_json_bytes(data, rel)
        except InputError as exc:
            raise ReadProblem(rel, exc.problem, "malformed") from None

    def read_header(self, rel: str) -> ShardHeader:
        """See :meth:`CheckpointSource.read_header` and the module docstring for the read order.

        Raises:
            ReadProblem: missing, offline and not cached, network failure, truncated, oversized or
                malformed header.
            InputError: the repo turned out gated or private.
        """
        result = self.read_headers([rel])[rel]
        if isinstance(result, ReadProblem):
            raise result
        return result

    def read_headers(self, rels: Iterable[str]) -> dict[str, ShardHeader | ReadProblem]:
        """Read many shard headers; cached ones first, the rest over HTTP with :attr:`jobs` threads.

        Returns:
            ``{file: ShardHeader or ReadProblem}`` in the order asked.

        Raises:
            InputError: the repo turned out gated or private (the remaining reads are cancelled).
        """
        order = list(dict.fromkeys(rels))
        out: dict[str, ShardHeader | ReadProblem] = {}
        pending: list[str] = []
        for rel in order:
            try:
                local = self._header_without_network(rel)
            except ReadProblem as exc:
                local = exc
            if local is None:
                pending.append(rel)
            else:
                out[rel] = local
        _LOG.info("%s: %d shard header(s): %d from the memo or a cache, %d to fetch with %d thread(s)", self.display,
                  len(order), len(order) - len(pending), len(pending), min(self.jobs, len(pending)) if pending else 0)
        if pending:
            progress = Progress(len(pending), "shard headers")
            with self._metered():
                self._http_headers()  # built once here, not raced by the worker threads
                pool = ThreadPoolExecutor(max_workers=min(self.jobs, len(pending)), thread_name_prefix="mtp-audit-hub")
                try:
                    futures = [
                        (rel, pool.submit(contextvars.copy_context().run, self._header_over_http, rel, progress))
                        for rel in pending
                    ]
                    for rel, fut in futures:
                        try:
                            out[rel] = fut.result()
                        except ReadProblem as exc:
                            out[rel] = exc
                except BaseException:
                    pool.shutdown(wait=True, cancel_futures=True)
                    progress.close()
                    raise
                pool.shutdown(wait=True)
                progress.close()
        with self._lock:
            for rel in order:
                self._header_memo.setdefault(rel, out[rel])
        return {rel: out[rel] for rel in order}

    def _header_without_network(self, rel: str) -> ShardHeader | ReadProblem | None:
        """The header from the memo or a cache; None when it must be fetched.

        Raises:
            ReadProblem: not a listed file, or offline and not cached.
        """
        with self._lock:
            if rel in self._header_memo:
                return self._header_memo[rel]
        self._check_rel(rel)
        if self._hf_cached(rel):
            snap = self._hf_snapshot()
            assert snap is not None
            header: ShardHeader | ReadProblem
            try:
                header = snap.read_header(rel)
            except ReadProblem as exc:
                header = exc
            self.served_from[rel] = "hf-cache"
            return header
        if self.cache is not None:
            entry = self.cache.get_header(self.repo, self.commit, rel)
            if entry is not None:
                self.served_from[rel] = "mtp-audit-cache"
                try:
                    return shard_header_from_prefix(rel, entry[0], entry[1])
                except ReadProblem as exc:
                    return exc
        if self.offline:
            raise ReadProblem(rel, OFFLINE_PROBLEM, "network")
        return None

    def read_gguf_header(self, rel: str) -> Any:
        """The GGUF header of ``rel`` (:func:`mtp_audit.sources.gguf.parse_gguf`): from the Hugging Face cache when the
        file is there, else with HTTP Range requests of about 1 MiB each (:data:`mtp_audit.sources.gguf.CHUNK`), the
        first of which also gives the file size; tensor data is never requested.

        Raises:
            ReadProblem: not a listed file, offline and not cached, network failure, malformed header.
            InputError: the repo turned out gated or private.
        """
        from mtp_audit.sources import gguf, hubhttp

        self._check_rel(rel)
        if self._hf_cached(rel):
            snap = self._hf_snapshot()
            assert snap is not None
            self.served_from[rel] = "hf-cache"
            return gguf.read_gguf_file(snap.root / rel, display=rel)
        if self.offline:
            raise ReadProblem(rel, OFFLINE_PROBLEM, "network")
        url, headers = self._url(rel), self._http_headers()

        def fetch(offset: int, n: int) -> bytes:
            with self._metered():
                body, _size = hubhttp.read_range(url, headers, offset, offset + n - 1, file=rel, display=self.display,
                                                 timeout=self.timeout)
            return body

        with self._metered():
            first, size = hubhttp.read_range(url, headers, 0, gguf.CHUNK - 1, file=rel, display=self.display,
                                             timeout=self.timeout)
        self.served_from[rel] = "hub"

        def fetch_cached(offset: int, n: int) -> bytes:
            if offset + n <= len(first):
                return first[offset:offset + n]
            return fetch(offset, n)

        return gguf.parse_gguf(fetch_cached, rel, size)

    def _header_over_http(self, rel: str, progress: Progress) -> ShardHeader:
        """Read one header with HTTP Range requests (see :attr:`prefetch_bytes`), cache the raw
        ``8 + n`` bytes, parse them.

        Raises:
            ReadProblem: see :meth:`read_header`.
        """
        from mtp_audit.sources import hubhttp

        try:
            url = self._url(rel)
            headers = self._http_headers()

            def rng(start: int, end: int) -> tuple[bytes, int]:
                return hubhttp.read_range(
                    url, headers, start, end, file=rel, display=self.display, timeout=self.timeout
                )

            first = max(8, self.prefetch_bytes)
            body, size = rng(0, first - 1)
            if len(body) < 8:
                raise ReadProblem(rel, f"file is {size} bytes, too short for a safetensors header")
            (n,) = struct.unpack("<Q", body[:8])
            if n > MAX_HEADER_BYTES:
                raise ReadProblem(rel, f"header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
            if 8 + n > size:
                raise ReadProblem(rel, f"header length {n} exceeds the file size {size}")
            if len(body) < 8 + n:
                rest, size2 = rng(len(body), 7 + n)
                if size2 != size or len(rest) != 8 + n - len(body):
                    raise ReadProblem(rel, "the file changed between two range requests", "network")
                body += rest
            prefix = body[: 8 + n]
            if self.cache is not None:
                self.cache.put_header(self.repo, self.commit, rel, prefix, size)
            self.served_from[rel] = "hub"
            return shard_header_from_prefix(rel, prefix, size)
        finally:
            progress.step()

    def stats(self) -> dict[str, int]:
        """``{"requests": n, "bytes_read": n}``: HTTP exchanges made (redirect hops and retries count)
        and response-body bytes read from the network by this source, resolution included. Files read
        from a cache count nothing."""
        if self._meter is None:
            return {"requests": 0, "bytes_read": 0}
        return self._meter.snapshot()

    # -- beyond the contract ---------------------------------------------------------------------

    def gaps(self) -> tuple[tuple[str | None, str], ...]:
        """What this source could not see beyond per-file problems, as ``(path or None, message)``;
        the analyzer should add each as a blocking Gap. Non-empty only offline without a cached
        file listing."""
        if self.listing_complete:
            return ()
        return (
            (
                None,
                f"offline: the file list of {self.display} is not cached, so only files in the Hugging Face "
                "cache and shards named by the index are known; an un-indexed shard (an MTP sidecar such "
                "as mtp.safetensors) cannot be seen",
            ),
        )

    def describe(self) -> dict[str, Any]:
        """JSON-ready facts about the source (for ``facts["checkpoint"]["source"]``)."""
        return {
            "kind": "hub",
            "repo": self.repo,
            "revision": self.revision,
            "commit": self.commit,
            "endpoint": self.endpoint,
            "offline": self.offline,
            "listing": "complete" if self.listing_complete else "partial (offline)",
        }


def _offline_commit(repo: str, revision: str, hf_cache_dir: Path, cache: HubCache | None, display: str) -> str:
    """Resolve ``revision`` without the network: a full sha as is, else the Hugging Face cache's
    ``refs/<revision>`` (what ``try_to_load_from_cache`` reads), else the mtp-audit cache's record.

    Raises:
        InputError: the revision was never resolved on this machine.
    """
    if SHA_RE.match(revision):
        return revision
    ref = hf_cache_dir / f"models--{repo.replace('/', '--')}" / "refs" / revision
    try:
        text = ref.read_text(encoding="ascii", errors="replace")[:64].strip() if ref.is_file() else ""
    except OSError:
        text = ""
    if SHA_RE.match(text):
        return text
    if cache is not None:
        sha = cache.get_ref(repo, revision)
        if sha is not None:
            return sha
    raise NotCached(
        display,
        f"offline, and revision {revision!r} was never resolved on this machine (not in the Hugging Face "
        f"cache at {hf_cache_dir} nor the mtp-audit cache); run once online, give the full commit sha of a cached "
        f"revision ({repo}@SHA), or audit a local copy (hf download {repo} --include '*.json' --local-dir DIR; "
        f"mtp-audit checkpoint DIR)",
    )


def _offline_listing(repo: str, commit: str, hf_cache_dir: Path, cache: HubCache | None, display: str) -> tuple[tuple[str, ...], bool]:
    """The file list offline: the cached hub listing (complete), else the Hugging Face snapshot's
    files plus the shards its index names (partial).

    Raises:
        InputError: nothing of this commit is cached.
    """
    if cache is not None:
        files = cache.get_listing(repo, commit)
        if files is not None:
            return files, True
    snap = hf_cache_dir / f"models--{repo.replace('/', '--')}" / "snapshots" / commit
    if snap.is_dir():
        local = LocalSource(snap, display=display)
        found = set(local.list_files())
        for rel in sorted(found):
            if rel.endswith(".safetensors.index.json"):
                try:
                    index = local.read_json(rel)
                except ReadProblem:
                    continue
                weight_map = index.get("weight_map") if isinstance(index, dict) else None
                if isinstance(weight_map, dict):
                    parent = rel.rpartition("/")[0]
                    for shard in weight_map.values():
                        if isinstance(shard, str) and contained_relpath(shard) is not None:
                            found.add(f"{parent}/{shard}" if parent else shard)
        return tuple(sorted(found)), False
    raise NotCached(
        display,
        f"offline, and nothing of commit {commit} is cached (no file list in the mtp-audit cache, no "
        f"snapshot in the Hugging Face cache at {hf_cache_dir}); run once online, or audit a local copy "
        f"(hf download {repo} --include '*.json' --local-dir DIR; mtp-audit checkpoint DIR)",
    )


def hub_constants() -> Any:
    """``huggingface_hub.constants``, which parses ``HF_ENDPOINT`` when it is first imported.

    Raises:
        InputError: ``HF_ENDPOINT`` is not a URL that parses.
    """
    try:
        from huggingface_hub import constants
    except ValueError as exc:  # HF_ENDPOINT='http://[::1'
        raise InputError("HF_ENDPOINT", f"not a valid URL ({exc})") from None
    return constants


def open_hub_source(
    repo: str,
    revision: str | None = None,
    *,
    offline: bool = False,
    jobs: int = DEFAULT_JOBS,
    token: str | None = None,
    endpoint: str | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    hf_cache_dir: str | Path | None = None,
    timeout: float | None = None,
    prefetch_bytes: int = DEFAULT_PREFETCH_BYTES,
) -> HubSource:
    """Resolve ``repo@revision`` to a commit and return its :class:`HubSource`.

    Args:
        repo: ``org/name``.
        revision: branch, tag or commit; None means ``main``.
        offline: never touch the network (also when ``HF_HUB_OFFLINE=1``).
        jobs: concurrent shard-header reads (1..:data:`MAX_JOBS`).
        token: hub token; None lets huggingface_hub pick ``HF_TOKEN`` or the stored token.
        endpoint: hub base URL; None means ``huggingface_hub.constants.ENDPOINT`` (``HF_ENDPOINT``).
        cache_dir: mtp-audit cache root; None means :func:`default_cache_dir`.
        use_cache: False disables the mtp-audit cache (reads and writes).
        hf_cache_dir: Hugging Face cache; None means ``huggingface_hub.constants.HF_HUB_CACHE``.
        timeout: per-request time-out in seconds; None means ``HF_HUB_DOWNLOAD_TIMEOUT`` (10).
        prefetch_bytes: see :class:`HubSource`.

    Raises:
        InputError: repo or revision not found, gated or private without a token, the hub unreachable
            or answering errors during resolution, or (offline) nothing cached for it. One line each.
    """
    display = f"{repo}@{revision}" if revision else repo
    constants = hub_constants()
    jobs = check_jobs(jobs)
    offline = offline or constants.is_offline_mode()
    endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
    hf_cache = Path(hf_cache_dir if hf_cache_dir is not None else constants.HF_HUB_CACHE)
    timeout = float(timeout if timeout is not None else constants.HF_HUB_DOWNLOAD_TIMEOUT)
    cache = HubCache(Path(cache_dir) if cache_dir is not None else default_cache_dir(), endpoint) if use_cache else None
    rev = revision or "main"
    common: dict[str, Any] = dict(
        revision=rev, endpoint=endpoint, token=token, offline=offline, jobs=jobs, timeout=timeout,
        cache=cache, hf_cache_dir=hf_cache, prefetch_bytes=prefetch_bytes,
    )
    if offline:
        commit = _offline_commit(repo, rev, hf_cache, cache, display)
        files, complete = _offline_listing(repo, commit, hf_cache, cache, display)
        return HubSource(repo, commit, files, listing_complete=complete, **common)
    if SHA_RE.match(rev) and cache is not None:
        # A commit never changes: with its file list cached there is nothing to ask the hub.
        listed = cache.get_listing(repo, rev)
        if listed is not None:
            return HubSource(repo, rev, listed, listing_complete=True, **common)

    commit, files, meter = _resolve_online(repo, rev, display, endpoint=endpoint, token=token, timeout=timeout)
    _LOG.info("%s: revision %s is commit %s (%d files) on %s", repo, rev, commit, len(files), endpoint)
    if cache is not None:
        cache.put_listing(repo, commit, files)
        if rev != commit:
            cache.put_ref(repo, rev, commit)
    return HubSource(repo, commit, files, listing_complete=True, meter=meter, **common)


def _resolve_online(repo: str, rev: str, display: str, *, endpoint: str, token: str | None, timeout: float) -> tuple[str, tuple[str, ...], Any]:
    """``(commit sha, file list, request meter)`` of ``repo@rev`` from the hub's model info (the tree API when a mirror
    leaves the file list out).

    Raises:
        InputError: no commit sha in the answer, a gated repo without a token, more than :data:`MAX_FILES` files, or
            the request failing (:func:`mtp_audit.sources.hubhttp.model_info`).
    """
    from huggingface_hub.utils import build_hf_headers, get_token

    from mtp_audit import __version__
    from mtp_audit.sources import hubhttp

    meter = hubhttp.Meter()
    have_token = bool(token or get_token())
    headers = build_hf_headers(token=token, library_name="mtp-audit", library_version=__version__)
    with hubhttp.metering(meter):
        info = hubhttp.model_info(endpoint, repo, rev, headers, timeout=timeout, display=display, have_token=have_token)
    commit = info.get("sha")
    if not isinstance(commit, str) or not SHA_RE.match(commit):
        raise InputError(display, f"the hub at {endpoint} returned no commit sha for revision {rev!r}")
    gated = info.get("gated")
    if gated and not have_token:
        raise InputError(
            display,
            f"gated repo ({gated} approval): accept the model's conditions on {endpoint}/{repo} and set HF_TOKEN",
        )
    siblings = info.get("siblings")
    if isinstance(siblings, list):
        files = tuple(s["rfilename"] for s in siblings if isinstance(s, dict) and isinstance(s.get("rfilename"), str))
    else:  # a mirror that leaves the file list out of the model info: ask the tree API
        with hubhttp.metering(meter):
            files = hubhttp.list_tree(
                endpoint, repo, commit, headers, timeout=timeout, display=display, max_files=MAX_FILES
            )
    if len(files) > MAX_FILES:
        raise InputError(display, f"more than {MAX_FILES} files; not a checkpoint repo?")
    return commit, files, meter


def audit_source_for(spec: str, *, offline: bool = False, jobs: int | None = None, token: str | None = None,
                     revision: str | None = None, hf_cache_dir: str | Path | None = None,
                     cache_dir: str | Path | None = None, use_cache: bool = True) -> CheckpointSource:
    """The :class:`CheckpointSource` for a hub id ``org/name[@revision]`` (the analyzer calls this
    for a target that is not an existing path).

    Options set by an enclosing :func:`hub_settings` block (the CLI's ``--offline``/``--jobs``/``--token``/
    ``--cache-dir``) apply on top of the arguments: ``offline`` if either says so, ``use_cache`` off if either
    says so, the others from the block when set. ``revision`` (``--revision``) is the spec's ``@revision``;
    giving both is an error.

    Raises:
        InputError: malformed spec, repo or revision not found (404), gated or private without a token
            (401/403), hub unreachable during resolution, or offline with nothing cached. One line.
    """
    repo, at = parse_spec(spec)
    if revision is not None and at is not None and revision != at:
        raise InputError(spec, f"names revision {at!r} and --revision names {revision!r}: give one")
    if revision is not None:
        parse_spec(f"{repo}@{revision}")  # the same checks as a revision after '@'
    settings = _SETTINGS.get() or HubSettings()
    return open_hub_source(
        repo, at or revision, offline=offline or settings.offline,
        jobs=settings.jobs if settings.jobs is not None else (jobs if jobs is not None else DEFAULT_JOBS),
        token=token if token is not None else settings.token,
        hf_cache_dir=hf_cache_dir if hf_cache_dir is not None else settings.hf_cache_dir,
        cache_dir=cache_dir if cache_dir is not None else settings.cache_dir,
        use_cache=use_cache and settings.use_cache)


def source_facts(source: CheckpointSource) -> dict[str, Any]:
    """Where a checkpoint's metadata came from, for ``facts["checkpoint"]["source"]``: for the hub,
    :meth:`HubSource.describe` plus ``requests`` and ``bytes_read`` ("the report states how many
    HTTP requests were made and how many bytes were read"); ``{"kind": "local"}`` otherwise."""
    if isinstance(source, HubSource):
        return {**source.describe(), **source.stats()}
    return {"kind": "local", **source.stats()}
