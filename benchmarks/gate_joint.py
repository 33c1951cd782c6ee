"""The Chinese states gate with English rows added (tried, not shipped): the chat model's layer-14
states are multilingual, so English HateCheck's negations, quotes and neutral mentions might teach
the Chinese gate too. Results: benchmarks/results/gate_joint.md.

    python benchmarks/gate_joint.py

Folds: the template-held-out folds of the Multilingual HateCheck zh dev half that choose the shipped
gate's threshold (recall 0.90). MHC's templates are translations of HateCheck's with the same ids, so
an English HateCheck row of a held-out template is left out of that fold's training too. Reads the
states cache `rebuttal learned train-gate` fills (~80 min of CPU from scratch).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from provenance import header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "gate_joint.md"


def fold_scores(features: dict, labels: dict, groups: dict, hatecheck, parts: list[str]) -> np.ndarray:
    """Held-out scores of the zh HateCheck cases for a gate trained on `parts` (names in features)."""
    from sklearn.model_selection import GroupKFold

    from rebuttal.learned.gate import train_states_gate
    from rebuttal.learned.text import sigmoid
    from rebuttal.learned.train import HATECHECK_WEIGHT, STATES, STATES_C

    templates = np.array(groups["hatecheck zh"])
    scores = np.zeros(len(hatecheck))
    for train, held in GroupKFold(5).split(hatecheck, groups=templates):
        held_groups = set(templates[held])
        rows = [(features["hatecheck zh"][train], labels["hatecheck zh"][train], HATECHECK_WEIGHT)]
        for part in parts:
            keep = np.array([g not in held_groups for g in groups[part]])
            rows.append((features[part][keep], labels[part][keep], HATECHECK_WEIGHT if "hatecheck" in part else 1.0))
        gate = train_states_gate(np.vstack([x for x, _, _ in rows]), list(np.concatenate([y for _, y, _ in rows])),
                                 np.concatenate([np.full(len(y), w) for _, y, w in rows]), STATES, STATES_C)
        scores[held] = sigmoid(features["hatecheck zh"][held] @ gate.coef + gate.intercept)
    return scores


def main() -> None:
    from rebuttal.learned import datasets
    from rebuttal.learned.calibration import recall_cut
    from rebuttal.learned.train import STATES, _corpus_sample, cached_pooled_states

    sets = {"STATE-ToxiCN": datasets.gate_corpus(DATA, "zh", **_corpus_sample("zh", "states")),
            "hatecheck zh": datasets.hatecheck(DATA, "zh"), "hatecheck en": datasets.hatecheck(DATA, "en"),
            "English corpus": datasets.gate_corpus(DATA, "en", **_corpus_sample("en", "states"))}
    features, labels, groups = {}, {}, {}
    for name, rows in sets.items():
        features[name] = cached_pooled_states(STATES, [r.text for r in rows])
        groups[name] = [r.group for r in rows]
        labels[name] = np.array([r.hateful for r in rows])
    hatecheck, gold = sets["hatecheck zh"], labels["hatecheck zh"]
    variants = {"zh only (as shipped)": ["STATE-ToxiCN"], "zh + English HateCheck dev": ["STATE-ToxiCN", "hatecheck en"],
                "zh + English HateCheck dev + English corpus": ["STATE-ToxiCN", "hatecheck en", "English corpus"]}
    functionalities = sorted({r.source.split(":")[-1] for r in hatecheck if not r.hateful})
    lines = header("Chinese hate gate with English rows added (not shipped)",
                   split="Multilingual HateCheck zh dev half, template-held-out 5-fold cross-validation",
                   model=f"{STATES['model']} hidden states after {STATES['layers']} layers (no chat call)",
                   memory="none")
    lines += ["| training rows | rows | threshold (recall 0.90) | recall | FPR | " + " | ".join(functionalities) + " |",
              "|---|---|---|---|---|" + "---|" * len(functionalities)]
    for name, parts in variants.items():
        scores = fold_scores(features, labels, groups, hatecheck, parts)
        cut = recall_cut(scores, list(gold), 0.9)
        per = [np.mean([s >= cut for r, s in zip(hatecheck, scores) if r.source.endswith(":" + f)]) for f in functionalities]
        lines.append(f"| {name} | {sum(len(sets[p]) for p in parts) + len(hatecheck)} | {cut:.2f} | "
                     f"{(scores[gold] >= cut).mean():.3f} | {(scores[~gold] >= cut).mean():.3f} | "
                     + " | ".join(f"{p:.2f}" for p in per) + " |")
    lines += ["", "Functionality columns: the share of that non-hateful functionality's held-out cases called hateful."]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
