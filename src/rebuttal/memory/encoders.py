"""Sentence encoders for the memory: plain MiniLM, MiniLM + a trained projection head, or a
fully fine-tuned MiniLM. All return L2-normalised float32 rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

SHIPPED_HEAD = Path(__file__).resolve().parent / "data" / "head"
HEAD_FILE = "head.npz"


@runtime_checkable
class Encoder(Protocol):
    name: str

    def encode(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows of unit length."""
        ...

    def spec(self) -> dict:
        """How to find this encoder again (stored with a saved memory)."""
        ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # rows already of unit length are left bit-identical, so saving and loading changes nothing
    norms[np.abs(norms - 1.0) < 1e-6] = 1.0
    return vectors / np.maximum(norms, 1e-12)


class BaseEncoder:
    """all-MiniLM-L6-v2 as packaged (untrained for our task)."""

    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        self._model = None  # loaded on first use, so building from stored vectors stays cheap

    @property
    def model(self):
        if self._model is None:
            from rebuttal.llm.embeddings import load_minilm

            self._model = load_minilm()
        return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(list(texts))

    def spec(self) -> dict:
        return {"kind": "base"}


class ProjectionHead:
    """z = normalise(x + relu(x W1 + b1) W2 + b2): a residual MLP on frozen MiniLM vectors.

    W2 starts at zero in training, so an untrained head is the identity on MiniLM space."""

    def __init__(self, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray,
                 meta: dict | None = None):
        self.w1, self.b1, self.w2, self.b2 = (np.asarray(a, dtype=np.float32) for a in (w1, b1, w2, b2))
        if self.w1.shape[0] != self.w2.shape[1] or self.w1.shape[1] != self.w2.shape[0]:
            raise ValueError(f"inconsistent head shapes {self.w1.shape} and {self.w2.shape}")
        self.meta = meta or {}

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        x = np.asarray(vectors, dtype=np.float32)
        hidden = np.maximum(x @ self.w1 + self.b1, 0.0)
        return normalise(x + hidden @ self.w2 + self.b2)

    def save(self, path: str | Path) -> None:
        np.savez(path, w1=self.w1, b1=self.b1, w2=self.w2, b2=self.b2,
                 meta=np.array(json.dumps(self.meta)))

    @classmethod
    def load(cls, path: str | Path) -> ProjectionHead:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no projection head at {path}")
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"])) if "meta" in data else {}
            return cls(data["w1"], data["b1"], data["w2"], data["b2"], meta)


class HeadEncoder:
    """Frozen MiniLM followed by a trained projection head (weights small enough to ship)."""

    def __init__(self, head: ProjectionHead | str | Path, base: BaseEncoder | None = None,
                 path: str | Path | None = None):
        if not isinstance(head, ProjectionHead):
            path = Path(head)
            head = ProjectionHead.load(path / HEAD_FILE if path.is_dir() else path)
        self.head = head
        self.path = Path(path) if path else None
        self._base = base
        self.name = f"all-MiniLM-L6-v2+head({self.path.name if self.path else 'memory'})"

    @property
    def base(self) -> BaseEncoder:
        if self._base is None:
            self._base = BaseEncoder()
        return self._base

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.head.apply(self.base.encode(texts))

    def spec(self) -> dict:
        return {"kind": "head", "file": HEAD_FILE}


class FullEncoder:
    """A fully fine-tuned sentence-transformers folder (written by `train --mode full`)."""

    def __init__(self, path: str | Path):
        self.path = Path(path).resolve()
        if not (self.path / "modules.json").is_file():
            raise FileNotFoundError(f"{self.path} is not a sentence-transformers model folder")
        self._model = None
        self.name = f"all-MiniLM-L6-v2-supcon({self.path.name})"

    @property
    def model(self):
        if self._model is None:
            from rebuttal.llm.embeddings import load_minilm

            self._model = load_minilm(str(self.path))
        return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(list(texts))

    def spec(self) -> dict:
        return {"kind": "full", "path": str(self.path)}


def load_encoder(where: str | Path | None = None) -> Encoder:
    """None or 'base' = plain MiniLM; 'default' = the shipped head; else a head or model dir."""
    if where is None or str(where) == "base":
        return BaseEncoder()
    if str(where) in ("default", "shipped"):
        return HeadEncoder(SHIPPED_HEAD)
    path = Path(where)
    if path.is_file() and path.suffix == ".npz" or (path / HEAD_FILE).is_file():
        return HeadEncoder(path)
    if (path / "modules.json").is_file():
        return FullEncoder(path)
    raise FileNotFoundError(
        f"{path}: no encoder here (expected {HEAD_FILE} for a head or modules.json for a full model)"
    )


def encoder_from_spec(spec: dict, folder: Path) -> Encoder:
    """The encoder a saved memory was built with; head weights live inside the memory folder."""
    kind = spec.get("kind")
    if kind == "base":
        return BaseEncoder()
    if kind == "head":
        return HeadEncoder(folder / spec.get("file", HEAD_FILE))
    if kind == "full":
        return FullEncoder(spec["path"])
    raise ValueError(f"{folder}: unknown encoder kind {kind!r}")
