"""The reviewer page over plain HTTP: sign-in, CSRF, escaping, filters and the three actions."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402
from test_server_api import FakeServices, make_settings  # noqa: E402

from rebuttal.server import create_app  # noqa: E402
from rebuttal.server import review as rq  # noqa: E402
from rebuttal.server.auth import create_key, revoke_key  # noqa: E402


@pytest.fixture
def page(tmp_path):
    app = create_app(make_settings(tmp_path), services=FakeServices())
    state = app.state.rebuttal
    key = create_key(state.db, "erin")
    with TestClient(app, follow_redirects=False) as client:
        review_id = client.post("/v1/respond", json={"text": "<script>alert(1)</script> vaccine lies"},
                                headers={"X-API-Key": key}).json()["review_id"]
        yield client, state, key, review_id


def sign_in(client, key) -> None:
    response = client.post("/review/login", data={"key": key})
    assert response.status_code == 303 and response.headers["location"] == "/review"


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]{64})"', html).group(1)


def test_pages_need_a_valid_key(page):
    client, state, key, review_id = page
    assert client.get("/review").headers["location"] == "/review/login"
    assert client.get(f"/review/items/{review_id}").headers["location"] == "/review/login"
    wrong = client.post("/review/login", data={"key": "rbk_nope_nope"})
    assert wrong.status_code == 401 and "not valid" in wrong.text
    sign_in(client, key)
    assert client.get("/review").status_code == 200
    cookie = client.cookies.get("rebuttal_key")
    assert cookie == key
    revoke_key(state.db, "erin")
    assert client.get("/review").headers["location"] == "/review/login"


def test_cookie_is_httponly_and_strict(page):
    client, _, key, _ = page
    header = client.post("/review/login", data={"key": key}).headers["set-cookie"].lower()
    assert "httponly" in header and "samesite=strict" in header


def test_item_page_escapes_post_and_sets_security_headers(page):
    client, _, key, review_id = page
    sign_in(client, key)
    response = client.get(f"/review/items/{review_id}")
    assert "<script>alert(1)</script>" not in response.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text
    assert "default-src 'none'" in response.headers["content-security-policy"]
    for shown in ("misinformation", "Immigrants", "0.80", "WHO", "institutional", "https://who.int/x",
                  "A calm answer about misinformation.", "<strong>analyst</strong> · fake · prompt analyst.v1"):
        assert shown in response.text
    assert "gate 0.91: &lt;b&gt;hateful&lt;/b&gt;" in response.text  # trace notes are shown, escaped
    assert client.get("/review/items/999").status_code == 404


def test_queue_filters(page):
    client, _, key, review_id = page
    client.post("/v1/respond", json={"text": "they are vermin"}, headers={"X-API-Key": key})
    sign_in(client, key)
    rows = lambda html: re.findall(r'<tr data-id="(\d+)"', html)  # noqa: E731
    assert len(rows(client.get("/review").text)) == 2
    assert rows(client.get("/review?category=misinformation").text) == [str(review_id)]
    assert rows(client.get("/review?status=approved").text) == []
    assert len(rows(client.get("/review?status=all&category=bogus").text)) == 2  # bad filter ignored


def test_actions_need_the_csrf_token(page):
    client, state, key, review_id = page
    sign_in(client, key)
    forged = client.post(f"/review/items/{review_id}", data={"action": "approve", "reply": "x", "csrf": "0" * 64})
    assert forged.status_code == 403
    with state.db.session() as session:
        assert session.get(rq.ReviewItem, review_id).status == "pending"


def test_reject_with_and_without_reason(page):
    client, state, key, review_id = page
    sign_in(client, key)
    token = csrf_of(client.get(f"/review/items/{review_id}").text)
    missing = client.post(f"/review/items/{review_id}", data={"action": "reject", "reply": "my draft",
                                                               "reason": "", "csrf": token})
    assert missing.status_code == 422 and "needs a reason" in missing.text and "my draft" in missing.text
    done = client.post(f"/review/items/{review_id}", data={"action": "reject", "reply": "x",
                                                            "reason": "misreads the post", "csrf": token})
    assert done.status_code == 303
    with state.db.session() as session:
        item = session.get(rq.ReviewItem, review_id)
        assert (item.status, item.reject_reason, item.reviewer) == ("rejected", "misreads the post", "erin")
        assert [e.action for e in rq.audit_log(session, review_id)] == ["queued", "reject"]
    assert "Decided by erin: misreads the post" in client.get(f"/review/items/{review_id}").text


class CandidateServices(FakeServices):
    """A reply kept from two candidates, as FIRE's choice (fire/candidates.py) stores it."""

    def respond(self, text, id=None):
        from rebuttal.types import Candidate

        result = super().respond(text, id)
        result.reply.chosen_because = "a vetted block answers the claim (score 0.71 >= 0.55)"
        result.reply.candidates = [Candidate(text=result.reply.text, origin="blocks", passed=True, note="fact-x"),
                                   Candidate(text="The <b>model's</b> draft.", origin="free", passed=False,
                                             note="failed restatement")]
        return result


def test_item_page_shows_why_the_reply_was_kept_and_the_other_candidates(tmp_path):
    app = create_app(make_settings(tmp_path), services=CandidateServices())
    key = create_key(app.state.rebuttal.db, "erin")
    with TestClient(app, follow_redirects=False) as client:
        review_id = client.post("/v1/respond", json={"text": "vaccine lies"}, headers={"X-API-Key": key}).json()["review_id"]
        sign_in(client, key)
        html = client.get(f"/review/items/{review_id}").text
        item = client.get(f"/v1/review/{review_id}", headers={"X-API-Key": key}).json()
    assert "Kept because: a vetted block answers the claim (score 0.71 &gt;= 0.55)" in html
    assert "1 other candidate(s)" in html and "The &lt;b&gt;model&#39;s&lt;/b&gt; draft." in html
    assert "failed restatement" in html
    assert [c["origin"] for c in item["candidates"]] == ["blocks", "free"]
