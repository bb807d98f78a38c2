"""Run real SGLang's server-argument resolution for the grid of tests/oracle/sglang_grid.py (checkpoint configs x
speculative flag forms x declared GPUs) and write what SGLang decided as JSON (the oracle for the launch replay).

Run with the interpreter of a virtual environment that has the real ``sglang==X`` installed (never mtp-audit's own):

    /work/oracle-venvs/sglang-0.5.23/bin/python tests/oracle/build_sglang_oracle.py FIXTURES_DIR > tests/data/oracle/sglang-0.5.23.json

Per case: ``prepare_server_args(["--model-path", folder, *flags])`` (SGLang's own CLI parser), then
``ServerArgs.resolve_once()`` (the whole ``arg_groups/pipeline.py`` resolution: every hook, every model override),
then ``resolved_dict()``; and for a speculative launch the draft's ``ModelConfig.from_server_args(...,
is_draft_model=True)`` (the draft-architecture override). Exceptions are recorded with their class, message and the
innermost sglang ``file:line`` of the traceback.

The machine is declared, not probed: SGLang reads the GPU through torch (``torch.cuda.*``, ``torch.version.cuda``) and
NVML; the platform layer is patched below torch's API (:func:`declare_gpu`), before sglang is imported, so every
probe (``utils.common.is_sm100_supported``, ``get_device_sm``, ``get_platform().is_sm100``, the memory queries)
answers for the declared GPU. Module-level probes are cached at import, so each GPU runs in its own child process
(the parent runs one child per GPU and merges their JSON). FlashInfer is declared installed (it is a hard dependency
of the CUDA wheel): ``get_platform().has_flashinfer`` is overridden through SGLang's own ``override_platform``.

Each checkpoint folder contributes only ``config.json`` (and ``hf_quant_config.json``), copied into a scratch folder.
Not part of the test suite and not imported by it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from sglang_grid import CONFIGS, GPUS, cases  # noqa: E402

#: resolved server-argument fields recorded per case
FIELDS = ("speculative_algorithm", "speculative_draft_model_path", "speculative_num_steps", "speculative_eagle_topk",
          "speculative_num_draft_tokens", "speculative_moe_runner_backend", "moe_runner_backend",
          "fp4_gemm_runner_backend", "attention_backend", "prefill_attention_backend", "decode_attention_backend",
          "speculative_attention_mode", "quantization", "mamba_backend", "linear_attn_backend", "page_size",
          "disable_overlap_schedule", "tp_size", "ep_size", "kv_cache_dtype")


def declare_gpu(gpu: dict) -> None:
    """Make torch report the declared GPU: ``torch.cuda.is_available/device_count/get_device_capability/
    get_device_properties/get_device_name/mem_get_info/is_initialized/current_device`` and ``torch.version.cuda``
    (``is_initialized`` true keeps ``get_device_sm`` off NVML; ``nvidia-smi`` is absent, so the memory probe falls
    back to ``mem_get_info``)."""
    import torch
    import torchvision  # noqa: F401  (its import-time check compares torch.version.cuda with its own build)

    major, minor = gpu["cc"]
    total = gpu["memory_mib"] << 20
    props = types.SimpleNamespace(name=gpu["name"], major=major, minor=minor, total_memory=total,
                                  multi_processor_count=132, uuid="GPU-oracle", L2_cache_size=50 << 20,
                                  gcnArchName="", warp_size=32)
    c = torch.cuda
    c.is_available = lambda: True
    c.device_count = lambda: gpu["count"]
    c.get_device_capability = lambda device=None: (major, minor)
    c.get_device_properties = lambda device=None: props
    c.get_device_name = lambda device=None: gpu["name"]
    c.mem_get_info = lambda device=None: (total - (2 << 30), total)
    c.is_initialized = lambda: True
    c.current_device = lambda: 0
    c.set_device = lambda device: None
    torch.version.cuda = gpu["cuda"]
    torch.version.hip = None
    for name in GPU_ONLY:  # a real (CPU-unloadable) install must not win over the stand-in
        sys.modules.pop(name, None)
    sys.meta_path.insert(0, _GpuOnlyFinder)


#: GPU-only binary packages of the CUDA wheel's requirements that cannot be imported on a CPU machine (they load
#: libcuda.so.1): importable stand-ins whose every attribute is an inert callable. Argument resolution imports them
#: (e.g. the quantization registry imports ``sgl_kernel.int8_scaled_mm``) but never calls them; a case whose result
#: touched one lists it in ``stubs_used``.
GPU_ONLY = {"sgl_kernel": "0.4.10", "flashinfer": "0.7.2", "deep_gemm": "0.2.3", "flash_mla": "1.0.0",
            "deep_ep": "0.1.2"}


class _InertMeta(type):
    """Values of a stand-in module are classes of this metaclass: callable, subscriptable, usable as a base class;
    attribute access yields another such class."""

    def __getattr__(cls, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _inert(f"{cls.__qualname__}.{attr}")

    def __call__(cls, *a, **k):
        if cls.__dict__.get("_inert_direct"):
            return _inert(f"{cls.__qualname__}()")
        return super().__call__(*a, **k)

    def __getitem__(cls, key):
        return _inert(f"{cls.__qualname__}[]")

    def __bool__(cls) -> bool:
        return True


def _inert(name: str) -> type:
    return _InertMeta(name.rsplit(".", 1)[-1], (), {"_inert_direct": True, "__qualname__": name})


class _StandIn(types.ModuleType):
    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _inert(f"{self.__name__}.{attr}")


class _GpuOnlyFinder:
    """A meta-path finder that answers for :data:`GPU_ONLY` packages and their submodules with stand-ins."""

    used: set = set()

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        import importlib.machinery

        top = name.split(".", 1)[0]
        if top not in GPU_ONLY:
            return None
        return importlib.machinery.ModuleSpec(name, cls, is_package=True)

    @classmethod
    def create_module(cls, spec):
        m = _StandIn(spec.name)
        m.__path__ = []
        m.__version__ = GPU_ONLY[spec.name.split(".", 1)[0]]
        cls.used.add(spec.name.split(".", 1)[0])
        return m

    @classmethod
    def exec_module(cls, module) -> None:
        return None


def _where(tb: traceback.StackSummary) -> str | None:
    frames = [f for f in tb if "/sglang/" in f.filename]
    if not frames:
        return None
    f = frames[-1]
    return f"sglang/{f.filename.split('/sglang/', 1)[1]}:{f.lineno}"


def _error(exc: BaseException) -> dict:
    tb = traceback.extract_tb(exc.__traceback__)
    return {"ok": False, "exc_type": type(exc).__name__, "exc_msg": str(exc)[:500], "where": _where(tb)}


def _draft_arch(sa, resolved: dict) -> dict:
    from sglang.srt.configs.model_config import ModelConfig

    try:
        mc = ModelConfig.from_server_args(sa, model_path=resolved.get("speculative_draft_model_path"), is_draft_model=True)
    except Exception as exc:  # noqa: BLE001 - the oracle records every refusal
        return {"draft_error": _error(exc)}
    archs = list(getattr(mc.hf_config, "architectures", None) or [])
    return {"draft_architectures": archs}


def fp4_gemm_effective(value: str) -> str | None:
    """The FP4 GEMM backend SGLang's kernel set-up picks for the resolved ``fp4_gemm_runner_backend`` on this GPU:
    ``layers/quantization/fp4_utils.initialize_fp4_gemm_config`` itself, fed the resolved value (it reads it from the
    published config, which only a started server has)."""
    from sglang.srt.layers.quantization import fp4_utils

    real = fp4_utils.get_exec
    fp4_utils.get_exec = lambda: types.SimpleNamespace(kernel=types.SimpleNamespace(fp4_gemm_runner_backend=value))
    try:
        fp4_utils.initialize_fp4_gemm_config()
        return fp4_utils.FP4_GEMM_RUNNER_BACKEND.value
    finally:
        fp4_utils.get_exec = real
        fp4_utils.FP4_GEMM_RUNNER_BACKEND = None


def run_case(folder: str, flags: list[str]) -> dict:
    """One launch: SGLang's parser, its resolution pipeline, the resolved fields, the draft architecture."""
    from sglang.srt.server_args import prepare_server_args

    argv = ["--model-path", folder] + [folder if f == "<target>" else f for f in flags]
    try:
        sa = prepare_server_args(argv)
    except SystemExit as exc:  # argparse refused the command
        return {"ok": False, "exc_type": "SystemExit", "exc_msg": f"argparse exit {exc.code}", "where": None}
    try:
        sa.resolve_once()
        resolved = sa.resolved_dict()
    except Exception as exc:  # noqa: BLE001
        return _error(exc)
    out = {"ok": True, "fields": {k: resolved.get(k) for k in FIELDS if k in resolved}}
    out["fp4_gemm_effective"] = fp4_gemm_effective(resolved.get("fp4_gemm_runner_backend") or "auto")
    if resolved.get("speculative_draft_model_path") == folder:
        out["fields"]["speculative_draft_model_path"] = "<target>"
    algo = resolved.get("speculative_algorithm")
    if algo is not None and algo not in ("NGRAM",):
        out.update(_draft_arch(sa, resolved))
    return out


def _scratch(fixtures: str) -> dict[str, str]:
    scratch = tempfile.mkdtemp(prefix="sglang-oracle-")
    folders = {}
    for name, sub in CONFIGS.items():
        src = os.path.join(fixtures, sub, name)
        folder = os.path.join(scratch, name)
        os.makedirs(folder, exist_ok=True)
        for f in ("config.json", "hf_quant_config.json"):
            if os.path.exists(os.path.join(src, f)):
                shutil.copy(os.path.join(src, f), folder)
        folders[name] = folder
    return folders


def worker(fixtures: str, gpu_id: str) -> dict:
    """All cases of one declared GPU, in this process."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    declare_gpu(GPUS[gpu_id])
    import sglang
    from sglang.srt.runtime_context import override_platform

    override_platform(has_flashinfer=True).install()
    folders = _scratch(fixtures)
    out = []
    for name, form, gpu, flags in cases(folders):
        if gpu != gpu_id:
            continue
        res = run_case(folders[name], flags)
        if res.get("exc_msg"):
            res["exc_msg"] = res["exc_msg"].replace(folders[name], "<target>")
        out.append({"config": name, "form": form, "gpu": gpu, "flags": flags, "result": res})
        print(name, form, gpu, json.dumps(res)[:300], file=sys.stderr, flush=True)
    return {"sglang": sglang.__version__, "cases": out, "stand_ins_imported": {gpu_id: sorted(_GpuOnlyFinder.used)}}


def main(argv: list[str]) -> None:
    fixtures = os.path.abspath(argv[0])
    if len(argv) > 2 and argv[1] == "--gpu":
        real_stdout, sys.stdout = sys.stdout, sys.stderr  # SGLang logs to stdout: keep stdout for the JSON alone
        json.dump(worker(fixtures, argv[2]), real_stdout)
        return
    merged: dict = {"gpus": GPUS, "cases": []}
    for gpu_id in (argv[1:] or list(GPUS)):
        run = subprocess.run([sys.executable, __file__, fixtures, "--gpu", gpu_id], capture_output=True, text=True,
                             check=False)
        if run.returncode != 0:
            sys.stderr.write(run.stderr[-4000:])
            raise SystemExit(f"worker for {gpu_id} failed ({run.returncode})")
        part = json.loads(run.stdout)
        merged["sglang"] = part["sglang"]
        merged["cases"] += part["cases"]
        merged.setdefault("stand_ins_imported", {}).update(part["stand_ins_imported"])
    json.dump(merged, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
