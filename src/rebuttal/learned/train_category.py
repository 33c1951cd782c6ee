"""Train the category model from FactualCS-format files and write its model card.

    rebuttal learned train-category --data train.jsonl --data train_round2.jsonl --out DIR
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import numpy as np

from rebuttal.learned.category import CategoryModel, train_category_model
from rebuttal.learned.train import LICENCE_NOTE, STATES, minilm_vectors, cached_pooled_states
from rebuttal.types import HateType


def train_category(data: list[str], out: str | Path, *, c: float = 4.0, with_memory: bool | None = None,
                   dev: list[str] | None = None, states: bool = True) -> CategoryModel:
    """Both variants (with and without the shipped memory's S_t) are cross-validated on train;
    `with_memory=None` keeps the better one. With `states` each also gets a part reading the
    embedded chat model's states (the gate's; ~0.5 s a text once, cached). Dev files, if given,
    are only scored."""
    from rebuttal.memory.records import load_many

    records = [r for r in load_many(data) if r.is_hateful]
    texts = [r.hate_speech for r in records]
    vectors = minilm_vectors(texts)
    labels = [r.category for r in records]
    pooled = cached_pooled_states(STATES, texts) if states else None
    candidates = [False, True] if with_memory is None else [with_memory]
    models = {}
    for memory in candidates:
        scores = _memory_scores(texts) if memory else None
        models[memory] = train_category_model(texts, vectors, labels, c=c, memory_scores=scores, states=pooled,
                                              states_spec=STATES, meta={"data": [Path(p).name for p in data]})
    model = max(models.values(), key=lambda m: m.meta["out_of_fold_accuracy"])
    model.meta["variants_out_of_fold"] = {("with memory" if k else "without memory"): v.meta["out_of_fold_accuracy"]
                                          for k, v in models.items()}
    if dev:
        model.meta["dev"] = score_category(model, load_many(dev))
    out = Path(out)
    model.save(out / "category.npz")
    (out / "category_card.md").write_text(category_card(model, records), encoding="utf-8")
    return model


def _memory_scores(texts: list[str]) -> list[dict[HateType, float]]:
    from rebuttal.memory import Memory

    return [q.scores for q in Memory.default().query_batch(texts)]


def score_category(model: CategoryModel, records) -> dict:
    records = [r for r in records if r.is_hateful]
    texts = [r.hate_speech for r in records]
    scores = _memory_scores(texts) if model.uses_memory else None
    states = cached_pooled_states(model.states.spec, texts) if model.states is not None else None
    predicted = model.predict(texts, minilm_vectors(texts), scores, states)
    correct = [p[0] == r.category for p, r in zip(predicted, records)]
    return {"items": len(records), "accuracy": float(np.mean(correct))}


def category_card(model: CategoryModel, records) -> str:
    counts = Counter(r.category.value for r in records)
    meta = model.meta
    part = model.states
    lines = [
        "# FIRE category model: logistic regression on MiniLM vectors + hashed word n-grams"
        + (f", averaged with one on {part.spec['model']}'s layer-{part.spec['layers']} states" if part else ""), "",
        f"Trained {time.strftime('%Y-%m-%d')} by `rebuttal learned train-category`.", "",
        "## Data", "",
        f"- files: {', '.join(meta.get('data', []))} ({meta['records']} hateful records)",
        f"- categories: {json.dumps(dict(counts))}",
        "- source: the project's FactualCS-format silver set (../shared/data/factualcs-silver): posts and human "
        "replies from Multi-Target CONAN, knowledge-grounded CONAN (research only, no redistribution), the FBK "
        "hate+misinformation pairs, IntentCONANv2 (none stated) and CrowdCounter (MIT); categories annotated for "
        "this project (research use).",
        "", "## Licence", "", LICENCE_NOTE, "",
        "## Settings and scores", "",
        f"- C={meta['c']}, {meta['folds']}-fold out-of-fold temperature {meta['temperature']:.2f}, "
        f"ambiguous below confidence {model.ambiguous_below:.2f}, memory scores as features: {meta['uses_memory']}",
        f"- out-of-fold accuracy on train: {meta['out_of_fold_accuracy']:.3f} "
        f"(variants: {json.dumps(meta.get('variants_out_of_fold', {}))})",
    ]
    if part:
        lines.append(f"- states part: the gate's features (mean and last state of the first {part.spec['max_tokens']} "
                     f"tokens), L2 C={meta['states_c']}, weight {part.weight}; averaged temperature {part.temperature:.2f}, "
                     f"ambiguous below {part.ambiguous_below:.2f}; text part alone out of fold "
                     f"{meta['out_of_fold_accuracy_text']:.3f} (it decides alone, flagged, without the embedded model)")
    if "dev" in meta:
        lines.append(f"- silver dev (both rounds, {meta['dev']['items']} hateful items): accuracy {meta['dev']['accuracy']:.3f}")
    return "\n".join(lines) + "\n"
