"""The model registry (issue 29): models, each in a workspace, and their numbered versions, each naming a checkpoint.

A model's name is unique on the whole cluster, as in Determined, case-insensitively (a unique index on its lower
case; the master checks first, to answer a 409 that names the model holding it). A version is numbered 1, 2, ...
within its model (unique per model) and names its checkpoint by uuid (a foreign key to `checkpoints`): a registered
checkpoint is kept by checkpoint GC, and its experiment or the checkpoint itself cannot be deleted while a version
names it (master/experiments/checkpoint_holders.py, master/experiments/deleting.py). Both tables' ids are assigned
by the database and never handed out again (AUTOINCREMENT on SQLite, as `db/counters.NEVER_REUSED` says from this
revision on).

Nothing existing changes: two new, empty tables.

Revision ID: 0010
Revises: 0009
"""
import sqlalchemy as sa
from alembic import op

from stalwart.db.tables import Id32, JSONType

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'models',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(256), nullable=False, unique=True),
        sa.Column('description', sa.Text, nullable=False),
        sa.Column('labels', JSONType, nullable=False),
        sa.Column('metadata', JSONType, nullable=False),
        sa.Column('notes', sa.Text, nullable=False),
        sa.Column('workspace_id', Id32, sa.ForeignKey('workspaces.id'), nullable=False, index=True),
        sa.Column('owner', sa.String(128), nullable=False),
        sa.Column('archived', sa.Boolean, nullable=False),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.Column('updated_at', sa.Float, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index('uq_models_name_folded', 'models', [sa.text('lower(name)')], unique=True)
    op.create_table(
        'model_versions',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('model_id', Id32, sa.ForeignKey('models.id'), nullable=False),
        sa.Column('version', sa.Integer, nullable=False),
        sa.Column('checkpoint_uuid', sa.String(64), sa.ForeignKey('checkpoints.uuid'), nullable=False, index=True),
        sa.Column('name', sa.String(256), nullable=False),
        sa.Column('comment', sa.Text, nullable=False),
        sa.Column('labels', JSONType, nullable=False),
        sa.Column('metadata', JSONType, nullable=False),
        sa.Column('notes', sa.Text, nullable=False),
        sa.Column('owner', sa.String(128), nullable=False),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.Column('updated_at', sa.Float, nullable=False),
        sa.UniqueConstraint('model_id', 'version', name='uq_model_versions_version'),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table('model_versions')
    op.drop_table('models')
