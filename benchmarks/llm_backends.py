"""Embedded model speed on this machine: load time, prompt tokens/s, decode tokens/s, peak RSS.

Each model runs in a fresh subprocess so load time and peak RSS are its own.
Writes benchmarks/results/llm_backends.md.

    python benchmarks/llm_backends.py [--models qwen2.5-1.5b smollm2-135m] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import header  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "llm_backends.md"
PROMPT = ("Counterspeech answers hateful posts with facts, empathy and social norms. " * 12).strip()


def measure(name: str, threads: int, decode_tokens: int) -> dict:
    import os
    import resource

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as rebuttal's backend does
    from llama_cpp import Llama

    from rebuttal.llm.registry import model_path

    path = model_path(name)
    started = time.perf_counter()
    llm = Llama(model_path=str(path), n_ctx=2048, n_threads=threads, verbose=False, seed=0, use_mmap=False)
    load_s = time.perf_counter() - started

    tokens = llm.tokenize(PROMPT.encode(), add_bos=True)
    llm.reset()
    started = time.perf_counter()
    llm.eval(tokens)
    prompt_s = time.perf_counter() - started

    started = time.perf_counter()
    for _ in range(decode_tokens):
        token = llm.sample(temp=0.0)
        llm.eval([token])
    decode_s = time.perf_counter() - started
    return {
        "model": name,
        "file_mb": round(path.stat().st_size / 1e6),
        "load_s": round(load_s, 2),
        "prompt_tokens": len(tokens),
        "prompt_tok_s": round(len(tokens) / prompt_s, 1),
        "decode_tokens": decode_tokens,
        "decode_tok_s": round(decode_tokens / decode_s, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="+", default=["smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.threads, args.decode_tokens)))
        return
    rows = []
    for name in args.models:
        out = subprocess.run(
            [sys.executable, __file__, "--child", name, "--threads", str(args.threads),
             "--decode-tokens", str(args.decode_tokens)], capture_output=True, text=True,
        )
        if out.returncode != 0:
            rows.append({"model": name, "error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"})
        else:
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    lines = header("Embedded model speed (llama.cpp, CPU)", split="none (one fixed prompt)",
                   model=f"every embedded GGUF model below, {args.threads} threads", memory="none")
    lines += [
        f"The same prompt text (token count per tokenizer below); {args.decode_tokens} greedy decode steps.",
        "",
        "| model | file MB | load s | prompt tokens | prompt tok/s | decode tok/s | peak RSS MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | error: {r['error']} | | | | | |")
        else:
            lines.append(f"| {r['model']} | {r['file_mb']} | {r['load_s']} | {r['prompt_tokens']} | {r['prompt_tok_s']} | "
                         f"{r['decode_tok_s']} | {r['peak_rss_mb']} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
