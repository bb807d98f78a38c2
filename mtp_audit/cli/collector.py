"""The cyclic garbage collector paused while the CLI loads its modules (:func:`pause`, :func:`resume`).

Loading the modules of a ``mtp-audit checkpoint`` run creates some 100k objects the collector tracks (functions,
classes, their dicts, compiled patterns): 18 young and 2 middle collections walk them while they load (~3 ms of
a metadata-only run, measured with ``gc.callbacks``) and free nothing, since a loaded module stays alive. The
entry point (:func:`mtp_audit.cli.fast.main`) pauses the collector before it loads the command and resumes it
when the command's own work starts (:func:`mtp_audit.cli.fastpath.run`), when click takes over, or when it
returns: a command runs with the collector as the caller had it (``mtp-audit checkpoint`` pauses it again for
its audit, as :func:`mtp_audit.checkpoint.analyze.analyze` does for a library caller). A collector the caller had
disabled stays disabled and is never touched.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Disable the collector if it is enabled and not already paused here."""
    global _paused
    if not _paused and gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Re-enable the collector if :func:`pause` disabled it. What is alive is first moved to the oldest generation
    (``gc.freeze()`` then ``gc.unfreeze()``, which walks nothing), so re-enabling does not start a young collection
    over every loaded object (as :func:`mtp_audit.sources.local.paused_gc` does, and for the same reason, skipped
    when the caller froze objects itself: they stay frozen)."""
    global _paused
    if _paused:
        _paused = False
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        gc.enable()
