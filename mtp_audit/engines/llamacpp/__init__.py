"""llama.cpp (and the ik_llama.cpp fork): MTP knowledge as sourced tables and the launch audit of
``llama-server`` / ``llama-cli`` commands.

- :mod:`mtp_audit.engines.llamacpp.tables`: which GGUF architectures have a ``draft-mtp`` graph since which
  build, flag spellings per fork, known traps, each row with its pull request or report;
- :mod:`mtp_audit.engines.llamacpp.command`: the flags that decide MTP, parsed from a command line;
- :mod:`mtp_audit.engines.llamacpp.launch`: the launch audit (rules MTP600-MTP649).

Kept light: importing this package imports nothing else.
"""

from __future__ import annotations
