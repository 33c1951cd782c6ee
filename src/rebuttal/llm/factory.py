"""Build a ChatModel from settings (CLI flags or REBUTTAL_* environment variables)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rebuttal.llm.base import ChatModel
from rebuttal.llm.registry import DEFAULT_MODEL

BACKENDS = ("llama", "openai", "transformers")


@dataclass
class ModelSettings:
    backend: str = field(default_factory=lambda: os.environ.get("REBUTTAL_BACKEND", "llama"))
    model: str = field(default_factory=lambda: os.environ.get("REBUTTAL_MODEL", DEFAULT_MODEL))
    base_url: str = field(
        default_factory=lambda: os.environ.get("REBUTTAL_BASE_URL", "http://localhost:8000/v1")
    )
    threads: int | None = None
    n_ctx: int = 4096
    timeout_s: float = 120.0
    max_concurrency: int = 8


def load_model(settings: ModelSettings | None = None, **overrides) -> ChatModel:
    """`llama` takes a registry name (qwen2.5-1.5b, ...) or a GGUF path; `openai` a served model
    name plus `base_url`; `transformers` a Hugging Face id or folder."""
    settings = settings or ModelSettings()
    for key, value in overrides.items():
        if value is not None:
            setattr(settings, key, value)
    if settings.backend == "llama":
        from rebuttal.llm.llama_cpp import LlamaCppModel

        if settings.model.endswith(".gguf") or Path(settings.model).is_file():
            return LlamaCppModel(settings.model, n_ctx=settings.n_ctx, n_threads=settings.threads)
        return LlamaCppModel.from_registry(
            settings.model, n_ctx=settings.n_ctx, n_threads=settings.threads
        )
    if settings.backend == "openai":
        from rebuttal.llm.openai_compat import OpenAICompatModel

        return OpenAICompatModel(
            settings.model, settings.base_url, timeout_s=settings.timeout_s,
            max_concurrency=settings.max_concurrency,
        )
    if settings.backend == "transformers":
        from rebuttal.llm.transformers_backend import TransformersModel

        return TransformersModel(settings.model)
    raise ValueError(f"unknown backend {settings.backend!r}; choose one of {', '.join(BACKENDS)}")
