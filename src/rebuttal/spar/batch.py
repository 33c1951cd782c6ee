"""`rebuttal run --system spar|spar-0shot`: resumable batch parsing of a JSONL or gold file."""

from __future__ import annotations

import re
from itertools import islice
from pathlib import Path

from rebuttal.data.batch import BatchItem, BatchSummary, items_from_rows, read_json_rows, run_batch
from rebuttal.data.spar_datasets import is_state_toxicn_row, is_tbo_row
from rebuttal.spar.pipeline import SparParser, default_parser
from rebuttal.spar.traces import export_traces, teacher_rows

SYSTEMS = ("spar", "spar-0shot")
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


def run_spar_batch(
    input_path: str | Path,
    output_path: str | Path,
    *,
    system: str = "spar",
    lang: str | None = None,
    track: str | None = None,
    backend: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    lexicon: str | Path | None = None,
    concurrency: int = 1,
    retry_errors: bool = False,
    traces: str | Path | None = None,
    limit: int | None = None,
    progress: bool = True,
    parser: SparParser | None = None,
    **settings,
) -> BatchSummary:
    """Parse every post of `input_path` (JSONL `{id, text, lang}`, STATE-ToxiCN JSON or our TBO
    JSONL as they are) into `output_path`, one SparResult row per id, resuming where it
    stopped. With `traces`, teacher rows (distillation schema) are appended there."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose one of {', '.join(SYSTEMS)}")
    if lang not in (None, "en", "zh"):
        raise ValueError(f"lang must be en or zh, got {lang!r}")
    if parser is None:
        parser = default_parser(backend=backend, model=model, base_url=base_url,
                                zero_shot=system == "spar-0shot", lexicon_path=lexicon, **settings)
    items = items_from_rows(read_json_rows(Path(input_path)))
    if limit is not None:
        items = islice(items, limit)
    source = Path(input_path).name

    def process(item: BatchItem):
        item_track = track
        item_language = item_lang(item, lang)
        if item_track is None and isinstance(item.fields.get("track"), str):
            item_track = item.fields["track"]
        detail = parser.parse_detailed(item.text, lang=item_language, track=item_track, id=item.id)
        if traces is not None and detail.audits:
            export_traces(teacher_rows(detail, source=source, split=item.fields.get("split"),
                                       teacher=parser.model.name), traces)
        return detail.result

    return run_batch(items, process, Path(output_path), concurrency=concurrency,
                     retry_errors=retry_errors, progress=progress)
