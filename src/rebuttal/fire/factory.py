"""Assemble FIRE (or a baseline) from the shipped defaults or user-given paths."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from rebuttal.config import BLOCKS, CATEGORY_MODEL, DRAFT_SCORE_MODEL, GATE_MODEL, env, env_list
from rebuttal.fire.baselines import BASELINES, Baseline
from rebuttal.fire.pipeline import FirePipeline, settings_for
from rebuttal.llm import ChatModel, ModelSettings, load_model

SYSTEMS = ("fire", *BASELINES)


@lru_cache(maxsize=4)
def _memory(path: str | None):
    from rebuttal.memory import Memory

    return Memory.load(Path(path)) if path else Memory.default()


@lru_cache(maxsize=2)
def _learned(category_path: str | None, gate_path: str | None, draft_score_path: str | None):
    """MiniLM, the category model, the hate gate and the draft score (rebuttal.learned; shipped by
    default)."""
    from rebuttal.learned import CategoryModel, HateGate
    from rebuttal.learned.category import SHIPPED as SHIPPED_CATEGORY
    from rebuttal.learned.draft_score import DraftScore
    from rebuttal.learned.gate import SHIPPED as SHIPPED_GATE
    from rebuttal.llm.embeddings import load_minilm

    return (load_minilm(), CategoryModel.load(category_path or SHIPPED_CATEGORY),
            HateGate.load(gate_path or SHIPPED_GATE), DraftScore.load(draft_score_path))


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
    needs_memory = system in ("few-shot", "retrieval") or (system == "fire" and settings.use_memory)
    memory = _memory(memory_path) if needs_memory else None
    if system != "fire":
        return Baseline(system, model, memory)  # single calls: FIRE settings do not apply
    searcher = None
    if settings.use_evidence:
        from rebuttal.evidence import default_searcher

        searcher = default_searcher(web=web)
    encoder, category_model, gate, draft_score = _learned(env(CATEGORY_MODEL), env(GATE_MODEL), env(DRAFT_SCORE_MODEL))
    category_memory = _memory(None) if category_model.uses_memory and memory is not None else None
    return FirePipeline(model, memory, searcher, settings, encoder=encoder, category_model=category_model,
                        gate=gate, category_memory=category_memory, draft_score=draft_score,
                        block_paths=env_list(BLOCKS) or None)


@lru_cache(maxsize=2)
def default_pipeline(model_settings: ModelSettings | None = None, *, web: bool = False,
                     memory_path: str | None = None) -> FirePipeline:
    """FIRE on the configured model (the embedded default unless `model_settings` says
    otherwise), built once per process and settings."""
    return build_system("fire", model_settings=model_settings or ModelSettings(), web=web,
                        memory_path=memory_path)
