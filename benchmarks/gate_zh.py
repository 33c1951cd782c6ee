"""What the Chinese states gate reads and is trained on: STATE-ToxiCN posts, rule-made rejections of
their hateful claims (shipped since 2026-12-04), English rows (the states are multilingual), a deeper
layer, other C / HateCheck weights and rule-made contrast rows (archive/gate_zh_contrasts.py): tried, not
shipped. Results: benchmarks/results/gate_zh.md.

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
sys.path.insert(0, str(Path(__file__).resolve().parent / "archive"))  # the contrast rows: tried, not shipped
from gate_zh_contrasts import mention_rows, other_target_rows  # noqa: E402
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "gate_zh.md"
HELD_POSTS_SEED = 7
# The shipped recipe's held-out posts with their scores and cuts, for gate_llm.py's vote on real posts.
HELD_POSTS = ROOT / "runs" / "bench" / "gate-zh" / "held-out-posts.json"


def train_on(features: dict, labels: dict, groups: dict, parts: list[str], leave_out: set[str], setting: tuple):
    """A states gate on `parts` (names in features), rows whose group is in `leave_out` left out;
    `setting` is (states spec, C, HateCheck weight)."""
    from rebuttal.learned.gate import train_states_gate

    spec, c, hatecheck_weight = setting
    rows = []
    for part in parts:
        keep = np.array([g not in leave_out for g in groups[part]])
        rows.append((features[part][keep], labels[part][keep], hatecheck_weight if "hatecheck" in part else 1.0))
    return train_states_gate(np.vstack([x for x, _, _ in rows]), list(np.concatenate([y for _, y, _ in rows])),
                             np.concatenate([np.full(len(y), w) for _, y, w in rows]), spec, c)


def fold_scores(features: dict, labels: dict, groups: dict, parts: list[str], setting: tuple) -> np.ndarray:
    """Held-out scores of the zh HateCheck cases for a gate trained on `parts` + the other folds."""
    from sklearn.model_selection import GroupKFold

    from rebuttal.learned.text import sigmoid

    templates = np.array(groups["hatecheck zh"])
    scores = np.zeros(len(templates))
    for _, held in GroupKFold(5).split(templates, groups=templates):
        gate = train_on(features, labels, groups, ["hatecheck zh", *parts], set(templates[held]), setting)
        scores[held] = sigmoid(features["hatecheck zh"][held] @ gate.coef + gate.intercept)
    return scores


def post_scores(features: dict, labels: dict, groups: dict, parts: list[str],
                setting: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Scores and gold labels of the held-out fifth of STATE-ToxiCN posts."""
    from rebuttal.learned.text import sigmoid

    posts = sorted(set(groups["STATE-ToxiCN posts"]))
    held = set(random.Random(HELD_POSTS_SEED).sample(posts, len(posts) // 5))
    gate = train_on(features, labels, groups, ["hatecheck zh", *parts], held, setting)
    rows = np.array([g in held for g in groups["STATE-ToxiCN posts"]])
    return sigmoid(features["STATE-ToxiCN posts"][rows] @ gate.coef + gate.intercept), rows


def save_held_out(texts: list[str], gold: np.ndarray, scores: np.ndarray, threshold: float, sure: float) -> None:
    import json

    HELD_POSTS.parent.mkdir(parents=True, exist_ok=True)
    posts = [{"text": t, "hateful": bool(g), "score": round(float(s), 4)} for t, g, s in zip(texts, gold, scores)]
    HELD_POSTS.write_text(json.dumps({"threshold": threshold, "sure": sure, "seed": HELD_POSTS_SEED, "posts": posts},
                                     ensure_ascii=False), encoding="utf-8")


def cut_table(name: str, cut: float, posts: np.ndarray, post_gold: np.ndarray, scores: np.ndarray,
              gold: np.ndarray) -> list[str]:
    """Higher cuts for real posts: what each calls hateful among the held-out STATE posts and the
    held-out HateCheck cases (`rebuttal learned calibrate-gate --threshold zh=CUT` sets one)."""
    lines = [f"## Cuts for real posts: {name}", "",
             "Each cut's share called hateful among the held-out fifth of STATE-ToxiCN posts (Zhihu, Tieba) and the "
             "template-held-out Multilingual HateCheck cases. The first row is the cut HateCheck chooses (shipped); "
             "a higher one trades recall on real hate for fewer replies to real non-hateful posts. "
             "`rebuttal learned calibrate-gate --threshold zh=CUT` sets one.", "",
             "| cut | STATE hateful called hateful | STATE non-hateful called hateful | HateCheck recall | HateCheck FPR |",
             "|---|---|---|---|---|"]
    for c in (cut, 0.6, 0.7, 0.75, 0.8, 0.9):
        lines.append(f"| {c:.2f} | {(posts[post_gold] >= c).mean():.3f} | {(posts[~post_gold] >= c).mean():.3f} "
                     f"| {(scores[gold] >= c).mean():.3f} | {(scores[~gold] >= c).mean():.3f} |")
    return lines


def main() -> None:
    from sklearn.metrics import roc_auc_score

    from rebuttal.learned import datasets
    from rebuttal.learned.calibration import recall_cut, sure_cut
    from rebuttal.learned.datasets import LabelledText
    from rebuttal.learned.rejections import GATE_ROWS
    from rebuttal.learned.train import HATECHECK_WEIGHT, STATES, STATES_C, _corpus_sample, cached_pooled_states

    sets = {"STATE-ToxiCN posts": datasets.state_toxicn(DATA),
            f"{GATE_ROWS} rejections": datasets.state_toxicn_rejections(DATA, GATE_ROWS),
            "all rejections": datasets.state_toxicn_rejections(DATA),
            "hatecheck zh": datasets.hatecheck(DATA, "zh"), "hatecheck en": datasets.hatecheck(DATA, "en"),
            "English corpus": datasets.gate_corpus(DATA, "en", **_corpus_sample("en", "states")),
            "contrast rows": [LabelledText(text, False, "other-target", group=f"post:{post}")
                              for post, text in other_target_rows(DATA)]
                             + [LabelledText(text, False, "mention") for text in mention_rows()]}
    shipped, layer20 = (STATES, STATES_C, HATECHECK_WEIGHT), ({**STATES, "layers": 20}, STATES_C, HATECHECK_WEIGHT)
    tuned = (0.0005, 5.0)  # C and HateCheck weight: the best of 0.0005/0.001/0.003 and 3/5 at layer 20
    posts, rejections = ["STATE-ToxiCN posts"], ["STATE-ToxiCN posts", f"{GATE_ROWS} rejections"]
    variants = {"layer 14: STATE-ToxiCN posts (shipped until 2026-12-04)": (posts, shipped),
                f"layer 14: + {GATE_ROWS} rejections (shipped)": (rejections, shipped),
                f"layer 14: + all {len(sets['all rejections'])} rejections": (posts + ["all rejections"], shipped),
                f"layer 14: + {GATE_ROWS} rejections + English HateCheck dev": (rejections + ["hatecheck en"], shipped),
                f"layer 14: + {GATE_ROWS} rejections + English HateCheck dev + English corpus":
                    (rejections + ["hatecheck en", "English corpus"], shipped),
                f"layer 14: + {GATE_ROWS} rejections, C {tuned[0]}, HateCheck weight {tuned[1]:g}":
                    (rejections, (STATES, *tuned)),
                f"layer 14: + {GATE_ROWS} rejections + contrast rows": (rejections + ["contrast rows"], shipped),
                "layer 20: STATE-ToxiCN posts": (posts, layer20),
                f"layer 20: + {GATE_ROWS} rejections": (rejections, layer20),
                f"layer 20: + {GATE_ROWS} rejections, C {tuned[0]}, HateCheck weight {tuned[1]:g}":
                    (rejections, (layer20[0], *tuned))}
    features = {(setting[0]["layers"], part): cached_pooled_states(setting[0], [r.text for r in sets[part]])
                for parts, setting in variants.values() for part in ["hatecheck zh", *parts]}
    groups = {name: [r.group for r in rows] for name, rows in sets.items()}
    labels = {name: np.array([r.hateful for r in rows]) for name, rows in sets.items()}
    hatecheck, gold = sets["hatecheck zh"], labels["hatecheck zh"]
    functionalities = sorted({r.source.split(":")[-1] for r in hatecheck if not r.hateful})
    lines = header("What the Chinese hate gate reads and is trained on",
                   split="Multilingual HateCheck zh dev half, template-held-out 5-fold cross-validation; STATE-ToxiCN "
                         f"train, a fifth of its posts held out (seed {HELD_POSTS_SEED})",
                   model=f"{STATES['model']} hidden states after 14 or 20 layers, first {STATES['max_tokens']} "
                         "tokens (no chat call)", memory="none")
    lines += ["| training rows (+ the other HateCheck zh folds) | rows | threshold (recall 0.90) | recall | FPR | "
              "held-out STATE posts: AUC | hateful called hateful | non-hateful called hateful | "
              + " | ".join(functionalities) + " |", "|---|---|---|---|---|---|---|---|" + "---|" * len(functionalities)]
    real_cuts: list[str] = []  # the shipped recipe's, filled in the loop
    for name, (parts, setting) in variants.items():
        layer = {part: features[setting[0]["layers"], part] for part in ["hatecheck zh", *parts]}
        scores = fold_scores(layer, labels, groups, parts, setting)
        cut = recall_cut(scores, list(gold), 0.9)
        posts, rows = post_scores(layer, labels, groups, parts, setting)
        post_gold = labels["STATE-ToxiCN posts"][rows]
        if name.endswith("(shipped)"):
            save_held_out([r.text for r, kept in zip(sets["STATE-ToxiCN posts"], rows) if kept], post_gold, posts,
                          cut, sure_cut(scores, list(gold), cut, 0.15))
            real_cuts = cut_table(name, cut, posts, post_gold, scores, gold)
        per = [np.mean([s >= cut for r, s in zip(hatecheck, scores) if r.source.endswith(":" + f)]) for f in functionalities]
        lines.append(f"| {name} | {sum(len(sets[p]) for p in parts) + len(hatecheck)} | {cut:.2f} | "
                     f"{(scores[gold] >= cut).mean():.3f} | {(scores[~gold] >= cut).mean():.3f} | "
                     f"{roc_auc_score(post_gold, posts):.3f} | {(posts[post_gold] >= cut).mean():.3f} | "
                     f"{(posts[~post_gold] >= cut).mean():.3f} | " + " | ".join(f"{p:.2f}" for p in per) + " |")
    lines += ["", "Functionality columns: the share of that non-hateful functionality's held-out cases called hateful. "
              "Rejections: a hateful STATE-ToxiCN claim inside a frame that quotes or names it to reject it "
              "(src/rebuttal/learned/rejections.py), labelled non-hateful. Contrast rows "
              f"(benchmarks/archive/gate_zh_contrasts.py): {len(sets['contrast rows'])} non-hateful rows, hateful claims with "
              "the protected target swapped for a group defined by conduct (fraudsters, litterers) and protected "
              "groups in negated or positive sentences. The held-out STATE posts are scored at the variant's "
              "HateCheck threshold: what the variant costs on real posts. Layer 20 means a second, deeper pass for "
              "Chinese posts (the category model reads layer 14)."]
    lines += ["", *real_cuts]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
