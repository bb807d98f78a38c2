"""``mtp-audit log FILE... | -``: did MTP run, and did it help? The click command; the analyzer is
imported when the command runs."""

from __future__ import annotations

from pathlib import Path

import click

from mtp_audit.cli.emit import emit
from mtp_audit.cli.options import output_options


@click.command()
@click.argument("files", nargs=-1, metavar="FILE...")
@click.option("--metrics", "metrics_url", default=None, metavar="URL",
              help="Also read this Prometheus endpoint twice (vLLM/SGLang/llama-server spec-decode metrics); loopback hosts only unless --metrics-host names the host.")
@click.option("--metrics-host", default=None, metavar="HOST", help="The one non-loopback host --metrics may read.")
@click.option("--interval", type=click.FloatRange(0.0, 600.0), default=10.0, show_default=True,
              help="Seconds between the two --metrics reads.")
@click.option("--timeout", type=click.FloatRange(0.1, 120.0), default=5.0, show_default=True, help="Seconds allowed for each whole --metrics read (connection, headers, body).")
@output_options
def log(files: tuple[str, ...], metrics_url: str | None, metrics_host: str | None, interval: float, timeout: float,
        fmt: str, output: Path | None, fail_on: str) -> int:
    """Read SGLang, vLLM, llama-server or TensorRT-LLM logs: did MTP run, what was accepted, over time?

    \b
    mtp-audit log server.log
    kubectl logs pod/sglang-0 | mtp-audit log -
    mtp-audit log --metrics http://127.0.0.1:8000/metrics --interval 30

    The verdict (JSON facts.log.verdict) is one of ran-and-helped, ran-but-accepted-nothing,
    ran-then-stopped, never-ran, could-not-tell; facts.log.engine names the engine.

    Exit codes: 0 ok, 1 findings at or above --fail-on, 2 input error, 3 could not tell.
    """
    from mtp_audit.errors import InputError, Unavailable
    from mtp_audit.runtime.analyze import analyze_log, analyze_metrics_only

    metrics, unreachable = None, None
    if metrics_url:
        from mtp_audit.runtime.metrics import read_window

        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            raise InputError("--metrics", "needs prometheus_client (pip install 'mtp-audit[metrics]')") from None
        try:
            metrics = read_window(metrics_url, interval, timeout=timeout, allow_host=metrics_host)
        except Unavailable as exc:
            if not files:  # the endpoint was all there was to read
                raise
            unreachable = exc.problem  # the logs are still read: the metrics window is a gap beside their report
    if files:
        report = analyze_log(list(files), metrics=metrics, metrics_unavailable=unreachable)
    elif metrics is not None:
        report = analyze_metrics_only(metrics)
    else:
        raise InputError("FILE", "no log given (name a file, '-' for standard input, or use --metrics URL)")
    return emit(report, fmt, output, fail_on, protected=[f for f in files if f != "-"])
