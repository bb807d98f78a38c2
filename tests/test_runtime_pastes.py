"""``mtp-audit log`` on pastes as a fresh user made them from the real SGLang and vLLM excerpts in fixtures/logs/:
folded or terminal-cut statistics lines, a later run without speculation, figures no engine prints. Each expected
value was checked by hand against the excerpt (SGLang ``metrics_reporter.py:963-1043`` @ 0.5.23 writes
``accept len: {:.2f}, accept rate: {:.2f}, `` whenever a speculative algorithm is set, line 967)."""

from __future__ import annotations

from pathlib import Path

from mtp_audit.runtime.analyze import analyze_log

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
SGLANG = LOGS / "sglang_pr608_decode_batch_tp_ep.log"
#: Two Decode batch lines of the same format without the accept fields, ten minutes after the excerpt's.
NO_SPEC = ("[2026-07-21 15:10:13 TP0 EP0] Decode batch, #running-req: 24, #token: 233600, token usage: 0.66, npu graph: "
           "True, gen throughput (token/s): 239.06, #queue-req: 2\n"
           "[2026-07-21 15:10:17 TP0 EP0] Decode batch, #running-req: 23, #token: 227968, token usage: 0.64, npu graph: "
           "True, gen throughput (token/s): 631.96, #queue-req: 3\n")


def _log(tmp_path: Path, text: str, name: str = "x.log") -> tuple[dict, list[str], list[str]]:
    p = tmp_path / name
    p.write_text(text)
    report = analyze_log([p])
    return (report.facts["log"], [f.rule_id for f in report.findings], [g.message for g in report.gaps])


def test_a_later_run_without_speculation_is_a_new_run(tmp_path: Path) -> None:
    """Decode batch lines without 'accept len' after lines with it come from a process started without speculation:
    a second run, reported (it was ran-and-helped over the three speculative lines, the two others ignored)."""
    log, rules, _ = _log(tmp_path, SGLANG.read_text() + NO_SPEC)
    f = log["files"][0]
    assert log["verdict"] == "never-ran"
    assert rules == ["MTP501", "MTP509"]
    assert f["decode_without_speculation"] == {"lines": 2, "first_line": 8}
    assert [(r["start"], r["end"], r["intervals"], round(r["mean_len"], 2)) for r in f["runs"]["earlier"]] == [(1, 7, 3, 2.84)]
    assert f["runs"]["starts"] == [8]


def _fold(text: str, width: int) -> str:
    """``fold -w width``: every line cut into pieces of ``width`` characters, nothing lost (coreutils fold)."""
    out = []
    for line in text.splitlines():
        out += [line[i:i + width] for i in range(0, len(line), width)] or [""]
    return "\n".join(out) + "\n"


#: The excerpt with lower acceptance lengths, as the user made it (sed on the three accept len values).
LOW = SGLANG.read_text().replace("accept len: 3.05", "accept len: 1.95").replace(
    "accept len: 2.63", "accept len: 1.91").replace("accept len: 2.83", "accept len: 1.93")


def _figures(log: dict) -> tuple:
    st = log["files"][0]["statistics"]
    return (log["verdict"], st["intervals"], st["mean_acceptance_length"], st["acceptance_rate"],
            st["accepted_tokens"], st["drafted_tokens"])


def test_a_folded_sglang_paste_is_joined(tmp_path: Path) -> None:
    """``fold -w 110`` cuts each Decode batch line inside its accept len (``accept len: 1`` / ``.95, accept rate``):
    it was ran-but-accepted-nothing at 1.00 (and 2.33 for the excerpt itself); the pieces are joined back, as the
    unfolded file reads (1.93 = (1.95 + 1.91 + 1.93) / 3, rate (0.68 + 0.54 + 0.61) / 3)."""
    plain, _, _ = _log(tmp_path, LOW, "low.log")
    assert _figures(plain) == ("ran-and-helped", 3, 1.93, 0.61, 0, 0)
    for width in (60, 80, 110, 150):
        folded, rules, gaps = _log(tmp_path, _fold(LOW, width), f"f{width}.log")
        assert (_figures(folded), rules, gaps) == (_figures(plain), [], []), width
    log, _, _ = _log(tmp_path, _fold(SGLANG.read_text(), 110), "f0.log")
    assert _figures(log) == ("ran-and-helped", 3, 2.8367, 0.61, 0, 0)
    assert log["files"][0]["statistics"]["last_printed"]["line"] == 10
    assert "accept len: 2.83, accept rate: 0.61," in log["files"][0]["statistics"]["last_printed"]["text"]


def test_a_number_cut_at_the_line_end_is_no_figure(tmp_path: Path) -> None:
    """A Decode batch line ending ``accept len: 1`` or ``accept len: 1.`` (SGLang prints ``{:.2f}, `` there) then a new
    record: not a figure (it was FAIL at 1.00); one blocking gap names the line; the other lines still count. One
    whose next line continues it is joined (``1`` + ``.95, ...``)."""
    head = "[2026-07-21 15:00:13 TP0 EP0] Decode batch, #running-req: 24, #token: 233600, token usage: 0.66, accept len: "
    rest = ".95, accept rate: 0.61, cuda graph: True, gen throughput (token/s): 648.87, #queue-req: 4\n"
    for cut in ("1", "1."):
        log, rules, gaps = _log(tmp_path, head + cut + "\n")
        assert (log["verdict"], log["files"][0]["statistics"]["intervals"], rules) == ("could-not-tell", 0, [])
        shown = "..." + (head[30:] + cut)[-60:]
        assert gaps[0] == (f"{tmp_path / 'x.log'}: 1 statistics line from line 1 stops inside a figure and no line "
                           f"continues it (a terminal or a paste cut it there): '{shown}'; not counted")
        assert gaps[1].endswith("could not tell whether MTP ran: no statistics line could be read (above), and it lacks "
                                "'Decode batch' lines ('accept len:' appears in them when a speculative algorithm runs) "
                                "and the 'server_args=' line")
    joined, _, gaps = _log(tmp_path, head + "1\n" + rest)
    assert (_figures(joined), gaps) == (("ran-and-helped", 1, 1.95, 0.61, 0, 0), [])
    # a line after the cut that begins with a letter is no continuation of a number: not joined, the cut line not read
    lines = SGLANG.read_text().splitlines(keepends=True)
    log, _, gaps = _log(tmp_path, lines[0] + head + "1\n" + "npu graph: True\n" + "".join(lines[1:]))
    assert _figures(log) == ("ran-and-helped", 3, 2.8367, 0.61, 0, 0)
    assert len(gaps) == 1 and "1 statistics line from line 2 stops inside a figure" in gaps[0]


VLLM = LOGS / "vllm_ascend_12521_multi_engine.log"
OLD_VLLM = LOGS / "vllm_pr24127_ngram_old_format.log"


def test_a_folded_vllm_paste_counts_each_line_once(tmp_path: Path) -> None:
    """Folded SpecDecoding lines: each piece after the first carries fields ('Mean acceptance length:', 'tokens,
    Drafted: ') and was counted as a statistics line of its own (4 or 6 for 2). The pieces are joined: 2 lines, 581 of
    906 drafted tokens, as unfolded; v0.9's format (its line starts with the rate's '%' and ends with the per-position
    list, vllm/v1/spec_decode/metrics.py:88-89 @ v0.9.2) likewise (1 line, 262 of 295)."""
    for path, want in ((VLLM, ("ran-and-helped", 2, 2.925, 0.64128, 581, 906)),
                       (OLD_VLLM, ("ran-and-helped", 1, 5.44, 0.88814, 262, 295))):
        plain, _, _ = _log(tmp_path, path.read_text(), "plain.log")
        assert _figures(plain) == want
        for width in (80, 110, 150):
            folded, rules, gaps = _log(tmp_path, _fold(path.read_text(), width), f"f{width}.log")
            assert (_figures(folded), rules, gaps) == (want, [], []), (path.name, width)


def test_a_vllm_count_cut_at_the_line_end_is_no_figure(tmp_path: Path) -> None:
    """``Drafted: 62`` at a line end (``%d tokens`` follows it in the format) then a new record: not read, one gap
    (it was read as 62 drafted tokens); a bare ``Mean acceptance length: 5.00`` (all its ``%.2f`` decimals) is whole."""
    line = VLLM.read_text().splitlines()[1]
    cut = line[:line.index("Drafted: ") + len("Drafted: 62")]
    log, _, gaps = _log(tmp_path, cut + "\n" + VLLM.read_text())
    assert _figures(log)[1:] == (2, 2.925, 0.64128, 581, 906)
    assert len(gaps) == 1 and "1 statistics line from line 1 stops inside a figure" in gaps[0]
    bare, _, gaps = _log(tmp_path, "Mean acceptance length: 5.00\n")
    assert (_figures(bare)[:3], gaps) == (("ran-and-helped", 1, 5.0), [])


def _decode(value: str) -> str:
    return (f"[2026-07-21 15:00:13 TP0 EP0] Decode batch, #running-req: 24, #token: 233600, token usage: 0.66, accept len: "
            f"{value}, accept rate: 0.68, npu graph: True, gen throughput (token/s): 239.06, #queue-req: 2\n")


SERVER_ARGS = ("[2026-07-21 15:00:00] server_args=ServerArgs(model_path='m', speculative_algorithm='EAGLE', "
               "speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4, tp_size=8)\n")


def test_a_value_that_is_not_a_number_is_could_not_tell(tmp_path: Path) -> None:
    """``accept len: nan``: the line has the field (speculation was on), its value is unknown: could-not-tell with a
    gap naming the line (it was never-ran, 'line without accept len')."""
    log, rules, gaps = _log(tmp_path, _decode("nan"))
    assert (log["verdict"], rules, log["files"][0]["decode_without_speculation"]["lines"]) == ("could-not-tell", [], 0)
    assert gaps[0].startswith(f"{tmp_path / 'x.log'}: 1 statistics line from line 1 prints a figure that is not a "
                              "number, or one no engine prints (a damaged or edited line): 'Decode batch, #running-req")
    assert "accept len: nan" in gaps[0]


def test_acceptance_lengths_out_of_bounds_are_a_damaged_log(tmp_path: Path) -> None:
    """A mean acceptance length below 1 (every step yields the target's own token), or above 1 + the draft length
    the log configures (SGLang speculative_num_steps=3, speculative_num_draft_tokens=4: at most 4.00), is a damaged
    line: could-not-tell, as "accepted > drafted" is (both were ran-and-helped)."""
    for value, sentence in (("-3.00", "line 1 prints a mean acceptance length of -3.00 (below 1: each step yields the "
                                      "target's own token), which no engine prints (a damaged or edited log)"),
                            ("0.50", "line 1 prints a mean acceptance length of 0.50 (below 1")):
        log, _, _ = _log(tmp_path, _decode(value))
        assert log["verdict"] == "could-not-tell" and sentence in log["answer"][0]
    log, _, _ = _log(tmp_path, SERVER_ARGS + _decode("999.00"))
    assert log["verdict"] == "could-not-tell"
    assert ("line 2 prints a mean acceptance length of 999.00, above 1 + 3 draft tokens per step (line 1), which no "
            "engine prints") in log["answer"][0]
    log, _, _ = _log(tmp_path, SERVER_ARGS + _decode("4.00"))
    assert _figures(log) == ("ran-and-helped", 1, 4.0, 0.68, 0, 0)


def test_a_line_cut_after_a_whole_figure_keeps_it(tmp_path: Path) -> None:
    """A Decode batch line cut after its whole accept len (``3.05, acc``) then a new record: the figure is read as
    before (a cut takes the rate away, never turns the length into another number)."""
    head = "[2026-07-21 15:00:13 TP0 EP0] Decode batch, #running-req: 24, #token: 233600, token usage: 0.66, accept len: "
    nxt = '[2026-07-21 15:00:15] INFO:     127.0.0.1:43514 - "POST /generate HTTP/1.1" 200 OK\n'
    for cut in ("3.05, acc", "3.05"):
        log, _, gaps = _log(tmp_path, head + cut + "\n" + nxt)
        assert (_figures(log), gaps) == (("ran-and-helped", 1, 3.05, None, 0, 0), []), cut


def test_another_engines_statistics_do_not_make_a_restart(tmp_path: Path) -> None:
    """SGLang lines without 'accept len' after vLLM's SpecDecoding lines (two engines' logs in one paste): no SGLang
    speculative line came before them, so they start no run (the report stays that of the whole paste)."""
    log, rules, _ = _log(tmp_path, VLLM.read_text() + NO_SPEC)
    f = log["files"][0]
    assert (log["verdict"], rules, f["runs"]["earlier"]) == ("ran-and-helped", [], [])
    assert (f["statistics"]["intervals"], f["decode_without_speculation"]["lines"]) == (2, 2)
