"""What SQLite needs to serve several writers: connection pragmas, and a write gate where
writers take turns (threads of one process, and worker processes on the same file).

Meeting SQLite's own lock, a writer sleeps in its busy handler (1, 2, 5, ... 100 ms between
retries): at 32 concurrent requests that made 0.1 ms writes take 15 ms on average in one
process, and with two worker processes it put a few hundred milliseconds on one request in a
hundred (benchmarks/results/service.md). The gate is a thread lock, then an advisory file
lock (`flock`) on `<database>-writers` beside the file, polled every 0.05-1 ms. Programs that
skip the gate (the CLI's one-off writes) still meet SQLite's lock and its busy timeout.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: worker processes meet SQLite's own lock
    fcntl = None

SQLITE_POOL = 40  # anyio's default threadpool size
SQLITE_TIMEOUT_S = 30  # how long a writer waits for the database lock before the request gets 503


class WriteGate:
    """acquire(timeout) -> bool, release(): the turn of one writer on one database file."""

    def __init__(self, database: str | None):
        self._threads = threading.Lock()
        self._path = None
        if fcntl is not None and database and database != ":memory:":
            path = Path(database).expanduser()
            self._path = path.with_name(path.name + "-writers")
        self._held = None  # the open lock file while a writer holds the gate

    def acquire(self, timeout: float = SQLITE_TIMEOUT_S) -> bool:
        deadline = time.monotonic() + timeout
        if not self._threads.acquire(timeout=timeout):
            return False
        if self._path is None:
            return True
        handle, pause = open(self._path, "a+b"), 0.00005  # noqa: SIM115 - closed in release()
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._held = handle
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    handle.close()
                    self._threads.release()
                    return False
                time.sleep(pause)
                pause = min(pause * 2, 0.001)

    def release(self) -> None:
        if self._held is not None:
            handle, self._held = self._held, None
            handle.close()  # closing the file releases its lock
        self._threads.release()


def sqlite_pragmas(connection, _record) -> None:
    # WAL lets the reviewer page read while the batch worker writes. synchronous=NORMAL in WAL
    # mode keeps the database consistent and loses nothing when the process crashes; only the
    # last commits before a power cut may be lost (it saves an fsync per commit).
    cursor = connection.cursor()
    deadline = time.monotonic() + SQLITE_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            # Processes starting together on a new file race to switch it to WAL, and SQLite
            # answers "locked" at once instead of waiting out its busy timeout: retry.
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
