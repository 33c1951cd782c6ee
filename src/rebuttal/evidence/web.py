"""Optional web evidence: DuckDuckGo through `ddgs`, with safe search, a minimum interval
between requests, an on-disk cache, a hard timeout and source tiers (low quality dropped).

Off by default: nothing here touches the network unless a WebSearcher is built and called.
The client is injectable (anything with `.text(query, **kwargs) -> list[dict]` returning
`title`/`href`/`body` dicts), so tests never reach the internet.

Safe search: we always ask for `safesearch="on"`, but ddgs 9.x's DuckDuckGo *text* engine
(the html endpoint) does not forward that setting (its news/images engines and the brave and
google backends do). The domain tiers below are therefore the real filter: extremist,
conspiracy and content-farm domains are dropped whatever the engine returns.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from rebuttal.evidence.base import SearchError, clean_query
from rebuttal.evidence.corpus import rebuttal_home
from rebuttal.evidence.tiers import TIER_ORDER, classify_url
from rebuttal.optional import MissingBackend, require
from rebuttal.types import EvidenceItem, SourceTier

DAY_S = 24 * 3600.0


def default_cache_dir() -> Path:
    return rebuttal_home() / "evidence" / "web-cache"


class RateLimiter:
    """At least `min_interval_s` between the starts of two calls, across threads."""

    def __init__(self, min_interval_s: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.min_interval_s = min_interval_s
        self.clock = clock
        self.sleep = sleep
        self._last: float | None = None
        self._lock = threading.Lock()

    def wait(self) -> float:
        """Block until a call may start; returns the seconds waited."""
        with self._lock:  # holding the lock while sleeping queues callers in order
            waited = 0.0
            if self._last is not None:
                waited = max(0.0, self._last + self.min_interval_s - self.clock())
                if waited > 0:
                    self.sleep(waited)
            self._last = self.clock()
            return waited


class QueryCache:
    """One JSON file per query key; entries older than `ttl_s` are ignored and refetched."""

    def __init__(self, folder: str | Path, ttl_s: float = 7 * DAY_S,
                 now: Callable[[], float] = time.time):
        self.folder = Path(folder)
        self.ttl_s = ttl_s
        self.now = now

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> list[dict] | None:
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
            if self.now() - float(entry["fetched_at"]) > self.ttl_s:
                return None
            results = entry["results"]
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or corrupt entries are simply refetched
        return results if isinstance(results, list) else None

    def put(self, key: str, query: str, results: list[dict]) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self._path(key).with_suffix(f".{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps({"query": query, "fetched_at": self.now(), "results": results},
                                      ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self._path(key))
        except OSError:
            pass  # an unwritable cache costs a refetch, never the search


class WebSearcher:
    """DuckDuckGo text search returning tiered EvidenceItems (institutional first)."""

    def __init__(self, client: Any = None, *, backend: str = "duckduckgo", region: str = "wt-wt",
                 safesearch: str = "on", max_results: int = 10, timeout_s: float = 10.0,
                 min_interval_s: float = 2.0, cache_dir: str | Path | None = None,
                 cache_ttl_s: float = 7 * DAY_S, use_cache: bool = True,
                 extra_tiers: Mapping[str, SourceTier | str] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 now: Callable[[], float] = time.time):
        if safesearch not in ("on", "moderate", "off"):
            raise ValueError("safesearch must be on, moderate or off")
        self._client = client
        self._client_lock = threading.Lock()
        self.backend = backend
        self.region = region
        self.safesearch = safesearch
        self.max_results = max_results
        self.timeout_s = timeout_s
        self.extra_tiers = dict(extra_tiers or {})
        self.limiter = RateLimiter(min_interval_s, clock=clock, sleep=sleep)
        self.cache = QueryCache(cache_dir or default_cache_dir(), cache_ttl_s, now) if use_cache else None
        # Few workers: a hung request keeps its thread until the client's own timeout ends it.
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="web-search")
        self.name = f"web:{backend}"

    def _get_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                try:
                    ddgs = require("ddgs", "web")
                except MissingBackend as exc:
                    raise SearchError(str(exc)) from exc
                self._client = ddgs.DDGS(timeout=max(1, int(self.timeout_s)))
            return self._client

    def cache_key(self, query: str) -> str:
        spec = json.dumps([query.lower(), self.backend, self.region, self.safesearch,
                           self.max_results])
        return hashlib.sha256(spec.encode("utf-8")).hexdigest()[:32]

    def fetch(self, query: str) -> list[dict]:
        """Raw results for a query: from the cache, else one rate-limited, timed request."""
        key = self.cache_key(query)
        if self.cache is not None and (cached := self.cache.get(key)) is not None:
            return cached
        client = self._get_client()
        self.limiter.wait()
        future = self._pool.submit(client.text, query, region=self.region,
                                   safesearch=self.safesearch, max_results=self.max_results,
                                   backend=self.backend)
        try:
            raw = future.result(timeout=self.timeout_s)
        except FutureTimeout:
            future.cancel()
            raise SearchError(f"web search timed out after {self.timeout_s:g} s") from None
        except Exception as exc:  # ddgs raises its own exception types; all mean "no answer"
            if "no results" in str(exc).lower():
                return []  # ddgs reports an empty page as an exception
            name = type(exc).__name__
            kind = "timed out" if "timeout" in name.lower() or "timed out" in str(exc) else "failed"
            raise SearchError(f"web search {kind}: {name}: {exc}") from exc
        if not isinstance(raw, list):
            raise SearchError(f"web search returned {type(raw).__name__}, expected a list")
        results = [dict(r) for r in raw if isinstance(r, Mapping)]
        if self.cache is not None and results:
            self.cache.put(key, query, results)
        return results

    def search(self, query: str, k: int = 3) -> list[EvidenceItem]:
        query, k = clean_query(query, k)
        return self.to_items(self.fetch(query))[:k]

    def to_items(self, results: list[dict]) -> list[EvidenceItem]:
        """Tier, drop low quality and results without a link or text, dedupe by URL, sort
        institutional → mainstream (known, then unknown domains) → social, stable."""
        ranked: list[tuple[tuple[int, int, int], EvidenceItem]] = []
        seen: set[str] = set()
        for position, result in enumerate(results):
            url = str(result.get("href") or result.get("url") or "").strip()
            body = " ".join(str(result.get("body") or "").split())
            title = " ".join(str(result.get("title") or "").split())
            if not url.startswith(("http://", "https://")) or not body or url in seen:
                continue
            info = classify_url(url, self.extra_tiers)
            if info.tier == SourceTier.low:
                continue
            seen.add(url)
            item = EvidenceItem(
                id="web-" + hashlib.sha1(url.encode("utf-8")).hexdigest()[:8],
                text=f"{title}: {body}" if title else body,
                source=info.domain,
                url=url,
                date=str(result["date"]) if result.get("date") else None,
                tier=info.tier,
                score=round(1.0 / (1 + position), 4),  # the engine's own rank
            )
            ranked.append(((TIER_ORDER[info.tier], 0 if info.known else 1, position), item))
        return [item for _, item in sorted(ranked, key=lambda pair: pair[0])]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
