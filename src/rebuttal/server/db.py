"""Tables and the Database handle (SQLAlchemy 2.x; SQLite by default, PostgreSQL by URL).

Alembic migrations (server/migrations, run by `init()` on every start) create the schema or
bring an older one up to date, keeping its rows; a database newer than this release is refused.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint,
    create_engine, event, false,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from rebuttal.server.migrate import SCHEMA_VERSION, SchemaMismatch, upgrade  # noqa: F401 - re-exported
from rebuttal.server.sqlite import SQLITE_POOL, SQLITE_TIMEOUT_S, WriteGate, sqlite_pragmas

ROLES = ("submit", "review", "admin")


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid.uuid4().hex


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class SchemaVersion(Base):
    __tablename__ = "schema_version"
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    applied_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ApiKey(Base):
    __tablename__ = "api_keys"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)  # public part of the key
    name: Mapped[str] = mapped_column(String(120), index=True)
    salt: Mapped[str] = mapped_column(String(64))
    key_hash: Mapped[str] = mapped_column(String(128))
    role: Mapped[str] = mapped_column(String(16), default="review", server_default="review")  # ROLES
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class RequestLog(Base):
    """One row per API request: who, what, outcome. Never the post text or the key."""

    __tablename__ = "requests"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    method: Mapped[str] = mapped_column(String(8))
    path: Mapped[str] = mapped_column(String(300))
    key_name: Mapped[str | None] = mapped_column(String(120))
    status_code: Mapped[int] = mapped_column(Integer)
    duration_ms: Mapped[float] = mapped_column(Float)
    items: Mapped[int] = mapped_column(Integer, default=0)
    job_id: Mapped[str | None] = mapped_column(String(32))


class Job(Base):
    __tablename__ = "jobs"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    kind: Mapped[str] = mapped_column(String(16))  # analyze | respond | parse
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    key_name: Mapped[str] = mapped_column(String(120))
    request_id: Mapped[str | None] = mapped_column(String(32))
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)  # lang/track for parse
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[int] = mapped_column(Integer, default=0)
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class JobItem(Base):
    __tablename__ = "job_items"
    __table_args__ = (UniqueConstraint("job_id", "position"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    client_id: Mapped[str | None] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)  # queued|running|done|error
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    result_id: Mapped[str | None] = mapped_column(String(32))
    claim: Mapped[str | None] = mapped_column(String(32))  # the worker run holding the item
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    retryable: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class ResultRow(Base):
    """A pipeline result with its full trace, whatever its status."""

    __tablename__ = "results"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    kind: Mapped[str] = mapped_column(String(16))
    request_id: Mapped[str | None] = mapped_column(String(32), index=True)
    job_id: Mapped[str | None] = mapped_column(String(32), index=True)
    client_id: Mapped[str | None] = mapped_column(String(200))
    key_name: Mapped[str | None] = mapped_column(String(120))
    text: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), index=True)
    category: Mapped[str | None] = mapped_column(String(32), index=True)
    target_group: Mapped[str | None] = mapped_column(String(120))
    purity: Mapped[float | None] = mapped_column(Float)
    result: Mapped[dict[str, Any]] = mapped_column()
    trace: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


class ReviewItem(Base):
    __tablename__ = "review_items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    result_id: Mapped[str] = mapped_column(ForeignKey("results.id"), unique=True)
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    category: Mapped[str | None] = mapped_column(String(32), index=True)
    target_group: Mapped[str | None] = mapped_column(String(120))
    original_reply: Mapped[str] = mapped_column(Text)
    reply: Mapped[str] = mapped_column(Text)
    edited: Mapped[bool] = mapped_column(Boolean, default=False)
    reject_reason: Mapped[str | None] = mapped_column(Text)
    reviewer: Mapped[str | None] = mapped_column(String(120))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class AuditEntry(Base):
    __tablename__ = "audit_log"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    review_id: Mapped[int] = mapped_column(ForeignKey("review_items.id"), index=True)
    actor: Mapped[str] = mapped_column(String(120))
    actor_role: Mapped[str | None] = mapped_column(String(16))  # the key's role; None for "system"
    action: Mapped[str] = mapped_column(String(16))  # queued | edit | approve | reject
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    before: Mapped[dict[str, Any]] = mapped_column(default=dict)
    after: Mapped[dict[str, Any]] = mapped_column(default=dict)


class RateBucket(Base):
    """A token bucket per API key id, shared by every worker and app instance on the database."""

    __tablename__ = "rate_buckets"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    updated: Mapped[float] = mapped_column(Float)  # wall-clock seconds (time.time())


class Database:
    """Engine + sessions. `init()` creates a fresh schema or checks an existing one."""

    def __init__(self, url: str):
        self.url = url
        parsed = make_url(url)
        kwargs: dict[str, Any] = {"future": True}
        if parsed.get_backend_name() == "sqlite":
            database = parsed.database
            if database and database != ":memory:":
                Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
                # Keep a connection per threadpool worker (40): past the default 5 pooled, every
                # busy moment opened and closed a connection (and reran the pragmas) per session.
                kwargs.update(pool_size=SQLITE_POOL, max_overflow=10)
            else:
                from sqlalchemy.pool import StaticPool  # one shared in-memory database

                kwargs["poolclass"] = StaticPool
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": SQLITE_TIMEOUT_S}
        else:
            kwargs["pool_pre_ping"] = True  # a restarted database server costs one failed ping
        self.engine = create_engine(url, **kwargs)
        self._write_gate: WriteGate | None = None
        if parsed.get_backend_name() == "sqlite":
            event.listen(self.engine, "connect", sqlite_pragmas)
            self._write_gate = WriteGate(parsed.database)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def safe_url(self) -> str:
        return make_url(self.url).render_as_string(hide_password=True)

    def init(self) -> int:
        """Create the schema on an empty database or migrate an older one (rows kept); returns
        the schema version. Raises SchemaMismatch for a newer or a foreign database."""
        return upgrade(self)

    @contextmanager
    def session(self, write: bool = False) -> Iterator[Session]:
        """A session committed at the end, rolled back on error.

        `write=True` marks a short session that writes (never open another inside it). On SQLite
        writers then take turns at the write gate (sqlite.py) instead of in SQLite's busy handler."""
        gate = self._write_gate if write else None
        if gate is not None and not gate.acquire(timeout=SQLITE_TIMEOUT_S):
            raise OperationalError("waiting for the SQLite write lock", None,
                                   sqlite3.OperationalError("database is locked"))
        try:
            session = self._sessions()
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise
            finally:
                session.close()
        finally:
            if gate is not None:
                gate.release()

    def dispose(self) -> None:
        self.engine.dispose()
