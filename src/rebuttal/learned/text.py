"""Language and n-gram features shared by the learned models."""

from __future__ import annotations

import re

import numpy as np

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
LATIN = re.compile(r"[A-Za-z]")
HASH_FEATURES = 2**18


def language(text: str) -> str:
    """'zh' when CJK characters outnumber a third of the Latin letters, else 'en'."""
    return "zh" if len(CJK.findall(text)) > len(LATIN.findall(text)) / 3 else "en"


def ngram_vectorizer(lang: str):
    """Stateless hashed n-grams (nothing to store but the settings): words for English,
    characters for Chinese, which has no packaged tokenizer or encoder here."""
    from sklearn.feature_extraction.text import HashingVectorizer

    if lang == "zh":
        return HashingVectorizer(analyzer="char", ngram_range=(1, 3), n_features=HASH_FEATURES,
                                 alternate_sign=False, norm="l2")
    return HashingVectorizer(analyzer="word", ngram_range=(1, 2), n_features=HASH_FEATURES,
                             alternate_sign=False, norm="l2", lowercase=True,
                             token_pattern=r"(?u)\b\w+\b")


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    z = logits / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))
