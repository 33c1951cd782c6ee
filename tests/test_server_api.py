"""API tests for `rebuttal serve` with fake pipeline services (no model, SQLite in tmp_path)."""

from __future__ import annotations

import logging
import threading
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import func, select  # noqa: E402

from rebuttal.server import ServerSettings, create_app  # noqa: E402
from rebuttal.server.auth import create_key, revoke_key  # noqa: E402
from rebuttal.server.db import RequestLog, ResultRow, ReviewItem  # noqa: E402
from rebuttal.types import (  # noqa: E402
    Analysis, EvidenceItem, FireResult, HateType, MemoryView, Reply, SourceTier, SparResult, SparTuple,
    Trace, TraceStep,
)


class FakeServices:
    """Deterministic stand-in for the FIRE pipeline and SPAR parser.

    "kind" → not hateful; "explode" → the pipeline raises; "hold" → waits for `release`;
    "vaccine" → misinformation with evidence; anything else → dehumanization, no evidence.
    """

    def __init__(self):
        self.calls: list[tuple[str, str]] = []
        self.release = threading.Event()
        self.release.set()

    def _fire(self, text: str, id: str | None, with_reply: bool) -> FireResult:
        if "explode" in text:
            raise RuntimeError("backend went away")
        if "hold" in text:
            self.release.wait(10)
        trace = Trace(steps=[TraceStep(stage="analyst", model="fake", prompt_version="analyst.v1", latency_s=0.01,
                                       notes=["gate 0.91: <b>hateful</b>"])])
        if "kind" in text:
            return FireResult(id=id, text=text, status="not_hateful", trace=trace,
                              analysis=Analysis(is_hateful=False, target_group="Others",
                                                category=HateType.nonfactual, reasoning="friendly"))
        category = HateType.misinformation if "vaccine" in text else HateType.dehumanization
        evidence = [EvidenceItem(id="ev1", text="Vaccines were tested on 40,000 people.", source="WHO",
                                 url="https://who.int/x", tier=SourceTier.institutional),
                    EvidenceItem(id="ev2", text="Fact check of the claim.", source="Reuters",
                                 tier=SourceTier.mainstream)] if category.needs_evidence else []
        memory = MemoryView(scores={category: 0.8}, predicted=category, purity=0.8, ambiguous=False,
                            candidates=[category])
        reply = Reply(text=f"A calm answer about {category.value}.", strategy=category.strategy,
                      cited_evidence_ids=["ev1"] if evidence else []) if with_reply else None
        return FireResult(id=id, text=text, status="ok", trace=trace, memory=memory, evidence=evidence,
                          reply=reply, analysis=Analysis(is_hateful=True, target_group="Immigrants",
                                                         category=category, reasoning="claims a group is vermin"))

    def analyze(self, text, id=None):
        self.calls.append(("analyze", text))
        return self._fire(text, id, with_reply=False)

    def respond(self, text, id=None):
        self.calls.append(("respond", text))
        return self._fire(text, id, with_reply=True)

    def parse(self, text, lang="en", track=None, id=None):
        self.calls.append(("parse", text))
        return SparResult(id=id, text=text, lang=lang, track=track or "default", llm_calls=3,
                          tuples=[SparTuple(target="immigrants", argument="are vermin", label=1)])

    def health(self):
        return {"model": "fake-model", "model_loaded": True, "memory_size": 123}


def make_settings(tmp_path, **overrides) -> ServerSettings:
    values = {"db_url": f"sqlite:///{tmp_path / 'server.db'}", "job_poll_s": 0.05, "rate_per_minute": 6000,
              "rate_burst": 1000}
    return ServerSettings(**{**values, **overrides})


@pytest.fixture
def server(tmp_path):
    """(client, app state, key, services) with a fresh database."""
    services = FakeServices()
    app = create_app(make_settings(tmp_path), services=services)
    state = app.state.rebuttal
    key = create_key(state.db, "alice")
    with TestClient(app) as client:
        client.headers["Authorization"] = f"Bearer {key}"
        yield client, state, key, services


def wait_for_job(client, job_id: str, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get(f"/v1/jobs/{job_id}").json()
        if status["status"] == "done":
            return status
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish: {status}")


def test_health_needs_no_key_and_reports_model(server):
    client, _, _, _ = server
    body = client.get("/v1/health", headers={"Authorization": ""}).json()
    assert body["status"] == "ok" and body["database"] == "ok"
    assert body["model"] == "fake-model" and body["model_loaded"] is True and body["memory_size"] == 123
    assert body["version"] and body["schema_version"] == 2 and body["review_pending"] == 0
    assert body["roles"] == ["submit", "review", "admin"]


def test_openapi_lists_the_endpoints(server):
    client, _, _, _ = server
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/v1/analyze", "/v1/respond", "/v1/parse", "/v1/jobs/{job_id}", "/v1/review/export"):
        assert path in paths
    assert "/review" not in paths  # the HTML page is not part of the API
    assert client.get("/docs").status_code == 200


@pytest.mark.parametrize("headers, detail", [
    ({"Authorization": ""}, "missing API key"),
    ({"Authorization": "Bearer rbk_0000_wrong"}, "invalid or revoked"),
    ({"Authorization": "", "X-API-Key": "not-even-a-key"}, "invalid or revoked"),
])
def test_missing_or_wrong_key_is_401_json(server, headers, detail):
    client, _, _, services = server
    response = client.post("/v1/respond", json={"text": "they are vermin"}, headers=headers)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized" and detail in response.json()["detail"]
    assert services.calls == []


def test_revoked_key_stops_working_and_x_api_key_works(server):
    client, state, _, _ = server
    key = create_key(state.db, "bob")
    assert client.get("/v1/review", headers={"Authorization": "", "X-API-Key": key}).status_code == 200
    assert revoke_key(state.db, "bob")
    assert client.get("/v1/review", headers={"Authorization": "", "X-API-Key": key}).status_code == 401


def test_respond_stores_result_trace_and_queues_reply(server):
    client, state, _, _ = server
    response = client.post("/v1/respond", json={"text": "vaccine lies from immigrants", "id": "p1"})
    assert response.status_code == 200
    body = response.json()
    assert body["result"]["status"] == "ok" and body["result"]["id"] == "p1"
    assert body["result"]["trace"]["steps"][0]["prompt_version"] == "analyst.v1"
    assert body["review_id"] is not None
    stored = client.get(f"/v1/results/{body['result_id']}").json()
    assert stored["key_name"] == "alice" and stored["result"]["reply"]["cited_evidence_ids"] == ["ev1"]
    assert stored["result"]["trace"]["steps"][0]["stage"] == "analyst"
    item = client.get(f"/v1/review/{body['review_id']}").json()
    assert item["status"] == "pending" and item["category"] == "misinformation" and item["purity"] == 0.8
    assert [e["tier"] for e in item["evidence"]] == ["institutional", "mainstream"]
    assert [(a["actor"], a["action"]) for a in item["audit"]] == [("system", "queued")]
    assert state.request_log.flush()  # rows are stored by a background thread after each response
    with state.db.session() as session:
        log_row = session.scalars(select(RequestLog).where(RequestLog.path == "/v1/respond")).one()
        assert (log_row.key_name, log_row.status_code, log_row.items) == ("alice", 200, 1)


def test_non_hateful_and_analyze_results_are_stored_but_never_queued(server):
    client, state, _, _ = server
    kind = client.post("/v1/respond", json={"text": "you are kind"}).json()
    analysis = client.post("/v1/analyze", json={"text": "they are vermin"}).json()
    assert kind["result"]["status"] == "not_hateful" and kind["review_id"] is None
    assert analysis["result"]["reply"] is None and analysis["review_id"] is None
    with state.db.session() as session:
        assert session.scalar(select(func.count(ResultRow.id))) == 2
        assert session.scalar(select(func.count(ReviewItem.id))) == 0


def test_parse_returns_tuples(server):
    client, _, _, _ = server
    body = client.post("/v1/parse", json={"text": "immigrants are vermin", "lang": "en"}).json()
    assert body["result"]["tuples"] == [{"target": "immigrants", "argument": "are vermin", "label": 1, "group": None}]
    assert body["review_id"] is None
    bad = client.post("/v1/parse", json={"text": "x", "lang": "fr"})
    assert bad.status_code == 422 and bad.json()["detail"].startswith("lang:")


def test_pipeline_crash_is_503_and_still_stored(server):
    client, _, _, _ = server
    response = client.post("/v1/respond", json={"text": "explode please"})
    assert response.status_code == 503
    body = response.json()
    assert body["error"] == "unavailable" and "RuntimeError: backend went away" in body["detail"]
    stored = client.get(f"/v1/results/{body['result_id']}").json()["result"]
    assert stored["status"] == "error" and stored["text"] == "explode please"


@pytest.mark.parametrize("payload, fragment", [
    ({"text": "   "}, "text is empty"),
    ({}, "either `text`"),
    ({"text": "a", "items": [{"text": "b"}]}, "either `text`"),
    ({"text": "MARKER-TEXT", "colour": "red"}, "colour"),
    ({"items": []}, "items"),
])
def test_bad_requests_are_422_json_without_echoing_text(server, payload, fragment):
    client, _, _, services = server
    response = client.post("/v1/respond", json=payload)
    assert response.status_code == 422
    body = response.json()
    assert body["error"] in ("invalid_request", "invalid_text") and fragment in body["detail"]
    assert all("input" not in error for error in body.get("errors", []))
    assert "MARKER-TEXT" not in response.text
    assert services.calls == []


def test_malformed_json_is_422_with_a_clear_message(server):
    client, _, _, _ = server
    response = client.post("/v1/respond", content=b'{"text": oops}', headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert response.json()["detail"].startswith("the body is not valid JSON")


def test_text_over_the_limit_is_422(tmp_path):
    app = create_app(make_settings(tmp_path, max_text_chars=20), services=FakeServices())
    key = create_key(app.state.rebuttal.db, "alice")
    with TestClient(app) as client:
        response = client.post("/v1/respond", json={"text": "x" * 21}, headers={"X-API-Key": key})
    assert response.status_code == 422 and "limit is 20" in response.json()["detail"]


def test_request_size_limit_is_413_json(tmp_path):
    app = create_app(make_settings(tmp_path, max_request_bytes=2048), services=FakeServices())
    key = create_key(app.state.rebuttal.db, "alice")
    with TestClient(app) as client:
        headers = {"X-API-Key": key}
        big = client.post("/v1/respond", json={"text": "y" * 5000}, headers=headers)
        assert big.status_code == 413 and big.json()["error"] == "too_large"
        chunked = client.post("/v1/respond", content=iter([b'{"text": "', b"z" * 4000, b'"}']),
                              headers={**headers, "Content-Type": "application/json"})
        assert chunked.status_code == 413 and "2048 bytes" in chunked.json()["detail"]
        small = client.post("/v1/respond", content=iter([b'{"text": "they are vermin"}']),
                            headers={**headers, "Content-Type": "application/json"})
        assert small.status_code == 200 and small.json()["result"]["status"] == "ok"


def test_batch_size_limit_is_422(tmp_path):
    app = create_app(make_settings(tmp_path, max_batch=3), services=FakeServices())
    key = create_key(app.state.rebuttal.db, "alice")
    with TestClient(app) as client:
        response = client.post("/v1/analyze", json={"items": [{"text": "a"}] * 4}, headers={"X-API-Key": key})
    assert response.status_code == 422
    assert response.json()["error"] == "batch_too_large" and response.json()["limit"] == 3


def test_rate_limit_is_429_with_retry_after(tmp_path):
    app = create_app(make_settings(tmp_path, rate_per_minute=1, rate_burst=2), services=FakeServices())
    state = app.state.rebuttal
    alice, bob = create_key(state.db, "alice"), create_key(state.db, "bob")
    with TestClient(app) as client:
        codes = [client.get("/v1/review", headers={"X-API-Key": alice}).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        limited = client.get("/v1/review", headers={"X-API-Key": alice})
        assert limited.json()["error"] == "rate_limited" and 1 <= limited.json()["retry_after_s"] <= 60
        assert int(limited.headers["Retry-After"]) == limited.json()["retry_after_s"]
        assert client.get("/v1/review", headers={"X-API-Key": bob}).status_code == 200  # buckets are per key
        assert client.get("/v1/health").status_code == 200  # health is never limited


def test_batch_job_runs_to_completion_in_order(server):
    client, state, _, services = server
    items = [{"text": "vaccine lies", "id": "a"}, {"text": "  ", "id": "b"}, {"text": "explode", "id": "c"},
             {"text": "you are kind", "id": "d"}, {"text": "they are vermin", "id": "e"}]
    response = client.post("/v1/respond", json={"items": items})
    assert response.status_code == 202
    job = response.json()
    assert job["total"] == 5 and job["status_url"] == f"/v1/jobs/{job['job_id']}"
    status = wait_for_job(client, job["job_id"])
    assert (status["done"], status["errors"], status["restarts"]) == (5, 2, 0)
    assert status["finished_at"] is not None
    results = client.get(job["results_url"]).json()["items"]
    assert [r["id"] for r in results] == ["a", "b", "c", "d", "e"]
    assert [r["status"] for r in results] == ["done", "error", "error", "done", "done"]
    assert "text is empty" in results[1]["error"] and "backend went away" in results[2]["error"]
    assert [r["review_id"] is not None for r in results] == [True, False, False, False, True]
    assert results[0]["result"]["trace"]["steps"][0]["model"] == "fake"
    page = client.get(job["results_url"], params={"offset": 3, "limit": 1}).json()["items"]
    assert [r["id"] for r in page] == ["d"]
    assert ("respond", "  ") not in services.calls  # bad input never reaches the model
    assert client.get("/v1/jobs/nope").status_code == 404


def test_parse_batch_keeps_lang_and_track(server):
    client, _, _, _ = server
    job = client.post("/v1/parse", json={"items": [{"text": "一些文本"}], "lang": "zh", "track": "t1"}).json()
    wait_for_job(client, job["job_id"])
    result = client.get(job["results_url"]).json()["items"][0]["result"]
    assert (result["lang"], result["track"], result["tuples"][0]["label"]) == ("zh", "t1", 1)


def test_info_logs_carry_no_post_text_or_key(server, caplog):
    client, _, key, _ = server
    secret_text = "vaccine SECRET-POST-TEXT-123"
    with caplog.at_level(logging.INFO):
        client.post("/v1/respond", json={"text": secret_text})
        job = client.post("/v1/respond", json={"items": [{"text": secret_text}, {"text": "explode " + secret_text}]})
        wait_for_job(client, job.json()["job_id"])
        client.post("/v1/respond", json={"text": secret_text, "bogus": 1})
    info = "\n".join(r.getMessage() for r in caplog.records if r.levelno <= logging.WARNING)
    assert "/v1/respond" in info
    assert "SECRET-POST-TEXT" not in info and key not in info and key.split("_", 2)[2] not in info  # the secret may hold "_"


def test_cors_is_off_by_default_and_explicit_when_on(tmp_path):
    preflight = {"Origin": "https://review.example.org", "Access-Control-Request-Method": "POST"}
    app = create_app(make_settings(tmp_path), services=FakeServices())
    with TestClient(app) as client:
        assert "access-control-allow-origin" not in client.options("/v1/respond", headers=preflight).headers
    app = create_app(make_settings(tmp_path, cors_origins=["https://review.example.org"]), services=FakeServices())
    with TestClient(app) as client:
        allowed = client.options("/v1/respond", headers=preflight)
        assert allowed.headers["access-control-allow-origin"] == "https://review.example.org"
        other = client.options("/v1/respond", headers={**preflight, "Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
    with pytest.raises(ValueError, match="explicit origins"):
        make_settings(tmp_path, cors_origins=["*"])
