"""A workspace bound to a Kubernetes namespace (issue 31): `workspaces.kubernetes_namespace`, where the pods of its
runs go under a Kubernetes resource manager (NULL: the pool's `kubernetes_namespace`, else the manager's
`default_namespace`). Nothing existing changes: a new nullable column.

Revision ID: 0014
Revises: 0013
"""
import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('workspaces') as batch:
        batch.add_column(sa.Column('kubernetes_namespace', sa.String(length=63), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('workspaces') as batch:
        batch.drop_column('kubernetes_namespace')
