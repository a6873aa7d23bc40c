"""Tasks of several kinds, and the servers they start (issue 32): `commands.kind` (command, notebook, tensorboard,
shell; every earlier row is a command) and `allocations.service_port`, the port a task's server listens on, on the
agent that runs it, once it answers (NULL before, and for runs that serve nothing). New columns only.

Revision ID: 0016
Revises: 0015
"""
import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


# Plain ALTER TABLE, as 0014: a batch copy would drop tables that other tables' foreign keys point at.
def upgrade() -> None:
    op.add_column('commands', sa.Column('kind', sa.String(length=16), nullable=False, server_default='command'))
    op.add_column('allocations', sa.Column('service_port', sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column('allocations', 'service_port')
    op.drop_column('commands', 'kind')
