"""Workspaces and projects (every experiment and command in one; existing ones in Uncategorized/Uncategorized),
user groups, role assignments, pools bound to workspaces, and the OS user a user's or a workspace's tasks run as.

Revision ID: 0007
Revises: 0006
"""
import time
from typing import Any

import sqlalchemy as sa
from alembic import op

from stalwart.db.tables import Id32, JSONType

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

UNCATEGORIZED = 'Uncategorized'


def _agent_user_columns() -> list[sa.Column[Any]]:
    return [sa.Column('agent_uid', sa.Integer, nullable=True), sa.Column('agent_gid', sa.Integer, nullable=True),
            sa.Column('agent_user', sa.String(64), nullable=True),
            sa.Column('agent_group', sa.String(64), nullable=True)]


def upgrade() -> None:
    workspaces = op.create_table(
        'workspaces',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(128), nullable=False, unique=True),
        sa.Column('archived', sa.Boolean, nullable=False),
        sa.Column('immutable', sa.Boolean, nullable=False),
        sa.Column('created_by', sa.String(128), nullable=True),
        sa.Column('created_at', sa.Float, nullable=False),
        *_agent_user_columns(),
        sa.Column('checkpoint_storage', JSONType, nullable=True),
        sa.Column('default_compute_pool', sa.String(128), nullable=True),
        sa.Column('default_aux_pool', sa.String(128), nullable=True),
    )
    projects = op.create_table(
        'projects',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('workspace_id', Id32, sa.ForeignKey('workspaces.id'), nullable=False, index=True),
        sa.Column('name', sa.String(128), nullable=False),
        sa.Column('description', sa.Text, nullable=True),
        sa.Column('key', sa.String(16), nullable=True),
        sa.Column('archived', sa.Boolean, nullable=False),
        sa.Column('immutable', sa.Boolean, nullable=False),
        sa.Column('created_by', sa.String(128), nullable=True),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.UniqueConstraint('workspace_id', 'name', name='uq_projects_workspace_name'),
    )
    op.create_table(
        'user_groups',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(128), nullable=False, unique=True),
        sa.Column('created_at', sa.Float, nullable=False),
    )
    op.create_table(
        'group_members',
        sa.Column('group_id', Id32, sa.ForeignKey('user_groups.id'), primary_key=True),
        sa.Column('user_id', Id32, sa.ForeignKey('users.id'), primary_key=True, index=True),
    )
    op.create_table(
        'role_assignments',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('role', sa.String(64), nullable=False),
        sa.Column('user_id', Id32, sa.ForeignKey('users.id'), nullable=True, index=True),
        sa.Column('group_id', Id32, sa.ForeignKey('user_groups.id'), nullable=True, index=True),
        sa.Column('workspace_id', Id32, sa.ForeignKey('workspaces.id'), nullable=True),
        sa.Column('created_at', sa.Float, nullable=False),
    )
    op.create_table(
        'pool_bindings',
        sa.Column('pool', sa.String(128), primary_key=True),
        sa.Column('workspace_id', Id32, sa.ForeignKey('workspaces.id'), primary_key=True),
    )
    with op.batch_alter_table('users') as batch:
        batch.add_column(sa.Column('remote', sa.Boolean, nullable=False, server_default=sa.false()))
        for column in _agent_user_columns():
            batch.add_column(column)
    now = time.time()
    op.bulk_insert(workspaces, [{'id': 1, 'name': UNCATEGORIZED, 'archived': False, 'immutable': True,
                                 'created_by': None, 'created_at': now}])
    op.bulk_insert(projects, [{'id': 1, 'workspace_id': 1, 'name': UNCATEGORIZED, 'description': None,
                               'key': 'UNCAT', 'archived': False, 'immutable': True, 'created_by': None,
                               'created_at': now}])
    for table in ('experiments', 'commands'):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column('project_id', Id32, nullable=False, server_default='1'))
            batch.create_index(f'ix_{table}_project_id', ['project_id'])
    if op.get_bind().dialect.name == 'postgresql':  # ids 1 were inserted by hand: move the sequences past them
        op.execute("SELECT setval('workspaces_id_seq', (SELECT MAX(id) FROM workspaces))")
        op.execute("SELECT setval('projects_id_seq', (SELECT MAX(id) FROM projects))")


def downgrade() -> None:
    for table in ('experiments', 'commands'):
        with op.batch_alter_table(table) as batch:
            batch.drop_index(f'ix_{table}_project_id')
            batch.drop_column('project_id')
    with op.batch_alter_table('users') as batch:
        for name in ('agent_group', 'agent_user', 'agent_gid', 'agent_uid', 'remote'):
            batch.drop_column(name)
    for table in ('pool_bindings', 'role_assignments', 'group_members', 'user_groups', 'projects', 'workspaces'):
        op.drop_table(table)
