"""One way to write a byte count in every report: the exact count, then decimal gigabytes (SI, 10**9, as model
cards and ``hf cache`` sizes are written): ``13,191,136,256 bytes (13.19 GB)``. Small counts get MB or kB."""

from __future__ import annotations


def human_bytes(n: int | float | None) -> str:
    """``13,191,136,256 bytes (13.19 GB)``; ``18,840 bytes (18.8 kB)``; ``512 bytes``; ``"unknown bytes"`` for None."""
    if n is None:
        return "unknown bytes"
    count = f"{int(n):,} bytes"
    if n >= 1e9:
        return f"{count} ({n / 1e9:.2f} GB)"
    if n >= 1e6:
        return f"{count} ({n / 1e6:.1f} MB)"
    if n >= 1e3:
        return f"{count} ({n / 1e3:.1f} kB)"
    return count
