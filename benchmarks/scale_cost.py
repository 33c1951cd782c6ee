"""Tokens per FIRE post from real traces, and what 1M posts cost on a vLLM GPU node.

    .venv/bin/python benchmarks/scale_cost.py [--traces runs/bench/fire-dev/fire.jsonl ...]

Reads FireResult rows (their `trace.steps[].usage`), never runs FIRE. Writes
benchmarks/results/scale_cost.md: the measured tokens per post, then the cost of 1M posts under
stated assumptions (published vLLM throughput for a model of ~1.5-1.7B parameters and a GPU-hour
price, both assumed, not measured here).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
RESULT = ROOT / "benchmarks" / "results" / "scale_cost.md"
DEFAULT_TRACES = [ROOT / "runs" / "bench" / "fire-dev" / "fire.jsonl"]

# Assumed, from published benchmarks (docs/scale.md names them): output tokens/s of vLLM on one
# GPU for a ~1-1.7B model under a saturating offline/batched load.
THROUGHPUT = {  # scenario -> (output tokens/s per GPU, GPU-hour price in USD)
    "pessimistic (A100, long outputs, ~2.2k tok/s)": (2_200, 2.0),
    "middle (between the two, ~6k tok/s)": (6_000, 2.5),
    "optimistic (A800/H100, ~12k tok/s)": (12_000, 3.0),
}
POSTS = 1_000_000


def post_usage(row: dict) -> dict | None:
    """Prompt, cached prompt and completion tokens and LLM calls of one post (None: no trace)."""
    steps = (row.get("trace") or {}).get("steps") or []
    if not steps:
        return None
    total = {"prompt": 0, "cached": 0, "completion": 0, "calls": 0}
    for step in steps:
        usage = step.get("usage") or {}
        total["prompt"] += usage.get("prompt_tokens", 0)
        total["cached"] += usage.get("cached_prompt_tokens", 0)
        total["completion"] += usage.get("completion_tokens", 0)
        total["calls"] += step.get("attempts", 0) or 0
    return total


def describe(values: list[float], digits: int = 0) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{statistics.mean(values):.{digits}f} | {statistics.median(values):.0f} | {p90:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=Path, nargs="+", default=DEFAULT_TRACES)
    args = parser.parse_args()
    from provenance import header

    posts, rows = [], 0
    for path in args.traces:
        for line in path.read_text(encoding="utf-8").splitlines():
            usage = post_usage(json.loads(line)) if line.strip() else None
            rows += usage is not None
            if usage is not None and usage["calls"] > 0:
                posts.append(usage)
    if not posts:
        raise SystemExit("no FIRE rows with LLM usage in the traces")
    lines = header("Cost of 1M posts on a vLLM GPU node (FIRE)",
                   split=f"{len(posts)} FIRE rows with LLM calls from {', '.join(os.path.relpath(p, ROOT) for p in args.traces)}",
                   model="tokens measured with the embedded qwen2.5-1.5b (llama.cpp); throughput assumed for vLLM",
                   memory="as in the traced run")
    lines += ["## Measured: tokens per post (sum over the post's LLM steps)", "",
              f"{len(posts)} of {rows} traced posts reached the LLM (the hate gate stops the others with no "
              "LLM call); the table and the cost below count only those, so the cost is for 1M posts "
              "that all reach the LLM: an upper bound for a queue where some do not.", "",
              "| per post | mean | median | p90 |", "|---|---|---|---|"]
    for key, label in (("prompt", "prompt tokens"), ("cached", "of which cached prefix"),
                       ("completion", "completion tokens"), ("calls", "LLM calls")):
        lines.append(f"| {label} | {describe([p[key] for p in posts], 1 if key == 'calls' else 0)} |")
    prompt = statistics.mean(p["prompt"] for p in posts)
    completion = statistics.mean(p["completion"] for p in posts)
    lines += ["", f"## Assumed throughput and price; 1M posts at the measured mean "
              f"({prompt:.0f} prompt + {completion:.0f} completion tokens per post)", "",
              f"Decode (completion tokens) bounds a small model on vLLM; prefill of a ~{prompt:.0f}-token prompt "
              "costs ~10-20x less per token (and vLLM caches the system text the analyst calls share), so the "
              "estimate charges completion tokens at the published output rate and adds 15% for prefill.", "",
              "| scenario | output tok/s per GPU | GPU-hours for 1M posts | posts/s per GPU | cost at $/GPU-h |",
              "|---|---|---|---|---|"]
    for name, (rate, price) in THROUGHPUT.items():
        seconds = POSTS * completion / rate * 1.15
        hours = seconds / 3600
        lines.append(f"| {name} | {rate:,} | {hours:.1f} | {POSTS / seconds:.1f} | ${hours * price:,.0f} at ${price}/h |")
    lines += ["", "Measured: the token counts above. Assumed: the throughput column (published vLLM numbers, "
              "see docs/scale.md), the 15% prefill share and the GPU-hour prices. The Ray side needs "
              "enough in-flight requests to keep the server saturated: actors x --concurrency >= ~64.", ""]
    RESULT.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
