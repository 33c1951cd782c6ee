"""FIRE's draft score: the chance that a blind grader calls a reply usable, from its MiniLM vector.

Why: the rule checks (rebuttal.fire.checks) catch what a pattern can name: off-topic, self-
contradiction, copied claims, unsupported numbers. On silver dev most drafts that passed them were
still not usable for reasons no pattern names: a vague counter-assertion where a fact was needed, a
muddled concession, a sweeping reverse generalisation (benchmarks/results/fire.md). A logistic
regression on the reply's sentence vector, trained on the blind grades of FIRE's and the
baselines' replies, ranks them. It never rewrites a draft; one below the cut is flagged for a
reviewer, so the text is the same with or without it.

    rebuttal learned train-draft-score --replies benchmarks/grades/fire-dev-replies.jsonl \
        --grades benchmarks/grades/fire-dev-independent.jsonl --out DIR
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rebuttal.learned.linear import LinearHead

SHIPPED = Path(__file__).resolve().parent / "data" / "draft_score.npz"
REBUILD = "rebuttal learned train-draft-score (see the model card)"
USABLE = "usable"
# Share of usable replies the cut passes out of fold. Chosen on silver dev round 1 for the issue's
# target that 85% of `ok` drafts be usable: out of fold, 0.75 left `ok` at 66% usable among
# replies that pass the rule checks, 0.35 at ~84%. The price is that most usable drafts are flagged.
KEEP = 0.35


@dataclass
class DraftScore:
    head: LinearHead

    @classmethod
    def load(cls, path: str | Path | None = None) -> DraftScore:
        return cls(LinearHead.load(path or SHIPPED, REBUILD))

    @property
    def threshold(self) -> float:
        """Below this chance of being usable a draft is flagged (chosen by the trainer)."""
        return float(self.head.meta["threshold"])

    def usable(self, vectors: np.ndarray) -> np.ndarray:
        """P(usable) for each row of MiniLM sentence vectors."""
        return self.head.probabilities(np.atleast_2d(vectors))[:, self.head.classes.index(USABLE)]


def graded_replies(replies: str | Path, grades: str | Path) -> list[dict]:
    """{item, system, reply, verdict} for every reply that has a grade."""
    verdicts = {g["key"]: g["verdict"] for g in _rows(grades)}
    return [{**r, "verdict": verdicts[r["key"]]} for r in _rows(replies) if r["key"] in verdicts]


def _rows(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def classifier(c: float):
    """The one model both the out-of-fold scores and the shipped head are fit with."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, class_weight="balanced", max_iter=3000)


def out_of_fold(vectors: np.ndarray, usable: np.ndarray, items: list[str], c: float, folds: int) -> np.ndarray:
    """Each reply scored by a model that saw no reply to the same post."""
    from sklearn.model_selection import GroupKFold

    scores = np.zeros(len(usable))
    for train, held in GroupKFold(folds).split(vectors, usable, items):
        model = classifier(c).fit(vectors[train], usable[train])
        scores[held] = model.predict_proba(vectors[held])[:, 1]
    return scores


def keep_cut(scores: np.ndarray, usable: np.ndarray, keep: float) -> float:
    """The highest cut that still passes `keep` of the usable replies."""
    ranked = np.sort(scores[usable])[::-1]
    return float(ranked[max(0, int(np.ceil(keep * len(ranked))) - 1)])


def train_draft_score(replies: str | Path, grades: str | Path, out: str | Path, *, c: float = 1.0,
                      keep: float | None = None, folds: int = 10) -> DraftScore:
    """Cut and scores from grouped out-of-fold predictions; the shipped head is fit on all rows."""
    from sklearn.metrics import roc_auc_score

    from rebuttal.llm.embeddings import load_minilm

    keep = KEEP if keep is None else keep

    rows = graded_replies(replies, grades)
    if len(rows) < 4 * folds:
        raise ValueError(f"only {len(rows)} graded replies in {replies}; need at least {4 * folds}")
    vectors = load_minilm().encode([r["reply"] for r in rows])
    usable = np.array([r["verdict"] == USABLE for r in rows])
    scores = out_of_fold(vectors, usable, [r["item"] for r in rows], c, folds)
    cut = keep_cut(scores, usable, keep)
    model = classifier(c).fit(vectors, usable)
    meta = {
        "version": f"draft-score.{time.strftime('%Y%m%d')}", "c": c, "folds": folds, "keep": keep,
        "threshold": round(cut, 4), "replies": len(rows), "usable": int(usable.sum()),
        "out_of_fold_auc": round(float(roc_auc_score(usable, scores)), 3),
        "out_of_fold_flagged_not_usable": round(float((scores[~usable] < cut).mean()), 3),
        "out_of_fold_passed_usable": round(float((scores[usable] >= cut).mean()), 3),
        "out_of_fold_precision": round(float(usable[scores >= cut].mean()), 3),
        "systems": sorted({r["system"] for r in rows}), "data": [Path(replies).name, Path(grades).name],
    }
    head = LinearHead(coef=model.coef_.astype(np.float64), intercept=model.intercept_.astype(np.float64),
                      classes=["not_usable", USABLE], meta=meta)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    head.save(out / "draft_score.npz")
    (out / "draft_score_card.md").write_text(card(meta), encoding="utf-8")
    return DraftScore(head)


def card(meta: dict) -> str:
    return f"""# FIRE draft score: logistic regression on a reply's MiniLM vector

Trained {time.strftime('%Y-%m-%d')} by `rebuttal learned train-draft-score` ({meta['version']}).

## Data

- {meta['replies']} replies ({meta['usable']} graded usable) written by the embedded Qwen2.5-1.5B model
  ({', '.join(meta['systems'])}) to silver dev round-1 posts, from `{meta['data'][0]}`, with the blind
  verdicts of `{meta['data'][1]}` (shared/docs/reply-rubric.md: usable / fixable / unusable / harmful;
  graded by fresh AI-agent instances that never saw the code or which system wrote a reply).
- Only the replies are read (no post text): the replies are the project's own model output and
  the grades are the project's own; Qwen2.5 is Apache-2.0.

## Licence

Apache-2.0, like the project. The weights are one linear layer (384 numbers and a bias); no text
is stored in them.

## Settings and scores

- L2 C={meta['c']}, balanced class weights; {meta['folds']}-fold out-of-fold scores grouped by post (no
  fold saw a reply to a post it scored).
- out-of-fold AUC (usable vs not): {meta['out_of_fold_auc']}
- cut {meta['threshold']}: the highest that passes {meta['keep']:.0%} of usable replies out of fold; it
  passes {meta['out_of_fold_passed_usable']:.0%} of usable replies and flags
  {meta['out_of_fold_flagged_not_usable']:.0%} of the others; {meta['out_of_fold_precision']:.0%} of the replies it passes are
  usable (before the rule checks, which remove more of the unusable ones). The share was chosen
  on these replies for the target that 85% of `ok` drafts be usable: a strict cut, so most
  usable drafts are flagged for a reviewer too.
- Held-out check on posts it never saw (silver dev round 2): benchmarks/results/fire_heldout.md.

## Use and limits

FIRE flags a draft whose score is below the cut (check `review_score`); it never changes the
text. Trained on English replies only: Chinese replies are not scored. The grades are one judge's
reading of the rubric on ~{meta['replies']} replies: treat the score as a triage signal, not a verdict.
"""
