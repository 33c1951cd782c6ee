"""The evidence store's embedding cache: embeddings.npy + manifest.json in an index folder.

The manifest holds one content hash per passage, so unchanged passages are never re-embedded
and changed or new ones are; a cache written by another encoder is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rebuttal.evidence.corpus import Passage


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def read_manifest(folder: Path) -> dict:
    try:
        return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def cached_vectors(folder: Path | None, encoder_name: str) -> dict[str, np.ndarray]:
    """Embeddings by passage hash (empty when absent, stale or from another encoder)."""
    if folder is None:
        return {}
    manifest = read_manifest(folder)
    path = folder / "embeddings.npy"
    if manifest.get("encoder") != encoder_name or not path.exists():
        return {}
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return {}
    hashes = manifest.get("passage_hashes", [])
    if len(hashes) != len(vectors):
        return {}
    return dict(zip(hashes, vectors, strict=True))


def save_embeddings(folder: Path, embeddings: np.ndarray, passages: Sequence[Passage], encoder_name: str,
                    content_hash: str) -> None:
    """Written to temporary files and renamed, so a crash never leaves a half-written cache."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "embeddings.tmp.npy"
    np.save(tmp, embeddings, allow_pickle=False)
    os.replace(tmp, folder / "embeddings.npy")
    manifest = {
        "encoder": encoder_name,
        "content_hash": content_hash,
        "passage_hashes": [text_hash(p.text) for p in passages],
        "ids": [p.id for p in passages],
        "corpora": [p.corpus for p in passages],
    }
    (folder / "manifest.tmp.json").write_text(json.dumps(manifest), encoding="utf-8")
    os.replace(folder / "manifest.tmp.json", folder / "manifest.json")
