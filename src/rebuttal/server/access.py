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
from starlette.concurrency import run_in_threadpool

from rebuttal.server.auth import Caller, check_key
from rebuttal.server.ratelimit import DatabaseRateLimiter
from rebuttal.server.state import ApiError, ServerState


def state_of(request: Request) -> ServerState:
    return request.app.state.rebuttal


def presented_key(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return request.headers.get("x-api-key")


async def admit(request: Request, role: str) -> Caller:
    """Check the key (401), its role (403) and take a rate-limit token (429).

    With the database rate store the key row is read and the token taken in one write, which
    the writer commits together with other requests' writes (writer.py). The key is read on
    every request, never cached, so a revoke or role change by any process takes effect at once."""
    state = state_of(request)
    key = presented_key(request)
    if not key:
        raise ApiError(401, "missing API key: send `Authorization: Bearer <key>` or `X-API-Key: <key>`",
                       headers={"WWW-Authenticate": "Bearer"})
    in_database = isinstance(state.limiter, DatabaseRateLimiter)

    def check_and_take(session) -> tuple[Caller | None, float]:
        connection = session.connection()
        caller = check_key(connection, key)
        if caller is not None and caller.can(role) and in_database:
            return caller, state.limiter.take(connection, caller.key_id)
        return caller, 0.0

    who, wait = await state.writes.run(check_and_take)
    allowed = who is not None and who.can(role)
    if who is None:
        raise ApiError(401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"})
    request.state.key_name, request.state.key_role = who.name, who.role
    if not allowed:
        raise ApiError(403, f"this key's role is {who.role}; {request.method} {request.url.path} "
                       f"needs {role} (ask an admin: `rebuttal keys role NAME {role}`)",
                       role=who.role, required=role)
    if not in_database:  # Redis (network I/O, so off the event loop) or process memory
        wait = await run_in_threadpool(state.limiter.acquire, who.key_id)
    if wait:
        retry = max(1, round(wait + 0.5))
        raise ApiError(429, f"rate limit of {state.settings.rate_per_minute:g} requests/minute "
                       f"(burst {state.settings.rate_burst}) exceeded; retry in {retry} s",
                       headers={"Retry-After": str(retry)}, retry_after_s=retry)
    return who


def need(role: str):
    """A dependency: authenticate, check the role (403), then take a rate-limit token (429)."""

    async def dependency(request: Request) -> Caller:
        return await admit(request, role)

    dependency.__name__ = f"need_{role}"
    return dependency


Submitter = Annotated[Caller, Depends(need("submit"))]
Reviewer = Annotated[Caller, Depends(need("review"))]
Admin = Annotated[Caller, Depends(need("admin"))]


def check_owner(who: Caller, owner: str | None, what: str, key: str) -> None:
    """404 when a key that may only read its own work asks for someone else's."""
    if not who.can("review") and owner != who.name:
        raise ApiError(404, f"{what} {key} not found")
