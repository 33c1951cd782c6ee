"""The one search interface the FIRE pipeline calls, and the local-fallback wrapper."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from rebuttal.types import EvidenceItem

MAX_QUERY_CHARS = 400


class SearchError(RuntimeError):
    """A search could not be answered (timeout, network, bad query, missing index)."""


@runtime_checkable
class Searcher(Protocol):
    name: str

    def search(self, query: str, k: int = 3) -> list[EvidenceItem]:
        """Up to k evidence items, best first; raises SearchError on failure or timeout."""
        ...


def clean_query(query: object, k: object = 3) -> tuple[str, int]:
    """Validated (query, k): SearchError for an empty or non-text query or a bad k; long
    queries are cut at a word boundary (search engines and BM25 gain nothing from more)."""
    if not isinstance(query, str):
        raise SearchError(f"query must be text, got {type(query).__name__}")
    query = " ".join(query.split())
    if not query:
        raise SearchError("query is empty")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise SearchError(f"k must be a positive integer, got {k!r}")
    if len(query) > MAX_QUERY_CHARS:
        query = query[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]
    return query, k


@dataclass
class SearchOutcome:
    """What one search found and how: `degraded` is True when the preferred source failed or
    found nothing and a fallback answered (the pipeline flags that; notes are for the trace)."""

    items: list[EvidenceItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    degraded: bool = False
    source: str | None = None  # the searcher that answered


def search_evidence(searcher: Searcher, query: str, k: int = 3) -> SearchOutcome:
    """Search with any Searcher and say how it went (only FallbackSearcher can degrade).
    SearchError propagates: the caller records it and goes on without evidence."""
    own = getattr(searcher, "search_outcome", None)
    if callable(own):
        return own(query, k)
    return SearchOutcome(items=searcher.search(query, k), source=searcher.name)


def search_with_notes(searcher: Searcher, query: str, k: int = 3) -> tuple[list[EvidenceItem], list[str]]:
    """(items, notes) of `search_evidence`; kept for callers that predate SearchOutcome."""
    outcome = search_evidence(searcher, query, k)
    return outcome.items, outcome.notes


class FallbackSearcher:
    """Try `primary` (e.g. web search); when it fails or finds nothing, use `fallback` (the
    local store). Stateless per call, so one instance can serve many threads."""

    def __init__(self, primary: Searcher, fallback: Searcher):
        self.primary = primary
        self.fallback = fallback
        self.name = f"{primary.name}+fallback:{fallback.name}"

    def search(self, query: str, k: int = 3) -> list[EvidenceItem]:
        return self.search_outcome(query, k).items

    def search_with_notes(self, query: str, k: int = 3) -> tuple[list[EvidenceItem], list[str]]:
        outcome = self.search_outcome(query, k)
        return outcome.items, outcome.notes

    def search_outcome(self, query: str, k: int = 3) -> SearchOutcome:
        query, k = clean_query(query, k)
        try:
            items = self.primary.search(query, k)
        except SearchError as exc:
            reason = f"{self.primary.name} search failed ({exc})"
        else:
            if items:
                return SearchOutcome(items, [f"evidence from {self.primary.name}"], source=self.primary.name)
            reason = f"{self.primary.name} search found nothing"
        try:
            items = self.fallback.search(query, k)
        except SearchError as exc:
            raise SearchError(f"{reason}; fallback {self.fallback.name} also failed ({exc})") from exc
        return SearchOutcome(items, [f"{reason}; used {self.fallback.name} evidence instead"],
                             degraded=True, source=self.fallback.name)
