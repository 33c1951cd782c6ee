"""The group-committing writer (server/writer.py): writes waiting together share one commit,
each caller gets its own outcome, a failing write fails only its caller, a stalled queue fails
cleanly without running the write later."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

pytest.importorskip("sqlalchemy")

from sqlalchemy import event, func, insert, select  # noqa: E402
from sqlalchemy.exc import OperationalError  # noqa: E402

from fakes import run_in_threads  # noqa: E402
from rebuttal.server.db import Database, RateBucket  # noqa: E402
from rebuttal.server.writer import WriteBatcher  # noqa: E402


@pytest.fixture
def db(tmp_path):
    database = Database(f"sqlite:///{tmp_path / 'w.db'}")
    database.init()
    yield database
    database.dispose()


def run(writer: WriteBatcher, write):
    """What a request does: await the write (here from a thread of its own, as uvicorn's loop)."""
    return asyncio.run(writer.run(write))


def bucket(name: str):
    def write(session):
        session.connection().execute(insert(RateBucket), {"key": name, "tokens": 1.0, "updated": 0.0})
        return name
    return write


def stored(db: Database) -> set[str]:
    with db.session() as session:
        return set(session.scalars(select(RateBucket.key)))


def test_writes_waiting_together_share_a_commit_and_each_gets_its_outcome(db):
    writer = WriteBatcher(db)
    commits = []
    event.listen(db.engine, "commit", lambda _c: commits.append(threading.current_thread().name))
    outcomes, names = [], iter(range(30))
    with db.session(write=True):  # hold the write lock while 30 requests queue behind the writer
        holder = threading.Thread(target=lambda: run_in_threads(
            lambda: outcomes.append(run(writer, bucket(f"k{next(names)}"))), 30))
        holder.start()
        time.sleep(0.3)
    holder.join(10)
    writer.stop()
    assert sorted(outcomes) == sorted(f"k{i}" for i in range(30))
    assert stored(db) == set(outcomes)
    assert 1 <= commits.count("rebuttal-writer") <= 3  # the first alone, the rest together


def test_a_failing_write_fails_only_its_caller(db):
    writer = WriteBatcher(db)

    def broken(session):
        bucket("bad")(session)
        raise ValueError("this write is wrong")

    results: dict[str, object] = {}

    def call(name, write):
        try:
            results[name] = run(writer, write)
        except ValueError as exc:
            results[name] = exc

    with db.session(write=True):  # queue them so they land in one batch
        threads = [threading.Thread(target=call, args=(n, w)) for n, w in
                   (("a", bucket("a")), ("bad", broken), ("b", bucket("b")))]
        for thread in threads:
            thread.start()
        time.sleep(0.3)
    for thread in threads:
        thread.join(10)
    writer.stop()
    assert results["a"] == "a" and results["b"] == "b" and isinstance(results["bad"], ValueError)
    assert stored(db) == {"a", "b"}  # the failing write's row was rolled back with its attempt


def test_an_unreachable_database_fails_the_write_with_a_503_error(tmp_path):
    broken = Database(f"sqlite:///{tmp_path / 'missing' / 'x.db'}")  # never initialised: no tables
    with pytest.raises(OperationalError):
        run(WriteBatcher(broken), bucket("a"))


def test_a_write_that_waited_too_long_is_cancelled_and_never_runs(db):
    writer = WriteBatcher(db, wait_s=0.2)
    with db.session(write=True):  # the writer is stuck behind this lock for longer than the wait
        first = threading.Thread(target=lambda: run(writer, bucket("first")))
        first.start()
        time.sleep(0.05)
        with pytest.raises(OperationalError, match="database writer"):
            run(writer, bucket("late"))
        time.sleep(0.3)
    first.join(10)
    writer.stop()
    assert stored(db) == {"first"}  # already running when its wait ran out: waited for, stored once


def test_run_answers_on_the_event_loop(db):
    writer = WriteBatcher(db)

    async def many():
        return await asyncio.gather(*(writer.run(bucket(f"a{i}")) for i in range(5)))

    assert asyncio.run(many()) == [f"a{i}" for i in range(5)]
    writer.stop()
    with db.session() as session:
        assert session.scalar(select(func.count()).select_from(RateBucket)) == 5


def test_the_sqlite_write_gate_holds_writers_of_other_processes_off(tmp_path):
    pytest.importorskip("fcntl")
    from rebuttal.server.sqlite import WriteGate

    database = str(tmp_path / "g.db")
    mine, theirs = WriteGate(database), WriteGate(database)  # two processes: separate locks, one file
    assert mine.acquire(timeout=1)
    assert (tmp_path / "g.db-writers").exists()
    started = time.monotonic()
    assert not theirs.acquire(timeout=0.2)  # waits its timeout, then gives up (the request gets 503)
    assert time.monotonic() - started >= 0.2
    threading.Timer(0.1, mine.release).start()
    assert theirs.acquire(timeout=5)  # taken as soon as the holder lets go
    theirs.release()
    assert WriteGate(":memory:").acquire(timeout=0.1)  # an in-memory database has no file to lock
