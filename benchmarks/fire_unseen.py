"""FIRE, the zero-shot baseline and the retrieval baseline on hateful posts that nothing in the
project was chosen on (issue 46): silver dev round 2 after the first 180 of fire_heldout.py's
seeded shuffle (those 180 were graded and informed choices), less fire_slurs.py's sample, mixed
2:1 with hateful posts of the Gab Hate Corpus's test file (the gate trains on its train file
only; no memory, grade or block was read off it). Graded blind by fresh grader instances.

    python benchmarks/fire_unseen.py run --n 100 --systems zero-shot retrieval   # resumable
    python benchmarks/fire_unseen.py run --n 100 --systems fire
    python benchmarks/fire_unseen.py run --n 150 --first 60 --systems fire   # posts 61-150 first
    python benchmarks/fire_unseen.py sheet --n 100      # grading sheet: shuffled, systems hidden
    python benchmarks/fire_unseen.py report --n 100

Results: benchmarks/results/fire_unseen.md (written whole by `report`).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fire_rows  # noqa: E402
from fire_grading import GRADES, write_sheet  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
ROUND2 = fire_rows.SILVER / "dev_round2.jsonl"
GAB_TEST = DATA / "hate-sources" / "ghc_test.tsv"
OUT = ROOT / "runs" / "bench" / "fire-unseen"
RESULTS = ROOT / "benchmarks" / "results" / "fire_unseen.md"
REPLIES = GRADES / "fire-unseen-replies.jsonl"  # never training data for anything: a report split
SLUR_REPLIES = GRADES / "fire-slurs-replies.jsonl"
HELDOUT_SEED, HELDOUT_USED = 2, 180  # fire_heldout.py's shuffle and the posts it graded
GAB_SEED = 46
SYSTEMS = ("fire", "zero-shot", "retrieval")


def round2_rest() -> list[dict]:
    rows = [json.loads(line) for line in ROUND2.read_text(encoding="utf-8").splitlines() if line.strip()]
    random.Random(HELDOUT_SEED).shuffle(rows)
    slur_sample = {r["item"] for r in fire_rows.read_jsonl(SLUR_REPLIES)}
    return [{"id": r["id"], "text": r["hate_speech"], "source": "silver-r2", "gold": r["hs_type"]}
            for r in rows[HELDOUT_USED:] if r["is_hateful"] and r["id"] not in slur_sample]


def gab_hateful() -> list[dict]:
    with GAB_TEST.open(encoding="utf-8") as f:
        rows = [(i, r) for i, r in enumerate(csv.DictReader(f, delimiter="\t"))]
    posts = [{"id": f"ghc-test-{i:05d}", "text": r["text"].strip(), "source": "gab-test", "gold": None}
             for i, r in rows if (r["hd"] == "1" or r["cv"] == "1") and 20 <= len(r["text"].strip()) <= 700]
    random.Random(GAB_SEED).shuffle(posts)
    return posts


def sample(n: int) -> list[dict]:
    """Two silver posts, then one Gab post, until n: a run cut short keeps the mix."""
    silver, gab, mixed = round2_rest(), gab_hateful(), []
    while len(mixed) < n and (silver or gab):
        for source, take in ((silver, 2), (gab, 1)):
            mixed += [source.pop(0) for _ in range(min(take, len(source)))]
    return mixed[:n]


def run(args) -> None:
    rows = sample(args.n)
    rows = rows[args.first:] + rows[:args.first]  # posts from `first` on run first (the unread ones)
    fire_rows.run_posts(rows, OUT / f"unseen_{args.n}.jsonl", OUT, args.systems, args)


def stored(ids: list[str]) -> dict[str, dict[str, dict]]:
    """Each system's rows, and the earlier FIRE version's (fire-v1: the 60 posts of the first report)."""
    return {system: fire_rows.results(system, ids, OUT) for system in (*SYSTEMS, "fire-v1")}


def sheet(args) -> None:
    rows = sample(args.n)
    path = OUT / "blind_sheet-independent.jsonl"
    runs = [(system, kept) for system, kept in stored([r["id"] for r in rows]).items() if system in SYSTEMS]
    count = write_sheet(runs, {r["id"]: r["text"] for r in rows},
                        "independent", path, REPLIES)
    print(f"{count} replies without a grade -> {path}")


def report(args) -> None:
    from collections import Counter

    from fire_unseen_report import write_report

    posts = sample(args.n)
    sources = Counter(p["source"] for p in posts)
    split = (f"{len(posts)} hateful posts nothing was chosen on: {sources['silver-r2']} silver dev round 2 posts "
             f"after fire_heldout.py's first 180 (less fire_slurs.py's sample) and {sources['gab-test']} Gab Hate "
             "Corpus test posts (hd or cv), mixed 2:1 in a seeded order")
    write_report(posts, stored([r["id"] for r in posts]), args, results=RESULTS,
                 title="FIRE, zero-shot and retrieval on unseen hateful posts", split=split, first=args.first)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "sheet", "report"])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--first", type=int, default=0, help="run the sample's posts from this index first")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    args = parser.parse_args()
    if not ROUND2.exists() or not GAB_TEST.exists():
        sys.exit(f"needs {ROUND2} and {GAB_TEST}")
    posts = {r["id"]: r["text"] for r in sample(10**6)}
    fire_rows.dispatch({"run": run, "sheet": sheet, "report": report}, args, OUT, (*SYSTEMS, "fire-v1"), posts)


if __name__ == "__main__":
    main()
