"""Every sample dump parsed to GPU name, compute capability, driver, CUDA and package versions, or an
explicit "missing" — values read by hand from the files in fixtures/preflight/envdumps."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtp_audit.errors import InputError
from mtp_audit.preflight.envdump import detect_formats, parse_dump, read_dump

D = Path(__file__).resolve().parent.parent / "fixtures" / "preflight" / "envdumps"


def load(name: str):
    return parse_dump(read_dump(D / name), display=name)


def test_sglang_check_env_gb200():
    f = load("sglang-11208.txt")
    assert [g.name.value for g in f.gpus] == ["NVIDIA GB200"] * 4
    assert {g.cc for g in f.gpus} == {(10, 0)}
    assert f.driver_version.value == "570.172.08"
    assert f.toolkit.value == "12.9"
    assert f.torch_version.value == "2.8.0+cu129" and f.torch_cuda.value == "12.9"
    assert f.package("sglang").value == "0.5.2" and f.package("sgl-kernel").value == "0.3.9.post2"
    assert f.package("flashinfer-python").value == "0.3.1"
    assert f.package("vllm").missing.startswith("not installed")
    assert "does not print" in f.cuda_driver_version.missing
    assert f.gpus[0].compute_capability.source == "sglang-check-env line 5"


def test_sglang_check_env_b200_new_kernel_key():
    f = load("sglang-24834.txt")
    assert len(f.gpus) == 8 and f.gpus[7].name.value == "NVIDIA B200" and f.gpus[7].cc == (10, 0)
    assert f.package("sglang-kernel").value == "0.4.2.post1"
    assert "sgl-kernel" not in f.packages
    assert f.package("flashinfer-cubin").value == "0.6.8.post1"
    assert f.driver_version.value == "590.48.01" and f.toolkit.value == "13.0" and f.torch_cuda.value == "13.0"


def test_sglang_check_env_flattened_gb10():
    f = load("sglang-13198.txt")
    assert len(f.gpus) == 1
    assert f.gpus[0].name.value == "NVIDIA GB10" and f.gpus[0].cc == (12, 1)
    assert f.driver_version.value == "580.95.05" and f.torch_version.value == "2.9.1+cu130"
    assert f.package("sglang").value == "0.5.5.post1" and f.package("sgl-kernel").value == "0.3.17"
    assert f.package("flashinfer-jit-cache").missing.startswith("not installed")


def test_sglang_check_env_b200_source_build():
    f = load("sglang-18943.txt")
    assert len(f.gpus) == 8 and f.gpus[0].cc == (10, 0)
    assert f.package("flashinfer-jit-cache").value == "0.6.3+cu129"
    assert f.package("sglang").value == "0.0.0.dev1+gd3bae71e3"


def test_nvidia_smi_r610_header_b200():
    f = load("sglang-27487.txt")
    assert detect_formats(read_dump(D / "sglang-27487.txt")) == ("nvidia-smi",)
    assert f.driver_version.value == "610.43.02" and "KMD Version" in f.driver_version.source
    assert f.cuda_driver_version.value == "13.3"
    assert [g.name.value for g in f.gpus] == ["NVIDIA B200", "NVIDIA B200"]
    assert f.gpus[0].cc == (10, 0) and "GPU name table" in f.gpus[0].compute_capability.source
    assert f.gpus[0].memory_bytes.value == 183359 * 1024 * 1024
    assert f.torch_version.missing


def test_nvidia_smi_gb10_memory_not_supported():
    f = load("k8s-device-plugin-1482.txt")
    g = f.gpus[0]
    assert g.name.value == "NVIDIA GB10" and g.cc == (12, 1)
    assert g.memory_bytes.value is None and "Not Supported" in g.memory_bytes.missing
    assert f.driver_version.value == "580.95.05" and f.cuda_driver_version.value == "13.0"


def test_h200_nvidia_smi_three_formats_agree():
    f = load("h200-nvidia-smi.txt")
    assert detect_formats(read_dump(D / "h200-nvidia-smi.txt")) == ("nvidia-smi", "nvidia-smi-q", "nvidia-smi-csv")
    assert len(f.gpus) == 1 and f.gpus[0].name.value == "NVIDIA H200" and f.gpus[0].cc == (9, 0)
    assert f.gpus[0].memory_bytes.value == 143771 * 1024 * 1024
    assert f.driver_version.value == "580.159.04" and f.cuda_driver_version.value == "13.0"


def test_torch_collect_env_old_flat_rtx5090d():
    f = load("pytorch-150733.txt")
    g = f.gpus[0]
    assert g.name.value == "NVIDIA GeForce RTX 5090 D" and g.cc == (12, 0)
    assert f.torch_version.value == "2.6.0+cu126" and f.torch_cuda.value == "12.6"
    assert f.driver_version.value == "570.124.04"
    assert "Could not collect" in f.toolkit.missing


def test_torch_collect_env_boxed_rtx_pro_6000():
    f = load("vllm-57932.txt")
    assert f.gpus[0].name.value.startswith("NVIDIA RTX PRO 6000 Blackwell Max-Q") and f.gpus[0].cc == (12, 0)
    assert f.torch_version.value == "2.13.0+cu132" and f.torch_cuda.value == "13.2"
    assert f.driver_version.missing  # truncated before the driver line


def test_vllm_collect_env_partial():
    f = load("vllm-21274.txt")
    assert f.gpus == () and f.gpu_list.missing
    assert f.package("vllm").value == "0.9.2" and f.torch_version.value == "2.7.0+cu128" and f.torch_cuda.value == "12.8"
    assert f.package("nvidia-cudnn-cu12").value == "9.7.1.26"
    assert f.package("flashinfer-python").value == "0.2.6.post1+cu128torch2.7"
    g = load("vllm-40153.txt")
    assert g.package("nvidia-cudnn-frontend").value == "1.22.1" and g.package("vllm").value == "0.17.0"
    assert g.torch_version.value == "2.10.0" and g.torch_cuda.value is None and g.torch_cuda.missing


def test_flashinfer_collect_env_mismatch():
    f = load("flashinfer-4549.txt")
    assert f.package("flashinfer-python").value == "0.6.14"
    assert f.package("flashinfer-jit-cache").value == "0.6.14+cu130"
    assert any("MISMATCH" in n for n in f.notes)
    assert f.env["FLASHINFER_RESOLVED_ARCHS"] == "{(12, '0f')}"
    assert f.gpus == () and "truncated" in f.gpu_list.missing


def test_every_sample_parses():
    names = sorted(p.name for p in D.glob("*.txt") if p.name != "SOURCE.txt")
    assert len(names) == 12
    for n in names:
        f = load(n)
        for field in ("driver_version", "torch_version", "toolkit"):
            fact = getattr(f, field)
            assert fact.present or fact.missing, (n, field)


@pytest.mark.parametrize("content,problem", [(b"", "is empty"), (b"   \n\n", "is empty"), (b"\x7fELF\x02\x01\x00\x00binary", "binary"),
                                              (b"hello world\nthis is a shopping list\n", "not a recognised environment dump")])
def test_bad_dumps_are_input_errors(tmp_path, content, problem):
    p = tmp_path / "dump.txt"
    p.write_bytes(content)
    with pytest.raises(InputError) as ei:
        parse_dump(read_dump(p), display=str(p))
    assert problem in str(ei.value)


def _vllm_collect_env(gpu_lines: str) -> str:
    """A ``vllm collect-env`` dump in the shape vllm/collect_env.py prints (boxed sections; the last one,
    ``Environment Variables``, lists VLLM_* and other variables as NAME=value, from get_env_vars)."""
    return (
        "==============================\n        System Info\n==============================\n"
        "OS                           : Ubuntu 22.04.5 LTS (x86_64)\n"
        "==============================\n       PyTorch Info\n==============================\n"
        "PyTorch version              : 2.9.0+cu128\n"
        "CUDA used to build PyTorch   : 12.8\n"
        "==============================\n      CUDA / GPU Info\n==============================\n"
        "Is CUDA available            : True\n"
        f"GPU models and configuration : {gpu_lines}\n"
        "Nvidia driver version        : 570.133.20\n"
        "==============================\n         vLLM Info\n==============================\n"
        "vLLM Version                 : 0.11.0\n"
        "==============================\n     Environment Variables\n==============================\n"
        "VLLM_USE_V1=1\nVLLM_WORKER_MULTIPROC_METHOD=spawn\nNCCL_CUMEM_ENABLE=0\n"
    )


def test_vllm_collect_env_variables_do_not_stand_for_the_gpu_line():
    """The VLLM_* lines of the Environment Variables section are read after the GPU lines: the GPU list's end, the
    'no GPU' wording and the truncation note still come from the 'GPU models and configuration' line."""
    f = parse_dump(_vllm_collect_env("\nGPU 0: NVIDIA H200\nGPU 1: NVIDIA H200"), display="d")
    assert len(f.gpus) == 2 and f.env["VLLM_USE_V1"] == "1"
    assert f.gpu_list.value == 2 and f.gpu_list.extent == "exact"  # the driver line follows the GPU lines
    none = parse_dump(_vllm_collect_env("Could not collect"), display="d")
    assert none.gpus == () and "says 'GPU models and configuration: Could not collect'" in none.gpu_list.missing
    cut = parse_dump(_vllm_collect_env("x").replace("GPU models and configuration : x\n", ""), display="d")
    assert "no 'GPU models and configuration' line (dump truncated?)" in " ".join(cut.notes)


CUT_B200 = Path(__file__).resolve().parents[1] / "fixtures" / "preflight" / "envdumps" / "constructed" / "b200-nvidia-smi-cut.txt"


def test_preflight_answer_says_at_least_for_a_cut_gpu_list_and_each_reason_once(capsys) -> None:
    from mtp_audit.cli.main import main

    assert main(["preflight", "--env-dump", str(CUT_B200)]) == 3
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("INCONCLUSIVE: could not tell whether at least 4 x NVIDIA B200 (compute capability 10.0)")
    gap = next(line for line in out.splitlines() if "native FP4 verdict unknown" in line)
    assert gap.count("torch CUDA build unknown") == 1


def test_env_dump_stdin_closed_or_given_twice(monkeypatch, capsys) -> None:
    import io
    import sys

    from mtp_audit.cli.main import main

    monkeypatch.setattr(sys, "stdin", None)
    assert main(["preflight", "--env-dump", "-"]) == 2
    assert capsys.readouterr().err.strip() == ("mtp-audit: error: --env-dump -: standard input is closed: pipe a dump in "
                                               "(nvidia-smi | mtp-audit preflight --env-dump -)")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CUT_B200.read_bytes())))
    assert main(["preflight", "--env-dump", "-", "--env-dump", "-"]) == 2
    assert capsys.readouterr().err.strip() == "mtp-audit: error: --env-dump -: given more than once: standard input can be read only once"
