"""Why a hub audit could not see the repo: exceptions shared by :mod:`~mtp_audit.sources.hub` and
:mod:`~mtp_audit.sources.hubhttp` (kept apart so neither imports the other's module for them)."""

from __future__ import annotations

from mtp_audit.errors import InputError


class HubUnavailable(InputError):
    """The hub could not be asked (connection refused, time-out, HTTP 5xx) or, offline, nothing of the
    revision is cached. Not a mistake in the user's input: the checkpoint analyzer turns it into an
    inconclusive report (exit 3) naming what could not be seen. Repo/revision not found and access
    denied stay plain :class:`InputError` (exit 2)."""


class NotCached(HubUnavailable):
    """Offline (``--offline`` / ``HF_HUB_OFFLINE=1``) and nothing of the requested revision is in the
    Hugging Face cache or the mtp-audit cache. Not a mistake in the input: the checkpoint analyzer
    reports it as an inconclusive audit (exit 3) that names what could not be seen."""


__all__ = ["HubUnavailable", "NotCached"]
