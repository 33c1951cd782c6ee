"""FIRE memory benchmarks -> benchmarks/results/memory.md

1. Query latency (scores + purity + exemplars, encoder excluded) at 1k, 5k, 100k and 1M
   records: brute force vs usearch ANN, with ANN recall@k against brute force. Sizes above the
   shipped bank use synthetic clustered unit vectors (384-d, like MiniLM).
2. Encoder cost: one post through MiniLM (+ head).
3. Training time per epoch and t̂ accuracy on the silver dev split with memory = silver train:
   untrained MiniLM vs head mode vs full fine-tuning; and with memory = the shipped bank.

    PYTHONPATH=src .venv/bin/python benchmarks/memory.py [--sizes 1000,5000,100000,1000000]
        [--skip-full] [--full-epochs 1]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from provenance import header  # noqa: E402

from rebuttal.memory.records import MemoryRecord, load_bank, load_records  # noqa: E402
from rebuttal.memory import BaseEncoder, HeadEncoder, Memory, brute_force_search  # noqa: E402
from rebuttal.memory.encoders import SHIPPED_HEAD  # noqa: E402
from rebuttal.memory.evaluate import evaluate_vectors  # noqa: E402
from rebuttal.memory.train import TrainConfig, train  # noqa: E402
from rebuttal.types import HateType  # noqa: E402

SILVER = ROOT.parent / "shared" / "data" / "factualcs-silver"
OUT = ROOT / "benchmarks" / "results" / "memory.md"
DIM = 384


def synthetic(n: int, seed: int = 0) -> tuple[list[MemoryRecord], np.ndarray]:
    """Clustered unit vectors (500 topics) with categories tied loosely to topics."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(500, DIM)).astype(np.float32)
    topic = rng.integers(0, 500, n)
    vectors = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):  # in chunks to bound temporary memory
        stop = min(n, start + 100_000)
        block = centres[topic[start:stop]] + rng.normal(scale=1.0, size=(stop - start, DIM)).astype(np.float32)
        vectors[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    categories = list(HateType)
    labels = np.where(rng.random(n) < 0.7, topic % 5, rng.integers(0, 5, n))
    # model_construct skips validation: a million validated records cost minutes and gigabytes
    records = [MemoryRecord.model_construct(id=str(i), hate_speech="-", category=categories[c], target_group="-",
                                            reasoning="-", counterspeech="-", is_hateful=True)
               for i, c in enumerate(labels)]
    return records, vectors


def time_queries(memory: Memory, queries: np.ndarray) -> float:
    """Median milliseconds per single query (the pipeline asks one post at a time)."""
    memory.query_vectors(queries[:1])  # warm-up
    times = []
    for q in queries:
        started = time.perf_counter()
        memory.query_vectors(q[None])
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times)


def write(lines: list[str]) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")


def latency(sizes: list[int], k: int = 5, done: list[str] | None = None) -> list[str]:
    lines = ["## Query latency (encoder excluded)", "",
             f"k={k}; median of single-query calls; one index per category; synthetic 384-d "
             "clustered unit vectors. Recall = share of the global top-k (brute force) that the "
             "ANN memory also returns, on 200 fresh queries.", "",
             "| records | brute force ms/query | ANN ms/query | ANN build s | ANN recall@k | "
             "index agreement check (min over categories) |",
             "|---:|---:|---:|---:|---:|---:|"]
    rng = np.random.default_rng(1)
    for n in sizes:
        records, vectors = synthetic(n)
        queries = vectors[rng.choice(n, 200, replace=False)] + rng.normal(scale=0.03, size=(200, DIM)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        brute = Memory(records, vectors, None, k=k, ann=False)
        brute_ms = time_queries(brute, queries[:100 if n < 500_000 else 30])
        started = time.perf_counter()
        ann = Memory(records, vectors, None, k=k, ann=True)
        build_s = time.perf_counter() - started
        ann_ms = time_queries(ann, queries)
        exact = brute_force_search(brute.vectors, queries, k)[0]
        found = [[int(nb.id) for nb in r.neighbours] for r in ann.query_vectors(queries)]
        recall = float(np.mean([len(set(e) & set(f)) / k for e, f in zip(exact, found)]))
        check = min(index.agreement for index in ann.indexes.values())
        lines.append(f"| {n:,} | {brute_ms:.2f} | {ann_ms:.2f} | {build_s:.1f} | {recall:.3f} | {check:.3f} |")
        print(lines[-1], flush=True)
        if done is not None:  # results so far survive an interrupted 1M run
            write(done + lines)
        del brute, ann, vectors, records
    return lines


def encoder_cost(encoder) -> list[str]:
    text = ["Those people are vermin and should be driven out of our towns."]
    encoder.encode(text)
    times = []
    for _ in range(20):
        started = time.perf_counter()
        encoder.encode(text)
        times.append(1000 * (time.perf_counter() - started))
    return ["## Encoder cost", "", f"One post through {encoder.name}: median "
            f"{statistics.median(times):.1f} ms (20 runs). The default memory (shipped bank) "
            "answers a post in encoder time plus well under a millisecond.", ""]


class CachedEncoder:
    """Base MiniLM vectors computed once for the whole benchmark."""

    name = "all-MiniLM-L6-v2 (cached)"

    def __init__(self, texts: list[str]):
        base = BaseEncoder()
        unique = list(dict.fromkeys(texts))
        self.table = dict(zip(unique, base.encode(unique)))

    def encode(self, texts):
        return np.array([self.table[t] for t in texts], dtype=np.float32)

    def spec(self):
        return {"kind": "base"}


def accuracy(skip_full: bool, full_epochs: int) -> list[str]:
    train_records = load_records(SILVER / "train.jsonl")
    dev = load_records(SILVER / "dev.jsonl")
    bank = load_bank()
    gold = [r.category for r in dev]
    base = CachedEncoder([r.hate_speech for r in train_records + dev + bank])
    xt = base.encode([r.hate_speech for r in train_records])
    xd = base.encode([r.hate_speech for r in dev])
    xb = base.encode([r.hate_speech for r in bank])

    def acc(memory_records, memory_vectors, dev_vectors, k=5):
        report = evaluate_vectors(Memory(memory_records, memory_vectors, None, k=k), dev_vectors, gold)
        above = f"{100 * report.above.accuracy:.1f}%" if report.above.accuracy is not None else "n/a"
        below = f"{100 * report.below.accuracy:.1f}%" if report.below.accuracy is not None else "n/a"
        return (f"{100 * report.accuracy:.1f}% | {report.macro_f1:.3f} | {100 * report.above.share:.0f}% @ "
                f"{above} | {100 * report.below.share:.0f}% @ {below}")

    rows = [("untrained MiniLM", "silver train", "-", acc(train_records, xt, xd))]
    epoch_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        head_report = train(train_records, Path(tmp) / "head", TrainConfig(mode="head"), base=base,
                            progress=False)
        head = HeadEncoder(Path(tmp) / "head").head
        rows.append(("head (trained on silver train)", "silver train",
                     f"{statistics.mean(head_report.seconds_per_epoch):.2f}",
                     acc(train_records, head.apply(xt), head.apply(xd))))
        epoch_rows.append(f"- head mode: {head_report.config['epochs']} epochs of "
                          f"{len(train_records)} items, {statistics.mean(head_report.seconds_per_epoch):.2f} s/epoch "
                          f"(MiniLM embeds the data once first, {len(train_records)} posts)")
        if not skip_full:
            full_report = train(train_records, Path(tmp) / "full",
                                TrainConfig(mode="full", epochs=full_epochs), progress=True)
            from rebuttal.memory import FullEncoder

            full = FullEncoder(Path(tmp) / "full")
            ft = full.encode([r.hate_speech for r in train_records])
            fd = full.encode([r.hate_speech for r in dev])
            rows.append((f"full fine-tuning ({full_epochs} epoch)", "silver train",
                         f"{statistics.mean(full_report.seconds_per_epoch):.0f}", acc(train_records, ft, fd)))
            epoch_rows.append(f"- full mode: {full_epochs} epoch(s), {full_report.steps} steps of batch "
                              f"{full_report.config['batch_size']}, "
                              f"{statistics.mean(full_report.seconds_per_epoch):.0f} s/epoch; loss per epoch "
                              + ", ".join(f"{x:.3f}" for x in full_report.epoch_losses))
    rows.append(("untrained MiniLM", "shipped bank", "-", acc(bank, xb, xd)))
    shipped = HeadEncoder(SHIPPED_HEAD).head
    rows.append(("shipped head (trained on the bank)", "shipped bank", "-",
                 acc(bank, shipped.apply(xb), shipped.apply(xd))))
    k_rows = [f"| {k} | {acc(train_records, xt, xd, k).split(' | ')[0]} | {acc(bank, xb, xd, k).split(' | ')[0]} | "
              f"{acc(bank, shipped.apply(xb), shipped.apply(xd), k).split(' | ')[0]} |" for k in (1, 3, 5, 7, 10)]
    lines = ["## t̂ accuracy on the silver dev split (106 items)", "",
             "k=5, threshold 0.62. Purity bands give share of items @ accuracy (the paper's Table 11 "
             "reports 88.4% above 0.62 @ 73.2%, 11.6% below @ 48.2%). With 106 items one item is "
             "0.9 points; differences under ~5 points are noise.", "",
             "| encoder | memory | s/epoch | accuracy | macro-F1 | ρ >= 0.62 | ρ < 0.62 |",
             "|---|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    lines += ["", "### Training time", "", *epoch_rows, "",
              "### Choice of k (t̂ accuracy on silver dev)", "",
              "| k | untrained, memory = silver train | untrained, memory = bank | shipped head, memory = bank |",
              "|---:|---:|---:|---:|", *k_rows, ""]
    return lines


def main() -> None:
    global OUT  # --out redirects every write()
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,5000,100000,1000000")
    parser.add_argument("--skip-full", action="store_true", help="skip full fine-tuning")
    parser.add_argument("--full-epochs", type=int, default=1)
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT, help="results file")
    args = parser.parse_args()
    OUT = args.out
    lines = header("FIRE memory benchmarks",
                   split="silver FactualCS train builds the memory, silver dev (106 items) scores t̂; "
                         "latency on synthetic vectors",
                   model="none (no chat model)",
                   memory=f"shipped exemplar bank and head encoder {SHIPPED_HEAD.name}; numpy {np.__version__}")
    lines += encoder_cost(HeadEncoder(SHIPPED_HEAD))
    if not args.skip_accuracy:
        if SILVER.exists():
            lines += accuracy(args.skip_full, args.full_epochs)
        else:
            lines += [f"(accuracy skipped: {SILVER} not found)", ""]
    write(lines)
    lines += latency([int(s) for s in args.sizes.split(",") if s], done=lines)
    write(lines)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
