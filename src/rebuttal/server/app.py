"""The FastAPI application: `create_app(settings, services)`, and `create_app_from_env` for the
worker processes of `rebuttal serve --workers N`.

Layers, outermost first: body-size limit (413) → optional CORS → request log (one row per /v1
request, no texts; requestlog.py) → the last-resort JSON 500, which keeps the connection
(middleware.py) → routes (api.py, review_api.py, admin_api.py, web.py), each checking the key's
role (access.py). Every error leaves as JSON `{"error": code, "detail": msg}`, an unreachable
database as a 503 (middleware.py). Routes read the shared `ServerState`
(state.py) from `app.state.rebuttal`.
"""

from __future__ import annotations

import gc
import json
import logging
import os
from contextlib import asynccontextmanager
from pathlib import Path

from rebuttal.optional import require
from rebuttal.server.db import Database
from rebuttal.server.jobs import JobWorker
from rebuttal.server.middleware import BodySizeLimit, InternalErrors, install_error_handlers
from rebuttal.server.ratelimit import DatabaseRateLimiter, RedisRateLimiter, TokenBucketLimiter
from rebuttal.server.requestlog import RequestLogMiddleware, RequestLogWriter
from rebuttal.server.services import PipelineServices, Services, preload_in_background
from rebuttal.server.settings import ServerSettings
from rebuttal.server.state import ServerState
from rebuttal.server.writer import WriteBatcher

log = logging.getLogger("rebuttal.server")
TEMPLATES = Path(__file__).parent / "templates"
WORKER_ENV = "REBUTTAL_SERVE_WORKER"  # what `rebuttal serve --workers N` hands its worker processes


def build_state(settings: ServerSettings, services: Services | None = None) -> ServerState:
    """Open the database (fails fast, with the fix, on a mismatched schema) and wire the worker."""
    from fastapi.templating import Jinja2Templates

    db = Database(settings.db_url)
    schema_version = db.init()
    if services is None and settings.fake_pipeline:
        from rebuttal.server.fake import FakePipeline

        log.warning("serving the FAKE pipeline (--fake-pipeline): every answer is scripted; load tests only")
        services = FakePipeline()
    services = services or PipelineServices(settings.pipeline)
    worker = JobWorker(db, services, poll_s=settings.job_poll_s, max_chars=settings.max_text_chars,
                       max_attempts=settings.max_item_attempts, lease_s=settings.job_lease_s)
    if settings.rate_store == "database":
        limiter = DatabaseRateLimiter(db, settings.rate_per_minute, settings.rate_burst)
    elif settings.rate_store == "redis":
        limiter = RedisRateLimiter.from_url(settings.redis_url, settings.rate_per_minute, settings.rate_burst)
    else:
        limiter = TokenBucketLimiter(settings.rate_per_minute, settings.rate_burst)
    return ServerState(settings=settings, db=db, services=services, limiter=limiter,
                       worker=worker, request_log=RequestLogWriter(db), writes=WriteBatcher(db),
                       schema_version=schema_version,
                       templates=Jinja2Templates(directory=str(TEMPLATES)))


def create_app(settings: ServerSettings | None = None, services: Services | None = None):
    """Build the app. Without `services`, the FIRE pipeline and SPAR parser load on first use."""
    fastapi = require("fastapi", "server")

    import rebuttal
    from rebuttal.server import admin_api, api, review_api, web

    settings = settings or ServerSettings.from_env()
    state = build_state(settings, services)

    @asynccontextmanager
    async def lifespan(_app):
        # What exists at the first start (modules, the app) lives as long as the process:
        # frozen, the collector stops re-scanning it, and under load its full passes stopped
        # adding tens of milliseconds to one request in twenty (benchmarks/results/service.md).
        if not gc.get_freeze_count():
            gc.collect()
            gc.freeze()
        state.worker.start()
        log.info("rebuttal server ready: database %s, schema v%d", state.db.safe_url, state.schema_version)
        try:
            yield
        finally:
            state.worker.stop()
            state.writes.stop()
            state.request_log.stop()  # stores the rows still queued

    app = fastapi.FastAPI(
        title="rebuttal", version=rebuttal.__version__, lifespan=lifespan,
        description="FIRE counterspeech and SPAR-Hate parsing with a human review queue. "
                    "Send the API key as `Authorization: Bearer <key>` or `X-API-Key`.",
    )
    app.state.rebuttal = state
    install_error_handlers(app)
    app.add_middleware(InternalErrors)  # innermost: the request log sees its 500
    app.add_middleware(RequestLogMiddleware, writer=state.request_log)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "X-API-Key", "Content-Type"])
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.include_router(api.router)
    app.include_router(review_api.router)
    app.include_router(admin_api.router)
    app.include_router(web.router)
    return app


def create_app_from_env():
    """The app factory each `rebuttal serve --workers N` process runs (uvicorn imports it).

    Every worker builds its own database pool, batch worker and model from the settings the
    CLI resolved (JSON in $REBUTTAL_SERVE_WORKER; without it, the REBUTTAL_* variables). They
    share the database: its rate buckets, and the job queue (items are claimed with leases,
    so no item runs twice)."""
    spec = json.loads(os.environ.get(WORKER_ENV) or "{}")
    configure_logging(spec.get("log_level", "info"))
    settings = ServerSettings.model_validate(spec["settings"]) if "settings" in spec else ServerSettings.from_env()
    app = create_app(settings)
    if spec.get("preload"):
        preload_in_background(app.state.rebuttal.services)
    return app


def configure_logging(level: str) -> None:
    # uvicorn configures only its own loggers; ours must not print texts at info (they never do)
    logger = logging.getLogger("rebuttal")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level.upper())
