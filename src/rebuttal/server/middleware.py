"""ASGI layers around the routes: the body-size limit and the error handlers (the request log
is in requestlog.py).
Every error leaves as JSON `{"error": code, "detail": msg}`; an unreachable database is a 503
with Retry-After, not a 500."""

from __future__ import annotations

import logging

from rebuttal.server.state import ApiError, error_body

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


def install_error_handlers(app) -> None:
    """ApiError, HTTP errors, validation errors (without echoing inputs) and anything unexpected,
    all as JSON error bodies."""
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.responses import JSONResponse

    @app.exception_handler(ApiError)
    async def _api_error(_request, exc: ApiError):
        return JSONResponse(error_body(exc.status_code, exc.detail, exc.code, **exc.extra),
                            status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request, exc):
        return JSONResponse(error_body(exc.status_code, str(exc.detail)), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request, exc):
        # Drop `input` from pydantic's errors: it would echo post texts back and into logs.
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
                  for e in exc.errors()]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        if first.get("type") == "json_invalid":
            detail = f"the body is not valid JSON (near character {first['loc'][-1]})"
        else:
            where = ".".join(str(part) for part in first["loc"] if part != "body") or "body"
            detail = f"{where}: {first['msg']}"
        return JSONResponse(error_body(422, detail, errors=errors), status_code=422)

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
    async def _unexpected(request, exc):
        log.error("unhandled %s on %s %s (request %s)", type(exc).__name__, request.method, request.url.path,
                  getattr(request.state, "request_id", "?"))
        return JSONResponse(error_body(500, "internal error; the server log has the details"), status_code=500)
