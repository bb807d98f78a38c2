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
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
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


# --- llama-server's counters, resets, non-finite values, the whole-read bound, protocol errors ---------------------

def _llama(drafted: int, accepted: int, steps: int, per_pos: tuple[int, ...] = ()) -> str:
    """An exposition text as llama-server writes it (llama.cpp 0c1e57098 tools/server/server-task.cpp:1554-1564,
    1596-1598, 1606-1613: HELP, TYPE, then ``llamacpp:<name> <value>``; per-position lines with a ``position``
    label)."""
    text = ""
    for name, help_, value in (("spec_decode_num_draft_tokens_total", "Speculative: Total draft tokens generated", drafted),
                               ("spec_decode_num_accepted_tokens_total", "Speculative: Total draft tokens accepted by the target model", accepted),
                               ("spec_decode_num_drafts_total", "Speculative: Total speculative decoding verification steps", steps)):
        text += f"# HELP llamacpp:{name} {help_}\n# TYPE llamacpp:{name} counter\nllamacpp:{name} {value}\n"
    text += "# HELP llamacpp:requests_processing Number of requests processing\n# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 1\n"
    if per_pos:
        text += ("# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position\n"
                 "# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter\n")
        text += "".join(f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {v}\n' for i, v in enumerate(per_pos))
    return text


def _vllm(drafts: float, drafted: float, accepted: float, engine: str = "0") -> str:
    lbl = f'engine="{engine}",model_name="m"'
    return (f"# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total{{{lbl}}} {drafts}\n"
            f"# TYPE vllm:spec_decode_num_draft_tokens_total counter\nvllm:spec_decode_num_draft_tokens_total{{{lbl}}} {drafted}\n"
            f"# TYPE vllm:spec_decode_num_accepted_tokens_total counter\nvllm:spec_decode_num_accepted_tokens_total{{{lbl}}} {accepted}\n")


def _serve_texts(texts: list[str]):  # type: ignore[no-untyped-def]
    from hostilekit import HostileServer, send

    seen: list[int] = []

    def respond(h):  # type: ignore[no-untyped-def]
        seen.append(1)
        send(h, 200, texts[min(len(seen), len(texts)) - 1].encode(), {"Content-Type": "text/plain; version=0.0.4"})

    return HostileServer(respond)


def test_llama_server_counters_give_a_window() -> None:
    """llama-server's ``llamacpp:`` counters (not read before: "no speculative-decoding metric")."""
    w = __import__("mtp_audit.runtime.metrics", fromlist=["x"]).window_from_texts(
        _llama(100, 60, 40, (30, 20, 10)), _llama(733, 61, 673, (31, 20, 10)), 10, "u")
    assert (w["engine"], w["drafted"], w["accepted"], w["drafts"], w["reset"]) == ("llamacpp", 633, 1, 633, False)
    assert w["per_position"] == {"0": 1 / 633, "1": 0.0, "2": 0.0} and w["mean_acceptance_length"] == 1 + 1 / 633


def test_llama_server_cli_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    with _serve_texts([_llama(0, 0, 0), _llama(633, 1, 633)]) as srv:
        assert main(["log", "--metrics", srv.endpoint + "/metrics", "--interval", "0", "-f", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["facts"]["log"]["verdict"] == "ran-but-accepted-nothing" and doc["facts"]["log"]["engine"] == "llamacpp"
    by_rule = {f["rule_id"]: f["message"] for f in doc["findings"]}
    assert sorted(by_rule) == ["MTP500", "MTP520"]
    assert by_rule["MTP520"].startswith("llama-server metrics window: 1 of 633 drafted tokens accepted in 0 s")


def test_a_counter_reset_reports_the_run_after_it(capsys: pytest.CaptureFixture[str]) -> None:
    """Counters that went down between the reads (an engine restart) were subtracted as they were: "PASS:
    ran-and-helped: -1000 of -4700 drafted tokens accepted" while the restarted engine accepted 0 of 300."""
    with _serve_texts([_vllm(2000, 5000, 1000), _vllm(100, 300, 0)]) as srv:
        code = main(["log", "--metrics", srv.endpoint + "/metrics", "--interval", "0", "-f", "json"])
    doc = json.loads(capsys.readouterr().out)
    m = doc["facts"]["log"]["metrics"]
    assert (m["accepted"], m["drafted"], m["drafts"], m["reset"]) == (0, 300, 100, True)
    assert doc["facts"]["log"]["verdict"] == "ran-but-accepted-nothing" and code == 1
    by_rule = {f["rule_id"]: f["message"] for f in doc["findings"]}
    assert "0 of 300 drafted tokens accepted (a counter went down between the reads: the engine restarted" in by_rule["MTP520"]


def test_a_reset_is_told_series_by_series() -> None:
    """Two engines (label ``engine``): one restarts, one goes on; the sums alone would hide the restart."""
    from mtp_audit.runtime.metrics import window_from_texts

    before = _vllm(10, 100, 50, "0") + _vllm(10, 100, 50, "1").replace("# TYPE", "# X")
    after = _vllm(15, 400, 200, "0") + _vllm(1, 5, 1, "1").replace("# TYPE", "# X")
    w = window_from_texts(before, after, 5, "u")
    assert (w["drafted"], w["accepted"], w["drafts"], w["reset"]) == (300 + 5, 150 + 1, 5 + 1, True)


@pytest.mark.parametrize("before, text", [
    ("", "# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length{model_name=\"m\"} NaN\n"
         "# TYPE sglang:spec_accept_rate gauge\nsglang:spec_accept_rate{model_name=\"m\"} NaN\n"),
    ("", _vllm(10, "+Inf", 5)), ("", _vllm(10, "NaN", 5)), ("", _vllm(10, 30, -4)), ("", _llama(100, 10, "+Inf")),
    (_vllm(1, 3, 1), _vllm(10, 30, "NaN")),  # drafted known and growing, accepted not: found by the fuzz kind
])
def test_a_value_that_is_not_finite_is_could_not_tell(before: str, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """NaN gauges were "PASS ... accept length nan"; a counter at +Inf was exit 4."""
    before = before or text.replace("NaN", "1").replace("+Inf", "1").replace("-4", "1")
    with _serve_texts([before, text]) as srv:
        code = main(["log", "--metrics", srv.endpoint + "/metrics", "--interval", "0", "-f", "json"])
    out = capsys.readouterr().out
    doc = json.loads(out)  # strict JSON: no NaN, no Infinity
    assert code == 3 and doc["facts"]["log"]["verdict"] == "could-not-tell"
    assert [f["rule_id"] for f in doc["findings"]] == ["MTP520"] and "could not tell" in doc["findings"][0]["message"]
    assert "NaN" not in out and "Infinity" not in out


def _drip(srv_box: list):  # type: ignore[no-untyped-def]
    from hostilekit import trickle

    return lambda h: trickle(h, srv_box[0].stopping, chunk=b"#", pause=0.3, limit_s=10, headers={"Content-Type": "text/plain"})


@pytest.mark.parametrize("how", ["--timeout", "MTP_AUDIT_NETWORK_SECONDS"])
def test_the_timeout_bounds_the_whole_read(how: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``--timeout 1`` limited each socket read only: a server sending a byte every 0.5 s kept the run going; the
    network budget was not applied either."""
    import time

    from hostilekit import HostileServer

    box: list = []
    with HostileServer(_drip(box)) as srv:
        box.append(srv)
        if how == "MTP_AUDIT_NETWORK_SECONDS":
            monkeypatch.setenv("MTP_AUDIT_NETWORK_SECONDS", "0.5")
        t0 = time.monotonic()
        code = main(["log", "--metrics", srv.endpoint + "/metrics", "--interval", "0",
                     "--timeout", "0.5" if how == "--timeout" else "60"])
        took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == 3 and took < 3 and err.startswith("INCONCLUSIVE: could not tell: --metrics ") and err.count("\n") == 1


@pytest.mark.parametrize("raw", [b"SSH-2.0-OpenSSH_9.6\r\n",
                                 b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n",
                                 b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: y\r\n" % i for i in range(101)) + b"Content-Length: 0\r\n\r\n"],
                         ids=["banner", "broken-chunked", "101-headers"])
def test_a_protocol_error_is_one_line_could_not_tell(raw: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    """http.client's protocol errors went through (exit 4)."""
    from hostilekit import HostileServer

    def respond(h):  # type: ignore[no-untyped-def]
        h.wfile.write(raw)
        h.wfile.flush()
        h.close_connection = True

    with HostileServer(respond) as srv:
        assert main(["log", "--metrics", srv.endpoint + "/metrics", "--interval", "0", "--timeout", "2"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("INCONCLUSIVE: could not tell: --metrics ") and err.count("\n") == 1 and "internal error" not in err


def test_the_pause_between_the_reads_is_not_network_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's network time bounds the reads, not the ``--interval`` between them (a 0.4 s budget, a 0.6 s pause)."""
    monkeypatch.setenv("MTP_AUDIT_NETWORK_SECONDS", "0.4")
    with _serve_texts([_vllm(1, 3, 1), _vllm(2, 6, 2)]) as srv:
        w = read_window(srv.endpoint + "/metrics", 0.6)
    assert (w["drafts"], w["drafted"], w["accepted"]) == (1, 3, 1)


# --- the samples come from each engine's dialect ----------------------------------------------------------------------

def test_a_registered_engine_lends_its_metric_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--metrics`` reads the samples an engine's log dialect names (no engine is known to the reader itself): a
    registered engine's counters give a window under its id and its label, and the "no metric" message lists it
    (counter engines first)."""
    from test_engine_registry import FakeEngine

    from mtp_audit.engines import registry
    from mtp_audit.engines.base import LogDialect, LogMetrics, MetricSample
    from mtp_audit.runtime.analyze import analyze_metrics_only
    from mtp_audit.runtime.metrics import window_from_texts

    metrics = LogMetrics("fake-server", "counters", tuple(
        MetricSample(key, f"fake:{key}_total", "fake.py:1 @ 1.0") for key in ("accepted", "drafted", "drafts")))

    class Fake(FakeEngine):
        def log_dialect(self) -> LogDialect:
            return LogDialect("fake", "Fake", ("fake-serve",), (), (), lambda toks: None, metrics=metrics)

    monkeypatch.setattr(registry, "EXTRA", [Fake()])
    text = "# TYPE fake:{0} counter\nfake:{0}_total {1}\n".format
    w = window_from_texts(text("drafts", 2) + text("drafted", 6) + text("accepted", 3),
                          text("drafts", 12) + text("drafted", 36) + text("accepted", 23), 5, "u")
    assert (w["engine"], w["drafts"], w["drafted"], w["accepted"], w["mean_acceptance_length"]) == ("fake", 10, 30, 20, 3.0)
    report = analyze_metrics_only(w)
    assert report.facts["log"]["verdict"] == "ran-and-helped"
    assert [f.message for f in report.findings] == [
        "fake-server metrics window: 20 of 30 drafted tokens accepted in 5 s (66.7 %, mean acceptance length 3.00)"]
    none = window_from_texts("", "# TYPE x counter\nx_total 1\n", 5, "u")
    assert [f.message for f in analyze_metrics_only(none).findings] == [
        "no speculative-decoding metric at u (neither vLLM's, llama-server's, fake-server's nor SGLang's)"]


@pytest.mark.parametrize("labels, words", [((), ""), (("vLLM",), " (not vLLM's)"), (("vLLM", "SGLang"), " (neither vLLM's nor SGLang's)")])
def test_no_metric_names_the_engines_read(monkeypatch: pytest.MonkeyPatch, labels: tuple[str, ...], words: str) -> None:
    """The "no metric" message names every engine whose samples were looked for, however many (none: no list)."""
    from mtp_audit.engines.base import LogMetrics
    from mtp_audit.runtime import metrics

    monkeypatch.setattr(metrics, "_dialects", lambda: tuple((lb.lower(), LogMetrics(lb, "counters", ())) for lb in labels))
    w = metrics.window_from_texts("", "", 5, "u")
    assert [f.message for f in metrics.metrics_findings(w)] == [f"no speculative-decoding metric at u{words}"]


def test_unreachable_metrics_keeps_the_logs_report(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--metrics`` down beside a log: the log's report is written (its FAIL outranks the gap, exit 1), and the
    metrics window is one blocking gap of the runtime question (it was exit 3, a stderr line, no report)."""
    out = tmp_path / "m.json"
    code = main(["log", "fixtures/logs/llama_27151_mtp_1_of_633.log", "--metrics", "http://127.0.0.1:9/metrics",
                 "--interval", "0", "--timeout", "1", "-f", "json", "-o", str(out)])
    assert code == 1
    doc = json.loads(out.read_text())
    assert doc["facts"]["log"]["verdict"] == "ran-but-accepted-nothing"
    assert [f["rule_id"] for f in doc["findings"]] == ["MTP500"]
    assert [(g["blocking"], g["question"]) for g in doc["gaps"]] == [(True, "runtime")]
    assert doc["gaps"][0]["message"].startswith("--metrics http://127.0.0.1:9/metrics: the connection failed")
    assert "metrics" not in doc["facts"]["log"]


def test_binary_answer_is_named_bounded_and_escaped() -> None:
    """A binary answer: the error names the URL and shows at most 80 characters of the parser's complaint, escaped
    (it printed ~300 raw bytes without the URL)."""
    blob = "vllm:spec_decode_num_drafts_total " + "\x00\x9b\x1b[31m" * 100 + "\n"
    with pytest.raises(InputError) as exc:
        read = __import__("mtp_audit.runtime.metrics", fromlist=["window_from_texts"]).window_from_texts
        read(blob, blob, 1.0, "http://127.0.0.1:1/metrics")
    msg = str(exc.value)
    assert "http://127.0.0.1:1/metrics: not Prometheus exposition text (" in msg
    assert "\x1b" not in msg and "\x00" not in msg and len(msg) < 200



@pytest.mark.parametrize("after, code, verdict, why", [
    # 20 draft steps: 0.8 ** 20 = 1.15 % > 1 %, no evidence
    (_vllm(20, 60, 0), 3, "could-not-tell", "too few drafted in the window: 20 draft steps, 60 drafted tokens (0 accepted)"),
    # 21 steps: under 1 % at a healthy 20 % first-token acceptance
    (_vllm(21, 63, 0), 1, "ran-but-accepted-nothing", None),
    # the fresh-user window after a restart, 0 of 10: was the MTP500 verdict, exit 1
    (_vllm(3, 10, 0), 3, "could-not-tell", "too few drafted in the window: 3 draft steps, 10 drafted tokens (0 accepted)"),
])
def test_a_window_with_too_few_draft_steps_is_could_not_tell(after: str, code: int, verdict: str, why: str | None,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    with _serve_texts(["", after]) as srv:
        assert main(["log", "--metrics", srv.endpoint + "/metrics", "--interval", "0", "-f", "json"]) == code
    doc = json.loads(capsys.readouterr().out)
    assert doc["facts"]["log"]["verdict"] == verdict
    assert ("MTP500" in {f["rule_id"] for f in doc["findings"]}) == (code == 1)
    assert [g["message"].split(": ", 1)[1].split(";")[0] for g in doc["gaps"]] == ([why] if why else [])
