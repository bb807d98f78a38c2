"""Engine TARGET arguments: an existing path as given, a release version fetched from the package index, or the
installed package's folder."""

from __future__ import annotations

import os


def release_or_path(package: str, target: str | None) -> str | None:
    """A TARGET argument as the analyzer takes it: ``None`` or an existing path as given, a release version (``0.5.23``)
    as the local wheel :func:`mtp_audit.sources.pypi.by_version` fetches. The package-index client is imported only for
    a version, so a path does not pay for it at start-up.

    Raises:
        InputError / IndexUnavailable: as :func:`mtp_audit.sources.pypi.release_wheel`.
    """
    if target is None or os.path.lexists(target):
        return target
    from mtp_audit.sources.pypi import by_version

    return by_version(package, target)


def installed_package_folder(name: str) -> list[str]:
    """``[folder]`` of the installed top-level package ``name`` (located with ``find_spec``, which does not
    run its ``__init__``), or ``[]``: what an engine command with no TARGET audits, protected like any input."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    return [str(p) for p in (spec.submodule_search_locations or [])][:1] if spec is not None else []
