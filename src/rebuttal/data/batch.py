"""Resumable batch runs: JSONL (or Parquet) in, JSONL out, one row per input id, errors recorded
per item. `row_for` is the one place a row's work happens: the local runner here and the Ray
runner (`data/ray_runner.py`) both call it, so their rows cannot drift."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from rebuttal.types import storable

Process = Callable[["BatchItem"], BaseModel | dict]
ProcessFactory = Callable[[], Process]  # picklable; called once per runner (per Ray actor)
ENGINES = ("local", "ray")

TEXT_FIELDS = ("text", "hate_speech", "content", "post")


@dataclass
class BatchItem:
    id: str
    text: Any  # validated by the worker, so a bad text becomes an error row, not a crash
    fields: dict = field(default_factory=dict)


@dataclass
class BatchSummary:
    total: int = 0
    skipped: int = 0
    done: int = 0
    errors: int = 0
    seconds: float = 0.0

    @property
    def rows_per_s(self) -> float:
        return (self.done + self.errors) / self.seconds if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        rate = f" in {self.seconds:.1f}s ({self.rows_per_s:.2f} rows/s)" if self.seconds else ""
        return (f"{self.done} done, {self.errors} errors, {self.skipped} skipped (already in output) "
                f"of {self.total}{rate}")


class InputFileError(ValueError):
    """The input file cannot be read at all."""


def read_json_rows(path: Path) -> Iterator[dict | Exception]:
    """Rows of a JSONL file or a JSON array; an unparsable line yields the error in its place."""
    path = Path(path)
    if not path.exists():
        raise InputFileError(f"input file not found: {path}")
    raw = path.read_bytes().decode("utf-8", errors="replace")
    if raw.lstrip().startswith("["):
        try:
            rows = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputFileError(f"{path}: invalid JSON array: {exc}") from None
        yield from rows
        return
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            yield ValueError(f"line {number}: invalid JSON ({exc.msg})")


def read_rows(path: Path) -> Iterator[dict | Exception]:
    """Rows of a JSONL/JSON file, or of a Parquet file (`.parquet`, needs pyarrow), in order."""
    path = Path(path)
    if path.suffix.lower() != ".parquet":
        yield from read_json_rows(path)
        return
    if not path.exists():
        raise InputFileError(f"input file not found: {path}")
    from rebuttal.optional import require

    parquet = require("pyarrow.parquet", "data")
    for batch in parquet.ParquetFile(path).iter_batches(batch_size=4096):
        yield from batch.to_pylist()


def items_from_rows(rows: Iterable[dict | Exception]) -> Iterator[BatchItem | tuple[str, str]]:
    """BatchItems, or (id, error) pairs for rows that are not usable objects."""
    for index, row in enumerate(rows, 1):
        fallback_id = f"row-{index}"
        if isinstance(row, Exception):
            yield (fallback_id, str(row))
            continue
        if not isinstance(row, dict):
            yield (fallback_id, f"row {index} is a JSON {type(row).__name__}, expected an object")
            continue
        item_id = storable(str(row.get("id", fallback_id)))  # an id can be written back (no lone surrogate)
        text_field = next((f for f in TEXT_FIELDS if f in row), None)
        if text_field is None:
            yield (item_id, f"row {index} has none of the text fields {', '.join(TEXT_FIELDS)}")
            continue
        yield BatchItem(id=item_id, text=row[text_field], fields=row)


def done_ids(output: Path, retry_errors: bool) -> set[str]:
    """Ids already in the output; with retry_errors the error rows are dropped first."""
    if not output.exists():
        return set()
    keep, ids = [], set()
    for line in output.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by an interruption: the item runs again
        if retry_errors and row.get("status") == "error":
            continue
        keep.append(line)
        ids.add(str(row.get("id")))
    tmp = output.with_suffix(output.suffix + ".tmp")
    tmp.write_text("".join(line + "\n" for line in keep), encoding="utf-8")
    os.replace(tmp, output)
    return ids


def error_row(item_id: str, message: str, **extra: Any) -> dict:
    return {"id": item_id, "status": "error", "message": message, **extra}


def row_for(entry: BatchItem | tuple[str, str], process: Process) -> dict:
    """The output row of one entry: the result's JSON, or an error row (unusable input, or an
    exception in `process`). Never raises for an Exception, so one poison row cannot stop a run."""
    if isinstance(entry, tuple):
        return error_row(*entry)
    try:
        result = process(entry)
        row = result.model_dump(mode="json") if isinstance(result, BaseModel) else dict(result)
        row["id"] = entry.id
        return row
    except Exception as exc:  # noqa: BLE001 - recorded per item, the run goes on
        return error_row(entry.id, f"{type(exc).__name__}: {exc}")


def row_line(row: dict) -> str:
    # storable: a lone surrogate echoed from the input (JSON "\\ud800") could not be written as UTF-8
    return storable(json.dumps(row, ensure_ascii=False)) + "\n"


def entry_id(entry: BatchItem | tuple[str, str]) -> str:
    return entry.id if isinstance(entry, BatchItem) else entry[0]


def pending(source: Iterable[BatchItem | tuple[str, str]], output: Path,
            retry_errors: bool) -> tuple[list, BatchSummary]:
    """The entries not yet in `output` (each input id once) and a summary counting the rest."""
    output.parent.mkdir(parents=True, exist_ok=True)
    seen = done_ids(output, retry_errors)
    summary = BatchSummary()
    todo = []
    for entry in source:
        summary.total += 1
        key = entry_id(entry)
        if key in seen:
            summary.skipped += 1
        else:
            todo.append(entry)
            seen.add(key)  # duplicate ids in the input run once
    return todo, summary


def count_row(summary: BatchSummary, row: dict) -> None:
    if row.get("status") == "error":
        summary.errors += 1
    else:
        summary.done += 1


def run_batch(
    source: Iterable[BatchItem | tuple[str, str]],
    process: Process,
    output: Path,
    *,
    concurrency: int = 1,
    retry_errors: bool = False,
    progress: bool = True,
) -> BatchSummary:
    """Run `process` on every item not yet in `output`, appending one JSON row per item as it
    finishes. An exception in `process` becomes an error row; the run goes on."""
    from tqdm import tqdm

    started = time.perf_counter()
    output = Path(output)
    todo, summary = pending(source, output, retry_errors)
    lock = threading.Lock()
    bar = tqdm(total=len(todo), disable=not progress, desc="items", unit="item")
    with output.open("a", encoding="utf-8") as out:

        def work(entry: BatchItem | tuple[str, str]) -> None:
            row = row_for(entry, process)
            with lock:
                out.write(row_line(row))
                out.flush()
                count_row(summary, row)
                bar.update(1)

        if concurrency > 1:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                list(pool.map(work, todo))
        else:
            for entry in todo:
                work(entry)
    bar.close()
    summary.seconds = time.perf_counter() - started
    return summary
