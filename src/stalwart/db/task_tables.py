"""Table definitions of tasks' own objects beside `db/tables.py` (which is full), on the same `metadata`: the
package's `__init__` imports this module, so every migration, test and query that reads `tables.metadata` sees these
tables too. Change them only together with a new Alembic revision.
"""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.db.columns import Id32, JSONType, metadata

# -- configuration templates (docs/templates.md, master/templates/, migration 0015) --------------------------------
# A named config merged under a task's own config when the task is created (the merged config is what the task
# stores). Named uniquely on the cluster, as Determined's; each belongs to a workspace, whose roles say who may view
# and change it. `config` holds its secrets as given: answers show them redacted (config/secrets.py).
config_templates = sa.Table(
    "config_templates",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(256), nullable=False, unique=True),
    sa.Column("workspace_id", Id32, sa.ForeignKey("workspaces.id"), nullable=False, index=True),
    sa.Column("config", JSONType, nullable=False),  # a mapping: the YAML document as JSON
    sa.Column("owner", sa.String(128), nullable=False),  # who created it (basic mode: who may change it)
    sa.Column("updated_by", sa.String(128), nullable=False),  # who set its config last
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sqlite_autoincrement=True,
)
