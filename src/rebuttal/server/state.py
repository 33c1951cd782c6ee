"""What every route shares: the server state on `app.state.rebuttal` and the one error type.

Routes (api.py, web.py) import this module, and app.py builds the state; neither imports the
other, so the server package has no import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebuttal.server.db import Database
from rebuttal.server.jobs import JobWorker
from rebuttal.server.ratelimit import DatabaseRateLimiter, RedisRateLimiter, TokenBucketLimiter
from rebuttal.server.requestlog import RequestLogWriter
from rebuttal.server.services import Services
from rebuttal.server.settings import ServerSettings
from rebuttal.server.writer import WriteBatcher

ERROR_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 409: "conflict", 413: "too_large", 422: "invalid_request",
               429: "rate_limited", 500: "internal", 503: "unavailable"}


class ApiError(Exception):
    def __init__(self, status_code: int, detail: str, code: str | None = None,
                 headers: dict | None = None, **extra):
        super().__init__(detail)
        self.status_code, self.detail = status_code, detail
        self.code = code or ERROR_CODES.get(status_code, "error")
        self.headers, self.extra = headers or {}, extra


@dataclass
class ServerState:
    settings: ServerSettings
    db: Database
    services: Services
    limiter: TokenBucketLimiter | DatabaseRateLimiter | RedisRateLimiter
    worker: JobWorker
    request_log: RequestLogWriter
    writes: WriteBatcher  # the requests' own writes, committed in groups
    schema_version: int
    templates: object


def error_body(status_code: int, detail: str, code: str | None = None, **extra) -> dict:
    return {"error": code or ERROR_CODES.get(status_code, "error"), "detail": detail, **extra}
