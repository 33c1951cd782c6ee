"""Group commit: the short writes of API requests run on one thread, many per transaction.

Every single-post request writes twice: the key check with its rate-limit token (access.py),
then the result (api.py). With each request thread opening its own transaction, taking its
turn on the SQLite write lock and committing, those two writes cost about half of a request's
CPU at 32 concurrent clients (lock handoffs between threads, one commit each). Here a request
thread hands its write to one writer thread and waits for the outcome; the writer takes every
write waiting, runs them in one transaction and commits once (benchmarks/results/service.md).

A write's outcome is returned only after its commit, so an accepted request's result is stored
exactly as before. When a batch fails, each of its writes is tried again alone, so one failing
write fails only its own request; a database that is down fails them all at once (503).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import Session

from rebuttal.server.background import BatchThread
from rebuttal.server.db import Database
from rebuttal.server.sqlite import SQLITE_TIMEOUT_S

log = logging.getLogger("rebuttal.server")
T = TypeVar("T")
Write = Callable[[Session], T]
UNREACHABLE = (OperationalError, InterfaceError)  # the database, not the write: retrying alone will not help


class WriteBatcher(BatchThread):
    """`await run(write)`: `write(session)` runs inside a shared transaction on the
    writer thread; its return value (or exception) comes back once that transaction commits."""

    thread_name = "rebuttal-writer"

    def __init__(self, db: Database, max_batch: int = 64, wait_s: float = 2 * SQLITE_TIMEOUT_S):
        super().__init__(max_batch)
        self.db, self.wait_s = db, wait_s

    async def run(self, write: Write[T]) -> T:
        """Await the outcome on the event loop, without holding a threadpool thread."""
        future: Future = Future()
        self._put((write, future))
        try:  # shielded: a timeout or a client gone must not abandon a write the writer holds
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), self.wait_s)
        except asyncio.TimeoutError:
            if future.cancel():  # never started, so it never will: the request fails cleanly (503)
                raise OperationalError("waiting for the database writer", None,
                                       TimeoutError("write queue stalled")) from None
            return await asyncio.wrap_future(future)  # already running: its outcome is on the way

    def _handle(self, items: list[tuple[Write, Future]]) -> None:
        batch = [(write, future) for write, future in items if future.set_running_or_notify_cancel()]
        if batch:
            self._apply(batch)

    def _apply(self, batch: list[tuple[Write, Future]]) -> None:
        try:
            with self.db.session(write=True) as session:
                outcomes = [write(session) for write, _ in batch]
        except Exception as exc:  # noqa: BLE001 - handed to the waiting request threads
            if len(batch) == 1 or isinstance(exc, UNREACHABLE):
                for _, future in batch:
                    future.set_exception(exc)
                return
            log.warning("a batch of %d writes failed (%s); trying each alone", len(batch), type(exc).__name__)
            for one in batch:
                self._apply([one])
            return
        for (_, future), outcome in zip(batch, outcomes):
            future.set_result(outcome)
