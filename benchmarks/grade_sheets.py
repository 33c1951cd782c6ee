"""Hands a blind grading sheet (fire.py / fire_heldout.py `sheet`) to several grader instances
and takes their grades back. Each part gets a share of the sheet plus a few anchors: replies
graded before, mixed in unmarked, whose second grade measures the grader's noise
(grades/fire-dev-regrades.jsonl, fire_grading.regrade_agreement).

    python benchmarks/grade_sheets.py split SHEET --parts 2 --anchors 6   # SHEET.part0.jsonl, ...
    python benchmarks/grade_sheets.py merge SHEET                         # reads SHEET.part<k>.graded.jsonl
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fire_grading import GRADERS, GRADES, VERDICTS, load_grades  # noqa: E402
from fire_rows import SILVER, read_jsonl, write_jsonl  # noqa: E402

REGRADES = GRADES / "fire-dev-regrades.jsonl"
REPLY_FILES = (GRADES / "fire-dev-replies.jsonl", GRADES / "fire-heldout-replies.jsonl")


def anchors(count: int, seed: int) -> list[dict]:
    """`count` graded replies not graded twice yet, as sheet lines with their posts from the data."""
    if not count:
        return []
    posts = {r["id"]: r["hate_speech"] for name in ("dev.jsonl", "dev_round2.jsonl") for r in read_jsonl(SILVER / name)}
    graded = load_grades("independent")
    regraded = {g["key"] for g in read_jsonl(REGRADES)} if REGRADES.exists() else set()
    pool = [r for path in REPLY_FILES for r in read_jsonl(path)
            if r["key"] in graded and r["key"] not in regraded and r["item"] in posts]
    return [{"key": r["key"], "post": posts[r["item"]], "reply": r["reply"]}
            for r in random.Random(seed).sample(pool, count)]


def split(args) -> None:
    entries = read_jsonl(args.sheet)
    extra = anchors(args.anchors * args.parts, args.seed)
    for k in range(args.parts):
        part = entries[k::args.parts] + extra[k::args.parts]
        random.Random(args.seed + k).shuffle(part)
        path = args.sheet.with_suffix(f".part{k}.jsonl")
        write_jsonl(path, part)
        print(f"{path}: {len(part)} lines -> grades to {path.with_suffix('.graded.jsonl')}")


def checked(part: Path) -> list[dict]:
    """The grader's lines for `part`, each key exactly once with a known verdict and a reason."""
    graded = part.with_suffix(".graded.jsonl")
    rows, keys = read_jsonl(graded), {e["key"] for e in read_jsonl(part)}
    seen = [r["key"] for r in rows]
    if sorted(seen) != sorted(keys):
        sys.exit(f"{graded}: keys differ from {part} (missing {len(keys - set(seen))}, extra {len(set(seen) - keys)}, "
                 f"repeated {len(seen) - len(set(seen))})")
    if bad := [r["key"] for r in rows if r.get("verdict") not in VERDICTS or not r.get("why")]:
        sys.exit(f"{graded}: no known verdict or reason for {bad}")
    return [{"key": r["key"], "verdict": r["verdict"], "why": r["why"]} for r in rows]


def merge(args) -> None:
    parts = sorted(args.sheet.parent.glob(args.sheet.stem + ".part[0-9]*.jsonl"))
    parts = [p for p in parts if not p.name.endswith(".graded.jsonl")]
    rows = [row for part in parts for row in checked(part)]
    earlier = load_grades("independent")
    new = [r for r in rows if r["key"] not in earlier]
    again = [r for r in rows if r["key"] in earlier]
    write_jsonl(GRADES / GRADERS["independent"], new, mode="a")
    write_jsonl(REGRADES, again, mode="a")
    same = sum(earlier[r["key"]]["verdict"] == r["verdict"] for r in again)
    print(f"{len(parts)} parts: {len(new)} new grades, {len(again)} anchors graded again ({same} same verdict)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["split", "merge"])
    parser.add_argument("sheet", type=Path)
    parser.add_argument("--parts", type=int, default=2)
    parser.add_argument("--anchors", type=int, default=6, help="earlier-graded replies per part")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    {"split": split, "merge": merge}[args.mode](args)


if __name__ == "__main__":
    main()
