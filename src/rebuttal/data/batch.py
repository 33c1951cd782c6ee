"""Resumable batch runs: JSONL in, JSONL out, one row per input id, errors recorded per item."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

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

    def __str__(self) -> str:
        return f"{self.done} done, {self.errors} errors, {self.skipped} skipped (already in output) of {self.total}"


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
        item_id = str(row.get("id", fallback_id))
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


def run_batch(
    source: Iterable[BatchItem | tuple[str, str]],
    process: Callable[[BatchItem], BaseModel | dict],
    output: Path,
    *,
    concurrency: int = 1,
    retry_errors: bool = False,
    progress: bool = True,
) -> BatchSummary:
    """Run `process` on every item not yet in `output`, appending one JSON row per item as it
    finishes. An exception in `process` becomes an error row; the run goes on."""
    from tqdm import tqdm

    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    seen = done_ids(output, retry_errors)
    summary = BatchSummary()
    lock = threading.Lock()
    entries = list(source)
    summary.total = len(entries)
    todo = []
    for entry in entries:
        entry_id = entry.id if isinstance(entry, BatchItem) else entry[0]
        if entry_id in seen:
            summary.skipped += 1
        else:
            todo.append(entry)
            seen.add(entry_id)  # duplicate ids in the input run once

    bar = tqdm(total=len(todo), disable=not progress, desc="items", unit="item")
    with output.open("a", encoding="utf-8") as out:

        def work(entry: BatchItem | tuple[str, str]) -> None:
            if isinstance(entry, tuple):
                row = error_row(*entry)
            else:
                try:
                    result = process(entry)
                    row = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
                    row["id"] = entry.id
                except Exception as exc:  # noqa: BLE001 - recorded per item, the run goes on
                    row = error_row(entry.id, f"{type(exc).__name__}: {exc}")
            with lock:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                out.flush()
                if row.get("status") == "error":
                    summary.errors += 1
                else:
                    summary.done += 1
                bar.update(1)

        if concurrency > 1:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                list(pool.map(work, todo))
        else:
            for entry in todo:
                work(entry)
    bar.close()
    return summary
