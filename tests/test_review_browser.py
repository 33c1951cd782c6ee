"""End to end: uvicorn in a thread, headless Debian Chromium driven by Playwright.

A pending item is created through the API; a reviewer signs in on the page, edits the reply
and approves it; the database row and the audit log must show both actions.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("needs Debian chromium at /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="needs the playwright package (pip install playwright)")
pytest.importorskip("uvicorn", reason="needs uvicorn (pip install 'rebuttal[server]')")

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from test_server_api import FakeServices, make_settings  # noqa: E402

from rebuttal.server import create_app  # noqa: E402
from rebuttal.server import review as rq  # noqa: E402
from rebuttal.server.auth import create_key  # noqa: E402

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def live_server(tmp_path):
    app = create_app(make_settings(tmp_path), services=FakeServices())
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", app.state.rebuttal
    server.should_exit = True
    thread.join(10)


def test_reviewer_edits_and_approves_in_chromium(live_server, tmp_path):
    base, state = live_server
    key = create_key(state.db, "dana")
    created = httpx.post(f"{base}/v1/respond", json={"text": "vaccine lies <b>spread</b> by immigrants"},
                         headers={"Authorization": f"Bearer {key}"}, timeout=10).json()
    review_id = created["review_id"]
    assert review_id is not None

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page()
            page.set_default_timeout(15_000)
            page.goto(f"{base}/review")
            assert page.url.endswith("/review/login")
            page.fill("#key", key)
            page.click("#sign-in")
            page.wait_for_url(f"{base}/review")
            assert page.text_content("#reviewer") == "dana"
            row = page.locator(f'#queue tr[data-id="{review_id}"]')
            assert "misinformation" in row.inner_text()
            page.select_option("#filter-category", "dehumanization")
            page.click("#filters button[type=submit]")
            page.wait_for_url("**category=dehumanization**")
            assert page.locator(f'#queue tr[data-id="{review_id}"]').count() == 0
            page.goto(f"{base}/review")
            page.click(f'#queue tr[data-id="{review_id}"] a')
            page.wait_for_url(f"{base}/review/items/{review_id}")
            # The post is shown as text, never as markup.
            assert page.text_content("#post") == "vaccine lies <b>spread</b> by immigrants"
            assert page.text_content("#category") == "misinformation"
            assert page.text_content("#target") == "Immigrants"
            assert page.text_content("#purity").startswith("0.80")
            evidence = page.inner_text("#evidence")
            assert "WHO" in evidence and "institutional" in evidence and "Reuters" in evidence and "cited" in evidence
            page.fill("#reply", "Edited in the browser: the trials covered 40,000 people.")
            page.click("#save")
            page.wait_for_selector("#notice")
            assert "Edit saved" in page.text_content("#notice")
            assert page.text_content("#status") == "pending"
            page.click("#approve")
            page.wait_for_selector("#status:text('approved')")
            assert page.locator("#approve").count() == 0  # decided items have no actions
            assert "approve" in page.inner_text("#audit")
        finally:
            browser.close()

    with state.db.session() as session:
        item = session.get(rq.ReviewItem, review_id)
        assert (item.status, item.reviewer, item.edited) == ("approved", "dana", True)
        assert item.reply == "Edited in the browser: the trials covered 40,000 people."
        assert item.original_reply == "A calm answer about misinformation."
        audit = rq.audit_log(session, review_id)
        assert [(e.actor, e.action) for e in audit] == [("system", "queued"), ("dana", "edit"), ("dana", "approve")]
        assert audit[1].before["reply"] == "A calm answer about misinformation."
        assert audit[1].after["reply"] == item.reply
        assert audit[2].after["status"] == "approved"
