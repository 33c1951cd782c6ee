"""Hidden states of the embedded chat model (llama.cpp in embedding mode, no pooling), as features
for small trained models: the SPAR tagger's contextual character vectors, the hate gates, the
category model and the draft score. No text is generated. llama.cpp gives a model's last layer;
for layer N the GGUF is first cut to its first N blocks (`first_layers`, written once into the
cache folder).

A character gets the state of the token that completes it (the model reads left to right, so
that state has seen the whole character and everything before it). One forward pass per text
(~0.07-0.3 s on 2 threads, by length and layers; the output head is skipped, `StopAfterStates`),
so training computes the states once and keeps them in a cache folder (float16 shards, ~3 KB per
character).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from rebuttal import config
from rebuttal.optional import require


RECENT = 4  # texts whose states a reader keeps in memory
# The tensor llama.cpp reads embedding-mode states from (pooling none: the normed last layer).
STATES_TENSOR = b"result_embd_pooled"


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class ContextualStates:
    def __init__(self, gguf_path: str | Path, threads: int = 2, max_tokens: int = 512,
                 cache: str | Path | None = None):
        self.path, self.threads, self.max_tokens = Path(gguf_path), threads, max_tokens
        self._llm = None
        self._lock = threading.Lock()  # one llama.cpp context: one forward pass at a time
        self._load_lock = threading.Lock()
        self.cache = StateCache(cache, source=self.path.name) if cache else None
        self._dim: int | None = None
        self.stop: StopAfterStates | None = None  # set when the model loads
        # The last few texts' states: FIRE's hate gate and category model read the same post.
        self._recent: OrderedDict[tuple[str, int], tuple[list[int], np.ndarray]] = OrderedDict()

    @property
    def dim(self) -> int:
        """Read when first needed, so opening a reader loads no model (a tagger's ensemble members
        each hold one); a filled cache knows it and spares the model altogether."""
        if self._dim is None:
            self._dim = (self.cache.dim if self.cache is not None else 0) or self.llm.n_embd()
        return self._dim

    @property
    def llm(self):
        with self._load_lock:  # loaded once, even when two threads ask first at the same time
            if self._llm is None:  # not loaded when the cache holds every post asked for
                self._llm = self._load()
        return self._llm

    def _load(self):
        llama_cpp = require("llama_cpp", "llama")
        n = self.max_tokens
        llm = llama_cpp.Llama(str(self.path), embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE,
                              n_ctx=n, n_batch=n, n_ubatch=n, n_threads=self.threads, verbose=False)
        self.stop = StopAfterStates.install(llm)
        return llm

    def char_states(self, text: str) -> np.ndarray:
        """(len(text), dim) float32; characters past the token limit get zeros."""
        if self.cache is not None and (hit := self.cache.get(text)) is not None:
            return hit.astype(np.float32)
        out = self._compute(text)
        if self.cache is not None:
            self.cache.put(text, out)
        return out

    def token_states(self, text: str, max_tokens: int | None = None) -> tuple[list[int], np.ndarray]:
        """The first `max_tokens` tokens of `text` (at most the reader's own limit) and their
        states, (n_tokens, dim) float32. The model reads left to right, so the states of a text's
        first N tokens do not depend on the context's size: readers with different limits share one."""
        limit = min(max_tokens or self.max_tokens, self.max_tokens)
        key = (text, limit)
        with self._lock:
            if key in self._recent:
                self._recent.move_to_end(key)
                return self._recent[key]
            tokens, states = self._forward(text, limit)
            self._recent[key] = (tokens, states)
            if len(self._recent) > RECENT:
                self._recent.popitem(last=False)
        return tokens, states

    def _forward(self, text: str, limit: int) -> tuple[list[int], np.ndarray]:
        tokens = self._tokens(text.encode("utf-8"))
        while len(tokens) > limit:
            # The cut text can tokenize differently at its edge (two tokens merge, or a split
            # character is dropped): the states are those of the text the model reads.
            tokens = self._tokens(self.llm.detokenize(tokens[:limit]).decode("utf-8", "ignore").encode())
        if not tokens:
            return tokens, np.zeros((0, self.dim), dtype=np.float32)
        states = np.asarray(self.llm.embed(self.llm.detokenize(tokens).decode("utf-8", "ignore")), dtype=np.float32)
        if len(states) != len(tokens):
            raise ValueError(f"llama.cpp returned {len(states)} states for {len(tokens)} tokens")
        return tokens, states

    def count_tokens(self, text: str) -> int:
        return len(self._tokens(text.encode("utf-8")))

    def _tokens(self, data: bytes) -> list[int]:
        return self.llm.tokenize(data, add_bos=False, special=False)

    def _compute(self, text: str) -> np.ndarray:
        out = np.zeros((len(text), self.dim), dtype=np.float32)
        tokens, states = self.token_states(text)
        if not tokens:
            return out
        ends = np.cumsum([len(self.llm.detokenize([t])) for t in tokens])  # byte offset after each token
        byte_end = np.cumsum([len(ch.encode("utf-8")) for ch in text])  # byte offset after each character
        index = np.searchsorted(ends, byte_end)  # the token holding each character's last byte
        inside = index < len(tokens)
        out[inside] = states[index[inside]]
        return out


class StopAfterStates:
    """Stops llama.cpp's graph once the states are computed. Embedding mode still runs the output
    head (151k words for Qwen2.5: 15-30% of a pass through 14 layers, the more the shorter the
    text) and throws the logits away; an eval callback that asks to see only the states tensor
    and answers "stop" when shown it skips that. The states are bit-identical (tested). If a
    llama.cpp version names the tensor otherwise, nothing stops and the whole graph runs."""

    def __init__(self, llama_cpp):
        self.get_name = llama_cpp.llama_cpp._lib.ggml_get_name
        self.get_name.restype, self.get_name.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
        self.callback = llama_cpp.ggml_backend_sched_eval_callback(self._see)  # kept alive here
        self.stops = 0

    def _see(self, tensor, ask: bool, _user) -> bool:
        if ask:  # "do you want to see this tensor?"
            return self.get_name(tensor) == STATES_TENSOR
        self.stops += 1
        return False  # shown the states: compute no further

    @classmethod
    def install(cls, llm) -> StopAfterStates | None:
        """Recreate `llm`'s context with the callback (llama-cpp-python sets callbacks only when a
        context is made); None, and the plain context, where this llama-cpp-python lacks the hooks."""
        import llama_cpp

        try:
            from llama_cpp._utils import suppress_stdout_stderr

            stop = cls(llama_cpp)
            params = llm.context_params
            params.cb_eval = stop.callback
            with suppress_stdout_stderr(disable=False):  # llama.cpp's context log, as Llama(verbose=False) does
                context = llama_cpp._internals.LlamaContext(model=llm._model, params=params, verbose=False)
        except (AttributeError, ImportError, ValueError):
            return None
        llm._ctx.close()
        llm._ctx = llm._stack.enter_context(contextlib.closing(context))
        return stop


class StateCache:
    """States by text (a row per character, or one pooled row), in `shard*.npz` files of a folder;
    `flush()` writes new ones.
    Each shard names the model file (`source`) its states came from, and only that model's
    shards are read, so a folder shared by several models or layers never mixes their states
    (shards written before sources were recorded are read by any)."""

    SHARD = 400

    def __init__(self, folder: str | Path, source: str = "", dtype=np.float16):
        self.folder, self.source, self.dtype = Path(folder), source, dtype
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
        self._states[key] = self._new[key] = states.astype(self.dtype)
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


def first_layers(gguf_path: str | Path, layers: int) -> Path:
    """A copy of a GGUF that keeps only its first `layers` transformer blocks, written once into
    the cache folder: llama.cpp's embedding mode then returns layer N's states (the model's
    final norm applied), where it otherwise gives only the last layer's."""
    gguf = require("gguf", "llama")
    source = Path(gguf_path).resolve()
    tag = hashlib.sha1(str(source).encode()).hexdigest()[:8]
    target = config.cache_dir() / "model-layers" / f"{source.stem}-{tag}.first{layers}.gguf"
    if target.exists():
        return target
    reader = gguf.GGUFReader(str(source))
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    blocks = f"{arch}.block_count"
    total = reader.fields[blocks].contents()
    if not 0 < layers < total:
        raise ValueError(f"{source.name} has {total} layers; keep 1 to {total - 1} of them, not {layers}")
    kept = [t for t in reader.tensors if not t.name.startswith("blk.") or int(t.name.split(".")[1]) < layers]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    writer = gguf.GGUFWriter(str(partial), arch=arch, endianess=reader.endianess)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # the writer adds these itself
        kind = field.types[0]
        writer.add_key_value(field.name, layers if field.name == blocks else field.contents(), kind,
                             sub_type=field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None)
    for tensor in kept:
        writer.add_tensor_info(tensor.name, tensor.data.shape, tensor.data.dtype, tensor.data.nbytes, tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for tensor in kept:
        writer.write_tensor_data(tensor.data, tensor_endianess=reader.endianess)
    writer.close()
    partial.replace(target)  # whole or not at all
    return target


def open_states(model: str, cache: str | Path | None = None, layers: int | None = None,
                max_tokens: int = 512, threads: int = 2) -> ContextualStates:
    """The states of an embedded model's name (or a GGUF path) after its first `layers` layers
    (default: all of them), read on `threads` CPU threads."""
    from rebuttal.llm.registry import gguf_file

    path = gguf_file(model)
    return ContextualStates(first_layers(path, layers) if layers else path, cache=cache, max_tokens=max_tokens,
                            threads=threads)
