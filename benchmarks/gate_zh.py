"""What the Chinese states gate is trained on: STATE-ToxiCN posts, rule-made rejections of their
hateful claims (shipped since 2026-12-04), and English rows (tried, not shipped; the chat model's
layer-14 states are multilingual). Results: benchmarks/results/gate_zh.md.

    python benchmarks/gate_zh.py

Folds: the template-held-out folds of the Multilingual HateCheck zh dev half that choose the shipped
gate's threshold (recall 0.90). MHC's templates are translations of HateCheck's with the same ids, so
an English HateCheck row of a held-out template is left out of that fold's training too.
Real posts: each variant is trained again without a fixed fifth of the STATE-ToxiCN posts (and the
rejections made from them) and scores those posts, at the threshold its HateCheck folds chose.
Reads the states cache `rebuttal learned train-gate` fills (~80 min of CPU from scratch).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "gate_zh.md"
HELD_POSTS_SEED = 7


def train_on(features: dict, labels: dict, groups: dict, parts: list[str], leave_out: set[str]):
    """A states gate on `parts` (names in features), rows whose group is in `leave_out` left out."""
    from rebuttal.learned.gate import train_states_gate
    from rebuttal.learned.train import HATECHECK_WEIGHT, STATES, STATES_C

    rows = []
    for part in parts:
        keep = np.array([g not in leave_out for g in groups[part]])
        rows.append((features[part][keep], labels[part][keep], HATECHECK_WEIGHT if "hatecheck" in part else 1.0))
    return train_states_gate(np.vstack([x for x, _, _ in rows]), list(np.concatenate([y for _, y, _ in rows])),
                             np.concatenate([np.full(len(y), w) for _, y, w in rows]), STATES, STATES_C)


def fold_scores(features: dict, labels: dict, groups: dict, parts: list[str]) -> np.ndarray:
    """Held-out scores of the zh HateCheck cases for a gate trained on `parts` + the other folds."""
    from sklearn.model_selection import GroupKFold

    from rebuttal.learned.text import sigmoid

    templates = np.array(groups["hatecheck zh"])
    scores = np.zeros(len(templates))
    for _, held in GroupKFold(5).split(templates, groups=templates):
        gate = train_on(features, labels, groups, ["hatecheck zh", *parts], set(templates[held]))
        scores[held] = sigmoid(features["hatecheck zh"][held] @ gate.coef + gate.intercept)
    return scores


def post_scores(features: dict, labels: dict, groups: dict, parts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Scores and gold labels of the held-out fifth of STATE-ToxiCN posts."""
    from rebuttal.learned.text import sigmoid

    posts = sorted(set(groups["STATE-ToxiCN posts"]))
    held = set(random.Random(HELD_POSTS_SEED).sample(posts, len(posts) // 5))
    gate = train_on(features, labels, groups, ["hatecheck zh", *parts], held)
    rows = np.array([g in held for g in groups["STATE-ToxiCN posts"]])
    return sigmoid(features["STATE-ToxiCN posts"][rows] @ gate.coef + gate.intercept), labels["STATE-ToxiCN posts"][rows]


def main() -> None:
    from sklearn.metrics import roc_auc_score

    from rebuttal.learned import datasets
    from rebuttal.learned.calibration import recall_cut
    from rebuttal.learned.rejections import GATE_ROWS
    from rebuttal.learned.train import STATES, _corpus_sample, cached_pooled_states

    sets = {"STATE-ToxiCN posts": datasets.state_toxicn(DATA),
            f"{GATE_ROWS} rejections": datasets.state_toxicn_rejections(DATA, GATE_ROWS),
            "all rejections": datasets.state_toxicn_rejections(DATA),
            "hatecheck zh": datasets.hatecheck(DATA, "zh"), "hatecheck en": datasets.hatecheck(DATA, "en"),
            "English corpus": datasets.gate_corpus(DATA, "en", **_corpus_sample("en", "states"))}
    features, labels, groups = {}, {}, {}
    for name, rows in sets.items():
        features[name] = cached_pooled_states(STATES, [r.text for r in rows])
        groups[name] = [r.group for r in rows]
        labels[name] = np.array([r.hateful for r in rows])
    hatecheck, gold = sets["hatecheck zh"], labels["hatecheck zh"]
    shipped = ["STATE-ToxiCN posts", f"{GATE_ROWS} rejections"]
    variants = {"STATE-ToxiCN posts (shipped until 2026-12-04)": ["STATE-ToxiCN posts"],
                f"+ {GATE_ROWS} rejections (shipped)": shipped,
                f"+ all {len(sets['all rejections'])} rejections": ["STATE-ToxiCN posts", "all rejections"],
                "shipped + English HateCheck dev": [*shipped, "hatecheck en"],
                "shipped + English HateCheck dev + English corpus": [*shipped, "hatecheck en", "English corpus"]}
    functionalities = sorted({r.source.split(":")[-1] for r in hatecheck if not r.hateful})
    lines = header("What the Chinese hate gate is trained on",
                   split="Multilingual HateCheck zh dev half, template-held-out 5-fold cross-validation; STATE-ToxiCN "
                         f"train, a fifth of its posts held out (seed {HELD_POSTS_SEED})",
                   model=f"{STATES['model']} hidden states after {STATES['layers']} layers (no chat call)",
                   memory="none")
    lines += ["| training rows (+ the other HateCheck zh folds) | rows | threshold (recall 0.90) | recall | FPR | "
              "held-out STATE posts: AUC | hateful called hateful | non-hateful called hateful | "
              + " | ".join(functionalities) + " |", "|---|---|---|---|---|---|---|---|" + "---|" * len(functionalities)]
    for name, parts in variants.items():
        scores = fold_scores(features, labels, groups, parts)
        cut = recall_cut(scores, list(gold), 0.9)
        posts, post_gold = post_scores(features, labels, groups, parts)
        per = [np.mean([s >= cut for r, s in zip(hatecheck, scores) if r.source.endswith(":" + f)]) for f in functionalities]
        lines.append(f"| {name} | {sum(len(sets[p]) for p in parts) + len(hatecheck)} | {cut:.2f} | "
                     f"{(scores[gold] >= cut).mean():.3f} | {(scores[~gold] >= cut).mean():.3f} | "
                     f"{roc_auc_score(post_gold, posts):.3f} | {(posts[post_gold] >= cut).mean():.3f} | "
                     f"{(posts[~post_gold] >= cut).mean():.3f} | " + " | ".join(f"{p:.2f}" for p in per) + " |")
    lines += ["", "Functionality columns: the share of that non-hateful functionality's held-out cases called hateful. "
              "Rejections: a hateful STATE-ToxiCN claim inside a frame that quotes or names it to reject it "
              "(src/rebuttal/learned/rejections.py), labelled non-hateful. The held-out STATE posts are scored at the "
              "variant's HateCheck threshold: what the variant costs on real posts."]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
