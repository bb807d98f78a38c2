"""Speed of ``mtp-audit checkpoint FILE.gguf`` beside ``gguf.GGUFReader`` (benchmarks/harness.py: each run a separate
process, cases alternated, median with min–max, peak RSS per process).

Input, generated: a sparse ~20 GB GGUF v3 shaped like Qwen3.6-35B-A3B-MTP (arch ``qwen35moe``, 41 blocks of which
the last is the MTP block, 256-expert MoE tensors at Q4_K, ``blk.40.nextn.*``), with a 248,320-token vocabulary
(``tokenizer.ggml.tokens``, ``token_type``) and 247,587 merges: the tokenizer arrays are what a header reader pays for.

Cases:
1. ``GGUFReader(path)`` and a scan of its tensors for ``.nextn.`` (the gguf package, what other tools use);
2. ``mtp-audit checkpoint FILE`` (the whole audit: header, facts, rules, text report).
Targets: mtp-audit <= 1 s and <= 100 MiB peak RSS.

Usage: ``python benchmarks/bench_gguf.py [--runs 5] [--vocab 248320]`` (``python -m compileall mtp_audit`` first).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, Case, header, measure, python_env, table  # noqa: E402

READER = r"""
import sys, gguf
r = gguf.GGUFReader(sys.argv[1])
n = sum(1 for t in r.tensors if ".nextn." in t.name)
assert n == 4, n
"""

Q4_K, Q8_0, F32, Q6_K = 12, 8, 0, 14


def block_tensors(b: int, hidden: int = 2048, experts: int = 256, ffn: int = 512) -> list:
    """The tensors of one Qwen3.5-MoE-like block (15 per block)."""
    return [
        (f"blk.{b}.attn_norm.weight", (hidden,), F32), (f"blk.{b}.post_attention_norm.weight", (hidden,), F32),
        (f"blk.{b}.attn_q.weight", (hidden, 4096), Q8_0), (f"blk.{b}.attn_k.weight", (hidden, 512), Q8_0),
        (f"blk.{b}.attn_v.weight", (hidden, 512), Q8_0), (f"blk.{b}.attn_output.weight", (4096, hidden), Q8_0),
        (f"blk.{b}.attn_q_norm.weight", (256,), F32), (f"blk.{b}.attn_k_norm.weight", (256,), F32),
        (f"blk.{b}.ffn_gate_inp.weight", (hidden, experts), F32),
        (f"blk.{b}.ffn_gate_exps.weight", (hidden, ffn, experts), Q4_K),
        (f"blk.{b}.ffn_up_exps.weight", (hidden, ffn, experts), Q4_K),
        (f"blk.{b}.ffn_down_exps.weight", (ffn, hidden, experts), Q6_K),
        (f"blk.{b}.ffn_gate_shexp.weight", (hidden, ffn), Q8_0), (f"blk.{b}.ffn_up_shexp.weight", (hidden, ffn), Q8_0),
        (f"blk.{b}.ffn_down_shexp.weight", (ffn, hidden), Q8_0),
    ]


def write_model(path: Path, vocab: int) -> int:
    """Write the sparse GGUF; returns its size in bytes."""
    from mtp_audit.synth.gguf import model_kv, nextn_tensors, write_gguf

    merges = vocab - 733
    kv = model_kv("qwen35moe", blocks=41, nextn=1) + [
        ("tokenizer.ggml.model", 8, "gpt2"), ("tokenizer.ggml.pre", 8, "qwen35"),
        ("tokenizer.ggml.tokens", (9, 8), [f"tok{i:06d}" for i in range(vocab)]),
        ("tokenizer.ggml.token_type", (9, 5), [1] * vocab),
        ("tokenizer.ggml.merges", (9, 8), [f"t{i:05d} m{i:05d}" for i in range(merges)]),
        ("tokenizer.chat_template", 8, "{% for message in messages %}{{ message.content }}{% endfor %}" * 40),
    ]
    tensors = [("token_embd.weight", (2048, vocab), Q8_0), ("output_norm.weight", (2048,), F32),
               ("output.weight", (2048, vocab), Q6_K)]
    for b in range(41):
        tensors += block_tensors(b)
    tensors += nextn_tensors(40, hidden=2048, ggml_type=Q8_0)
    return write_gguf(path, kv, tensors)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--vocab", type=int, default=248_320)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from mtp_audit.sources.gguf import read_gguf_file

    work = Path(tempfile.mkdtemp(prefix="mtp-audit-bench-gguf-"))
    try:
        path = work / "Qwen3.6-35B-A3B-MTP-Q4_K_M.gguf"
        size = write_model(path, args.vocab)
        h = read_gguf_file(path)
        print(header(f"GGUF {size / 1e9:.1f} GB (sparse), header {h.header_bytes:,} bytes, {len(h.tensors)} tensors, "
                     f"{args.vocab:,}-token vocabulary", args.runs))
        env = python_env(work)
        py = sys.executable
        r = measure([Case("gguf.GGUFReader + nextn scan", [py, "-c", READER, str(path)], env),
                     Case("mtp-audit checkpoint FILE.gguf", [py, "-m", "mtp_audit", "checkpoint", str(path)], env)], args.runs)
        print(table(r, baseline="gguf.GGUFReader + nextn scan", abs_targets={"mtp-audit checkpoint FILE.gguf": 1.0},
                    mem_targets={"mtp-audit checkpoint FILE.gguf": 100}))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
