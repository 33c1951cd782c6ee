"""Block-composed replies (fire/compose.py) on the graded dev posts, beside the free drafts FIRE
wrote for them: how the block library's reply and the rule that picks between the two were
chosen (issue 46). No LLM runs here: the replies are composed on the analyses (target group,
category) stored by fire.py's and fire_heldout.py's runs, whose free drafts are graded already.

    python benchmarks/fire_blocks.py sheet     # block replies not graded yet -> a blind sheet
    python benchmarks/fire_blocks.py report    # benchmarks/results/fire_blocks.md

Dev posts: silver dev round 1 (fire.py) and the first 180 of round 2's seeded shuffle
(fire_heldout.py): both graded and read before, so dev.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fire_rows  # noqa: E402
from fire_grading import GRADES, graded_by_item, load_grades, share_interval, write_sheet  # noqa: E402
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNS = {"fire-dev": fire_rows.SILVER / "dev.jsonl", "fire-heldout": fire_rows.SILVER / "dev_round2.jsonl"}
HELDOUT_USED = 180
OUT = ROOT / "runs" / "bench" / "fire-blocks"
RESULTS = ROOT / "benchmarks" / "results" / "fire_blocks.md"
REPLIES = GRADES / "fire-blocks-dev-replies.jsonl"
SYSTEM = "fire-blocks"


def dev_rows() -> dict[str, dict]:
    """Stored FIRE rows (with their posts) of the dev posts whose analysis called them hateful."""
    rows: dict[str, dict] = {}
    for run, path in RUNS.items():
        posts = {r["id"]: r["hate_speech"] for r in fire_rows.read_jsonl(path)}
        kept = fire_rows.read_jsonl(fire_rows.ARCHIVE / run / "fire.jsonl")
        if run == "fire-heldout":
            import fire_heldout
            used = {r["id"] for r in fire_heldout.sample(HELDOUT_USED)}
            kept = [r for r in kept if r["id"] in used]
        rows |= {r["id"]: {**r, "text": posts[r["id"]]} for r in kept
                 if r.get("reply") and (r.get("analysis") or {}).get("is_hateful")}
    return rows


def composed_rows(rows: dict[str, dict], rank: int | None = None) -> dict[str, dict]:
    """Each post's block reply, with whether it passes the draft checks (as FireReply's choice asks);
    with `rank`, the rank-th of the post's block candidates (compose_candidates: the ranker's rivals)."""
    from rebuttal.fire.blocks import BlockLibrary
    from rebuttal.fire.candidates import RIVALS, block_evidence
    from rebuttal.fire.checks import failures
    from rebuttal.fire.compose import compose, compose_candidates
    from rebuttal.fire.generator import DraftJudge
    from rebuttal.llm.embeddings import load_minilm
    from rebuttal.types import HateType

    encoder = load_minilm()
    library, judge = BlockLibrary.load(encoder), DraftJudge(encoder)
    out = {}
    for item, row in rows.items():
        analysis = row["analysis"]
        made = (compose(library, row["text"], analysis["target_group"], HateType(analysis["category"])) if rank is None
                else _nth(compose_candidates(library, row["text"], analysis["target_group"],
                                             HateType(analysis["category"]), RIVALS), rank))
        if made is not None:
            checks = judge.judge(made.text, row["text"], block_evidence(made), [], None, False)
            out[item] = {"reply": {"text": made.text}, "status": "ok", "score": made.score, "answers": made.answers,
                         "passed": not failures(checks), "why": made.why(), "blocks": [made.match.block.id]}
    return out


def _nth(items: list, n: int):
    return items[n] if n < len(items) else None


def rival_rows(rows: dict[str, dict]) -> list[dict[str, dict]]:
    """The block candidates of each post, by rank (rank 0 first)."""
    from rebuttal.fire.candidates import RIVALS

    return [composed_rows(rows, rank) for rank in range(RIVALS + 1)]


def sheet(args) -> None:
    rows = dev_rows()
    systems = [(SYSTEM, composed_rows(rows))] + [(SYSTEM, rivals) for rivals in rival_rows(rows)]
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "blind_sheet-independent.jsonl"
    count = write_sheet(systems, {i: r["text"] for i, r in rows.items()}, "independent", path, REPLIES)
    print(f"{count} replies without a grade -> {path}")


CUTS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def per_cut(blocks: dict[str, dict], free: dict[str, dict], grades: dict[str, dict]) -> list[str]:
    """The shipped choice (fire/candidates.py) at each cut: a passing block reply at or above the
    cut is kept (ok); below it the model's draft if it passed every check (ok), else the block
    reply (flagged). Free drafts' status is today's checks + draft score (fire_rows.rechecked)."""
    block_grade, free_grade = graded_by_item(SYSTEM, blocks, grades), graded_by_item("fire", free, grades)
    today = fire_rows.rechecked(free)
    both = [i for i in blocks if i in block_grade and i in free_grade]
    lines = ["| cut | block kept first (usable) | free draft kept, ok (usable) | block stands in, flagged (usable) "
             "| status ok: usable (95% interval) | ok share of posts | usable per post | harmful kept |",
             "|---|---|---|---|---|---|---|---|"]
    for cut in CUTS:
        first = [i for i in both if blocks[i]["answers"] and blocks[i]["passed"] and blocks[i]["score"] >= cut]
        free_ok = [i for i in both if i not in first and today[i]["status"] == "ok"]
        stand_in = [i for i in both if i not in first and i not in free_ok]
        grade = {**{i: block_grade[i] for i in first + stand_in}, **{i: free_grade[i] for i in free_ok}}
        usable = {i for i, g in grade.items() if g["verdict"] == "usable"}
        ok_usable = len(usable & set(first + free_ok))
        harmful = sum(g["verdict"] == "harmful" for g in grade.values())
        lines.append(f"| {cut:.2f} | {len(first)} ({len(usable & set(first))}) | {len(free_ok)} ({len(usable & set(free_ok))}) "
                     f"| {len(stand_in)} ({len(usable & set(stand_in))}) | {ok_usable}/{len(first) + len(free_ok)}"
                     f"{share_interval(ok_usable, len(first) + len(free_ok))} | {(len(first) + len(free_ok)) / len(both):.0%} "
                     f"| {len(usable)}/{len(both)} ({len(usable) / len(both):.0%}) | {harmful} |")
    free_usable = sum(free_grade[i]["verdict"] == "usable" for i in both)
    lines += ["", f"FIRE's stored drafts alone on the same posts: {free_usable}/{len(both)} usable "
                  f"({free_usable / len(both):.0%}), harmful {sum(free_grade[i]['verdict'] == 'harmful' for i in both)}."]
    return lines


def report(args) -> None:
    rows = dev_rows()
    blocks = composed_rows(rows)
    grades = load_grades("independent")
    block_grade = graded_by_item(SYSTEM, blocks, grades)
    verdicts = Counter(g["verdict"] for g in block_grade.values())
    by_kind = Counter((blocks[i]["answers"], g["verdict"] == "usable") for i, g in block_grade.items())
    lines = header("Block-composed replies on graded dev posts", split="silver dev round 1 (106) and the first 180 "
                   "of round 2's seeded shuffle (fire_heldout.py): dev, graded before; FIRE-hateful posts with a "
                   "stored reply", model="none for the block reply (composed on the stored analyses of "
                   "qwen2.5-1.5b runs)", memory="shipped block library (fire/data/blocks-*.jsonl)")
    lines += ["## Grades of the block replies", "",
              f"{len(block_grade)} of {len(blocks)} block replies graded: " +
              ", ".join(f"{v} {verdicts[v]}" for v in ("usable", "fixable", "unusable", "harmful")) + ".",
              f"A block answers the claim (cosine >= compose.ANSWERS): {by_kind[(True, True)]} usable of "
              f"{by_kind[(True, True)] + by_kind[(True, False)]}; the category's fallback: {by_kind[(False, True)]} of "
              f"{by_kind[(False, True)] + by_kind[(False, False)]}.", "",
              "## Which reply a post gets at each cut on the block's match score (shipped: 0.80)", "",
              *per_cut(blocks, rows, grades), ""]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["sheet", "report"])
    args = parser.parse_args()
    {"sheet": sheet, "report": report}[args.mode](args)


if __name__ == "__main__":
    main()
