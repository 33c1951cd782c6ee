"""FIRE's category, learned: logistic regression over MiniLM sentence vectors and hashed word
n-grams, optionally with the memory's per-category scores S_t as extra features.

Why this design (benchmarks/results/analyst.md): trained on the 3,862 silver train records it
beats the memory's kNN vote and the 1.5B model's own pick on silver dev, and fine-tuning MiniLM
with cross-entropy did no better while costing 90 MB of weights. The vectors carry meaning, the
n-grams carry the cue words of the guidelines ("plan", "percent", "vermin"). The temperature is
fitted on out-of-fold logits of train so that `confidence` (the top probability) means what it
says; the confidence bands in analyst.md show it separates accurate from inaccurate items.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scipy import sparse

from rebuttal.learned.text import ngram_vectorizer, softmax
from rebuttal.types import HateType

CATEGORIES = list(HateType)
SHIPPED = Path(__file__).resolve().parent / "data" / "category.npz"
MEMORY_WEIGHT = 4.0  # S_t are cosines near 0.3-0.7: scaled up so one L2 penalty suits both
VECTOR_WEIGHT = 2.0  # unit vectors beside unit n-gram rows: chosen by train cross-validation
DIM = 384


def memory_features(scores: list[dict[HateType, float]]) -> np.ndarray:
    """S_t for each category (0 where the memory has no record of it), centred per row."""
    rows = np.array([[s.get(t, 0.0) for t in CATEGORIES] for s in scores], dtype=np.float32)
    return MEMORY_WEIGHT * (rows - rows.mean(axis=1, keepdims=True))


def features(texts: list[str], vectors: np.ndarray, memory_scores: list[dict[HateType, float]] | None = None):
    """[weighted MiniLM vector | hashed word n-grams | weighted S_t] as one sparse matrix."""
    parts = [sparse.csr_matrix(VECTOR_WEIGHT * np.atleast_2d(vectors)), ngram_vectorizer("en").transform(texts)]
    if memory_scores is not None:
        parts.append(sparse.csr_matrix(memory_features(memory_scores)))
    return sparse.hstack(parts).tocsr()


@dataclass
class CategoryModel:
    coef: np.ndarray  # (5, 384 + 2**18 [+ 5 memory scores]), mostly zeros: stored sparse
    intercept: np.ndarray  # (5,)
    temperature: float = 1.0
    ambiguous_below: float = 0.5  # confidence under this marks the category as uncertain
    meta: dict = field(default_factory=dict)

    @property
    def uses_memory(self) -> bool:
        return bool(self.meta.get("uses_memory"))

    def predict_proba(self, texts: list[str], vectors: np.ndarray,
                      memory_scores: list[dict[HateType, float]] | None = None) -> np.ndarray:
        """(n, 5) probabilities over HateType (pass S_t if the model was trained with them)."""
        if self.uses_memory and memory_scores is None:
            raise ValueError("this category model was trained with the memory's scores; pass them")
        x = features(texts, vectors, memory_scores if self.uses_memory else None)
        return softmax(np.asarray(x @ self.coef.T) + self.intercept, self.temperature)

    def predict(self, texts: list[str], vectors: np.ndarray, memory_scores=None) -> list[tuple[HateType, float, dict[HateType, float]]]:
        """(category, confidence, probabilities) per row."""
        out = []
        for row in self.predict_proba(texts, vectors, memory_scores):
            best = int(row.argmax())
            out.append((CATEGORIES[best], float(row[best]), {t: float(p) for t, p in zip(CATEGORIES, row)}))
        return out

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        nonzero = np.flatnonzero(np.abs(self.coef).sum(axis=0))
        np.savez_compressed(path, columns=nonzero.astype(np.int32), values=self.coef[:, nonzero],
                            width=np.int64(self.coef.shape[1]), intercept=self.intercept,
                            temperature=np.float32(self.temperature),
                            ambiguous_below=np.float32(self.ambiguous_below),
                            meta=np.array(json.dumps(self.meta)))
        return path

    @classmethod
    def load(cls, path: str | Path = SHIPPED) -> CategoryModel:
        with np.load(path) as data:
            coef = np.zeros((len(CATEGORIES), int(data["width"])), dtype=np.float32)
            coef[:, data["columns"]] = data["values"]
            return cls(coef=coef, intercept=data["intercept"], temperature=float(data["temperature"]),
                       ambiguous_below=float(data["ambiguous_below"]), meta=json.loads(str(data["meta"])))


def fit(features: np.ndarray, labels: np.ndarray, c: float, seed: int = 13) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, max_iter=5000, random_state=seed).fit(features, labels)
    coef = np.zeros((len(CATEGORIES), features.shape[1]), dtype=np.float32)
    intercept = np.full(len(CATEGORIES), -1e4, dtype=np.float32)  # a class absent from train never wins
    coef[model.classes_] = model.coef_
    intercept[model.classes_] = model.intercept_
    return coef, intercept


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The softmax temperature minimising held-out log loss (a grid is enough for one scalar)."""
    grid = np.exp(np.linspace(np.log(0.3), np.log(5.0), 60))
    losses = [-np.log(softmax(logits, t)[np.arange(len(labels)), labels] + 1e-9).mean() for t in grid]
    return float(grid[int(np.argmin(losses))])


def train_category_model(texts: list[str], vectors: np.ndarray, labels: list[HateType], *, c: float = 4.0,
                         memory_scores: list[dict[HateType, float]] | None = None,
                         folds: int = 5, seed: int = 13, meta: dict | None = None) -> CategoryModel:
    """Fit on everything; fit the temperature and the ambiguity cut on out-of-fold logits."""
    from sklearn.model_selection import StratifiedKFold

    x = features(texts, vectors, memory_scores)
    y = np.array([CATEGORIES.index(t) for t in labels])
    logits = np.zeros((len(y), len(CATEGORIES)), dtype=np.float32)
    for train_idx, held_idx in StratifiedKFold(folds, shuffle=True, random_state=seed).split(np.zeros(len(y)), y):
        coef, intercept = fit(x[train_idx], y[train_idx], c, seed)
        logits[held_idx] = np.asarray(x[held_idx] @ coef.T) + intercept
    temperature = fit_temperature(logits, y)
    probabilities = softmax(logits, temperature)
    confidence = probabilities.max(axis=1)
    correct = probabilities.argmax(axis=1) == y
    ambiguous_below = ambiguity_cut(confidence, correct)
    coef, intercept = fit(x, y, c, seed)
    info = {"c": c, "folds": folds, "seed": seed, "records": len(y), "uses_memory": memory_scores is not None,
            "out_of_fold_accuracy": float(correct.mean()), "temperature": temperature,
            "vector_weight": VECTOR_WEIGHT, **(meta or {})}
    return CategoryModel(coef, intercept, temperature, ambiguous_below=ambiguous_below, meta=info)


def ambiguity_cut(confidence: np.ndarray, correct: np.ndarray, target: float = 0.5) -> float:
    """The highest confidence below which out-of-fold accuracy is under `target`: items under
    it are marked ambiguous (the role ρ < 0.62 plays in the paper)."""
    cuts = np.linspace(0.3, 0.9, 61)
    below = [c for c in cuts if (confidence < c).sum() >= 20 and correct[confidence < c].mean() < target]
    return float(max(below)) if below else 0.3
