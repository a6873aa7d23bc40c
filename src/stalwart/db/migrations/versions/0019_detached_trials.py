"""Detached (unmanaged) trials (issue 33): `experiments.unmanaged` and `experiments.external_id` (the script's
external_experiment_id, unique: a re-run with it finds the experiment again), `allocations.unmanaged` (a run of a
script outside the cluster: no agent places or launches it) and `allocations.heartbeat_at` (its script's last sign
of life, for the master's heartbeat timeout). An unmanaged trial's external_trial_id is its `request_id`, already
unique within its experiment. New columns only.

Revision ID: 0019
Revises: 0018
"""
import sqlalchemy as sa
from alembic import op

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMN (no batch): SQLite keeps the tables, and their AUTOINCREMENT, as they are
    op.add_column('experiments', sa.Column('unmanaged', sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column('experiments', sa.Column('external_id', sa.String(length=256), nullable=True))
    op.create_index('ix_experiments_external_id', 'experiments', ['external_id'], unique=True)
    op.add_column('allocations', sa.Column('unmanaged', sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column('allocations', sa.Column('heartbeat_at', sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column('allocations', 'heartbeat_at')
    op.drop_column('allocations', 'unmanaged')
    op.drop_index('ix_experiments_external_id', table_name='experiments')
    op.drop_column('experiments', 'external_id')
    op.drop_column('experiments', 'unmanaged')
