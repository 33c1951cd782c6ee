"""The draft score as FIRE's reply ranker (issue 46): how well it reads a reply with its post, and
which cut the choice among block replies and the model's draft uses.

    python benchmarks/fire_ranker.py report     # benchmarks/results/fire_ranker.md

Three parts, no LLM generation (the replies are stored and graded; the chat model's first 14
layers read them):
- **Dev choice** (the cut is chosen here): every dev post's block candidates (compose_candidates:
  the blocks closest to the claim and the category's fallback, all graded blind) and FIRE's stored
  draft, each scored out of fold (folds grouped by post); the shipped choice (fire/candidates.py)
  replayed at each cut.
- **Held-out ranking**: the score trained on every dev reply, scored on the graded replies of
  fire_unseen.py's 150 posts (FIRE, zero-shot and retrieval; never training rows), against the
  reply-only score shipped before.
- The shipped head's own out-of-fold numbers are on its card (learned/data/draft_score_card.md).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fire_blocks  # noqa: E402
import fire_rows  # noqa: E402
from fire_grading import GRADES, GRADERS, blind_key, load_grades, share_interval  # noqa: E402
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "fire_ranker.md"
# Replies to dev posts: the shipped score's training rows (rebuttal learned train-draft-score).
DEV_REPLIES = [GRADES / f"fire-{name}-replies.jsonl" for name in ("dev", "heldout", "blocks-dev", "slurs")]
HELD_OUT = GRADES / "fire-unseen-replies.jsonl"
CUTS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.88, 0.9, 0.92)


def unseen_posts() -> dict[str, str]:
    import fire_unseen

    return {r["id"]: r["text"] for r in fire_unseen.sample(150)}


def features(rows: list[dict], posts: dict[str, str]) -> np.ndarray:
    from rebuttal.learned.draft_score import STATES
    from rebuttal.learned.train_draft import cached_pair_states

    return cached_pair_states(STATES, [(posts[r["item"]], r["reply"]) for r in rows])


def dev_choice(chance: dict[tuple[str, str], float], cut: float, grades: dict[str, dict],
               blocks: list[dict[str, dict]], free: dict[str, dict], free_passes: dict[str, bool]) -> Counter:
    """The shipped choice on each dev post at `cut`: the best-scored block that passes its checks
    and the cut (ok); else the draft if it passes its checks and the cut (ok); else the best-scored
    block passing its checks stands in (flagged). Counts of what was kept and how it was graded."""
    out: Counter = Counter()
    for item, row in free.items():
        made = [b[item] for b in blocks if item in b]
        if not made:
            continue
        score = {b["reply"]["text"]: chance.get((item, b["reply"]["text"]), -1.0) for b in made}
        made.sort(key=lambda b: -score[b["reply"]["text"]])
        passing = [b for b in made if b["passed"]]
        draft = row["reply"]["text"]
        if passing and score[passing[0]["reply"]["text"]] >= cut:
            kept, ok, system = passing[0]["reply"]["text"], True, fire_blocks.SYSTEM
        elif free_passes[item] and chance.get((item, draft), -1.0) >= cut:
            kept, ok, system = draft, True, "fire"
        else:
            kept, ok, system = (passing or made)[0]["reply"]["text"], False, fire_blocks.SYSTEM
        verdict = (grades.get(blind_key(system, item, kept)) or {}).get("verdict", "ungraded")
        out.update({"posts": 1, verdict: 1, "ok": ok, "ok usable": ok and verdict == "usable",
                    "ok harmful": ok and verdict == "harmful", system: 1})
    return out


def dev_section(rows: list[dict], chance_oof: np.ndarray, grades: dict[str, dict]) -> list[str]:
    from rebuttal.fire.generator import reply_problems

    chance = {(r["item"], r["reply"]): c for r, c in zip(rows, chance_oof)}
    stored = fire_blocks.dev_rows()
    blocks = fire_blocks.rival_rows(stored)
    free_passes = {i: not any(not c["passed"] for c in r["reply"].get("checks", []) if not c["name"].startswith("review"))
                   and not reply_problems(r["reply"]["text"], r["text"], fire_rows.row_evidence(r)) for i, r in stored.items()}
    lines = ["| cut | usable per post | status ok (of posts) | usable among ok | harmful kept | harmful among ok "
             "| kept: block / draft | ungraded kept |", "|---|---|---|---|---|---|---|---|"]
    for cut in CUTS:
        o = dev_choice(chance, cut, grades, blocks, stored, free_passes)
        n = o["posts"]
        lines.append(f"| {cut:.2f} | {o['usable']}/{n} ({o['usable'] / n:.0%}) | {o['ok']}/{n} ({o['ok'] / n:.0%}) "
                     f"| {o['ok usable']}/{o['ok']}{share_interval(o['ok usable'], o['ok'])} | {o['harmful']} "
                     f"| {o['ok harmful']} | {o[fire_blocks.SYSTEM]} / {o['fire']} | {o['ungraded']} |")
    return lines


def held_out_section(head, rows: list[dict], chance: np.ndarray, cut: float) -> list[str]:
    """AUC and what the cut passes on the held-out replies, the pair score beside the reply-only one."""
    from sklearn.metrics import roc_auc_score

    from rebuttal.learned.draft_score import DraftScore

    usable = np.array([r["verdict"] == "usable" for r in rows])
    before = DraftScore.load(ROOT / "benchmarks" / "archive" / "draft_score_reply_only.npz")
    old = np.array([before.review(r["reply"], None).chance for r in rows])
    lines = ["| score | system | replies | usable | AUC | passed by its cut | usable among passed |",
             "|---|---|---|---|---|---|---|"]
    for name, scores, threshold in (("reads the reply with its post (shipped)", chance, cut),
                                    ("reads the reply alone (shipped before)", old, before.threshold)):
        for system in ("all", "fire", "zero-shot", "retrieval"):
            mask = np.array([system in ("all", r["system"]) for r in rows])
            passed = mask & (scores >= threshold)
            lines.append(f"| {name} | {system} | {mask.sum()} | {usable[mask].sum()} | "
                         f"{roc_auc_score(usable[mask], scores[mask]):.3f} | {passed.sum()} | "
                         f"{usable[passed].sum()}{share_interval(int(usable[passed].sum()), int(passed.sum()))} |")
    return lines


def report(args) -> None:
    from rebuttal.learned.draft_score import STATES_C, DraftScore, usable_chance
    from rebuttal.learned.train_draft import graded_rows, out_of_fold, silver_posts

    grades = load_grades("independent")
    posts = silver_posts(DATA)
    dev = graded_rows(DEV_REPLIES, GRADES / GRADERS["independent"], posts)
    usable = np.array([r["verdict"] == "usable" for r in dev])
    dev_x = features(dev, posts)
    oof = out_of_fold(dev_x, usable, [r["item"] for r in dev], STATES_C, 10, scaled=True)
    shipped = DraftScore.load()
    held = graded_rows([HELD_OUT], GRADES / GRADERS["independent"], unseen_posts())
    held_chance = usable_chance(shipped.head, features(held, unseen_posts()))
    lines = header("The draft score as FIRE's reply ranker", split=(
        f"dev: {len(dev)} graded replies to silver dev posts (round 1, round 2's first 180, fire_slurs' sample), "
        f"{int(usable.sum())} usable, scored out of fold; held out: {len(held)} graded replies to fire_unseen.py's "
        "150 posts (never training rows)"), model="qwen2.5-1.5b states after 14 layers (the draft score's reader)",
        memory="shipped block library; stored FIRE drafts of fire.py / fire_heldout.py runs")
    lines += ["## Dev: the choice at each cut on the draft score's chance", "",
              f"Shipped cut: {shipped.threshold:.2f}. Usable per post counts every dev post FIRE called hateful "
              "with a stored draft and at least one block candidate.", "",
              *dev_section(dev, oof, grades), "",
              "## Held out: ranking replies to posts it never saw", "",
              *held_out_section(shipped.head, held, held_chance, shipped.threshold), ""]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["report"])
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"needs {DATA}")
    report(args)


if __name__ == "__main__":
    main()
