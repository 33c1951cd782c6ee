"""Faults and several workers: shared rate limits, migration from the pre-Alembic schema, a
restart with jobs in flight, a database that goes away, a backend that times out."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("alembic")

import httpx  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import event, func, select  # noqa: E402
from test_server_api import FakeServices, make_settings, wait_for_job  # noqa: E402

from conftest import fresh_database_url  # noqa: E402
from fakes import run_in_threads  # noqa: E402
from rebuttal.server import create_app  # noqa: E402
from rebuttal.server.auth import create_key, verify_key  # noqa: E402
from rebuttal.server.db import Database, Job, JobItem, ResultRow  # noqa: E402

SCHEMA_V1 = Path(__file__).parent / "data" / "server_schema_v1.sql"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    """A fresh database URL shared by the app instances of one test."""
    return fresh_database_url(request.param, tmp_path, "shared.db")


def results_per_client_id(db: Database, job_id: str) -> dict[str, int]:
    with db.session() as session:
        return dict(session.execute(select(ResultRow.client_id, func.count()).where(ResultRow.job_id == job_id)
                                    .group_by(ResultRow.client_id)).all())


def test_rate_limit_is_shared_by_two_app_instances_on_one_database(tmp_path, db_url):
    settings = make_settings(tmp_path, rate_per_minute=1, rate_burst=3, db_url=db_url)
    first, second = create_app(settings, services=FakeServices()), create_app(settings, services=FakeServices())
    key = create_key(first.state.rebuttal.db, "alice")
    with TestClient(first) as a, TestClient(second) as b:
        codes = [client.get("/v1/review", headers={"X-API-Key": key}).status_code for client in (a, b, a, b)]
        assert codes == [200, 200, 200, 429]  # one bucket of 3 across both instances, not 3 each
        limited = a.get("/v1/review", headers={"X-API-Key": key})
        assert limited.status_code == 429 and limited.json()["error"] == "rate_limited"
        assert int(limited.headers["Retry-After"]) == limited.json()["retry_after_s"] >= 1
    memory = make_settings(tmp_path, rate_per_minute=1, rate_burst=3, rate_store="memory", db_url=db_url)
    with TestClient(create_app(memory, services=FakeServices())) as c:
        assert c.get("/v1/review", headers={"X-API-Key": key}).status_code == 200  # its own bucket


def test_rate_bucket_refills_with_time(tmp_path):
    from rebuttal.server.ratelimit import DatabaseRateLimiter

    db = Database(f"sqlite:///{tmp_path / 'r.db'}")
    db.init()
    now = [1000.0]
    limiter = DatabaseRateLimiter(db, per_minute=60, burst=2, clock=lambda: now[0])
    other = DatabaseRateLimiter(db, per_minute=60, burst=2, clock=lambda: now[0])  # a second process
    assert [limiter.acquire("k"), other.acquire("k")] == [0.0, 0.0]
    assert limiter.acquire("k") == pytest.approx(1.0)
    now[0] += 1.0
    assert other.acquire("k") == 0.0 and limiter.acquire("k") == pytest.approx(1.0)
    now[0] += 100
    assert [limiter.acquire("k"), limiter.acquire("k"), limiter.acquire("k")] == [0.0, 0.0, pytest.approx(1.0)]


def test_redis_buckets_are_shared_refill_and_never_overdraw():
    fakeredis = pytest.importorskip("fakeredis")
    from rebuttal.server.ratelimit import RedisRateLimiter

    server = fakeredis.FakeServer()
    now = [1000.0]
    limiter = RedisRateLimiter(fakeredis.FakeRedis(server=server), per_minute=60, burst=2, clock=lambda: now[0])
    other = RedisRateLimiter(fakeredis.FakeRedis(server=server), per_minute=60, burst=2, clock=lambda: now[0])
    assert [limiter.acquire("k"), other.acquire("k")] == [0.0, 0.0]
    assert limiter.acquire("k") == pytest.approx(1.0) and other.acquire("other-key") == 0.0
    now[0] += 1.0
    assert other.acquire("k") == 0.0 and limiter.acquire("k") == pytest.approx(1.0)
    # 40 threads racing for a fresh bucket of 10 tokens: exactly 10 win
    race = RedisRateLimiter(fakeredis.FakeRedis(server=server), per_minute=1, burst=10, clock=lambda: now[0])
    won = []
    assert run_in_threads(lambda: won.append(race.acquire("burst") == 0.0), 40) == []
    assert sum(won) == 10


def test_redis_outage_is_a_clean_503(tmp_path, monkeypatch):
    fakeredis = pytest.importorskip("fakeredis")
    from rebuttal.server.ratelimit import RedisRateLimiter

    server = fakeredis.FakeServer()
    monkeypatch.setattr(RedisRateLimiter, "from_url", classmethod(
        lambda cls, url, per_minute, burst: cls(fakeredis.FakeRedis(server=server), per_minute, burst)))
    app = create_app(make_settings(tmp_path, rate_store="redis"), services=FakeServices())
    key = create_key(app.state.rebuttal.db, "alice")
    with TestClient(app) as client:
        assert client.get("/v1/review", headers={"X-API-Key": key}).status_code == 200
        server.connected = False
        down = client.get("/v1/review", headers={"X-API-Key": key})
        assert down.status_code == 503 and "rate-limit store is unavailable" in down.json()["detail"]
        server.connected = True
        assert client.get("/v1/review", headers={"X-API-Key": key}).status_code == 200


def test_upgrade_from_the_pre_alembic_schema_keeps_the_queue(tmp_path):
    path = tmp_path / "team.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA_V1.read_text())
        conn.execute("INSERT INTO api_keys VALUES ('k1', 'alice', 'salt', 'hash', '2026-01-01 00:00:00', NULL, NULL)")
        conn.execute("INSERT INTO jobs VALUES ('j1', 'respond', 'queued', 'alice', NULL, '{}', 1, 0, 0, 0, NULL, "
                     "'2026-01-01 00:00:00', NULL, NULL)")
        conn.execute("INSERT INTO job_items (job_id, position, client_id, text, status, attempts) "
                     "VALUES ('j1', 0, 'p1', 'they are vermin', 'queued', 0)")
        conn.execute("INSERT INTO results VALUES ('r1', 'respond', NULL, NULL, 'p0', 'alice', 'old post', 'ok', "
                     "'dehumanization', 'Immigrants', 0.8, '{}', '{}', '2026-01-01 00:00:00')")
        conn.execute("INSERT INTO review_items VALUES (1, 'r1', 'pending', 'dehumanization', 'Immigrants', 'orig', "
                     "'orig', 0, NULL, NULL, '2026-01-01 00:00:00', '2026-01-01 00:00:00', NULL)")
        conn.execute("INSERT INTO audit_log VALUES (1, 1, 'system', 'queued', '2026-01-01 00:00:00', '{}', '{}')")
    settings = make_settings(tmp_path, db_url=f"sqlite:///{path}")
    app = create_app(settings, services=FakeServices())
    state = app.state.rebuttal
    assert state.schema_version == 2
    key = create_key(state.db, "bob")
    with TestClient(app) as client:
        client.headers["X-API-Key"] = key
        queue = client.get("/v1/review").json()
        assert (queue["items"][0]["id"], queue["items"][0]["reply"]) == (1, "orig")  # the job may add one
        item = client.get("/v1/review/1").json()
        assert [(a["actor"], a["role"]) for a in item["audit"]] == [("system", None)]
        assert wait_for_job(client, "j1")["done"] == 1  # the queued job survives and runs
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT role FROM api_keys WHERE id = 'k1'").fetchone() == ("review",)
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == ("0002",)
        assert [v for (v,) in conn.execute("SELECT version FROM schema_version ORDER BY version")] == [1, 2]
    assert create_app(settings, services=FakeServices()).state.rebuttal.schema_version == 2  # idempotent


def test_instances_starting_together_on_a_fresh_database_take_turns_migrating(db_url):
    def start():
        assert Database(db_url).init() == 2

    assert run_in_threads(start, 3) == []


class Blocking(FakeServices):
    """Blocks on the item whose text contains "stuck" until `unblock` is set (a hung process)."""

    def __init__(self):
        super().__init__()
        self.unblock, self.entered = threading.Event(), threading.Event()

    def respond(self, text, id=None):
        if "stuck" in text:
            self.entered.set()
            self.unblock.wait(20)
        return super().respond(text, id)


def test_restart_with_jobs_in_flight_resumes_without_duplicates(tmp_path, db_url):
    settings = make_settings(tmp_path, job_lease_s=0.6, db_url=db_url)
    hung = Blocking()
    first = create_app(settings, services=hung)
    key = create_key(first.state.rebuttal.db, "alice")
    items = [{"text": f"vermin {i}" + (" stuck" if i == 3 else ""), "id": f"p{i}"} for i in range(8)]
    first.state.rebuttal.worker.start()  # no lifespan: the "killed" process is never shut down cleanly
    job_id = TestClient(first).post("/v1/respond", json={"items": items}, headers={"X-API-Key": key}).json()["job_id"]
    assert hung.entered.wait(10)
    first.state.rebuttal.worker.stop(timeout=0.1)  # "killed": no more lease renewals, item 3 never ends
    restarted = FakeServices()
    second = create_app(settings, services=restarted)
    with TestClient(second) as client:
        client.headers["X-API-Key"] = key
        status = wait_for_job(client, job_id, timeout=15)
        assert (status["done"], status["errors"]) == (8, 0) and status["restarts"] >= 1
        hung.unblock.set()  # the old process wakes up late and tries to store item 3 too
        time.sleep(0.3)
        results = client.get(f"/v1/jobs/{job_id}/results").json()["items"]
    assert [r["status"] for r in results] == ["done"] * 8
    assert results_per_client_id(second.state.rebuttal.db, job_id) == {f"p{i}": 1 for i in range(8)}
    assert ("respond", "vermin 3 stuck") in restarted.calls


class Outage:
    """Makes every statement on the engine fail as if the database file or server were gone."""

    def __init__(self, db: Database):
        self.down = False
        event.listen(db.engine, "before_cursor_execute", self._check)

    def _check(self, *_args, **_kwargs):
        if self.down:
            raise sqlite3.OperationalError("unable to open database file")


def test_database_outage_gives_503_and_recovers_without_losing_items(tmp_path):
    services = Blocking()
    app = create_app(make_settings(tmp_path), services=services)
    state = app.state.rebuttal
    key = create_key(state.db, "alice")
    outage = Outage(state.db)
    with TestClient(app) as client:
        client.headers["X-API-Key"] = key
        items = [{"text": "vermin stuck", "id": "a"}, {"text": "vermin", "id": "b"}]
        job_id = client.post("/v1/respond", json={"items": items}).json()["job_id"]
        assert services.entered.wait(10)
        outage.down = True
        services.unblock.set()  # item a finishes while the database is away
        for path in ("/v1/analyze", "/v1/respond"):
            down = client.post(path, json={"text": "they are vermin"})
            assert down.status_code == 503 and down.json()["error"] == "unavailable"
            assert down.headers["Retry-After"] == "2" and "database is unavailable" in down.json()["detail"]
        health = client.get("/v1/health").json()
        assert health["status"] == "degraded" and health["database"].startswith("error")
        time.sleep(0.3)
        outage.down = False
        assert client.post("/v1/analyze", json={"text": "they are vermin"}).status_code == 200
        status = wait_for_job(client, job_id)
        assert (status["done"], status["errors"]) == (2, 0)
    assert results_per_client_id(state.db, job_id) == {"a": 1, "b": 1}


class TimingOut(FakeServices):
    """The model backend times out on "slow" posts until `healthy` is set."""

    def __init__(self):
        super().__init__()
        self.healthy = False

    def analyze(self, text, id=None):
        if "slow" in text and not self.healthy:
            raise httpx.ReadTimeout("timed out waiting for the model server")
        return super().analyze(text, id)


def test_backend_timeout_marks_the_item_failed_and_retryable(tmp_path):
    services = TimingOut()
    app = create_app(make_settings(tmp_path), services=services)
    key = create_key(app.state.rebuttal.db, "alice")
    with TestClient(app) as client:
        client.headers["X-API-Key"] = key
        one = client.post("/v1/analyze", json={"text": "slow vermin"})
        assert one.status_code == 503 and one.json()["retryable"] is True and one.headers["Retry-After"] == "5"
        crash = client.post("/v1/respond", json={"text": "explode"})
        assert crash.status_code == 503 and crash.json()["retryable"] is False
        items = [{"text": "vermin", "id": "a"}, {"text": "slow vermin", "id": "b"}, {"text": "  ", "id": "c"}]
        job_id = client.post("/v1/analyze", json={"items": items}).json()["job_id"]
        status = wait_for_job(client, job_id)
        assert (status["done"], status["errors"]) == (3, 2)
        rows = client.get(f"/v1/jobs/{job_id}/results").json()["items"]
        assert [(r["status"], r["retryable"]) for r in rows] == [("done", False), ("error", True), ("error", False)]
        assert "ReadTimeout" in rows[1]["error"] and rows[1]["result_id"] is not None  # failed, not lost
        services.healthy = True
        retried = client.post(f"/v1/jobs/{job_id}/retry").json()
        assert retried["requeued"] == 1  # only the timed-out item, not the empty post
        status = wait_for_job(client, job_id)
        assert (status["done"], status["errors"]) == (3, 1)
        rows = client.get(f"/v1/jobs/{job_id}/results").json()["items"]
        assert [r["status"] for r in rows] == ["done", "done", "error"]
        assert client.post(f"/v1/jobs/{job_id}/retry").json()["requeued"] == 0
    assert results_per_client_id(app.state.rebuttal.db, job_id) == {"a": 1, "b": 1, "c": 1}
    with app.state.rebuttal.db.session() as session:
        assert session.scalar(select(func.count()).select_from(JobItem).where(JobItem.status == "queued")) == 0
        assert session.get(Job, job_id).status == "done"
    assert verify_key(app.state.rebuttal.db, key).role == "review"
