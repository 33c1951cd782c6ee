"""Cultural Bystander lexicon hints from a file in STATE-ToxiCN lexicon format.

`{"terms": [{"term", "category", "definition"}, ...]}` (or a bare list of such entries). The
lexicon is research-only data, so none is shipped: callers pass a path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


class LexiconError(ValueError):
    """The lexicon file is missing or not in STATE-ToxiCN lexicon format."""


@dataclass(frozen=True)
class LexiconEntry:
    term: str
    category: str
    definition: str

    def hint(self) -> str:
        return f"{self.term} ({self.category}): {self.definition}"


class Lexicon:
    def __init__(self, entries: list[LexiconEntry]):
        # Longest terms first, so "黑叔叔" is reported before a shorter term inside it.
        self.entries = sorted({e.term: e for e in entries if e.term}.values(), key=lambda e: -len(e.term))

    def __len__(self) -> int:
        return len(self.entries)

    def hits(self, *texts: str, limit: int = 5) -> list[LexiconEntry]:
        """Entries whose term occurs in any of `texts` (the focus text, the target)."""
        found = [e for e in self.entries if any(e.term in t for t in texts if t)]
        return found[:limit]


@lru_cache(maxsize=8)
def load_lexicon(path: str | Path) -> Lexicon:
    path = Path(path)
    if not path.exists():
        raise LexiconError(f"lexicon file not found: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LexiconError(f"{path}: not JSON ({exc})") from None
    rows = data.get("terms") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise LexiconError(f"{path}: expected {{'terms': [{{term, category, definition}}]}}")
    entries = [
        LexiconEntry(str(r["term"]).strip(), str(r.get("category", "")).strip(), str(r.get("definition", "")).strip())
        for r in rows if isinstance(r, dict) and r.get("term")
    ]
    if not entries:
        raise LexiconError(f"{path}: no entries with a `term`")
    return Lexicon(entries)
