"""FIRE's draft score: the chance that a blind grader calls a reply usable.

Why: the rule checks (rebuttal.fire.checks) catch what a pattern can name: off-topic, self-
contradiction, copied claims, unsupported numbers. On silver dev most drafts that passed them were
still not usable for reasons no pattern names: a vague counter-assertion where a fact was needed, a
muddled concession, a sweeping reverse generalisation (benchmarks/results/fire.md). A logistic
regression trained on the blind grades of FIRE's and the baselines' replies ranks them. It reads
the reply through the embedded chat model's first 14 layers (the hate gate's reader, mean and last
token state): on the two forward splits of dev (trained on the earlier grades, scored on the later
replies) that ranked new replies far better than the reply's MiniLM vector (AUC 0.84-0.87 against
0.67-0.80), which stays as the fallback when the chat model is not installed (flagged). It never
rewrites a draft; one below the cut is flagged for a reviewer, so the text is the same with or
without it.

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
# target that 85% of `ok` drafts be usable: on the forward splits the states score's `ok` drafts
# were 90% usable at 0.35 and 82-90% at 0.5. The price is that most usable drafts are flagged.
# A stricter 0.25 looked better on dev once a later run's replies were added (86% against 81%),
# but not on the held-out posts (38 of 52 passed replies usable against 62 of 84): kept at 0.35
# (benchmarks/results/draft_score.md, "Which cut").
KEEP = 0.35
# The reader: the gate's model and layers, but the whole reply (up to 256 tokens, not the first 64).
STATES = {"model": "qwen2.5-1.5b", "layers": 14, "max_tokens": 256}
STATES_C = 0.01  # on the forward splits: AUC 0.867 / 0.842 (0.003: 0.864 / 0.823)
TEXT_C = 1.0
FALLBACK_SUFFIX = "_text"  # draft_score_text.npz beside draft_score.npz: the MiniLM head


@dataclass(frozen=True)
class Review:
    chance: float  # P(usable)
    cut: float
    fallback: bool  # scored by the MiniLM head because the chat model is not installed

    @property
    def passed(self) -> bool:
        return self.chance >= self.cut


@dataclass
class DraftScore:
    head: LinearHead  # over pooled chat-model states when head.meta["states"] is set, else MiniLM vectors
    fallback: LinearHead | None = None  # over MiniLM vectors, when the chat model is missing

    @classmethod
    def load(cls, path: str | Path | None = None) -> DraftScore:
        path = Path(path or SHIPPED)
        head = LinearHead.load(path, REBUILD)
        text = path.with_name(path.stem + FALLBACK_SUFFIX + path.suffix)
        return cls(head, LinearHead.load(text, REBUILD) if head.meta.get("states") else None)

    @property
    def threshold(self) -> float:
        """Below this chance of being usable a draft is flagged (chosen by the trainer)."""
        return float(self.head.meta["threshold"])

    def review(self, text: str, encoder) -> Review:
        """The chance that `text` is usable; MiniLM (`encoder`) scores it when the chat model is missing."""
        from rebuttal.learned.gate import MODEL_MISSING, pooled_states, shared_reader

        spec = self.head.meta.get("states")
        if spec:
            try:
                states = pooled_states(shared_reader(**spec), [text])
                return Review(usable_chance(self.head, states)[0], self.threshold, False)
            except MODEL_MISSING:
                if self.fallback is None:
                    raise
        head = self.fallback if spec else self.head
        return Review(usable_chance(head, encoder.encode([text]))[0], float(head.meta["threshold"]), bool(spec))

    def warm_up(self) -> None:
        """Open the states reader now (a missing model is left to `review`, which falls back)."""
        from rebuttal.learned.gate import MODEL_MISSING, shared_reader

        if spec := self.head.meta.get("states"):
            try:
                shared_reader(**spec)
            except MODEL_MISSING:
                pass


def usable_chance(head: LinearHead, features: np.ndarray) -> np.ndarray:
    """P(usable) per row of the features `head` reads (pooled states or MiniLM vectors)."""
    return head.probabilities(np.atleast_2d(features))[:, head.classes.index(USABLE)]


def graded_replies(replies: str | Path, grades: str | Path) -> list[dict]:
    """{item, system, reply, verdict} for every reply that has a grade."""
    verdicts = {g["key"]: g["verdict"] for g in _rows(grades)}
    return [{**r, "verdict": verdicts[r["key"]]} for r in _rows(replies) if r["key"] in verdicts]


def _rows(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def classifier(c: float, scaled: bool = False):
    """The one model both the out-of-fold scores and the shipped head are fit with (states are
    standardised first; `fit_head` folds the scaling into the stored weights)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = LogisticRegression(C=c, class_weight="balanced", max_iter=3000)
    return make_pipeline(StandardScaler(), model) if scaled else model


def out_of_fold(features: np.ndarray, usable: np.ndarray, items: list[str], c: float, folds: int,
                scaled: bool = False) -> np.ndarray:
    """Each reply scored by a model that saw no reply to the same post."""
    from sklearn.model_selection import GroupKFold

    scores = np.zeros(len(usable))
    for train, held in GroupKFold(folds).split(features, usable, items):
        model = classifier(c, scaled).fit(features[train], usable[train])
        scores[held] = model.predict_proba(features[held])[:, 1]
    return scores


def keep_cut(scores: np.ndarray, usable: np.ndarray, keep: float) -> float:
    """The highest cut that still passes `keep` of the usable replies."""
    ranked = np.sort(scores[usable])[::-1]
    return float(ranked[max(0, int(np.ceil(keep * len(ranked))) - 1)])


def fit_head(features: np.ndarray, usable: np.ndarray, items: list[str], c: float, keep: float, folds: int,
             scaled: bool) -> LinearHead:
    """Cut and scores from grouped out-of-fold predictions; the head is fit on all rows."""
    from sklearn.metrics import roc_auc_score

    scores = out_of_fold(features, usable, items, c, folds, scaled)
    cut = keep_cut(scores, usable, keep)
    model = classifier(c, scaled).fit(features, usable)
    coef, intercept = (model[-1].coef_[0], model[-1].intercept_[0]) if scaled else (model.coef_[0], model.intercept_[0])
    if scaled:  # fold the standardisation into the weights: one dot product at run time
        scaler = model[0]
        coef = coef / scaler.scale_
        intercept = intercept - coef @ scaler.mean_
    meta = {
        "c": c, "folds": folds, "keep": keep, "threshold": round(cut, 4),
        "out_of_fold_auc": round(float(roc_auc_score(usable, scores)), 3),
        "out_of_fold_flagged_not_usable": round(float((scores[~usable] < cut).mean()), 3),
        "out_of_fold_passed_usable": round(float((scores[usable] >= cut).mean()), 3),
        "out_of_fold_precision": round(float(usable[scores >= cut].mean()), 3),
    }
    return LinearHead(coef=np.atleast_2d(coef).astype(np.float64), intercept=np.atleast_1d(intercept).astype(np.float64),
                      classes=["not_usable", USABLE], meta=meta)


def train_draft_score(replies: str | Path, grades: str | Path, out: str | Path, *, keep: float | None = None,
                      folds: int = 10, states: dict | None = STATES) -> DraftScore:
    """The states head (with the MiniLM head as its fallback), or with `states=None` the MiniLM head
    alone; each with its own cut and out-of-fold scores."""
    from rebuttal.llm.embeddings import load_minilm

    keep = KEEP if keep is None else keep
    rows = graded_replies(replies, grades)
    if len(rows) < 4 * folds:
        raise ValueError(f"only {len(rows)} graded replies in {replies}; need at least {4 * folds}")
    texts, items = [r["reply"] for r in rows], [r["item"] for r in rows]
    usable = np.array([r["verdict"] == USABLE for r in rows])
    shared = {"version": f"draft-score.{time.strftime('%Y%m%d')}", "replies": len(rows), "usable": int(usable.sum()),
              "systems": sorted({r["system"] for r in rows}), "data": [Path(replies).name, Path(grades).name]}
    text_head = fit_head(load_minilm().encode(texts), usable, items, TEXT_C, keep, folds, scaled=False)
    text_head.meta.update(shared, reads="MiniLM sentence vector")
    score = DraftScore(text_head)
    if states:
        from rebuttal.learned.train import cached_pooled_states

        head = fit_head(cached_pooled_states(states, texts), usable, items, STATES_C, keep, folds, scaled=True)
        head.meta.update(shared, states=dict(states), reads="{model} states after {layers} layers".format(**states))
        score = DraftScore(head, text_head)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    score.head.save(out / "draft_score.npz")
    if score.fallback is not None:
        score.fallback.save(out / f"draft_score{FALLBACK_SUFFIX}.npz")
    (out / "draft_score_card.md").write_text(card(score), encoding="utf-8")
    return score


def _head_lines(head: LinearHead) -> str:
    m = head.meta
    return f"""- reads the reply's {m['reads']}; L2 C={m['c']}, balanced class weights; {m['folds']}-fold out-of-fold
  scores grouped by post (no fold saw a reply to a post it scored): AUC {m['out_of_fold_auc']}
- cut {m['threshold']}: the highest that passes {m['keep']:.0%} of usable replies out of fold; it flags
  {m['out_of_fold_flagged_not_usable']:.0%} of the others, and {m['out_of_fold_precision']:.0%} of the replies it passes are usable
  (before the rule checks, which remove more of the unusable ones)"""


def card(score: DraftScore) -> str:
    meta = score.head.meta
    heads = f"### Shipped head\n\n{_head_lines(score.head)}"
    if score.fallback is not None:
        heads += ("\n\n### Fallback head (used when the chat model is not installed; flagged "
                  f"`draft_review_fallback`)\n\n{_head_lines(score.fallback)}")
    return f"""# FIRE draft score: logistic regression on a reply's {meta['reads']}

Trained by `rebuttal learned train-draft-score` ({meta['version']}: the date it was trained).

## Data

- {meta['replies']} replies ({meta['usable']} graded usable) written by the embedded Qwen2.5-1.5B model
  ({', '.join(meta['systems'])}) to silver dev round-1 posts, from `{meta['data'][0]}`, with the blind
  verdicts of `{meta['data'][1]}` (shared/docs/reply-rubric.md: usable / fixable / unusable / harmful;
  graded by fresh AI-agent instances that never saw the code or which system wrote a reply).
- Only the replies are read (no post text): the replies are the project's own model output and
  the grades are the project's own; Qwen2.5 is Apache-2.0.

## Licence

Apache-2.0, like the project. The weights are one linear layer and a bias per head; no text is
stored in them.

## Settings and scores

{heads}

The share of usable replies passed was chosen on these replies for the target that 85% of `ok`
drafts be usable: a strict cut, so most usable drafts are flagged for a reviewer too. Out of fold
flatters a score trained on one run's replies; the forward splits (earlier grades to later
replies) are in benchmarks/results/draft_score.md. Held-out check on posts it never saw
(silver dev round 2): benchmarks/results/fire_heldout.md.

## Use and limits

FIRE flags a draft whose score is below the cut (check `review_score`); it never changes the
text. Trained on English replies only: Chinese replies are not scored. The grades are one judge's
reading of the rubric on ~{meta['replies']} replies: treat the score as a triage signal, not a verdict.
"""
