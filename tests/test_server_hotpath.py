"""The per-request path of `rebuttal serve`: the key check and rate-limit token in one write,
handed like the stored result to the group-committing writer (test_server_writer.py); no key
cache (revokes and role changes from any process count at once); the request log written in
batches by its own thread; SQLite writers taking turns; and `serve --workers`."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

import httpx  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import event, func, select  # noqa: E402
from test_server_api import FakeServices, make_settings  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from conftest import fresh_database_url  # noqa: E402
from fakes import run_in_threads, wait_until_ok  # noqa: E402
from rebuttal.server import create_app  # noqa: E402
from rebuttal.server.auth import create_key, revoke_key, set_role  # noqa: E402
from rebuttal.server.db import Database, RateBucket, RequestLog, utcnow  # noqa: E402
from rebuttal.server.ratelimit import DatabaseRateLimiter  # noqa: E402
from rebuttal.server.requestlog import RequestLogWriter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def app(tmp_path):
    return create_app(make_settings(tmp_path), services=FakeServices())


def commits_by_thread(db: Database) -> list[str]:
    """The names of the threads that commit, in order."""
    seen: list[str] = []
    event.listen(db.engine, "commit", lambda _connection: seen.append(threading.current_thread().name))
    return seen


def test_one_post_costs_two_writer_commits_and_none_on_request_threads(tmp_path):
    app = create_app(make_settings(tmp_path, rate_per_minute=0.001), services=FakeServices())  # ~no refill
    state = app.state.rebuttal
    key = create_key(state.db, "alice", "submit")
    with TestClient(app) as client:
        client.headers["X-API-Key"] = key
        assert client.post("/v1/analyze", json={"text": "they are vermin"}).status_code == 200  # bucket created
        assert state.request_log.flush()
        commits = commits_by_thread(state.db)
        assert client.post("/v1/analyze", json={"text": "they are vermin"}).status_code == 200
        assert state.request_log.flush()
    # key check + token, then the stored result, each handed to the writer; the log row has its own thread.
    # The job worker's periodic recovery sweep commits on its own clock (seen once in CI): not the post's.
    by_post = [name for name in commits if not name.startswith("rebuttal-jobs")]
    assert sorted(by_post) == ["rebuttal-request-log", "rebuttal-writer", "rebuttal-writer"]
    with state.db.session() as session:
        assert session.scalar(select(RateBucket.tokens).where(RateBucket.key == key.split("_")[1])) == \
            pytest.approx(998, abs=0.01)
        assert session.scalar(select(func.count()).select_from(RequestLog)) == 2


@pytest.mark.parametrize("change, status", [
    (lambda db: revoke_key(db, "bob"), 401),
    (lambda db: set_role(db, "bob", "submit"), 403),
])
def test_a_revoke_or_role_change_by_another_process_counts_at_once(app, tmp_path, change, status):
    state = app.state.rebuttal
    key = create_key(state.db, "bob", "review")
    elsewhere = Database(state.db.url)  # the CLI or another worker: its own engine, nothing shared in memory
    with TestClient(app) as client:
        client.headers["X-API-Key"] = key
        assert client.get("/v1/review").status_code == 200
        change(elsewhere)
        assert client.get("/v1/review").status_code == status  # the very next request, no cache to expire
    elsewhere.dispose()


def test_request_log_rows_are_written_after_the_response_with_their_values(app):
    state = app.state.rebuttal
    key = create_key(state.db, "carol", "submit")
    with TestClient(app) as client:
        client.post("/v1/analyze", json={"text": "they are vermin"}, headers={"X-API-Key": key})
        client.get("/v1/review", headers={"X-API-Key": key})  # 403: a submit key
        client.get("/v1/jobs/nope", headers={"X-API-Key": "rbk_x_y"})  # 401
        client.get("/v1/health")  # never logged
        assert state.request_log.flush()
        with state.db.session() as session:
            rows = session.execute(select(RequestLog.path, RequestLog.key_name, RequestLog.status_code,
                                          RequestLog.items).order_by(RequestLog.created_at)).all()
    assert [tuple(row) for row in rows] == [("/v1/analyze", "carol", 200, 1), ("/v1/review", "carol", 403, 0),
                                            ("/v1/jobs/nope", None, 401, 0)]


def test_request_log_writer_batches_rows_and_stores_the_queue_on_stop(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'log.db'}")
    db.init()
    writer = RequestLogWriter(db)
    commits = []
    event.listen(db.engine, "commit", lambda _conn: commits.append(threading.current_thread().name))
    row = {"created_at": utcnow(), "method": "POST", "path": "/v1/analyze", "key_name": "k", "status_code": 200,
           "duration_ms": 1.0, "items": 1, "job_id": None}
    with db.session() as session:  # hold the database while 50 rows queue up behind the writer
        session.connection().exec_driver_sql("BEGIN IMMEDIATE")
        for i in range(50):
            writer.add({**row, "id": f"r{i}"})
        time.sleep(0.2)
    writer.stop()
    with db.session() as session:
        assert session.scalar(select(func.count()).select_from(RequestLog)) == 50
    assert 1 <= commits.count("rebuttal-request-log") <= 3  # the first row alone, then the rest together


def test_request_log_failures_never_fail_requests(app):
    state = app.state.rebuttal
    state.request_log.retry_s = 0.01
    key = create_key(state.db, "dave", "submit")

    def refuse(conn, cursor, statement, *_):
        if statement.startswith("INSERT INTO requests"):
            raise RuntimeError("log table is broken")

    event.listen(state.db.engine, "before_cursor_execute", refuse)
    with TestClient(app) as client:
        answer = client.post("/v1/analyze", json={"text": "they are vermin"}, headers={"X-API-Key": key})
        assert answer.status_code == 200
        assert state.request_log.flush()
    event.remove(state.db.engine, "before_cursor_execute", refuse)
    with state.db.session() as session:
        assert session.scalar(select(func.count()).select_from(RequestLog)) == 0


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    database = Database(fresh_database_url(request.param, tmp_path))
    database.init()
    yield database
    database.dispose()


def test_database_bucket_is_taken_in_the_callers_transaction(db):
    limiter = DatabaseRateLimiter(db, per_minute=60, burst=2, clock=lambda: 1000.0)
    with pytest.raises(RuntimeError), db.session(write=True) as session:
        assert limiter.take(session.connection(), "k") == 0.0
        raise RuntimeError("the request failed before its commit")
    assert [limiter.acquire("k"), limiter.acquire("k"), limiter.acquire("k")] == [0.0, 0.0, pytest.approx(1.0)]


def test_concurrent_writers_never_overdraw_a_fresh_bucket(db):
    limiter = DatabaseRateLimiter(db, per_minute=1, burst=10, clock=lambda: 1000.0)
    won = []
    errors = run_in_threads(lambda: won.append(limiter.acquire("burst") == 0.0), 40)
    assert errors == [] and sum(won) == 10 and len(won) == 40


def test_serve_refuses_memory_buckets_with_several_workers(tmp_path):
    from rebuttal.cli import app as cli

    result = CliRunner().invoke(cli, ["serve", "--db", f"sqlite:///{tmp_path / 's.db'}", "--workers", "2",
                                      "--rate-store", "memory", "--no-preload"])
    assert result.exit_code == 2 and "would multiply the rate limit" in result.output


def test_worker_factory_builds_the_app_from_the_settings_the_cli_resolved(tmp_path, monkeypatch):
    from rebuttal.server.app import WORKER_ENV, create_app_from_env

    settings = make_settings(tmp_path, rate_per_minute=7, max_batch=3)
    monkeypatch.setenv(WORKER_ENV, json.dumps({"settings": settings.model_dump(mode="json"), "preload": False,
                                               "log_level": "info"}))
    logger = logging.getLogger("rebuttal")
    level, handlers = logger.level, list(logger.handlers)
    try:
        state = create_app_from_env().state.rebuttal
    finally:  # the factory configures process-wide logging, as a worker process should
        logger.setLevel(level)
        logger.handlers[:] = handlers
    assert (state.settings.db_url, state.settings.rate_per_minute, state.settings.max_batch) == \
        (settings.db_url, 7, 3)
    state.db.dispose()


def test_serve_with_two_workers_answers_and_shares_the_rate_limit(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'w.db'}"
    database = Database(db_url)
    database.init()
    key = create_key(database, "erin", "review")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    server = subprocess.Popen([sys.executable, "-m", "rebuttal.cli", "serve", "--db", db_url, "--port", str(port),
                               "--workers", "2", "--no-preload", "--rate-per-minute", "1", "--rate-burst", "4",
                               "--log-level", "warning"], env=env, cwd=ROOT)
    try:
        assert wait_until_ok(f"http://127.0.0.1:{port}/v1/health", 120, server), "serve --workers 2 did not start"
        codes = [httpx.get(f"http://127.0.0.1:{port}/v1/review", headers={"X-API-Key": key}, timeout=30).status_code
                 for _ in range(6)]
        assert codes == [200, 200, 200, 200, 429, 429]  # one bucket of 4 for both processes
    finally:
        server.terminate()
        server.wait(30)


def test_worker_sockets_keep_tcp_nodelay():
    import asyncio

    import uvicorn

    from rebuttal.server.commands import _keep_tcp_nodelay

    class Config(uvicorn.Config):  # a subclass: the test leaves uvicorn's own class alone
        pass

    _keep_tcp_nodelay(Config)
    listener = Config("rebuttal.server.app:create_app_from_env", host="127.0.0.1", port=0).bind_socket()
    assert listener.proto == socket.IPPROTO_TCP

    async def accepted_nodelay() -> int:
        seen = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport):
                seen.set_result(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP,
                                                                              socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        with socket.create_connection(listener.getsockname()):
            value = await asyncio.wait_for(seen, 10)
        server.close()
        return value

    assert asyncio.run(accepted_nodelay()) != 0  # Nagle off: no ~40 ms wait for a delayed ACK
