"""Environments from real AMD and Ascend reports kept aside while the parsers were written
(fixtures/preflight/envdumps/heldout and heldout2; SOURCE.txt in each names the report and how the first run did).
Expected values read by hand from each file: the platform, the device count and architecture, versions, the exit code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit.cli.main import main
from mtp_audit.errors import InputError
from mtp_audit.preflight import platforms as pf
from mtp_audit.preflight.envdump import parse_dump, read_dump

D = Path(__file__).resolve().parent.parent / "fixtures" / "preflight" / "envdumps"

#: file -> (platform, devices, first device's arch, {fact or package: value}, exit code)
CASES = {
    "heldout/vllm-10855.txt": ("rocm", 1, "gfx90a", {"rocm_version": "6.2.41133-dd7f95766", "driver_version": None}, 0),
    "heldout/vllm-34573.txt": ("rocm", 0, None, {"rocm_version": "7.0.51831-a3e329ad8", "torch_version": "2.9.0a0+git1c57644"}, 3),
    "heldout/hip-attention-45.txt": ("rocm", 1, "gfx942", {"rocm_version": "6.3.0"}, 0),
    "heldout/aiter-3202.txt": ("rocm", 0, None, {"rocm_version": "7.3.0", "aiter": "0.1.16.post2", "vllm": "0.23.1rc1.dev861+gcbe9c40f9"}, 3),
    "heldout/fooocus-1079.txt": ("rocm", 1, "gfx1032", {}, 3),
    "heldout/vllm-ascend-3403.txt": ("cann", 3, "Ascend 910B1", {"driver_version": "24.1.0"}, 0),
    "heldout/vllm-ascend-5707.txt": ("cann", 2, "Ascend 910B2", {"driver_version": "24.1.0"}, 0),
    "heldout/vllm-ascend-10504.txt": ("cann", 5, "Ascend 910B2", {}, 0),
    "heldout/paddleocr-17634.txt": ("cann", 0, None, {"cann_version": "8.2RC", "vllm-ascend": "0.14.0rc2", "vllm": "0.14.0"}, 0),
    "heldout/vllm-ascend-750.txt": ("cann", 1, "Ascend 910B1", {"driver_version": "23.0.3"}, 0),
    "heldout/glm4-749.txt": ("cann", 0, None, {"cann_version": "8.0.T63"}, 0),
    "heldout2/vllm-9319.txt": ("rocm", 1, "gfx906", {"rocm_version": "6.2.41133-dd7f95766"}, 0),
    "heldout2/xformers-1265.txt": ("rocm", 1, "gfx1100", {"platform": "wsl2"}, 0),
    "heldout2/inferencex-492.txt": ("rocm", 1, None, {}, 3),
    "heldout2/vllm-16840.txt": ("rocm", 0, None, {"torch_version": "2.8.0.dev20250413+rocm6.3"}, 3),
    "heldout2/sglang-10562.txt": ("rocm", 8, "gfx942", {"driver_version": "6.10.5", "sglang": "0.5.3rc0"}, 0),
    "heldout2/sglang-38849.txt": ("rocm", 8, "gfx942", {"rocm_version": "7.2.26015-fc0010cf6a", "sglang": "0.5.18"}, 0),
    "heldout2/rocm-examples-187.txt": ("rocm", 8, "gfx942", {}, 0),  # "8 cards MI300X" names the product of the cut rocm-smi table
    "heldout2/ascend-pytorch-10.txt": ("cann", 1, "Ascend 310P (Atlas 300I)", {"driver_version": "23.0.rc2"}, 0),
    "heldout2/sglang-11546.txt": ("cann", 0, None, {"cann_version": "8.2.RC1", "torch-npu": "2.6.0.post1", "sgl-kernel-npu": "0.1.0", "sglang": "0.5.3.post1"}, 0),
    "heldout2/sglang-29796.txt": ("cann", 16, "Ascend 910C (Atlas A3)", {"driver_version": "26.0.rc1", "cann_version": None}, 0),
    "heldout2/sglang-33967.txt": ("cann", 16, "Ascend 910B2", {"torch-npu": "2.10.0", "sgl-kernel-npu": "2026.6.1", "sglang": "0.5.16"}, 0),
    "heldout2/tilelang-ascend-1268.txt": ("cann", 1, "Ascend 910B", {"cann_version": "9.0.0", "torch-npu": "2.10.0", "sglang": "0.5.13.post1"}, 0),
    "heldout2/sglang-9226.txt": ("cann", 0, None, {}, 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_heldout_environment(name, capsys, tmp_path):
    plat, n, arch, values, rc = CASES[name]
    f = pf.with_platform(parse_dump(read_dump(D / name), display=name))
    assert f.accelerator.value == plat and len(f.gpus) == n
    if n:
        assert f.gpus[0].arch.value == arch
    for key, want in values.items():
        got = getattr(f, key).value if hasattr(f, key) else f.package(key).value
        assert got == want, key
    assert main(["preflight", "--env-dump", str(D / name), "-o", str(tmp_path / "r.txt")]) == rc



def test_a_cut_last_line_open_parenthesis_leaves_its_product_uncounted():
    """inferencex-492.txt cut inside its Platform line: the parenthesis after the product may hold its architecture
    (whole, "AMD MI355X (gfx1201)" conflicts: no architecture, native FP4 unknown); cut, the product is not read (it
    was read as an MI355X, gfx950, native FP4 capable), and nothing else is left to make a dump."""
    head = "### Your current environment\n\n```text\n"
    whole = parse_dump(head + "Platform: AMD MI355X (gfx1201)\n")
    assert [(g.name.value, g.arch.value) for g in whole.gpus] == [("AMD MI355X", None)]
    with pytest.raises(InputError):
        parse_dump(head + "Platform: AMD MI355X (g")
    cut = parse_dump(head + "ROCm version: 7.0.0\nPlatform: AMD MI355X (g")
    assert cut.gpus == () and any("may be cut off" in n for n in cut.notes)


def test_a_cut_last_line_list_with_its_next_product_cut_short_is_not_used():
    """aiter-3202.txt cut inside its Hardware line: ``MI300X / MI35`` is a list of alternatives going on (whole:
    ``MI300X / MI355X``, which machine is not said); the cut line's MI300X was read as the machine (gfx942, not
    FP4-capable), it is not used now."""
    head = "**Hardware:** MI300X / MI35"
    with pytest.raises(InputError):
        parse_dump(head)
    cut = parse_dump("ROCm version: 6.4.1\n" + head)
    assert cut.gpus == () and any("inside a list" in n for n in cut.notes)
