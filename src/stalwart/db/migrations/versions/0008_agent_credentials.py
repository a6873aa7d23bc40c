"""Agents' own credentials: each agent enrolls once with the cluster token and presents its own credential after.

Agents registered before this revision have no credential row; each gets one at its next registration.

Revision ID: 0008
Revises: 0007
"""
import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'agent_credentials',
        sa.Column('agent_id', sa.String(128), primary_key=True),
        sa.Column('token_hash', sa.String(64), nullable=False, unique=True),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.Column('last_used', sa.Float, nullable=True),
        sa.Column('revoked_at', sa.Float, nullable=True),
        sa.Column('reenroll', sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column('issued_to', sa.String(64), nullable=True),
    )


def downgrade() -> None:
    op.drop_table('agent_credentials')
