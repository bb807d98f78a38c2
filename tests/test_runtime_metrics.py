"""``mtp-audit log --metrics URL`` against a loopback HTTP server serving vLLM-format metric texts
(names and labels from vllm/v1/spec_decode/metrics.py @ v0.33.0, parsed by prometheus_client)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from mtp_audit.cli.main import main
from mtp_audit.errors import InputError
from mtp_audit.runtime.metrics import check_url, fetch, read_window, sample
from mtp_audit.runtime.rules import METRICS_AFTER, METRICS_BEFORE

pytest.importorskip("prometheus_client")


@pytest.fixture()
def server() -> Iterator[tuple[str, list[str]]]:
    texts = [METRICS_BEFORE, METRICS_AFTER]
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.path)
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "http://example.com/metrics")
                self.end_headers()
                return
            body = (texts[min(len(seen) - 1, 1)] if self.path == "/metrics" else "x" * 5000).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_window_between_two_reads(server: tuple[str, list[str]]) -> None:
    base, seen = server
    w = read_window(base + "/metrics", 0.05)
    assert seen == ["/metrics", "/metrics"]
    assert (w["engine"], w["drafts"], w["drafted"], w["accepted"]) == ("vllm", 12, 36, 5)
    assert round(w["acceptance_rate"], 4) == round(5 / 36, 4)
    assert round(w["mean_acceptance_length"], 4) == round(1 + 5 / 12, 4)
    assert w["per_position"] == {"0": 4 / 12}


def test_cli_metrics_only(server: tuple[str, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    base, _ = server
    assert main(["log", "--metrics", base + "/metrics", "--interval", "0", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["facts"]["log"]["verdict"] == "ran-and-helped"
    assert [f["rule_id"] for f in doc["findings"]] == ["MTP520"]
    assert "5 of 36 drafted tokens accepted" in doc["findings"][0]["message"]


def test_redirect_is_not_followed(server: tuple[str, list[str]]) -> None:
    base, seen = server
    with pytest.raises(InputError, match="HTTP 302"):
        fetch(base + "/redirect", 2.0)
    assert seen == ["/redirect"]


def test_size_cap(server: tuple[str, list[str]]) -> None:
    base, _ = server
    with pytest.raises(InputError, match="more than 1000 bytes"):
        fetch(base + "/big", 2.0, max_bytes=1000)


def test_only_loopback_or_the_named_host() -> None:
    assert check_url("http://127.0.0.1:8000/metrics") and check_url("http://[::1]:30000/metrics") and check_url("http://localhost/metrics")
    with pytest.raises(InputError, match="not a loopback address"):
        check_url("http://10.0.0.5:8000/metrics")
    assert check_url("http://10.0.0.5:8000/metrics", "10.0.0.5")
    with pytest.raises(InputError, match="not an http"):
        check_url("file:///etc/passwd")


def test_refused_connection_is_one_line_could_not_tell(capsys: pytest.CaptureFixture[str]) -> None:
    """A server that is down (or not up yet) is "could not tell", exit 3, as an unreachable hub is (a new user
    found it was exit 2, the code of a mistake in the input)."""
    assert main(["log", "--metrics", "http://127.0.0.1:9/metrics", "--interval", "0", "--timeout", "1"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("INCONCLUSIVE: could not tell: --metrics http://127.0.0.1:9/metrics: ") and err.count("\n") == 1


def test_not_exposition_text() -> None:
    with pytest.raises(InputError, match="not Prometheus exposition text"):
        sample("vllm:spec_decode_num_drafts_total{engine=\"0\" 3\n")


def test_sglang_gauges() -> None:
    text = ("# HELP sglang:spec_accept_length Mean acceptance length of speculative decoding.\n"
            "# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length{model_name=\"m\"} 2.63\n"
            "# TYPE sglang:spec_accept_rate gauge\nsglang:spec_accept_rate{model_name=\"m\"} 0.54\n")
    assert sample(text) == {"accept_length": 2.63, "accept_rate": 0.54}
