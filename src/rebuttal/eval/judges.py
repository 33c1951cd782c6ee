"""Model judges for the evaluation: toxicity, reply strategy, and the shipped linear heads.

Both small judges are logistic-regression heads on MiniLM sentence embeddings, trained by
`python -m rebuttal.eval.train_judges` and shipped as .npz weights with a model card in
`rebuttal/eval/models/`. Detoxify is used instead for toxicity when its checkpoint is on
disk (it cannot be downloaded here).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from pydantic import BaseModel

from rebuttal.eval.semantic import Encoder
from rebuttal.learned.linear import LinearHead
from rebuttal.learned.linear import WeightsError as JudgeWeightsError
from rebuttal.optional import require

REBUILD = "python -m rebuttal.eval.train_judges --data-dir ../shared/data"
TOXICITY_WEIGHTS = "toxicity_minilm_lr.npz"
STRATEGY_WEIGHTS = "strategy_minilm_lr.npz"


class JudgeInfo(BaseModel):
    """What the report prints about a judge."""

    role: str  # toxicity / strategy / factuality
    name: str
    version: str
    details: str = ""


def shipped_weights(name: str) -> Path:
    return Path(str(resources.files("rebuttal.eval") / "models" / name))


def _default_encoder() -> Encoder:
    from rebuttal.llm.embeddings import load_minilm

    return load_minilm()


class ToxicityJudge:
    """Probability that a reply is toxic/hateful, from the shipped MiniLM LR head."""

    role = "toxicity"

    def __init__(self, head: LinearHead | None = None, encoder: Encoder | None = None):
        self.head = head or LinearHead.load(shipped_weights(TOXICITY_WEIGHTS), REBUILD)
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
        self.head = head or LinearHead.load(shipped_weights(STRATEGY_WEIGHTS), REBUILD)
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
