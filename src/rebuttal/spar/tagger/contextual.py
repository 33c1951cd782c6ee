"""Contextual character vectors from the embedded chat model: the hidden state of the Qwen GGUF
(llama.cpp in embedding mode, no pooling) for each character of a post. llama.cpp gives a
model's last layer; for layer N the GGUF is first cut to its first N blocks
(`pretrained.first_layers`, `rebuttal spar train --context-layers N`).

A character gets the state of the token that completes it (the model reads left to right, so
that state has seen the whole character and everything before it); the tagger's BiLSTM adds
the right-hand context. No text is generated. One forward pass per post (~0.4 s for a
40-character post with the 1.5B on 2 threads), so training computes the states once and keeps
them in a cache folder (float16 shards, ~3 KB per character).
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import numpy as np

from rebuttal.optional import require


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class ContextualStates:
    def __init__(self, gguf_path: str | Path, threads: int = 2, max_tokens: int = 512,
                 cache: str | Path | None = None):
        self.path, self.threads, self.max_tokens = Path(gguf_path), threads, max_tokens
        self._llm = None
        self.cache = StateCache(cache, source=self.path.name) if cache else None
        self.dim = (self.cache.dim if self.cache is not None else 0) or self.llm.n_embd()  # a full cache spares the model

    @property
    def llm(self):
        if self._llm is None:  # not loaded when the cache holds every post asked for
            llama_cpp = require("llama_cpp", "llama")
            n = self.max_tokens
            self._llm = llama_cpp.Llama(str(self.path), embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE,
                                        n_ctx=n, n_batch=n, n_ubatch=n, n_threads=self.threads, verbose=False)
        return self._llm

    def char_states(self, text: str) -> np.ndarray:
        """(len(text), dim) float32; characters past the token limit get zeros."""
        if self.cache is not None and (hit := self.cache.get(text)) is not None:
            return hit.astype(np.float32)
        out = self._compute(text)
        if self.cache is not None:
            self.cache.put(text, out)
        return out

    def _compute(self, text: str) -> np.ndarray:
        out = np.zeros((len(text), self.dim), dtype=np.float32)
        tokens = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)[:self.max_tokens]
        if not tokens:
            return out
        states = np.asarray(self.llm.embed(self.llm.detokenize(tokens).decode("utf-8", "ignore")), dtype=np.float32)
        if len(states) != len(tokens):
            raise ValueError(f"llama.cpp returned {len(states)} states for {len(tokens)} tokens")
        ends = np.cumsum([len(self.llm.detokenize([t])) for t in tokens])  # byte offset after each token
        byte_end = np.cumsum([len(ch.encode("utf-8")) for ch in text])  # byte offset after each character
        index = np.searchsorted(ends, byte_end)  # the token holding each character's last byte
        inside = index < len(tokens)
        out[inside] = states[index[inside]]
        return out


class StateCache:
    """Character states by text, in `shard*.npz` files of a folder; `flush()` writes new ones.
    Each shard names the model file (`source`) its states came from, and only that model's
    shards are read, so a folder shared by several models or layers never mixes their states
    (shards written before sources were recorded are read by any)."""

    SHARD = 400

    def __init__(self, folder: str | Path, source: str = ""):
        self.folder, self.source = Path(folder), source
        self.folder.mkdir(parents=True, exist_ok=True)
        self._states: dict[str, np.ndarray] = {}
        self._new: dict[str, np.ndarray] = {}
        for shard in sorted(self.folder.glob("shard*.npz")):
            with np.load(shard) as data:
                if "source" in data and str(data["source"]) != source:
                    continue
                bounds = np.cumsum([0, *data["lengths"]])
                states = data["states"]
                for i, key in enumerate(data["keys"]):
                    self._states[str(key)] = states[bounds[i]:bounds[i + 1]]
        self.dim = next((int(v.shape[1]) for v in self._states.values()), 0)

    def get(self, text: str) -> np.ndarray | None:
        return self._states.get(text_key(text))

    def put(self, text: str, states: np.ndarray) -> None:
        key = text_key(text)
        self._states[key] = self._new[key] = states.astype(np.float16)
        if len(self._new) >= self.SHARD:
            self.flush()

    def flush(self) -> None:
        if not self._new:
            return
        arrays = list(self._new.values())
        # Written under a private name, then linked to the first free shard name: two trainings
        # sharing the folder never write the same file, and no reader sees a half-written shard.
        temporary = self.folder / f".writing-{os.getpid()}-{threading.get_ident()}.npz"
        np.savez(temporary, keys=np.array(list(self._new)), lengths=np.array([len(a) for a in arrays]),
                 states=np.concatenate(arrays), source=np.array(self.source))
        index = len(list(self.folder.glob("shard*.npz")))
        while True:
            try:
                os.link(temporary, self.folder / f"shard{index:03d}.npz")
                break
            except FileExistsError:
                index += 1
        temporary.unlink()
        self._new.clear()
