"""Roles on keys: every endpoint and the reviewer page, allowed and refused, and the audit log."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402
from test_server_api import FakeServices, make_settings, wait_for_job  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from rebuttal.server import create_app  # noqa: E402
from rebuttal.server import review as rq  # noqa: E402
from rebuttal.server.auth import create_key, list_keys, verify_key  # noqa: E402
from rebuttal.server.commands import app as cli  # noqa: E402

ROLES = ("submit", "review", "admin")


@pytest.fixture
def team(tmp_path):
    """(client, state, keys by role, ids): a job and a result owned by the submit key, a queued item."""
    app = create_app(make_settings(tmp_path), services=FakeServices())
    state = app.state.rebuttal
    keys = {role: create_key(state.db, f"{role}-user", role) for role in ROLES}
    create_key(state.db, "victim", "submit")
    with TestClient(app, follow_redirects=False) as client:
        as_submit = {"X-API-Key": keys["submit"]}
        job = client.post("/v1/respond", json={"items": [{"text": "vermin", "id": "j1"}]}, headers=as_submit).json()
        client.headers.update(as_submit)
        wait_for_job(client, job["job_id"])
        del client.headers["X-API-Key"]
        one = client.post("/v1/respond", json={"text": "vaccine lies", "id": "r1"}, headers=as_submit).json()
        ids = {"job": job["job_id"], "result": one["result_id"], "review": one["review_id"]}
        yield client, state, keys, ids


# (method, path, json body, the least role allowed)
ENDPOINTS = [
    ("POST", "/v1/analyze", {"text": "they are vermin"}, "submit"),
    ("POST", "/v1/respond", {"text": "they are vermin"}, "submit"),
    ("POST", "/v1/parse", {"text": "they are vermin"}, "submit"),
    ("GET", "/v1/jobs/{job}", None, "submit"),
    ("GET", "/v1/jobs/{job}/results", None, "submit"),
    ("POST", "/v1/jobs/{job}/retry", None, "submit"),
    ("GET", "/v1/results/{result}", None, "submit"),
    ("GET", "/v1/review", None, "review"),
    ("GET", "/v1/review/{review}", None, "review"),
    ("POST", "/v1/review/{review}/edit", {"text": "A kinder reply."}, "review"),
    ("POST", "/v1/review/{review}/approve", {}, "review"),
    ("POST", "/v1/review/{review}/reject", {"reason": "off topic"}, "review"),
    ("GET", "/v1/review/export", None, "review"),
    ("GET", "/v1/keys", None, "admin"),
    ("POST", "/v1/keys", {"name": "newcomer", "role": "submit"}, "admin"),
    ("POST", "/v1/keys/victim/role", {"role": "review"}, "admin"),
    ("POST", "/v1/keys/victim/revoke", None, "admin"),
]


@pytest.mark.parametrize("method, path, body, least", ENDPOINTS, ids=[f"{m} {p}" for m, p, _, _ in ENDPOINTS])
def test_each_endpoint_allows_and_refuses_by_role(team, method, path, body, least):
    client, _, keys, ids = team
    url = path.format(**ids)
    for role in ROLES:  # lowest first: a refused call changes nothing for the allowed ones after it
        response = client.request(method, url, json=body, headers={"X-API-Key": keys[role]})
        if ROLES.index(role) < ROLES.index(least):
            assert response.status_code == 403, (role, response.text)
            assert response.json()["error"] == "forbidden"
            assert response.json()["role"] == role and response.json()["required"] == least
        else:
            assert response.status_code in (200, 201, 202, 409), (role, response.status_code, response.text)


def test_submit_keys_read_only_their_own_work(team):
    client, state, keys, ids = team
    other = create_key(state.db, "other-bot", "submit")
    for url in (f"/v1/jobs/{ids['job']}", f"/v1/jobs/{ids['job']}/results", f"/v1/results/{ids['result']}"):
        assert client.get(url, headers={"X-API-Key": keys["submit"]}).status_code == 200
        refused = client.get(url, headers={"X-API-Key": other})
        assert refused.status_code == 404 and refused.json()["error"] == "not_found"  # existence not confirmed
        assert client.get(url, headers={"X-API-Key": keys["review"]}).status_code == 200


def test_audit_log_records_name_and_role(team):
    client, state, keys, ids = team
    client.post(f"/v1/review/{ids['review']}/edit", json={"text": "Edited."}, headers={"X-API-Key": keys["review"]})
    approved = client.post(f"/v1/review/{ids['review']}/approve", headers={"X-API-Key": keys["admin"]}).json()
    assert [(a["actor"], a["role"], a["action"]) for a in approved["audit"]] == [
        ("system", None, "queued"), ("review-user", "review", "edit"), ("admin-user", "admin", "approve")]
    with state.db.session() as session:
        assert [e.actor_role for e in rq.audit_log(session, ids["review"])] == [None, "review", "admin"]


def test_admin_keys_endpoints_create_change_and_revoke(team):
    client, state, keys, _ = team
    admin = {"X-API-Key": keys["admin"]}
    created = client.post("/v1/keys", json={"name": "dora", "role": "submit"}, headers=admin)
    assert created.status_code == 201 and created.json()["role"] == "submit"
    new_key = created.json()["key"]
    assert verify_key(state.db, new_key).role == "submit"
    listed = client.get("/v1/keys", headers=admin).json()["keys"]
    assert {"dora", "admin-user"} <= {k["name"] for k in listed}
    assert all("key_hash" not in k and "salt" not in k for k in listed)
    assert client.get("/v1/review", headers={"X-API-Key": new_key}).status_code == 403
    assert client.post("/v1/keys/dora/role", json={"role": "review"}, headers=admin).json()["role"] == "review"
    assert client.get("/v1/review", headers={"X-API-Key": new_key}).status_code == 200  # checked per request
    assert client.post("/v1/keys/dora/role", json={"role": "owner"}, headers=admin).status_code == 422
    assert client.post("/v1/keys/nobody/revoke", headers=admin).status_code == 404
    assert client.post("/v1/keys/dora/revoke", headers=admin).status_code == 200
    assert client.get("/v1/review", headers={"X-API-Key": new_key}).status_code == 401


def test_review_page_needs_a_review_or_admin_key(team):
    client, _, keys, ids = team
    refused = client.post("/review/login", data={"key": keys["submit"]})
    assert refused.status_code == 403 and "role submit" in refused.text
    client.cookies.set("rebuttal_key", keys["submit"])  # e.g. a key whose role was lowered after sign-in
    for url in ("/review", f"/review/items/{ids['review']}"):
        page = client.get(url)
        assert page.status_code == 403 and "needs a review or admin key" in page.text
    posted = client.post(f"/review/items/{ids['review']}", data={"action": "approve", "csrf": "x"})
    assert posted.status_code == 403
    client.cookies.clear()
    for role in ("review", "admin"):
        assert client.post("/review/login", data={"key": keys[role]}).status_code == 303
        page = client.get(f"/review/items/{ids['review']}")
        assert page.status_code == 200 and f"({role})" in page.text
        client.cookies.clear()


def test_cli_creates_keys_with_roles_and_changes_them(team):
    _, state, _, _ = team
    runner = CliRunner()
    made = runner.invoke(cli, ["keys", "create", "bot", "--role", "submit", "--db", state.db.url])
    assert made.exit_code == 0, made.output
    assert verify_key(state.db, made.stdout.strip().splitlines()[0]).role == "submit"
    assert runner.invoke(cli, ["keys", "create", "x", "--role", "owner", "--db", state.db.url]).exit_code == 2
    assert runner.invoke(cli, ["keys", "role", "bot", "admin", "--db", state.db.url]).exit_code == 0
    assert {k["name"]: k["role"] for k in list_keys(state.db)}["bot"] == "admin"
    assert "\tadmin\t" in runner.invoke(cli, ["keys", "list", "--db", state.db.url]).stdout
    assert create_key(state.db, "plain") and {k["name"]: k["role"] for k in list_keys(state.db)}["plain"] == "review"
