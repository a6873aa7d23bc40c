"""Agent incarnations: which process holds an agent id, so that a second one cannot take its place.

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('agents') as batch:
        batch.add_column(sa.Column('incarnation', sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('agents') as batch:
        batch.drop_column('incarnation')
