"""The FastAPI application: `create_app(settings, services)`.

Layers, outermost first: body-size limit (413) → request log (one row per /v1 request, no
texts) → optional CORS → routes. Every error leaves as JSON `{"error": code, "detail": msg}`.
"""

from __future__ import annotations

import logging
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from rebuttal.llm.base import require
from rebuttal.server.db import Database, RequestLog, new_id
from rebuttal.server.jobs import JobWorker
from rebuttal.server.ratelimit import TokenBucketLimiter
from rebuttal.server.services import PipelineServices, Services
from rebuttal.server.settings import ServerSettings

log = logging.getLogger("rebuttal.server")
TEMPLATES = Path(__file__).parent / "templates"
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
    limiter: TokenBucketLimiter
    worker: JobWorker
    schema_version: int
    templates: object


def error_body(status_code: int, detail: str, code: str | None = None, **extra) -> dict:
    return {"error": code or ERROR_CODES.get(status_code, "error"), "detail": detail, **extra}


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


def create_app(settings: ServerSettings | None = None, services: Services | None = None):
    """Build the app. Without `services`, the FIRE pipeline and SPAR parser load on first use."""
    fastapi = require("fastapi", "server")
    from fastapi.exceptions import RequestValidationError
    from fastapi.templating import Jinja2Templates
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse

    import rebuttal
    from rebuttal.server import api, web

    settings = settings or ServerSettings.from_env()
    db = Database(settings.db_url)
    schema_version = db.init()  # fails fast, with the fix, on a mismatched database
    services = services or PipelineServices(settings.pipeline)
    worker = JobWorker(db, services, poll_s=settings.job_poll_s, max_chars=settings.max_text_chars,
                       max_attempts=settings.max_item_attempts)
    state = ServerState(settings=settings, db=db, services=services,
                        limiter=TokenBucketLimiter(settings.rate_per_minute, settings.rate_burst),
                        worker=worker, schema_version=schema_version,
                        templates=Jinja2Templates(directory=str(TEMPLATES)))

    @asynccontextmanager
    async def lifespan(_app):
        worker.start()
        log.info("rebuttal server ready: database %s, schema v%d", db.safe_url, schema_version)
        try:
            yield
        finally:
            worker.stop()

    app = fastapi.FastAPI(
        title="rebuttal", version=rebuttal.__version__, lifespan=lifespan,
        description="FIRE counterspeech and SPAR-Hate parsing with a human review queue. "
                    "Send the API key as `Authorization: Bearer <key>` or `X-API-Key`.",
    )
    app.state.rebuttal = state

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

    @app.exception_handler(Exception)
    async def _unexpected(request, exc):
        log.error("unhandled %s on %s %s (request %s)", type(exc).__name__, request.method, request.url.path,
                  getattr(request.state, "request_id", "?"))
        return JSONResponse(error_body(500, "internal error; the server log has the details"), status_code=500)

    @app.middleware("http")
    async def _request_log(request, call_next):
        request.state.request_id = new_id()
        started = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            key_name = getattr(request.state, "key_name", None)
            # Path and caller only: never bodies, query texts or keys.
            log.info("%s %s -> %d (%s, %.0f ms)", request.method, request.url.path, status, key_name or "-", elapsed)
            if request.url.path.startswith("/v1/") and request.url.path != "/v1/health":
                await run_in_threadpool(_store_request_log, db, request, status, elapsed, key_name)

    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "X-API-Key", "Content-Type"])
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.include_router(api.router)
    app.include_router(web.router)
    return app


def _store_request_log(db: Database, request, status: int, elapsed_ms: float, key_name: str | None) -> None:
    try:
        with db.session() as session:
            session.add(RequestLog(id=request.state.request_id, method=request.method, path=request.url.path[:300],
                                   key_name=key_name, status_code=status, duration_ms=round(elapsed_ms, 2),
                                   items=getattr(request.state, "items", 0),
                                   job_id=getattr(request.state, "job_id", None)))
    except Exception as exc:  # noqa: BLE001 - a logging failure must not fail the request
        log.warning("could not store the request log row: %s", type(exc).__name__)
