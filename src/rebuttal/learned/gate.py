"""The hate gate: is a post hateful at all? FIRE writes no reply when it says no.

One model per language. English: either a token head over MiniLM's token states
(gate_head.py) or a logistic regression on MiniLM sentence vectors plus hashed word n-grams.
Chinese: a logistic regression on hashed character n-grams (no Chinese encoder is packaged).
Thresholds are per language, chosen on the HateCheck dev halves (benchmarks/results/gate.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import sparse

from rebuttal.learned.gate_head import MAX_TOKENS, head_arrays, head_from_arrays, head_probabilities
from rebuttal.learned.text import language, ngram_vectorizer, sigmoid

SHIPPED = Path(__file__).resolve().parent / "data" / "gate.npz"
LANGUAGES = ("en", "zh")


@dataclass
class LanguageGate:
    coef: np.ndarray  # (n_features,) = [384 MiniLM dims (en only)] + hashed n-grams
    intercept: float
    threshold: float
    uses_vectors: bool
    # At or above `sure` the LLM's "not hateful" no longer vetoes a reply (it is flagged instead):
    # chosen so that held-out non-hateful cases rarely score this high. Above 1: the LLM always may.
    sure: float = 1.01
    head: object | None = None  # a gate_head.TokenHead: then it alone scores (coef is unused)

    def features(self, texts: list[str], vectors: np.ndarray | None, lang: str):
        grams = ngram_vectorizer(lang).transform(texts)
        if not self.uses_vectors:
            return grams
        if vectors is None:
            raise ValueError("the English gate needs MiniLM vectors")
        return sparse.hstack([sparse.csr_matrix(vectors), grams]).tocsr()

    def score(self, texts: list[str], vectors: np.ndarray | None, lang: str, encoder=None) -> np.ndarray:
        if self.head is not None:
            if encoder is None:
                raise ValueError("the token-head gate needs the MiniLM encoder")
            return head_probabilities(self.head, *encoder.token_states(texts, MAX_TOKENS))
        return sigmoid(self.features(texts, vectors, lang) @ self.coef + self.intercept)


@dataclass
class HateGate:
    gates: dict[str, LanguageGate]
    meta: dict = field(default_factory=dict)

    def scores(self, texts: list[str], vectors: np.ndarray | None = None,
               encoder=None) -> list[tuple[float, LanguageGate, str]]:
        """(probability hateful, the language's gate, language) per text; `vectors` are MiniLM
        rows for the same texts (the English linear gate), `encoder` the MiniLM (token head)."""
        langs = [language(t) for t in texts]
        out: list[tuple[float, LanguageGate, str]] = [None] * len(texts)  # type: ignore[list-item]
        for lang in set(langs):
            rows = [i for i, lg in enumerate(langs) if lg == lang]
            gate = self.gates[lang]
            vecs = vectors[rows] if vectors is not None and gate.uses_vectors else None
            for i, p in zip(rows, gate.score([texts[i] for i in rows], vecs, lang, encoder)):
                out[i] = (float(p), gate, lang)
        return out

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {}
        for lang, gate in self.gates.items():
            arrays[f"{lang}_coef"] = sparse.csr_matrix(gate.coef.reshape(1, -1)).toarray().astype(np.float32)[0]
            arrays[f"{lang}_head"] = np.array([gate.intercept, gate.threshold, float(gate.uses_vectors), gate.sure],
                                              dtype=np.float64)
            if gate.head is not None:
                arrays.update(head_arrays(gate.head, f"{lang}_tokens."))
        np.savez_compressed(path, meta=np.array(json.dumps(self.meta)), **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path = SHIPPED) -> HateGate:
        with np.load(path) as data:
            gates = {}
            for lang in LANGUAGES:
                head = data[f"{lang}_head"]  # gates saved before `sure` existed have three values
                gates[lang] = LanguageGate(data[f"{lang}_coef"], float(head[0]), float(head[1]), bool(head[2]),
                                           float(head[3]) if len(head) > 3 else 1.01)
                prefix = f"{lang}_tokens."
                if any(name.startswith(prefix) for name in data.files):
                    gates[lang].head = head_from_arrays(data, prefix)  # it reads only the prefixed arrays
            return cls(gates, json.loads(str(data["meta"])))


def train_language_gate(texts: list[str], labels: list[bool], lang: str, vectors: np.ndarray | None,
                        c: float = 4.0, threshold: float = 0.5) -> LanguageGate:
    from sklearn.linear_model import LogisticRegression

    gate = LanguageGate(np.zeros(0), 0.0, threshold, uses_vectors=vectors is not None)
    features = gate.features(texts, vectors, lang)
    model = LogisticRegression(C=c, max_iter=5000, class_weight="balanced").fit(features, np.array(labels))
    gate.coef, gate.intercept = model.coef_[0].astype(np.float32), float(model.intercept_[0])
    return gate
