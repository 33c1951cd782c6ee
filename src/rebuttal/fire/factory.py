"""Assemble FIRE (or a baseline) from the shipped defaults or user-given paths."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from rebuttal.fire.baselines import BASELINES, Baseline
from rebuttal.fire.pipeline import FirePipeline, settings_for
from rebuttal.llm import ChatModel, ModelSettings, load_model

SYSTEMS = ("fire", *BASELINES)


@lru_cache(maxsize=4)
def _memory(path: str | None):
    from rebuttal.memory import Memory

    return Memory.load(Path(path)) if path else Memory.default()


def build_system(
    system: str = "fire",
    *,
    model: ChatModel | None = None,
    model_settings: ModelSettings | None = None,
    memory_path: str | None = None,
    web: bool = False,
    ablations: Sequence[str] = (),
    **fire_overrides,
):
    """A FirePipeline (`fire`) or a Baseline (`zero-shot`, `few-shot`, `retrieval`)."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose from {', '.join(SYSTEMS)}")
    model = model or load_model(model_settings)
    settings = settings_for(ablations, **fire_overrides)
    needs_memory = system in ("few-shot", "retrieval") or (system == "fire" and (settings.use_memory or not settings.use_analyst))
    memory = _memory(memory_path) if needs_memory else None
    if system != "fire":
        return Baseline(system, model, memory)  # single calls: FIRE settings do not apply
    searcher = None
    if settings.use_evidence:
        from rebuttal.evidence import default_searcher

        searcher = default_searcher(web=web)
    return FirePipeline(model, memory, searcher, settings)


@lru_cache(maxsize=2)
def default_pipeline(*, backend: str | None = None, model: str | None = None, base_url: str | None = None,
                     threads: int | None = None, web: bool = False, memory_path: str | None = None) -> FirePipeline:
    """FIRE on the embedded default model (or the configured backend), built once per process."""
    settings = ModelSettings()
    for key, value in (("backend", backend), ("model", model), ("base_url", base_url), ("threads", threads)):
        if value is not None:
            setattr(settings, key, value)
    return build_system("fire", model_settings=settings, web=web, memory_path=memory_path)
