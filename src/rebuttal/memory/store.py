"""The FIRE memory: annotated exemplars, their embeddings, per-category scores and purity.

For a post h with embedding u: s_i = cos(u, u_i) for every record; for each category t,
TopK_t = its k most similar records and S_t = their mean similarity; t̂ = argmax_t S_t.
Purity ρ = share of the global k nearest records whose category is t̂. ρ >= threshold: the
k exemplars of t̂; otherwise the exemplars of the two best categories, marked ambiguous.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from rebuttal.memory.records import (
    MemoryRecord,
    load_bank,
    load_records,
    records_digest,
    write_records,
)
from rebuttal.memory.encoders import (
    HEAD_FILE,
    SHIPPED_HEAD,
    Encoder,
    HeadEncoder,
    encoder_from_spec,
    normalise,
)
from rebuttal.memory.index import ANN_THRESHOLD, VectorIndex
from rebuttal.types import HateType, MemoryView, check_post

log = logging.getLogger(__name__)

DEFAULT_K = 5
DEFAULT_THRESHOLD = 0.62
FORMAT_VERSION = 1


class Neighbour(BaseModel):
    id: str
    category: HateType
    similarity: float


class MemoryQuery(BaseModel):
    """What the memory says about one post."""

    text: str
    k: int
    threshold: float
    scores: dict[HateType, float]  # S_t for every category present in the memory
    predicted: HateType  # t̂
    purity: float  # ρ
    ambiguous: bool  # ρ < threshold
    candidates: list[HateType]  # [t̂], or the top two categories when ambiguous
    exemplars: list[MemoryRecord]  # TopK of each candidate, best category first
    neighbours: list[Neighbour]  # the global k nearest records

    def view(self) -> MemoryView:
        return MemoryView(
            scores=self.scores, predicted=self.predicted, purity=self.purity,
            ambiguous=self.ambiguous, candidates=self.candidates,
            exemplar_ids=[r.id for r in self.exemplars],
        )


class Memory:
    """Records plus unit vectors, searched per category (exact or ANN, see `index.py`)."""

    def __init__(self, records: list[MemoryRecord], vectors: np.ndarray, encoder: Encoder | None,
                 *, k: int = DEFAULT_K, threshold: float = DEFAULT_THRESHOLD,
                 ann: bool | None = None, ann_threshold: int = ANN_THRESHOLD,
                 _indexes: dict[HateType, VectorIndex] | None = None):
        if not records:
            raise ValueError("a memory needs at least one record")
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(records):
            raise ValueError(f"{len(records)} records but vectors of shape {vectors.shape}")
        if not np.isfinite(vectors).all():
            raise ValueError("vectors contain NaN or infinity")
        if k < 1 or not 0.0 <= threshold <= 1.0:
            raise ValueError(f"need k >= 1 and 0 <= threshold <= 1, got k={k}, threshold={threshold}")
        self.records = list(records)
        self.vectors = normalise(vectors)
        self.encoder = encoder
        self.k = k
        self.threshold = threshold
        codes = np.array([list(HateType).index(r.category) for r in self.records])
        # positions (into self.records) of each category, and one index per category: the
        # global top-k is always inside the union of the per-category top-k lists
        self.positions = {t: np.flatnonzero(codes == i) for i, t in enumerate(HateType)
                          if (codes == i).any()}
        self.indexes = _indexes or {
            t: VectorIndex(self.vectors[pos], ann=ann, ann_threshold=ann_threshold)
            for t, pos in self.positions.items()
        }
        self._by_id = {r.id: r for r in self.records}

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def build(cls, records: list[MemoryRecord], encoder: Encoder, **settings) -> Memory:
        vectors = encoder.encode([r.hate_speech for r in records])
        return cls(records, vectors, encoder, **settings)

    @classmethod
    def default(cls) -> Memory:
        """The shipped exemplar bank embedded with the shipped head (built once per process)."""
        with _default_lock:
            if "memory" not in _default_cache:
                records, encoder = load_bank(), HeadEncoder(SHIPPED_HEAD)
                trained_on = encoder.head.meta.get("data_sha256")
                if trained_on and trained_on != records_digest(records):
                    log.warning("the shipped head was trained on a different bank; retrain it "
                                "(see rebuttal/memory/README.md)")
                _default_cache["memory"] = cls.build(records, encoder)
            return _default_cache["memory"]

    # --- queries --------------------------------------------------------------------------

    def query(self, text: str, k: int | None = None) -> MemoryQuery:
        """Raises rebuttal.types.InputError for empty, huge or undecodable text."""
        return self.query_batch([text], k=k)[0]

    def query_batch(self, texts: list[str], k: int | None = None) -> list[MemoryQuery]:
        texts = [check_post(t) for t in texts]
        if not texts:
            return []
        return self.query_vectors(self._encode(texts), texts, k=k)

    def query_vectors(self, vectors: np.ndarray, texts: list[str] | None = None,
                      k: int | None = None) -> list[MemoryQuery]:
        """Queries from ready-made embeddings (evaluation and benchmarks skip the encoder)."""
        k = k or self.k
        vectors = normalise(np.atleast_2d(vectors))
        texts = texts if texts is not None else [""] * len(vectors)
        per_category = {t: index.search(vectors, k) for t, index in self.indexes.items()}
        categories = list(per_category)
        results = []
        for row, text in enumerate(texts):
            scores = {t: float(per_category[t][1][row].mean()) for t in categories}
            ranked = sorted(categories, key=lambda t: (-scores[t], list(HateType).index(t)))
            predicted = ranked[0]
            neighbours = self._global_top(per_category, row, k)
            purity = sum(n.category == predicted for n in neighbours) / len(neighbours)
            ambiguous = purity < self.threshold and len(ranked) > 1
            candidates = ranked[:2] if ambiguous else ranked[:1]
            exemplars = [self.records[self.positions[t][p]]
                         for t in candidates for p in per_category[t][0][row]]
            results.append(MemoryQuery(
                text=text, k=k, threshold=self.threshold, scores=scores, predicted=predicted,
                purity=purity, ambiguous=ambiguous, candidates=candidates, exemplars=exemplars,
                neighbours=neighbours,
            ))
        return results

    def record(self, id: str) -> MemoryRecord:
        return self._by_id[id]

    def nearest(self, text: str, n: int = 1) -> list[tuple[MemoryRecord, float]]:
        """The n most similar records overall (the paper's retrieval baseline uses n=1)."""
        vector = self._encode([check_post(text)])
        per_category = {t: index.search(vector, n) for t, index in self.indexes.items()}
        return [(self._by_id[nb.id], nb.similarity) for nb in self._global_top(per_category, 0, n)]

    def _global_top(self, per_category: dict, row: int, k: int) -> list[Neighbour]:
        merged = [
            (float(sim), t, int(self.positions[t][pos]))
            for t, (positions, sims) in per_category.items()
            for pos, sim in zip(positions[row], sims[row])
        ]
        merged.sort(key=lambda item: (-item[0], item[2]))
        return [Neighbour(id=self.records[i].id, category=t, similarity=s) for s, t, i in merged[:k]]

    def _encode(self, texts: list[str]) -> np.ndarray:
        if self.encoder is None:
            raise RuntimeError("this memory has no encoder; use query_vectors() with embeddings")
        return self.encoder.encode(texts)

    # --- persistence ----------------------------------------------------------------------

    def save(self, folder: str | Path) -> Path:
        """records.jsonl, vectors.npy, memory.json, the head weights (if any) and ANN graphs."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        write_records(self.records, folder / "records.jsonl")
        np.save(folder / "vectors.npy", self.vectors)
        spec = self.encoder.spec() if self.encoder is not None else None
        if isinstance(self.encoder, HeadEncoder):
            self.encoder.head.save(folder / HEAD_FILE)
        ann = {}
        for t, index in self.indexes.items():
            if index.ann:
                index.save(folder / f"ann-{t.value}.usearch")
                ann[t.value] = {"file": f"ann-{t.value}.usearch", "agreement": index.agreement,
                              "expansion_search": index.expansion_search}
        meta = {
            "format": FORMAT_VERSION, "count": len(self.records), "dim": int(self.vectors.shape[1]),
            "k": self.k, "threshold": self.threshold, "encoder": spec,
            "encoder_name": getattr(self.encoder, "name", None), "ann": ann,
        }
        (folder / "memory.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        return folder

    @classmethod
    def load(cls, folder: str | Path, encoder: Encoder | None = None, **settings) -> Memory:
        folder = Path(folder)
        meta_path = folder / "memory.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"{folder}: not a saved memory (no memory.json)")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(f"{folder}: memory format {meta.get('format')} is not {FORMAT_VERSION}")
        records = load_records(folder / "records.jsonl")
        vectors = np.load(folder / "vectors.npy", allow_pickle=False)
        if encoder is None and meta.get("encoder"):
            encoder = encoder_from_spec(meta["encoder"], folder)
        settings = {"k": meta["k"], "threshold": meta["threshold"], **settings}
        indexes = None
        if meta.get("ann"):
            codes = np.array([list(HateType).index(r.category) for r in records])
            indexes = {}
            for i, t in enumerate(HateType):
                positions = np.flatnonzero(codes == i)
                if not len(positions):
                    continue
                entry = meta["ann"].get(t.value)
                indexes[t] = VectorIndex.restore(
                    normalise(vectors[positions]),
                    folder / entry["file"] if entry else None,
                    agreement=entry["agreement"] if entry else None,
                    expansion_search=entry.get("expansion_search", 128) if entry else 128,
                )
        return cls(records, vectors, encoder, _indexes=indexes, **settings)


_default_cache: dict[str, Memory] = {}
_default_lock = threading.Lock()
