"""Web search with a stub DDGS client (never the internet): tiers, cache, rate limit,
timeouts, and falling back to local evidence."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_evidence_store import TINY, HashEncoder

from rebuttal.evidence import (
    FallbackSearcher, LocalEvidenceStore, SearchError, WebSearcher, classify_domain, classify_url,
    search_with_notes,
)
from rebuttal.types import EvidenceItem, SourceTier


class StubDDGS:
    """Answers `.text()` like ddgs.DDGS with fixed results; records every call."""

    def __init__(self, results=None, error: Exception | None = None, block: threading.Event | None = None):
        self.results = results if results is not None else RESULTS
        self.error = error
        self.block = block
        self.calls: list[tuple[str, dict]] = []

    def text(self, query, **kwargs):
        self.calls.append((query, kwargs))
        if self.block is not None:
            self.block.wait(5)
        if self.error is not None:
            raise self.error
        return [dict(r) for r in self.results]


RESULTS = [
    {"title": "Forum thread", "href": "https://www.reddit.com/r/x/1", "body": "people argue"},
    {"title": "They lie to you", "href": "https://www.infowars.com/story", "body": "secret plot"},
    {"title": "Local paper", "href": "https://smalltown-gazette.example/news", "body": "local report"},
    {"title": "Crime statistics", "href": "https://www.ons.gov.uk/crime", "body": "official figures"},
    {"title": "Fact check", "href": "https://www.fullfact.org/crime", "body": "the claim is false"},
    {"title": "No text", "href": "https://www.bbc.co.uk/empty", "body": ""},
    {"title": "Bad link", "href": "javascript:alert(1)", "body": "x"},
    {"title": "Study", "href": "https://www.nature.com/articles/1", "body": "peer reviewed study"},
]


class FakeClock:
    def __init__(self):
        self.t = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


def make_web(tmp_path, client=None, **kwargs) -> WebSearcher:
    clock = kwargs.pop("clock", FakeClock())
    return WebSearcher(client or StubDDGS(), cache_dir=tmp_path / "cache", clock=clock,
                       sleep=clock.sleep, **kwargs)


@pytest.mark.parametrize("url, tier", [
    ("https://www.ons.gov.uk/peoplepopulationandcommunity", SourceTier.institutional),
    ("https://www.cdc.gov/x", SourceTier.institutional),
    ("https://migrationobservatory.ox.ac.uk/resources", SourceTier.institutional),
    ("https://www.who.int/news", SourceTier.institutional),
    ("https://ec.europa.eu/eurostat", SourceTier.institutional),
    ("https://www.destatis.de/EN", SourceTier.institutional),
    ("https://doi.org/10.1000/182", SourceTier.institutional),
    ("https://link.springer.com/article/1", SourceTier.institutional),
    ("https://en.wikipedia.org/wiki/Crime", SourceTier.mainstream),
    ("https://en.m.wikipedia.org/wiki/Crime", SourceTier.mainstream),
    ("https://www.reuters.com/world", SourceTier.mainstream),
    ("https://www.snopes.com/fact-check/x", SourceTier.mainstream),
    ("https://www.reddit.com/r/x", SourceTier.social),
    ("https://x.com/someone/status/1", SourceTier.social),
    ("https://youtu.be/abc", SourceTier.social),
    ("https://answers.yahoo.com/q", SourceTier.social),
    ("https://www.breitbart.com/x", SourceTier.low),
    ("https://www.stormfront.org/forum", SourceTier.low),
    ("https://boards.4chan.org/pol", SourceTier.low),
    ("https://unknown-blog.example/post", SourceTier.mainstream),
    ("not a url", SourceTier.low),
])
def test_domain_tiers(url, tier):
    assert classify_url(url).tier == tier


def test_unknown_domains_are_marked_unknown_and_extra_tiers_override():
    assert classify_url("https://unknown-blog.example/post").known is False
    assert classify_url("https://www.bbc.co.uk/news").known is True
    assert classify_domain("ons.gov.uk") == SourceTier.institutional
    info = classify_url("https://unknown-blog.example/p", extra={"unknown-blog.example": "low"})
    assert info.tier == SourceTier.low


def test_low_quality_dropped_and_results_sorted_by_tier(tmp_path):
    items = make_web(tmp_path).search("crime statistics", k=10)
    assert [i.source for i in items] == [
        "ons.gov.uk", "nature.com", "fullfact.org", "smalltown-gazette.example", "reddit.com"]
    assert [i.tier for i in items] == [SourceTier.institutional, SourceTier.institutional,
                                       SourceTier.mainstream, SourceTier.mainstream, SourceTier.social]
    assert all(isinstance(i, EvidenceItem) and i.id.startswith("web-") for i in items)
    assert items[0].text == "Crime statistics: official figures"
    assert make_web(tmp_path).search("crime statistics", k=2) == items[:2]


def test_safe_search_is_on_and_backend_is_duckduckgo(tmp_path):
    stub = StubDDGS()
    make_web(tmp_path, stub).search("q")
    assert stub.calls[0][1]["safesearch"] == "on" and stub.calls[0][1]["backend"] == "duckduckgo"


def test_identical_queries_hit_the_cache(tmp_path):
    stub = StubDDGS()
    web = make_web(tmp_path, stub)
    first = web.search("Crime statistics UK")
    second = web.search("  crime   statistics uk ")  # same query after normalisation
    assert len(stub.calls) == 1 and first == second
    # a new searcher over the same folder also reads the cache from disk
    assert make_web(tmp_path, stub).search("crime statistics uk") == first
    assert len(stub.calls) == 1
    make_web(tmp_path, stub).search("another query")
    assert len(stub.calls) == 2


def test_cache_entries_expire_after_the_ttl(tmp_path):
    stub, now = StubDDGS(), [0.0]
    web = make_web(tmp_path, stub, cache_ttl_s=60, now=lambda: now[0])
    web.search("q")
    now[0] = 59
    web.search("q")
    assert len(stub.calls) == 1
    now[0] = 61
    web.search("q")
    assert len(stub.calls) == 2


def test_rate_limit_spaces_requests_but_not_cache_hits(tmp_path):
    clock = FakeClock()
    web = make_web(tmp_path, clock=clock, min_interval_s=2.0)
    web.search("one")
    assert clock.sleeps == []
    clock.t += 0.5
    web.search("two")
    assert clock.sleeps == [pytest.approx(1.5)]
    web.search("one")  # cached: no request, no wait
    assert clock.sleeps == [pytest.approx(1.5)]
    clock.t += 10
    web.search("three")
    assert clock.sleeps == [pytest.approx(1.5)]


def test_timeout_raises_search_error(tmp_path):
    release = threading.Event()
    web = make_web(tmp_path, StubDDGS(block=release), timeout_s=0.05)
    try:
        with pytest.raises(SearchError, match="timed out after 0.05 s"):
            web.search("slow query")
    finally:
        release.set()
        web.close()


def test_client_errors_become_search_errors_and_empty_pages_are_empty(tmp_path):
    class RatelimitException(Exception):
        pass

    with pytest.raises(SearchError, match="RatelimitException: 202 Ratelimit"):
        make_web(tmp_path, StubDDGS(error=RatelimitException("202 Ratelimit"))).search("q")
    assert make_web(tmp_path, StubDDGS(error=Exception("No results found."))).search("q2") == []
    with pytest.raises(SearchError, match="empty"):
        make_web(tmp_path).search("")


def test_failures_are_not_cached(tmp_path):
    with pytest.raises(SearchError):
        make_web(tmp_path, StubDDGS(error=Exception("boom"))).search("q")
    stub = StubDDGS()
    assert make_web(tmp_path, stub).search("q") and len(stub.calls) == 1


@pytest.fixture
def local() -> LocalEvidenceStore:
    return LocalEvidenceStore(TINY, encoder=HashEncoder())


def test_fallback_to_local_when_web_fails_with_a_note(tmp_path, local):
    web = make_web(tmp_path, StubDDGS(error=Exception("connection refused")))
    searcher = FallbackSearcher(web, local)
    items, notes = searcher.search_with_notes("vaccines autism studies", k=2)
    assert items[0].id == "p5"
    assert len(notes) == 1 and "web:duckduckgo search failed" in notes[0]
    assert "connection refused" in notes[0] and "used local evidence instead" in notes[0]
    assert searcher.search("vaccines autism studies", k=2) == items


def test_fallback_when_web_finds_nothing_or_only_low_quality(tmp_path, local):
    low_only = StubDDGS(results=[{"title": "t", "href": "https://infowars.com/a", "body": "b"}])
    items, notes = FallbackSearcher(make_web(tmp_path, low_only), local).search_with_notes(
        "refugees employed germany")
    assert items[0].id == "p6" and "found nothing" in notes[0]


def test_web_results_used_when_available(tmp_path, local):
    items, notes = search_with_notes(FallbackSearcher(make_web(tmp_path), local), "crime", k=1)
    assert items[0].source == "ons.gov.uk" and notes == ["evidence from web:duckduckgo"]
    assert search_with_notes(local, "vaccines autism", k=1) == (local.search("vaccines autism", k=1), [])


def test_both_failing_raises_with_both_reasons(tmp_path):
    class Broken:
        name = "local"

        def search(self, query, k=3):
            raise SearchError("index missing")

    web = make_web(tmp_path, StubDDGS(error=Exception("offline")))
    with pytest.raises(SearchError, match="offline.*fallback local also failed \\(index missing\\)"):
        FallbackSearcher(web, Broken()).search_with_notes("q")


def test_fallback_notes_are_per_call_under_threads(tmp_path, local):
    class Flaky:
        name = "web"

        def search(self, query, k=3):
            if "fail" in query:
                raise SearchError("down")
            return [EvidenceItem(id="w1", text=query, source="s")]

    searcher = FallbackSearcher(Flaky(), local)
    queries = [f"fail vaccines {i}" if i % 2 else f"ok {i}" for i in range(20)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(searcher.search_with_notes, queries))
    for query, (items, notes) in zip(queries, results, strict=True):
        if "fail" in query:
            assert "web search failed (down)" in notes[0]
        else:
            assert items[0].text == query and notes == ["evidence from web"]
