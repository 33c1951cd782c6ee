"""The reviewer page: server-rendered HTML (Jinja2, autoescaped), plain forms, no JavaScript.

Reviewers sign in with their API key; it is kept in an HttpOnly, SameSite=Strict cookie and
its name and role are the reviewer's identity in the audit log. Only `review` and `admin` keys
may sign in or act; a `submit` key gets 403 on every page (the role is checked per request, so
a key whose role was lowered loses the page at once). Forms carry a CSRF token derived from
the key, so another site cannot submit actions on a reviewer's behalf.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from rebuttal.server import review
from rebuttal.server.auth import Caller, verify_key
from rebuttal.server.db import ResultRow, ReviewItem
from rebuttal.server.state import MAX_DB_INT, ReviewId
from rebuttal.types import HateType

router = APIRouter(include_in_schema=False)
COOKIE = "rebuttal_key"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _csrf(key: str) -> str:
    return hmac.new(key.encode(), b"rebuttal-review-form", hashlib.sha256).hexdigest()


def _reviewer(request: Request) -> tuple[Caller, str] | Response:
    """(caller, key) for a signed-in review/admin key; otherwise the response to send instead:
    a 403 page for a submit key, the login page when nobody is signed in."""
    key = request.cookies.get(COOKIE)
    who = verify_key(request.app.state.rebuttal.db, key) if key else None
    if who is None:
        return _to_login()
    request.state.key_name, request.state.key_role = who.name, who.role
    if not who.can("review"):
        return _forbidden(request, who)
    return who, key


def _forbidden(request: Request, who: Caller) -> HTMLResponse:
    return _render(request, "message.html", status_code=403, who=None, csrf="",
                   message=f"The key of {who.name} has the role {who.role}; the review page needs a review "
                           "or admin key. Ask an admin to change it, or sign in with another key.")


async def _form(request: Request) -> dict[str, str]:
    # urlencoded forms only, parsed here so the page needs no python-multipart
    body = (await request.body()).decode("utf-8", errors="replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


def _render(request: Request, template: str, status_code: int = 200, **context) -> HTMLResponse:
    templates = request.app.state.rebuttal.templates
    response = templates.TemplateResponse(request, template, context, status_code=status_code)
    response.headers.update(SECURITY_HEADERS)
    return response


def _to_login() -> RedirectResponse:
    return RedirectResponse("/review/login", status_code=303)


@router.get("/")
def root():
    return RedirectResponse("/review", status_code=303)


@router.get("/review/login")
def login_page(request: Request):
    return _render(request, "login.html", error=None)


@router.post("/review/login")
async def login(request: Request):
    form = await _form(request)
    key = form.get("key", "").strip()
    who = verify_key(request.app.state.rebuttal.db, key)
    if who is None:
        return _render(request, "login.html", status_code=401, error="That key is not valid or was revoked.")
    if not who.can("review"):
        return _render(request, "login.html", status_code=403,
                       error=f"That key has the role {who.role}; the review page needs a review or admin key.")
    response = RedirectResponse("/review", status_code=303)
    response.set_cookie(COOKIE, key, httponly=True, samesite="strict", path="/",
                        secure=request.app.state.rebuttal.settings.cookie_secure, max_age=12 * 3600)
    return response


@router.post("/review/logout")
def logout():
    response = _to_login()
    response.delete_cookie(COOKIE, path="/")
    return response


@router.get("/review")
def queue_page(request: Request, status: str = "pending", category: str = "", offset: int = 0):
    signed_in = _reviewer(request)
    if not isinstance(signed_in, tuple):
        return signed_in
    who, key = signed_in
    status = status if status in review.STATUSES or status == "all" else "pending"
    category = category if category in HateType.__members__ else ""
    offset = min(max(0, offset), MAX_DB_INT)
    with request.app.state.rebuttal.db.session() as session:
        page = review.list_queue(session, None if status == "all" else status, category or None, 50, offset)
        rows = [review.item_view(item, result) for item, result in page.items]
    query = {"status": status, "category": category}
    return _render(request, "queue.html", who=who, csrf=_csrf(key), rows=rows, total=page.total,
                   status=status, category=category, statuses=(*review.STATUSES, "all"),
                   categories=[c.value for c in HateType], offset=offset,
                   next_url=f"/review?{urlencode({**query, 'offset': offset + 50})}" if offset + 50 < page.total else None,
                   prev_url=f"/review?{urlencode({**query, 'offset': max(0, offset - 50)})}" if offset else None)


@router.get("/review/items/{review_id}")
def item_page(request: Request, review_id: ReviewId, notice: str = ""):
    signed_in = _reviewer(request)
    if not isinstance(signed_in, tuple):
        return signed_in
    who, key = signed_in
    with request.app.state.rebuttal.db.session() as session:
        item = session.get(ReviewItem, review_id)
        if item is None:
            return _render(request, "message.html", status_code=404, who=who, csrf=_csrf(key),
                           message=f"Review item {review_id} does not exist.")
        view = review.item_view(item, session.get(ResultRow, item.result_id), review.audit_log(session, item.id))
    return _render(request, "item.html", who=who, csrf=_csrf(key), item=view,
                   notice=notice[:200], error=None)


@router.post("/review/items/{review_id}")
async def item_action(request: Request, review_id: ReviewId):
    signed_in = _reviewer(request)
    if not isinstance(signed_in, tuple):
        return signed_in
    who, key = signed_in
    form = await _form(request)
    if not hmac.compare_digest(form.get("csrf", ""), _csrf(key)):
        return _render(request, "message.html", status_code=403, who=who, csrf=_csrf(key),
                       message="The form expired or came from another site; reload the page and try again.")
    action, text, reason = form.get("action"), form.get("reply", ""), form.get("reason", "")
    db = request.app.state.rebuttal.db
    try:
        with db.session() as session:
            if action == "save":
                review.edit(session, review_id, who.name, text, who.role)
                notice = "Edit saved; the item is still pending."
            elif action == "approve":
                review.approve(session, review_id, who.name, text, who.role)
                notice = "Approved."
            elif action == "reject":
                review.reject(session, review_id, who.name, reason, who.role)
                notice = "Rejected."
            else:
                raise review.ReviewError(f"unknown action {action!r}", 422)
    except review.ReviewError as exc:
        with db.session() as session:
            item = session.get(ReviewItem, review_id)
            if item is None:
                return _render(request, "message.html", status_code=404, who=who, csrf=_csrf(key), message=str(exc))
            view = review.item_view(item, session.get(ResultRow, item.result_id), review.audit_log(session, item.id))
        view["reply"] = text or view["reply"]  # keep the reviewer's unsaved text in the editor
        return _render(request, "item.html", status_code=exc.status_code, who=who, csrf=_csrf(key),
                       item=view, notice="", error=str(exc))
    return RedirectResponse(f"/review/items/{review_id}?{urlencode({'notice': notice})}", status_code=303)
