"""Elastic pools' instances (issue 31): every cloud instance the master's provisioner launched.

- `instances`: our id, its pool, the cloud's id (`provider_id`, NULL until the launch call answers), our state
  (STARTING, RUNNING, TERMINATING, TERMINATED), when it was launched, when its agent registered, the agent id it
  runs, since when that agent holds no work (`idle_since`), the SHA-256 of its single-use join credential (never the
  credential) and when that expires, why it ended or is ending, and when it ended.

Nothing existing changes: a new table.

Revision ID: 0013
Revises: 0012
"""
import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'instances',
        sa.Column('id', sa.String(length=64), primary_key=True),
        sa.Column('pool', sa.String(length=128), nullable=False),
        sa.Column('provider_id', sa.String(length=128), nullable=True),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('launched_at', sa.Float, nullable=False),
        sa.Column('registered_at', sa.Float, nullable=True),
        sa.Column('agent_id', sa.String(length=128), nullable=False),
        sa.Column('idle_since', sa.Float, nullable=True),
        sa.Column('join_token_hash', sa.String(length=64), nullable=True),
        sa.Column('join_expires_at', sa.Float, nullable=True),
        sa.Column('reason', sa.Text, nullable=True),
        sa.Column('ended_at', sa.Float, nullable=True),
    )
    op.create_index('ix_instances_pool_state', 'instances', ['pool', 'state'])
    op.create_index('ix_instances_agent_id', 'instances', ['agent_id'], unique=True)
    op.create_index('ix_instances_join_token_hash', 'instances', ['join_token_hash'], unique=True)


def downgrade() -> None:
    op.drop_index('ix_instances_join_token_hash', 'instances')
    op.drop_index('ix_instances_agent_id', 'instances')
    op.drop_index('ix_instances_pool_state', 'instances')
    op.drop_table('instances')
