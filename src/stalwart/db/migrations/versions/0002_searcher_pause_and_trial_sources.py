"""Trials held by the searcher (promotion ASHA, PBT) and the checkpoint a new trial starts from.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.add_column(sa.Column('searcher_paused', sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column('source_request_id', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('source_checkpoint_uuid', sa.String(length=64), nullable=True))



def downgrade() -> None:
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.drop_column('source_checkpoint_uuid')
        batch_op.drop_column('source_request_id')
        batch_op.drop_column('searcher_paused')

