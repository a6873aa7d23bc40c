"""Initial schema: experiments, trials, allocations, agents, metrics, checkpoints, logs.

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('agents',
    sa.Column('id', sa.String(length=128), nullable=False),
    sa.Column('hostname', sa.String(length=256), nullable=False),
    sa.Column('resource_pool', sa.String(length=128), nullable=False),
    sa.Column('slots', sa.Integer(), nullable=False),
    sa.Column('slot_type', sa.String(length=16), nullable=False),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('connected', sa.Boolean(), nullable=False),
    sa.Column('registered_at', sa.Float(), nullable=False),
    sa.Column('last_seen', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('cluster_info',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    op.create_table('experiments',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=512), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('config', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('config_text', sa.Text(), nullable=False),
    sa.Column('state', sa.String(length=32), nullable=False),
    sa.Column('archived', sa.Boolean(), nullable=False),
    sa.Column('progress', sa.Float(), nullable=False),
    sa.Column(
        'searcher_state',
        sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'),
        nullable=True,
    ),
    sa.Column('error_message', sa.Text(), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('ended_at', sa.Float(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_experiments_state'), ['state'], unique=False)

    op.create_table('task_logs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('trial_id', sa.Integer(), nullable=True),
    sa.Column('allocation_id', sa.String(length=64), nullable=True),
    sa.Column('agent_id', sa.String(length=128), nullable=True),
    sa.Column('rank_id', sa.Integer(), nullable=True),
    sa.Column('timestamp', sa.Float(), nullable=False),
    sa.Column('level', sa.String(length=16), nullable=False),
    sa.Column('stdtype', sa.String(length=16), nullable=False),
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('log', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('task_logs', schema=None) as batch_op:
        batch_op.create_index('ix_task_logs_trial', ['trial_id', 'id'], unique=False)

    op.create_table('contexts',
    sa.Column('experiment_id', sa.Integer(), nullable=False),
    sa.Column('archive', sa.LargeBinary(), nullable=False),
    sa.ForeignKeyConstraint(['experiment_id'], ['experiments.id'], ),
    sa.PrimaryKeyConstraint('experiment_id')
    )
    op.create_table('trials',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('experiment_id', sa.Integer(), nullable=False),
    sa.Column('request_id', sa.String(length=64), nullable=False),
    sa.Column('hparams', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('seed', sa.BigInteger(), nullable=False),
    sa.Column('state', sa.String(length=32), nullable=False),
    sa.Column('restarts', sa.Integer(), nullable=False),
    sa.Column('runs', sa.Integer(), nullable=False),
    sa.Column('target_length', sa.BigInteger(), nullable=True),
    sa.Column('stop_requested', sa.Boolean(), nullable=False),
    sa.Column('progress', sa.Float(), nullable=False),
    sa.Column('early_exit', sa.String(length=64), nullable=True),
    sa.Column('error_message', sa.Text(), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('ended_at', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['experiment_id'], ['experiments.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('experiment_id', 'request_id', name='uq_trials_request')
    )
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_trials_experiment_id'), ['experiment_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_trials_state'), ['state'], unique=False)

    op.create_table('allocations',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('trial_id', sa.Integer(), nullable=True),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('agent_id', sa.String(length=128), nullable=True),
    sa.Column('slots', sa.Integer(), nullable=False),
    sa.Column(
        'slot_ids',
        sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'),
        nullable=False,
    ),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('preempt_requested', sa.Boolean(), nullable=False),
    sa.Column('preempt_acked', sa.Boolean(), nullable=False),
    sa.Column('preempt_at', sa.Float(), nullable=True),
    sa.Column('kill_requested', sa.Boolean(), nullable=False),
    sa.Column('pid', sa.Integer(), nullable=True),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.Column('exit_reason', sa.String(length=32), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('started_at', sa.Float(), nullable=True),
    sa.Column('ended_at', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['trial_id'], ['trials.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_allocations_agent_id'), ['agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_allocations_state'), ['state'], unique=False)
        batch_op.create_index(batch_op.f('ix_allocations_trial_id'), ['trial_id'], unique=False)

    op.create_table('checkpoints',
    sa.Column('uuid', sa.String(length=64), nullable=False),
    sa.Column('trial_id', sa.Integer(), nullable=False),
    sa.Column('allocation_id', sa.String(length=64), nullable=True),
    sa.Column('steps_completed', sa.BigInteger(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column(
        'resources',
        sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'),
        nullable=False,
    ),
    sa.Column(
        'metadata',
        sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'),
        nullable=False,
    ),
    sa.Column('storage', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('report_time', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['trial_id'], ['trials.id'], ),
    sa.PrimaryKeyConstraint('uuid')
    )
    with op.batch_alter_table('checkpoints', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_checkpoints_trial_id'), ['trial_id'], unique=False)

    op.create_table('metrics',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('trial_id', sa.Integer(), nullable=False),
    sa.Column('trial_run_id', sa.Integer(), nullable=False),
    sa.Column('group_name', sa.String(length=64), nullable=False),
    sa.Column('steps_completed', sa.BigInteger(), nullable=False),
    sa.Column('metrics', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('report_time', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['trial_id'], ['trials.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('trial_id', 'group_name', 'steps_completed', name='uq_metrics_point')
    )


def downgrade() -> None:
    op.drop_table('metrics')
    with op.batch_alter_table('checkpoints', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_checkpoints_trial_id'))

    op.drop_table('checkpoints')
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_allocations_trial_id'))
        batch_op.drop_index(batch_op.f('ix_allocations_state'))
        batch_op.drop_index(batch_op.f('ix_allocations_agent_id'))

    op.drop_table('allocations')
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_trials_state'))
        batch_op.drop_index(batch_op.f('ix_trials_experiment_id'))

    op.drop_table('trials')
    op.drop_table('contexts')
    with op.batch_alter_table('task_logs', schema=None) as batch_op:
        batch_op.drop_index('ix_task_logs_trial')

    op.drop_table('task_logs')
    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_experiments_state'))

    op.drop_table('experiments')
    op.drop_table('cluster_info')
    op.drop_table('agents')
