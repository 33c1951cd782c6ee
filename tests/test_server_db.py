"""Persistence, review queue, audit log, export, job recovery and the CLI (SQLite in tmp_path)."""

from __future__ import annotations

import csv
import io
import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import select, text, update  # noqa: E402
from test_server_api import FakeServices, make_settings, wait_for_job  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from conftest import fresh_database_url  # noqa: E402
from rebuttal.server import create_app  # noqa: E402
from rebuttal.server import review as rq  # noqa: E402
from rebuttal.server.auth import create_key, list_keys, verify_key  # noqa: E402
from rebuttal.server.commands import app as cli  # noqa: E402
from rebuttal.server.db import ApiKey, AuditEntry, Database, Job, JobItem, SchemaMismatch  # noqa: E402
from rebuttal.server.jobs import JobWorker, create_job, recover_interrupted  # noqa: E402




@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> Database:
    database = Database(fresh_database_url(request.param, tmp_path))
    database.init()
    yield database
    database.dispose()


def queued_item(db: Database, text: str = "they are vermin") -> int:
    with db.session() as session:
        _, item = rq.store_result(session, "respond", FakeServices().respond(text, id="x"), key_name="alice")
        return item.id


def test_schema_is_migrated_on_start_and_newer_or_foreign_databases_are_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 'v.db'}"
    assert Database(url).init() == 2
    assert Database(url).init() == 2  # reopening a current database is fine
    with Database(url).engine.begin() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0002"
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    with pytest.raises(SchemaMismatch, match="revision 0099, newer than this rebuttal's 0002; upgrade rebuttal"):
        Database(url).init()
    with pytest.raises(SchemaMismatch, match="newer"):
        create_app(make_settings(tmp_path, db_url=url), services=FakeServices())
    old = f"sqlite:///{tmp_path / 'old.db'}"
    with Database(old).engine.begin() as conn:
        conn.execute(text("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at DATETIME)"))
        conn.execute(text("INSERT INTO schema_version VALUES (0, '2025-01-01')"))
    with pytest.raises(SchemaMismatch, match="older than any .* export what you need"):
        Database(old).init()
    other = f"sqlite:///{tmp_path / 'other.db'}"
    with Database(other).engine.begin() as conn:
        conn.execute(text("CREATE TABLE notes (id INTEGER)"))
    with pytest.raises(SchemaMismatch, match="not a rebuttal database"):
        Database(other).init()


def test_keys_are_stored_hashed_and_verified(db):
    key = create_key(db, "alice")
    prefix, key_id, secret = key.split("_", 2)
    assert prefix == "rbk" and len(secret) >= 40
    with db.session() as session:
        row = session.get(ApiKey, key_id)
        assert secret not in row.key_hash and len(row.key_hash) == 64 and len(row.salt) == 32
    assert verify_key(db, key).name == "alice"
    assert verify_key(db, key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert verify_key(db, f"rbk_{key_id}") is None and verify_key(db, "") is None
    assert list_keys(db)[0]["last_used_at"] is not None
    with pytest.raises(ValueError, match="1-120 characters"):
        create_key(db, "  ")


def test_result_round_trip_keeps_trace_and_evidence(db):
    result = FakeServices().respond("vaccine lies", id="p9")
    with db.session() as session:
        row, item = rq.store_result(session, "respond", result, key_name="alice", request_id="r1")
        row_id = row.id
    with db.session() as session:
        from rebuttal.server.db import ResultRow
        from rebuttal.types import FireResult

        stored = session.get(ResultRow, row_id)
        rebuilt = FireResult.model_validate({**stored.result, "trace": stored.trace})
    assert rebuilt == result
    assert (stored.category, stored.purity, stored.request_id) == ("misinformation", 0.8, "r1")


def test_edit_keeps_original_and_audits_before_after(db):
    review_id = queued_item(db)
    with db.session() as session:
        original = session.get(rq.ReviewItem, review_id).reply
        rq.edit(session, review_id, "alice", "  A better reply.  ")
    with db.session() as session:
        item = session.get(rq.ReviewItem, review_id)
        assert (item.reply, item.original_reply, item.edited, item.status) == ("A better reply.", original, True, "pending")
        log = rq.audit_log(session, review_id)
        assert [(e.actor, e.action) for e in log] == [("system", "queued"), ("alice", "edit")]
        assert log[1].before["reply"] == original and log[1].after["reply"] == "A better reply."
        rq.edit(session, review_id, "alice", "A better reply.")  # no change, no audit row
        assert len(rq.audit_log(session, review_id)) == 2
        with pytest.raises(rq.ReviewError, match="empty"):
            rq.edit(session, review_id, "alice", " ")


def test_approve_with_final_edit_then_no_more_changes(db):
    review_id = queued_item(db)
    with db.session() as session:
        rq.approve(session, review_id, "bob", "Final words.")
    with db.session() as session:
        item = session.get(rq.ReviewItem, review_id)
        assert (item.status, item.reviewer, item.reply) == ("approved", "bob", "Final words.")
        assert item.decided_at is not None
        assert [e.action for e in rq.audit_log(session, review_id)] == ["queued", "edit", "approve"]
        for action, args in ((rq.approve, ()), (rq.edit, ("x",)), (rq.reject, ("late",))):
            with pytest.raises(rq.ReviewError, match="already approved") as info:
                action(session, review_id, "carol", *args)
            assert info.value.status_code == 409
        with pytest.raises(rq.ReviewError, match="not found"):
            rq.approve(session, 999, "bob")


def test_reject_needs_a_reason(db):
    review_id = queued_item(db)
    with db.session() as session:
        with pytest.raises(rq.ReviewError, match="needs a reason"):
            rq.reject(session, review_id, "bob", "  ")
        rq.reject(session, review_id, "bob", "tone is sarcastic")
    with db.session() as session:
        entry = session.scalars(select(AuditEntry).where(AuditEntry.action == "reject")).one()
        assert entry.actor == "bob" and entry.before["status"] == "pending"
        assert entry.after == {"status": "rejected", "reply": entry.before["reply"], "edited": False,
                               "reject_reason": "tone is sarcastic"}


def test_only_hateful_results_with_replies_are_queued(db):
    services = FakeServices()
    with db.session() as session:
        assert rq.store_result(session, "respond", services.respond("you are kind"), key_name="a")[1] is None
        assert rq.store_result(session, "analyze", services.analyze("vermin"), key_name="a")[1] is None
        assert rq.store_result(session, "parse", services.parse("vermin"), key_name="a")[1] is None
        errored = services.respond("vermin").model_copy(update={"status": "error"})
        assert rq.store_result(session, "respond", errored, key_name="a")[1] is None
        flagged = services.respond("vermin").model_copy(update={"status": "flagged"})
        row, queued = rq.store_result(session, "respond", flagged, key_name="a")
        assert (queued.result_id, queued.status) == (row.id, "pending")


def test_queue_filters_and_export_formats(db):
    ids = [queued_item(db, "vaccine lies"), queued_item(db, "vermin"), queued_item(db, "vaccine again")]
    with db.session() as session:
        rq.approve(session, ids[0], "alice", "Edited answer, with a comma.")
        rq.approve(session, ids[1], "bob")
        rq.reject(session, ids[2], "bob", "off topic")
    with db.session() as session:
        assert rq.list_queue(session, "approved").total == 2
        page = rq.list_queue(session, None, "misinformation")
        assert [i.id for i, _ in page.items] == [ids[0], ids[2]]
        assert rq.list_queue(session, "pending").total == 0
        jsonl = "".join(rq.format_export(rq.export_rows(session, "approved"), "jsonl"))
        rows = [json.loads(line) for line in jsonl.splitlines()]
        assert [(r["review_id"], r["reviewer"], r["edited"]) for r in rows] == [(ids[0], "alice", True), (ids[1], "bob", False)]
        assert rows[0]["reply"] == "Edited answer, with a comma." and rows[0]["original_reply"] != rows[0]["reply"]
        assert rows[0]["cited_evidence_ids"] == ["ev1"]
        table = list(csv.DictReader(io.StringIO("".join(rq.format_export(rq.export_rows(session), "csv")))))
        assert [r["reply"] for r in table] == ["Edited answer, with a comma.", "A calm answer about dehumanization."]
        assert table[0]["cited_evidence_ids"] == "ev1"
        empty = "".join(rq.format_export(rq.export_rows(session, "pending"), "csv"))
        assert empty.strip() == ",".join(rq.EXPORT_FIELDS)


def test_review_api_records_reviewer_identity(tmp_path):
    app = create_app(make_settings(tmp_path), services=FakeServices())
    state = app.state.rebuttal
    alice, bob = create_key(state.db, "alice"), create_key(state.db, "bob")
    with TestClient(app) as client:
        first = client.post("/v1/respond", json={"text": "vaccine lies"}, headers={"X-API-Key": alice}).json()
        second = client.post("/v1/respond", json={"text": "vermin"}, headers={"X-API-Key": alice}).json()
        headers = {"X-API-Key": bob}
        queue = client.get("/v1/review", params={"category": "misinformation"}, headers=headers).json()
        assert [i["id"] for i in queue["items"]] == [first["review_id"]] and queue["total"] == 1
        edited = client.post(f"/v1/review/{first['review_id']}/edit", json={"text": "New text"}, headers=headers).json()
        assert edited["reply"] == "New text" and edited["audit"][-1]["actor"] == "bob"
        approved = client.post(f"/v1/review/{first['review_id']}/approve", headers=headers).json()
        assert approved["status"] == "approved" and approved["reviewer"] == "bob"
        again = client.post(f"/v1/review/{first['review_id']}/reject", json={"reason": "x"}, headers=headers)
        assert again.status_code == 409 and again.json()["error"] == "conflict"
        no_reason = client.post(f"/v1/review/{second['review_id']}/reject", json={"reason": ""}, headers=headers)
        assert no_reason.status_code == 422 and "reason" in no_reason.json()["detail"]
        assert client.get("/v1/review/999", headers=headers).status_code == 404
        exported = client.get("/v1/review/export", params={"format": "csv"}, headers=headers)
        assert exported.headers["content-type"].startswith("text/csv")
        assert [r["reply"] for r in csv.DictReader(io.StringIO(exported.text))] == ["New text"]
        jsonl = client.get("/v1/review/export", headers=headers)
        assert [json.loads(line)["reviewer"] for line in jsonl.text.splitlines()] == ["bob"]
        assert client.get("/v1/review/export", params={"format": "xml"}, headers=headers).status_code == 422


def test_restart_resumes_interrupted_job(tmp_path):
    settings = make_settings(tmp_path)
    db = Database(settings.db_url)
    db.init()
    job = create_job(db, "respond", [("a", "vermin"), ("b", "vaccine lies"), ("c", "more vermin")], "alice", {}, None)
    worker = JobWorker(db, FakeServices(), poll_s=0.05)
    assert worker.step() is True  # item a done, then the "process dies" mid item b
    with db.session() as session:
        session.execute(update(JobItem).where(JobItem.job_id == job.id, JobItem.position == 1)
                        .values(status="running", attempts=1))
        session.execute(update(Job).where(Job.id == job.id).values(status="running"))
    app = create_app(settings, services=FakeServices())
    key = create_key(app.state.rebuttal.db, "alice")
    with TestClient(app) as client:
        client.headers["X-API-Key"] = key
        status = wait_for_job(client, job.id)
        assert (status["done"], status["errors"], status["restarts"]) == (3, 0, 1)
        assert status["message"].startswith("resumed after a server restart")
        items = client.get(f"/v1/jobs/{job.id}/results").json()["items"]
        assert [i["status"] for i in items] == ["done", "done", "done"]
    with db.session() as session:
        assert session.scalars(select(JobItem.attempts).where(JobItem.job_id == job.id)
                               .order_by(JobItem.position)).all() == [1, 2, 1]


def test_item_interrupted_too_often_fails_visibly(db):
    job = create_job(db, "analyze", [("a", "vermin")], "alice", {}, None)
    with db.session() as session:
        session.execute(update(JobItem).where(JobItem.job_id == job.id).values(status="running", attempts=3))
        session.execute(update(Job).where(Job.id == job.id).values(status="running"))
    assert recover_interrupted(db, max_attempts=3) == 1
    with db.session() as session:
        item = session.scalars(select(JobItem).where(JobItem.job_id == job.id)).one()
        refreshed = session.get(Job, job.id)
        assert item.status == "error" and "interrupted by a server restart 3 times" in item.error
        assert (refreshed.status, refreshed.errors, refreshed.restarts) == ("done", 1, 1)


def test_cli_keys_and_export(tmp_path, db):
    runner = CliRunner()
    url = db.url
    created = runner.invoke(cli, ["keys", "create", "carol", "--db", url])
    assert created.exit_code == 0, created.output
    key = created.stdout.strip().splitlines()[0]
    assert verify_key(db, key).name == "carol"
    listed = runner.invoke(cli, ["keys", "list", "--db", url])
    assert "carol" in listed.stdout and "active" in listed.stdout and key.split("_", 2)[2] not in listed.stdout
    assert runner.invoke(cli, ["keys", "revoke", "carol", "--db", url]).exit_code == 0
    assert verify_key(db, key) is None
    assert runner.invoke(cli, ["keys", "revoke", "nobody", "--db", url]).exit_code == 1
    review_id = queued_item(db)
    with db.session() as session:
        rq.approve(session, review_id, "carol")
    out = tmp_path / "approved.jsonl"
    exported = runner.invoke(cli, ["export", "--format", "jsonl", "--out", str(out), "--db", url])
    assert exported.exit_code == 0, exported.output
    assert [json.loads(line)["review_id"] for line in out.read_text().splitlines()] == [review_id]
    csv_out = runner.invoke(cli, ["export", "--format", "csv", "--db", url])
    assert csv_out.stdout.splitlines()[0].startswith("review_id,result_id")
    assert runner.invoke(cli, ["export", "--format", "xml", "--db", url]).exit_code == 2


def test_cli_refuses_a_newer_database(tmp_path, db):
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0009'"))
    result = CliRunner().invoke(cli, ["keys", "list", "--db", db.url])
    assert result.exit_code == 2 and "upgrade rebuttal" in result.output
