"""Alembic migrations of the server database (run on start by `rebuttal.server.migrate`)."""
