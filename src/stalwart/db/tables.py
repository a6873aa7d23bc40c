"""Table definitions (SQLAlchemy Core). Change them only together with a new Alembic revision."""

from __future__ import annotations

import sqlalchemy as sa

# re-exported: migrations and tests name them through this module
from stalwart.db.columns import INT32_MAX as INT32_MAX, Id32 as Id32, JSONType as JSONType, metadata as metadata
from stalwart.db.registry_tables import (  # webhooks and the model registry: defined there, named here too
    model_versions as model_versions,
    models as models,
    webhook_deliveries as webhook_deliveries,
    webhook_triggers as webhook_triggers,
    webhooks as webhooks,
)

cluster_info = sa.Table(
    "cluster_info",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

experiments = sa.Table(
    "experiments",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(512), nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("notes", sa.Text, nullable=True),
    sa.Column("labels", JSONType, nullable=False),
    sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("project_id", Id32, nullable=False, default=1, index=True),  # projects.id (1: Uncategorized)
    sa.Column("config", JSONType, nullable=False),
    sa.Column("config_text", sa.Text, nullable=False),
    sa.Column("state", sa.String(32), nullable=False, index=True),
    sa.Column("archived", sa.Boolean, nullable=False, default=False),
    sa.Column("progress", sa.Float, nullable=False, default=0.0),
    sa.Column("searcher_state", JSONType, nullable=True),
    sa.Column("error_message", sa.Text, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("ended_at", sa.Float, nullable=True),
    sa.Column("log_retention_days", sa.Integer, nullable=True),  # its retention_policy; None: the master's (0018)
    # reported by a script outside the cluster (core_v2's detached mode), found again by its external id (0019)
    sa.Column("unmanaged", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    sa.Column("external_id", sa.String(256), nullable=True),
    sa.Index("ix_experiments_external_id", "external_id", unique=True),
    sqlite_autoincrement=True,
)

contexts = sa.Table(
    "contexts",
    metadata,
    sa.Column("experiment_id", Id32, sa.ForeignKey("experiments.id"), primary_key=True),
    sa.Column("archive", sa.LargeBinary, nullable=False),
)

trials = sa.Table(
    "trials",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("experiment_id", Id32, sa.ForeignKey("experiments.id"), nullable=False, index=True),
    sa.Column("request_id", sa.String(64), nullable=False),
    sa.Column("hparams", JSONType, nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("state", sa.String(32), nullable=False, index=True),
    sa.Column("restarts", sa.Integer, nullable=False, default=0),
    sa.Column("runs", sa.Integer, nullable=False, default=0),
    sa.Column("target_length", sa.BigInteger, nullable=True),
    sa.Column("stop_requested", sa.Boolean, nullable=False, default=False),
    sa.Column("searcher_paused", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    sa.Column("source_request_id", sa.String(64), nullable=True),
    sa.Column("source_checkpoint_uuid", sa.String(64), nullable=True),
    sa.Column("progress", sa.Float, nullable=False, default=0.0),
    sa.Column("early_exit", sa.String(64), nullable=True),
    sa.Column("error_message", sa.Text, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("ended_at", sa.Float, nullable=True),
    sa.Column("log_policy_matched", sa.String(256), nullable=True),  # the last log policy its logs matched (0018)
    sa.UniqueConstraint("experiment_id", "request_id", name="uq_trials_request"),
    sqlite_autoincrement=True,
)

agents = sa.Table(
    "agents",
    metadata,
    sa.Column("id", sa.String(128), primary_key=True),
    sa.Column("hostname", sa.String(256), nullable=False),
    sa.Column("resource_pool", sa.String(128), nullable=False),
    sa.Column("slots", sa.Integer, nullable=False),
    sa.Column("slot_type", sa.String(16), nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    sa.Column("connected", sa.Boolean, nullable=False, default=True),
    sa.Column("registered_at", sa.Float, nullable=False),
    sa.Column("last_seen", sa.Float, nullable=False),
    sa.Column("draining", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    sa.Column("address", sa.String(256), nullable=True),  # as the master sees it; gang rendezvous uses it
    sa.Column("incarnation", sa.String(64), nullable=True),  # the agent process now holding this id (fencing)
    sa.Column("allocation_id", sa.String(64), nullable=True),  # a one-shot agent's one allocation (Slurm jobs)
)

# Elastic pools' cloud instances (docs/elastic-agents.md, migration 0013; queries/instances.py says what each column
# holds): only the join credential's SHA-256 is kept.
instances = sa.Table(
    "instances", metadata,
    sa.Column("id", sa.String(64), primary_key=True), sa.Column("pool", sa.String(128), nullable=False),
    sa.Column("provider_id", sa.String(128), nullable=True), sa.Column("state", sa.String(16), nullable=False),
    sa.Column("launched_at", sa.Float, nullable=False), sa.Column("registered_at", sa.Float, nullable=True),
    sa.Column("agent_id", sa.String(128), nullable=False, unique=True, index=True),
    sa.Column("idle_since", sa.Float, nullable=True), sa.Column("join_token_hash", sa.String(64), nullable=True),
    sa.Column("join_expires_at", sa.Float, nullable=True), sa.Column("reason", sa.Text, nullable=True),
    sa.Column("ended_at", sa.Float, nullable=True), sa.Index("ix_instances_pool_state", "pool", "state"),
    sa.Index("ix_instances_join_token_hash", "join_token_hash", unique=True),
)

# Each agent's own credential (docs/users.md, "Agents and the cluster token"): only its SHA-256 is kept.
agent_credentials = sa.Table(
    "agent_credentials",
    metadata,
    sa.Column("agent_id", sa.String(128), primary_key=True),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("last_used", sa.Float, nullable=True),
    sa.Column("revoked_at", sa.Float, nullable=True),
    # an admin let this revoked id enroll again with the cluster token (a lost credential file)
    sa.Column("reenroll", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    # the agent process (incarnation) it was issued to: an answer lost on the way may be issued again to it
    sa.Column("issued_to", sa.String(64), nullable=True),
)

allocations = sa.Table(
    "allocations",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("trial_id", Id32, sa.ForeignKey("trials.id"), nullable=True, index=True),
    sa.Column("run_id", sa.Integer, nullable=False, default=0),
    sa.Column("agent_id", sa.String(128), nullable=True, index=True),
    sa.Column("slots", sa.Integer, nullable=False),
    sa.Column("slot_ids", JSONType, nullable=False),
    sa.Column("state", sa.String(16), nullable=False, index=True),
    sa.Column("preempt_requested", sa.Boolean, nullable=False, default=False),
    sa.Column("preempt_acked", sa.Boolean, nullable=False, default=False),
    sa.Column("preempt_at", sa.Float, nullable=True),
    sa.Column("kill_requested", sa.Boolean, nullable=False, default=False),
    sa.Column("pid", sa.Integer, nullable=True),
    sa.Column("exit_code", sa.Integer, nullable=True),
    sa.Column("exit_reason", sa.String(32), nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("started_at", sa.Float, nullable=True),
    sa.Column("ended_at", sa.Float, nullable=True),
    sa.Column("command_id", Id32, sa.ForeignKey("commands.id"), nullable=True, index=True),
    sa.Column("backfilled", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    sa.Column("pending_reason", sa.Text, nullable=True),
    sa.Column("rendezvous_port", sa.Integer, nullable=True),
    # run by an engine's own queue (Slurm): its job id, the SHA-256 of the job's single-use join credential, and
    # when the engine started the job (migration 0012)
    sa.Column("engine_job_id", sa.String(64), nullable=True, index=True),
    sa.Column("join_token_hash", sa.String(64), nullable=True, unique=True, index=True),
    sa.Column("engine_started_at", sa.Float, nullable=True),
    sa.Column("service_port", sa.Integer, nullable=True),  # where a task's server listens on its agent (0016)
    # a detached script's run: no agent places or launches it; its last heartbeat (0019)
    sa.Column("unmanaged", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    sa.Column("heartbeat_at", sa.Float, nullable=True),
)

# Every experiment and command is a job in the queue; the scheduler orders by (priority,
# queue_position, submitted_at) within a resource pool.
jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("type", sa.String(16), nullable=False),
    sa.Column("entity_id", Id32, nullable=False),
    sa.Column("priority", sa.Integer, nullable=False),
    sa.Column("weight", sa.Float, nullable=False),
    sa.Column("max_slots", sa.Integer, nullable=True),
    sa.Column("resource_pool", sa.String(128), nullable=False),
    sa.Column("queue_position", sa.Float, nullable=False),
    sa.Column("submitted_at", sa.Float, nullable=False),
    sa.UniqueConstraint("type", "entity_id", name="uq_jobs_entity"),
)

# A command: any program run on the cluster as a task (not preemptible).
commands = sa.Table(
    "commands",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("description", sa.String(512), nullable=False), sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("project_id", Id32, nullable=False, default=1, index=True),  # projects.id (1: Uncategorized)
    sa.Column("config", JSONType, nullable=False),
    sa.Column("archive", sa.LargeBinary, nullable=True),
    sa.Column("state", sa.String(32), nullable=False, index=True),
    sa.Column("exit_code", sa.Integer, nullable=True), sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("ended_at", sa.Float, nullable=True), sa.Column("end_reason", sa.String(256), nullable=True),
    # kind: command, notebook, tensorboard or shell (0016; earlier tasks are commands); end_reason: in words (0017)
    sa.Column("kind", sa.String(16), nullable=False, default="command", server_default="command"),
    sqlite_autoincrement=True,
)

# One row per container of an allocation (rank 0 = chief, whose agent and slots are also on the
# allocation row). Multi-agent gangs have one container per agent.
allocation_containers = sa.Table(
    "allocation_containers",
    metadata,
    sa.Column("allocation_id", sa.String(64), sa.ForeignKey("allocations.id"), primary_key=True),
    sa.Column("container_rank", sa.Integer, primary_key=True),
    sa.Column("agent_id", sa.String(128), nullable=False, index=True),
    sa.Column("slot_ids", JSONType, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("pid", sa.Integer, nullable=True),
    sa.Column("exit_code", sa.Integer, nullable=True),
    sa.UniqueConstraint("allocation_id", "agent_id", name="uq_containers_agent"),
)

metrics = sa.Table(
    "metrics",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("trial_id", Id32, sa.ForeignKey("trials.id"), nullable=False),
    sa.Column("trial_run_id", sa.Integer, nullable=False),
    sa.Column("group_name", sa.String(64), nullable=False),
    sa.Column("steps_completed", sa.BigInteger, nullable=False),
    sa.Column("metrics", JSONType, nullable=False),
    sa.Column("report_time", sa.Float, nullable=False),
    sa.UniqueConstraint("trial_id", "group_name", "steps_completed", name="uq_metrics_point"),
    sqlite_autoincrement=True,
)

checkpoints = sa.Table(
    "checkpoints",
    metadata,
    sa.Column("uuid", sa.String(64), primary_key=True),
    # no foreign key: a checkpoint another experiment's trial started from outlives its own deleted trial, whose id
    # it keeps naming (never handed out again; master/queries/checkpoint_users.py)
    sa.Column("trial_id", Id32, nullable=False, index=True),
    sa.Column("allocation_id", sa.String(64), nullable=True),
    sa.Column("steps_completed", sa.BigInteger, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("resources", JSONType, nullable=False),
    sa.Column("metadata", JSONType, nullable=False),
    sa.Column("storage", JSONType, nullable=False),
    sa.Column("report_time", sa.Float, nullable=False),
)

task_logs = sa.Table(
    "task_logs",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("trial_id", Id32, nullable=True),
    sa.Column("allocation_id", sa.String(64), nullable=True),
    sa.Column("agent_id", sa.String(128), nullable=True),
    sa.Column("rank_id", sa.Integer, nullable=True),
    sa.Column("timestamp", sa.Float, nullable=False),
    sa.Column("level", sa.String(16), nullable=False),
    sa.Column("stdtype", sa.String(16), nullable=False),
    sa.Column("source", sa.String(32), nullable=False),
    sa.Column("log", sa.Text, nullable=False),
    sa.Index("ix_task_logs_trial", "trial_id", "id"),
    sa.Index("ix_task_logs_allocation", "allocation_id", "id"),
    sqlite_autoincrement=True,
)

log_policy_matches = sa.Table(  # a trial run's lines that matched a log policy, once per run and policy (0018)
    "log_policy_matches",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("trial_id", Id32, nullable=False, index=True),
    sa.Column("allocation_id", sa.String(64), nullable=False),
    sa.Column("agent_id", sa.String(128), nullable=True),  # where the line was written: exclude_node's node
    sa.Column("policy_name", sa.String(256), nullable=True),  # a 0.37 policy may have none
    sa.Column("pattern", sa.Text, nullable=False),
    sa.Column("action", sa.String(32), nullable=True),  # cancel_retries, exclude_node, or None (a label only)
    sa.Column("log", sa.Text, nullable=False),  # the first line that matched
    sa.Column("matched_at", sa.Float, nullable=False),
    sa.UniqueConstraint("allocation_id", "pattern", "policy_name", name="uq_log_policy_matches_run"),
    sqlite_autoincrement=True,
)

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("username", sa.String(128), nullable=False, unique=True),
    sa.Column("display_name", sa.String(256), nullable=True),
    # argon2id of the login credential (docs/users.md); NULL: the empty password
    sa.Column("password_hash", sa.String(256), nullable=True),
    sa.Column("admin", sa.Boolean, nullable=False, default=False),
    sa.Column("active", sa.Boolean, nullable=False, default=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("modified_at", sa.Float, nullable=True),
    sa.Column("last_auth_at", sa.Float, nullable=True),
    sa.Column("remote", sa.Boolean, nullable=False, default=False),  # provisioned by single sign-on, no password
    # the OS user this user's tasks run as when the agent runs as root (`user link-with-agent-user`)
    sa.Column("agent_uid", sa.Integer, nullable=True),
    sa.Column("agent_gid", sa.Integer, nullable=True),
    sa.Column("agent_user", sa.String(64), nullable=True),
    sa.Column("agent_group", sa.String(64), nullable=True),
    sqlite_autoincrement=True,
)

user_sessions = sa.Table(
    "user_sessions",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("user_id", Id32, sa.ForeignKey("users.id"), nullable=False, index=True),
    # SHA-256 of the token: the token itself is never stored
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("kind", sa.String(16), nullable=False),  # login | access | task
    sa.Column("description", sa.String(1024), nullable=True),
    sa.Column("allocation_id", sa.String(64), nullable=True, index=True),  # a task session's allocation
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=True),
    sa.Column("revoked_at", sa.Float, nullable=True),
    sqlite_autoincrement=True,
)

audit_log = sa.Table(
    "audit_log",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("timestamp", sa.Float, nullable=False, index=True),
    sa.Column("username", sa.String(128), nullable=True, index=True),
    sa.Column("method", sa.String(8), nullable=False),
    sa.Column("path", sa.String(2048), nullable=False),
    sa.Column("target", sa.String(256), nullable=True),
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),  # ok | refused | throttled | failed
    sqlite_autoincrement=True,
)

# -- workspaces, projects, groups and roles (docs/workspaces.md) --------------------------------------
workspaces = sa.Table(
    "workspaces",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(128), nullable=False, unique=True),
    sa.Column("archived", sa.Boolean, nullable=False, default=False),
    sa.Column("immutable", sa.Boolean, nullable=False, default=False),  # Uncategorized
    sa.Column("created_by", sa.String(128), nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    # the OS user its tasks run as (when the agent runs as root), unless the owner has a link of their own
    sa.Column("agent_uid", sa.Integer, nullable=True),
    sa.Column("agent_gid", sa.Integer, nullable=True),
    sa.Column("agent_user", sa.String(64), nullable=True),
    sa.Column("agent_group", sa.String(64), nullable=True),
    sa.Column("checkpoint_storage", JSONType, nullable=True),
    sa.Column("default_compute_pool", sa.String(128), nullable=True),
    sa.Column("default_aux_pool", sa.String(128), nullable=True),
    sa.Column("kubernetes_namespace", sa.String(63), nullable=True),  # where its pods go (0014); NULL: the pool's
    sqlite_autoincrement=True,
)

projects = sa.Table(
    "projects",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("workspace_id", Id32, sa.ForeignKey("workspaces.id"), nullable=False, index=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("key", sa.String(16), nullable=True),
    sa.Column("archived", sa.Boolean, nullable=False, default=False),
    sa.Column("immutable", sa.Boolean, nullable=False, default=False),  # Uncategorized
    sa.Column("created_by", sa.String(128), nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("workspace_id", "name", name="uq_projects_workspace_name"),
    sqlite_autoincrement=True,
)

user_groups = sa.Table(
    "user_groups",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(128), nullable=False, unique=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sqlite_autoincrement=True,
)

group_members = sa.Table(
    "group_members",
    metadata,
    sa.Column("group_id", Id32, sa.ForeignKey("user_groups.id"), primary_key=True),
    sa.Column("user_id", Id32, sa.ForeignKey("users.id"), primary_key=True, index=True),
)

role_assignments = sa.Table(
    "role_assignments",
    metadata,
    sa.Column("id", Id32, primary_key=True, autoincrement=True),
    sa.Column("role", sa.String(64), nullable=False),
    sa.Column("user_id", Id32, sa.ForeignKey("users.id"), nullable=True, index=True),
    sa.Column("group_id", Id32, sa.ForeignKey("user_groups.id"), nullable=True, index=True),
    sa.Column("workspace_id", Id32, sa.ForeignKey("workspaces.id"), nullable=True),  # NULL: the whole cluster
    sa.Column("created_at", sa.Float, nullable=False),
    sqlite_autoincrement=True,
)

pool_bindings = sa.Table(
    "pool_bindings",
    metadata,
    sa.Column("pool", sa.String(128), primary_key=True),
    sa.Column("workspace_id", Id32, sa.ForeignKey("workspaces.id"), primary_key=True),
)
