"""Revisions, oldest first: 0001 is the schema before Alembic, 0002 adds roles, leases and rate buckets."""
