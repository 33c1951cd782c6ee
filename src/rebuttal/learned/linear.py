"""A logistic-regression head over sentence vectors, stored as a small .npz: the eval judges'
toxicity and strategy heads and FIRE's draft score are all one of these."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


class WeightsError(RuntimeError):
    """Shipped or given weights are missing or unreadable."""


@dataclass
class LinearHead:
    """p = softmax(x W^T + b) (sigmoid for two classes stored as one row)."""

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
    def load(cls, path: str | Path, rebuild: str = "") -> LinearHead:
        """`rebuild`: the command that makes the weights again, for the error message."""
        try:
            with np.load(path, allow_pickle=False) as data:
                return cls(
                    coef=data["coef"].astype(np.float64), intercept=data["intercept"].astype(np.float64),
                    classes=[str(c) for c in data["classes"]], meta=json.loads(str(data["meta"])),
                )
        except (OSError, KeyError, ValueError) as exc:
            hint = f"; rebuild them with `{rebuild}`" if rebuild else ""
            raise WeightsError(f"cannot read weights {path}: {exc}{hint}") from None

    @property
    def version(self) -> str:
        return str(self.meta.get("version", "unversioned"))
