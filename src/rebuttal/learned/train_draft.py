"""Training FIRE's draft score (learned/draft_score.py) on blind-graded replies and their posts.

Each grader verdict is a row: usable or not. With the posts (`posts`: item id -> text) the head
reads each reply with its post (learned/reply_pairs.py), which is how FIRE ranks its candidates;
without them it reads the reply alone, as the heads before issue 46 did. The cut passes a set
share of usable replies out of fold (folds grouped by post: no fold saw a reply to a post it scores).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from rebuttal.learned.draft_score import (
    FALLBACK_SUFFIX, KEEP, PAIR_C, PAIR_CUT, STATES, STATES_C, TEXT_C, USABLE, DraftScore, graded_replies,
)
from rebuttal.learned.linear import LinearHead
from rebuttal.learned.reply_pairs import pair_prefix, pair_states, pair_vectors


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
             scaled: bool, cut: float | None = None) -> LinearHead:
    """Cut (`cut`, or the one that passes `keep` of the usable replies) and scores from grouped
    out-of-fold predictions; the head is fit on all rows."""
    from sklearn.metrics import roc_auc_score

    scores = out_of_fold(features, usable, items, c, folds, scaled)
    chosen = cut is not None
    cut = keep_cut(scores, usable, keep) if cut is None else cut
    model = classifier(c, scaled).fit(features, usable)
    coef, intercept = (model[-1].coef_[0], model[-1].intercept_[0]) if scaled else (model.coef_[0], model.intercept_[0])
    if scaled:  # fold the standardisation into the weights: one dot product at run time
        scaler = model[0]
        coef = coef / scaler.scale_
        intercept = intercept - coef @ scaler.mean_
    meta = {
        "c": c, "folds": folds, "keep": None if chosen else keep, "threshold": round(cut, 4),
        "out_of_fold_auc": round(float(roc_auc_score(usable, scores)), 3),
        "out_of_fold_flagged_not_usable": round(float((scores[~usable] < cut).mean()), 3),
        "out_of_fold_passed_usable": round(float((scores[usable] >= cut).mean()), 3),
        "out_of_fold_precision": round(float(usable[scores >= cut].mean()) if (scores >= cut).any() else 0.0, 3),
    }
    return LinearHead(coef=np.atleast_2d(coef).astype(np.float64), intercept=np.atleast_1d(intercept).astype(np.float64),
                      classes=["not_usable", USABLE], meta=meta)


def cached_pair_states(spec: dict, pairs: list[tuple[str, str]], reader=None) -> np.ndarray:
    """`pair_states` of each (post, reply), kept in <cache>/draft-pairs/ by the text the reader reads."""
    from rebuttal.config import cache_dir
    from rebuttal.learned.gate import shared_reader
    from rebuttal.llm.states import StateCache

    cache = StateCache(cache_dir() / "draft-pairs" / "v1-{model}-l{layers}-t{max_tokens}".format(**spec),
                       dtype=np.float32)
    keys = [f"{pair_prefix(post)} {reply}" for post, reply in pairs]
    for (post, reply), key in zip(pairs, keys):
        if cache.get(key) is None:
            cache.put(key, pair_states(reader or shared_reader(**spec), post, [reply]))
    cache.flush()
    return np.concatenate([cache.get(key) for key in keys]) if keys else np.zeros((0, 0), np.float32)


def silver_posts(data_root: str | Path) -> dict[str, str]:
    """Item id -> post of every silver file (factualcs-silver/*.jsonl under `data_root`)."""
    import json

    files = sorted((Path(data_root) / "factualcs-silver").glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no factualcs-silver/*.jsonl under {data_root}")
    return {row["id"]: row["hate_speech"] for path in files
            for row in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if row.get("id")}


def graded_rows(replies: list[Path], grades: Path, posts: dict[str, str] | None) -> list[dict]:
    """The graded replies of every file (each key once); with `posts`, only those whose post is known."""
    rows = {r["key"]: r for path in replies for r in graded_replies(path, grades)}
    return [r for r in rows.values() if posts is None or r["item"] in posts]


def train_draft_score(replies: Path | list[Path], grades: str | Path, out: str | Path, *,
                      posts: dict[str, str] | None = None, keep: float | None = None, folds: int = 10,
                      states: dict | None = STATES) -> DraftScore:
    """The states head (with the MiniLM head as its fallback), or with `states=None` the MiniLM head
    alone; each with its own cut and out-of-fold scores. With `posts` both read the reply with its post."""
    from rebuttal.llm.embeddings import load_minilm

    explicit_keep, keep = keep is not None, KEEP if keep is None else keep
    paths = [Path(p) for p in (replies if isinstance(replies, list) else [replies])]
    rows = graded_rows(paths, Path(grades), posts)
    if len(rows) < 4 * folds:
        raise ValueError(f"only {len(rows)} graded replies in {', '.join(map(str, paths))}; need at least {4 * folds}")
    texts, items = [r["reply"] for r in rows], [r["item"] for r in rows]
    usable = np.array([r["verdict"] == USABLE for r in rows])
    pair = posts is not None
    shared = {"version": f"draft-score.{time.strftime('%Y%m%d')}", "replies": len(rows), "usable": int(usable.sum()),
              "systems": sorted({r["system"] for r in rows}), "data": [p.name for p in paths] + [Path(grades).name],
              "pair": pair}
    encoder = load_minilm()
    text_features = (np.concatenate([pair_vectors(encoder, posts[r["item"]], [r["reply"]]) for r in rows]) if pair
                     else encoder.encode(texts))
    text_head = fit_head(text_features, usable, items, TEXT_C, keep, folds, scaled=False)
    text_head.meta.update(shared, reads=("MiniLM vectors of the reply and its post" if pair else "MiniLM sentence vector"))
    score = DraftScore(text_head)
    if states:
        from rebuttal.learned.train import cached_pooled_states

        features = (cached_pair_states(states, [(posts[r["item"]], r["reply"]) for r in rows]) if pair
                    else cached_pooled_states(states, texts))
        head = fit_head(features, usable, items, PAIR_C if pair else STATES_C, keep, folds, scaled=True,
                        cut=PAIR_CUT if pair and not explicit_keep else None)
        head.meta.update(shared, states=dict(states), reads="{model} states after {layers} layers".format(**states)
                         + (" of the post and the reply read together" if pair else " of the reply"))
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
    cut_reason = ("the highest cut that passes the asked share (--keep)" if m.get("keep") is not None
                  else "chosen on the dev choice it drives")
    return f"""- reads {m['reads']}; L2 C={m['c']}, balanced class weights; {m['folds']}-fold out-of-fold
  scores grouped by post (no fold saw a reply to a post it scored): AUC {m['out_of_fold_auc']}
- cut {m['threshold']}: {cut_reason}; out of fold it passes {m['out_of_fold_passed_usable']:.0%} of usable replies, flags
  {m['out_of_fold_flagged_not_usable']:.0%} of the others, and {m['out_of_fold_precision']:.0%} of the replies it passes are usable
  (before the rule checks, which remove more of the unusable ones)"""


def card(score: DraftScore) -> str:
    meta = score.head.meta
    heads = f"### Shipped head\n\n{_head_lines(score.head)}"
    if score.fallback is not None:
        heads += ("\n\n### Fallback head (used when the chat model is not installed; flagged "
                  f"`draft_review_fallback`)\n\n{_head_lines(score.fallback)}")
    reads = ("each reply with the post it answers (the post cut to its first 300 characters)" if meta.get("pair")
             else "only the replies (no post text)")
    licence = ("Research and non-commercial use: it learned from silver posts derived from CONAN (research only)."
               if meta.get("pair") else "Apache-2.0, like the project: it learned from the project's own texts.")
    return f"""# FIRE draft score: logistic regression on {meta['reads']}

Trained by `rebuttal learned train-draft-score` ({meta['version']}: the date it was trained).

## Data

- {meta['replies']} replies ({meta['usable']} graded usable) to silver dev posts (rounds 1 and 2: dev
  posts, graded before), by {', '.join(meta['systems'])} (`fire-blocks`: replies composed from the vetted
  block library, the rivals FIRE ranks among them), from {', '.join(f'`{d}`' for d in meta['data'][:-1])},
  with the blind verdicts of `{meta['data'][-1]}` (shared/docs/reply-rubric.md: usable / fixable /
  unusable / harmful; graded by fresh AI-agent instances that never saw the code or which system wrote
  a reply). Replies to the report splits (fire_unseen.py, fire_fresh.py) are never training rows.
- It reads {reads}; the weights hold no text. The replies are the project's own model output and
  blocks; the posts are silver dev posts (CONAN-derived, research use).

## Licence

{licence} The weights are one linear layer and a bias per head; no text is stored in them.

## Settings and scores

{heads}

The cut was chosen on the dev choice it drives (benchmarks/results/fire_ranker.md): out of fold
flatters a score trained on these replies; the held-out check on replies to posts it never saw is
in the same file (fire_unseen.py's graded replies), and the end-to-end one in fire_fresh.md.

## Use and limits

FIRE ranks its candidate replies by the score and flags a kept reply below the cut (check
`review_score`); it never changes the text. Trained on English replies only: Chinese replies are
not scored. The grades are one judge's reading of the rubric on ~{meta['replies']} replies: treat the
score as a triage signal, not a verdict.
"""
