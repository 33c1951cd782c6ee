"""The hate gate: is a post hateful at all? FIRE writes no reply when it says no.

One model per language. The shipped kind, for both: a logistic regression on the embedded chat
model's hidden states after its first 14 layers (mean and last of the first 64 tokens), which
read negation, praise and quotation far better than MiniLM or n-grams; a linear model on MiniLM
sentence vectors + hashed word n-grams (English) or character n-grams (Chinese) is kept as the
fallback when that model is not installed. English can also be a token head over MiniLM's token
states (gate_head.py). Thresholds are per language, chosen on the HateCheck dev halves
(benchmarks/results/gate.md).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy import sparse

from rebuttal.learned.gate_head import MAX_TOKENS, head_arrays, head_from_arrays, head_probabilities
from rebuttal.learned.text import language, ngram_vectorizer, sigmoid
from rebuttal.llm.registry import ModelRegistryError
from rebuttal.optional import MissingBackend

SHIPPED = Path(__file__).resolve().parent / "data" / "gate.npz"
# What a states gate raises when its embedded model (or llama-cpp / gguf) is not installed.
MODEL_MISSING = (MissingBackend, ModelRegistryError, FileNotFoundError)
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
    # {"model", "layers", "max_tokens"}: coef reads the chat model's pooled states instead
    states: dict | None = None
    reader: object | None = field(default=None, repr=False)  # a ContextualStates; default: shared_reader
    # The weight of this gate's logit against the language's linear gate (its fallback), whose
    # logit takes the rest: the states read negation and praise, the linear model, trained on ten
    # times the real posts, reads real hate better (issue 47). None: this gate alone.
    blend: float | None = None
    partner: LanguageGate | None = field(default=None, repr=False)  # that linear gate, wired by HateGate.load

    @property
    def kind(self) -> str:
        kind = "token head" if self.head is not None else "model states" if self.states else "linear"
        return kind + (" + linear" if self.blend is not None else "")

    @property
    def reads_vectors(self) -> bool:
        """Whether scoring takes MiniLM vectors (its own features or its partner's)."""
        return self.uses_vectors or (self.partner is not None and self.partner.uses_vectors)

    def features(self, texts: list[str], vectors: np.ndarray | None, lang: str):
        if self.states is not None:
            return pooled_states(self.reader or shared_reader(**self.states), texts)
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
        own = sigmoid(self.features(texts, vectors, lang) @ self.coef + self.intercept)
        if self.blend is None:
            return own
        if self.partner is None:
            raise ValueError("a blended gate needs its linear partner (HateGate.load wires the language's fallback)")
        return blended(own, self.partner.score(texts, vectors, lang, encoder), self.blend)


def pooled_states(reader, texts: list[str]) -> np.ndarray:
    """Per text: the mean and the last of its token states, (n, 2 * dim). The last state has read
    the whole text (the model reads left to right); the mean keeps what each part said."""
    out = np.zeros((len(texts), 2 * reader.dim), dtype=np.float32)
    for i, text in enumerate(texts):
        _, states = reader.token_states(text)
        if len(states):
            out[i] = np.concatenate([states.mean(axis=0), states[-1]])
    return out


_opening = threading.Lock()
# The context of a shared reader: the longest text any shipped part reads (the draft score's).
# A larger context costs memory on every call (llama.cpp sizes its buffers by it).
READER_TOKENS = 256


@dataclass(frozen=True)
class TokenLimit:
    """A shared reader seen through one part's token limit."""

    reader: object
    max_tokens: int

    @property
    def dim(self) -> int:
        return self.reader.dim

    def token_states(self, text: str):
        return self.reader.token_states(text, self.max_tokens)

    def count_tokens(self, text: str) -> int:
        return self.reader.count_tokens(text)


def shared_reader(model: str, layers: int | None, max_tokens: int) -> TokenLimit:
    """One reader per process, model and depth, whatever each part's token limit: the gate, the
    category model and the draft score share one llama.cpp context (each context holds its own
    ~0.5 GB of weights). Concurrent first requests wait for the one that opens it (and cuts the
    GGUF) instead of loading the model twice."""
    if max_tokens > READER_TOKENS:
        raise ValueError(f"a shared states reader reads at most {READER_TOKENS} tokens, not {max_tokens}")
    with _opening:
        return TokenLimit(_open_reader(model, layers), max_tokens)


@lru_cache(maxsize=2)
def _open_reader(model: str, layers: int | None):
    from rebuttal.llm.states import open_states

    return open_states(model, layers=layers, max_tokens=READER_TOKENS)


@dataclass
class HateGate:
    gates: dict[str, LanguageGate]
    meta: dict = field(default_factory=dict)
    # Used when a language's gate cannot run (its embedded model is not installed); flagged.
    fallbacks: dict[str, LanguageGate] = field(default_factory=dict)

    def scores(self, texts: list[str], vectors: np.ndarray | None = None,
               encoder=None) -> list[tuple[float, LanguageGate, str]]:
        """(probability hateful, the gate that scored it, language) per text; `vectors` are MiniLM
        rows for the same texts (the English linear gate), `encoder` the MiniLM (token head).
        The gate is `self.fallbacks[lang]` when the language's own gate could not run."""
        langs = [language(t) for t in texts]
        out: list[tuple[float, LanguageGate, str]] = [None] * len(texts)  # type: ignore[list-item]
        for lang in set(langs):
            rows = [i for i, lg in enumerate(langs) if lg == lang]
            chosen = [texts[i] for i in rows]
            gate = self.gates[lang]
            try:
                scores = gate.score(chosen, _rows(vectors, rows, gate), lang, encoder)
            except MODEL_MISSING:
                if lang not in self.fallbacks:
                    raise
                gate = self.fallbacks[lang]
                scores = gate.score(chosen, _rows(vectors, rows, gate), lang, encoder)
            for i, p in zip(rows, scores):
                out[i] = (float(p), gate, lang)
        return out

    def warm_up(self) -> None:
        """Open the model readers the states gates need now (the first use cuts the GGUF, ~1 min
        once per cache folder, and loads half the chat model), not on a language's first post.
        A missing model is left to `scores`, which falls back and flags it."""
        for gate in self.gates.values():
            if gate.states is not None and gate.reader is None:
                try:
                    shared_reader(**gate.states)
                except MODEL_MISSING:
                    pass

    def is_fallback(self, gate: LanguageGate) -> bool:
        return any(gate is g for g in self.fallbacks.values())

    def only(self, languages: list[str]) -> HateGate:
        """The same gate with `languages` alone (their fallbacks and training notes kept)."""
        return HateGate({lang: self.gates[lang] for lang in languages},
                        {**self.meta, "languages": {lang: self.meta["languages"][lang] for lang in languages}},
                        {lang: g for lang, g in self.fallbacks.items() if lang in languages})

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {}
        named = {**self.gates, **{f"{lang}_fallback": g for lang, g in self.fallbacks.items()}}
        for lang, gate in named.items():
            if gate.states is not None:
                arrays[f"{lang}_states"] = np.array(json.dumps(gate.states))
            arrays[f"{lang}_coef"] = sparse.csr_matrix(gate.coef.reshape(1, -1)).toarray().astype(np.float32)[0]
            blend = np.nan if gate.blend is None else gate.blend
            arrays[f"{lang}_head"] = np.array([gate.intercept, gate.threshold, float(gate.uses_vectors), gate.sure,
                                               blend], dtype=np.float64)
            if gate.head is not None:
                arrays.update(head_arrays(gate.head, f"{lang}_tokens."))
        np.savez_compressed(path, meta=np.array(json.dumps(self.meta)), **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path = SHIPPED) -> HateGate:
        with np.load(path) as data:
            gates = {name: _load_gate(data, name) for name in LANGUAGES}
            fallbacks = {lang: _load_gate(data, f"{lang}_fallback") for lang in LANGUAGES
                         if f"{lang}_fallback_coef" in data.files}
            meta = json.loads(str(data["meta"]))
        for lang, gate in gates.items():
            if gate.blend is not None:
                gate.partner = fallbacks[lang]
        return cls(gates, meta, fallbacks)


def blended(own: np.ndarray, linear: np.ndarray, weight: float) -> np.ndarray:
    """The probability whose logit is `weight` x `own`'s + (1 - `weight`) x `linear`'s."""
    def logit(p):
        p = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
        return np.log(p / (1 - p))

    return sigmoid(weight * logit(own) + (1 - weight) * logit(linear))


def _rows(vectors: np.ndarray | None, rows: list[int], gate: LanguageGate) -> np.ndarray | None:
    return vectors[rows] if vectors is not None and gate.reads_vectors else None


def _load_gate(data, name: str) -> LanguageGate:
    head = data[f"{name}_head"]  # older gates have three values (no `sure`) or four (no blend)
    gate = LanguageGate(data[f"{name}_coef"], float(head[0]), float(head[1]), bool(head[2]),
                        float(head[3]) if len(head) > 3 else 1.01)
    if len(head) > 4 and not np.isnan(head[4]):
        gate.blend = float(head[4])
    if f"{name}_states" in data.files:
        gate.states = json.loads(str(data[f"{name}_states"]))
    prefix = f"{name}_tokens."
    if any(key.startswith(prefix) for key in data.files):
        gate.head = head_from_arrays(data, prefix)  # it reads only the prefixed arrays
    return gate


def train_language_gate(texts: list[str], labels: list[bool], lang: str, vectors: np.ndarray | None,
                        c: float = 4.0, threshold: float = 0.5) -> LanguageGate:
    from sklearn.linear_model import LogisticRegression

    gate = LanguageGate(np.zeros(0), 0.0, threshold, uses_vectors=vectors is not None)
    features = gate.features(texts, vectors, lang)
    model = LogisticRegression(C=c, max_iter=5000, class_weight="balanced").fit(features, np.array(labels))
    gate.coef, gate.intercept = model.coef_[0].astype(np.float32), float(model.intercept_[0])
    return gate


def train_states_gate(features: np.ndarray, labels: list[bool], weights: np.ndarray, states: dict,
                      c: float = 0.001, threshold: float = 0.5) -> LanguageGate:
    """Logistic regression on standardised pooled states; the scaling is folded into the weights."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = features.mean(axis=0), features.std(axis=0) + 1e-6
    model = LogisticRegression(C=c, max_iter=5000, class_weight="balanced")
    model.fit((features - mean) / scale, np.array(labels), sample_weight=weights)
    coef = model.coef_[0] / scale
    intercept = float(model.intercept_[0] - coef @ mean)
    return LanguageGate(coef.astype(np.float32), intercept, threshold, uses_vectors=False, states=dict(states))
