"""The FastAPI application: `create_app(settings, services)`.

Layers, outermost first: body-size limit (413) → request log (one row per /v1 request, no
texts) → optional CORS → routes (api.py, review_api.py, admin_api.py, web.py), each checking
the key's role (access.py). Every error leaves as JSON `{"error": code, "detail": msg}`, an
unreachable database as a 503 (middleware.py). Routes read the shared `ServerState`
(state.py) from `app.state.rebuttal`.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from pathlib import Path

from rebuttal.optional import require
from rebuttal.server.db import Database
from rebuttal.server.jobs import JobWorker
from rebuttal.server.middleware import BodySizeLimit, install_error_handlers, install_request_log
from rebuttal.server.ratelimit import DatabaseRateLimiter, RedisRateLimiter, TokenBucketLimiter
from rebuttal.server.services import PipelineServices, Services
from rebuttal.server.settings import ServerSettings
from rebuttal.server.state import ServerState

log = logging.getLogger("rebuttal.server")
TEMPLATES = Path(__file__).parent / "templates"


def build_state(settings: ServerSettings, services: Services | None = None) -> ServerState:
    """Open the database (fails fast, with the fix, on a mismatched schema) and wire the worker."""
    from fastapi.templating import Jinja2Templates

    db = Database(settings.db_url)
    schema_version = db.init()
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
                       worker=worker, schema_version=schema_version,
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
        state.worker.start()
        log.info("rebuttal server ready: database %s, schema v%d", state.db.safe_url, state.schema_version)
        try:
            yield
        finally:
            state.worker.stop()

    app = fastapi.FastAPI(
        title="rebuttal", version=rebuttal.__version__, lifespan=lifespan,
        description="FIRE counterspeech and SPAR-Hate parsing with a human review queue. "
                    "Send the API key as `Authorization: Bearer <key>` or `X-API-Key`.",
    )
    app.state.rebuttal = state
    install_error_handlers(app)
    install_request_log(app, state.db)
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
