"""`rebuttal run --system spar-tagger|spar|spar-0shot|spar+tagger|spar-tagger+audit`: resumable
batch parsing of a JSONL or gold file, on this machine (`engine="local"`) or on Ray Data (`engine="ray"`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from rebuttal.data.engines import run_rows
from rebuttal.data.batch import BatchItem, BatchSummary, items_from_rows, read_rows
from rebuttal.data.gold import is_state_toxicn_row, is_tbo_row
from rebuttal.llm import ModelSettings
from rebuttal.spar.pipeline import SparParser
from rebuttal.spar.settings import DEFAULT_SYSTEM, SYSTEMS
from rebuttal.spar.systems import default_parser
from rebuttal.spar.traces import export_traces, teacher_rows

_CJK = re.compile(r"[\u4e00-\u9fff]")


def item_lang(item: BatchItem, lang: str | None) -> str:
    """The row's own `lang`, else the --lang option, else the gold format, else by script."""
    row = item.fields
    if row.get("lang") in ("en", "zh"):
        return row["lang"]
    if lang:
        return lang
    if is_state_toxicn_row(row):
        return "zh"
    if is_tbo_row(row):
        return "en"
    return "zh" if isinstance(item.text, str) and _CJK.search(item.text) else "en"


@dataclass
class SparWork:
    """What one runner (this process, or each Ray actor) needs to parse a row: picklable
    settings; calling it builds the parser once and returns the per-row function. A prebuilt
    `parser` serves local runs only (a SparParser holds a lock and does not pickle); on Ray each
    actor builds its own from the settings."""

    system: str = DEFAULT_SYSTEM
    lang: str | None = None
    track: str | None = None
    model_settings: ModelSettings | None = None
    lexicon: str | Path | None = None
    traces: str | Path | None = None
    source: str = ""
    parser: SparParser | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    def build_parser(self):
        if self.parser is not None:
            return self.parser
        return default_parser(self.model_settings, system=self.system, lexicon=self.lexicon, **self.settings)

    def __call__(self):
        parser = self.build_parser()

        def process(item: BatchItem):
            item_track = self.track
            if item_track is None and isinstance(item.fields.get("track"), str):
                item_track = item.fields["track"]
            detail = parser.parse_detailed(item.text, lang=item_lang(item, self.lang), track=item_track, id=item.id)
            if self.traces is not None and detail.audits:
                export_traces(teacher_rows(detail, source=self.source, split=item.fields.get("split"),
                                           teacher=parser.model.name), self.traces)
            return detail.result

        return process


def run_spar_batch(
    input_path: str | Path,
    output_path: str | Path,
    *,
    system: str = DEFAULT_SYSTEM,
    lang: str | None = None,
    track: str | None = None,
    model_settings: ModelSettings | None = None,
    lexicon: str | Path | None = None,
    concurrency: int = 1,
    retry_errors: bool = False,
    traces: str | Path | None = None,
    limit: int | None = None,
    progress: bool = True,
    parser: SparParser | None = None,
    engine: str = "local",
    ray=None,
    **settings,
) -> BatchSummary:
    """Parse every post of `input_path` (JSONL `{id, text, lang}`, STATE-ToxiCN JSON, our TBO
    JSONL as they are, or Parquet) into `output_path`, one SparResult row per id, resuming where
    it stopped. With `traces`, teacher rows (distillation schema) are appended there (on Ray,
    by every actor: a path every actor's machine can write)."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose one of {', '.join(SYSTEMS)}")
    if lang not in (None, "en", "zh"):
        raise ValueError(f"lang must be en or zh, got {lang!r}")
    if parser is not None and engine == "ray":
        raise ValueError("a prebuilt parser does not go to Ray actors; give the settings and let each actor build one")
    items = items_from_rows(read_rows(Path(input_path)))
    if limit is not None:
        items = islice(items, limit)
    work = SparWork(system, lang, track, model_settings, lexicon, traces, Path(input_path).name, parser, settings)
    if engine == "local":  # the parser loads before the input is walked, as before
        work.parser = work.build_parser()
    return run_rows(items, work, Path(output_path), engine=engine, ray=ray, concurrency=concurrency,
                    retry_errors=retry_errors, progress=progress)
