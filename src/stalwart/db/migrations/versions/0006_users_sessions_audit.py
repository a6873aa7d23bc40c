"""Users, sessions and access tokens, and the audit log. Each distinct owner of an existing experiment or
command becomes an inactive user without a password (an admin activates them); the bootstrap accounts
(admin, determined) are created by the master at start, with the master config's initial password.

Revision ID: 0006
Revises: 0005
"""
import time

import sqlalchemy as sa
from alembic import op

from stalwart.db.tables import Id32

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    users = op.create_table(
        'users',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('username', sa.String(128), nullable=False, unique=True),
        sa.Column('display_name', sa.String(256), nullable=True),
        sa.Column('password_hash', sa.String(256), nullable=True),
        sa.Column('admin', sa.Boolean, nullable=False),
        sa.Column('active', sa.Boolean, nullable=False),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.Column('modified_at', sa.Float, nullable=True),
        sa.Column('last_auth_at', sa.Float, nullable=True),
    )
    op.create_table(
        'user_sessions',
        sa.Column('id', Id32, primary_key=True, autoincrement=True),
        sa.Column('user_id', Id32, sa.ForeignKey('users.id'), nullable=False, index=True),
        sa.Column('token_hash', sa.String(64), nullable=False, unique=True),
        sa.Column('kind', sa.String(16), nullable=False),
        sa.Column('description', sa.String(1024), nullable=True),
        sa.Column('allocation_id', sa.String(64), nullable=True, index=True),
        sa.Column('created_at', sa.Float, nullable=False),
        sa.Column('expires_at', sa.Float, nullable=True),
        sa.Column('revoked_at', sa.Float, nullable=True),
    )
    op.create_table(
        'audit_log',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer, 'sqlite'), primary_key=True, autoincrement=True),
        sa.Column('timestamp', sa.Float, nullable=False, index=True),
        sa.Column('username', sa.String(128), nullable=True, index=True),
        sa.Column('method', sa.String(8), nullable=False),
        sa.Column('path', sa.String(2048), nullable=False),
        sa.Column('target', sa.String(256), nullable=True),
        sa.Column('status', sa.Integer, nullable=False),
        sa.Column('outcome', sa.String(16), nullable=False),
    )
    conn = op.get_bind()
    owners: set[str] = set()
    for table in ('experiments', 'commands'):
        owners.update(conn.execute(sa.text(f'SELECT DISTINCT owner FROM {table}')).scalars())
    now = time.time()
    rows = [{'username': name, 'display_name': None, 'password_hash': None, 'admin': False, 'active': False,
             'created_at': now} for name in sorted(o for o in owners if o)]
    if rows:
        op.bulk_insert(users, rows)


def downgrade() -> None:
    op.drop_table('audit_log')
    op.drop_table('user_sessions')
    op.drop_table('users')
