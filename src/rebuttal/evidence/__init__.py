"""Evidence tools for FIRE: one `Searcher` interface, a local hybrid store (default, offline)
and optional web search that falls back to local evidence.

    from rebuttal.evidence import LocalEvidenceStore, WebSearcher, FallbackSearcher
    store = LocalEvidenceStore.default()
    items = store.search("do migrants commit more crime", k=3)
    web = FallbackSearcher(WebSearcher(), store)
    outcome = search_evidence(web, "...", k=3)   # .items, .notes (trace), .degraded (flag)
"""

from __future__ import annotations

from rebuttal.evidence.base import (
    FallbackSearcher, Searcher, SearchError, SearchOutcome, search_evidence, search_with_notes,
)
from rebuttal.evidence.corpus import (
    CorpusError, Passage, add_corpus, list_corpora, load_passages, read_memory_evidence,
    read_passages, rebuttal_home, remove_corpus,
)
from rebuttal.evidence.store import LocalEvidenceStore
from rebuttal.evidence.tiers import classify_domain, classify_url
from rebuttal.evidence.web import WebSearcher


def default_searcher(web: bool = False, **web_settings) -> Searcher:
    """What the pipeline uses: the local store, or web search falling back to it."""
    local = LocalEvidenceStore.default()
    if not web:
        return local
    return FallbackSearcher(WebSearcher(**web_settings), local)


__all__ = [
    "CorpusError", "FallbackSearcher", "LocalEvidenceStore", "Passage", "SearchError", "SearchOutcome",
    "Searcher", "search_evidence",
    "WebSearcher", "add_corpus", "classify_domain", "classify_url", "default_searcher",
    "list_corpora", "load_passages", "read_memory_evidence", "read_passages", "rebuttal_home",
    "remove_corpus", "search_with_notes",
]
