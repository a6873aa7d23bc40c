"""Log policies that act, and log retention (issue 33): `log_policy_matches` (a trial run's first line matching each
log policy, with its agent: what cancel_retries and exclude_node read), `trials.log_policy_matched` (the name of the
last policy matched, as Determined's trials show it) and `experiments.log_retention_days` (its retention_policy, set
at create and by `e set log-retention`; NULL: the master's). New columns and a new table only.

Revision ID: 0018
Revises: 0017
"""
import sqlalchemy as sa
from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('trials', sa.Column('log_policy_matched', sa.String(length=256), nullable=True))
    op.add_column('experiments', sa.Column('log_retention_days', sa.Integer(), nullable=True))
    op.create_table(
        'log_policy_matches',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('trial_id', sa.Integer(), nullable=False),
        sa.Column('allocation_id', sa.String(length=64), nullable=False),
        sa.Column('agent_id', sa.String(length=128), nullable=True),
        sa.Column('policy_name', sa.String(length=256), nullable=True),
        sa.Column('pattern', sa.Text(), nullable=False),
        sa.Column('action', sa.String(length=32), nullable=True),
        sa.Column('log', sa.Text(), nullable=False),
        sa.Column('matched_at', sa.Float(), nullable=False),
        sa.UniqueConstraint('allocation_id', 'pattern', 'policy_name', name='uq_log_policy_matches_run'),
        sqlite_autoincrement=True,
    )
    op.create_index('ix_log_policy_matches_trial_id', 'log_policy_matches', ['trial_id'])


def downgrade() -> None:
    op.drop_index('ix_log_policy_matches_trial_id', table_name='log_policy_matches')
    op.drop_table('log_policy_matches')
    op.drop_column('experiments', 'log_retention_days')
    op.drop_column('trials', 'log_policy_matched')
