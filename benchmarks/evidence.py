"""Evidence store benchmark: retrieval quality of the fusion choices, index build time and
query latency (starter corpus and a synthetic 20k-passage corpus).

    PYTHONPATH=src .venv/bin/python benchmarks/evidence.py [--shared ../shared/data] [--skip-20k]

Quality uses the silver FactualCS train split: its 516 evidence passages form the corpus and
each item's gold passage is its own evidence. Two query sets: the annotated retrieval query
(close in wording to the evidence) and the hateful post itself (paraphrastic: what the
pipeline has when the analyst gives no query). Writes benchmarks/results/evidence.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from provenance import header  # noqa: E402

from rebuttal.evidence.corpus import Passage, read_memory_evidence, read_passages, starter_corpus_path  # noqa: E402
from rebuttal.evidence.store import LocalEvidenceStore  # noqa: E402
from rebuttal.llm.embeddings import load_minilm  # noqa: E402

# Clearly off-topic questions: their best fused score shows where a relevance floor belongs.
OFF_TOPIC = [
    "how long to boil an egg", "best chocolate cake recipe", "who won the 1998 world cup",
    "how to change a bicycle tyre", "python list comprehension syntax", "cheap flights to lisbon",
    "what is the capital of australia", "how do solar panels work", "symptoms of a cold",
    "how to train a puppy", "tallest mountain in europe", "how to knit a scarf",
    "best budget smartphone", "when was the eiffel tower built", "how to grow tomatoes",
    "what time is sunset today", "how to fix a leaking tap", "meaning of the word serendipity",
    "rules of chess castling", "how to make cold brew coffee",
]


def memoised(encode):
    """Each query is embedded once, not once per fusion setting."""
    memo: dict[str, np.ndarray] = {}

    def encode_cached(texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in memo]
        if missing:
            memo.update(zip(missing, encode(missing), strict=True))
        return np.stack([memo[t] for t in texts]) if texts else encode(texts)

    encode_cached.prefill = lambda texts: encode_cached(list(texts))
    return encode_cached


def ranks_of_gold(store: LocalEvidenceStore, queries: list[tuple[str, str]]) -> list[int]:
    """1-based rank of each query's gold passage under the store's fusion."""
    ids = [p.id for p in store.passages]
    out = []
    for query, gold in queries:
        fused = store.scores(query)["fused"]
        order = np.argsort(-fused, kind="stable")
        out.append(int(np.where(np.array(ids)[order] == gold)[0][0]) + 1)
    return out


def summary(ranks: list[int]) -> dict:
    return {"MRR": statistics.mean(1 / r for r in ranks),
            "R@1": statistics.mean(r <= 1 for r in ranks),
            "R@3": statistics.mean(r <= 3 for r in ranks)}


def quality(shared: Path) -> tuple[list[str], dict]:
    train = shared / "factualcs-silver" / "train.jsonl"
    passages, _ = read_memory_evidence(train, corpus="silver")
    rows = {f"mem-{r['id']}": r for r in map(json.loads, train.open(encoding="utf-8"))}
    # Strip the retrieval query from the passages' keywords, or the query set would be trivial.
    passages = [p.model_copy(update={"keywords": []}) for p in passages]
    query_sets = {
        "retrieval query": [(rows[p.id]["retrieval_query"], p.id) for p in passages if rows[p.id].get("retrieval_query")],
        "hateful post": [(rows[p.id]["hate_speech"], p.id) for p in passages],
    }
    configs = [("lexical (BM25)", dict(fusion="lexical")), ("dense (MiniLM)", dict(fusion="dense")),
               ("RRF k=60", dict(fusion="rrf"))] + [
        (f"blend w={w}", dict(fusion="blend", dense_weight=w)) for w in (0.3, 0.5, 0.7)]
    encoder = memoised(load_minilm().encode)
    base = LocalEvidenceStore(passages, encoder=encoder).build()
    encoder.prefill(q for queries in query_sets.values() for q, _ in queries)  # one batched pass
    lines = [f"Corpus: {len(passages)} silver evidence passages; "
             + ", ".join(f"{len(q)} {name} queries" for name, q in query_sets.items()) + ".", "",
             "| fusion | " + " | ".join(f"{n} MRR | {n} R@1 | {n} R@3" for n in query_sets) + " |",
             "|---|" + "---|" * (3 * len(query_sets))]
    results = {}
    for label, settings in configs:
        store = LocalEvidenceStore(passages, encoder=encoder, **settings)
        store._embeddings, store._bm25 = base._embeddings, base._bm25  # share the built index
        store._idf, store._oov_idf = base._idf, base._oov_idf
        cells = []
        for name, queries in query_sets.items():
            s = summary(ranks_of_gold(store, queries))
            results[(label, name)] = s
            cells += [f"{s['MRR']:.3f}", f"{s['R@1']:.3f}", f"{s['R@3']:.3f}"]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines, results


def floor_study(store: LocalEvidenceStore, shared: Path) -> list[str]:
    """Top-1 fused score on the starter corpus for on-topic vs off-topic queries."""
    dev = [json.loads(line) for line in (shared / "factualcs-silver" / "dev.jsonl").open(encoding="utf-8")]
    on_topic = [r["retrieval_query"] for r in dev if r.get("retrieval_query")]
    tops = {"silver dev retrieval queries": [float(store.scores(q)["fused"].max()) for q in on_topic],
            "off-topic questions": [float(store.scores(q)["fused"].max()) for q in OFF_TOPIC]}
    lines = ["| query set | n | min | p10 | median | p90 | max | kept at floor 0.2 |", "|---|---|---|---|---|---|---|---|"]
    for name, values in tops.items():
        q = np.percentile(values, [0, 10, 50, 90, 100])
        kept = np.mean(np.array(values) > store.min_score)
        lines.append(f"| {name} | {len(values)} | " + " | ".join(f"{v:.3f}" for v in q) + f" | {kept:.0%} |")
    return lines


def synthetic_corpus(seed_passages: list[Passage], n: int) -> list[Passage]:
    """n passages recombined from real sentences (so vocabulary and length are realistic)."""
    rng = random.Random(0)
    sentences = [s.strip() for p in seed_passages for s in re.split(r"(?<=[.;])\s+", p.text) if len(s.split()) > 4]
    out = []
    for i in range(n):
        text = " ".join(rng.sample(sentences, 2))
        text = re.sub(r"\d+", lambda m: str(rng.randint(1, 99)), text)
        out.append(Passage(id=f"syn-{i:05d}", text=text, source="synthetic", corpus="synthetic"))
    return out


def timing(passages: list[Passage], queries: list[str], label: str) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        store = LocalEvidenceStore(passages, index_dir=folder).build()
        cold = time.perf_counter() - started
        started = time.perf_counter()
        warm_store = LocalEvidenceStore(passages, index_dir=folder).build()
        warm = time.perf_counter() - started
        assert warm_store.embedded_now == 0
        size_mb = (Path(folder) / "embeddings.npy").stat().st_size / 1e6
    warm_store.search(queries[0])  # first query pays for the encoder's warm-up
    encode, encode_ms = warm_store._resolve_encoder(), []

    def timed_encode(texts):  # split query latency into embedding vs. scoring
        started = time.perf_counter()
        try:
            return encode(texts)
        finally:
            encode_ms.append((time.perf_counter() - started) * 1000)

    warm_store._encoder = timed_encode
    latencies = []
    for query in queries:
        started = time.perf_counter()
        warm_store.search(query, k=3)
        latencies.append((time.perf_counter() - started) * 1000)
    p50, p95 = np.percentile(latencies, [50, 95])
    scoring = np.median(np.array(latencies) - np.array(encode_ms))
    del store
    return [f"| {label} | {len(passages)} | {cold:.1f} | {warm:.2f} | {size_mb:.1f} | {p50:.1f} | "
            f"{p95:.1f} | {np.median(encode_ms):.1f} | {scoring:.1f} |"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--skip-20k", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "evidence.md")
    args = parser.parse_args()

    load_minilm()  # load once, outside every timing
    starter = read_passages(starter_corpus_path())
    queries = OFF_TOPIC[:5] + [p.keywords[0] for p in starter[:45] if p.keywords]
    report = header("Evidence store benchmark",
                    split="silver FactualCS train (retrieval quality, relevance floor); starter corpus"
                          + ("" if args.skip_20k else " and a synthetic 20k corpus") + " (latency)",
                    model="none (no chat model)", memory="all-MiniLM-L6-v2 encoder on CPU, BM25 (bm25s)")
    if (args.shared / "factualcs-silver" / "train.jsonl").exists():
        lines, _ = quality(args.shared)
        report += ["## Retrieval quality by fusion (silver FactualCS train)", "", *lines, ""]
        report += ["## Relevance floor (starter corpus, default blend w=0.5)", "",
                   *floor_study(LocalEvidenceStore(starter).build(), args.shared), ""]
    report += ["## Index build and query latency", "",
               "Cold = BM25 + embedding every passage; warm = BM25 + embeddings from the cache. "
               f"Latency over {len(queries)} queries (k=3, one query embedding each).", "",
               "| corpus | passages | cold build s | warm build s | embeddings MB | query p50 ms | "
               "query p95 ms | of which query embedding p50 ms | of which scoring p50 ms |",
               "|---|---|---|---|---|---|---|---|---|"]
    report += timing(starter, queries, "starter corpus")
    if not args.skip_20k:
        report += timing(synthetic_corpus(starter, 20_000), queries, "synthetic")
    report.append("")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(report), encoding="utf-8")
    print("\n".join(report))


if __name__ == "__main__":
    main()
