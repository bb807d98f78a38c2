"""Which GPUs a CUDA process gets: ``CUDA_VISIBLE_DEVICES`` and ``NVIDIA_VISIBLE_DEVICES`` applied to
the GPUs the driver enumerates (NVML / nvidia-smi).

Sources of the encoded rules:

* ``CUDA_VISIBLE_DEVICES`` -- CUDA C++ Programming Guide, "CUDA Environment Variables" (Device
  Enumeration and Properties): a comma-separated sequence of GPU identifiers, each an integer index,
  a ``GPU-<uuid>`` string ("abbreviated forms are allowed; simply specify enough digits from the
  beginning of the GPU UUID to uniquely identify that GPU"), or a MIG device ``MIG-<GPU-UUID>/<GI>/<CI>``
  / ``MIG-<uuid>``. "Only the devices whose index is present in the sequence are visible ... enumerated
  in the order of the sequence. If one of the indices is invalid, only the devices whose index precedes
  the invalid index are visible" (``0,2,-1,1`` shows devices 0 and 2). An empty value shows none.
  The MPS part of NVIDIA's deployment guide (topic 5.2.1) repeats that a UUID prefix including
  ``GPU-`` works. Seen on the lent H200 (driver 580.159.04, torch 2.11.0, 2026-12-01;
  fixtures/preflight/h200/live-20261201/torch-visible.jsonl): ``1,0`` -> 0 devices, ``0,1`` -> 1, ``0,-1`` -> 1,
  ``none``/``void``/``""`` -> 0, a 12-character UUID prefix -> 1, ``MIG-<uuid>/0/0`` with MIG off -> 0.
* Index order: CUDA numbers devices fastest-first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; NVML and
  nvidia-smi number them by PCI bus id ("The NVML index may not correlate with other APIs, such as the
  CUDA device index", NVML ``nvmlDeviceGetIndex``). With identical GPUs the order does not change the
  count, capability or memory; with different GPUs an index may name another GPU than nvidia-smi's row
  of that number, which :func:`cuda_visible` says in a note.
* ``NVIDIA_VISIBLE_DEVICES`` -- NVIDIA Container Toolkit, "Specialized configurations with Docker",
  GPU enumeration: read by the container runtime hook when a container is *created* (``all``, ``none``:
  no GPU but the driver's libraries, ``void``/empty/unset: the runtime does nothing, indices, UUIDs,
  MIG). A process started inside a running container, or on the host, is not affected by it, and the
  GPUs NVML lists inside a container are already the ones it selected. :func:`nvidia_visible_note`
  therefore never filters; it explains.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from mtp_audit.known import AT_LEAST, EXACT, Extent
from mtp_audit.preflight.facts import GpuFacts, MachineFacts

_INDEX = re.compile(r"^[+-]?\d+$")


@dataclass(frozen=True)
class Visibility:
    """The GPUs a process gets after ``CUDA_VISIBLE_DEVICES``.

    Attributes:
        gpus: the visible GPUs in CUDA's enumeration order (each keeps its driver ``index``).
        value: the variable's value (``None``: unset, every enumerated GPU is visible).
        source: where the value came from (``"command"``, ``"--env"``, ``"environment"``, ``"facts"``).
        stopped_at: the first token CUDA treats as invalid (the rest of the list is ignored), or ``None``.
        mig: MIG device tokens (``MIG-...``): each gives at most one device, none when no such MIG instance
            exists (``MIG-GPU-<uuid>/0/0`` on the lent H200, MIG off, left CUDA with 0 devices); not in :attr:`count`.
        notes: one line each: what was applied, tokens dropped, order caveats.
        exact: ``False`` when the count depends on something not in the facts (MIG tokens, a UUID with no
            GPU UUIDs recorded, an index beyond a GPU list that is only a lower bound).
        listed: the extent of the machine's GPU list these came from (:data:`mtp_audit.known.Extent`): ``"at least"``
            when the list is a lower bound (a table cut before its end, prose without a count), so more GPUs may be
            visible than :attr:`count`; ``"unknown"`` when no GPU was listed at all.
        listed_source: how that list was read (the preflight's ``gpu_list`` source), for messages.
    """

    gpus: tuple[GpuFacts, ...]
    value: str | None = None
    source: str = ""
    stopped_at: str | None = None
    mig: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    exact: bool = True
    listed: Extent = EXACT
    listed_source: str = ""

    @property
    def count(self) -> int:
        """Number of whole GPUs the process surely sees (MIG tokens excluded; see :attr:`mig`)."""
        return len(self.gpus)

    def covers(self, needed: int) -> bool | None:
        """Whether ``needed`` GPUs are visible: ``True`` (surely: :attr:`count` reaches it and every entry was
        matched, whatever the list's extent, since a lower bound that reaches it suffices), ``False`` (surely
        not: a whole list, and even the MIG devices named cannot make it up) or ``None`` (could not tell:
        fewer are seen in a list that is only a lower bound, or entries could not be matched)."""
        if self.count >= needed and self.exact:
            return True
        if self.listed == EXACT and self.count + len(self.mig) < needed:
            return False
        return None

    def describe_count(self) -> str:
        """``"8"`` or ``"at least 2 (nvidia-smi (table cut: ...))"``: the visible count with its extent."""
        if self.listed == EXACT and self.exact:
            return str(self.count)
        why = self.listed_source if self.listed != EXACT else "; ".join(self.notes)
        return f"at least {self.count}" + (f" ({why})" if why else "")


def cuda_visible(gpus: tuple[GpuFacts, ...] | list[GpuFacts], value: str | None, *, source: str = "",
                 device_order: str | None = None, listed: Extent = EXACT, listed_source: str = "") -> Visibility:
    """Apply ``CUDA_VISIBLE_DEVICES=value`` to the enumerated ``gpus`` (NVML / nvidia-smi order).

    Args:
        gpus: every GPU the driver lists, with ``index`` = NVML / nvidia-smi index and, when read, ``uuid``.
        value: the variable (``None`` = unset: all visible; ``""`` = none visible; ``"none"``/``"void"``
            are not CUDA syntax: like any other invalid first token they leave no device visible).
        source: where the value came from, repeated in the notes.
        device_order: ``CUDA_DEVICE_ORDER`` (``"PCI_BUS_ID"`` makes CUDA indices equal NVML's).
        listed: the extent of ``gpus`` (``"at least"``: the list is cut, so an index or UUID beyond it may name a
            GPU that exists: it is not counted, the answer is not exact, and CUDA's "stops at an invalid entry"
            is not applied to it).
        listed_source: how the list was read, kept for messages.

    Returns:
        a :class:`Visibility`. Never raises.
    """
    gpus = tuple(gpus)
    if value is None:
        return Visibility(gpus, None, source, listed=listed, listed_source=listed_source)
    where = f" ({source})" if source else ""
    text = value.strip()
    if not text:
        return Visibility((), value, source, notes=(f"CUDA_VISIBLE_DEVICES is empty{where}: CUDA sees no GPU",))
    by_index = {g.index: g for g in gpus}
    kept: list[GpuFacts] = []
    mig: list[str] = []
    notes: list[str] = []
    exact = True
    stopped: str | None = None
    for raw in text.split(","):
        tok = raw.strip()
        hit: GpuFacts | None = None
        why = ""
        if _INDEX.match(tok):
            i = int(tok)
            hit = by_index.get(i) if i >= 0 else None
            why = (f"index {i} is negative" if i < 0 else f"index {i} is beyond the {len(gpus)} GPU(s) listed (0-{len(gpus) - 1})"
                   if gpus else f"index {i}: no GPU is listed")
        elif tok.upper().startswith("MIG-"):
            mig.append(tok)
            exact = False
            continue
        elif tok.upper().startswith("GPU-"):
            hit, why, sure = _match_uuid(tok, gpus)
            exact = exact and sure
            if hit is not None and not sure:
                notes.append(why)
        else:
            why = f"'{tok}' is neither an index, a GPU- UUID nor a MIG- device"
        if hit is not None and any(k.index == hit.index for k in kept):
            notes.append(f"GPU {hit.index} is named twice in CUDA_VISIBLE_DEVICES; counted once")
            continue
        if hit is None and listed != EXACT and not tok.startswith("-") and (_INDEX.match(tok) or tok.upper().startswith("GPU-")):
            exact = False  # beyond a list that is only a lower bound: the GPU may exist
            notes.append(f"{tok}: not among the {len(gpus)} GPU(s) listed, but the list is cut ({listed_source or 'at least'}); not counted")
            continue
        if hit is None:
            stopped = tok
            notes.append(f"CUDA_VISIBLE_DEVICES={value}{where}: {why}; CUDA ignores it and every entry after it")
            break
        kept.append(hit)
    names = {str(g.name.value) for g in gpus if g.name.present}
    if len(names) > 1 and (device_order or "").upper() != "PCI_BUS_ID" and any(_INDEX.match(t.strip()) for t in text.split(",")):
        notes.append("the GPUs differ and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA numbers devices fastest first, so an "
                     "index may name another GPU than nvidia-smi's row of that number (UUIDs avoid this)")
    if mig:
        notes.append(f"{len(mig)} MIG device(s) named ({', '.join(mig)}): each is at most one slice of a GPU, none if that MIG "
                     "instance does not exist; MIG instances are not in these facts")
    notes.insert(0, f"CUDA_VISIBLE_DEVICES={value}{where}: {len(kept)} of {len(gpus)} GPU(s) visible"
                 + (f" ({', '.join(str(g.index) for g in kept)})" if kept else ""))
    return Visibility(tuple(kept), value, source, stopped, tuple(mig), tuple(notes), exact, listed, listed_source)


def machine_visible(machine: MachineFacts, env: Mapping[str, str], env_source: Mapping[str, str]) -> Visibility:
    """The GPUs a launch's processes see on ``machine``: a ``CUDA_VISIBLE_DEVICES`` written before the program or
    given with ``--env`` (``env_source`` ``"command"`` / ``"--env"``) applied to every GPU the driver listed
    (:attr:`MachineFacts.all_gpus`, :func:`cuda_visible`); otherwise the machine's own list, which a live collection
    has already filtered by this process's ``CUDA_VISIBLE_DEVICES``. The list's extent (``gpu_list.extent``) travels
    with the answer (:attr:`Visibility.listed`)."""
    listed = machine.gpu_count
    extent: Extent = listed.extent
    how = "" if extent == EXACT else (machine.gpu_list.source if extent == AT_LEAST else f"no GPU listed: {listed.source.how}")
    if env_source.get("CUDA_VISIBLE_DEVICES") in ("command", "--env") and "CUDA_VISIBLE_DEVICES" in env:
        order = env.get("CUDA_DEVICE_ORDER") or machine.env.get("CUDA_DEVICE_ORDER")
        return cuda_visible(machine.all_gpus, env["CUDA_VISIBLE_DEVICES"], source=env_source["CUDA_VISIBLE_DEVICES"],
                            device_order=order, listed=extent, listed_source=how)
    vis = machine.env.get("CUDA_VISIBLE_DEVICES")
    note = tuple(n for n in machine.notes if n.startswith("CUDA_VISIBLE_DEVICES="))
    return Visibility(machine.gpus, vis, "environment" if vis is not None else "", notes=note, listed=extent, listed_source=how)


def _match_uuid(tok: str, gpus: tuple[GpuFacts, ...]) -> tuple[GpuFacts | None, str, bool]:
    """``(GPU, why, sure)`` for a ``GPU-<uuid prefix>`` entry: the one GPU whose UUID starts with it (CUDA needs a
    unique prefix); ``sure`` is ``False`` when some GPUs' UUIDs were not recorded (one of them may match too)."""
    with_uuid = [g for g in gpus if g.uuid.present]
    matches = [g for g in with_uuid if str(g.uuid.value).lower().startswith(tok.lower())]
    unknown = len(gpus) - len(with_uuid)
    if len(matches) == 1 and not unknown:
        return matches[0], "", True
    if len(matches) > 1:
        return None, f"{tok} is a prefix of {len(matches)} GPU UUIDs (CUDA needs a unique prefix)", True
    if unknown:
        # a GPU without a recorded UUID may match too (or make a unique-looking prefix ambiguous)
        return (matches[0] if matches else None,
                f"{tok}: the UUIDs of {unknown} GPU(s) were not recorded, so this UUID cannot be matched for sure", False)
    return None, f"{tok} matches no listed GPU UUID", True


def nvidia_visible_note(value: str | None, source: str) -> str | None:
    """What ``NVIDIA_VISIBLE_DEVICES=value`` means for a launch (``None`` when unset).

    It is read by the NVIDIA container runtime when a container is created, never by CUDA: in a launch
    command's ``KEY=VALUE`` prefix it selects nothing; in the environment of a live collection inside a
    container, NVML already lists only the GPUs it selected (and ``none``/``void`` containers list none).
    """
    if value is None:
        return None
    v = value.strip().lower()
    meaning = {"all": "every GPU", "none": "no GPU (driver libraries only)", "void": "nothing (the runtime acts like runc)",
               "": "nothing (the runtime acts like runc)"}.get(v, f"GPU(s) {value}")
    if source == "environment":
        return (f"NVIDIA_VISIBLE_DEVICES={value} (environment): the container runtime exposed {meaning} when this container "
                "was created; the GPUs listed are already that selection, so it is not applied again")
    return (f"NVIDIA_VISIBLE_DEVICES={value} ({source}): read only by the NVIDIA container runtime when it creates a container "
            f"(it would expose {meaning}); set before a program it changes nothing. Use CUDA_VISIBLE_DEVICES, or pass it "
            "to docker run / the pod spec")



def visible_at_most(value: str) -> int | None:
    """At most how many GPUs a process sees under ``CUDA_VISIBLE_DEVICES=value`` whatever the machine: the bound a
    launch's own variable gives when the machine's GPUs are unknown (``--no-machine``, a dump without a GPU list).

    Each entry names at most one device, CUDA ignores every entry from the first invalid one on (a negative index
    stops the list: "0,2,-1,1" shows at most 2), and an empty value shows none (the CUDA rules in this module's
    docstring). So a list of integer indices shows at most its distinct non-negative indices before the first
    negative one.

    Returns:
        that bound, or ``None`` (could not tell) for any other value: a ``GPU-`` UUID or ``MIG-`` entry, or text the
        shell has yet to expand (``$X``), may stand for anything. Never raises.
    """
    text = value.strip()
    if not text:
        return 0
    named: set[int] = set()
    for raw in text.split(","):
        tok = raw.strip()
        if not _INDEX.match(tok):
            return None
        if int(tok) < 0:
            break
        named.add(int(tok))
    return len(named)
