"""`rebuttal run --system fire|zero-shot|few-shot|retrieval`: resumable JSONL batch runs, on
this machine (`engine="local"`) or on Ray Data (`engine="ray"`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rebuttal.data.engines import run_rows
from rebuttal.data.batch import BatchItem, BatchSummary, items_from_rows, read_rows
from rebuttal.fire.factory import build_system
from rebuttal.llm import ChatModel, ModelSettings


@dataclass
class FireWork:
    """What one runner (this process, or each Ray actor) needs to answer a row: picklable
    settings; calling it builds the system once and returns the per-row function."""

    system: str = "fire"
    ablations: Sequence[str] = ()
    model: ChatModel | None = None
    model_settings: ModelSettings | None = None
    memory_path: str | None = None
    web: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)

    def __call__(self):
        runner = build_system(self.system, model=self.model, model_settings=self.model_settings,
                              memory_path=self.memory_path, web=self.web, ablations=self.ablations,
                              **self.overrides)

        def process(item: BatchItem):
            return runner.respond(item.text, id=item.id)

        return process


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
    engine: str = "local",
    ray=None,
    **fire_overrides,
) -> BatchSummary:
    """Rows `{id, text}` (or silver rows with `hate_speech`; JSONL or Parquet) in; one FireResult
    row per id out. `ray`: a `rebuttal.data.ray_runner.RayOptions` for `engine="ray"`."""
    items = list(items_from_rows(read_rows(input_path)))  # a missing file fails before any model loads
    work = FireWork(system, tuple(ablations), model, model_settings, memory_path, web, dict(fire_overrides))
    return run_rows(items, work, output_path, engine=engine, ray=ray, concurrency=concurrency,
                    retry_errors=retry_errors, progress=progress)
