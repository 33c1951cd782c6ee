import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # lets tests import fakes.py

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"needs the shared data folder at {SHARED_DATA}")
    return SHARED_DATA


def fresh_database_url(kind: str, tmp_path: Path, name: str = "r.db") -> str:
    """An empty database: a new SQLite file, or the PostgreSQL test server with its schema
    dropped (skips unless REBUTTAL_TEST_POSTGRES_URL is set)."""
    import os

    if kind == "sqlite":
        return f"sqlite:///{tmp_path / name}"
    url = os.environ.get("REBUTTAL_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("set REBUTTAL_TEST_POSTGRES_URL=postgresql+psycopg://... to test PostgreSQL")
    pytest.importorskip("psycopg")
    from sqlalchemy import text

    from rebuttal.server.db import Database

    database = Database(url)
    with database.engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    database.dispose()
    return url
