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


# Plain ALTER TABLE (SQLite has ADD and DROP COLUMN): a batch copy of `workspaces` would have to drop a table that
# projects' foreign keys point at.
def upgrade() -> None:
    op.add_column('workspaces', sa.Column('kubernetes_namespace', sa.String(length=63), nullable=True))


def downgrade() -> None:
    op.drop_column('workspaces', 'kubernetes_namespace')
