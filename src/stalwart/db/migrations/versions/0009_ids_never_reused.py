"""Ids are never handed out again: after `e delete 7`, the next experiment is not experiment 7 (issue 26).

SQLite hands the largest rowid out again once its row is deleted, unless the table is AUTOINCREMENT. On SQLite each
table whose integer id the database assigns (`TABLES`, as `db/counters.NEVER_REUSED` at this revision) is rebuilt
with AUTOINCREMENT (Alembic batch mode, `recreate="always"`: a new table of the same columns, indexes and constraints,
every row copied with its id, the old one dropped). The copy takes as long as the tables are big (task logs and
metrics above all), once. `Database.migrate` runs SQLite migrations with foreign-key enforcement off, as SQLite's
procedure for rebuilding a table asks, and checks every foreign key before it commits.

Then, on SQLite and PostgreSQL alike, every counter moves past the largest id found anywhere it may still be named
(`counters.raise_past_everything`): the table's own rows, other tables' rows naming it, the audit log's targets
('experiment 9' in `audit_log.target`), and the TensorBoard directories (`tensorboard/experiment/N/trial/M/`) under
every storage root the database names (experiments' configs, workspaces' default storage, checkpoints). PostgreSQL's
sequences never went back, but an id of the audit log or of storage may lie past them (a database restored from a
backup, or a new one beside an old storage).

A checkpoint that another experiment's trial started from is kept when its own experiment is deleted
(master/experiments/deleting.py): its row outlives its trial, so `checkpoints.trial_id` loses its foreign key to
`trials` and keeps naming the deleted trial, whose id is never handed out again.

Where it is checked: the audit log only here, once. From this revision on every id is handed out at most once, so the
audit log can name no id past a counter. Storage is checked here and again at each master start, cheaply
(`counters.raise_past_storage`, called by `Master`: a listing of `tensorboard/experiment/` under the master's default
storage and the workspaces' storage), because storage outlives databases: a new or restored database beside an old
storage would otherwise hand out the ids of its TensorBoard directories again. The checks call `db/counters.py` as it
is now; a later change there must keep working on a database at this revision.

Revision ID: 0009
Revises: 0008
"""
import sqlalchemy as sa
from alembic import op

from stalwart.db import counters

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

TABLES = ('experiments', 'trials', 'commands', 'users', 'user_sessions', 'workspaces', 'projects', 'user_groups',
          'role_assignments', 'metrics', 'task_logs', 'audit_log')

CHECKPOINT_FK = 'fk_checkpoints_trial_id_trials'
"""The name SQLite's unnamed foreign key of checkpoints.trial_id gets while its table is rebuilt."""


def _rebuild_autoincrement() -> None:
    for name in TABLES:
        with op.batch_alter_table(name, recreate='always', table_kwargs={'sqlite_autoincrement': True}):
            pass


def _drop_checkpoint_trial_fk(bind: sa.Connection) -> None:
    if bind.dialect.name == 'sqlite':
        names = {'fk': 'fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s'}
        with op.batch_alter_table('checkpoints', recreate='always', naming_convention=names) as batch:
            batch.drop_constraint(CHECKPOINT_FK, type_='foreignkey')
        return
    for fk in sa.inspect(bind).get_foreign_keys('checkpoints'):
        if fk['referred_table'] == 'trials':
            op.drop_constraint(str(fk['name']), 'checkpoints', type_='foreignkey')


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == 'sqlite':
        _rebuild_autoincrement()
    _drop_checkpoint_trial_fk(bind)
    counters.raise_past_everything(bind)


def downgrade() -> None:
    """The foreign key of checkpoints.trial_id comes back (this fails while a kept checkpoint names a deleted trial:
    delete it first). The tables stay AUTOINCREMENT and the counters where they are: older code works the same
    with them, and rebuilding tables that others name needs foreign-key enforcement off, which only
    `Database.migrate` does."""
    with op.batch_alter_table('checkpoints') as batch:
        batch.create_foreign_key(CHECKPOINT_FK, 'trials', ['trial_id'], ['id'])
