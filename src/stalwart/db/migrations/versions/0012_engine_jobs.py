"""Allocations run by an engine's own queue (issue 30: Slurm), and the one-shot agents inside its jobs.

- `allocations.engine_job_id`: the engine's id of the job that runs the allocation (Slurm's job id); NULL for
  allocations our agents run. The master re-attaches its jobs after a restart through it.
- `allocations.join_token_hash`: the SHA-256 of the single-use credential the job's one-shot agents enroll with
  (never the credential itself); cleared once they have all joined, or when the allocation ends.
- `allocations.engine_started_at`: when the engine started the job (the one-shot agents must join within the
  manager's `job_start_timeout` from then).
- `agents.allocation_id`: the one allocation a one-shot agent exists for (NULL: a long-lived agent).

Nothing existing changes: new nullable columns.

Revision ID: 0012
Revises: 0011
"""
import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('allocations') as batch:
        batch.add_column(sa.Column('engine_job_id', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('join_token_hash', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('engine_started_at', sa.Float, nullable=True))
        batch.create_index('ix_allocations_engine_job_id', ['engine_job_id'])
        batch.create_index('ix_allocations_join_token_hash', ['join_token_hash'], unique=True)
    with op.batch_alter_table('agents') as batch:
        batch.add_column(sa.Column('allocation_id', sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('agents') as batch:
        batch.drop_column('allocation_id')
    with op.batch_alter_table('allocations') as batch:
        batch.drop_index('ix_allocations_join_token_hash')
        batch.drop_index('ix_allocations_engine_job_id')
        batch.drop_column('engine_started_at')
        batch.drop_column('join_token_hash')
        batch.drop_column('engine_job_id')
