"""FactualCS-style memory records (h, t, g, r, q, e, c) and their loaders.

Reads two layouts, in JSON, JSONL, CSV or Parquet:
  (a) the project's silver FactualCS format (`../shared/data/factualcs-silver/README.md`) and
      the shipped exemplar bank (same keys plus `evidence_url`);
  (b) the public FactualCS layout (`hs_type` = `misinfo_hate`, ..., `analyst_reasoning`,
      `retrieval_query`, `retrieved_evidence`, hate speech as `hate_speech` or `HS`).
A bad row raises `DatasetError` naming the file, the row and the field.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from rebuttal.types import HateType

BANK_DIR = Path(__file__).resolve().parent / "data"
BANK_FILES = ("exemplars_factual.jsonl", "exemplars_normative.jsonl")

# Our field -> the names it may have in a source file, first match wins.
ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "ID", "item_id"),
    "hate_speech": ("hate_speech", "HS", "hs", "text", "post"),
    "category": ("hs_type", "category", "type"),
    "is_hateful": ("is_hateful", "hateful"),
    "target_group": ("target_group", "target"),
    "reasoning": ("reasoning", "analyst_reasoning"),
    "search_query": ("retrieval_query", "search_query", "query"),
    "evidence": ("evidence", "retrieved_evidence"),
    "evidence_source": ("evidence_source", "source_name"),
    "evidence_url": ("evidence_url", "url"),
    "counterspeech": ("counterspeech", "CN", "counter_narrative"),
    "references": ("counterspeech_refs", "references", "refs"),
}
REQUIRED = ("hate_speech", "category", "target_group", "reasoning", "counterspeech")

CATEGORY_NAMES: dict[str, HateType] = {
    "misinformation": HateType.misinformation, "misinfo": HateType.misinformation,
    "misinfo_hate": HateType.misinformation, "misinformation_hate": HateType.misinformation,
    "stereotype": HateType.stereotype, "stereotype_hate": HateType.stereotype,
    "stereotyping": HateType.stereotype,
    "conspiracy": HateType.conspiracy, "conspiracy_hate": HateType.conspiracy,
    "dehumanization": HateType.dehumanization, "dehumanization_hate": HateType.dehumanization,
    "dehumanizing": HateType.dehumanization, "dehumanizing_hate": HateType.dehumanization,
    "dehumanisation": HateType.dehumanization,
    "nonfactual": HateType.nonfactual, "nonfactual_hate": HateType.nonfactual,
    "non-factual": HateType.nonfactual, "non_factual": HateType.nonfactual,
    "non-factual_hate": HateType.nonfactual, "non_factual_hate": HateType.nonfactual,
}


class DatasetError(ValueError):
    """A dataset file cannot be used; the message names the file, row and field."""


class MemoryRecord(BaseModel):
    """One annotated exemplar of the FIRE memory."""

    id: str
    hate_speech: str
    is_hateful: bool = True
    category: HateType
    target_group: str
    reasoning: str
    search_query: str | None = None
    evidence: str | None = None
    evidence_source: str | None = None
    evidence_url: str | None = None
    counterspeech: str
    references: list[str] = Field(default_factory=list)  # reference replies; c is the first

    @model_validator(mode="after")
    def _references_include_reply(self) -> MemoryRecord:
        if not self.references:
            self.references = [self.counterspeech]
        return self

    def to_silver(self) -> dict[str, Any]:
        """The row in the silver/bank layout (what `load_records` reads back)."""
        return {
            "id": self.id, "hate_speech": self.hate_speech, "is_hateful": self.is_hateful,
            "hs_type": self.category.value, "target_group": self.target_group,
            "reasoning": self.reasoning, "retrieval_query": self.search_query,
            "evidence": self.evidence, "evidence_source": self.evidence_source,
            "evidence_url": self.evidence_url, "counterspeech": self.counterspeech,
            "counterspeech_refs": self.references,
        }


def default_bank_paths() -> list[Path]:
    """The exemplar bank shipped inside the package (factual and normative files)."""
    return [BANK_DIR / name for name in BANK_FILES]


def load_bank() -> list[MemoryRecord]:
    """All records of the shipped bank; a missing bank file is an error, not a smaller bank."""
    records: list[MemoryRecord] = []
    for path in default_bank_paths():
        records.extend(load_records(path))
    return records


def load_many(paths: list[str | Path]) -> list[MemoryRecord]:
    """Records of several files; `default` stands for the shipped bank. Ids must be unique."""
    records: list[MemoryRecord] = []
    for path in paths:
        records.extend(load_bank() if str(path) == "default" else load_records(path))
    _check_unique(records, ", ".join(str(p) for p in paths))
    return records


def load_records(path: str | Path) -> list[MemoryRecord]:
    """Memory records from a JSON, JSONL, CSV or Parquet file in either FactualCS layout."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: file not found")
    rows = _read_rows(path)
    records: list[MemoryRecord] = []
    problems: list[str] = []
    for number, row in enumerate(rows, 1):
        try:
            records.append(record_from_row(row, default_id=f"{path.stem}-{number}"))
        except DatasetError as exc:
            problems.append(f"row {number}: {exc}")
    if problems:
        shown = "\n  ".join(problems[:10])
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise DatasetError(f"{path}: {len(problems)} unusable row(s) of {len(rows)}:\n  {shown}{more}")
    if not records:
        raise DatasetError(f"{path}: no records")
    _check_unique(records, str(path))
    return records


def record_from_row(row: Any, default_id: str = "row") -> MemoryRecord:
    """Map one raw row (either layout) onto a MemoryRecord or raise DatasetError."""
    if isinstance(row, Exception):
        raise DatasetError(str(row))
    if not isinstance(row, dict):
        raise DatasetError(f"expected an object, got {type(row).__name__}")
    values = {name: _pick(row, aliases) for name, aliases in ALIASES.items()}
    for name in REQUIRED:
        if values[name] is None:
            raise DatasetError(
                f"missing field {name!r} (looked for: {', '.join(ALIASES[name])})"
            )
    category = CATEGORY_NAMES.get(str(values["category"]).strip().lower())
    if category is None:
        raise DatasetError(
            f"unknown category {values['category']!r} in field 'hs_type' "
            f"(expected one of: {', '.join(t.value for t in HateType)} or their *_hate forms)"
        )
    for name in ("hate_speech", "target_group", "reasoning", "counterspeech"):
        if not isinstance(values[name], str):
            raise DatasetError(f"field {name!r} must be text, got {type(values[name]).__name__}")
    references = _as_list(values["references"])
    evidence = values["evidence"]
    if isinstance(evidence, list):  # some releases keep evidence as a list of snippets
        evidence = " ".join(str(e) for e in evidence if e) or None
    return MemoryRecord(
        id=str(values["id"]) if values["id"] is not None else default_id,
        hate_speech=values["hate_speech"].strip(),
        is_hateful=_as_bool(values["is_hateful"]),
        category=category,
        target_group=values["target_group"].strip(),
        reasoning=values["reasoning"].strip(),
        search_query=_as_text(values["search_query"]),
        evidence=_as_text(evidence),
        evidence_source=_as_text(values["evidence_source"]),
        evidence_url=_as_text(values["evidence_url"]),
        counterspeech=values["counterspeech"].strip(),
        references=references,
    )


def records_digest(records: list[MemoryRecord]) -> str:
    """sha256 over (id, category, text): what a trained encoder saw."""
    digest = hashlib.sha256()
    for r in records:
        digest.update(f"{r.id}\t{r.category.value}\t{r.hate_speech}\n".encode())
    return digest.hexdigest()


def write_records(records: list[MemoryRecord], path: str | Path) -> None:
    """JSONL in the silver/bank layout."""
    with Path(path).open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record.to_silver(), ensure_ascii=False) + "\n")


def _read_rows(path: Path) -> list[Any]:
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            from rebuttal.optional import require

            parquet = require("pyarrow.parquet", "data")
            return parquet.read_table(path).to_pylist()
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid, a ValueError
        raise DatasetError(f"{path}: cannot read: {exc}") from None
    if suffix == ".csv":
        return list(csv.DictReader(text.splitlines()))
    if suffix == ".json" or (suffix != ".jsonl" and text.lstrip().startswith("[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None  # a .json file holding JSON Lines is common; read it line by line
        if isinstance(data, dict):  # {"data": [...]} or {"train": [...]} wrappers
            lists = [v for v in data.values() if isinstance(v, list)]
            data = lists[0] if len(lists) == 1 else None
            if data is None:
                raise DatasetError(f"{path}: expected a JSON array of records")
        if isinstance(data, list):
            return data
    rows: list[Any] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            rows.append(DatasetError(f"line {number}: invalid JSON ({exc.msg})"))
    return rows


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):  # empty CSV/Parquet cells
        return True
    return isinstance(value, str) and not value.strip()


def _pick(row: dict, aliases: tuple[str, ...]) -> Any:
    for name in aliases:
        if name in row and not _missing(row[name]):
            return row[name]
    return None


def _as_text(value: Any) -> str | None:
    if _missing(value):
        return None
    return str(value).strip()


def _as_bool(value: Any) -> bool:
    if value is None:
        return True  # FactualCS items are hateful unless marked otherwise
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes", "y", "1.0"}:
        return True
    if text in {"false", "0", "no", "n", "0.0"}:
        return False
    raise DatasetError(f"field 'is_hateful' must be true/false, got {value!r}")


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # CSV cells hold the list as JSON text, or one reply
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return [value.strip()]
        value = parsed if isinstance(parsed, list) else [str(parsed)]
    if not isinstance(value, (list, tuple)) and hasattr(value, "tolist"):
        value = value.tolist()
    return [str(v).strip() for v in value if not _missing(v)]


def _check_unique(records: list[MemoryRecord], where: str) -> None:
    seen: set[str] = set()
    for record in records:
        if record.id in seen:
            raise DatasetError(f"{where}: duplicate record id {record.id!r}")
        seen.add(record.id)
