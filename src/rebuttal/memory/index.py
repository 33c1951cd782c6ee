"""Top-k inner-product search over unit vectors: exact numpy for small sets, usearch HNSW above
a size threshold. The ANN index is checked against brute force when it is built."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

ANN_THRESHOLD = 20_000  # below this an exact matrix product is faster than any graph walk
AGREEMENT_TARGET = 0.95  # recall@k of the ANN index against brute force
_QUERY_CHUNK = 256  # bounds the (queries x records) similarity matrix


def brute_force_search(vectors: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k by inner product: (positions, similarities), each (m, min(k, n)), best first."""
    n = len(vectors)
    k = min(k, n)
    positions = np.empty((len(queries), k), dtype=np.int64)
    sims = np.empty((len(queries), k), dtype=np.float32)
    for start in range(0, len(queries), _QUERY_CHUNK):
        block = queries[start:start + _QUERY_CHUNK] @ vectors.T
        if k < n:
            top = np.argpartition(-block, k - 1, axis=1)[:, :k]
        else:
            top = np.broadcast_to(np.arange(n), (len(block), n))
        top_sims = np.take_along_axis(block, top, axis=1)
        order = np.argsort(-top_sims, axis=1, kind="stable")
        positions[start:start + len(block)] = np.take_along_axis(top, order, axis=1)
        sims[start:start + len(block)] = np.take_along_axis(top_sims, order, axis=1)
    return positions, sims


class VectorIndex:
    """Search over a fixed matrix of unit vectors; `ann` says whether usearch is used."""

    def __init__(self, vectors: np.ndarray, *, ann: bool | None = None,
                 ann_threshold: int = ANN_THRESHOLD, check_k: int = 10, seed: int = 0):
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.vectors.ndim != 2:
            raise ValueError(f"expected a 2-d matrix of vectors, got shape {self.vectors.shape}")
        self.ann = len(self.vectors) >= ann_threshold if ann is None else ann
        self.agreement: float | None = None
        self._index = None
        if self.ann and len(self.vectors):
            self._build_ann()
            self.agreement = self.check_agreement(k=check_k, seed=seed)

    @property
    def expansion_search(self) -> int | None:
        return self._index.expansion_search if self._index is not None else None

    def __len__(self) -> int:
        return len(self.vectors)

    def _build_ann(self) -> None:
        from rebuttal.llm.base import require

        usearch = require("usearch.index", "memory")
        # a narrower build beam for very large indexes keeps 1M-record builds to minutes; the
        # agreement check below widens the search beam if recall suffers
        expansion_add = 128 if len(self.vectors) <= 100_000 else 48
        self._index = usearch.Index(ndim=self.vectors.shape[1], metric="ip", connectivity=16,
                                    expansion_add=expansion_add, expansion_search=128)
        self._index.add(np.arange(len(self.vectors), dtype=np.uint64), self.vectors)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, similarities), each (m, min(k, n)), best first."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if not len(self.vectors):
            return np.zeros((len(queries), 0), np.int64), np.zeros((len(queries), 0), np.float32)
        if self._index is None:
            return brute_force_search(self.vectors, queries, k)
        k = min(k, len(self.vectors))
        # one thread for a handful of queries: spawning threads costs more than the walk
        matches = self._index.search(queries, k, threads=1 if len(queries) <= 8 else 0)
        positions = np.asarray(matches.keys, dtype=np.int64).reshape(len(queries), -1)
        # one query comes back as Matches (no `counts`), several as BatchMatches
        counts = np.asarray(getattr(matches, "counts", [len(matches.keys)])).reshape(-1)
        if (counts < k).any():  # a graph walk may come back short: fill those rows exactly
            short = np.flatnonzero(counts < k)
            positions[short] = brute_force_search(self.vectors, queries[short], k)[0]
        # exact similarities from the stored float32 vectors, not the index's distances
        sims = np.einsum("md,mkd->mk", queries, self.vectors[positions])
        order = np.argsort(-sims, axis=1, kind="stable")
        return np.take_along_axis(positions, order, 1), np.take_along_axis(sims, order, 1)

    def check_agreement(self, k: int = 10, samples: int = 200, seed: int = 0) -> float:
        """Recall@k of the ANN index against brute force on perturbed stored vectors; widens
        the search beam until the target is met (or the beam is 1024)."""
        if self._index is None:
            return 1.0
        rng = np.random.default_rng(seed)
        picks = rng.choice(len(self.vectors), size=min(samples, len(self.vectors)), replace=False)
        queries = self.vectors[picks] + rng.normal(0, 0.05, (len(picks), self.vectors.shape[1]))
        queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
        exact = brute_force_search(self.vectors, queries, k)[0]
        while True:
            found = self.search(queries, k)[0]
            recall = float(np.mean([len(set(a) & set(b)) / len(a) for a, b in zip(exact, found)]))
            if recall >= AGREEMENT_TARGET or self._index.expansion_search >= 1024:
                break
            self._index.expansion_search = self._index.expansion_search * 2
        if recall < AGREEMENT_TARGET:
            log.warning("ANN recall@%d is %.3f against brute force (target %.2f)", k, recall,
                        AGREEMENT_TARGET)
        return recall

    def save(self, path: Path) -> None:
        """Writes the usearch graph (if any) so loading a large memory skips the rebuild."""
        if self._index is not None:
            self._index.save(str(path))

    @classmethod
    def restore(cls, vectors: np.ndarray, path: Path | None, agreement: float | None = None,
                expansion_search: int = 128) -> VectorIndex:
        if path is None or not Path(path).is_file():
            return cls(vectors, ann=False)
        from rebuttal.llm.base import require

        usearch = require("usearch.index", "memory")
        index = cls(vectors, ann=False)
        index.ann = True
        index._index = usearch.Index.restore(str(path))
        if index._index is None or len(index._index) != len(vectors):
            raise ValueError(f"{path}: ANN index does not match the stored vectors; rebuild it")
        index._index.expansion_search = expansion_search
        index.agreement = agreement
        return index
