"""Local, offline evidence search: BM25 (bm25s) fused with MiniLM cosine similarity.

Fusion (default "blend"): score = w * max(cos, 0) + (1 - w) * lex, where lex is the BM25
score divided by the sum of the query terms' IDFs (about what a passage containing every
query term once would score), clipped to 1. Unlike min-max scaling, this keeps a one-word
accidental overlap small, so a paraphrase that only the encoder recognises can still win;
unlike reciprocal rank fusion, the score keeps its magnitude, so `min_score` can drop
passages that nothing relevant matched. RRF is available (`fusion="rrf"`);
benchmarks/results/evidence.md compares both on the silver memory queries.

Passage embeddings are cached in an index folder (cache.py): unchanged passages are never
re-embedded, changed or new ones are.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from rebuttal.evidence.base import SearchError, clean_query
from rebuttal.evidence.cache import cached_vectors, read_manifest, save_embeddings, text_hash
from rebuttal.evidence.corpus import (
    CorpusError, Passage, default_corpus_paths, load_passages, read_passages, rebuttal_home,
    write_passages,
)
from rebuttal.optional import MissingBackend, require
from rebuttal.types import EvidenceItem

Encoder = Callable[[list[str]], np.ndarray]
MINILM_NAME = "all-MiniLM-L6-v2"
DEFAULT_DENSE_WEIGHT = 0.5
DEFAULT_MIN_SCORE = 0.2
RRF_K = 60


def default_index_dir() -> Path:
    return rebuttal_home() / "evidence" / "index"


def _stemmer() -> Callable[[str], str] | None:
    """English Snowball stemming when nltk is installed (so 'migrants' matches 'migrant')."""
    try:
        from nltk.stem.snowball import SnowballStemmer
    except ImportError:
        return None
    return SnowballStemmer("english").stem


class LocalEvidenceStore:
    """Hybrid search over passages; build is lazy and thread-safe, search is read-only."""

    name = "local"

    def __init__(self, passages: Sequence[Passage], *, encoder: Encoder | None = None,
                 encoder_name: str = MINILM_NAME, index_dir: str | Path | None = None,
                 fusion: str = "blend", dense_weight: float = DEFAULT_DENSE_WEIGHT,
                 min_score: float = DEFAULT_MIN_SCORE):
        if fusion not in ("blend", "rrf", "lexical", "dense"):
            raise ValueError(f"fusion must be blend, rrf, lexical or dense, not {fusion!r}")
        if not 0.0 <= dense_weight <= 1.0:
            raise ValueError("dense_weight must be between 0 and 1")
        ids = Counter(p.id for p in passages)
        dupes = [i for i, n in ids.items() if n > 1]
        if dupes:
            raise CorpusError(f"duplicate passage ids: {dupes[:5]}")
        self.passages = list(passages)
        self.fusion = fusion
        self.dense_weight = dense_weight
        self.min_score = min_score
        self.encoder_name = encoder_name
        self.index_dir = Path(index_dir) if index_dir else None
        self._encoder = encoder
        self._lock = threading.Lock()
        self._bm25 = None
        self._idf: dict[str, float] = {}
        self._embeddings: np.ndarray | None = None
        self._stem = _stemmer()
        self.embedded_now = 0  # passages embedded by the last build (0 = all from cache)

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_files(cls, paths: Iterable[str | Path], **kwargs) -> LocalEvidenceStore:
        return cls(load_passages(paths), **kwargs)

    @classmethod
    def default(cls, **kwargs) -> LocalEvidenceStore:
        """The shipped starter corpus plus every corpus the user added, with the embedding
        cache in $REBUTTAL_HOME/evidence/index."""
        paths = default_corpus_paths()
        if not paths:
            raise CorpusError("no evidence corpus found: the starter corpus is missing and no "
                              "user corpus was added (rebuttal evidence add FILE.jsonl)")
        kwargs.setdefault("index_dir", default_index_dir())
        return cls.from_files(paths, **kwargs)

    @classmethod
    def load(cls, folder: str | Path, **kwargs) -> LocalEvidenceStore:
        """A store saved with `save`; embeddings are reused for every unchanged passage."""
        folder = Path(folder)
        if not (folder / "passages.jsonl").exists():
            raise CorpusError(f"{folder} holds no saved evidence index (passages.jsonl missing)")
        passages = read_passages(folder / "passages.jsonl")
        corpora = read_manifest(folder).get("corpora", [])
        if len(corpora) == len(passages):  # keep the original corpus names
            passages = [p.model_copy(update={"corpus": c}) for p, c in zip(passages, corpora, strict=True)]
        kwargs.setdefault("index_dir", folder)
        return cls(passages, **kwargs)

    def save(self, folder: str | Path) -> Path:
        """Write passages, embeddings and manifest to `folder` (embeds what is missing)."""
        folder = Path(folder)
        self.build()
        write_passages(self.passages, folder / "passages.jsonl")
        self._save_embeddings(folder)
        return folder

    # ---- index --------------------------------------------------------------------------
    @property
    def uses_dense(self) -> bool:
        return self.fusion != "lexical"

    def content_hash(self) -> str:
        digest = hashlib.sha256(self.encoder_name.encode())
        for passage in self.passages:
            digest.update(text_hash(passage.text).encode())
        return digest.hexdigest()[:24]

    def build(self) -> LocalEvidenceStore:
        """Build the BM25 index and load/compute embeddings (idempotent)."""
        if self._bm25 is not None:
            return self
        with self._lock:
            if self._bm25 is None:
                try:
                    if self.uses_dense:
                        self._resolve_encoder()  # once, under the lock: queries reuse it
                        self._embeddings = self._load_or_embed()
                    self._bm25 = self._build_bm25()
                except MissingBackend as exc:
                    raise SearchError(f"local evidence search is unavailable: {exc}") from exc
        return self

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        bm25s = require("bm25s", "memory")
        tokens = bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)
        if self._stem is None:
            return tokens
        stems: dict[str, str] = {}  # stem each distinct word once

        def stem(word: str) -> str:
            if word not in stems:
                stems[word] = self._stem(word)
            return stems[word]

        return [[stem(t) for t in doc] for doc in tokens]

    def _build_bm25(self):
        bm25s = require("bm25s", "memory")
        corpus_tokens = self._tokenize([p.lexical_text() for p in self.passages])
        retriever = bm25s.BM25()  # Lucene BM25 (k1=1.5, b=0.75)
        retriever.index(corpus_tokens, show_progress=False)
        n = len(corpus_tokens)
        df = Counter(t for doc in corpus_tokens for t in set(doc))
        self._idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self._oov_idf = math.log(1 + (n + 0.5) / 0.5)
        return retriever

    def _resolve_encoder(self) -> Encoder:
        if self._encoder is None:
            from rebuttal.llm.embeddings import load_minilm

            self._encoder = load_minilm().encode
        return self._encoder

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self._resolve_encoder()(texts), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise SearchError(f"encoder returned shape {vectors.shape} for {len(texts)} texts")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def _load_or_embed(self) -> np.ndarray:
        hashes = [text_hash(p.text) for p in self.passages]
        cached = cached_vectors(self.index_dir, self.encoder_name)
        missing = [i for i, h in enumerate(hashes) if h not in cached]
        fresh = self._encode([self.passages[i].text for i in missing]) if missing else None
        dim = fresh.shape[1] if fresh is not None else len(next(iter(cached.values())))
        matrix = np.zeros((len(self.passages), dim), dtype=np.float32)
        for i, h in enumerate(hashes):
            if h in cached:
                matrix[i] = cached[h]
        if fresh is not None:
            matrix[missing] = fresh
        self.embedded_now = len(missing)
        self._embeddings = matrix
        if missing and self.index_dir is not None:
            try:
                self._save_embeddings(self.index_dir)
            except OSError:
                pass  # a read-only cache folder only costs re-embedding next time
        return matrix

    def _save_embeddings(self, folder: Path) -> None:
        if self._embeddings is not None:
            save_embeddings(folder, self._embeddings, self.passages, self.encoder_name, self.content_hash())

    # ---- search -------------------------------------------------------------------------
    def scores(self, query: str) -> dict[str, np.ndarray]:
        """Per-passage lexical (normalised BM25), dense (cosine) and fused scores."""
        self.build()
        n = len(self.passages)
        q_tokens = list(dict.fromkeys(self._tokenize([query])[0]))
        known = self._bm25.get_tokens_ids(q_tokens)
        raw = self._bm25.get_scores(known) if known else np.zeros(n, dtype=np.float32)
        bound = sum(self._idf.get(t, self._oov_idf) for t in q_tokens)
        lexical = np.clip(raw / bound, 0.0, 1.0) if bound > 0 else np.zeros(n, dtype=np.float32)
        dense = np.zeros(n, dtype=np.float32)
        if self.uses_dense:
            dense = self._embeddings @ self._encode([query])[0]
        if self.fusion == "lexical":
            fused = lexical
        elif self.fusion == "dense":
            fused = np.maximum(dense, 0.0)
        elif self.fusion == "blend":
            fused = self.dense_weight * np.maximum(dense, 0.0) + (1 - self.dense_weight) * lexical
        else:
            fused = _rrf(lexical, dense)
        return {"lexical": lexical, "dense": dense, "fused": fused}

    def search(self, query: str, k: int = 3) -> list[EvidenceItem]:
        query, k = clean_query(query, k)
        if not self.passages:
            return []
        try:
            fused = self.scores(query)["fused"]
        except SearchError:
            raise
        except Exception as exc:  # an index or encoder failure must not crash the pipeline
            raise SearchError(f"local evidence search failed: {type(exc).__name__}: {exc}") from exc
        order = np.argsort(-fused, kind="stable")[:k]
        floor = self.min_score if self.fusion != "rrf" else 0.0
        return [self._item(int(i), float(fused[i])) for i in order if fused[i] > floor]

    def _item(self, index: int, score: float) -> EvidenceItem:
        p = self.passages[index]
        return EvidenceItem(id=p.id, text=p.text, source=p.source, url=p.url, date=p.date,
                            tier=p.tier, score=round(score, 4))

    def get(self, passage_id: str) -> Passage | None:
        return next((p for p in self.passages if p.id == passage_id), None)

    def __len__(self) -> int:
        return len(self.passages)


def _rrf(lexical: np.ndarray, dense: np.ndarray, depth: int = 100) -> np.ndarray:
    """Reciprocal rank fusion (Cormack et al. 2009) of the two rankings' top `depth`;
    passages with no lexical match get no lexical term."""
    fused = np.zeros_like(dense, dtype=np.float64)
    for scores, eligible in ((lexical, lexical > 0), (dense, np.ones_like(dense, dtype=bool))):
        order = [i for i in np.argsort(-scores, kind="stable")[:depth] if eligible[i]]
        for rank, i in enumerate(order, start=1):
            fused[i] += 1.0 / (RRF_K + rank)
    return fused
