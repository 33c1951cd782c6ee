"""llama.cpp backend (llama-cpp-python): the embedded, offline default."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from rebuttal.llm.base import ChatModel, LLMError, Message
from rebuttal.optional import require
from rebuttal.types import Usage

# llama.cpp's OpenMP threads spin at every barrier by default; when anything else wants the
# CPU (another model, the encoder, a web server) that spinning made prompt processing 8x and
# decoding 20x slower here. Sleeping waits cost almost nothing on an idle machine. OpenMP
# reads this once, when llama_cpp is first imported, so it is set before that can happen.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class LlamaCppModel(ChatModel):
    """Runs a GGUF file on the CPU.

    JSON schemas are enforced with llama.cpp's grammar-constrained decoding. llama-cpp-python
    keeps the last prompt's tokens in its KV cache and only evaluates the new suffix, so agents
    that share a prompt prefix (FIRE's analyst then generator) pay for that prefix once;
    `Usage.cached_prompt_tokens` reports how many tokens were reused.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        name: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        use_mmap: bool = False,
    ):
        llama_cpp = require("llama_cpp", "llama")
        path = Path(model_path)
        if not path.exists():
            raise LLMError(f"GGUF file not found: {path}")
        self.name = name or path.stem
        self.n_threads = n_threads or os.cpu_count() or 2  # REBUTTAL_THREADS arrives via ModelSettings
        self._lock = threading.Lock()  # one llama context is not thread-safe
        # Without mmap the weights are read once: llama.cpp repacks them for the CPU anyway, and
        # a mapped file kept both copies resident (peak RSS 1.96 GB vs 1.37 GB for the 1.5B).
        self._llm = llama_cpp.Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=self.n_threads, seed=seed,
            use_mmap=use_mmap, verbose=False,
        )

    @classmethod
    def from_registry(cls, name: str, **kwargs) -> LlamaCppModel:
        from rebuttal.llm.registry import model_path

        return cls(model_path(name), name=name, **kwargs)

    def _complete(self, messages, *, json_schema, max_tokens, temperature, seed, stop):
        kwargs = dict(max_tokens=max_tokens, temperature=temperature, seed=seed, stop=stop or None)
        if temperature == 0:
            kwargs["top_k"] = 1  # greedy, as in the paper
        if json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        with self._lock:
            cached_before = list(self._llm._input_ids)
            try:
                out = self._llm.create_chat_completion(messages=list(messages), **kwargs)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise LLMError(f"llama.cpp rejected the request: {exc}") from exc
            usage = out.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens", 0))
            reused = _common_prefix(cached_before, list(self._llm._input_ids)[:prompt_tokens])
        return (
            out["choices"][0]["message"].get("content") or "",
            Usage(
                prompt_tokens=prompt_tokens,
                completion_tokens=int(usage.get("completion_tokens", 0)),
                cached_prompt_tokens=reused,
            ),
        )

    def close(self) -> None:
        close = getattr(self._llm, "close", None)
        if close:
            close()
