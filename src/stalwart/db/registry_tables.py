"""Table definitions of webhooks and the model registry beside `db/tables.py`, on the same `metadata`; `tables`
re-exports them (`tables.webhooks`, `tables.models`, ...), so queries, migrations and tests name them as before.
Change them only together with a new Alembic revision.
"""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.db.columns import Id32, JSONType, metadata

# -- webhooks (docs/webhooks.md, master/webhooks/) ---------------------------------------------------
webhooks = sa.Table(
    "webhooks",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(256), nullable=False),
    sa.Column("url", sa.String(2048), nullable=False),
    sa.Column("webhook_type", sa.String(16), nullable=False),  # DEFAULT | SLACK
    # NULL: the whole cluster's; a workspace's go when it is deleted (master/workspaces/spaces.py)
    sa.Column("workspace_id", Id32, sa.ForeignKey("workspaces.id"), nullable=True, index=True),
    sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sqlite_autoincrement=True,
)

webhook_triggers = sa.Table(
    "webhook_triggers",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("webhook_id", Id32, sa.ForeignKey("webhooks.id"), nullable=False, index=True),
    sa.Column("trigger_type", sa.String(32), nullable=False),  # EXPERIMENT_STATE_CHANGE | CUSTOM
    sa.Column("condition", JSONType, nullable=False),  # {"state": "COMPLETED"}; {} for CUSTOM
    sqlite_autoincrement=True,
)

webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),  # a uuid: the X-Stalwart-Delivery-Id of every attempt
    sa.Column("webhook_id", Id32, sa.ForeignKey("webhooks.id"), nullable=False, index=True),
    sa.Column("event", JSONType, nullable=False),  # the event (Determined's EventPayload), rendered per type at send
    sa.Column("state", sa.String(16), nullable=False),  # PENDING | DELIVERED | FAILED
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", sa.Float, nullable=False),
    sa.Column("last_error", sa.Text, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("ended_at", sa.Float, nullable=True),
    sa.Index("ix_webhook_deliveries_due", "state", "next_attempt_at"),
)

# -- the model registry (docs/model-registry.md) ------------------------------------------------------
models = sa.Table(
    "models",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    # unique on the cluster case-insensitively, as in Determined (the index below; master/registry answers the 409)
    sa.Column("name", sa.String(256), nullable=False, unique=True),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("labels", JSONType, nullable=False),
    sa.Column("metadata", JSONType, nullable=False),
    sa.Column("notes", sa.Text, nullable=False),
    sa.Column("workspace_id", Id32, sa.ForeignKey("workspaces.id"), nullable=False, index=True),
    sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("archived", sa.Boolean, nullable=False, default=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sqlite_autoincrement=True,
)
sa.Index("uq_models_name_folded", sa.func.lower(models.c.name), unique=True)

model_versions = sa.Table(
    "model_versions",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("model_id", Id32, sa.ForeignKey("models.id"), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),  # 1, 2, ... per model
    # a registered checkpoint is never garbage-collected nor deleted (master/experiments/checkpoint_holders.py)
    sa.Column("checkpoint_uuid", sa.String(64), sa.ForeignKey("checkpoints.uuid"), nullable=False, index=True),
    sa.Column("name", sa.String(256), nullable=False),
    sa.Column("comment", sa.Text, nullable=False),
    sa.Column("labels", JSONType, nullable=False),
    sa.Column("metadata", JSONType, nullable=False),
    sa.Column("notes", sa.Text, nullable=False),
    sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.UniqueConstraint("model_id", "version", name="uq_model_versions_version"),
    sqlite_autoincrement=True,
)
