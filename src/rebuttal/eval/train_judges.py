"""Train the two small evaluation judges and write their weights and model cards.

    python -m rebuttal.eval.train_judges --data-dir ../shared/data [--out DIR] [--seed 13]
        [--only toxicity|strategy]

- toxicity: binary logistic regression on MiniLM embeddings of hate-sources posts
  (ETHOS binary, Gab Hate Corpus train, implicit-hate stage 1) plus hate/counterspeech pairs
  from counterspeech-sources (silver FactualCS texts left out), held-out 20% split.
- strategy: 5-way logistic regression on MiniLM embeddings of the reference replies of the
  silver FactualCS train split (label = the item's category); held out on silver dev.
Seeded end to end; the same data and seed give the same weights.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from rebuttal.eval.fire_io import CATEGORIES, normalise_category
from rebuttal.eval.judges import STRATEGY_WEIGHTS, TOXICITY_WEIGHTS, LinearHead
from rebuttal.optional import require

TOXICITY_VERSION = "v2"  # v2 adds on-topic counterspeech negatives (v1 scored replies ~0.5)
STRATEGY_VERSION = "v1"
C_GRID = (0.25, 1.0, 4.0)
csv.field_size_limit(10_000_000)


def _read_table(path: Path, delimiter: str) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter=delimiter))


def _sample(rows: list, limit: int, rng: np.random.Generator) -> list:
    if len(rows) <= limit:
        return rows
    return [rows[i] for i in sorted(rng.choice(len(rows), size=limit, replace=False))]


def _silver_texts(data_dir: Path) -> set[str]:
    """Every post and reference of the silver FactualCS splits (kept out of judge training)."""
    texts: set[str] = set()
    for split in ("train", "dev"):
        path = data_dir / "factualcs-silver" / f"{split}.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                texts.update(t.strip() for t in [row.get("hate_speech"), row.get("counterspeech"),
                                                 *(row.get("counterspeech_refs") or [])] if isinstance(t, str))
    return texts


def toxicity_corpus(data_dir: Path, seed: int, per_class: int = 2000) -> tuple[list[str], np.ndarray, list[str]]:
    """Texts, 0/1 labels and source names; each source's classes capped at `per_class`.

    Besides the hate corpora, hate/counterspeech pairs from counterspeech-sources teach the
    head that a reply *about* a hateful topic is not itself toxic (posts = 1, replies = 0);
    texts that appear in the silver FactualCS splits are left out."""
    rng = np.random.default_rng(seed)
    folder = data_dir / "hate-sources"
    texts: list[str] = []
    labels: list[int] = []
    sources: list[str] = []

    def add(name: str, pairs: list[tuple[str, int]]) -> None:
        for label in (0, 1):
            chosen = _sample([t for t, y in pairs if y == label and t.strip()], per_class, rng)
            texts.extend(t.strip() for t in chosen)
            labels.extend([label] * len(chosen))
            sources.extend([name] * len(chosen))

    ethos = _read_table(folder / "Ethos_Dataset_Binary.csv", ";")
    add("ethos", [(r["comment"], int(float(r["isHate"]) >= 0.5)) for r in ethos])
    ghc = _read_table(folder / "ghc_train.tsv", "\t")
    add("gab-hate-corpus", [
        (r["text"], int(any(r.get(k, "0").strip() == "1" for k in ("hd", "cv", "vo")))) for r in ghc
    ])
    implicit = _read_table(folder / "implicit_hate_v1_stg1_posts.tsv", "\t")
    add("implicit-hate", [(r["post"], int(r["class"] != "not_hate")) for r in implicit])
    silver = _silver_texts(data_dir)
    pairs: list[tuple[str, int]] = []
    for path in sorted((data_dir / "counterspeech-sources").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            for key, label in (("hate_speech", 1), ("counterspeech", 0)):
                text = row.get(key)
                if isinstance(text, str) and text.strip() and text.strip() not in silver:
                    pairs.append((text, label))
    add("counterspeech-pairs", pairs)
    return texts, np.array(labels), sources


def silver_sanity(data_dir: Path, encoder, model) -> dict:
    """Mean toxicity on the silver dev split (held out): reference replies vs posts."""
    replies, posts = [], []
    for line in (data_dir / "factualcs-silver" / "dev.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            posts.append(row["hate_speech"])
            replies.extend(r for r in row.get("counterspeech_refs") or [] if r)
    reply_p = model.predict_proba(encoder.encode(replies))[:, 1]
    post_p = model.predict_proba(encoder.encode(posts))[:, 1]
    return {"silver_dev_reference_replies": {"n": len(replies), "mean_toxicity": round(float(reply_p.mean()), 4),
                                             "share_above_0.5": round(float((reply_p >= 0.5).mean()), 4)},
            "silver_dev_posts": {"n": len(posts), "mean_toxicity": round(float(post_p.mean()), 4),
                                 "share_above_0.5": round(float((post_p >= 0.5).mean()), 4)}}


def strategy_corpus(path: Path) -> tuple[list[str], list[str]]:
    """Reference replies and their item's category from a silver FactualCS file."""
    texts, labels = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        category = normalise_category(row.get("hs_type"))
        if category is None:
            continue
        refs = list(row.get("counterspeech_refs") or [])
        if row.get("counterspeech") and row["counterspeech"] not in refs:
            refs.insert(0, row["counterspeech"])
        for ref in refs:
            if isinstance(ref, str) and ref.strip():
                texts.append(ref.strip())
                labels.append(category)
    return texts, labels


def _fit(x: np.ndarray, y: np.ndarray, seed: int, balanced: bool):
    """Logistic regression with C picked by 5-fold cross-validated accuracy on train."""
    linear_model = require("sklearn.linear_model", "eval")
    model_selection = require("sklearn.model_selection", "eval")
    weight = "balanced" if balanced else None
    folds = model_selection.StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    best_c, best = C_GRID[0], -1.0
    for c in C_GRID:
        model = linear_model.LogisticRegression(C=c, max_iter=2000, class_weight=weight)
        score = float(np.mean(model_selection.cross_val_score(model, x, y, cv=folds)))
        if score > best:
            best_c, best = c, score
    model = linear_model.LogisticRegression(C=best_c, max_iter=2000, class_weight=weight).fit(x, y)
    return model, best_c, best


def train_toxicity(data_dir: Path, encoder, seed: int) -> tuple[LinearHead, dict]:
    metrics = require("sklearn.metrics", "eval")
    model_selection = require("sklearn.model_selection", "eval")
    texts, labels, sources = toxicity_corpus(data_dir, seed)
    vectors = encoder.encode(texts)
    index = np.arange(len(texts))
    train_idx, test_idx = model_selection.train_test_split(
        index, test_size=0.2, random_state=seed, stratify=[f"{s}:{y}" for s, y in zip(sources, labels)]
    )
    model, c, cv_acc = _fit(vectors[train_idx], labels[train_idx], seed, balanced=True)
    prob = model.predict_proba(vectors[test_idx])[:, 1]
    truth = labels[test_idx]
    per_source = {}
    for name in sorted(set(sources)):
        mask = np.array([sources[i] == name for i in test_idx])
        per_source[name] = {
            "n": int(mask.sum()),
            "accuracy": round(float(np.mean((prob[mask] >= 0.5) == truth[mask])), 4),
            "auc": round(float(metrics.roc_auc_score(truth[mask], prob[mask])), 4),
        }
    report = {
        "n_train": len(train_idx), "n_heldout": len(test_idx), "C": c, "cv_accuracy": round(cv_acc, 4),
        "heldout": {
            "accuracy": round(float(np.mean((prob >= 0.5) == truth)), 4),
            "auc": round(float(metrics.roc_auc_score(truth, prob)), 4),
        },
        "per_source": per_source,
        "positives_share": round(float(labels.mean()), 4),
        "sanity": silver_sanity(data_dir, encoder, model),
    }
    head = LinearHead(
        coef=model.coef_.copy(), intercept=model.intercept_.copy(), classes=["non_toxic", "toxic"],
        meta={"name": "rebuttal-toxicity-minilm-lr", "version": f"toxicity-minilm-lr.{TOXICITY_VERSION}",
              "seed": seed, "encoder": "all-MiniLM-L6-v2", **report},
    )
    return head, report


def train_strategy(data_dir: Path, encoder, seed: int) -> tuple[LinearHead, dict]:
    metrics = require("sklearn.metrics", "eval")
    silver = data_dir / "factualcs-silver"
    train_texts, train_labels = strategy_corpus(silver / "train.jsonl")
    dev_texts, dev_labels = strategy_corpus(silver / "dev.jsonl")
    model, c, cv_acc = _fit(encoder.encode(train_texts), np.array(train_labels), seed, balanced=True)
    predicted = model.predict(encoder.encode(dev_texts))
    classes = [str(k) for k in model.classes_]
    report = {
        "n_train": len(train_texts), "n_heldout": len(dev_texts), "C": c,
        "cv_accuracy": round(cv_acc, 4),
        "heldout": {
            "accuracy": round(float(metrics.accuracy_score(dev_labels, predicted)), 4),
            "macro_f1": round(float(metrics.f1_score(dev_labels, predicted, average="macro")), 4),
        },
        "per_class_f1": {
            k: round(float(v), 4) for k, v in zip(
                classes, metrics.f1_score(dev_labels, predicted, labels=classes, average=None))
        },
        "majority_baseline": round(max(dev_labels.count(k) for k in set(dev_labels)) / len(dev_labels), 4),
    }
    missing = sorted(set(CATEGORIES) - set(classes))
    if missing:
        raise ValueError(f"strategy training data has no examples of {missing}")
    head = LinearHead(
        coef=model.coef_.copy(), intercept=model.intercept_.copy(), classes=classes,
        meta={"name": "rebuttal-strategy-minilm-lr", "version": f"strategy-minilm-lr.{STRATEGY_VERSION}",
              "seed": seed, "encoder": "all-MiniLM-L6-v2", **report},
    )
    return head, report


def _card(title: str, head: LinearHead, data: str, use: str) -> str:
    meta = head.meta
    lines = [
        f"# {title}", "", f"- name: `{meta['name']}`", f"- version: `{meta['version']}`",
        f"- trained: {meta.get('trained', '')} with seed {meta['seed']} by "
        "`python -m rebuttal.eval.train_judges --data-dir ../shared/data`",
        f"- architecture: logistic regression (C = {meta['C']}, class-balanced) on L2-normalised "
        "all-MiniLM-L6-v2 sentence embeddings (384-d); classes: "
        + ", ".join(f"`{c}`" for c in head.classes),
        f"- data: {data}", f"- intended use: {use}", "", "## Held-out results", "",
        "```json", json.dumps({k: v for k, v in meta.items() if k not in ("name", "version", "seed",
                                                                           "encoder", "trained")},
                              indent=2), "```", "",
        "## Limits", "",
        "A linear probe on a small English sentence encoder: it sees topic and tone, not "
        "argument structure, and it is only as good as its silver/third-party labels. "
        "Use it to compare systems on the same items, not as an absolute measurement.", "",
    ]
    return "\n".join(lines)


def main(
    data_dir: Annotated[Path, typer.Option(help="The shared data folder")] = Path("../shared/data"),
    out: Annotated[Path | None, typer.Option(help="Where to write weights (default: package)")] = None,
    seed: Annotated[int, typer.Option(help="Random seed")] = 13,
    only: Annotated[str | None, typer.Option(help="Train one judge only: toxicity or strategy")] = None,
) -> None:
    """Train the toxicity and strategy judges and write .npz weights + model cards."""
    from rebuttal.eval.judges import shipped_weights
    from rebuttal.llm.embeddings import load_minilm

    if not (data_dir / "hate-sources").is_dir() or not (data_dir / "factualcs-silver").is_dir():
        typer.secho(f"error: {data_dir} has no hate-sources/ and factualcs-silver/", err=True)
        raise typer.Exit(1)
    out = out or shipped_weights(TOXICITY_WEIGHTS).parent
    out.mkdir(parents=True, exist_ok=True)
    np.random.seed(seed)
    encoder = load_minilm()
    today = dt.date.today().isoformat()
    jobs = [
        ("strategy", train_strategy, STRATEGY_WEIGHTS, "Strategy judge (CatAcc)",
         "reference replies (`counterspeech_refs`) of factualcs-silver/train.jsonl, labelled with "
         "the item's `hs_type`; held out: the references of factualcs-silver/dev.jsonl",
         "detect which category's counter-strategy a reply follows, for the strict CatAcc"),
        ("toxicity", train_toxicity, TOXICITY_WEIGHTS, "Toxicity judge",
         "hate-sources: ETHOS binary (isHate >= 0.5), Gab Hate Corpus train (hd or cv or vo), "
         "implicit hate stage 1 (implicit or explicit hate = toxic), plus counterspeech-sources "
         "pairs (post = toxic, human reply = not toxic; texts in the silver FactualCS splits "
         "left out); at most 2,000 texts per class and source; stratified 80/20 split; sanity "
         "check on the silver dev split",
         "score the toxicity of generated replies when no Detoxify checkpoint is available"),
    ]
    if only not in (None, "toxicity", "strategy"):
        typer.secho(f"error: --only must be toxicity or strategy, not {only!r}", err=True)
        raise typer.Exit(1)
    for name, train, filename, title, data, use in jobs:
        if only and name != only:
            continue
        typer.echo(f"training {name} judge ...")
        head, report = train(data_dir, encoder, seed)
        head.meta["trained"] = today
        head.save(out / filename)
        (out / filename.replace(".npz", ".md")).write_text(_card(title, head, data, use), encoding="utf-8")
        typer.echo(f"{name}: {json.dumps(report['heldout'])} -> {out / filename}")


if __name__ == "__main__":
    typer.run(main)
