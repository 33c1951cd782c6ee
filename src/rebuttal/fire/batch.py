"""`rebuttal run --system fire|zero-shot|few-shot|retrieval`: resumable JSONL batch runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rebuttal.data.batch import BatchSummary, items_from_rows, read_json_rows, run_batch
from rebuttal.fire.factory import build_system
from rebuttal.llm import ChatModel, ModelSettings


def run_fire_batch(
    input_path: Path,
    output_path: Path,
    *,
    system: str = "fire",
    ablations: Sequence[str] = (),
    model: ChatModel | None = None,
    model_settings: ModelSettings | None = None,
    memory_path: str | None = None,
    web: bool = False,
    concurrency: int = 1,
    retry_errors: bool = False,
    progress: bool = True,
    **fire_overrides,
) -> BatchSummary:
    """Rows `{id, text}` (or silver rows with `hate_speech`) in; one FireResult row per id out."""
    items = list(items_from_rows(read_json_rows(input_path)))  # a missing file fails before any model loads
    runner = build_system(system, model=model, model_settings=model_settings,
                          memory_path=memory_path, web=web, ablations=ablations, **fire_overrides)
    return run_batch(items, lambda item: runner.respond(item.text, id=item.id), output_path,
                     concurrency=concurrency, retry_errors=retry_errors, progress=progress)
