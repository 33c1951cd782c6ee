"""Gold files for SPAR-Hate: STATE-ToxiCN JSON (Chinese) and our TBO JSONL (English).

Both loaders take a path and return `GoldPost`s with `SparTuple`s in one shape:
label 1 = hateful/harmful, implicit targets written `NULL` (`vocab.OUTPUT_IMPLICIT`), group kept
for the four-field track. The vocabulary (labels, groups, tracks) lives in `data.vocab`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from rebuttal.data.vocab import OUTPUT_IMPLICIT as IMPLICIT
from rebuttal.data.vocab import NON_HATE, normalize_group, parse_label
from rebuttal.types import SparTuple

_TARGET_KEY = re.compile(r"^Q(\d+) Target$")


class GoldFormatError(ValueError):
    """A gold file is not in a format we can read."""


@dataclass
class GoldPost:
    id: str
    text: str
    lang: str
    tuples: list[SparTuple] = field(default_factory=list)
    meta: dict = field(default_factory=dict)


def _read_json(path: Path) -> object:
    path = Path(path)
    if not path.exists():
        raise GoldFormatError(f"gold file not found: {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GoldFormatError(f"{path}: not a JSON document ({exc})") from None


def state_toxicn_tuples(row: dict) -> list[SparTuple]:
    """The `Qk Target / Qk Argument / Qk Group / Qk hateful` columns of one row, in order."""
    tuples = []
    numbers = sorted(int(m[1]) for key in row if (m := _TARGET_KEY.match(key)))
    for k in numbers:  # one training row skips a number, so every Qk present is read
        group = normalize_group(row.get(f"Q{k} Group"))
        raw_label = row.get(f"Q{k} hateful")
        try:
            label = parse_label(raw_label)
        except ValueError:
            label = 0 if group == NON_HATE else 1  # one row in train has a missing label
        if raw_label in (None, IMPLICIT):  # the dataset writes a missing label as NULL too
            label = 0 if group == NON_HATE else 1
        tuples.append(SparTuple(
            target=str(row[f"Q{k} Target"]).strip() or IMPLICIT,
            argument=str(row.get(f"Q{k} Argument", "")).strip(),
            label=label, group=group,
        ))
    return tuples


def is_state_toxicn_row(row: object) -> bool:
    return isinstance(row, dict) and "content" in row and "Q1 Target" in row


def load_state_toxicn(path: str | Path) -> list[GoldPost]:
    """STATE-ToxiCN train/test JSON (a list of rows with `content` and `Qk ...` fields)."""
    data = _read_json(Path(path))
    if not isinstance(data, list) or not all(is_state_toxicn_row(r) for r in data):
        raise GoldFormatError(f"{path}: expected a JSON list of STATE-ToxiCN rows (content, Q1 Target, ...)")
    return [
        GoldPost(id=str(row["id"]), text=str(row["content"]), lang="zh", tuples=state_toxicn_tuples(row),
                 meta={k: row[k] for k in ("platform", "topic", "sen_hate") if k in row})
        for row in data
    ]


def tbo_tuples(row: dict) -> list[SparTuple]:
    return [
        SparTuple(target=str(t.get("target") or IMPLICIT).strip() or IMPLICIT,
                  argument=str(t.get("argument", "")).strip(), label=parse_label(t.get("harmful")))
        for t in row.get("tuples", [])
    ]


def is_tbo_row(row: object) -> bool:
    return isinstance(row, dict) and "text" in row and isinstance(row.get("tuples"), list)


def load_tbo(path: str | Path) -> list[GoldPost]:
    """Our TBO JSONL: `{id, text, tuples: [{target, argument, harmful: YES/NO}]}` per line."""
    path = Path(path)
    if not path.exists():
        raise GoldFormatError(f"gold file not found: {path}")
    posts = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldFormatError(f"{path} line {number}: invalid JSON ({exc.msg})") from None
        if not is_tbo_row(row):
            raise GoldFormatError(f"{path} line {number}: expected {{id, text, tuples}}")
        try:
            tuples = tbo_tuples(row)
        except ValueError as exc:
            raise GoldFormatError(f"{path} line {number}: {exc}") from None
        posts.append(GoldPost(id=str(row.get("id", f"row-{number}")), text=str(row["text"]), lang="en",
                              tuples=tuples))
    return posts


def load_gold(path: str | Path) -> list[GoldPost]:
    """Either format, recognised by content (a JSON list → STATE-ToxiCN, JSONL → TBO)."""
    path = Path(path)
    if not path.exists():
        raise GoldFormatError(f"gold file not found: {path}")
    head = path.read_text(encoding="utf-8", errors="replace").lstrip()[:1]
    return load_state_toxicn(path) if head == "[" else load_tbo(path)
