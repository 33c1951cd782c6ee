"""Build a ChatModel from `ModelSettings`, the one description of which model to run.

Every entry point (CLI, FIRE, SPAR, the server, benchmarks) builds a `ModelSettings` (defaults
from REBUTTAL_* variables, see `rebuttal.config`) and calls `load_model(settings)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from pathlib import Path

from rebuttal import config
from rebuttal.llm.base import ChatModel
from rebuttal.llm.registry import DEFAULT_MODEL


class Backend(StrEnum):
    llama = "llama"  # embedded llama.cpp (default, offline)
    openai = "openai"  # any OpenAI-compatible HTTP server
    transformers = "transformers"  # a Hugging Face model in-process


BACKENDS = tuple(b.value for b in Backend)


@dataclass(frozen=True)
class ModelSettings:
    """Which chat model to run and how. Frozen (and hashable), so cached factories can key on it;
    derive variants with `settings.with_(model=...)`."""

    backend: str = field(default_factory=lambda: config.env(config.BACKEND, config.DEFAULT_BACKEND))
    model: str = field(default_factory=lambda: config.env(config.MODEL, DEFAULT_MODEL))
    base_url: str = field(default_factory=lambda: config.env(config.BASE_URL, config.DEFAULT_BASE_URL))
    threads: int | None = field(default_factory=config.threads)
    n_ctx: int = 4096
    timeout_s: float = 120.0
    max_concurrency: int = 8

    def __post_init__(self) -> None:
        backend = self.backend.value if isinstance(self.backend, Backend) else str(self.backend)
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        object.__setattr__(self, "backend", backend)

    def with_(self, **overrides) -> ModelSettings:
        """A copy with the given fields replaced; None values are ignored (unset CLI options)."""
        known = {f.name for f in fields(self)}
        unknown = set(overrides) - known
        if unknown:
            raise ValueError(f"unknown model setting(s) {sorted(unknown)}; use {', '.join(sorted(known))}")
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @classmethod
    def of(cls, **overrides) -> ModelSettings:
        """Defaults (environment) with the non-None `overrides` applied."""
        return cls().with_(**overrides)


def load_model(settings: ModelSettings | None = None, **overrides) -> ChatModel:
    """`llama` takes a registry name (qwen2.5-1.5b, ...) or a GGUF path; `openai` a served model
    name plus `base_url`; `transformers` a Hugging Face id or folder. Keyword `overrides`
    (None ignored) are applied to `settings` first."""
    settings = (settings or ModelSettings()).with_(**overrides)
    if settings.backend == Backend.llama:
        from rebuttal.llm.llama_cpp import LlamaCppModel

        if settings.model.endswith(".gguf") or Path(settings.model).is_file():
            return LlamaCppModel(settings.model, n_ctx=settings.n_ctx, n_threads=settings.threads)
        return LlamaCppModel.from_registry(
            settings.model, n_ctx=settings.n_ctx, n_threads=settings.threads
        )
    if settings.backend == Backend.openai:
        from rebuttal.llm.openai_compat import OpenAICompatModel

        return OpenAICompatModel(
            settings.model, settings.base_url, timeout_s=settings.timeout_s,
            max_concurrency=settings.max_concurrency,
        )
    from rebuttal.llm.transformers_backend import TransformersModel

    return TransformersModel(settings.model)
