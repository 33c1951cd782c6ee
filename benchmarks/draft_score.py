"""Which reader the draft score should have, measured forward in time on silver dev round 1: each
head is trained (and its cut chosen out of fold) on the replies graded first and scores the
replies graded after them, which came from later runs and options it never saw. Out-of-fold
scores on one pool flatter a score (the MiniLM head had AUC 0.80 out of fold, 0.67 on the next
run's replies). A second table chooses the cut (the share of usable replies it passes out of
fold) the same way, adding the replies of fire_slurs.py's later run, which the shipped score
never saw, with the held-out posts' replies beside it as the check. Results:
benchmarks/results/draft_score.md (written whole).

    PYTHONPATH=src .venv/bin/python benchmarks/draft_score.py

Reads benchmarks/grades/ only (no posts); the chat model's states of the replies are computed
once (~5 min) and kept in the cache folder, as `rebuttal learned train-draft-score` does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fire_grading import GRADERS, GRADES  # noqa: E402
from provenance import header  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "draft_score.md"
REPLIES = GRADES / "fire-dev-replies.jsonl"
LATER = GRADES / "fire-slurs-replies.jsonl"  # dev posts graded after the score was trained
HELD_OUT = GRADES / "fire-heldout-replies.jsonl"  # fire_heldout.py's posts: never read to choose
KEEPS = (0.2, 0.25, 0.3, 0.35, 0.45)
# The replies file grows in grading order: the first 300 were graded by 2026-12-02 (the first dev runs),
# the next 169 from the rerun of 2026-12-03 morning, the last 83 from FIRE on posts 51-106 and the adapt option.
SPLITS = (300, 469)
FOLDS = 10


def heads() -> list[tuple[str, str, float]]:
    """(name, features, C): the shipped states head, the other C tried, and the MiniLM head."""
    from rebuttal.learned.draft_score import STATES_C, TEXT_C

    return [(f"chat-model states, C={STATES_C} (shipped)", "states", STATES_C),
            ("chat-model states, C=0.003", "states", 0.003),
            (f"MiniLM vector, C={TEXT_C} (the fallback; shipped before)", "minilm", TEXT_C)]


def head_on_first(features: np.ndarray, usable: np.ndarray, items: list[str], c: float, scaled: bool, n: int,
                  keep: float | None = None):
    """The shipped recipe (rebuttal.learned.draft_score.fit_head) on the first n replies."""
    from rebuttal.learned.draft_score import KEEP
    from rebuttal.learned.train_draft import fit_head

    return fit_head(features[:n], usable[:n], items[:n], c, KEEP if keep is None else keep, FOLDS, scaled)


def passes(head, features: np.ndarray, usable: np.ndarray) -> tuple[float, int, int]:
    """The head's AUC on these replies, how many its cut passes and how many of those are usable."""
    from sklearn.metrics import roc_auc_score

    from rebuttal.learned.draft_score import usable_chance

    scores = usable_chance(head, features)
    passed = scores >= head.meta["threshold"]
    return roc_auc_score(usable, scores), int(passed.sum()), int(usable[passed].sum())


def cut_table(features: np.ndarray, usable: np.ndarray, items: list[str], later: tuple, held: tuple) -> list[str]:
    """Usable among passed for each share of usable replies the cut passes: forward on dev round 1,
    the head trained on every graded reply scoring the later run's replies, and (the check) the
    held-out posts' replies, (features, usable) each."""
    from rebuttal.learned.draft_score import KEEP, STATES_C

    lines = ["## Which cut", "",
             f"The shipped head, its cut set to pass each share of usable replies out of fold. Later run: "
             f"the {len(later[1])} graded replies of fire_slurs.py (dev posts with a slur, round 1 and the part "
             "of round 2 outside fire_heldout.py's sample), scored by the head trained on all the replies above. "
             "Pooled: the three dev columns. Held-out check: every graded reply to fire_heldout.py's posts (all "
             "systems and runs), scored by the same head; not used to choose. Passed counts are before the rule "
             "checks.", "",
             "| usable passed out of fold | first 300 -> later | first 469 -> later | all -> later run | pooled (dev) "
             "| held-out check |", "|---|---|---|---|---|---|"]
    for keep in KEEPS:
        runs = [passes(head_on_first(features, usable, items, STATES_C, True, n, keep), features[n:], usable[n:])[1:]
                for n in SPLITS]
        on_all = head_on_first(features, usable, items, STATES_C, True, len(usable), keep)
        runs.append(passes(on_all, *later)[1:])
        passed, good = (sum(r[i] for r in runs) for i in (0, 1))
        _, held_passed, held_good = passes(on_all, *held)
        cells = [f"{g}/{p}" for p, g in runs] + [f"{good}/{passed} ({good / max(passed, 1):.0%})",
                                                 f"{held_good}/{held_passed} ({held_good / max(held_passed, 1):.0%})"]
        lines.append(f"| {keep:.0%}{' (shipped)' if keep == KEEP else ''} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    from rebuttal.learned.draft_score import KEEP, STATES, graded_replies
    from rebuttal.learned.train import cached_pooled_states
    from rebuttal.llm.embeddings import load_minilm

    rows = graded_replies(REPLIES, GRADES / GRADERS["independent"])
    held = graded_replies(HELD_OUT, GRADES / GRADERS["independent"])
    held_out = {r["item"] for r in held}
    later = [r for r in graded_replies(LATER, GRADES / GRADERS["independent"]) if r["item"] not in held_out]
    texts, items = [r["reply"] for r in rows], [r["item"] for r in rows]
    usable = np.array([r["verdict"] == "usable" for r in rows])
    features = {"states": cached_pooled_states(STATES, texts), "minilm": load_minilm().encode(texts)}
    lines = header("FIRE's draft score: readers compared forward in time", split=f"silver dev round 1: {len(rows)} "
                   "graded replies of FIRE, its options and the baselines (benchmarks/grades/), in grading order",
                   model="qwen2.5-1.5b states after 14 layers (mean and last token, up to 256 tokens) or MiniLM",
                   memory="none (replies only)")
    lines += ["## Trained on the first n replies, scored on the rest", "",
              f"Cut: the highest that passes {KEEP:.0%} of usable replies out of fold on the first n (the "
              "shipped rule). Passed counts are before the rule checks.", "",
              "| head | first n | later replies | later usable | AUC on later | passed by the cut | usable among passed |",
              "|---|---|---|---|---|---|---|"]
    for name, kind, c in heads():
        for n in SPLITS:
            head = head_on_first(features[kind], usable, items, c, kind == "states", n)
            auc, passed, good = passes(head, features[kind][n:], usable[n:])
            lines.append(f"| {name} | {n} | {len(rows) - n} | {usable[n:].sum()} | {auc:.3f} | {passed} | {good} |")
    later, held = ((cached_pooled_states(STATES, [r["reply"] for r in part]),
                    np.array([r["verdict"] == "usable" for r in part])) for part in (later, held))
    lines += ["", *cut_table(features["states"], usable, items, later, held)]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
