"""The model options every command shares (typer annotations), turned into `ModelSettings`.

    def my_command(backend: BackendOpt = None, model: ModelOpt = None,
                   base_url: BaseUrlOpt = None, threads: ThreadsOpt = None):
        settings = settings_from_options(backend, model, base_url, threads)
"""

from __future__ import annotations

from typing import Annotated

import typer

from rebuttal.llm.factory import Backend, ModelSettings

BackendOpt = Annotated[Backend | None, typer.Option(help="llama (default), openai or transformers; env REBUTTAL_BACKEND")]
ModelOpt = Annotated[str | None, typer.Option(help="Registry name, GGUF path, served model or HF id; env REBUTTAL_MODEL")]
BaseUrlOpt = Annotated[str | None, typer.Option(help="OpenAI-compatible base URL; env REBUTTAL_BASE_URL")]
ThreadsOpt = Annotated[int | None, typer.Option(help="CPU threads for llama.cpp; env REBUTTAL_THREADS")]


def settings_from_options(backend: Backend | str | None = None, model: str | None = None,
                          base_url: str | None = None, threads: int | None = None) -> ModelSettings:
    """The environment's ModelSettings with the options that were given."""
    return ModelSettings.of(backend=backend, model=model, base_url=base_url, threads=threads)
