"""Which distributions a machine has installed, and which it surely has not (``MachineAnswer.installed``), from the
live machine, a facts file, and dumps: ``pip freeze`` / ``pip list`` (whole listings, in name order), ``vllm
collect-env`` (``[pip3]`` lines of some packages only), sglang ``check_env`` ("Module Not Found").

Real inputs: fixtures/preflight/envdumps/pip/pip-freeze-vllm-0.33.0-cpu.txt and pip-list-vllm-0.33.0-cpu.txt (pip 23.2.1
in the CPU venv the vLLM 0.33.0 oracle was recorded in: 140 distributions, ``agent-detector`` .. ``yarl``, no
arctic-inference; torch and vllm installed from local wheels), vllm-21274.txt, sglang-11208.txt (line 32:
``vllm: Module Not Found``).
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from mtp_audit.preflight import piplist
from mtp_audit.preflight.collect import collect_packages
from mtp_audit.preflight.envdump import parse_dump
from mtp_audit.preflight.facts import PACKAGES, MachineFacts
from mtp_audit.preflight.typed import MachineAnswer

DUMPS = FIXTURES / "preflight" / "envdumps"
FREEZE = DUMPS / "pip" / "pip-freeze-vllm-0.33.0-cpu.txt"
PIP_LIST = DUMPS / "pip" / "pip-list-vllm-0.33.0-cpu.txt"


def _answer(text: str) -> MachineAnswer:
    return MachineAnswer.from_facts(parse_dump(text))


@pytest.mark.parametrize(("path", "first_row", "torch_row"), [(FREEZE, 2, 126), (PIP_LIST, 4, 130)])
def test_a_whole_pip_listing_says_installed_and_not_installed(path, first_row: int, torch_row: int) -> None:
    a = _answer(path.read_text())
    assert a.origin.startswith("env-dump:pip-list")
    assert (a.package("vllm"), a.package("torch"), a.package("triton")) == ("0.33.0", "2.13.0+cpu", "3.9.0")
    assert a.installed("vllm").value is True and a.installed("vllm").extent == "exact"
    arctic = a.installed("arctic-inference")
    assert (arctic.value, arctic.extent, arctic.source.line) == (False, "exact", first_row)
    assert a.installed("aiter").value is False  # between aiosignal and annotated-doc
    assert a.facts.torch_version.value == "2.13.0+cpu" and a.facts.torch_version.source == f"pip-list line {torch_row}"


def test_the_freeze_lines_are_140_rows_in_name_order() -> None:
    [lst] = piplist.listings(FREEZE.read_text())
    assert len(lst.rows) == 140 and lst.ordered and not lst.header
    assert lst.rows[0][:2] == ("agent-detector", "agent-detector") and lst.rows[-1][1] == "yarl"


def test_a_cut_pip_listing_never_says_absent_past_its_cut() -> None:
    for path in (FREEZE, PIP_LIST):
        text = path.read_text()
        whole = _answer(text)
        lines = text.splitlines(keepends=True)
        for k in range(len(lines) + 1):
            for part in ("".join(lines[:k]), "".join(lines[k:])):
                facts = piplist.parse_pip_list(part)
                shown = [r for lst in piplist.listings(part) for r in lst.rows]
                for dist in PACKAGES:
                    seen = MachineAnswer.from_facts(facts).installed(dist)
                    if seen.value is None:
                        continue
                    # never a different answer than the whole listing's, and "not installed" only between shown lines
                    assert seen.value == whole.installed(dist).value, (path.name, k, dist)
                    if seen.value is False:
                        names = sorted(r[1] for r in shown)
                        assert names and dist.replace("-", "_") < names[-1], (path.name, k, dist)


def test_a_paste_cut_inside_a_line_does_not_read_that_line() -> None:
    text = FREEZE.read_text()
    cut = text[: text.index("attrs==26.1.0") + len("attrs==26")]  # the paste ends inside the attrs line
    a = _answer(cut)
    # the cut line is not read, so the listing ends at apache-tvm-ffi: arctic-inference would come after it
    assert a.installed("arctic-inference").value is None


def test_a_freeze_that_may_have_lost_its_head_says_nothing_before_its_first_line() -> None:
    lines = FREEZE.read_text().splitlines(keepends=True)
    start = lines.index("attrs==26.1.0\n")
    a = _answer("".join(lines[start:]))
    assert a.installed("aiter").value is None and a.installed("arctic-inference").value is None
    assert a.installed("vllm").value is True and a.installed("sglang").value is False


def test_freeze_order_is_by_the_name_as_spelled() -> None:
    # pip freeze sorts by the lower-case name as installed: arctic_inference (spelled with '_') sorts after arctic-j, so
    # a listing that ends at arctic-j may have lost it
    text = "aaa==1\narctic-a==1\narctic-j==1\n"
    assert _answer(text).installed("arctic-inference").value is None
    assert _answer(text + "zzz==1\n").installed("arctic-inference").value is False


def test_an_unordered_listing_says_nothing_of_absent_names() -> None:
    lines = FREEZE.read_text().splitlines(keepends=True)
    shuffled = [lines[0]] + list(reversed(lines[1:]))
    a = _answer("".join(shuffled))
    assert a.installed("arctic-inference").value is None and a.package("vllm") == "0.33.0"


def test_vllm_collect_env_lists_only_some_packages() -> None:
    text = (DUMPS / "vllm-21274.txt").read_text()
    assert _answer(text).installed("arctic-inference").value is None  # not one of its DEFAULT_PIP_PATTERNS
    assert _answer(text).installed("flashinfer-python").value is True
    with_it = text.replace("[pip3] numpy==2.2.6", "[pip3] arctic_inference==0.1.1")
    a = _answer(with_it)
    assert (a.installed("arctic-inference").value, a.package("arctic-inference")) == (True, "0.1.1")


def test_check_env_module_not_found_is_not_installed() -> None:
    got = _answer((DUMPS / "sglang-11208.txt").read_text()).installed("vllm")
    assert (got.value, got.extent, got.source.line) == (False, "exact", 32)


def test_facts_file_and_live_machine() -> None:
    d = json.loads((FIXTURES / "preflight" / "h200-live-facts.json").read_text())
    a = MachineAnswer.from_facts(MachineFacts.from_dict(d))
    assert a.installed("arctic-inference").value is None  # recorded before it was collected
    assert (a.installed("vllm").value, a.installed("torch").value) == (False, True)
    versions, _pins = collect_packages()
    assert versions["arctic-inference"].source == "importlib.metadata"
    live = MachineAnswer.from_facts(MachineFacts(origin="live", packages=versions)).installed("arctic-inference")
    assert live.extent == "exact"  # installed or not, importlib.metadata says which


def test_a_number_no_version_has_is_not_read_as_one() -> None:
    text = PIP_LIST.read_text().replace("2.13.0+cpu", "2." + "1" * 5000)
    a = _answer(text)
    assert a.package("torch") is None and a.installed("torch").value is None
    assert "more than 32 digits" in (a.facts.torch_version.missing or "")
