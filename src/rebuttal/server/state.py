"""What every route shares: the server state on `app.state.rebuttal` and the one error type.

Routes (api.py, web.py) import this module, and app.py builds the state; neither imports the
other, so the server package has no import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Path, Query
from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from rebuttal.server.db import Database
from rebuttal.server.jobs import JobWorker
from rebuttal.server.ratelimit import DatabaseRateLimiter, RedisRateLimiter, TokenBucketLimiter
from rebuttal.server.requestlog import RequestLogWriter
from rebuttal.server.services import Services
from rebuttal.server.settings import ServerSettings
from rebuttal.server.writer import WriteBatcher
from rebuttal.types import storable

MAX_DB_INT = 2**63 - 1  # the largest id or offset a database integer holds
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
    # storable: a detail that quotes a lone surrogate could not be sent as UTF-8
    return {"error": code or ERROR_CODES.get(status_code, "error"), "detail": storable(detail), **extra}


def _storable_field(value: str) -> str:
    """Short fields other than post texts (ids, names, tracks) are checked by the schema: a lone
    surrogate or a NUL could not be stored (UTF-8, PostgreSQL text), so they are a 422."""
    for position, char in enumerate(value):
        if char == "\x00" or "\ud800" <= char <= "\udfff":
            raise PydanticCustomError("unstorable_character",
                                      "contains {char} at position {position}; it cannot be stored",
                                      {"char": "NUL" if char == "\x00" else f"a lone surrogate (U+{ord(char):04X})",
                                       "position": position})
    return value


FieldText = Annotated[str, AfterValidator(_storable_field)]

# Integers the database must hold (larger ones raised OverflowError in the driver): a 422.
ReviewId = Annotated[int, Path(ge=1, le=MAX_DB_INT, description="a review item's id")]
Offset = Annotated[int, Query(ge=0, le=MAX_DB_INT)]
