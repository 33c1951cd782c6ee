"""Roles on keys, the reviewer's role in the audit log, job-item leases, shared rate buckets.

Existing keys become `review`: exactly what every key could do before roles existed (submit,
read, edit, approve, reject, export); nothing is taken away and nothing new (key management
over HTTP, the `admin` role) is granted. See docs/server.md.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('api_keys') as batch_op:
        batch_op.add_column(sa.Column('role', sa.String(length=16), nullable=False, server_default='review'))
    with op.batch_alter_table('audit_log') as batch_op:
        batch_op.add_column(sa.Column('actor_role', sa.String(length=16), nullable=True))
    with op.batch_alter_table('job_items') as batch_op:
        batch_op.add_column(sa.Column('claim', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('lease_until', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('retryable', sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table('rate_buckets',
                    sa.Column('key', sa.String(length=64), nullable=False),
                    sa.Column('tokens', sa.Float(), nullable=False),
                    sa.Column('updated', sa.Float(), nullable=False),
                    sa.PrimaryKeyConstraint('key'))
    schema_version = sa.table('schema_version', sa.column('version', sa.Integer),
                              sa.column('applied_at', sa.DateTime(timezone=True)))
    op.bulk_insert(schema_version, [{'version': 2, 'applied_at': datetime.now(UTC)}])


def downgrade() -> None:
    op.execute("DELETE FROM schema_version WHERE version = 2")
    op.drop_table('rate_buckets')
    with op.batch_alter_table('job_items') as batch_op:
        batch_op.drop_column('retryable')
        batch_op.drop_column('lease_until')
        batch_op.drop_column('claim')
    with op.batch_alter_table('audit_log') as batch_op:
        batch_op.drop_column('actor_role')
    with op.batch_alter_table('api_keys') as batch_op:
        batch_op.drop_column('role')
