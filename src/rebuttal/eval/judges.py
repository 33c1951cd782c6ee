"""Model judges for the evaluation: toxicity, reply strategy, and the shipped linear heads.

Both small judges are logistic-regression heads on MiniLM sentence embeddings, trained by
`python -m rebuttal.eval.train_judges` and shipped as .npz weights with a model card in
`rebuttal/eval/models/`. Detoxify is used instead for toxicity when its checkpoint is on
disk (it cannot be downloaded here).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from rebuttal.eval.semantic import Encoder
from rebuttal.optional import require

TOXICITY_WEIGHTS = "toxicity_minilm_lr.npz"
STRATEGY_WEIGHTS = "strategy_minilm_lr.npz"


class JudgeInfo(BaseModel):
    """What the report prints about a judge."""

    role: str  # toxicity / strategy / factuality
    name: str
    version: str
    details: str = ""


class JudgeWeightsError(RuntimeError):
    """Shipped judge weights are missing or unreadable."""


@dataclass
class LinearHead:
    """Logistic regression on embeddings: p = softmax(x W^T + b) (sigmoid for two classes
    stored as one row)."""

    coef: np.ndarray  # (k, d), k = 1 for a binary head
    intercept: np.ndarray  # (k,)
    classes: list[str]
    meta: dict = field(default_factory=dict)

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        """(n, len(classes)) class probabilities."""
        logits = np.asarray(vectors, dtype=np.float64) @ self.coef.T + self.intercept
        if self.coef.shape[0] == 1:  # binary: one logit for classes[1]
            positive = 1.0 / (1.0 + np.exp(-logits[:, 0]))
            return np.stack([1.0 - positive, positive], axis=1)
        logits = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)

    def predict(self, vectors: np.ndarray) -> list[str]:
        return [self.classes[i] for i in self.probabilities(vectors).argmax(axis=1)]

    def save(self, path: str | Path) -> None:
        np.savez_compressed(
            path, coef=self.coef.astype(np.float32), intercept=self.intercept.astype(np.float32),
            classes=np.array(self.classes), meta=np.array(json.dumps(self.meta, sort_keys=True)),
        )

    @classmethod
    def load(cls, path: str | Path) -> LinearHead:
        try:
            with np.load(path, allow_pickle=False) as data:
                return cls(
                    coef=data["coef"].astype(np.float64), intercept=data["intercept"].astype(np.float64),
                    classes=[str(c) for c in data["classes"]], meta=json.loads(str(data["meta"])),
                )
        except (OSError, KeyError, ValueError) as exc:
            raise JudgeWeightsError(
                f"cannot read judge weights {path}: {exc}; rebuild them with "
                "`python -m rebuttal.eval.train_judges --data-dir ../shared/data`"
            ) from None

    @property
    def version(self) -> str:
        return str(self.meta.get("version", "unversioned"))


def shipped_weights(name: str) -> Path:
    return Path(str(resources.files("rebuttal.eval") / "models" / name))


def _default_encoder() -> Encoder:
    from rebuttal.llm.embeddings import load_minilm

    return load_minilm()


class ToxicityJudge:
    """Probability that a reply is toxic/hateful, from the shipped MiniLM LR head."""

    role = "toxicity"

    def __init__(self, head: LinearHead | None = None, encoder: Encoder | None = None):
        self.head = head or LinearHead.load(shipped_weights(TOXICITY_WEIGHTS))
        self._encoder = encoder
        if "toxic" not in self.head.classes:
            raise JudgeWeightsError(f"toxicity head has classes {self.head.classes}, needs 'toxic'")

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = _default_encoder()
        return self._encoder

    def scores(self, texts: list[str]) -> list[float]:
        if not texts:
            return []
        probs = self.head.probabilities(self.encoder.encode(list(texts)))
        return [float(p) for p in probs[:, self.head.classes.index("toxic")]]

    @property
    def info(self) -> JudgeInfo:
        metrics = self.head.meta.get("heldout", {})
        return JudgeInfo(
            role=self.role, name=str(self.head.meta.get("name", "toxicity-minilm-lr")),
            version=self.head.version,
            details="logistic regression on all-MiniLM-L6-v2 embeddings, trained on hate-sources; "
            f"held-out accuracy {metrics.get('accuracy', 'n/a')}, AUC {metrics.get('auc', 'n/a')}",
        )


class DetoxifyJudge:
    """Detoxify's `toxicity` score, only from a checkpoint already on disk."""

    role = "toxicity"

    def __init__(self, checkpoint: str | Path, model_type: str = "original"):
        checkpoint = Path(checkpoint)
        if not checkpoint.is_file():
            raise JudgeWeightsError(f"Detoxify checkpoint not found: {checkpoint}")
        detoxify = require("detoxify", "eval")
        self.model = detoxify.Detoxify(model_type, checkpoint=str(checkpoint), device="cpu")
        self.checkpoint = checkpoint
        self.model_type = model_type

    def scores(self, texts: list[str]) -> list[float]:
        if not texts:
            return []
        return [float(v) for v in self.model.predict(list(texts))["toxicity"]]

    @property
    def info(self) -> JudgeInfo:
        return JudgeInfo(role=self.role, name=f"detoxify-{self.model_type}",
                         version=self.checkpoint.name, details=f"checkpoint {self.checkpoint}")


class StrategyJudge:
    """Which category's counter-strategy a reply follows (trained on reference replies)."""

    role = "strategy"

    def __init__(self, head: LinearHead | None = None, encoder: Encoder | None = None):
        self.head = head or LinearHead.load(shipped_weights(STRATEGY_WEIGHTS))
        self._encoder = encoder

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = _default_encoder()
        return self._encoder

    def detect(self, texts: list[str]) -> list[str]:
        if not texts:
            return []
        return self.head.predict(self.encoder.encode(list(texts)))

    @property
    def info(self) -> JudgeInfo:
        metrics = self.head.meta.get("heldout", {})
        return JudgeInfo(
            role=self.role, name=str(self.head.meta.get("name", "strategy-minilm-lr")),
            version=self.head.version,
            details="logistic regression on all-MiniLM-L6-v2 embeddings of silver FactualCS "
            f"train reference replies; held-out accuracy {metrics.get('accuracy', 'n/a')}",
        )
