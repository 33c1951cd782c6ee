"""Per-key token buckets: in the database (shared by every worker and app instance; the
default) or in process memory (one process; a restart refills every bucket)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from sqlalchemy import case, select, update
from sqlalchemy.exc import IntegrityError

from rebuttal.server.db import RateBucket


@dataclass
class _Bucket:
    tokens: float
    updated: float


class TokenBucketLimiter:
    def __init__(self, per_minute: float, burst: int, clock=time.monotonic):
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self.clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str, cost: float = 1.0) -> float:
        """Take `cost` tokens; return 0.0 if allowed, else the seconds to wait before retrying."""
        now = self.clock()
        with self._lock:
            bucket = self._buckets.setdefault(key, _Bucket(self.burst, now))
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
            if bucket.tokens >= cost:
                bucket.tokens -= cost
                return 0.0
            return (cost - bucket.tokens) / self.rate


class DatabaseRateLimiter:
    """The same token bucket, kept in the `rate_buckets` table so every worker process and app
    instance on one database shares it. One conditional UPDATE takes a token atomically (no
    read-modify-write race between processes); a missing row is inserted full. Time is the wall
    clock, so instances on several hosts need synchronised clocks (NTP)."""

    def __init__(self, db, per_minute: float, burst: int, clock=time.time):
        self.db, self.rate, self.burst, self.clock = db, per_minute / 60.0, float(burst), clock

    def acquire(self, key: str, cost: float = 1.0) -> float:
        now = self.clock()
        # A concurrent request may have stamped a later time already: never refill backwards.
        elapsed = case((RateBucket.updated < now, now - RateBucket.updated), else_=0.0)
        refilled = RateBucket.tokens + elapsed * self.rate
        available = case((refilled > self.burst, self.burst), else_=refilled)
        stamp = case((RateBucket.updated < now, now), else_=RateBucket.updated)
        for _ in range(3):  # a lost insert race is retried as an update
            try:
                with self.db.session() as session:
                    taken = session.execute(
                        update(RateBucket).where(RateBucket.key == key, available >= cost)
                        .values(tokens=available - cost, updated=stamp)).rowcount
                    if taken:
                        return 0.0
                    current = session.scalar(select(available).where(RateBucket.key == key))
                    if current is None:
                        session.add(RateBucket(key=key, tokens=self.burst - cost, updated=now))
                        session.flush()
                        return 0.0
                    return (cost - current) / self.rate
            except IntegrityError:
                continue
        return 1.0


class RedisRateLimiter:
    """The same token bucket in Redis (`--rate-store redis`, `REBUTTAL_REDIS_URL`), for
    deployments that already run one: a hash per key, updated in an optimistic transaction
    (WATCH/MULTI), so concurrent workers never both take the last token. Buckets expire once
    they would be full again. A Redis outage surfaces as a 503 like a database outage."""

    def __init__(self, client, per_minute: float, burst: int, clock=time.time, prefix: str = "rebuttal:rate:"):
        self.client, self.rate, self.burst, self.clock, self.prefix = client, per_minute / 60.0, float(burst), clock, prefix

    @classmethod
    def from_url(cls, url: str, per_minute: float, burst: int) -> RedisRateLimiter:
        from rebuttal.optional import require

        redis = require("redis", "server-redis")
        return cls(redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2), per_minute, burst)

    def acquire(self, key: str, cost: float = 1.0) -> float:
        from redis.exceptions import WatchError

        name = self.prefix + key
        for _ in range(5):  # lost races are retried; each retry reads the new state
            with self.client.pipeline() as pipe:
                try:
                    pipe.watch(name)
                    tokens, updated = pipe.hmget(name, "tokens", "updated")
                    now = self.clock()
                    last = float(updated) if updated is not None else now
                    available = self.burst if tokens is None else min(
                        self.burst, float(tokens) + max(0.0, now - last) * self.rate)
                    if available < cost:
                        pipe.unwatch()
                        return (cost - available) / self.rate
                    pipe.multi()
                    pipe.hset(name, mapping={"tokens": available - cost, "updated": max(now, last)})
                    pipe.expire(name, max(1, int(self.burst / self.rate) + 1))
                    pipe.execute()
                    return 0.0
                except WatchError:
                    continue
        return 1.0
