"""Job queue (jobs), commands, multi-agent containers, agent draining, backfill and pending reasons.

Revision ID: 0003
Revises: 0002
"""
import uuid
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('jobs',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('type', sa.String(length=16), nullable=False),
    sa.Column('entity_id', sa.Integer(), nullable=False),
    sa.Column('priority', sa.Integer(), nullable=False),
    sa.Column('weight', sa.Float(), nullable=False),
    sa.Column('max_slots', sa.Integer(), nullable=True),
    sa.Column('resource_pool', sa.String(length=128), nullable=False),
    sa.Column('queue_position', sa.Float(), nullable=False),
    sa.Column('submitted_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('type', 'entity_id', name='uq_jobs_entity')
    )
    op.create_table('commands',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('description', sa.String(length=512), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('config', JSON, nullable=False),
    sa.Column('archive', sa.LargeBinary(), nullable=True),
    sa.Column('state', sa.String(length=32), nullable=False),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('ended_at', sa.Float(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_commands_state', 'commands', ['state'])
    op.create_table('allocation_containers',
    sa.Column('allocation_id', sa.String(length=64), nullable=False),
    sa.Column('container_rank', sa.Integer(), nullable=False),
    sa.Column('agent_id', sa.String(length=128), nullable=False),
    sa.Column('slot_ids', JSON, nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('pid', sa.Integer(), nullable=True),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['allocation_id'], ['allocations.id']),
    sa.PrimaryKeyConstraint('allocation_id', 'container_rank'),
    sa.UniqueConstraint('allocation_id', 'agent_id', name='uq_containers_agent')
    )
    op.create_index('ix_allocation_containers_agent_id', 'allocation_containers', ['agent_id'])
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('command_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('backfilled', sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column('pending_reason', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('rendezvous_port', sa.Integer(), nullable=True))
        batch_op.create_index('ix_allocations_command_id', ['command_id'])
        batch_op.create_foreign_key('fk_allocations_command', 'commands', ['command_id'], ['id'])
    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('draining', sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column('address', sa.String(length=256), nullable=True))
    op.create_index('ix_task_logs_allocation', 'task_logs', ['allocation_id', 'id'])
    _jobs_for_existing_experiments()
    op.execute(
        "INSERT INTO allocation_containers (allocation_id, container_rank, agent_id, slot_ids, state, pid) "
        "SELECT id, 0, agent_id, slot_ids, state, pid FROM allocations "
        "WHERE state IN ('ASSIGNED', 'RUNNING') AND agent_id IS NOT NULL"
    )


def _jobs_for_existing_experiments() -> None:
    """Every experiment already stored becomes a job, in creation order, with its config's values."""
    conn = op.get_bind()
    exps = sa.table('experiments', sa.column('id'), sa.column('config', JSON), sa.column('created_at'))
    jobs = sa.table('jobs', *(sa.column(c) for c in ('id', 'type', 'entity_id', 'priority', 'weight', 'max_slots',
                                                      'resource_pool', 'queue_position', 'submitted_at')))
    for i, row in enumerate(conn.execute(sa.select(exps).order_by(exps.c.id)).mappings().all(), start=1):
        res: dict[str, Any] = (row['config'] or {}).get('resources') or {}
        weight = res.get('weight')
        conn.execute(jobs.insert().values(
            id=uuid.uuid4().hex, type='EXPERIMENT', entity_id=row['id'], priority=int(res.get('priority') or 42),
            weight=1.0 if weight is None else float(weight), max_slots=res.get('max_slots'),
            resource_pool=res.get('resource_pool') or 'default', queue_position=float(i),
            submitted_at=row['created_at']))


def downgrade() -> None:
    op.drop_index('ix_task_logs_allocation', table_name='task_logs')
    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.drop_column('address')
        batch_op.drop_column('draining')
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.drop_constraint('fk_allocations_command', type_='foreignkey')
        batch_op.drop_index('ix_allocations_command_id')
        batch_op.drop_column('rendezvous_port')
        batch_op.drop_column('pending_reason')
        batch_op.drop_column('backfilled')
        batch_op.drop_column('command_id')
    op.drop_index('ix_allocation_containers_agent_id', table_name='allocation_containers')
    op.drop_table('allocation_containers')
    op.drop_index('ix_commands_state', table_name='commands')
    op.drop_table('commands')
    op.drop_table('jobs')
