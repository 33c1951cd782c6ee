"""Alembic environment: run by `Database.init()` (rebuttal.server.migrate), never by hand.

The caller passes an open connection in `config.attributes["connection"]`, so migrations run
inside the server's own engine (SQLite or PostgreSQL) and no alembic.ini is needed.
"""

from __future__ import annotations

from alembic import context

from rebuttal.server.db import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
