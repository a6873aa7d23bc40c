"""Webhooks (issue 29): targets, their triggers, and every delivery, stored before it is attempted.

A webhook belongs to a workspace (`workspace_id`) or to the whole cluster (NULL). A delivery's id is a uuid, the
`X-Stalwart-Delivery-Id` header of each of its attempts; PENDING ones are sent by the master's delivery loop, also
after a restart (master/webhooks/delivery.py). The ids of webhooks and triggers are never handed out again
(AUTOINCREMENT on SQLite, `db/counters.NEVER_REUSED`).

Nothing existing changes: three new, empty tables.

Revision ID: 0011
Revises: 0010
"""
import sqlalchemy as sa
from alembic import op

from stalwart.db.tables import Id32, JSONType

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'webhooks',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(256), nullable=False),
        sa.Column('url', sa.String(2048), nullable=False),
        sa.Column('webhook_type', sa.String(16), nullable=False),
        sa.Column('workspace_id', Id32, sa.ForeignKey('workspaces.id'), nullable=True, index=True),
        sa.Column('owner', sa.String(128), nullable=False),
        sa.Column('created_at', sa.Float, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_table(
        'webhook_triggers',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('webhook_id', Id32, sa.ForeignKey('webhooks.id'), nullable=False, index=True),
        sa.Column('trigger_type', sa.String(32), nullable=False),
        sa.Column('condition', JSONType, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_table(
        'webhook_deliveries',
        sa.Column('id', sa.String(36), primary_key=True),
        sa.Column('webhook_id', Id32, sa.ForeignKey('webhooks.id'), nullable=False, index=True),
        sa.Column('event', JSONType, nullable=False),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('attempts', sa.Integer, nullable=False),
        sa.Column('next_attempt_at', sa.Float, nullable=False),
        sa.Column('last_error', sa.Text, nullable=True),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.Column('ended_at', sa.Float, nullable=True),
        sa.Index('ix_webhook_deliveries_due', 'state', 'next_attempt_at'),
    )


def downgrade() -> None:
    op.drop_table('webhook_deliveries')
    op.drop_table('webhook_triggers')
    op.drop_table('webhooks')
