"""Issue #50: an unexpected exception is a JSON 500 that leaves the keep-alive connection usable,
and `rebuttal serve --fake-pipeline` serves the scripted fake pipeline for load tests."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
uvicorn = pytest.importorskip("uvicorn")

from fastapi.testclient import TestClient  # noqa: E402
from test_server_api import FakeServices, make_settings  # noqa: E402

from rebuttal.server import create_app  # noqa: E402
from rebuttal.server import review as review_module  # noqa: E402
from rebuttal.server.auth import create_key  # noqa: E402

INTERNAL = {"error": "internal", "detail": "internal error; the server log has the details"}


def broken_queue(*args, **kwargs):
    raise RuntimeError("a bug nobody handled")


def test_an_unhandled_exception_is_a_json_500_and_the_client_goes_on(tmp_path, monkeypatch, caplog):
    app = create_app(make_settings(tmp_path), services=FakeServices())
    key = create_key(app.state.rebuttal.db, "alice")
    monkeypatch.setattr(review_module, "list_queue", broken_queue)
    # raise_server_exceptions stays on: the exception must not escape the app at all
    with TestClient(app) as client:
        client.headers["Authorization"] = f"Bearer {key}"
        first = client.get("/v1/review")
        assert first.status_code == 500 and first.json() == INTERNAL
        assert client.get("/v1/health").status_code == 200
        assert app.state.rebuttal.request_log.flush()
    assert any("unhandled RuntimeError on GET /v1/review" in r.getMessage() and r.exc_info for r in caplog.records)
    from sqlalchemy import select

    from rebuttal.server.db import RequestLog

    with app.state.rebuttal.db.session() as session:
        statuses = session.scalars(select(RequestLog.status_code).where(RequestLog.path == "/v1/review")).all()
    assert statuses == [500]  # the request log saw the 500 too


@pytest.fixture
def live(tmp_path):
    app = create_app(make_settings(tmp_path), services=FakeServices())
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    yield port, app
    server.should_exit = True
    thread.join(10)


def test_a_500_keeps_the_keep_alive_connection_open(live, monkeypatch):
    port, app = live
    key = create_key(app.state.rebuttal.db, "alice")
    monkeypatch.setattr(review_module, "list_queue", broken_queue)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Authorization": f"Bearer {key}"}
    connection.request("GET", "/v1/review", headers=headers)
    first = connection.getresponse()
    assert first.status == 500 and json.loads(first.read()) == INTERNAL
    assert (first.getheader("connection") or "").lower() != "close" and not first.will_close
    sock = connection.sock
    connection.request("GET", "/v1/health")  # the same socket: http.client never reconnects by itself
    second = connection.getresponse()
    assert second.status == 200 and json.loads(second.read())["status"] == "ok"
    assert connection.sock is sock
    connection.close()


def test_fake_pipeline_setting_serves_the_scripted_pipeline(tmp_path):
    app = create_app(make_settings(tmp_path, fake_pipeline=True))
    key = create_key(app.state.rebuttal.db, "alice")
    with TestClient(app) as client:
        client.headers["Authorization"] = f"Bearer {key}"
        health = client.get("/v1/health").json()
        assert (health["model"], health["fake_pipeline"]) == ("fake-pipeline", True)
        answer = client.post("/v1/respond", json={"text": "they are vermin", "id": "p1"}).json()
        assert answer["result"]["reply"]["text"] == "A calm answer." and answer["review_id"] is not None
        tuples = client.post("/v1/parse", json={"text": "they are vermin", "lang": "zh"}).json()["result"]["tuples"]
        assert tuples == [{"target": "immigrants", "argument": "fake", "label": 1, "group": None}]


def test_serve_has_a_fake_pipeline_flag_that_reaches_the_settings(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from rebuttal.cli import app as cli

    seen = {}
    monkeypatch.setattr("uvicorn.run", lambda application, **kw: seen.update(app=application, **kw))
    result = CliRunner().invoke(cli, ["serve", "--fake-pipeline", "--no-preload", "--port", "8799",
                                      "--db", f"sqlite:///{tmp_path / 'f.db'}"])
    assert result.exit_code == 0, result.output
    state = seen["app"].state.rebuttal
    assert state.settings.fake_pipeline is True and state.services.health()["model"] == "fake-pipeline"
    assert seen["port"] == 8799 and seen["host"] == "127.0.0.1"
