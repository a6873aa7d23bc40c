"""Why a task ended (issue 32): `commands.end_reason`, a sentence such as "killed by alice", "idle for more than
30m (its idle_timeout)" or "exited with status 0"; NULL while it runs and for tasks that ended before. A new column
only.

Revision ID: 0017
Revises: 0016
"""
import sqlalchemy as sa
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('commands', sa.Column('end_reason', sa.String(length=256), nullable=True))


def downgrade() -> None:
    op.drop_column('commands', 'end_reason')
