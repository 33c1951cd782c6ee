"""Who may call what: authentication (401), roles (403) and the shared rate limit (429).

Every /v1 route except health declares the role it needs with one of the aliases below:

    Submitter  submit, review, admin   pipelines; its own jobs and results
    Reviewer   review, admin           the queue, edits, decisions, export; anyone's jobs/results
    Admin      admin                   keys

A `submit` key reading a job or result that another key's name created gets 404, not 403, so
ids of other teams' work are not confirmed.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from rebuttal.server.auth import Caller, verify_key
from rebuttal.server.state import ApiError, ServerState


def state_of(request: Request) -> ServerState:
    return request.app.state.rebuttal


def presented_key(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return request.headers.get("x-api-key")


def authenticate(request: Request) -> Caller:
    """The caller behind the request's key, or 401."""
    state = state_of(request)
    key = presented_key(request)
    if not key:
        raise ApiError(401, "missing API key: send `Authorization: Bearer <key>` or `X-API-Key: <key>`",
                       headers={"WWW-Authenticate": "Bearer"})
    who = verify_key(state.db, key)
    if who is None:
        raise ApiError(401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"})
    request.state.key_name, request.state.key_role = who.name, who.role
    return who


def rate_limit(state: ServerState, who: Caller) -> None:
    wait = state.limiter.acquire(who.key_id)
    if wait:
        retry = max(1, round(wait + 0.5))
        raise ApiError(429, f"rate limit of {state.settings.rate_per_minute:g} requests/minute "
                       f"(burst {state.settings.rate_burst}) exceeded; retry in {retry} s",
                       headers={"Retry-After": str(retry)}, retry_after_s=retry)


def need(role: str):
    """A dependency: authenticate, check the role (403), then take a rate-limit token (429)."""

    def dependency(request: Request) -> Caller:
        who = authenticate(request)
        if not who.can(role):
            raise ApiError(403, f"this key's role is {who.role}; {request.method} {request.url.path} "
                           f"needs {role} (ask an admin: `rebuttal keys role NAME {role}`)",
                           role=who.role, required=role)
        rate_limit(state_of(request), who)
        return who

    dependency.__name__ = f"need_{role}"
    return dependency


Submitter = Annotated[Caller, Depends(need("submit"))]
Reviewer = Annotated[Caller, Depends(need("review"))]
Admin = Annotated[Caller, Depends(need("admin"))]


def check_owner(who: Caller, owner: str | None, what: str, key: str) -> None:
    """404 when a key that may only read its own work asks for someone else's."""
    if not who.can("review") and owner != who.name:
        raise ApiError(404, f"{what} {key} not found")
