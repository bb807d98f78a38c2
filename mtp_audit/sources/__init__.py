"""Where audited bytes come from, and how they are read safely.

- :mod:`~mtp_audit.sources.bounded`: bounded, contained file access (byte limits, no path outside the
  audited folder, no special files);
- :mod:`~mtp_audit.sources.local`: a checkpoint folder on disk (:class:`LocalSource`), the
  :class:`CheckpointSource` interface and the safetensors header records;
- :mod:`~mtp_audit.sources.hub`, :mod:`~mtp_audit.sources.hubhttp`, :mod:`~mtp_audit.sources.hubcache`: a
  checkpoint on the Hugging Face hub, read with range requests, and its on-disk cache;
- :mod:`~mtp_audit.sources.tree`: an engine's Python source (checkout, package folder, wheel, installed).
- :mod:`~mtp_audit.sources.pypi`: an engine release by version, from the package index with range requests;
- :mod:`~mtp_audit.sources.netpolicy`: the one HTTP policy (deadlines, caps, http(s) only, redirects, one-line
  failures) of the hub, package-index and metrics clients.

Nothing here knows what an MTP layer is: analyzers interpret the bytes.
"""
