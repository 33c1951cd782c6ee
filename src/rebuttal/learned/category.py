"""FIRE's category, learned: logistic regression over MiniLM sentence vectors and hashed word
n-grams, optionally with the memory's per-category scores S_t as extra features.

Why this design (benchmarks/results/analyst.md): trained on the 3,862 silver train records it
beats the memory's kNN vote and the 1.5B model's own pick on silver dev, and fine-tuning MiniLM
with cross-entropy did no better while costing 90 MB of weights. The vectors carry meaning, the
n-grams carry the cue words of the guidelines ("plan", "percent", "vermin"). The temperature is
fitted on out-of-fold logits of train so that `confidence` (the top probability) means what it
says; the confidence bands in analyst.md show it separates accurate from inaccurate items.

A second linear model reads the embedded chat model's layer-14 states (the hate gate's features,
so one forward pass serves both) and the two probabilities are averaged: on silver dev this beat
either alone (benchmarks/results/analyst.md). Without the embedded model the text model alone
decides, with its own temperature and cut, and FIRE flags `category_fallback`.
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
# The states part: L2 C and its share of the averaged probabilities, chosen by 5-fold
# cross-validation on silver train (states alone 0.697, text alone 0.688, averaged 0.724).
STATES_C = 0.003
STATES_WEIGHT = 0.5


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
class StatesPart:
    """The chat-model-states half of the category model; its standardisation is folded into coef."""

    spec: dict  # the states reader: {"model", "layers", "max_tokens"} (the hate gate's)
    coef: np.ndarray  # (5, 2 * hidden size)
    intercept: np.ndarray  # (5,)
    weight: float = 0.5  # its share of the averaged probabilities
    temperature: float = 1.0  # of the averaged probabilities, fitted out of fold
    ambiguous_below: float = 0.5

    def features(self, texts: list[str]) -> np.ndarray:
        """Pooled states of the texts; raises gate.MODEL_MISSING when the model is not installed."""
        from rebuttal.learned.gate import pooled_states, shared_reader

        return pooled_states(shared_reader(**self.spec), texts)

    def mix(self, text_probabilities: np.ndarray, states: np.ndarray) -> np.ndarray:
        """The weighted average of the text part's and this part's probabilities, calibrated."""
        own = softmax(np.atleast_2d(states) @ self.coef.T + self.intercept)
        return softmax(averaged_logits(text_probabilities, own, self.weight), self.temperature)


def averaged_logits(text_probabilities: np.ndarray, states_probabilities: np.ndarray, weight: float) -> np.ndarray:
    """Log of the weighted average of the two parts' probabilities (a temperature then calibrates it)."""
    return np.log((1 - weight) * text_probabilities + weight * states_probabilities + 1e-12)


@dataclass
class CategoryModel:
    coef: np.ndarray  # (5, 384 + 2**18 [+ 5 memory scores]), mostly zeros: stored sparse
    intercept: np.ndarray  # (5,)
    temperature: float = 1.0
    ambiguous_below: float = 0.5  # confidence under this marks the category as uncertain
    meta: dict = field(default_factory=dict)
    states: StatesPart | None = None

    @property
    def uses_memory(self) -> bool:
        return bool(self.meta.get("uses_memory"))

    def text_logits(self, texts: list[str], vectors: np.ndarray,
                    memory_scores: list[dict[HateType, float]] | None = None) -> np.ndarray:
        if self.uses_memory and memory_scores is None:
            raise ValueError("this category model was trained with the memory's scores; pass them")
        x = features(texts, vectors, memory_scores if self.uses_memory else None)
        return np.asarray(x @ self.coef.T) + self.intercept

    def predict_proba(self, texts: list[str], vectors: np.ndarray,
                      memory_scores: list[dict[HateType, float]] | None = None,
                      states: np.ndarray | None = None) -> np.ndarray:
        """(n, 5) probabilities over HateType (pass S_t if the model was trained with them, and
        `states.features(texts)` if it has a states part: without them the text model decides)."""
        logits = self.text_logits(texts, vectors, memory_scores)
        if self.states is None or states is None:
            return softmax(logits, self.temperature)
        return self.states.mix(softmax(logits), states)

    def ambiguous_cut(self, with_states: bool) -> float:
        return self.states.ambiguous_below if with_states and self.states is not None else self.ambiguous_below

    def predict(self, texts: list[str], vectors: np.ndarray, memory_scores=None,
                states: np.ndarray | None = None) -> list[tuple[HateType, float, dict[HateType, float]]]:
        """(category, confidence, probabilities) per row."""
        out = []
        for row in self.predict_proba(texts, vectors, memory_scores, states):
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
                            meta=np.array(json.dumps(self.meta)), **self._states_arrays())
        return path

    def _states_arrays(self) -> dict:
        if self.states is None:
            return {}
        part = self.states
        settings = {"spec": part.spec, "weight": part.weight, "temperature": part.temperature,
                    "ambiguous_below": part.ambiguous_below}
        return {"states_coef": part.coef.astype(np.float32), "states_intercept": part.intercept.astype(np.float32),
                "states_settings": np.array(json.dumps(settings))}

    @classmethod
    def load(cls, path: str | Path = SHIPPED) -> CategoryModel:
        with np.load(path) as data:
            coef = np.zeros((len(CATEGORIES), int(data["width"])), dtype=np.float32)
            coef[:, data["columns"]] = data["values"]
            states = None
            if "states_coef" in data:
                states = StatesPart(coef=data["states_coef"], intercept=data["states_intercept"],
                                    **json.loads(str(data["states_settings"])))
            return cls(coef=coef, intercept=data["intercept"], temperature=float(data["temperature"]),
                       ambiguous_below=float(data["ambiguous_below"]), meta=json.loads(str(data["meta"])),
                       states=states)


def fit(features, labels: np.ndarray, c: float, seed: int = 13, standardise: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression; dense features can be standardised (folded into coef)."""
    from sklearn.linear_model import LogisticRegression

    mean = scale = None
    if standardise:
        mean, scale = features.mean(axis=0), features.std(axis=0) + 1e-6
        features = (features - mean) / scale
    model = LogisticRegression(C=c, max_iter=5000, random_state=seed).fit(features, labels)
    weights, bias = model.coef_, model.intercept_
    if standardise:
        weights = weights / scale
        bias = bias - weights @ mean
    coef = np.zeros((len(CATEGORIES), features.shape[1]), dtype=np.float32)
    intercept = np.full(len(CATEGORIES), -1e4, dtype=np.float32)  # a class absent from train never wins
    coef[model.classes_] = weights
    intercept[model.classes_] = bias
    return coef, intercept


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The softmax temperature minimising held-out log loss (a grid is enough for one scalar)."""
    grid = np.exp(np.linspace(np.log(0.3), np.log(5.0), 60))
    losses = [-np.log(softmax(logits, t)[np.arange(len(labels)), labels] + 1e-9).mean() for t in grid]
    return float(grid[int(np.argmin(losses))])


def out_of_fold_logits(x, y: np.ndarray, split, fitter) -> np.ndarray:
    """Each row's logits from `fitter(train rows)`, a (coef, intercept) fit without it."""
    logits = np.zeros((len(y), len(CATEGORIES)), dtype=np.float32)
    for train_idx, held_idx in split:
        coef, intercept = fitter(train_idx)
        logits[held_idx] = np.asarray(x[held_idx] @ coef.T) + intercept
    return logits


def calibrate(logits: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(temperature, ambiguity cut, accuracy) from out-of-fold logits."""
    temperature = fit_temperature(logits, y)
    probabilities = softmax(logits, temperature)
    correct = probabilities.argmax(axis=1) == y
    return temperature, ambiguity_cut(probabilities.max(axis=1), correct), float(correct.mean())


def train_category_model(texts: list[str], vectors: np.ndarray, labels: list[HateType], *, c: float = 4.0,
                         memory_scores: list[dict[HateType, float]] | None = None,
                         states: np.ndarray | None = None, states_spec: dict | None = None,
                         states_c: float = STATES_C, folds: int = 5, seed: int = 13, meta: dict | None = None) -> CategoryModel:
    """Fit on everything; fit the temperature and the ambiguity cut on out-of-fold logits. With
    `states` (pooled chat-model states of the texts, read by `states_spec`) a states part is
    trained on the same folds and calibrated on the averaged out-of-fold probabilities."""
    from sklearn.model_selection import StratifiedKFold

    x = features(texts, vectors, memory_scores)
    y = np.array([CATEGORIES.index(t) for t in labels])
    split = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(np.zeros(len(y)), y))
    logits = out_of_fold_logits(x, y, split, lambda rows: fit(x[rows], y[rows], c, seed))
    temperature, ambiguous_below, accuracy = calibrate(logits, y)
    info = {"c": c, "folds": folds, "seed": seed, "records": len(y), "uses_memory": memory_scores is not None,
            "out_of_fold_accuracy": accuracy, "out_of_fold_accuracy_text": accuracy, "temperature": temperature,
            "vector_weight": VECTOR_WEIGHT, **(meta or {})}
    model = CategoryModel(*fit(x, y, c, seed), temperature, ambiguous_below=ambiguous_below, meta=info)
    if states is not None:
        info["states_c"] = states_c
        model.states, info["out_of_fold_accuracy"] = train_states_part(states, y, softmax(logits), states_spec,
                                                                       split, states_c, seed)
    return model


def train_states_part(states: np.ndarray, y: np.ndarray, text_probabilities: np.ndarray, spec: dict | None,
                      split, c: float, seed: int) -> tuple[StatesPart, float]:
    """The states half and the out-of-fold accuracy of the averaged model."""
    logits = out_of_fold_logits(states, y, split, lambda rows: fit(states[rows], y[rows], c, seed, True))
    temperature, cut, accuracy = calibrate(averaged_logits(text_probabilities, softmax(logits), STATES_WEIGHT), y)
    coef, intercept = fit(states, y, c, seed, True)
    return StatesPart(dict(spec or {}), coef, intercept, STATES_WEIGHT, temperature, cut), accuracy


def ambiguity_cut(confidence: np.ndarray, correct: np.ndarray, target: float = 0.5) -> float:
    """The highest confidence below which out-of-fold accuracy is under `target`: items under
    it are marked ambiguous (the role ρ < 0.62 plays in the paper)."""
    cuts = np.linspace(0.3, 0.9, 61)
    below = [c for c in cuts if (confidence < c).sum() >= 20 and correct[confidence < c].mean() < target]
    return float(max(below)) if below else 0.3
