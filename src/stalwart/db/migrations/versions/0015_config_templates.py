"""Configuration templates (issue 32): `config_templates`, named configs merged under a task's own config when it is
created (docs/templates.md). Each is named uniquely on the cluster and belongs to a workspace; its id is never handed
out again (AUTOINCREMENT on SQLite). Nothing existing changes: one new, empty table.

Revision ID: 0015
Revises: 0014
"""
import sqlalchemy as sa
from alembic import op

from stalwart.db.tables import Id32, JSONType

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'config_templates',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(256), nullable=False, unique=True),
        sa.Column('workspace_id', Id32, sa.ForeignKey('workspaces.id'), nullable=False, index=True),
        sa.Column('config', JSONType, nullable=False),
        sa.Column('owner', sa.String(128), nullable=False),
        sa.Column('updated_by', sa.String(128), nullable=False),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.Column('updated_at', sa.Float, nullable=False),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table('config_templates')
