"""ASGI layers around the routes: the body-size limit, the last-resort 500 and the error
handlers (the request log is in requestlog.py).
Every error leaves as JSON `{"error": code, "detail": msg}`; an unreachable database is a 503
with Retry-After, not a 500; a body that cannot be read as JSON is a 422 saying why."""

from __future__ import annotations

import logging

from rebuttal.server.state import ApiError, error_body
from rebuttal.types import storable

log = logging.getLogger("rebuttal.server")
DB_RETRY_S = 2  # Retry-After when the database is briefly unavailable


class BodySizeLimit:
    """Pure ASGI: refuse bodies over the limit, by header or while streaming (chunked)."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        too_big = length is not None and length.isdigit() and int(length) > self.max_bytes
        if not too_big and length is None and scope["method"] in ("POST", "PUT", "PATCH"):
            chunks, size, more = [], 0, True
            while more:
                message = await receive()
                chunks.append(message)
                size += len(message.get("body", b""))
                more = message.get("more_body", False) and message["type"] == "http.request"
                if size > self.max_bytes:
                    too_big = True
                    break
            if not too_big:
                replay = iter(chunks)

                async def receive():  # noqa: F811 - hand the buffered body to the app
                    return next(replay, {"type": "http.request", "body": b"", "more_body": False})
        if too_big:
            from starlette.responses import JSONResponse

            response = JSONResponse(error_body(413, f"request body is larger than {self.max_bytes} bytes; "
                                               "split the batch or raise --max-request-bytes"), status_code=413)
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)


class InternalErrors:
    """Pure ASGI, just outside the routes: an exception no handler took is logged with its
    traceback and answered with a JSON 500 here, and not raised further. (Starlette's outermost
    layer also answers 500, but then re-raises for the server to log, and uvicorn closed the
    keep-alive connection after it without `Connection: close`.) Only when the response had
    already started (a failing stream) is the exception raised on: then closing the connection
    is the one way left to tell the client."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def send_and_watch(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_and_watch)
        except Exception as exc:
            if started:
                raise
            log.error("unhandled %s on %s %s (request %s)", type(exc).__name__, scope["method"], scope["path"],
                      scope.get("state", {}).get("request_id", "?"), exc_info=exc)
            from starlette.responses import JSONResponse

            response = JSONResponse(error_body(500, "internal error; the server log has the details"), status_code=500)
            await response(scope, receive, send)


PARSE_FAILED = "There was an error parsing the body"  # FastAPI's 400 for a body json.loads raised on


def body_error(cause: BaseException | None) -> str:
    """Why FastAPI could not read the body as JSON (it keeps the error as the 400's cause)."""
    if isinstance(cause, UnicodeDecodeError):
        return f"the body is not valid UTF-8 (byte {cause.start}); send JSON encoded as UTF-8"
    if isinstance(cause, RecursionError):
        return "the body's JSON is nested too deeply"
    if isinstance(cause, ValueError):  # e.g. an integer of more than 4300 digits
        return f"the body is not valid JSON: {str(cause)[:200]}"
    return "the body could not be read as JSON"


def _validation_detail(errors: list[dict]) -> str:
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    if first.get("type") == "json_invalid":
        return f"the body is not valid JSON (near character {first['loc'][-1]})"
    where = ".".join(str(part) for part in first["loc"] if part != "body") or "body"
    return f"{where}: {first['msg']}"


def install_error_handlers(app) -> None:
    """ApiError, HTTP errors, validation errors (without echoing inputs), unreadable bodies and
    anything unexpected, all as JSON error bodies."""
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.responses import JSONResponse

    @app.exception_handler(ApiError)
    async def _api_error(_request, exc: ApiError):
        return JSONResponse(error_body(exc.status_code, exc.detail, exc.code, **exc.extra),
                            status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request, exc):
        if exc.status_code == 400 and exc.detail == PARSE_FAILED:
            return JSONResponse(error_body(422, body_error(exc.__cause__)), status_code=422)
        return JSONResponse(error_body(exc.status_code, str(exc.detail)), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request, exc):
        # Drop `input` from pydantic's errors: it would echo post texts back and into logs. A
        # field name may hold a lone surrogate (an unknown key): storable() keeps it sendable.
        errors = [{"loc": [storable(p) if isinstance(p, str) else p for p in e.get("loc", ())],
                   "msg": e.get("msg", ""), "type": e.get("type", "")} for e in exc.errors()]
        return JSONResponse(error_body(422, _validation_detail(errors), errors=errors), status_code=422)

    from sqlalchemy.exc import InterfaceError, OperationalError
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    async def _database_down(request, exc):
        # Connection refused, server restarting, SQLite locked past its timeout, pool exhausted:
        # nothing was half-written (sessions roll back), so the client may simply retry.
        log.warning("database unavailable on %s %s: %s", request.method, request.url.path, type(exc).__name__)
        return JSONResponse(error_body(503, "the database is unavailable; retry shortly", retry_after_s=DB_RETRY_S),
                            status_code=503, headers={"Retry-After": str(DB_RETRY_S)})

    for error in (OperationalError, InterfaceError, PoolTimeout):
        app.add_exception_handler(error, _database_down)
    async def _rate_store_down(request, exc):
        log.warning("rate-limit store unavailable on %s %s: %s", request.method, request.url.path, type(exc).__name__)
        return JSONResponse(error_body(503, "the rate-limit store is unavailable; retry shortly", retry_after_s=DB_RETRY_S),
                            status_code=503, headers={"Retry-After": str(DB_RETRY_S)})

    try:  # the Redis rate store is optional
        from redis.exceptions import ConnectionError as RedisDown, TimeoutError as RedisTimeout
    except ImportError:
        pass
    else:
        for error in (RedisDown, RedisTimeout):
            app.add_exception_handler(error, _rate_store_down)

    @app.exception_handler(Exception)
    async def _unexpected(request, exc):  # only if a layer outside InternalErrors fails
        log.error("unhandled %s on %s %s (request %s)", type(exc).__name__, request.method, request.url.path,
                  getattr(request.state, "request_id", "?"))
        return JSONResponse(error_body(500, "internal error; the server log has the details"), status_code=500)
