"""Per-key token buckets: in the database (shared by every worker and app instance; the
default) or in process memory (one process; a restart refills every bucket)."""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass

from sqlalchemy import Float, String, bindparam, case, insert, select, update
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
    clock, so instances on several hosts need synchronised clocks (NTP).

    `take(connection, ...)` takes the token inside a caller's transaction, so the API takes it
    in the same commit as the key check (access.py). The statements are built once: building
    the CASE expressions per call cost more CPU than running them."""

    def __init__(self, db, per_minute: float, burst: int, clock=time.time):
        self.db, self.rate, self.burst, self.clock = db, per_minute / 60.0, float(burst), clock
        now, cost = bindparam("b_now", type_=Float), bindparam("b_cost", type_=Float)
        # A concurrent request may have stamped a later time already: never refill backwards.
        elapsed = case((RateBucket.updated < now, now - RateBucket.updated), else_=0.0)
        refilled = RateBucket.tokens + elapsed * self.rate
        available = case((refilled > self.burst, self.burst), else_=refilled)
        stamp = case((RateBucket.updated < now, now), else_=RateBucket.updated)
        this_key = RateBucket.key == bindparam("b_key", type_=String)
        self._take = (update(RateBucket).where(this_key, available >= cost)
                      .values(tokens=available - cost, updated=stamp))
        self._available = select(available).where(this_key)

    def acquire(self, key: str, cost: float = 1.0) -> float:
        """Take `cost` tokens in a transaction of its own; 0.0 if allowed, else seconds to wait."""
        for _ in range(3):  # a lost insert race (dialects without ON CONFLICT) is retried
            try:
                with self.db.session(write=True) as session:
                    return self.take(session.connection(), key, cost)
            except IntegrityError:
                continue
        return 1.0

    def take(self, connection, key: str, cost: float = 1.0) -> float:
        """`acquire` inside the caller's transaction (commit is the caller's)."""
        params = {"b_key": key, "b_now": self.clock(), "b_cost": cost}
        for _ in range(3):
            if connection.execute(self._take, params).rowcount:
                return 0.0
            current = connection.execute(self._available, params).scalar()
            if current is not None:
                return (cost - current) / self.rate
            if self._insert_full(connection, key, params["b_now"], cost):
                return 0.0
            # another process inserted the row between our UPDATE and INSERT: take from it
        return 1.0

    def _insert_full(self, connection, key: str, now: float, cost: float) -> bool:
        row = {"key": key, "tokens": self.burst - cost, "updated": now}
        dialect = connection.dialect.name
        if dialect not in ("sqlite", "postgresql"):
            connection.execute(insert(RateBucket).values(**row))  # a race raises IntegrityError
            return True
        module = importlib.import_module(f"sqlalchemy.dialects.{dialect}")
        statement = (module.insert(RateBucket).values(**row).on_conflict_do_nothing(index_elements=["key"])
                     .returning(RateBucket.key))  # an INSERT's rowcount is not reliable (psycopg gives -1)
        return connection.execute(statement).first() is not None


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
