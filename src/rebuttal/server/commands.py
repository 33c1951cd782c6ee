"""CLI: `rebuttal serve`, `rebuttal keys create|list|revoke`, `rebuttal export`.

`app` bundles them for `python -m`-style use; the main CLI mounts `serve_command`,
`keys_app` and `export_command` directly.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from rebuttal.server.settings import ServerSettings, default_db_url

app = typer.Typer(help="HTTP API, review queue and reviewer page.", no_args_is_help=True)
keys_app = typer.Typer(help="Create, list and revoke API keys (the key name is the reviewer's identity).",
                       no_args_is_help=True)

# uvicorn kills a worker that does not answer its ping within this time (its default, 5 s, is
# shorter than a worker starved of CPU or busy loading a model may take)
WORKER_HEALTHCHECK_S = 30
DbOption = Annotated[str | None, typer.Option("--db", help="SQLAlchemy URL; default REBUTTAL_DB or ~/.local/share/rebuttal/rebuttal.db")]


def _database(url: str | None):
    from rebuttal.server.db import Database, SchemaMismatch

    db = Database(url or default_db_url())
    try:
        db.init()
    except SchemaMismatch as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    return db


def serve_command(
    host: Annotated[str, typer.Option(help="bind address; keep 127.0.0.1 behind a reverse proxy")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8080,
    db: DbOption = None,
    backend: Annotated[str | None, typer.Option(help="llama | openai | transformers")] = None,
    model: Annotated[str | None, typer.Option(help="registry name, GGUF path or served model name")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL (backend openai)")] = None,
    threads: Annotated[int | None, typer.Option(help="llama.cpp CPU threads")] = None,
    web: Annotated[bool, typer.Option(help="let FIRE search the web for evidence (ddgs)")] = False,
    memory: Annotated[Path | None, typer.Option(help="FIRE memory index folder (default: the shipped one)")] = None,
    preload: Annotated[bool, typer.Option(help="load the model and FIRE in the background at start")] = True,
    workers: Annotated[int, typer.Option(min=1, help="server processes sharing the database, rate limits and job "
                                                     "queue; each loads its own model (mind the memory)")] = 1,
    max_batch: Annotated[int | None, typer.Option(help="items per batch request")] = None,
    max_request_bytes: Annotated[int | None, typer.Option(help="largest request body")] = None,
    rate_per_minute: Annotated[float | None, typer.Option(help="requests per minute per key")] = None,
    rate_burst: Annotated[int | None, typer.Option(help="requests a key may send at once")] = None,
    rate_store: Annotated[str | None, typer.Option(help="database (shared by all workers; default) | redis (REBUTTAL_REDIS_URL) | memory")] = None,
    cors_origin: Annotated[list[str] | None, typer.Option(help="allow this browser origin (repeat); CORS is off without it")] = None,
    cookie_secure: Annotated[bool, typer.Option(help="Secure reviewer cookie (serving over HTTPS)")] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
    fake_pipeline: Annotated[bool, typer.Option(help="LOAD TESTS ONLY: answer every post with the scripted "
                                                     "fake pipeline (no model; every post 'hateful')")] = False,
) -> None:
    """Run the API and the reviewer page (http://HOST:PORT/review, API docs at /docs)."""
    from pydantic import ValidationError

    from rebuttal.optional import require
    from rebuttal.server.app import configure_logging, create_app
    from rebuttal.server.db import SchemaMismatch
    from rebuttal.server.services import preload_in_background

    uvicorn = require("uvicorn", "server")
    configure_logging(log_level)
    pipeline = {"backend": backend, "model": model, "base_url": base_url, "threads": threads,
                "web": web or None, "memory_path": str(memory) if memory else None}
    try:
        settings = ServerSettings.from_env(
            db_url=db, max_batch=max_batch, max_request_bytes=max_request_bytes, rate_per_minute=rate_per_minute,
            rate_burst=rate_burst, rate_store=rate_store, cors_origins=cors_origin or None, cookie_secure=cookie_secure or None,
            fake_pipeline=fake_pipeline or None, pipeline={k: v for k, v in pipeline.items() if v is not None})
        if workers > 1 and settings.rate_store == "memory":
            raise ValueError("--rate-store memory keeps buckets per process, so --workers would multiply the "
                             "rate limit; use the database (default) or redis")
        application = create_app(settings)  # checks the settings and migrates the database, once
    except ValidationError as exc:
        typer.echo(f"error: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}", err=True)
        raise typer.Exit(2) from None
    except (SchemaMismatch, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"reviewer page: http://{host}:{port}/review   API docs: http://{host}:{port}/docs", err=True)
    if workers > 1:
        return _serve_workers(application, settings, host, port, workers, preload, log_level)
    if preload:
        preload_in_background(application.state.rebuttal.services)
    uvicorn.run(application, host=host, port=port, log_level=log_level)


def _serve_workers(application, settings, host, port, workers, preload, log_level) -> None:
    """uvicorn's process manager: each worker builds its own app from the settings resolved here."""
    import json
    import os

    from rebuttal.server.app import WORKER_ENV

    application.state.rebuttal.db.dispose()  # only used for the checks above; workers open their own
    os.environ[WORKER_ENV] = json.dumps({"settings": settings.model_dump(mode="json"), "preload": preload,
                                         "log_level": log_level})
    run_workers("rebuttal.server.app:create_app_from_env", workers=workers, host=host, port=port,
                log_level=log_level)


def run_workers(factory: str, *, workers: int, host: str, port: int, log_level: str) -> None:
    """`uvicorn.run` with `workers` processes, each calling the app factory `factory` ("module:function")."""
    import inspect

    import uvicorn
    import uvicorn.config

    _keep_tcp_nodelay(uvicorn.config.Config)
    extra = {}
    if "timeout_worker_healthcheck" in inspect.signature(uvicorn.Config).parameters:
        extra["timeout_worker_healthcheck"] = WORKER_HEALTHCHECK_S
    uvicorn.run(factory, factory=True, workers=workers, host=host, port=port, log_level=log_level, **extra)


def _keep_tcp_nodelay(config_class) -> None:
    """With workers, uvicorn binds the listening socket itself with `proto` 0, and asyncio turns on
    TCP_NODELAY only for sockets that say IPPROTO_TCP: every keep-alive response then waited ~40 ms
    for the client's delayed ACK (uvicorn issue #3149). Re-wrap the bound socket as TCP; a no-op
    once uvicorn sets the protocol itself."""
    import socket

    bind = config_class.bind_socket
    if getattr(bind, "keeps_tcp_nodelay", False):
        return

    def bind_socket(self):
        sock = bind(self)
        if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.proto == 0:
            sock = socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
            sock.set_inheritable(True)
        return sock

    bind_socket.keeps_tcp_nodelay = True
    config_class.bind_socket = bind_socket


@keys_app.command("create")
def keys_create(name: Annotated[str, typer.Argument(help="who uses the key, e.g. a reviewer's name")],
                role: Annotated[str, typer.Option(help="submit (pipelines, own jobs) | review (also the queue) | "
                                                       "admin (also keys)")] = "review",
                db: DbOption = None):
    """Create a key and print it once; only its hash is stored."""
    from rebuttal.server.auth import create_key

    try:
        key = create_key(_database(db), name, role)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(key)
    typer.echo(f"{role} key for {name!r} created; store it now, it cannot be shown again", err=True)


@keys_app.command("list")
def keys_list(db: DbOption = None):
    """List keys (ids and names, never secrets)."""
    from rebuttal.server.auth import list_keys

    rows = list_keys(_database(db))
    if not rows:
        typer.echo("no keys yet: rebuttal keys create NAME", err=True)
    for row in rows:
        state = f"revoked {row['revoked_at']:%Y-%m-%d}" if row["revoked_at"] else "active"
        used = f"last used {row['last_used_at']:%Y-%m-%d %H:%M}" if row["last_used_at"] else "never used"
        typer.echo(f"{row['id']}\t{row['name']}\t{row['role']}\t{state}\tcreated {row['created_at']:%Y-%m-%d}\t{used}")


@keys_app.command("revoke")
def keys_revoke(id_or_name: Annotated[str, typer.Argument(help="key id (from `keys list`) or name")], db: DbOption = None):
    """Revoke a key by id, or every active key with that name."""
    from rebuttal.server.auth import UnknownKey, revoke_key

    try:
        ids = revoke_key(_database(db), id_or_name)
    except UnknownKey as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"revoked {', '.join(ids)}")


@keys_app.command("role")
def keys_role(id_or_name: Annotated[str, typer.Argument(help="key id (from `keys list`) or name")],
              role: Annotated[str, typer.Argument(help="submit | review | admin")], db: DbOption = None):
    """Change the role of a key by id, or of every active key with that name."""
    from rebuttal.server.auth import UnknownKey, set_role

    try:
        ids = set_role(_database(db), id_or_name, role)
    except (UnknownKey, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{', '.join(ids)} now {role}")


def export_command(
    status: Annotated[str, typer.Option(help="approved | rejected | pending")] = "approved",
    format: Annotated[str, typer.Option("--format", help="jsonl | csv")] = "jsonl",  # noqa: A002
    out: Annotated[Path | None, typer.Option(help="output file; default stdout")] = None,
    db: DbOption = None,
) -> None:
    """Export reviewed replies (approved by default) as JSONL or CSV."""
    from rebuttal.server.review import STATUSES, export_rows, format_export

    if status not in STATUSES or format not in ("jsonl", "csv"):
        typer.echo(f"error: --status must be one of {', '.join(STATUSES)} and --format jsonl or csv", err=True)
        raise typer.Exit(2)
    database = _database(db)
    count = 0

    def counted(rows):
        nonlocal count
        for row in rows:
            count += 1
            yield row

    handle = out.open("w", encoding="utf-8", newline="") if out else sys.stdout
    try:
        with database.session() as session:
            for chunk in format_export(counted(export_rows(session, status)), format):
                handle.write(chunk)
    finally:
        if out:
            handle.close()
    typer.echo(f"exported {count} {status} replies" + (f" to {out}" if out else ""), err=True)


app.command("serve")(serve_command)
app.add_typer(keys_app, name="keys")
app.command("export")(export_command)
