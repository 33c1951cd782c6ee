"""FIRE, the zero-shot baseline and the retrieval baseline on hateful posts nothing has touched
(issue 46): fire_unseen.py's 150 posts were graded and read, so they are dev now. These are the
silver dev round 2 posts after fire_unseen.py's, the Gab Hate Corpus test posts after its 50, and
hateful implicit-hate posts of the gate's held-out tenth (no gate, memory, block or grade was read
off any of them), mixed one of each in turn. Graded blind by fresh grader instances. The first
READ posts have been read since (dev now); the report gives the posts after them apart.

    python benchmarks/fire_fresh.py run --n 90 --systems zero-shot retrieval   # resumable
    python benchmarks/fire_fresh.py run --n 90 --systems fire
    python benchmarks/fire_fresh.py sheet --n 90      # grading sheet: shuffled, systems hidden
    python benchmarks/fire_fresh.py latency --n 12    # FIRE and retrieval in turn on each post, one process
    python benchmarks/fire_fresh.py report --n 90

Results: benchmarks/results/fire_fresh.md (written whole by `report`).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fire_rows  # noqa: E402
import fire_stale  # noqa: E402
import fire_unseen  # noqa: E402
from fire_grading import GRADES, write_sheet  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "runs" / "bench" / "fire-fresh"
RESULTS = ROOT / "benchmarks" / "results" / "fire_fresh.md"
REPLIES = GRADES / "fire-fresh-replies.jsonl"  # never training data for anything: a report split
UNSEEN_SILVER, UNSEEN_GAB = 100, 50  # what fire_unseen.py's 150 posts took of each source
IMPLICIT_SEED = 47
SYSTEMS = fire_unseen.SYSTEMS
# The first 60 posts were graded and their FIRE replies read (2026-12-07): what they showed chose the
# blocks that name nobody and the political sides (fire/compose.py), so they are dev now and the
# report gives the posts after them apart.
READ = 60
MEMORY = ("shipped defaults (exemplar bank + SupCon head, category model, gate, reply ranker, draft score, "
          "block library)")


def implicit_held_out() -> list[dict]:
    """Hateful implicit-hate posts in the gate's held-out tenth (learned.datasets.held_out)."""
    from rebuttal.learned.datasets import held_out, implicit_hate

    rows = [r for r in implicit_hate(fire_unseen.DATA) if r.hateful and held_out(r) and 20 <= len(r.text) <= 700]
    posts = [{"id": f"ih-{i:05d}", "text": r.text, "source": "implicit-hate", "gold": None} for i, r in enumerate(rows)]
    random.Random(IMPLICIT_SEED).shuffle(posts)
    return posts


def sample(n: int) -> list[dict]:
    """A silver, a Gab and an implicit-hate post in turn, until n (a source that runs out is skipped)."""
    sources = [fire_unseen.round2_rest()[UNSEEN_SILVER:], fire_unseen.gab_hateful()[UNSEEN_GAB:], implicit_held_out()]
    mixed: list[dict] = []
    while len(mixed) < n and any(sources):
        mixed += [source.pop(0) for source in sources if source]
    return mixed[:n]


def run(args) -> None:
    if "fire" in args.systems:
        fire_stale.drop_stale(OUT)
    fire_rows.run_posts(sample(args.n), OUT / f"fresh_{args.n}.jsonl", OUT, args.systems, args)


LATENCY = ROOT / "runs" / "bench" / "fire-fresh-latency"
TIMED = ("fire", "retrieval")


def run_latency(args) -> None:
    """FIRE and the retrieval baseline in turn on each of the first n posts, in one process: the
    same posts beside the same neighbours on the machine, so their latencies compare (`run` runs
    each system over every post in a row, beside whatever else runs)."""
    from rebuttal.fire.batch import run_fire_batch
    from rebuttal.llm import ModelSettings, load_model

    fire_stale.drop_stale(LATENCY)
    model = load_model(ModelSettings.of(model=args.model, threads=args.threads))
    LATENCY.mkdir(parents=True, exist_ok=True)
    for post in sample(args.n):
        item = LATENCY / "item.jsonl"
        item.write_text(json.dumps({"id": post["id"], "text": post["text"]}) + "\n")
        for system in TIMED:
            run_fire_batch(item, LATENCY / f"{system}.jsonl", system=system, model=model, progress=False)


def latency_lines() -> list[str]:
    """p50/p90 of the interleaved run over the posts both systems replied to."""
    rows = {system: fire_rows.results(system, [p["id"] for p in sample(10**6)], LATENCY) for system in TIMED}
    both = [i for i in rows["fire"] if rows["fire"][i].get("reply") and (rows["retrieval"].get(i) or {}).get("reply")]
    if not both:
        return ["No interleaved latency run yet (`fire_fresh.py latency`)."]
    median = {s: fire_rows.percentile([fire_rows.latency(rows[s][i]) for i in both], 0.5) for s in TIMED}
    lines = [f"FIRE and the retrieval baseline in turn on each of the first {len(rows['fire'])} posts, in one process "
             f"with nothing else running (`fire_fresh.py latency`), over the {len(both)} posts both replied to:", "",
             "| system | posts | p50 s | p90 s |", "|---|---|---|---|"]
    lines += [f"| {s} | {len(both)} | {median[s]:.1f} | "
              f"{fire_rows.percentile([fire_rows.latency(rows[s][i]) for i in both], 0.9):.1f} |" for s in TIMED]
    return lines + ["", f"Median latency FIRE / retrieval baseline: **{median['fire'] / median['retrieval']:.2f}** "
                        "(target <= 1.5)."]


def stored(ids: list[str]) -> dict[str, dict[str, dict]]:
    return {system: fire_rows.results(system, ids, OUT) for system in SYSTEMS}


def sheet(args) -> None:
    rows = sample(args.n)
    path = OUT / "blind_sheet-independent.jsonl"
    count = write_sheet(list(stored([r["id"] for r in rows]).items()), {r["id"]: r["text"] for r in rows},
                        "independent", path, REPLIES)
    print(f"{count} replies without a grade -> {path}")


def report(args) -> None:
    from fire_unseen_report import write_report

    posts = sample(args.n)
    ran = stored([r["id"] for r in posts])
    posts = [p for p in posts if all(p["id"] in rows for rows in ran.values())]  # every system ran it
    sources = Counter(p["source"] for p in posts)
    split = (f"{len(posts)} hateful posts no part of the project was chosen on (posts 1-{READ} have been read "
             f"since: dev now): {sources['silver-r2']} silver dev round 2 posts after "
             f"fire_unseen.py's, {sources['gab-test']} Gab Hate Corpus test posts (hd or cv) after its 50, and "
             f"{sources['implicit-hate']} hateful implicit-hate posts of the gate's held-out tenth, one of each in turn")
    write_report(posts, ran, args, results=RESULTS, title="FIRE, zero-shot and retrieval on fresh hateful posts",
                 split=split, memory=MEMORY, extra=["## Latency", "", *latency_lines(), ""],
                 first=READ if len(posts) > READ else 0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "latency", "sheet", "report"])
    parser.add_argument("--n", type=int, default=90)
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    args = parser.parse_args()
    if not fire_unseen.ROUND2.exists() or not fire_unseen.GAB_TEST.exists():
        sys.exit(f"needs {fire_unseen.ROUND2} and {fire_unseen.GAB_TEST}")
    posts = {r["id"]: r["text"] for r in sample(10**6)}
    fire_rows.restore(LATENCY, TIMED, posts)
    fire_rows.dispatch({"run": run, "latency": run_latency, "sheet": sheet, "report": report}, args, OUT, SYSTEMS,
                       posts)
    if args.mode == "latency":
        fire_rows.archive(LATENCY, TIMED)


if __name__ == "__main__":
    main()
