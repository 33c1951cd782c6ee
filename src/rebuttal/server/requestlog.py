"""The request log: one `requests` row per /v1 request (path, caller, status, duration, item
count; never bodies, query texts or keys) and one log line per request.

A pure ASGI layer times each request; `duration_ms` runs from the request reaching the app to
the response head, as before. Rows are stored by one background thread instead of a threadpool
hop and a commit per request: the writer takes every row waiting and inserts them in one
transaction, so under load many rows share a commit and idle ones are written at once. A row
is written just after its response is sent; rows still queued when the process is killed
(SIGKILL) are lost, and a failing database drops rows after three tries: a logging failure
never fails or slows a request.
"""

from __future__ import annotations

import logging
import queue
import time

from sqlalchemy import insert

from rebuttal.server.background import BatchThread
from rebuttal.server.db import Database, RequestLog, new_id, utcnow

log = logging.getLogger("rebuttal.server")


class RequestLogWriter(BatchThread):
    """Stores request log rows from a queue, many per transaction, on its own thread."""

    thread_name = "rebuttal-request-log"

    def __init__(self, db: Database, max_queued: int = 10_000, max_batch: int = 500, retry_s: float = 0.5):
        super().__init__(max_batch, max_queued)
        self.db, self.retry_s = db, retry_s
        self.dropped = 0

    def add(self, row: dict) -> None:
        """Queue a row; never blocks. A full queue (the database far behind) sheds log rows."""
        try:
            self._put(row)
        except queue.Full:
            self.dropped += 1
            if self.dropped & (self.dropped - 1) == 0:  # 1, 2, 4, 8, ...: visible, not flooding
                log.warning("request log queue full; %d rows not stored so far", self.dropped)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued row is stored (or given up); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._queue.all_tasks_done.wait(left)
        return True

    def _handle(self, rows: list[dict]) -> None:
        for attempt in range(3):
            try:
                with self.db.session(write=True) as session:
                    session.connection().execute(insert(RequestLog), rows)
                return
            except Exception as exc:  # noqa: BLE001 - a logging failure must not fail requests
                if attempt == 2:
                    log.warning("could not store %d request log rows: %s", len(rows), type(exc).__name__)
                    return
                time.sleep(self.retry_s * (attempt + 1))


class RequestLogMiddleware:
    """Pure ASGI (no extra task or stream per request, unlike `@app.middleware("http")`)."""

    def __init__(self, app, writer: RequestLogWriter):
        self.app, self.writer = app, writer

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        state = scope.setdefault("state", {})  # what routes see as request.state
        state["request_id"] = new_id()
        started = time.perf_counter()
        status, elapsed = 500, None

        async def send_and_time(message):
            nonlocal status, elapsed
            if message["type"] == "http.response.start":
                status, elapsed = message["status"], (time.perf_counter() - started) * 1000
            await send(message)

        try:
            await self.app(scope, receive, send_and_time)
        finally:
            if elapsed is None:  # no response head: the error handler outside answers 500
                elapsed = (time.perf_counter() - started) * 1000
            self._record(scope, state, status, elapsed)

    def _record(self, scope, state: dict, status: int, elapsed: float) -> None:
        path, key_name = scope["path"], state.get("key_name")
        log.info("%s %s -> %d (%s, %.0f ms)", scope["method"], path, status, key_name or "-", elapsed)
        if path.startswith("/v1/") and path != "/v1/health":
            self.writer.add({"id": state["request_id"], "created_at": utcnow(), "method": scope["method"],
                             "path": path[:300], "key_name": key_name, "status_code": status,
                             "duration_ms": round(elapsed, 2), "items": state.get("items", 0),
                             "job_id": state.get("job_id")})
