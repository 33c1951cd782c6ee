"""Which retrieved evidence fits the post: the generator's evidence threshold, chosen on dev.

FIRE passes an evidence item to the generator only when its MiniLM cosine to the post reaches
`FireSettings.evidence_min_similarity`. This script picks that threshold from graded pairs.

    python benchmarks/evidence_fit.py sheet     # blind sheet of (post, evidence) pairs, no scores
    python benchmarks/evidence_fit.py report    # evidence_fit.md from the grades

Pairs: silver dev round 2 posts of the factual categories (round 1 is kept for the FIRE
benchmark), searched as the pipeline does (query + post, top 2, low tier dropped). The query is
the record's annotated retrieval query, standing in for the analyst's. Grades
(benchmarks/grades/evidence-fit-dev.jsonl: {"key", "fits": true|false}) say whether a reply to
the post could honestly lean on the item: same group and the same claim or a fact that answers it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "data" / "factualcs-silver" / "dev_round2.jsonl"
OUT = ROOT / "runs" / "bench" / "evidence-fit"
GRADES = ROOT / "benchmarks" / "grades" / "evidence-fit-dev.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "evidence_fit.md"
FACTUAL = {"misinformation", "stereotype", "conspiracy"}


def pairs(limit: int) -> list[dict]:
    from rebuttal.evidence import default_searcher, search_evidence
    from rebuttal.llm.embeddings import load_minilm
    from rebuttal.types import SourceTier

    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r.get("is_hateful") and r.get("hs_type") in FACTUAL][:limit]
    searcher, encoder = default_searcher(), load_minilm()
    out = []
    for row in rows:
        query = f"{row.get('retrieval_query') or ''} {row['hate_speech']}"[:300]
        items = [i for i in search_evidence(searcher, query, 2).items if i.tier != SourceTier.low][:2]
        if not items:
            continue
        vectors = encoder.encode([row["hate_speech"], *(i.text for i in items)])
        for item, vector in zip(items, vectors[1:]):
            key = hashlib.sha256(f"{row['id']}:{item.id}".encode()).hexdigest()[:10]
            out.append({"key": key, "post": row["hate_speech"], "evidence": item.text,
                        "similarity": float(vector @ vectors[0])})
    return out


def sheet(args) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rows = pairs(args.limit)
    (OUT / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    blind = [{k: r[k] for k in ("key", "post", "evidence")} for r in rows]
    random.Random(0).shuffle(blind)
    (OUT / "sheet.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in blind))
    print(f"{len(blind)} pairs -> {OUT / 'sheet.jsonl'}")


def sweep(scored: list[tuple[float, bool]]) -> list[tuple[float, float, float, float]]:
    """(threshold, precision, recall, F0.5) for each candidate; F0.5 because a wrong fact in a
    reply costs more than a reply without one."""
    table = []
    positives = sum(fits for _, fits in scored)
    for threshold in [t / 100 for t in range(20, 71, 5)]:
        kept = [fits for s, fits in scored if s >= threshold]
        tp = sum(kept)
        precision = tp / len(kept) if kept else 1.0
        recall = tp / positives if positives else 0.0
        f = 1.25 * precision * recall / (0.25 * precision + recall) if precision + recall else 0.0
        table.append((threshold, precision, recall, f))
    return table


def report(args) -> None:
    rows = {json.loads(l)["key"]: json.loads(l) for l in (OUT / "pairs.jsonl").read_text().splitlines()}
    grades = [json.loads(l) for l in GRADES.read_text().splitlines() if l.strip()]
    scored = [(rows[g["key"]]["similarity"], bool(g["fits"])) for g in grades if g["key"] in rows]
    table = sweep(scored)
    best = max(table, key=lambda r: (round(r[3], 3), r[0]))
    lines = header("Evidence fit: the generator's evidence threshold", split=(
        f"silver dev round 2, factual categories ({len(scored)} graded post-evidence pairs); "
        "round 1 stays for the FIRE benchmark"), model="none (no chat model)",
        memory="all-MiniLM-L6-v2 (cosine post-evidence); shipped starter evidence corpus")
    lines += [
        "Grader: the developer's helper (an AI agent) reading a shuffled sheet without scores: does the",
        "item fit the post (same group, and the same claim or a fact that answers it)?", "",
        f"Pairs that fit: {sum(f for _, f in scored)}/{len(scored)}.", "",
        "| threshold | precision | recall | F0.5 |", "|---|---|---|---|",
        *[f"| {t:.2f} | {p:.2f} | {r:.2f} | {f:.2f} |" for t, p, r, f in table],
        "", f"Chosen (highest F0.5): **{best[0]:.2f}**, the shipped `evidence_min_similarity`.",
    ]
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sheet_parser = sub.add_parser("sheet")
    sheet_parser.add_argument("--limit", type=int, default=80, help="posts to search for")
    sub.add_parser("report")
    args = parser.parse_args()
    {"sheet": sheet, "report": report}[args.command](args)


if __name__ == "__main__":
    main()
